/* SPDX-License-Identifier: MIT */
/*
 * ready_signal.h - for the tests of a cancel lost between two waits of one
 * call (test_revrt_connect_retry_signal, test_revpoll_rdhup_signal,
 * test_revrs_link_recv_signal, test_revrs_rstream_cap_signal): a task of
 * the same loop as the call signals its condvar at the moment the call's
 * task was made ready by one of its own waits (a pause's timer, a
 * completion) and has not run yet. White box: canal__loop_has_ready.
 * Each round of such a test: ready_round_start, the call between
 * ready_round_call and ready_round_end, then the round's verdict (the
 * call's result, and signalled: 1 when the signal met the call's wait).
 */
#ifndef CANAL_TEST_READY_SIGNAL_H
#define CANAL_TEST_READY_SIGNAL_H

#include "check.h"
#include "runtime/internal.h"

#include <canal/task.h>
#include <stdatomic.h>
#include <unistd.h>

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

/* One round: the call's condvar and what its signaller did. It lives on
 * the calling task's stack; the signaller reads it while that task is
 * parked in the call, and the round ends only once the signaller did
 * (ready_round_end). */
struct ready_round {
	struct canal_cond *cond;
	_Atomic int in_call; /* the call is about to start, or running */
	_Atomic int done;    /* the signaller signalled (or none runs) */
	int signalled;	     /* its canal_cond_signal's result */
};

static inline void ready_round_signaller(void *arg)
{
	struct ready_round *r = arg;
	r->signalled = signal_when_ready(&r->in_call, r->cond);
	atomic_store(&r->done, 1);
}

/* Before the call: a signaller task on this loop (none when spawn is
 * false: a call that will not park, which it would wait for forever). */
static inline void ready_round_start(struct ready_round *r,
				     struct canal_cond *cond, bool spawn)
{
	r->cond = cond;
	r->signalled = 0;
	atomic_store(&r->in_call, 0);
	atomic_store(&r->done, !spawn);
	if (spawn)
		CHECK_EQ(canal_spawn(ready_round_signaller, r), 0);
}

/* Right before the call. */
static inline void ready_round_call(struct ready_round *r)
{
	atomic_store(&r->in_call, 1);
}

/* After the call: the signaller has signalled once this returns. */
static inline void ready_round_end(struct ready_round *r)
{
	atomic_store(&r->in_call, 0);
	while (!atomic_load(&r->done))
		canal_yield();
}

/* main's part: *cond made, main_task run on one loop, *cond destroyed. */
static inline void ready_signal_run(struct canal_cond **cond,
				    void (*main_task)(void *))
{
	*cond = canal_cond_create();
	CHECK(*cond);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	canal_cond_destroy(*cond);
}

/* A whole main for a test with no set-up of its own: a hang guard of
 * 120 s, ready_signal_run, then no round failed (*failures). */
static inline int ready_signal_main(struct canal_cond **cond,
				    void (*main_task)(void *),
				    const int *failures, const char *name)
{
	alarm(120);
	ready_signal_run(cond, main_task);
	CHECK_EQ(*failures, 0);
	TEST_DONE(name);
}

#endif
