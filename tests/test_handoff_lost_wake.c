/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_lost_wake.c - a wake-up of send_wq consumed by a parked
 * sender whose element a receiver then takes must not leave another
 * parked sender asleep while the ring has room.
 *
 * Capacity 1 holding e0; S1 then S2 park with their elements (futex
 * order: S1 first). The main thread receives e0 (the ring goes non-full:
 * wake_senders wakes one sender, S1) and at once try-receives: the ring
 * is empty, so it takes S1's element from the list. S1 returns 0 from its
 * wake-up. S2 must still be woken: the ring is empty, its send can
 * complete without any receiver. Before the fix S2 sleeps on.
 */
#include "check.h"
#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

struct sender {
	struct canal_chan *ch;
	uint64_t value;
	_Atomic int done;
	int result;
};

static void *send_one(void *arg)
{
	struct sender *s = arg;
	s->result = canal_send(s->ch, &s->value);
	atomic_store(&s->done, 1);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int round_once(void)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 1, 0);
	CHECK(ch != NULL);
	uint64_t e0 = 100, v = 0;
	CHECK_EQ(canal_send(ch, &e0), 0);
	struct sender s1 = { .ch = ch, .value = 101 };
	struct sender s2 = { .ch = ch, .value = 102 };
	pthread_t t1, t2;
	CHECK_EQ(pthread_create(&t1, NULL, send_one, &s1), 0);
	while (atomic_load(&ch->st->handoffs) < 1)
		sched_yield();
	sleep_ms(5); /* S1 in its futex wait */
	CHECK_EQ(pthread_create(&t2, NULL, send_one, &s2), 0);
	while (atomic_load(&ch->st->handoffs) < 2)
		sched_yield();
	sleep_ms(5);
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 100);
	int took = canal_try_recv(ch, &v) == 0;
	/* Whatever happened, the ring has room for the remaining sender(s):
	 * both sends must finish without another receive. */
	int stuck = 0;
	for (int i = 0; i < 1000 && !(atomic_load(&s1.done) &&
				      atomic_load(&s2.done)); i++)
		sleep_ms(1);
	if (!(atomic_load(&s1.done) && atomic_load(&s2.done)))
		stuck = 1;
	if (stuck)
		fprintf(stderr,
			"round: try_recv took %s (%llu); s1 done %d, s2 done %d, "
			"len %zu, handoffs %u: a sender sleeps with room in the ring\n",
			took ? "yes" : "no", (unsigned long long)v,
			atomic_load(&s1.done), atomic_load(&s2.done),
			canal_chan_len(ch), atomic_load(&ch->st->handoffs));
	/* Drain so that the threads can be joined. */
	while (!(atomic_load(&s1.done) && atomic_load(&s2.done)))
		if (canal_try_recv(ch, &v) != 0)
			sched_yield();
	CHECK_EQ(pthread_join(t1, NULL), 0);
	CHECK_EQ(pthread_join(t2, NULL), 0);
	CHECK_EQ(s1.result, 0);
	CHECK_EQ(s2.result, 0);
	canal_chan_destroy(ch);
	return stuck;
}

int main(void)
{
	int stuck = 0;
	for (int r = 0; r < 10; r++)
		stuck += round_once();
	fprintf(stderr, "%d of 10 rounds left a sender asleep\n", stuck);
	CHECK_EQ(stuck, 0);
	return 0;
}
