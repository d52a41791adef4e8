/* SPDX-License-Identifier: MIT */
/*
 * collect/table.h - a hash table of entries keyed by (tag, seq): a gate's
 * posted receives and its unexpected messages (match.c). Intrusive: an
 * entry is a struct canal__list inside the caller's object, on the list
 * of its bucket, so canal__list_remove() takes it out as it took it off
 * the single list this replaces (req.c does, on completion or free).
 *
 * Why: with one list, each unmatched arrival scanned every unexpected
 * message for a duplicate, and each arrival every posted receive: a flood
 * of small messages cost the square of its length (80 000 zero-byte
 * messages 4.0 s to arrive on shm; the credit window admits about
 * 170 000).
 *
 * Invariants: T1 an entry is in the bucket of hash(tag, seq) & mask;
 * T2 n counts the entries; T3 n <= 2 * (mask + 1) after every insert (the
 * table doubles before; it never shrinks: its size follows the peak).
 * Single-threaded: the engine's lock is held by every caller.
 */
#ifndef CANAL_ENGINE_COLLECT_TABLE_H
#define CANAL_ENGINE_COLLECT_TABLE_H

#include "../internal.h"

#include <errno.h>
#include <stdlib.h>

#define CANAL__TABLE_MIN 16u

static inline uint32_t canal__table_hash(unsigned tag, uint32_t seq)
{
	/* seq varies fastest: consecutive messages of a flow spread. */
	return (seq ^ ((uint32_t)tag << 20) ^ ((uint32_t)tag >> 12)) *
	       0x9E3779B1u;
}

static inline struct canal__list *canal__table_bucket(struct canal__table *t,
							unsigned tag,
							uint32_t seq)
{
	return &t->bucket[(canal__table_hash(tag, seq) >> 8) & t->mask];
}

static inline int canal__table_init(struct canal__table *t)
{
	t->bucket = malloc(CANAL__TABLE_MIN * sizeof *t->bucket);
	if (!t->bucket)
		return -ENOMEM;
	for (uint32_t i = 0; i < CANAL__TABLE_MIN; i++)
		canal__list_init(&t->bucket[i]);
	t->mask = CANAL__TABLE_MIN - 1;
	t->n = 0;
	return 0;
}

static inline void canal__table_free(struct canal__table *t)
{
	free(t->bucket);
	t->bucket = NULL;
	t->n = 0;
}

/* The key of the entry at link: the caller's objects keep it. */
typedef void (*canal__table_key_fn)(const struct canal__list *link,
				    unsigned *tag, uint32_t *seq);

/* Double the buckets (T3) and move every entry to its new bucket. On
 * -ENOMEM the table stays as it was (still correct, only longer lists). */
static inline int canal__table_grow(struct canal__table *t,
				    canal__table_key_fn key)
{
	uint32_t old = t->mask + 1, size = old * 2;
	if (size == 0 || size > (1u << 30))
		return -ENOMEM;
	struct canal__list *b = malloc(size * sizeof *b);
	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < size; i++)
		canal__list_init(&b[i]);
	struct canal__table nt = { b, size - 1, t->n };
	for (uint32_t i = 0; i < old; i++) {
		struct canal__list *h = &t->bucket[i];
		while (!canal__list_empty(h)) {
			struct canal__list *l = h->next;
			unsigned tag;
			uint32_t seq;
			key(l, &tag, &seq);
			canal__list_remove(l);
			canal__list_append(canal__table_bucket(&nt, tag, seq), l);
		}
	}
	free(t->bucket);
	*t = nt;
	return 0;
}

/* Add the entry at link with key (tag, seq). Never fails: when the table
 * cannot grow, its lists just get longer. */
static inline void canal__table_add(struct canal__table *t,
				    struct canal__list *link, unsigned tag,
				    uint32_t seq, canal__table_key_fn key)
{
	if (t->n >= 2 * (t->mask + 1))
		(void)canal__table_grow(t, key);
	canal__list_append(canal__table_bucket(t, tag, seq), link);
	t->n++;
}

#endif /* CANAL_ENGINE_COLLECT_TABLE_H */
