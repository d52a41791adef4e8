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
 * (loop.c loop_sleep: at most SWEEP_MAX tasks per call, as long as its
 * queue stays empty) and between tasks when one is due (loop_poll_quick:
 * BUSY_MAX tasks per call), so that a runtime spawning tasks that park
 * does not hold all their pages until it goes idle. Epochs: a wait node is stamped with the epoch at
 * which it was linked; the epoch advances at most once per EPOCH_NS, when
 * a walk of the table starts, and that walk compacts the nodes stamped two
 * epochs back or more (parked for EPOCH_NS at least). `pending` says a
 * walk is owed (a node was linked since the last walk started, or the
 * last walk left nodes too young or was cut short); idle loops then sleep
 * at most until the next epoch. State under `sweeping`: cursor, young,
 * vectored.
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
static _Atomic uint64_t epoch_ns = EPOCH_NS_DEFAULT;
#define EPOCH_NS atomic_load_explicit(&epoch_ns, memory_order_relaxed)
#define BATCH 64u	     /* tasks per page drop (one TLB flush) */
#define SWEEP_MAX 4096u	     /* tasks compacted per idle call */
#define BUSY_MAX 256u	     /* per call from a busy loop (about 100 us) */
/* A stack whose used part is larger is left in place: the copy would
 * save little (a page is 4 KiB) and cost its size twice. Under ASan,
 * whose redzones make frames about three times larger, 8 KiB, so that
 * its runs of the tests compact too. */
#ifdef CANAL_ASAN
#define SAVE_MAX 8192u
#else
#define SAVE_MAX 2048u
#endif

static _Atomic uint32_t epoch = 2;
static _Atomic uint64_t epoch_start;
static _Atomic uint32_t pending;
static _Atomic uint32_t sweeping;
static _Atomic uint32_t walking; /* a walk is under way (cursor) */
static unsigned cursor = CANAL__PARKED_BUCKETS; /* no walk under way */
static bool young;
static bool vectored = true;

void canal__compact_configure(const struct canal__runtime *rt)
{
	if (!(rt->opts.flags & CANAL_RUN_COMPACT_STACKS)) {
		atomic_store_explicit(&epoch_ns, 0, memory_order_relaxed);
		return;
	}
	uint64_t ns = EPOCH_NS_DEFAULT;
	const char *e = getenv("CANAL_STACK_COMPACT_MS");
	if (e && *e) {
		char *end;
		unsigned long long ms = strtoull(e, &end, 10);
		if (!*end && ms <= 3600000ull)
			ns = ms * 1000000ull;
	}
	atomic_store_explicit(&epoch_ns, ns, memory_order_relaxed);
}

uint32_t canal__compact_epoch(void)
{
	return atomic_load_explicit(&epoch, memory_order_relaxed);
}

/* After the link, outside its bucket lock. A walk clears `pending` before
 * it locks the first bucket: a link it misses (locked after the walk
 * passed its bucket) comes after that clear (the bucket lock orders them),
 * so this load sees the clear and sets it again. */
void canal__compact_note(void)
{
	if (!atomic_load_explicit(&pending, memory_order_relaxed))
		atomic_store_explicit(&pending, 1, memory_order_relaxed);
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
	    sp < (uintptr_t)st->lo || used > SAVE_MAX)
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

/* Counts, for tests (internal.h). */
static _Atomic uint64_t n_compacted, n_notified;

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
		canal__pages_drop(v, nv, &vectored);
		atomic_fetch_add_explicit(&n_compacted, nv,
					  memory_order_relaxed);
	}
	for (unsigned i = 0; i < n; i++)
		canal__compact_release(held[i]);
}

/* One call's sweep: at most max tasks, and, idle, only while l's queue
 * stays empty. */
static uint64_t sweep(struct canal__loop *l, unsigned max, bool idle)
{
	uint64_t now = canal_now_ns();
	if (atomic_exchange_explicit(&sweeping, 1, memory_order_acquire))
		return now + EPOCH_NS; /* another loop sweeps */
	uint64_t start = atomic_load_explicit(&epoch_start,
					      memory_order_relaxed);
	if (cursor == CANAL__PARKED_BUCKETS) {
		if (now - start < EPOCH_NS) {
			atomic_store_explicit(&sweeping, 0,
					      memory_order_release);
			return start + EPOCH_NS;
		}
		atomic_fetch_add_explicit(&epoch, 1, memory_order_relaxed);
		atomic_store_explicit(&epoch_start, now,
				      memory_order_relaxed);
		start = now;
		cursor = 0;
		young = false;
		atomic_store_explicit(&pending, 0, memory_order_seq_cst);
	}
	uint32_t old = atomic_load_explicit(&epoch, memory_order_relaxed) - 2;
	unsigned done = 0;
	while (cursor < CANAL__PARKED_BUCKETS && done < max &&
	       !(idle && atomic_load_explicit(&l->queued,
					      memory_order_relaxed))) {
		struct canal__task *held[BATCH];
		unsigned n = canal__parked_collect(held, BATCH, old, &cursor,
						   &young);
		compact_batch(held, n);
		done += n;
	}
	atomic_store_explicit(&walking, cursor < CANAL__PARKED_BUCKETS,
			      memory_order_relaxed);
	uint64_t next = CANAL_NO_DEADLINE;
	if (cursor < CANAL__PARKED_BUCKETS) {
		atomic_store_explicit(&pending, 1, memory_order_relaxed);
		next = now; /* cut short: go on at the next idle moment */
	} else {
		if (young)
			atomic_store_explicit(&pending, 1,
					      memory_order_relaxed);
		if (atomic_load_explicit(&pending, memory_order_relaxed))
			next = start + EPOCH_NS;
	}
	atomic_store_explicit(&sweeping, 0, memory_order_release);
	return next;
}

uint64_t canal__compact_idle(struct canal__loop *l)
{
	if (!atomic_load_explicit(&pending, memory_order_relaxed) ||
	    !EPOCH_NS)
		return CANAL_NO_DEADLINE;
	return sweep(l, SWEEP_MAX, true);
}

void canal__compact_busy(struct canal__loop *l)
{
	if (!atomic_load_explicit(&pending, memory_order_relaxed) ||
	    !EPOCH_NS)
		return;
	if (!atomic_load_explicit(&walking, memory_order_relaxed) &&
	    canal_now_ns() - atomic_load_explicit(&epoch_start,
						   memory_order_relaxed) <
		    EPOCH_NS)
		return;
	sweep(l, BUSY_MAX, false);
}
