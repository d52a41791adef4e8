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
	/* A kept waiter's (canal__cond_register_keep) state, enum
	 * canal__keep_state; KEEP_NONE for the others. */
	_Atomic uint32_t keep;
	bool wake_it; /* (the signal that took it won its task's wake) */
};

/* A kept waiter stays registered across several parks of one operation
 * (a connect started again after pauses, io.c), its task running
 * between them: a signal that finds its task's wake not armed (won by a
 * pause's timer, or not armed yet) takes the waiter all the same, as if
 * it had won it: KEEP_IN -> KEEP_TAKEN (under the condvar's lock, the
 * waiter unlinked), then it tries the task's wake once more (the Dekker
 * pair with canal__cond_keep_taken: the task arms, then looks), then
 * KEEP_DONE (release), its last touch of the waiter and, unless it won
 * the wake, of the task. The task, to unregister, takes KEEP_IN ->
 * KEEP_LEAVING first, which a signal then skips: a task that saw its
 * waiter taken never touches the condvar (its signaller may destroy it
 * once its call returned). */
enum canal__keep_state {
	KEEP_NONE = 0,
	KEEP_IN,
	KEEP_TAKEN,
	KEEP_DONE,
	KEEP_LEAVING,
};

/* Register w (t already armed); a signal then tries to win t's wake with
 * reason. Unregister after the wait, whatever woke it. */
void canal__cond_register(struct canal_cond *c, struct canal__cond_waiter *w,
			  struct canal__task *t, uint32_t reason);
void canal__cond_unregister(struct canal_cond *c,
			    struct canal__cond_waiter *w);
/* Register w as a kept waiter of t (armed or not), reason
 * WAKE_CANCELED. */
void canal__cond_register_keep(struct canal_cond *c,
			       struct canal__cond_waiter *w,
			       struct canal__task *t);
/* After arming t (canal__task_arm), before parking: true if a signal took
 * w (then w is out of c, c must not be touched, and the task's wake may
 * have been won by it: disarm, or park to be pushed). */
bool canal__cond_keep_taken(struct canal__cond_waiter *w);
/* Unregister kept waiter w (its task not armed): true if a signal had
 * taken it. */
bool canal__cond_unregister_keep(struct canal_cond *c,
				 struct canal__cond_waiter *w);

#endif /* CANAL_RUNTIME_COND_H */
