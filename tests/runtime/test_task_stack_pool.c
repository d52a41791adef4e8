/* test_task_stack_pool.c - the stack pool commits the top pages of new
 * blocks ahead, 16 at a time (the next 16 by an idle loop's help where one
 * asks), and gives pages back: beyond its
 * budget of free blocks that keep their pages (dirty_max), blocks put back
 * wait with their pages until a batch of them (trim_batch) has come, then
 * all of them lose every page (their descriptors kept apart, not in the
 * blocks); a get takes a
 * waiting block before making a new one; a block taken from the pool
 * makes room in the budget again. Those checks run with
 * CANAL_STACK_TRIM_MS=0 (a full batch goes at once); trim_delay() checks
 * the delay of the default (a full batch waits 10 ms from its first block,
 * then goes from an idle loop or at the next put beyond the budget).
 * Residency is read with mincore(2). */
#include "check.h"
#include "base/clock.h"
#include "runtime/stack.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static size_t page;

/* Whether the lowest page of the stack is resident. */
static int low_page_resident(const struct canal__stack *st)
{
	unsigned char v = 0;
	CHECK_EQ(mincore(st->lo, page, &v), 0);
	return v & 1;
}

static void touch(const struct canal__stack *st)
{
	memset(st->lo, 0xa5, st->size);
}

/* Whether the top page of the stack (with its task area) is resident. */
static int top_page_resident(const struct canal__stack *st)
{
	unsigned char v = 0;
	CHECK_EQ(mincore(st->lo + st->size + CANAL__TASK_AREA - page, page,
			 &v),
		 0);
	return v & 1;
}

/* New blocks come with their top page committed (stack.c, COMMIT_AHEAD:
 * one process_madvise for the next 16 blocks instead of a fault each),
 * touched by nobody yet; not after canal__stack_pool_no_commit_ahead
 * (compacting runtimes). Gets 32 blocks without touching them and counts
 * their resident top pages: all, or none. Only blocks with a guard page
 * count (the canary of a canary block is written in the top page of the
 * block below); a kernel that refuses the call (before 6.15, or a
 * seccomp filter) turns it off, and the pool says so. */
static void commit_ahead(bool on)
{
	struct canal__stack_pool *p = NULL;
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	if (!on)
		canal__stack_pool_no_commit_ahead(p);
	enum { N = 32 };
	struct canal__stack st[N];
	void *area[N];
	unsigned resident = 0, guarded = 0;
	for (unsigned i = 0; i < N; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
	}
	for (unsigned i = 0; i < N; i++)
		if (st[i].guard) {
			guarded++;
			resident += (unsigned)top_page_resident(&st[i]);
		}
	if (on && !canal__stack_pool_commits_ahead(p))
		printf("commit ahead: refused by this kernel, not checked\n");
	else
		CHECK_EQ(resident, on && st[0].block == 0 ? guarded : 0);
	for (unsigned i = 0; i < N; i++)
		canal__stack_put(p, NULL, area[i], &st[i]);
	canal__stack_pool_destroy(p);
}

/* Whether the top page of the i-th block after st's in its slab (guard
 * regions: blocks one stack and one guard page apart) is resident. */
static int later_top_resident(const struct canal__stack *st, unsigned i)
{
	size_t stride = st->size + CANAL__TASK_AREA + page;
	unsigned char v = 0;
	CHECK_EQ(mincore(st->lo + st->size + CANAL__TASK_AREA - page +
				 i * stride,
			 page, &v),
		 0);
	return v & 1;
}

/* The window after the one being carved is posted for an idle loop
 * (canal__stack_pool_help): committed by whoever helps, or else by the
 * get that reaches it. Blocks 0-15 come committed; 16-31 are posted and
 * not resident until help; 32-47 are posted at block 16 and, nobody
 * helping, committed by the get of block 32, which posts 48-63. */
static void commit_ahead_help(void)
{
	struct canal__stack_pool *p = NULL;
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	enum { N = 33 };
	struct canal__stack st[N];
	void *area[N];
	area[0] = canal__stack_get(p, NULL, &st[0]);
	CHECK(area[0] != NULL);
	if (!canal__stack_pool_commits_ahead(p) || !st[0].guard ||
	    st[0].block != 0) {
		printf("commit ahead help: no guarded slabs or refused by this "
		       "kernel, not checked\n");
		canal__stack_put(p, NULL, area[0], &st[0]);
		canal__stack_pool_destroy(p);
		return;
	}
	CHECK(canal__stack_pool_job_posted(p));
	CHECK(later_top_resident(&st[0], 15));
	CHECK(!later_top_resident(&st[0], 16));
	CHECK(!later_top_resident(&st[0], 31));
	CHECK(canal__stack_pool_help(p));
	CHECK(!canal__stack_pool_job_posted(p));
	for (unsigned i = 16; i < 32; i++)
		CHECK(later_top_resident(&st[0], i));
	CHECK(!later_top_resident(&st[0], 32));
	CHECK(!canal__stack_pool_help(p)); /* nothing posted */
	for (unsigned i = 1; i <= 16; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
	}
	CHECK(canal__stack_pool_job_posted(p));
	CHECK(!later_top_resident(&st[0], 32));
	for (unsigned i = 17; i <= 32; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
	}
	for (unsigned i = 32; i < 48; i++)
		CHECK(later_top_resident(&st[0], i));
	CHECK(canal__stack_pool_job_posted(p));
	CHECK(!later_top_resident(&st[0], 48));
	for (unsigned i = 0; i < N; i++)
		canal__stack_put(p, NULL, area[i], &st[i]);
	canal__stack_pool_destroy(p);
}

/* With a delay: the pool's budget filled, then a batch put back beyond
 * it, whose pages stay until the batch is due; canal__stack_pool_trim_due
 * says when; an idle loop's call before then gives nothing back, one at
 * that time gives the batch back (the budget's blocks keep theirs). Then,
 * with a delay of 1 ms, a batch that waited longer goes at the next put
 * beyond the budget. */
static void trim_delay(void)
{
	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", "60000", 1), 0);
	struct canal__stack_pool *p = NULL;
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	size_t dm = canal__stack_pool_dirty_max(p);
	size_t tb = canal__stack_pool_trim_batch(p);
	size_t n = dm + tb;
	struct canal__stack *st = calloc(n, sizeof(*st));
	void **area = calloc(n, sizeof(*area));
	CHECK(st && area);
	for (size_t i = 0; i < n; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
		touch(&st[i]);
	}
	CHECK_EQ(canal__stack_pool_trim_due(p), UINT64_MAX);
	uint64_t before = canal_now_ns();
	for (size_t i = 0; i < n; i++)
		canal__stack_put(p, NULL, area[i], &st[i]);
	uint64_t due = canal__stack_pool_trim_due(p);
	CHECK(due >= before + 60000000000ull);
	CHECK(due <= canal_now_ns() + 60000000000ull);
	for (size_t i = 0; i < n; i++)
		CHECK(low_page_resident(&st[i]));
	CHECK(!canal__stack_pool_trim_idle(p, due - 1));
	for (size_t i = 0; i < n; i++)
		CHECK(low_page_resident(&st[i]));
	CHECK(canal__stack_pool_trim_idle(p, due));
	CHECK_EQ(canal__stack_pool_trim_due(p), UINT64_MAX);
	size_t kept = 0, released = 0;
	for (size_t i = 0; i < n; i++) {
		if (low_page_resident(&st[i]))
			kept += i < dm;
		else
			released += i >= dm;
	}
	CHECK_EQ(kept, dm);
	CHECK_EQ(released, tb);
	canal__stack_pool_destroy(p);

	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", "1", 1), 0);
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	for (size_t i = 0; i < n; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
		touch(&st[i]);
	}
	/* The budget, then a batch but one: waiting, not due. */
	for (size_t i = 0; i + 1 < n; i++)
		canal__stack_put(p, NULL, area[i], &st[i]);
	nanosleep(&(struct timespec){0, 3000000}, NULL);
	/* The batch is full with the last, and its first waited 3 ms. */
	canal__stack_put(p, NULL, area[n - 1], &st[n - 1]);
	released = 0;
	for (size_t i = dm; i < n; i++)
		released += !low_page_resident(&st[i]);
	CHECK_EQ(released, tb);
	canal__stack_pool_destroy(p);

	/* Puts trim at most a batch per 10 ms (TRIM_PUT_GAP_NS); idle
	 * loops, every due batch. Two full batches due at once: the next put
	 * gives one back, a put right after it (within 10 ms:
	 * checked, else not judged) none, an idle loop's call the other. */
	size_t m = dm + 2 * tb + 2;
	struct canal__stack *sm = calloc(m, sizeof(*sm));
	void **am = calloc(m, sizeof(*am));
	CHECK(sm && am);
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	for (size_t i = 0; i < m; i++) {
		am[i] = canal__stack_get(p, NULL, &sm[i]);
		CHECK(am[i] != NULL);
		touch(&sm[i]);
	}
	/* From before the first put that waits: any put-path trim from
	 * then on is inside the judged window. */
	uint64_t t0 = canal_now_ns();
	for (size_t i = 0; i < dm + 2 * tb; i++)
		canal__stack_put(p, NULL, am[i], &sm[i]);
	nanosleep(&(struct timespec){0, 3000000}, NULL);
	canal__stack_put(p, NULL, am[m - 2], &sm[m - 2]);
	canal__stack_put(p, NULL, am[m - 1], &sm[m - 1]);
	uint64_t t1 = canal_now_ns();
	released = 0;
	for (size_t i = dm; i < m; i++)
		released += !low_page_resident(&sm[i]);
	if (t1 - t0 < 10000000)
		CHECK_EQ(released, tb);
	else
		printf("stack pool: the puts took %llu us: rate not "
		       "judged\n", (unsigned long long)((t1 - t0) / 1000));
	CHECK(canal__stack_pool_trim_idle(p, canal_now_ns()));
	released = 0;
	for (size_t i = dm; i < m; i++)
		released += !low_page_resident(&sm[i]);
	CHECK(released >= 2 * tb);
	canal__stack_pool_destroy(p);
	free(sm);
	free(am);
	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", "0", 1), 0);
	free(st);
	free(area);
	printf("stack pool: a full batch waits for its delay, then goes\n");
}

int main(void)
{
	/* A full batch goes at once, for the checks below but trim_delay. */
	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", "0", 1), 0);
	page = (size_t)sysconf(_SC_PAGESIZE);
	commit_ahead(true);
	commit_ahead(false);
	commit_ahead_help();
	trim_delay();
	struct canal__stack_pool *p = NULL;
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	size_t dm = canal__stack_pool_dirty_max(p);
	size_t tb = canal__stack_pool_trim_batch(p);
	CHECK(dm >= 1 && dm < 100000);
	CHECK(tb >= 2 && tb < 10000);
	size_t n = dm + tb;
	struct canal__stack *st = calloc(n, sizeof(*st));
	void **area = calloc(n, sizeof(*area));
	CHECK(st && area);
	for (size_t i = 0; i < n; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
		CHECK_EQ((uintptr_t)st[i].lo % page, 0);
		touch(&st[i]);
		CHECK(low_page_resident(&st[i]));
	}
	/* All but the last: the first dm kept their pages, the next tb - 1
	 * wait with theirs. */
	for (size_t i = 0; i + 1 < n; i++)
		canal__stack_put(p, NULL, area[i], &st[i]);
	for (size_t i = 0; i + 1 < n; i++)
		CHECK(low_page_resident(&st[i]));
	/* A get takes a waiting block (the last put back), no new one. */
	struct canal__stack again;
	CHECK(canal__stack_get(p, NULL, &again) == area[n - 2]);
	canal__stack_put(p, NULL, area[n - 2], &again);
	/* The last completes the batch: the tb waiting blocks give their
	 * pages back, the dm first keep theirs. */
	canal__stack_put(p, NULL, area[n - 1], &st[n - 1]);
	size_t kept = 0, released = 0;
	for (size_t i = 0; i < n; i++) {
		if (low_page_resident(&st[i]))
			kept += i < dm;
		else
			released += i >= dm;
	}
	CHECK_EQ(kept, dm);
	CHECK_EQ(released, tb);

	/* The free list is last in, first out: the tb released blocks come
	 * back first, then a kept one, which leaves room for one more. */
	struct canal__stack *got = calloc(tb + 1, sizeof(*got));
	void **got_area = calloc(tb + 1, sizeof(*got_area));
	CHECK(got && got_area);
	for (size_t i = 0; i <= tb; i++) {
		got_area[i] = canal__stack_get(p, NULL, &got[i]);
		CHECK(got_area[i] != NULL);
	}
	for (size_t i = 0; i < tb; i++)
		CHECK(!low_page_resident(&got[i]));
	CHECK(low_page_resident(&got[tb])); /* the kept one */
	for (size_t i = 0; i < tb; i++)
		touch(&got[i]);
	/* One slot in the budget: the first put keeps its pages, the next tb
	 * (the budget full again) wait, and the last of them, the kept block
	 * put back over budget, completes the batch: all tb released. */
	for (size_t i = 0; i <= tb; i++)
		canal__stack_put(p, NULL, got_area[i], &got[i]);
	CHECK(low_page_resident(&got[0]));
	for (size_t i = 1; i <= tb; i++)
		CHECK(!low_page_resident(&got[i]));

	canal__stack_pool_destroy(p);
	/* Big stacks wait for their trim in smaller batches (at most about
	 * 4 MiB of stack waiting): 1 MiB stacks four at a time, 1 GiB ones
	 * at once. */
	CHECK_EQ(canal__stack_pool_create(1 << 20, &p), 0);
	CHECK_EQ(canal__stack_pool_trim_batch(p), 4);
	canal__stack_pool_destroy(p);
	CHECK_EQ(canal__stack_pool_create((size_t)1 << 30, &p), 0);
	CHECK_EQ(canal__stack_pool_trim_batch(p), 1);
	canal__stack_pool_destroy(p);
	free(st);
	free(area);
	free(got);
	free(got_area);
	printf("stack pool: %zu blocks kept with their pages, the rest given back %zu at a time\n",
	       dm, tb);
	return 0;
}
