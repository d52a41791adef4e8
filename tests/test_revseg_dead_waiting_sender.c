/* SPDX-License-Identifier: MIT */
/*
 * test_revseg_dead_waiting_sender - a sender killed while it waits for a
 * receiver on a synchronous shared channel (a blocking canal_send, or a
 * canal_select with a send case) is counted as a waiting sender; once it
 * is dead, canal_try_recv must not take it for one: it returns -EAGAIN at
 * once, without announcing itself and sleeping for the 1 ms it grants a
 * waiting sender (channel.h: "it never waits otherwise"). A try call
 * that sleeps is a voluntary context switch of its thread: counted with
 * getrusage(RUSAGE_THREAD), not timed.
 */
#define _GNU_SOURCE
#include "check.h"
#include "dead_holder.h"

#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRIES 20

/* A child blocks sending on ch (in canal_select if select), and is killed
 * once it waits on the demand queue. */
static void kill_waiting_sender(struct canal_chan *ch, bool select)
{
	uint32_t before = atomic_load(&ch->st->demand_wq.waiters);
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		uint64_t v = 7;
		if (select) {
			struct canal_case c = { ch, CANAL_OP_SEND, &v, 0 };
			canal_select(&c, 1, -1, 0);
		} else {
			canal_send(ch, &v);
		}
		_exit(3); /* never: nobody receives */
	}
	while (atomic_load(&ch->st->demand_wq.waiters) == before)
		sched_yield();
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(wait_child(pid), 128 + SIGKILL);
}

static long voluntary_switches(void)
{
	struct rusage ru;
	CHECK_EQ(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

/* TRIES canal_try_recv on ch (nothing there, no live sender): each
 * -EAGAIN, and (almost) none of them sleeping. */
static void try_recv_at_once(struct canal_chan *ch)
{
	uint64_t got;
	long before = voluntary_switches();
	for (int i = 0; i < TRIES; i++)
		CHECK_EQ(canal_try_recv(ch, &got), -EAGAIN);
	long slept = voluntary_switches() - before;
	/* A stale count makes every try sleep (TRIES); a few switches are
	 * left for whatever else the kernel does with the thread. */
	CHECK(slept < TRIES / 4);
	/* select's poll (timeout 0) is a try as well. */
	struct canal_case c = { ch, CANAL_OP_RECV, &got, 0 };
	before = voluntary_switches();
	for (int i = 0; i < TRIES; i++)
		CHECK_EQ(canal_select(&c, 1, 0, 0), -EAGAIN);
	slept = voluntary_switches() - before;
	CHECK(slept < TRIES / 4);
}

/* The channel still works: a live sender meets a receiver. */
static void still_works(struct canal_chan *ch)
{
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		uint64_t v = 42;
		_exit(canal_send(ch, &v) == 0 ? 0 : 1);
	}
	uint64_t got = 0;
	CHECK_EQ(canal_recv(ch, &got), 0);
	CHECK_EQ(got, 42);
	CHECK_EQ(wait_child(pid), 0);
}

int main(void)
{
	alarm(60); /* a hang fails the test */
	for (int select = 0; select < 2; select++) {
		struct canal_chan *ch =
			canal_chan_create(sizeof(uint64_t), 0, CANAL_SHARED);
		CHECK(ch);
		kill_waiting_sender(ch, select);
		try_recv_at_once(ch);
		/* Two dead at once, one of each kind. */
		kill_waiting_sender(ch, !select);
		kill_waiting_sender(ch, select);
		try_recv_at_once(ch);
		still_works(ch);
		try_recv_at_once(ch);
		canal_chan_destroy(ch);
	}
	TEST_DONE("test_revseg_dead_waiting_sender");
}
