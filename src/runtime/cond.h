/* SPDX-License-Identifier: MIT */
/* runtime/cond.h - condvar registration for the operations it cancels. */
#ifndef CANAL_RUNTIME_COND_H
#define CANAL_RUNTIME_COND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct canal_cond;
struct canal__task;

/* A waiter: lives on the waiting task's stack while registered. */
struct canal__cond_waiter {
	struct canal__cond_waiter *next, *prev;
	struct canal__task *task;
	uint32_t reason; /* what a signal makes its wake: WAKE_WOKEN/CANCELED */
	/* Cleared (release) by the signal that won the task's wake, after
	 * its unlock of the condvar and its last touch of the waiter, before
	 * the task is made runnable: the task, resuming, then unregisters
	 * without touching the condvar (which the signaller may destroy once
	 * its signal returned, or the task once its wait returned). */
	_Atomic bool linked;
};

/* Register w (t already armed); a signal then tries to win t's wake with
 * reason. Unregister after the wait, whatever woke it. */
void canal__cond_register(struct canal_cond *c, struct canal__cond_waiter *w,
			  struct canal__task *t, uint32_t reason);
void canal__cond_unregister(struct canal_cond *c,
			    struct canal__cond_waiter *w);

#endif /* CANAL_RUNTIME_COND_H */
