/* SPDX-License-Identifier: MIT */
/*
 * test_engine_table.c - white-box: the (tag, seq) hash table that holds a
 * gate's posted receives and unexpected messages (src/engine/collect/
 * table.h). Checks its invariants through growth and removal, and that a
 * flood of one flow's consecutive sequence numbers (the engine's worst
 * case before: one list, scanned per arrival) spreads over the buckets:
 * the longest bucket stays short, so a lookup costs a few comparisons
 * whatever the flood's length (no timing: the lengths are counted).
 */
#include "check.h"

#include "engine/collect/table.h"

struct entry {
	struct canal__list link;
	unsigned tag;
	uint32_t seq;
};

static void key(const struct canal__list *l, unsigned *tag, uint32_t *seq)
{
	const struct entry *x = canal__container_of(l, struct entry, link);
	*tag = x->tag;
	*seq = x->seq;
}

static struct entry *find(struct canal__table *t, unsigned tag, uint32_t seq)
{
	struct canal__list *b = canal__table_bucket(t, tag, seq);
	for (struct canal__list *l = b->next; l != b; l = l->next) {
		struct entry *x = canal__container_of(l, struct entry, link);
		if (x->tag == tag && x->seq == seq)
			return x;
	}
	return NULL;
}

/* T1-T3, and the longest bucket. */
static uint32_t check_table(struct canal__table *t)
{
	uint32_t n = 0, longest = 0;
	CHECK(((t->mask + 1) & t->mask) == 0);
	for (uint32_t i = 0; i <= t->mask; i++) {
		uint32_t len = 0;
		for (struct canal__list *l = t->bucket[i].next;
		     l != &t->bucket[i]; l = l->next) {
			unsigned tag;
			uint32_t seq;
			key(l, &tag, &seq);
			CHECK(canal__table_bucket(t, tag, seq) == &t->bucket[i]);
			len++;
		}
		n += len;
		if (len > longest)
			longest = len;
	}
	CHECK_EQ(n, t->n);
	CHECK(t->n <= 2 * (t->mask + 1));
	return longest;
}

int main(void)
{
	enum { N = 200000, TAGS = 3 };
	struct canal__table t;
	CHECK_EQ(canal__table_init(&t), 0);
	CHECK_EQ(t.mask + 1, CANAL__TABLE_MIN);
	CHECK(find(&t, 0, 0) == NULL);

	struct entry *e = calloc(N, sizeof *e);
	CHECK(e != NULL);
	/* Three flows of consecutive numbers, interleaved, one starting near
	 * the wrap of the 32-bit sequence. */
	for (uint32_t i = 0; i < N; i++) {
		e[i].tag = i % TAGS == 2 ? 65535 : i % TAGS;
		e[i].seq = i / TAGS + (i % TAGS == 1 ? UINT32_MAX - 1000 : 0);
		canal__table_add(&t, &e[i].link, e[i].tag, e[i].seq, key);
	}
	CHECK_EQ(t.n, N);
	uint32_t longest = check_table(&t);
	/* Hash spread: 2 entries per bucket at most on average (T3), and
	 * the consecutive numbers of three flows must not pile up in a few
	 * buckets (a hash of the tag alone: 66 667 in one). */
	CHECK(longest <= 12);
	for (uint32_t i = 0; i < N; i++)
		CHECK(find(&t, e[i].tag, e[i].seq) == &e[i]);
	CHECK(find(&t, 7, 0) == NULL);
	CHECK(find(&t, 0, N) == NULL);

	/* Removal as match.c does it: off the list, n--. Every other entry. */
	for (uint32_t i = 0; i < N; i += 2) {
		canal__list_remove(&e[i].link);
		t.n--;
	}
	check_table(&t);
	for (uint32_t i = 0; i < N; i++)
		CHECK((find(&t, e[i].tag, e[i].seq) != NULL) == (i % 2 == 1));
	/* The size follows the peak: no shrink, and adding back needs no
	 * growth. */
	uint32_t mask = t.mask;
	for (uint32_t i = 0; i < N; i += 2)
		canal__table_add(&t, &e[i].link, e[i].tag, e[i].seq, key);
	CHECK_EQ(t.mask, mask);
	check_table(&t);

	canal__table_free(&t);
	CHECK(t.bucket == NULL);
	free(e);
	printf("test_engine_table: ok (longest bucket %u of %u entries)\n",
	       longest, (unsigned)N);
	return 0;
}
