/* SPDX-License-Identifier: MIT */
/*
 * cond.c - condition variables of tasks (CPC's), which also cancel the
 * operations they are passed to.
 *
 * Invariants (c->lock): the list holds the registered waiters, oldest
 * first; a waiter is in it iff w->linked, but for the waiters a signal
 * won, out of it and still marked until that signal, past its unlock,
 * makes their tasks runnable (cond_wake). A signal walks from the oldest
 * and stops at the first waiter whose task's wake it wins (unlinking it);
 * waiters whose task was woken by something else (a timeout, a completion)
 * are skipped and stay linked until their task unregisters them after it
 * resumes; but a kept waiter (cond.h) is taken even then. The waiting
 * task armed its wake before registering, under the lock, so a signal
 * after the registration finds it; one before finds nobody (CPC's
 * semantics: a signal has no memory).
 */
#include "runtime/internal.h"
#include "runtime/cond.h"
#include "base/clock.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

/*
 * The lock is the runtime's spinlock (internal.h), not a pthread mutex: it
 * is held only for a few list operations and the wake-ups of the tasks
 * signalled (never across a switch), and a mutex's lock and unlock cost
 * about 55 instructions of the 915 of a spawn + join (callgrind).
 */
struct canal_cond {
	struct canal__spinlock lock;
	struct canal__cond_waiter *head, *tail;
};

EXPORT struct canal_cond *canal_cond_create(void)
{
	struct canal_cond *c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

EXPORT void canal_cond_destroy(struct canal_cond *c)
{
	if (!c)
		return;
	free(c);
}

static void cond_register(struct canal_cond *c, struct canal__cond_waiter *w,
			  struct canal__task *t, uint32_t reason,
			  uint32_t keep)
{
	w->task = t;
	w->reason = reason;
	w->next = NULL;
	/* (Published by the unlock below, as the rest.) */
	atomic_store_explicit(&w->keep, keep, memory_order_relaxed);
	canal__spin_lock(&c->lock);
	w->prev = c->tail;
	if (c->tail)
		c->tail->next = w;
	else
		c->head = w;
	c->tail = w;
	atomic_store_explicit(&w->linked, true, memory_order_relaxed);
	canal__spin_unlock(&c->lock);
}

void canal__cond_register(struct canal_cond *c, struct canal__cond_waiter *w,
			  struct canal__task *t, uint32_t reason)
{
	cond_register(c, w, t, reason, KEEP_NONE);
}

/* Take w out of the list (c->lock held); linked is left to the caller. */
static void unlink_waiter(struct canal_cond *c, struct canal__cond_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		c->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		c->tail = w->prev;
}

void canal__cond_unregister(struct canal_cond *c,
			    struct canal__cond_waiter *w)
{
	/* Unlinked by the signal that woke us: c is not touched (it may be
	 * gone already, cond.h). */
	if (!atomic_load_explicit(&w->linked, memory_order_acquire))
		return;
	canal__spin_lock(&c->lock);
	if (atomic_load_explicit(&w->linked, memory_order_relaxed)) {
		unlink_waiter(c, w);
		atomic_store_explicit(&w->linked, false, memory_order_relaxed);
	}
	canal__spin_unlock(&c->lock);
}

void canal__cond_register_keep(struct canal_cond *c,
			       struct canal__cond_waiter *w,
			       struct canal__task *t)
{
	cond_register(c, w, t, WAKE_CANCELED, KEEP_IN);
}

/* A signal's taking of w is over (its last touch of w): wait for it. */
static void keep_wait_done(struct canal__cond_waiter *w)
{
	while (atomic_load_explicit(&w->keep, memory_order_acquire) !=
	       KEEP_DONE)
		sched_yield();
}

bool canal__cond_keep_taken(struct canal__cond_waiter *w)
{
	/* Pairs with the fence in cond_wake: either this load sees
	 * KEEP_TAKEN, or the signal's second try sees the wake armed. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&w->keep, memory_order_relaxed) == KEEP_IN)
		return false;
	keep_wait_done(w);
	return true;
}

bool canal__cond_unregister_keep(struct canal_cond *c,
				 struct canal__cond_waiter *w)
{
	/* Unlinked by a signal that won the wake (KEEP_IN left as it was):
	 * that signal made the task runnable after its last touch. */
	if (!atomic_load_explicit(&w->linked, memory_order_acquire)) {
		if (atomic_load_explicit(&w->keep, memory_order_acquire) ==
		    KEEP_IN)
			return false;
		keep_wait_done(w); /* taken: its signaller's last touch */
		return true;
	}
	uint32_t in = KEEP_IN;
	if (!atomic_compare_exchange_strong_explicit(&w->keep, &in,
						     KEEP_LEAVING,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		keep_wait_done(w); /* taken: c is not ours to touch */
		return true;
	}
	canal__spin_lock(&c->lock);
	if (atomic_load_explicit(&w->linked, memory_order_relaxed)) {
		unlink_waiter(c, w);
		atomic_store_explicit(&w->linked, false, memory_order_relaxed);
	}
	canal__spin_unlock(&c->lock);
	return false;
}

/*
 * The waiters whose wake a signal wins are unlinked under the lock and
 * chained through their next (theirs alone from then: their tasks cannot
 * run before they are made runnable); after the unlock, each is marked
 * unlinked and its task made runnable, in that order. So the signaller's
 * last touch of c comes before any woken task runs (a woken task may
 * destroy c), and the woken task's unregister does not touch c (the
 * signaller may destroy it once its signal returned).
 */
static int cond_wake(struct canal_cond *c, int max)
{
	if (!c)
		return -EINVAL;
	/* A plain thread's signal may win the wake of the runtime's last
	 * task and still be looking at its loop (loop_wake) when that task
	 * has ended and canal_run frees the loops: it counts itself, before
	 * it can win any wake, until after its last, and canal_run waits
	 * for it (park.c, canal__local_wake_quiesce;
	 * test_revcond_signal_run_end). Loop and pool threads are joined
	 * first. */
	bool outside = canal__this_loop() == NULL;
	if (outside)
		canal__outside_wake_begin();
	int n = 0;
	struct canal__cond_waiter *won = NULL, **last = &won;
	canal__spin_lock(&c->lock);
	for (struct canal__cond_waiter *w = c->head, *next; w && n < max;
	     w = next) {
		next = w->next;
		bool wake_it = canal__task_win(w->task, w->reason);
		if (!wake_it) {
			/* A kept waiter whose task is between two parks is
			 * taken all the same (cond.h); any other is skipped. */
			uint32_t in = KEEP_IN;
			if (!atomic_compare_exchange_strong_explicit(
				    &w->keep, &in, KEEP_TAKEN,
				    memory_order_seq_cst,
				    memory_order_relaxed))
				continue;
			atomic_thread_fence(memory_order_seq_cst);
			wake_it = canal__task_win(w->task, w->reason);
		}
		unlink_waiter(c, w);
		w->wake_it = wake_it;
		w->next = NULL;
		*last = w;
		last = &w->next;
		n++;
	}
	canal__spin_unlock(&c->lock);
	while (won) {
		struct canal__cond_waiter *w = won;
		struct canal__task *t = w->task;
		bool wake_it = w->wake_it;
		bool taken = atomic_load_explicit(&w->keep,
						  memory_order_relaxed) ==
			     KEEP_TAKEN;
		won = w->next;
		/* The last touch of w: its task may return once runnable,
		 * or (taken, its wake not won here) once KEEP_DONE. */
		atomic_store_explicit(&w->linked, false, memory_order_release);
		if (taken)
			atomic_store_explicit(&w->keep, KEEP_DONE,
					      memory_order_release);
		if (wake_it)
			canal__task_make_runnable(t);
	}
	if (outside)
		canal__outside_wake_end();
	return n;
}

EXPORT int canal_cond_signal(struct canal_cond *c)
{
	return cond_wake(c, 1);
}

EXPORT int canal_cond_broadcast(struct canal_cond *c)
{
	return cond_wake(c, INT32_MAX);
}

EXPORT int canal_cond_wait(struct canal_cond *c, int64_t timeout_ns)
{
	if (!c)
		return -EINVAL;
	struct canal__task *t = canal__this_task();
	if (!t || t->detached)
		return -EPERM;
	uint64_t deadline = canal__deadline_from_timeout(timeout_ns);
	struct canal__cond_waiter w;
	canal__task_arm(t);
	canal__cond_register(c, &w, t, WAKE_WOKEN);
	uint32_t why = canal__task_park(t, deadline);
	canal__cond_unregister(c, &w);
	return why == WAKE_TIMEDOUT ? -ETIMEDOUT : 0;
}
