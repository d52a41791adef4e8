/* SPDX-License-Identifier: MIT */
/*
 * loop.c - loops and canal_run: the scheduler of each loop thread, run
 * queues, work stealing, waking a sleeping loop, and the runtime's start
 * and end.
 *
 * Who wakes whom: a loop sleeps only in its backend's poll, after it set
 * `sleeping` and found its queue empty under the lock (internal.h gives
 * the pairing). Pushers (spawn, a task's waker on any thread, a timer or
 * completion of its own loop) wake it through the backend only when they
 * see it sleeping and are first to clear the flag: no syscall while it
 * runs. The last task to end sets rt->stop and wakes every loop. A push
 * made on a loop's own thread (a woken task, a spawn, a timer) that brings
 * its queue to BURST_WAKE (or a multiple) wakes one other sleeping loop
 * the same way (wake_a_thief), with nothing pushed to it: that loop finds
 * its queue empty and steals, waiting for the victim's lock rather than
 * giving up as other steals do (loop_steal).
 *
 * Idle work: a loop with nothing to run commits the window of stack pages
 * that the pool posted ahead of its next spawns (stack.c, COMMIT_AHEAD)
 * before it spins or sleeps, and while it spins.
 *
 * Stealing: a loop whose queue is empty takes up to half of the longest
 * other queue before it sleeps, skipping pinned tasks (internal.h). A
 * stolen task's t->loop is changed under the victim's lock, before the
 * task is linked into the thief's queue. The runnext slot is not stolen:
 * its task runs at the next switch out of the task that filled it.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/backend.h"
#include "runtime/context.h"
#include "runtime/sanitizer.h"
#include "base/clock.h"
#include "base/wait.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Tasks run between two looks at the backend's completions and timers
 * when the queue never empties (fairness for I/O and deadlines). */
#define POLL_EVERY 32u

struct canal__runtime *_Atomic canal__rt;
static _Atomic int runtime_busy;

/* Named in internal.h's inline assembly, which link-time optimisation
 * does not see: used and externally_visible keep it under its name. */
#if defined(__clang__)
#define CANAL_KEEP_NAME used
#else
#define CANAL_KEEP_NAME used, externally_visible
#endif
__thread struct canal__loop *canal__tls_loop
	__attribute__((tls_model("initial-exec"), CANAL_KEEP_NAME));
#define this_loop canal__tls_loop

__attribute__((noinline)) struct canal__loop *canal__this_loop_call(void)
{
	struct canal__loop *l = this_loop;
	__asm__ __volatile__("" ::: "memory");
	return l;
}

void canal__set_this_loop(struct canal__loop *l)
{
	this_loop = l;
}

__attribute__((noinline)) struct canal__task *canal__this_task(void)
{
	struct canal__loop *l = this_loop;
	return l ? l->current : NULL;
}

/* ------------------------------------------------------------------ */
/* Run queues                                                          */
/* ------------------------------------------------------------------ */

void canal__spin_lock_slow(struct canal__spinlock *s)
{
	for (unsigned spins = 0;; spins++) {
		if (canal__spin_trylock(s))
			return;
		if (spins < 100)
			canal__cpu_relax();
		else
			sched_yield();
	}
}

static void queue_append(struct canal__loop *l, struct canal__task *t)
{
	t->next = NULL;
	if (l->tail)
		l->tail->next = t;
	else
		l->head = t;
	l->tail = t;
	atomic_store_explicit(&l->queued,
			      atomic_load_explicit(&l->queued,
						   memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static struct canal__task *queue_pop(struct canal__loop *l)
{
	struct canal__task *t = l->head;
	if (!t)
		return NULL;
	l->head = t->next;
	if (!l->head)
		l->tail = NULL;
	atomic_store_explicit(&l->queued,
			      atomic_load_explicit(&l->queued,
						   memory_order_relaxed) - 1,
			      memory_order_relaxed);
	return t;
}

static void loop_wake(struct canal__loop *l)
{
	/* seq_cst: pairs with the loop's store of sleeping = 1 before its
	 * last look at the queue (internal.h). */
	if (atomic_load_explicit(&l->sleeping, memory_order_seq_cst) &&
	    atomic_exchange_explicit(&l->sleeping, 0, memory_order_seq_cst))
		l->rt->backend->wake(l);
}

/*
 * A loop's own tasks that make this many ready on it (a channel closed
 * under thousands of waiting receivers, a broadcast) wake one sleeping
 * loop, which steals half (loop_steal): fwd on tasks with one writer and
 * 10 000 readers ran the readers' last wake-ups on one CPU while the
 * other slept (39.2 -> 36.4 ms with it, AMD EPYC, 11 rounds). At 512 and its
 * multiples only (a queue still growing): a wake-up costs 20-45 us on
 * these VMs and a task's turn about a microsecond, so a shorter queue is
 * done before the woken loop is up (32 did no better: 36.4 ms); waking
 * a loop at every push to a queue of two (Go's wakep) made fwd
 * 1 000/1 000 cost half again as much CPU for no gain in time
 * (docs/results/history.md, 2026-11-29).
 */
#define BURST_WAKE 512u

/* The first other loop found sleeping is woken (the exchange, as in
 * loop_wake: one waker per sleep). */
static void wake_a_thief(struct canal__loop *l)
{
	struct canal__runtime *rt = l->rt;
	for (unsigned k = 1; k < rt->nloops; k++) {
		struct canal__loop *v = &rt->loops[(l->index + k) % rt->nloops];
		if (atomic_load_explicit(&v->sleeping, memory_order_seq_cst) &&
		    atomic_exchange_explicit(&v->sleeping, 0,
					     memory_order_seq_cst)) {
			rt->backend->wake(v);
			return;
		}
	}
}

void canal__loop_push(struct canal__loop *l, struct canal__task *t)
{
	canal__spin_lock(&l->lock);
	queue_append(l, t);
	uint32_t q = atomic_load_explicit(&l->queued, memory_order_relaxed);
	canal__spin_unlock(&l->lock);
	if (l != this_loop)
		loop_wake(l);
	else if (q % BURST_WAKE == 0)
		wake_a_thief(l);
}

/* How much of a woken task's stack its loop prefetches (below). */
#define PREFETCH_STACK_LINES 16u

void canal__loop_push_woken(struct canal__task *t)
{
	struct canal__loop *l = t->loop, *here = this_loop;
	if (l != here && here && here->current && !here->is_pool &&
	    here->rt == l->rt) {
		/* Woken by a task running on another loop: unless pinned
		 * there, the task moves to the waker's loop (Go's ready()
		 * puts the goroutine on the waker's P), where it runs next,
		 * without waking its old loop. pinned is read under its
		 * loop's lock, as thieves do (timer.c clears it under that
		 * lock); t->loop is set before the task is visible here. */
		canal__spin_lock(&l->lock);
		if (t->pinned) {
			queue_append(l, t);
			canal__spin_unlock(&l->lock);
			loop_wake(l);
			return;
		}
		t->loop = here;
		canal__spin_unlock(&l->lock);
		l = here;
	}
	if (l == here) {
		/* It runs on this thread: its stack, gone cold while it
		 * waited, is asked for now (a prefetch never faults; a
		 * compacted stack's dropped pages are skipped). t->sp was
		 * saved before the task became PARKED (release), which the
		 * waker's CAS to RUNNING acquired (task.c). A task that runs
		 * elsewhere (pinned to another loop, or woken by a plain
		 * thread) is left alone: its lines belong in its own core.
		 * Up to PREFETCH_STACK_LINES of it, not past its top: what
		 * a task resuming from an I/O wait walks back through (the
		 * switch's saved registers, then the frames of the park, of
		 * the I/O call and of its caller; a web server's connection
		 * task: about 1 KiB). With 4 lines, the tasks web server at
		 * 1 000 connections stalled on the epilogue of
		 * canal__io_link_run (its saved registers, a cold line). */
		const char *sp = t->sp;
		const char *top = t->stack.lo + t->stack.size;
		size_t lines = sp < top ? (size_t)(top - sp + 63) / 64 : 0;
		if (lines > PREFETCH_STACK_LINES)
			lines = PREFETCH_STACK_LINES;
		for (size_t i = 0; i < lines; i++)
			__builtin_prefetch(sp + 64 * i);
	}
	if (l == here && l->current && !l->is_pool) {
		/* Woken by the task running on its own loop: it runs at that
		 * task's switch out, without the queue (internal.h). A task
		 * already there goes to the queue (Go's runnext does the
		 * same). */
		struct canal__task *old = l->runnext;
		l->runnext = t;
		if (!old)
			return;
		t = old;
	}
	canal__loop_push(l, t);
}

struct canal__loop *canal__loop_pick(struct canal__runtime *rt)
{
	uint32_t i = atomic_fetch_add_explicit(&rt->spread, 1,
					       memory_order_relaxed);
	return &rt->loops[i % rt->nloops];
}

/*
 * CANAL_RUN_SPAWN_NEAR (task.h): a spawn stays on the spawner's loop while
 * fewer than SPAWN_NEAR_QUEUE tasks wait in its queue. A server's
 * connection task is pinned to the loop it starts on for its life (its
 * stream, rstream.c), so where spawn puts it decides where its requests
 * run. The tasks web server, server on both CPUs and wrk on one of them
 * (AMD EPYC, 2026-11-30, 5 rounds of 5 s, requests/s): 10 connections
 * 85.8k spread in turn, 119.2k near (nginx 91.5k): spread, half of the
 * connections were on the loop that shares wrk's CPU; near, the accept
 * task's loop serves them all and the other sleeps. 100 connections:
 * 101.3k and 112.3k (nginx 89.1k); 1 000: 100.5k and 101.9k (nginx
 * 86.1k). A burst of connections opened before any request (wrk's 1 000)
 * is spawned one per turn of the accept task, each near: the server
 * takes such a burst whole so that its spawns pass the bound
 * (bench/web/tasks.c). The
 * bound is a fraction of a time slice's worth of tasks, not a tuned
 * value; the same rule for every runtime (an experiment) left fwd on
 * tasks as fast as spreading (1 000/1 000, 10 000/10 000, 1/10 000,
 * 10 000/1), where no bound at all (every spawn near, the steals alone
 * spreading) made it 1.04-1.26x slower. Not the default: two CPU-bound
 * tasks spawned one after the other would share a loop (a steal takes
 * from a queue of two or more).
 */
#define SPAWN_NEAR_QUEUE 4u

struct canal__loop *canal__loop_pick_spawn(struct canal__runtime *rt,
					   struct canal__loop *self)
{
	if ((rt->opts.flags & CANAL_RUN_SPAWN_NEAR) && !self->is_pool &&
	    atomic_load_explicit(&self->queued, memory_order_relaxed) <
		    SPAWN_NEAR_QUEUE)
		return self;
	return canal__loop_pick(rt);
}

static struct canal__task *loop_steal(struct canal__loop *l)
{
	struct canal__runtime *rt = l->rt;
	struct canal__loop *victim = NULL;
	uint32_t best = 1;
	for (unsigned k = 1; k < rt->nloops; k++) {
		struct canal__loop *v = &rt->loops[(l->index + k) % rt->nloops];
		/* The yield slot's task counts as the queue's newest
		 * (loop.c, canal__loop_yield_next): it is never taken, but a
		 * queue of one behind it is a queue of two. */
		uint32_t q = atomic_load_explicit(&v->queued,
						  memory_order_relaxed) +
			     (atomic_load_explicit(&v->yslot,
						   memory_order_relaxed) != NULL);
		if (q > best) {
			best = q;
			victim = v;
		}
	}
	/* A queue that reached half a burst (BURST_WAKE): wait for its
	 * lock, as a loop woken by wake_a_thief arrives while the burst is
	 * still being pushed; others give up at once and look again later. */
	if (!victim)
		return NULL;
	if (best >= BURST_WAKE / 2)
		canal__spin_lock(&victim->lock);
	else if (!canal__spin_trylock(&victim->lock))
		return NULL;
	/* Take up to half, unpinned only, keeping their order. */
	struct canal__task *got = NULL, **tailp = &got;
	uint32_t want = (atomic_load_explicit(&victim->queued,
					      memory_order_relaxed) +
			 (atomic_load_explicit(&victim->yslot,
					       memory_order_relaxed) != NULL)) /
			2;
	uint32_t taken = 0;
	struct canal__task **pp = &victim->head, *prev = NULL;
	while (*pp && taken < want) {
		struct canal__task *t = *pp;
		if (t->pinned) {
			prev = t;
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		if (victim->tail == t)
			victim->tail = prev;
		t->next = NULL;
		t->loop = l;
		*tailp = t;
		tailp = &t->next;
		taken++;
	}
	atomic_store_explicit(&victim->queued,
			      atomic_load_explicit(&victim->queued,
						   memory_order_relaxed) -
				      taken,
			      memory_order_relaxed);
	canal__spin_unlock(&victim->lock);
	if (!got)
		return NULL;
	struct canal__task *first = got;
	if (got->next) {
		canal__spin_lock(&l->lock);
		for (struct canal__task *t = got->next, *n; t; t = n) {
			n = t->next;
			queue_append(l, t);
		}
		canal__spin_unlock(&l->lock);
	}
	return first;
}

/* ------------------------------------------------------------------ */
/* The scheduler                                                       */
/* ------------------------------------------------------------------ */

void canal__task_ended(struct canal__loop *l, struct canal__task *t)
{
	struct canal__runtime *rt = l->rt;
	canal__task_free(t);
	if (atomic_fetch_sub_explicit(&rt->live, 1, memory_order_acq_rel) ==
	    1) {
		atomic_store_explicit(&rt->stop, 1, memory_order_seq_cst);
		for (unsigned i = 0; i < rt->nloops; i++)
			if (&rt->loops[i] != l) {
				atomic_store(&rt->loops[i].sleeping, 0);
				rt->backend->wake(&rt->loops[i]);
			}
	}
}

/* Between tasks: timers, and the backend's completions only if some
 * operation is in flight (no syscall otherwise). */
static void loop_poll_quick(struct canal__loop *l)
{
	l->turns = POLL_EVERY;
	if (l->inflight)
		l->rt->backend->poll(l, 0);
	if (l->heap_len || l->fifo_head)
		canal__timer_run(l, canal_now_ns());
	canal__compact_busy(l);
}

/* t to the back of the queue and the queue's first out, under one lock. */
static struct canal__task *queue_swap(struct canal__loop *l,
				      struct canal__task *t)
{
	canal__spin_lock(&l->lock);
	queue_append(l, t);
	struct canal__task *next = queue_pop(l);
	canal__spin_unlock(&l->lock);
	return next;
}

/* Fairness of the runnext slot: two tasks that wake each other on one
 * loop would otherwise run forever ahead of its queue. After this many
 * runnext tasks in a row, the slot's task goes to the back of the queue
 * and the queue's first runs (Go bounds the same chain by a time slice). */
#define RUNNEXT_STREAK_MAX 32u

/* The task of the runnext slot, or NULL (loop thread only). */
static struct canal__task *take_runnext(struct canal__loop *l)
{
	struct canal__task *t = l->runnext;
	if (!t)
		return NULL;
	l->runnext = NULL;
	if (++l->runnext_streak < RUNNEXT_STREAK_MAX ||
	    !atomic_load_explicit(&l->queued, memory_order_relaxed))
		return t;
	l->runnext_streak = 0;
	return queue_swap(l, t);
}

/* A task goes back to the queue and the next one comes off it: the
 * runnext task if there is one, else the queue's first (t itself when
 * nothing else waits). */
static struct canal__task *requeue_and_pop(struct canal__loop *l,
					   struct canal__task *t)
{
	if (__builtin_expect(l->runnext != NULL, 0)) {
		canal__spin_lock(&l->lock);
		queue_append(l, t);
		canal__spin_unlock(&l->lock);
		return take_runnext(l);
	}
	if (!atomic_load_explicit(&l->queued, memory_order_relaxed))
		return t;
	return queue_swap(l, t);
}

/* Whether a direct switch (a yield, hand-off or park straight to another
 * task) may pass the scheduler by this time: not every POLL_EVERY runs,
 * and then not until the scheduler has polled completions and timers
 * (loop_poll_quick resets turns), whichever direct path asks next. Every
 * run counts, direct or through the scheduler (run_chain); once due,
 * turns stays at 0 until the poll (a declined turn does not count: a
 * hand-off that declines may be followed by no switch at all, and an
 * unbounded count would wrap). A chain of tasks
 * switching directly to each other would otherwise never let the loop run
 * its timers or reap its I/O: two tasks exchanging messages kept a
 * sleeping task of their loop from waking (a hostile review: 32 M round
 * trips in 5 s past its 1 ms sleep, test_task_poll_turn). */
static bool direct_turn(struct canal__loop *l)
{
	if (l->turns <= 0)
		return false;
	return --l->turns > 0;
}

/*
 * A direct yield (task.c, canal_yield): the yielding task t is switched
 * out straight to the next task, without the scheduler context in between
 * (one context switch, not two). t takes the loop's yield slot
 * (internal.h), which only this loop's thread touches; the task already
 * there, which switched out at an earlier yield, goes to the queue's back
 * and the queue's first runs next, or, with the queue empty, the slot's
 * task runs next. Two tasks yielding to each other thus take no lock and
 * make no atomic read-modify-write (the queue's lock cost 3.5 of 11.6 ns
 * per yield on the AMD host), and more than two take the lock once per
 * yield, as before. t is in the slot while it still runs, which is safe
 * because no other thread takes a task from the slot and this thread
 * does only after the switch it is making. Stealers count the slot's task
 * with the queue's (loop_steal), so they take what they took when the
 * yielder went to the queue's back: the queue's oldest, never its newest.
 * Every switch out to the scheduler moves the slot's task to the queue
 * (after_switch). Every POLL_EVERY runs a yield goes through the scheduler
 * instead, which polls completions and timers (tasks yielding to each
 * other would otherwise starve them); and while the runnext slot is full,
 * as does the scheduler's path, its task goes first. Returns NULL for the
 * scheduler's path (nothing else to run, too: the scheduler then runs t
 * again after its polls).
 */
struct canal__task *canal__loop_yield_next(struct canal__loop *l,
					   struct canal__task *t)
{
	struct canal__task *slot =
		atomic_load_explicit(&l->yslot, memory_order_relaxed);
	bool queued = atomic_load_explicit(&l->queued, memory_order_relaxed);
	if (l->runnext || l->is_pool || (!slot && !queued) || !direct_turn(l))
		return NULL;
	struct canal__task *next = slot;
	if (queued) {
		canal__spin_lock(&l->lock);
		if (slot)
			queue_append(l, slot);
		next = queue_pop(l); /* NULL: a thief emptied the queue */
		canal__spin_unlock(&l->lock);
		if (!next) {
			atomic_store_explicit(&l->yslot, NULL,
					      memory_order_relaxed);
			return NULL;
		}
	}
	atomic_store_explicit(&l->yslot, t, memory_order_relaxed);
	return next;
}

bool canal__loop_has_ready(struct canal__loop *l)
{
	return !l->is_pool &&
	       (l->runnext ||
		atomic_load_explicit(&l->yslot, memory_order_relaxed) ||
		atomic_load_explicit(&l->queued, memory_order_relaxed));
}

/* The yield slot's task to the queue's back (the scheduler context, before
 * anything else at every switch out to it: the slot is empty whenever the
 * loop schedules, steals, spins or sleeps). */
static void yield_slot_flush(struct canal__loop *l)
{
	struct canal__task *t =
		atomic_load_explicit(&l->yslot, memory_order_relaxed);
	if (!t)
		return;
	atomic_store_explicit(&l->yslot, NULL, memory_order_relaxed);
	canal__spin_lock(&l->lock);
	queue_append(l, t);
	canal__spin_unlock(&l->lock);
}

/* The hand-off (park.c, before a task waits): the running task t and the
 * task in the runnext slot trade places, t switching straight to it and
 * taking the slot, so that it runs again at that task's next switch out
 * (its park, typically: the direct park below). The slot is this loop's
 * own (filled and emptied by its thread only, never stolen), so t may sit
 * there before its context is saved: nothing runs it before the switch.
 * The runnext streak bounds how long two tasks trading places keep the
 * rest of the queue waiting; direct_turn gives the scheduler its turn. */
struct canal__task *canal__loop_handoff_next(struct canal__loop *l,
					     struct canal__task *t)
{
	if (!l->runnext || l->is_pool || !direct_turn(l))
		return NULL;
	struct canal__task *next = take_runnext(l);
	l->runnext = t;
	return next;
}

/* The direct park (task.c): a task that parks while the runnext slot
 * holds a task (the one it has just woken, typically) switches straight
 * to it. Not on the pool, and not every POLL_EVERY runs: the scheduler's
 * path then polls completions and timers (a chain of tasks waking each
 * other would otherwise starve them). */
struct canal__task *canal__loop_park_next(struct canal__loop *l)
{
	if (!l->runnext || l->is_pool || !direct_turn(l))
		return NULL;
	return take_runnext(l);
}

/* What the task that just switched out asked for (internal.h). Returns
 * the task to run next if that is already known (a yield, the runnext
 * slot), else NULL (then the queue's first). */
static struct canal__task *after_switch(struct canal__loop *l,
					struct canal__task *t)
{
	canal__stack_canary_check(&t->stack, t->id);
	yield_slot_flush(l);
	switch (t->after) {
	case AFTER_YIELD:
		return requeue_and_pop(l, t);
	case AFTER_PARK: {
		if (!canal__task_finish_park(t))
			return requeue_and_pop(l, t); /* woken meanwhile */
		return take_runnext(l);
	}
	case AFTER_EXIT:
		canal__task_ended(l, t);
		return take_runnext(l);
	case AFTER_DETACH:
		canal__detach_push(l->rt, t);
		return take_runnext(l);
	default:
		abort();
	}
}

/* Run t, then whatever its switch out names next, pacing the polls.
 * Returns with the runnext slot empty: only a task running on this loop
 * fills it, and every switch out of one empties it. */
static void run_chain(struct canal__loop *l, struct canal__task *t)
{
	while (t) {
		if (--l->turns <= 0)
			loop_poll_quick(l);
		t = after_switch(l, canal__task_run(l, t));
	}
}

/* Before sleeping, a loop that has other loops spins this long watching
 * its queue: a task handed over by a running loop then costs no eventfd
 * write and no wake-up (Go's spinning Ps do the same). */
#define IDLE_SPIN_NS 20000u

static bool idle_spin_watch(struct canal__loop *l);

static bool idle_spin(struct canal__loop *l)
{
	struct canal__runtime *rt = l->rt;
	if (rt->nloops < 2 || l->inflight)
		return false;
	/* At most half of the loops spin at once (Go's rule): the others
	 * sleep, and a machine with more loops than free CPUs does not
	 * burn them all. */
	uint32_t s = atomic_load_explicit(&rt->spinning, memory_order_relaxed);
	do {
		if (2 * (s + 1) > rt->nloops)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		&rt->spinning, &s, s + 1, memory_order_relaxed,
		memory_order_relaxed));
	bool found = idle_spin_watch(l);
	atomic_fetch_sub_explicit(&rt->spinning, 1, memory_order_relaxed);
	return found;
}

/* Spin up to ns (and not past the loop's next timer) until a push to its
 * queue, the runtime's stop or, when not NULL, pending(l) (looked at with
 * the queue): true if one came. Every 32 looks, idle(l) if not NULL (work
 * done on the way, which ends nothing). The loop's two spins before
 * sleeping (idle_spin, io_spin) are this one with different watches. */
static bool spin_watch(struct canal__loop *l, uint64_t ns,
		       bool (*pending)(struct canal__loop *l),
		       void (*idle)(struct canal__loop *l))
{
	uint64_t until = canal_now_ns() + ns;
	uint64_t next = canal__timer_next(l);
	if (next < until)
		until = next;
	do {
		for (int i = 0; i < 32; i++) {
			if ((pending && pending(l)) ||
			    atomic_load_explicit(&l->queued,
						 memory_order_relaxed) ||
			    atomic_load_explicit(&l->rt->stop,
						 memory_order_relaxed))
				return true;
			canal__cpu_relax();
		}
		if (idle)
			idle(l);
	} while (canal_now_ns() < until);
	return false;
}

/* What an idle loop does while it spins, every 32 looks at its queue:
 * commit a window of stack pages posted meanwhile. It then spins on to
 * its bound, watching its queue, as if it had not: ending the spin for
 * it would send the loop back to steal, and fwd on tasks with 100
 * writers and 100 readers, which runs fastest on one CPU, went to both
 * in 25 runs of 41 instead of 11 (5.1 ms instead of 4.5). */
static void idle_work(struct canal__loop *l)
{
	canal__stack_pool_help(l->rt->pool);
	canal__stack_pool_trim_idle(l->rt->pool, canal_now_ns());
}

static bool idle_spin_watch(struct canal__loop *l)
{
	return spin_watch(l, IDLE_SPIN_NS, NULL, idle_work);
}

/*
 * Before sleeping, a loop with I/O in flight spins this long watching its
 * ring (backend pending, no system call), its queue and its next timer.
 * On these VMs a CPU that goes idle costs a wake-up through the
 * hypervisor (20-45 us) when the next completion comes; a server answering
 * a few connections (wrk, 10 connections, server on one CPU) fell, one run
 * in three, into a mode where its loop slept between every batch: 35-55k
 * requests/s at 45-60 % of its CPU, against 110-124k when it did not
 * (Intel Xeon, 2026-11-28). Any loop spins, also alone and beside other
 * spinning loops (idle_spin, for hand-overs between loops, lets at most
 * half of them spin), but none when the runtime has more loops than the
 * CPUs it may run on (canal_run sets io_spin_ns to 0).
 */
#define IO_SPIN_NS 20000u

/* $CANAL_IO_SPIN_NS: io_spin's bound, 0 to sleep at once. */
static uint64_t io_spin_bound(void)
{
	const char *e = getenv("CANAL_IO_SPIN_NS");
	if (!e || !*e)
		return IO_SPIN_NS;
	char *end;
	unsigned long long v = strtoull(e, &end, 10);
	return *end || *e == '-' || v > 1000000000ull ? IO_SPIN_NS
						      : (uint64_t)v;
}

static bool io_spin(struct canal__loop *l)
{
	const struct canal__backend_ops *be = l->rt->backend;
	if (!l->inflight || !be->pending || !l->rt->io_spin_ns)
		return false;
	return spin_watch(l, l->rt->io_spin_ns, be->pending, NULL);
}

/* Sleep until a push, a completion or the next timer. Timers are run
 * first: one that fires pushes its task to this queue, which must then be
 * seen by the last look below (else we would sleep with it queued). */
static void loop_sleep(struct canal__loop *l)
{
	uint64_t next = canal__timer_run(l, canal_now_ns());
	uint64_t sweep = canal__compact_idle(l);
	if (sweep < next)
		next = sweep;
	/* Stack pages waiting for their trim (stack.c, TRIM_DELAY_NS). */
	uint64_t trim = canal__stack_pool_trim_due(l->rt->pool);
	if (trim < next)
		next = trim;
	/* Announce it, then look at the queue a last time under the lock
	 * (pairs with loop_wake). */
	atomic_store_explicit(&l->sleeping, 1, memory_order_seq_cst);
	canal__spin_lock(&l->lock);
	bool empty = l->head == NULL;
	canal__spin_unlock(&l->lock);
	if (empty && !atomic_load_explicit(&l->rt->stop, memory_order_seq_cst)) {
		l->rt->backend->poll(l, next);
		canal__timer_run(l, canal_now_ns());
	}
	atomic_store_explicit(&l->sleeping, 0, memory_order_relaxed);
}

static void loop_schedule(struct canal__loop *l)
{
	struct canal__runtime *rt = l->rt;
	for (;;) {
		struct canal__task *t = NULL;
		if (atomic_load_explicit(&l->queued, memory_order_relaxed)) {
			canal__spin_lock(&l->lock);
			t = queue_pop(l);
			canal__spin_unlock(&l->lock);
		}
		if (t) {
			run_chain(l, t);
			continue;
		}
		loop_poll_quick(l);
		if (atomic_load_explicit(&l->queued, memory_order_relaxed))
			continue;
		if ((t = loop_steal(l)) != NULL) {
			run_chain(l, t);
			continue;
		}
		if (atomic_load_explicit(&rt->stop, memory_order_acquire))
			return;
		/* Nothing to run: commit the stack pages the next spawns
		 * will touch (stack.c, COMMIT_AHEAD), give back those of
		 * ended tasks' stacks whose trim is due (TRIM_DELAY_NS; then
		 * look for work again), then spin or sleep as
		 * before (not a new look for work to steal: idle_work).
		 * Also with I/O in flight (a completion may wait for the
		 * call, tens of microseconds): the spawner would make it
		 * anyway, between two tasks of the same loop when it is the
		 * only one. */
		canal__stack_pool_help(rt->pool);
		if (canal__stack_pool_trim_idle(rt->pool, canal_now_ns()))
			continue;
		if (idle_spin(l) || io_spin(l))
			continue;
		loop_sleep(l);
	}
}

/* ------------------------------------------------------------------ */
/* Loop threads                                                        */
/* ------------------------------------------------------------------ */

static const struct canal__parker task_parker_template = {
	.ops = &canal__task_parker_ops,
};

static void loop_thread_stack(struct canal__loop *l)
{
	pthread_attr_t a;
	void *addr = NULL;
	size_t size = 0;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstack(&a, &addr, &size);
		pthread_attr_destroy(&a);
	}
	l->thread_stack_bottom = addr;
	l->thread_stack_size = size;
}

/* Run loop l on the calling thread until the runtime stops. alt: the
 * thread's alternate signal stack (canal__altstack_setup, made before the
 * loop started: a loop runs none of its tasks without one), taken down at
 * the end. */
static void loop_main(struct canal__loop *l, void *alt)
{
	this_loop = l;
	loop_thread_stack(l);
	l->tsan_fiber = san_fiber_current();
	canal__parker_install(&task_parker_template);
	loop_schedule(l);
	canal__parker_install(NULL);
	canal__altstack_teardown(alt);
	canal__stack_cache_flush(l->rt->pool, &l->stacks);
	canal__task_cache_flush(l);
	this_loop = NULL;
}

/* A refusal of io_uring_setup (not a shortage of resources, which the
 * next canal_run may not meet) after the probe said yes: kernel.
 * io_uring_disabled set meanwhile, a seccomp filter. */
static bool ring_refused(int r)
{
	return r < 0 && r != -EMFILE && r != -ENFILE && r != -ENOMEM &&
	       r != -EAGAIN;
}

/* l's backend, on l's thread. A ring refused is noted in rt->ring_refused
 * (written before the loop's start-up report, or on canal_run's thread:
 * read by canal_run after it, under loop_start.lock). */
static int backend_init(struct canal__loop *l)
{
	int r = l->rt->backend->init(l);
	if (l->rt->backend == &canal__backend_uring && ring_refused(r))
		l->rt->ring_refused = true;
	return r;
}

/* Threads other than the caller's: init the backend on the thread (a
 * SINGLE_ISSUER ring belongs to the thread that made it) and its
 * alternate signal stack, report. */
struct loop_start {
	struct canal__loop *l;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, error;
};

static void *loop_thread(void *arg)
{
	struct loop_start *s = arg;
	struct canal__loop *l = s->l;
	void *alt = NULL;
	int r = backend_init(l);
	if (r == 0 && (r = canal__altstack_setup(&alt)) != 0)
		l->rt->backend->fini(l);
	pthread_mutex_lock(&s->lock);
	s->error = r;
	s->done = 1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (r)
		return NULL;
	loop_main(l, alt);
	/* The backend stays until canal_run has joined every loop: the last
	 * task's end may still be waking this loop from another. */
	return NULL;
}

static int start_loop_thread(struct canal__loop *l)
{
	struct loop_start s = {.l = l};
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	int r = pthread_create(&l->thread, NULL, loop_thread, &s);
	if (r == 0) {
		pthread_mutex_lock(&s.lock);
		while (!s.done)
			pthread_cond_wait(&s.cond, &s.lock);
		pthread_mutex_unlock(&s.lock);
		r = s.error;
		if (r)
			pthread_join(l->thread, NULL);
	} else {
		r = -r;
	}
	pthread_cond_destroy(&s.cond);
	pthread_mutex_destroy(&s.lock);
	return r;
}

/* ------------------------------------------------------------------ */
/* canal_run                                                           */
/* ------------------------------------------------------------------ */

/* fork(): the child of a thread that is not a loop (a plain thread, or a
 * detached task's pool thread) has none of the runtime's threads, so no
 * runtime: this atfork child handler forgets it (canal__rt, the local
 * waker, the parked table, a sweep under way, the SIGSEGV handler,
 * runtime_busy; the copied
 * memory stays unused),
 * and the child may run its own. A child forked by a task on a loop is
 * inside that runtime's copy: it may only exec or _exit. */
static void runtime_fork_child(void)
{
	if (this_loop && !this_loop->is_pool)
		return;
	canal__set_local_waker(NULL);
	canal__parked_forget();
	canal__compact_forget();
	/* The overflow reports' SIGSEGV handler, inherited: the child's
	 * next runtime installs it afresh, saving the handler from before
	 * the parent's (which, left in place, it would have saved as the
	 * one before it, then put back at its end: outside a runtime, a
	 * plain fault then looped in the handler for ever). */
	canal__overflow_handler_remove();
	atomic_store(&canal__rt, NULL);
	atomic_store(&runtime_busy, 0);
}

static void runtime_register_atfork(void)
{
	pthread_atfork(NULL, NULL, runtime_fork_child);
}

static int choose_backend(int want, const struct canal__backend_ops **out,
			  bool *automatic)
{
	if (want == CANAL_BACKEND_AUTO) {
		const char *e = getenv("CANAL_BACKEND");
		if (e && strcmp(e, "epoll") == 0)
			want = CANAL_BACKEND_EPOLL;
		else if (e && strcmp(e, "io_uring") == 0)
			want = CANAL_BACKEND_IO_URING;
	}
	*automatic = want == CANAL_BACKEND_AUTO;
	if (want == CANAL_BACKEND_EPOLL) {
		*out = &canal__backend_epoll;
		return 0;
	}
	/* io_uring, else: asked for, the probe's error (-ENOSYS, or the
	 * resources it lacked: -EMFILE, ...); automatic, epoll (which a
	 * shortage of resources may fail too; the next run probes again). */
	int r = canal__uring_probe();
	if (r == 0) {
		*out = &canal__backend_uring;
		return 0;
	}
	if (want == CANAL_BACKEND_IO_URING)
		return r;
	*out = &canal__backend_epoll;
	return 0;
}

static int check_options(const struct canal_run_options *in,
			 struct canal_run_options *o)
{
	memset(o, 0, sizeof(*o));
	if (in)
		*o = *in;
	if (o->flags & ~(unsigned)(CANAL_RUN_NO_SYNC_SHORTCUT |
				   CANAL_RUN_COMPACT_STACKS |
				   CANAL_RUN_SPAWN_NEAR))
		return -EINVAL;
	if (o->backend < CANAL_BACKEND_AUTO || o->backend > CANAL_BACKEND_EPOLL)
		return -EINVAL;
	if (o->loops > 1024)
		return -EINVAL;
	if (o->loops == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		o->loops = n > 0 ? (n > 1024 ? 1024 : (unsigned)n) : 1;
	}
	if (o->stack_size == 0)
		o->stack_size = 256 * 1024;
	if (o->stack_size < 16 * 1024 || o->stack_size > ((size_t)1 << 30))
		return -EINVAL;
	if (o->detach_threads == 0)
		o->detach_threads = 4;
	if (o->detach_threads > 1024)
		return -EINVAL;
	return 0;
}

static void runtime_free(struct canal__runtime *rt)
{
	if (rt->loops) {
		for (unsigned i = 0; i < rt->nloops; i++) {
			canal__timer_fini(&rt->loops[i]);
		}
		free(rt->loops);
	}
	canal__stack_pool_destroy(rt->pool);
	free(rt);
}

/* One run on backend be (runtime_busy held): 0 once every task ended,
 * or the error that stopped its start (nothing run); *refused: a loop's
 * ring was refused (ring_refused). */
static int run_on(void (*main_task)(void *), void *arg,
		  const struct canal_run_options *opts,
		  const struct canal__backend_ops *be, bool *refused);

EXPORT int canal_run(void (*main_task)(void *), void *arg,
		     const struct canal_run_options *opts)
{
	struct canal_run_options o;
	int r;
	if (!main_task)
		return -EINVAL;
	if ((r = check_options(opts, &o)) != 0)
		return r;
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	pthread_once(&atfork_once, runtime_register_atfork);
	int busy = 0;
	if (!atomic_compare_exchange_strong(&runtime_busy, &busy, 1))
		return -EBUSY;
	const struct canal__backend_ops *be;
	bool automatic = false, refused = false;
	if ((r = choose_backend(o.backend, &be, &automatic)) == 0) {
		r = run_on(main_task, arg, &o, be, &refused);
		/* io_uring refused after the probe said yes: kept as the
		 * probe's refusal is (task.h): -ENOSYS when asked for,
		 * epoll when automatic (nothing was run). */
		if (refused) {
			canal__uring_refused();
			r = -ENOSYS;
			if (automatic)
				r = run_on(main_task, arg, &o,
					   &canal__backend_epoll, &refused);
		}
	}
	atomic_store(&runtime_busy, 0);
	return r;
}

static int run_on(void (*main_task)(void *), void *arg,
		  const struct canal_run_options *opts,
		  const struct canal__backend_ops *be, bool *refused)
{
	struct canal_run_options o = *opts;
	int r;
	struct canal__runtime *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->opts = o;
	rt->nloops = o.loops;
	atomic_init(&rt->next_id, 1);
	rt->io_spin_ns = io_spin_bound();
	{
		/* More loops than CPUs in the calling thread's affinity
		 * mask (which the loops inherit): a spinning loop would take
		 * the CPU from the loop (or the peer) whose work it waits
		 * for. No spin then. (A cgroup's CPU quota is not seen.) */
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof set, &set) == 0 &&
		    rt->nloops > (unsigned)CPU_COUNT(&set))
			rt->io_spin_ns = 0;
	}
	rt->backend = be;
	r = -ENOMEM;
	rt->loops = calloc(rt->nloops, sizeof(*rt->loops));
	if (!rt->loops)
		goto fail;
	for (unsigned i = 0; i < rt->nloops; i++) {
		rt->loops[i].rt = rt;
		rt->loops[i].index = i;
	}
	if ((r = canal__stack_pool_create(o.stack_size, &rt->pool)) != 0)
		goto fail;
	if (o.flags & CANAL_RUN_COMPACT_STACKS)
		canal__stack_pool_no_commit_ahead(rt->pool);
	canal__compact_configure(rt);

	struct canal__loop *l0 = &rt->loops[0];
	void *alt0 = NULL;
	if ((r = backend_init(l0)) != 0)
		goto fail;
	/* The caller's thread's alternate signal stack (task.h: every loop
	 * thread has one, for the overflow report), before anything runs;
	 * the other loops' and the detach threads' are made on their
	 * threads, which report an error the same way. */
	if ((r = canal__altstack_setup(&alt0)) != 0) {
		rt->backend->fini(l0);
		goto fail;
	}
	/* The first task exists before any loop runs, so that no loop sees
	 * live == 0 and stops. */
	struct canal__task *first;
	atomic_store(&rt->live, 1);
	if ((r = canal__task_create(rt, main_task, arg, l0, &first)) != 0) {
		canal__altstack_teardown(alt0);
		rt->backend->fini(l0);
		goto fail;
	}
	if ((r = canal__detach_start(rt)) != 0) {
		canal__task_free(first);
		canal__altstack_teardown(alt0);
		rt->backend->fini(l0);
		goto fail;
	}
	canal__overflow_handler_install();
	atomic_store_explicit(&canal__rt, rt, memory_order_release);
	canal__set_local_waker(canal__local_wake);

	unsigned started = 1;
	for (; started < rt->nloops; started++)
		if ((r = start_loop_thread(&rt->loops[started])) != 0)
			break;
	if (started < rt->nloops) {
		/* Not all loops could start: stop the others, fail. */
		atomic_store(&rt->stop, 1);
		for (unsigned i = 1; i < started; i++)
			rt->backend->wake(&rt->loops[i]);
		for (unsigned i = 1; i < started; i++) {
			pthread_join(rt->loops[i].thread, NULL);
			rt->backend->fini(&rt->loops[i]);
		}
		canal__set_local_waker(NULL);
		atomic_store(&canal__rt, NULL);
		canal__overflow_handler_remove();
		canal__detach_stop(rt);
		canal__task_free(first);
		canal__altstack_teardown(alt0);
		rt->backend->fini(l0);
		goto fail;
	}
	canal__spin_lock(&l0->lock);
	queue_append(l0, first);
	canal__spin_unlock(&l0->lock);
	loop_main(l0, alt0);
	for (unsigned i = 1; i < rt->nloops; i++)
		pthread_join(rt->loops[i].thread, NULL);
	/* The pool's threads too (a task that ended detached may still be
	 * waking the loops), before any backend goes. */
	canal__detach_stop(rt);
	/* And the plain threads still inside the local waker: one that woke
	 * the last task may still be waking its loop (park.c). */
	canal__set_local_waker(NULL);
	canal__local_wake_quiesce();
	for (unsigned i = 1; i < rt->nloops; i++)
		rt->backend->fini(&rt->loops[i]);
	atomic_store_explicit(&canal__rt, NULL, memory_order_release);
	canal__overflow_handler_remove();
	rt->backend->fini(l0);
	runtime_free(rt);
	return 0;
fail:
	*refused = rt->ring_refused;
	runtime_free(rt);
	return r;
}
