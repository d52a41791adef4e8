/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_starve.c - a sender that sleeps on the send queue (a
 * reserve here; a task, a batch or a select sender sleep there too) must
 * get a slot while thread senders keep parking with their element
 * (handoff.c). A receiver that frees a slot gives it to the oldest parked
 * element first, and wakes the send queue only when no element was
 * parked; with a few thread producers and a consumer slower than they
 * are, a producer is always parked, so the reserve slept on for ever (here:
 * 3 s, against a few milliseconds before handoff.c, where the receiver's
 * wake-up went to the queue's sleepers in turn).
 *
 * Capacity 1, full; a thread T asleep in a reserve; then four producers
 * that send in a loop (parked); then a consumer that receives and works
 * 200 us an element. Only the public API: the test
 * runs as well on the commit before handoff.c.
 */
#include "check.h"

#include <canal/channel.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define PRODUCERS 4

static struct canal_chan *ch;
static _Atomic uint64_t received, t_value_seen;
static _Atomic int t_done;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *producer(void *arg)
{
	uint64_t v = (uint64_t)(uintptr_t)arg;
	while (canal_send(ch, &v) == 0)
		;
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	uint64_t v;
	while (canal_recv(ch, &v) == 0) {
		atomic_fetch_add(&received, 1);
		if (v == 3)
			atomic_store(&t_value_seen, 1);
		uint64_t until = now_ns() + 200000;
		while (now_ns() < until)
			;
	}
	return NULL;
}

static void *reserver(void *arg)
{
	(void)arg;
	struct canal_slot slot;
	int r = canal_send_reserve(ch, &slot);
	if (r == 0) {
		uint64_t v = 3;
		memcpy(slot.data, &v, sizeof(v));
		r = canal_send_commit(ch, &slot);
	}
	atomic_store(&t_done, r == 0 ? 1 : 2);
	return NULL;
}

int main(void)
{
	ch = canal_chan_create(sizeof(uint64_t), 1, 0);
	CHECK(ch != NULL);
	uint64_t first = 0;
	CHECK_EQ(canal_send(ch, &first), 0); /* full */
	struct timespec ms50 = { 0, 50 * 1000 * 1000 };
	pthread_t p[PRODUCERS], c, t;
	/* T asleep on send_wq first (past its spins and yields), then the
	 * producers parked behind it, then the consumer. */
	CHECK_EQ(pthread_create(&t, NULL, reserver, NULL), 0);
	nanosleep(&ms50, NULL);
	for (uintptr_t i = 0; i < PRODUCERS; i++)
		CHECK_EQ(pthread_create(&p[i], NULL, producer,
					(void *)(i + 10)),
			 0);
	nanosleep(&ms50, NULL);
	uint64_t t0 = now_ns();
	CHECK_EQ(pthread_create(&c, NULL, consumer, NULL), 0);
	while (!atomic_load(&t_done) && now_ns() - t0 < 3000000000u)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	int done = atomic_load(&t_done);
	double waited = (double)(now_ns() - t0) / 1e9;
	uint64_t during = atomic_load(&received);
	canal_close(ch);
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_EQ(pthread_join(p[i], NULL), 0);
	CHECK_EQ(pthread_join(c, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	printf("test_handoff_starve: reserve %s after %.3f s (%llu elements "
	       "received by then)\n",
	       done == 1 ? "done" : "still waiting", waited,
	       (unsigned long long)during);
	CHECK_EQ(done, 1);
	CHECK_EQ(atomic_load(&t_value_seen), 1);
	canal_chan_destroy(ch);
	printf("test_handoff_starve: ok\n");
	return 0;
}
