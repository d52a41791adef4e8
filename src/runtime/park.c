/* SPDX-License-Identifier: MIT */
/*
 * park.c - the runtime's parker (base/park.h), installed on every loop
 * thread: a channel operation that must wait, called from a task, parks
 * the task instead of the thread.
 *
 * Process-private words: the parked table. A fixed array of buckets, each
 * a spinlock and two lists of wait nodes, keyed by the word's address. A
 * one-word wait's node is in its task structure (wnode), a many-word
 * wait's nodes on its stack (the frame of task_wait_many): parking
 * allocates nothing. A node is linked at the head of its bucket's main
 * list, so that list runs from the newest to the oldest (tail); compact.c's
 * sweep moves nodes older than its epoch, from the tail, to the bucket's
 * swept list, and holds (PARKING) the tasks of the one-word waits among
 * them while it compacts their stacks. Wakers look in both lists.
 *
 * Invariants (bucket->lock): a node is linked in the bucket of its word
 * iff node->linked; only the bucket's lock holder links, unlinks or reads
 * the list. The waiter checks *word == key and links its node under the
 * lock, the local waker (canal__local_wake, called by canal__wake after
 * the notifier changed the word with release ordering) walks the list
 * under the same lock: as FUTEX_WAIT's check against FUTEX_WAKE, a
 * notifier that changed the word before the check is seen by the check
 * (the lock orders its change before our load), one that changes it after
 * finds the node linked. The waker unlinks the node whose task's wake it
 * won, after winning it and before making the task runnable; a node whose
 * task was woken by something else (timer, another word of a wait_many)
 * stays linked until its task unlinks it, after resuming, under the lock:
 * no node outlives its wait. The resumed task reads node->linked without
 * the lock: only the winner of its wake writes it (false) besides the task
 * itself, and that write happens-before the task's resumption (the
 * winner's make-runnable is an acq_rel CAS on task->sched, or a push from
 * the same thread); losing wakers only read the node, under the lock, and
 * a node the winner unlinked is reachable by none of them afterwards.
 *
 * Process-shared words: their wakers may be other processes, which wake
 * through the kernel only, so such waits cannot use the table. On the
 * io_uring backend (kernel >= 6.7) such a wait is an IORING_OP_FUTEX_WAIT
 * (IORING_OP_FUTEX_WAITV for several words, where the private ones are
 * waited on as private futexes): the kernel checks the words and queues
 * the wait atomically, as FUTEX_WAIT does, and FUTEX_WAKE completes it.
 * Otherwise (epoll, older kernels) the task polls: it sleeps on its
 * loop's timers, a short time growing from 20 us to 1 ms, and re-checks
 * the word (the caller re-checks its condition).
 */
#include "runtime/internal.h"
#include "base/clock.h"
#include "base/wait.h"
#include "runtime/io.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>

#define BUCKETS CANAL__PARKED_BUCKETS /* a power of two */

#define wait_node canal__wait_node

/* head/tail: the main list (newest first); swept: nodes the sweep has
 * looked at; n: nodes linked in both (read without the lock by the sweep,
 * to skip empty buckets: relaxed). */
struct bucket {
	_Atomic uint32_t lock;
	_Atomic uint32_t n;
	struct wait_node *head, *tail, *swept;
} __attribute__((aligned(64)));

static struct bucket table[BUCKETS];

static struct bucket *bucket_of(const void *word)
{
	uintptr_t a = (uintptr_t)word;
	a ^= a >> 17;
	a *= 0x9e3779b97f4a7c15ull;
	return &table[(a >> 40) & (BUCKETS - 1)];
}

static void bucket_lock(struct bucket *b)
{
	for (unsigned spins = 0;; spins++) {
		uint32_t z = 0;
		if (atomic_load_explicit(&b->lock, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(
			    &b->lock, &z, 1, memory_order_acquire,
			    memory_order_relaxed))
			return;
		/* Held for a few instructions; yield if its holder was
		 * preempted. */
		if (spins < 64)
			canal__cpu_relax();
		else
			sched_yield();
	}
}

static void bucket_unlock(struct bucket *b)
{
	atomic_store_explicit(&b->lock, 0, memory_order_release);
}

static void bucket_count(struct bucket *b, int d)
{
	atomic_store_explicit(
		&b->n, atomic_load_explicit(&b->n, memory_order_relaxed) + (uint32_t)d,
		memory_order_relaxed);
}

/* At the head of the main list, stamped with the compaction epoch. */
static void node_link(struct bucket *b, struct wait_node *n)
{
	n->prev = NULL;
	n->next = b->head;
	if (b->head)
		b->head->prev = n;
	else
		b->tail = n;
	b->head = n;
	n->since = canal__compact_epoch();
	n->swept = false;
	n->linked = true;
	bucket_count(b, 1);
}

/* Out of whichever list holds it (still counted as linked). */
static void node_remove(struct bucket *b, struct wait_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else if (n->swept)
		b->swept = n->next;
	else
		b->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else if (!n->swept)
		b->tail = n->prev;
}

static void node_unlink(struct bucket *b, struct wait_node *n)
{
	node_remove(b, n);
	n->linked = false;
	bucket_count(b, -1);
}

/*
 * Plain threads inside the local waker. A thread that is not a loop (a
 * program's thread sending on a channel) may win the wake of a runtime's
 * last task and still be waking that task's loop (its eventfd, its ring)
 * when the task has run, ended, and canal_run is closing the backends. So
 * such a waker counts itself here for the whole call, and canal_run waits
 * for the count to drop to 0 (canal__local_wake_quiesce) before closing
 * any backend. Pairing: the waker's increment (seq_cst) comes before its
 * bucket lock, so before it can make any task runnable; the task it wakes
 * ends after that, and canal_run's load (seq_cst) comes after every task
 * ended and every loop was joined, so it sees the increment; the
 * decrement (release) pairs with that load's acquire, so all the waker did
 * happens-before the backends are closed. A waker that counts itself too
 * late finds no node of that runtime (its tasks have all ended) and
 * touches only this table. Loop and pool threads are not counted: canal_run
 * joins them first.
 */
static _Atomic uint32_t outside_wakers;

void canal__local_wake_quiesce(void)
{
	while (atomic_load_explicit(&outside_wakers, memory_order_seq_cst))
		sched_yield();
}

static uint32_t local_wake(_Atomic uint32_t *word, uint32_t count);

/* A child forked by a plain thread (loop.c): the parent's parked tasks,
 * copied into its memory, run nowhere; no wake of the child's may find
 * them. Only the forking thread exists: nobody holds a lock any more, and
 * no other thread is inside the local waker. */
void canal__parked_forget(void)
{
	for (unsigned i = 0; i < BUCKETS; i++) {
		atomic_store_explicit(&table[i].lock, 0, memory_order_relaxed);
		atomic_store_explicit(&table[i].n, 0, memory_order_relaxed);
		table[i].head = table[i].tail = table[i].swept = NULL;
	}
	atomic_store_explicit(&outside_wakers, 0, memory_order_relaxed);
}

/* A condvar's signal from a plain thread counts itself the same way
 * (cond.c): the increment before its condvar lock, the decrement after
 * its last wake. */
void canal__outside_wake_begin(void)
{
	atomic_fetch_add_explicit(&outside_wakers, 1, memory_order_seq_cst);
}

void canal__outside_wake_end(void)
{
	atomic_fetch_sub_explicit(&outside_wakers, 1, memory_order_release);
}

uint32_t canal__local_wake(_Atomic uint32_t *word, uint32_t count)
{
	if (canal__this_loop())
		return local_wake(word, count);
	canal__outside_wake_begin();
	uint32_t woken = local_wake(word, count);
	canal__outside_wake_end();
	return woken;
}

static uint32_t local_wake(_Atomic uint32_t *word, uint32_t count)
{
	struct bucket *b = bucket_of(word);
	uint32_t woken = 0;
	bucket_lock(b);
	for (int list = 0; list < 2 && woken < count; list++) {
		for (struct wait_node *n = list ? b->swept : b->head, *next;
		     n && woken < count; n = next) {
			next = n->next;
			if (n->word != word)
				continue;
			if (canal__task_win(n->task, WAKE_WOKEN)) {
				/* Unlinked before the task can run (see the
				 * top). */
				struct canal__task *t = n->task;
				node_unlink(b, n);
				canal__task_make_runnable(t);
				woken++;
			}
		}
	}
	bucket_unlock(b);
	return woken;
}

/* internal.h. A node is taken from the main list's tail while it is at
 * least as old as `old`: to the swept list in every case (the sweep is
 * done with it), its task held (PARKED -> PARKING, the CAS wakers make
 * PARKED -> RUNNING) if it is a one-word wait's and parked: holding the
 * bucket lock, a linked node's task is inside its wait (it unlinks under
 * this lock before it leaves), so alive; once held it cannot run until
 * canal__compact_release. A one-word wait's task that is not parked (not
 * yet switched out, or resumed by its timer and about to unlink) is left
 * in place for the next sweep. */
unsigned canal__parked_collect(struct canal__task **out, unsigned max,
			       uint32_t old, unsigned *cursor, bool *young)
{
	unsigned k = 0;
	for (; *cursor < BUCKETS && k < max; ++*cursor) {
		struct bucket *b = &table[*cursor];
		if (!atomic_load_explicit(&b->n, memory_order_relaxed))
			continue;
		bucket_lock(b);
		struct wait_node *n = b->tail;
		while (n && k < max) {
			struct wait_node *prev = n->prev;
			if ((int32_t)(n->since - old) > 0) {
				*young = true;
				break;
			}
			struct canal__task *t = n->task;
			if (n == &t->wnode) {
				uint32_t s = TASK_PARKED;
				if (!atomic_compare_exchange_strong_explicit(
					    &t->sched, &s, TASK_PARKING,
					    memory_order_acq_rel,
					    memory_order_relaxed)) {
					n = prev;
					continue;
				}
				out[k++] = t;
			}
			node_remove(b, n);
			n->swept = true;
			n->prev = NULL;
			n->next = b->swept;
			if (b->swept)
				b->swept->prev = n;
			b->swept = n;
			n = prev;
		}
		/* Nodes left in the main list that are old enough: tasks not
		 * parked yet; the next sweep looks again. */
		if (b->tail && (int32_t)(b->tail->since - old) <= 0)
			*young = true;
		bucket_unlock(b);
		if (k == max)
			break;
	}
	return k;
}

/* Shared words: sleep a while on the loop's timers, then let the caller
 * re-check. The step grows with the time waited so far. */
static int poll_wait(struct canal__task *t, _Atomic uint32_t *const *words,
		     const uint32_t *keys, unsigned n, uint64_t deadline_ns)
{
	/* The step grows over consecutive polls of this task (its callers
	 * call again after each spurious return) and restarts once a word
	 * changed. */
	uint32_t *round = &t->poll_round;
	for (unsigned i = 0; i < n; i++)
		if (atomic_load_explicit(words[i], memory_order_acquire) !=
		    keys[i]) {
			*round = 0;
			return 0;
		}
	uint64_t now = canal_now_ns();
	if (now >= deadline_ns)
		return -ETIMEDOUT;
	uint64_t step = 20000ull << (*round < 6 ? *round : 6);
	if (step > 1000000)
		step = 1000000;
	(*round)++;
	uint64_t until = now + step < deadline_ns ? now + step : deadline_ns;
	canal__task_arm(t);
	canal__task_park(t, until);
	return until == deadline_ns ? -ETIMEDOUT : 0;
}

static int task_wait_many(void *self, _Atomic uint32_t *const *words,
			  const uint32_t *keys, const bool *shared, unsigned n,
			  uint64_t deadline_ns)
{
	struct canal__task *t = canal__this_task();
	if (!t || t->detached)
		return canal__thread_parker_ops.wait_many(self, words, keys,
							  shared, n,
							  deadline_ns);
	if (n == 0 || n > CANAL__WAIT_MANY_MAX)
		return -EINVAL;
	bool any_shared = false;
	for (unsigned i = 0; i < n; i++)
		any_shared |= shared[i];
	if (any_shared) {
		/* A kernel futex wait through io_uring (FUTEX_WAIT for one
		 * word, FUTEX_WAITV for several: a select over shared
		 * channels), passive; without support: poll. */
		/* Private words waited on in the kernel count as kernel
		 * sleepers (base/park.h) for the whole wait: the kernel's
		 * check comes when the loop submits, after this. */
		canal__private_sleep_begin(words, shared, n);
		int r = canal__io_futex_waitv(words, keys, shared, n,
					      deadline_ns);
		canal__private_sleep_end(words, shared, n);
		if (r != -EOPNOTSUPP)
			return r;
		return poll_wait(t, words, keys, n, deadline_ns);
	}
	if (deadline_ns != CANAL_NO_DEADLINE && canal_now_ns() >= deadline_ns)
		return -ETIMEDOUT;

	struct wait_node nodes[n];
	canal__task_arm(t);
	unsigned linked = 0;
	bool changed = false;
	for (; linked < n; linked++) {
		struct bucket *b = bucket_of(words[linked]);
		nodes[linked].word = words[linked];
		nodes[linked].task = t;
		nodes[linked].linked = false;
		bucket_lock(b);
		if (atomic_load_explicit(words[linked],
					 memory_order_acquire) !=
		    keys[linked]) {
			changed = true;
		} else {
			node_link(b, &nodes[linked]);
		}
		bucket_unlock(b);
		if (changed)
			break;
	}
	if (linked)
		canal__compact_note();
	uint32_t why = WAKE_WOKEN;
	if (!changed) {
		why = canal__task_park(t, deadline_ns);
	} else {
		/* Take our wake back, so that no waker pushes us: if one
		 * already won it, we must wait for its push (it may be
		 * between its CAS and its push). */
		if (!canal__task_disarm(t))
			why = canal__task_park(t, CANAL_NO_DEADLINE);
	}
	for (unsigned i = 0; i < linked; i++) {
		/* Already unlinked by the waker that won (no lock needed to
		 * see it: the top of this file). */
		if (!nodes[i].linked)
			continue;
		struct bucket *b = bucket_of(words[i]);
		bucket_lock(b);
		node_unlink(b, &nodes[i]);
		bucket_unlock(b);
	}
	atomic_store_explicit(&t->wake, WAKE_NONE, memory_order_relaxed);
	return why == WAKE_TIMEDOUT ? -ETIMEDOUT : 0;
}

/* The common wait, one process-private word, as task_wait_many with n = 1
 * (the same steps and the same invariants, the top of this file) without
 * its loops over words: a channel operation's every park comes here. */
static int task_wait(void *self, _Atomic uint32_t *word, uint32_t key,
		     bool shared, uint64_t deadline_ns)
{
	struct canal__task *t = canal__this_task();
	if (unlikely(shared || !t || t->detached)) {
		_Atomic uint32_t *words[1] = {word};
		return task_wait_many(self, words, &key, &shared, 1,
				      deadline_ns);
	}
	if (deadline_ns != CANAL_NO_DEADLINE && canal_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	struct wait_node *node = &t->wnode;
	node->word = word;
	node->task = t;
	struct bucket *b = bucket_of(word);
	canal__task_arm(t);
	bucket_lock(b);
	bool changed = atomic_load_explicit(word, memory_order_acquire) != key;
	if (!changed)
		node_link(b, node);
	bucket_unlock(b);
	if (!changed)
		canal__compact_note();
	uint32_t why = WAKE_WOKEN;
	if (likely(!changed))
		why = canal__task_park(t, deadline_ns);
	else if (!canal__task_disarm(t))
		why = canal__task_park(t, CANAL_NO_DEADLINE);
	if (unlikely(node->linked)) {
		bucket_lock(b);
		node_unlink(b, node);
		bucket_unlock(b);
	}
	atomic_store_explicit(&t->wake, WAKE_NONE, memory_order_relaxed);
	return why == WAKE_TIMEDOUT ? -ETIMEDOUT : 0;
}

static void task_yield(void *self)
{
	(void)self;
	canal_yield();
}

/* base/park.h: the task this one woke last (the runnext slot) runs first,
 * the two trading places (canal__task_handoff): most often it is the peer
 * this task is about to wait for (a receiver woken by our last send), and
 * both then go on without parking. Only that task: yielding to tasks
 * merely queued (a round of the queue) made an mpsc's senders yield to
 * each other, 30-40 % slower. A detached task never hands off. */
static bool task_yield_if_busy(void *self)
{
	(void)self;
	return canal__task_handoff();
}

/* base/park.h: any task ready on this loop (canal__task_yield_ready). */
static bool task_yield_to_ready(void *self)
{
	(void)self;
	return canal__task_yield_ready();
}

static void task_sleep_until(void *self, uint64_t deadline_ns)
{
	(void)self;
	uint64_t now = canal_now_ns();
	canal_sleep_ns(deadline_ns > now ? deadline_ns - now : 0);
}

const struct canal__parker_ops canal__task_parker_ops = {
	.wait = task_wait,
	.wait_many = task_wait_many,
	.yield = task_yield,
	.yield_if_busy = task_yield_if_busy,
	.yield_to_ready = task_yield_to_ready,
	.sleep_until = task_sleep_until,
	.is_task = true,
};
