/* SPDX-License-Identifier: MIT */
/*
 * cond.c - condition variables of tasks (CPC's), which also cancel the
 * operations they are passed to.
 *
 * Invariants (c->lock): the list holds the registered waiters, oldest
 * first; a waiter is linked iff w->linked. A signal walks from the oldest
 * and stops at the first waiter whose task's wake it wins (unlinking it);
 * waiters whose task was woken by something else (a timeout, a completion)
 * are skipped and stay linked until their task unregisters them after it
 * resumes. The waiting task armed its wake before registering, under the
 * lock, so a signal after the registration finds it; one before finds
 * nobody (CPC's semantics: a signal has no memory).
 */
#include "runtime/internal.h"
#include "runtime/cond.h"
#include "base/clock.h"

#include <errno.h>
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

void canal__cond_register(struct canal_cond *c, struct canal__cond_waiter *w,
			  struct canal__task *t, uint32_t reason)
{
	w->task = t;
	w->reason = reason;
	w->next = NULL;
	canal__spin_lock(&c->lock);
	w->prev = c->tail;
	if (c->tail)
		c->tail->next = w;
	else
		c->head = w;
	c->tail = w;
	w->linked = true;
	canal__spin_unlock(&c->lock);
}

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
	w->linked = false;
}

void canal__cond_unregister(struct canal_cond *c,
			    struct canal__cond_waiter *w)
{
	canal__spin_lock(&c->lock);
	if (w->linked)
		unlink_waiter(c, w);
	canal__spin_unlock(&c->lock);
}

static int cond_wake(struct canal_cond *c, int max)
{
	if (!c)
		return -EINVAL;
	int n = 0;
	canal__spin_lock(&c->lock);
	for (struct canal__cond_waiter *w = c->head, *next; w && n < max;
	     w = next) {
		next = w->next;
		if (canal__task_wake(w->task, w->reason)) {
			unlink_waiter(c, w);
			n++;
		}
	}
	canal__spin_unlock(&c->lock);
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
