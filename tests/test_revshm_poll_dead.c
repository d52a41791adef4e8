/*
 * test_revshm_poll_dead - a consumer that polls a shared channel (try
 * operations, or timed ones shorter than the repair's grace periods, in a
 * loop: an event loop's pattern) is that slot's waiter as much as a
 * blocking one: a slot that a killed process holds must be repaired, and
 * what was sent after it received (docs/GUARANTEES.md: "Nothing wedges",
 * "Survivors notice within about a second").
 *
 *  1. try_recv in a loop, a sender killed holding a reserve (named claim:
 *     repaired once its slot has been waited on 1 ms);
 *  2. recv_timeout(200 us) in a loop, the same;
 *  3. recv_timeout(100 ms) in a loop, a sender that died between its claim
 *     and its owner word (played by hand: tail advanced, nothing else):
 *     repaired once waited on 0.9 s;
 *  4. try_send in a loop, the ring full and a receiver killed holding a
 *     borrow on the slot the next send needs.
 *
 * Failed before the fix: each loop ran to its 3 s deadline without the
 * element (try_recv, try_send: -EAGAIN; timed: -ETIMEDOUT), and would have
 * for ever. The time a claim spends on a held slot was counted per call
 * (canal__ring_claim_*'s own struct canal__held_wait), so no call reached
 * the 1 ms (or 0.9 s) after which the repair is asked, however long the
 * slot had been waited on; a try_recv did not even look at the slot's
 * holder (it returns at an unpublished slot without reading tail).
 *
 * Bounded by alarm(); every wait has a deadline.
 */
#define _GNU_SOURCE 1
#include "dead_holder.h"

#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOOP_NS 3000000000ull

static void nap_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

/* A "sender" that claimed the next position and died before naming
 * itself. */
static void dead_anonymous_claim(struct canal_chan *ch)
{
	uint64_t t = atomic_load(&ch->st->tail);
	CHECK(atomic_compare_exchange_strong(&ch->st->tail, &t,
					     t + tail_advance(1)));
}

enum how { BY_TRY, BY_SHORT_TIMEOUT, BY_100MS };

static int recv_once(struct canal_chan *ch, uint64_t *v, enum how how)
{
	switch (how) {
	case BY_TRY: {
		int r = canal_try_recv(ch, v);
		if (r == -EAGAIN)
			nap_us(100);
		return r;
	}
	case BY_SHORT_TIMEOUT:
		return canal_recv_timeout(ch, v, 200000);
	default:
		return canal_recv_timeout(ch, v, 100000000);
	}
}

static void poll_recv(enum how how, bool anonymous)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 4,
						  CANAL_SHARED);
	CHECK(ch);
	if (anonymous)
		dead_anonymous_claim(ch);
	else
		kill_holding(ch, false);
	uint64_t v = 9, got = 0;
	CHECK_EQ(canal_send(ch, &v), 0);
	uint64_t end = canal_now_ns() + LOOP_NS;
	int r;
	do
		r = recv_once(ch, &got, how);
	while ((r == -EAGAIN || r == -ETIMEDOUT) && canal_now_ns() < end);
	CHECK_EQ(r, 0);
	CHECK_EQ(got, 9);
	CHECK_EQ(canal_try_recv(ch, &got), -EAGAIN);
	canal_chan_destroy(ch);
}

static void poll_send(void)
{
	struct canal_chan *ch = full_behind_dead_borrow();
	uint64_t v3 = 3, got = 0;
	uint64_t end = canal_now_ns() + LOOP_NS;
	int r;
	while ((r = canal_try_send(ch, &v3)) == -EAGAIN &&
	       canal_now_ns() < end)
		nap_us(100);
	CHECK_EQ(r, 0);
	CHECK_EQ(canal_try_recv(ch, &got), 0);
	CHECK_EQ(got, 2);
	CHECK_EQ(canal_try_recv(ch, &got), 0);
	CHECK_EQ(got, 3);
	canal_chan_destroy(ch);
}

/* argv[1], if given: run only that case (1 to 4). */
int main(int argc, char **argv)
{
	int only = argc > 1 ? atoi(argv[1]) : 0;
	alarm(40);
	if (!only || only == 1)
		poll_recv(BY_TRY, false);
	if (!only || only == 2)
		poll_recv(BY_SHORT_TIMEOUT, false);
	if (!only || only == 3)
		poll_recv(BY_100MS, true);
	if (!only || only == 4)
		poll_send();
	TEST_DONE("test_revshm_poll_dead");
}
