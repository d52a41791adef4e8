/* SPDX-License-Identifier: MIT */
/* runtime/cond.h - condvar registration for the operations it cancels. */
#ifndef CANAL_RUNTIME_COND_H
#define CANAL_RUNTIME_COND_H

#include <stdbool.h>
#include <stdint.h>

struct canal_cond;
struct canal__task;

/* A waiter: lives on the waiting task's stack while registered. */
struct canal__cond_waiter {
	struct canal__cond_waiter *next, *prev;
	struct canal__task *task;
	uint32_t reason; /* what a signal makes its wake: WAKE_WOKEN/CANCELED */
	bool linked;
};

/* Register w (t already armed); a signal then tries to win t's wake with
 * reason. Unregister after the wait, whatever woke it. */
void canal__cond_register(struct canal_cond *c, struct canal__cond_waiter *w,
			  struct canal__task *t, uint32_t reason);
void canal__cond_unregister(struct canal_cond *c,
			    struct canal__cond_waiter *w);

#endif /* CANAL_RUNTIME_COND_H */
