/* SPDX-License-Identifier: MIT */
/*
 * compact.c - stack compaction: a task parked on a channel for a while
 * gives its stack's pages back.
 *
 * A parked task's stack holds a few hundred bytes that matter (its frames
 * from the top down to its saved stack pointer) but costs whole pages,
 * at least one (4 KiB); Go's smallest goroutine stack is 2 KiB. So a task
 * parked in a one-word wait (every channel park, park.c task_wait) for
 * at least one epoch (EPOCH_NS) has those bytes, [sp, stack top), copied
 * to the heap (t->saved) and all of its stack's pages given back
 * (MADV_DONTNEED, batched: canal__pages_drop); whoever runs it next copies
 * them back first (canal__compact_ready, on every switch into a task),
 * at the same addresses, so every pointer into the stack stays right.
 * A resumption after compaction costs a page fault and a copy (a few
 * microseconds on a VM); a wait that short (below EPOCH_NS) never pays it.
 *
 * It is opt-in (CANAL_RUN_COMPACT_STACKS, task.h), because C lets any
 * thread hold a pointer to a task's locals: the program promises that
 * nothing but the task reads or writes its stack while it is parked in a
 * one-word wait. The runtime keeps its side: wakers write the task's
 * structure (sched, wake, wnode), which, in a compacting runtime, lives
 * apart from its stack (task.c); a one-word wait's node is in that
 * structure. Waits whose stack is written by others while they sleep
 * (many-word waits' nodes, condvar waiters, I/O buffers and records) are
 * never compacted: only tasks found through their wnode are. Slab stacks
 * without guard pages (canary kind, stack.h) are never compacted: the
 * top of their block holds the canary of the block above.
 *
 * The hold: the sweep takes a task PARKED -> PARKING (park.c
 * canal__parked_collect, under its bucket's lock, which proves it alive),
 * the state of a task that is still switching out: a waker that wins its
 * wake meanwhile finds PARKING, sets NOTIFIED and leaves the push to the
 * sweep, whose CAS PARKING -> PARKED then fails (canal__compact_release).
 * So no thread runs the task while its stack is copied and dropped. The
 * CAS are acq_rel: the task's stack, written before it parked, is seen by
 * the copy; t->saved, written by the sweep before the release, is seen by
 * whoever runs the task after its wake (the waker's CAS PARKED -> RUNNING,
 * or the sweep's own push).
 *
 * The sweep: one loop at a time (`sweeping`, a try-lock), when idle
 * (loop.c loop_sleep: batches for at most IDLE_NS, stopping as soon as a
 * timer is due, an I/O operation is in flight or a task is queued) and
 * between tasks when one is due (loop_poll_quick: one batch of
 * BUSY_BATCH), so that a runtime spawning tasks that park does not hold
 * all their pages until it goes idle. A wake that finds its task held
 * waits for the end of the batch (tens of microseconds). Epochs: a wait node is stamped with the epoch at
 * which it was linked; the epoch advances at most once per EPOCH_NS, when
 * a walk of the table starts, and that walk compacts the nodes stamped two
 * epochs back or more (parked for EPOCH_NS at least). `pending` says a
 * walk is owed (a node was linked since the last walk started, or the
 * last walk left nodes too young or was cut short); idle loops then sleep
 * at most until the next epoch. Parkers read `canal__compact_on` and
 * `ps` only, each on its own cache line; the sweep's state is `sw` (its
 * plain fields under `sweeping`). Off (no CANAL_RUN_COMPACT_STACKS), a
 * park stamps no epoch and notes nothing (internal.h).
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/sanitizer.h"
#include "base/clock.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

/* The epoch's length: 0 (off) unless the runtime has
 * CANAL_RUN_COMPACT_STACKS, then 10 ms, or n ms with
 * CANAL_STACK_COMPACT_MS=n (0: off; tests use 1 to make it frequent). */
#define EPOCH_NS_DEFAULT 10000000ull
#define BATCH 64u /* tasks per page drop (one TLB flush) at most */
/* A sweep call's time: an idle loop's timers and I/O wait meanwhile (a
 * batch of 64 tasks takes about 150 us on a 2-vCPU VM), so it stops after
 * IDLE_NS, or at once when a timer is due, an operation is in flight or
 * a task is queued; a busy loop does one batch of BUSY_BATCH. */
#define IDLE_NS 300000ull
#define BUSY_BATCH 16u
/* A stack whose used part is larger is left in place: the copy would
 * save little (a page is 4 KiB) and cost its size twice. Under ASan,
 * whose redzones make frames about three times larger, 8 KiB, so that
 * its runs of the tests compact too. CANAL_STACK_COMPACT_MAX=n (bytes, at
 * most 64 KiB) at canal_run sets it. A task left in place is not looked
 * at again during that wait (its node is in the swept list). */
#ifdef CANAL_ASAN
#define SAVE_MAX_DEFAULT 8192u
#else
#define SAVE_MAX_DEFAULT 2048u
#endif

/* What parkers read (canal__compact_on, ps) on lines of their own, apart
 * from what the sweep writes at each batch (sw, the counts). */
_Atomic uint32_t canal__compact_on __attribute__((aligned(64)));
static struct {
	_Atomic uint32_t epoch;
	_Atomic uint32_t pending;
	_Atomic uint64_t epoch_ns;
} ps __attribute__((aligned(64))) = {.epoch = 2};
#define EPOCH_NS atomic_load_explicit(&ps.epoch_ns, memory_order_relaxed)

/* The sweep's own: the plain fields under `sweeping`. */
static struct {
	_Atomic uint32_t sweeping;
	_Atomic uint32_t walking; /* a walk is under way (cursor) */
	_Atomic uint64_t epoch_start;
	unsigned cursor;
	bool young;
	bool vectored;
	uint32_t save_max;
} sw __attribute__((aligned(64))) = {.cursor = CANAL__PARKED_BUCKETS,
				      .vectored = true,
				      .save_max = SAVE_MAX_DEFAULT};

/* Counts, for tests (internal.h). */
static _Atomic uint64_t n_compacted, n_notified;

void canal__compact_configure(const struct canal__runtime *rt)
{
	bool on = rt->opts.flags & CANAL_RUN_COMPACT_STACKS;
	uint64_t ns = on ? EPOCH_NS_DEFAULT : 0;
	const char *e = getenv("CANAL_STACK_COMPACT_MS");
	if (on && e && *e) {
		char *end;
		unsigned long long ms = strtoull(e, &end, 10);
		if (!*end && ms <= 3600000ull)
			ns = ms * 1000000ull;
	}
	sw.save_max = SAVE_MAX_DEFAULT;
	e = getenv("CANAL_STACK_COMPACT_MAX");
	if (e && *e) {
		char *end;
		unsigned long long b = strtoull(e, &end, 10);
		if (!*end && b <= 65536)
			sw.save_max = (uint32_t)b;
	}
	atomic_store_explicit(&ps.epoch_ns, ns, memory_order_relaxed);
	atomic_store_explicit(&canal__compact_on, ns != 0,
			      memory_order_relaxed);
}

/* A child forked (by a plain thread) while a loop swept: nothing sweeps
 * in it, and its next runtime configures afresh. */
void canal__compact_forget(void)
{
	atomic_store_explicit(&sw.sweeping, 0, memory_order_relaxed);
	atomic_store_explicit(&sw.walking, 0, memory_order_relaxed);
	sw.cursor = CANAL__PARKED_BUCKETS;
	atomic_store_explicit(&canal__compact_on, 0, memory_order_relaxed);
}

uint32_t canal__compact_epoch_slow(void)
{
	return atomic_load_explicit(&ps.epoch, memory_order_relaxed);
}

/* After the link, outside its bucket lock. A walk clears `pending` before
 * it locks the first bucket: a link it misses (locked after the walk
 * passed its bucket) comes after that clear (the bucket lock orders them),
 * so this load sees the clear and sets it again. */
void canal__compact_note_slow(void)
{
	if (!atomic_load_explicit(&ps.pending, memory_order_relaxed))
		atomic_store_explicit(&ps.pending, 1, memory_order_relaxed);
}

/* The copies read and write a stack's frames, ASan's redzones included:
 * not instrumented, and word by word through volatile so that no compiler
 * turns them into a (intercepted, checked) memcpy. */
#if defined(__clang__) || defined(__GNUC__)
#define NO_ASAN __attribute__((no_sanitize_address))
#else
#define NO_ASAN
#endif

static NO_ASAN void copy_words(void *dst, const void *src, size_t n)
{
	volatile uint64_t *d = dst;
	const volatile uint64_t *s = src;
	for (size_t i = 0; i < n / 8; i++)
		d[i] = s[i];
}

/* Copy out t's used stack (held by the sweep); its whole stack in *v. */
static bool save(struct canal__task *t, struct iovec *v)
{
	const struct canal__stack *st = &t->stack;
	char *top = st->lo + st->size;
	if (!st->guard || t->saved || (char *)t == top)
		return false; /* (a structure in its task area: not ours) */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t all = st->size + CANAL__TASK_AREA;
	uintptr_t sp = (uintptr_t)t->sp;
	size_t used = (size_t)((uintptr_t)top - sp);
	if ((uintptr_t)st->lo % page || all % page || sp % 8 ||
	    sp < (uintptr_t)st->lo || used > sw.save_max)
		return false;
	void *buf = malloc(used ? used : 8);
	if (!buf)
		return false;
	copy_words(buf, t->sp, used);
	t->saved = buf;
	t->saved_len = (uint32_t)used;
	*v = (struct iovec){st->lo, all};
	return true;
}

void canal__compact_restore(struct canal__task *t)
{
	copy_words(t->sp, t->saved, t->saved_len);
	free(t->saved);
	t->saved = NULL;
}

void canal__compact_stats(uint64_t *compacted, uint64_t *notified)
{
	*compacted = atomic_load_explicit(&n_compacted, memory_order_relaxed);
	*notified = atomic_load_explicit(&n_notified, memory_order_relaxed);
}

void canal__compact_release(struct canal__task *t)
{
	if (canal__task_finish_park(t))
		return;
	atomic_fetch_add_explicit(&n_notified, 1, memory_order_relaxed);
	canal__loop_push(t->loop, t);
}

static void compact_batch(struct canal__task **held, unsigned n)
{
	struct iovec v[BATCH];
	unsigned nv = 0;
	for (unsigned i = 0; i < n; i++)
		if (save(held[i], &v[nv]))
			nv++;
	if (nv) {
		canal__pages_drop(v, nv, &sw.vectored);
		atomic_fetch_add_explicit(&n_compacted, nv,
					  memory_order_relaxed);
	}
	for (unsigned i = 0; i < n; i++)
		canal__compact_release(held[i]);
}

/* Whether an idle loop has something better to do than sweep on. */
static bool loop_wanted(struct canal__loop *l, uint64_t now)
{
	return atomic_load_explicit(&l->queued, memory_order_relaxed) ||
	       l->inflight || canal__timer_next(l) <= now;
}

/* One call's sweep. Returns when the loop should call again. */
static uint64_t sweep(struct canal__loop *l, bool idle)
{
	uint64_t now = canal_now_ns();
	if (atomic_exchange_explicit(&sw.sweeping, 1, memory_order_acquire))
		return now + EPOCH_NS; /* another loop sweeps */
	uint64_t start = atomic_load_explicit(&sw.epoch_start,
					      memory_order_relaxed);
	if (sw.cursor == CANAL__PARKED_BUCKETS) {
		if (now - start < EPOCH_NS) {
			atomic_store_explicit(&sw.sweeping, 0,
					      memory_order_release);
			return start + EPOCH_NS;
		}
		atomic_fetch_add_explicit(&ps.epoch, 1, memory_order_relaxed);
		atomic_store_explicit(&sw.epoch_start, now,
				      memory_order_relaxed);
		start = now;
		sw.cursor = 0;
		sw.young = false;
		atomic_store_explicit(&ps.pending, 0, memory_order_seq_cst);
	}
	uint32_t old = atomic_load_explicit(&ps.epoch, memory_order_relaxed) - 2;
	uint64_t until = now + IDLE_NS;
	for (;;) {
		struct canal__task *held[BATCH];
		unsigned n = canal__parked_collect(
			held, idle ? BATCH : BUSY_BATCH, old, &sw.cursor,
			&sw.young);
		compact_batch(held, n);
		if (!idle || sw.cursor == CANAL__PARKED_BUCKETS)
			break;
		now = canal_now_ns();
		if (now >= until || loop_wanted(l, now))
			break;
	}
	bool walking = sw.cursor < CANAL__PARKED_BUCKETS;
	atomic_store_explicit(&sw.walking, walking, memory_order_relaxed);
	uint64_t next = CANAL_NO_DEADLINE;
	if (walking) {
		atomic_store_explicit(&ps.pending, 1, memory_order_relaxed);
		next = now; /* cut short: go on at the next idle moment */
	} else {
		if (sw.young)
			atomic_store_explicit(&ps.pending, 1,
					      memory_order_relaxed);
		if (atomic_load_explicit(&ps.pending, memory_order_relaxed))
			next = start + EPOCH_NS;
	}
	atomic_store_explicit(&sw.sweeping, 0, memory_order_release);
	return next;
}

uint64_t canal__compact_idle(struct canal__loop *l)
{
	if (!atomic_load_explicit(&canal__compact_on, memory_order_relaxed) ||
	    !atomic_load_explicit(&ps.pending, memory_order_relaxed))
		return CANAL_NO_DEADLINE;
	return sweep(l, true);
}

void canal__compact_busy_slow(struct canal__loop *l)
{
	if (!atomic_load_explicit(&ps.pending, memory_order_relaxed))
		return;
	if (!atomic_load_explicit(&sw.walking, memory_order_relaxed) &&
	    canal_now_ns() - atomic_load_explicit(&sw.epoch_start,
						   memory_order_relaxed) <
		    EPOCH_NS)
		return;
	sweep(l, false);
}
