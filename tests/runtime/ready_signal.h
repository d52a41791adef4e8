/* SPDX-License-Identifier: MIT */
/*
 * ready_signal.h - for the tests of a cancel lost between two waits of one
 * call (test_revrt_connect_retry_signal, test_revpoll_rdhup_signal): a
 * task of the same loop as the call signals its condvar at the moment the
 * call's task was made ready by one of its own waits (a pause's timer, a
 * completion) and has not run yet. White box: canal__loop_has_ready.
 */
#ifndef CANAL_TEST_READY_SIGNAL_H
#define CANAL_TEST_READY_SIGNAL_H

#include "runtime/internal.h"

#include <canal/task.h>
#include <stdatomic.h>

/* Once *started: let the call's task park (its first wait: a pause of
 * 1 ms, or an operation in flight), run past that pause's deadline, then
 * yield until the loop has a ready task (the call's, its wait over) or
 * 10 000 times, and signal. canal_cond_signal's result: 1 when the
 * signal met the call's wait. */
static inline int signal_when_ready(_Atomic int *started,
				    struct canal_cond *cond)
{
	while (!atomic_load(started))
		canal_yield();
	uint64_t t0 = canal_now_ns();
	while (canal_now_ns() < t0 + 3000000)
		;
	for (int i = 0; i < 10000; i++) {
		canal_yield();
		if (canal__loop_has_ready(canal__this_loop()))
			break;
	}
	return canal_cond_signal(cond);
}

#endif
