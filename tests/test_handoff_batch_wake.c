/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_batch_wake.c - a receive that frees more slots than there
 * are senders parked with their element (handoff.c) must still wake a
 * sender that sleeps on the send queue as before (a reserve here; also a
 * task, a batch, a select).
 *
 * Capacity 2 holding e0 and e1; a sender H parked with h (hand-off list)
 * and a reserve T asleep on send_wq. A batch receive takes e0 and e1 and
 * frees both slots: its serve moves h into one, the other is free, so T's
 * reserve must return. wake_senders woke send_wq only when tail was still
 * where the ring had been full (tail == pos + ring), which the serve's own
 * claim of h's position had just moved: T slept on beside a free slot.
 * The same with a single receive that frees one slot of a capacity-2 ring
 * is fine (the slot is refilled); it is the batch (k > 1) that loses.
 */
#include "check.h"
#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

struct party {
	struct canal_chan *ch;
	uint64_t v;
	int result;
	_Atomic int done;
};

static void *do_send(void *arg)
{
	struct party *p = arg;
	p->result = canal_send(p->ch, &p->v);
	atomic_store(&p->done, 1);
	return NULL;
}

static void *do_reserve(void *arg)
{
	struct party *p = arg;
	struct canal_slot slot;
	p->result = canal_send_reserve(p->ch, &slot);
	if (p->result == 0) {
		memcpy(slot.data, &p->v, sizeof(p->v));
		p->result = canal_send_commit(p->ch, &slot);
	}
	atomic_store(&p->done, 1);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000 };
	nanosleep(&ts, NULL);
}

static void round_(void)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 2, 0);
	CHECK(ch != NULL);
	uint64_t e[2] = { 100, 101 }, got[2];
	CHECK_EQ(canal_send(ch, &e[0]), 0);
	CHECK_EQ(canal_send(ch, &e[1]), 0);

	struct party h = { .ch = ch, .v = 200 }, t = { .ch = ch, .v = 300 };
	pthread_t th, tt;
	CHECK_EQ(pthread_create(&th, NULL, do_send, &h), 0);
	while (atomic_load(&ch->st->handoffs) != 1)
		sched_yield();
	CHECK_EQ(pthread_create(&tt, NULL, do_reserve, &t), 0);
	while (atomic_load(&ch->st->send_wq.waiters) != 2)
		sched_yield();
	sleep_ms(50); /* T past its spins and yields, asleep */

	CHECK_EQ(canal_recv_batch(ch, got, 2), 2);
	CHECK_EQ(got[0], 100);
	CHECK_EQ(got[1], 101);
	uint64_t end = now_ns() + 2000000000u;
	while (!atomic_load(&t.done) && now_ns() < end)
		sleep_ms(1);
	if (!atomic_load(&t.done)) {
		fprintf(stderr,
			"the reserve still sleeps 2 s after a batch receive "
			"freed two slots for one parked element (len %zu)\n",
			canal_chan_len(ch));
		abort();
	}
	CHECK_EQ(pthread_join(tt, NULL), 0);
	CHECK_EQ(t.result, 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(h.result, 0);
	/* h and T's element, in either order (who got which slot). */
	uint64_t v, w;
	CHECK_EQ(canal_try_recv(ch, &v), 0);
	CHECK_EQ(canal_try_recv(ch, &w), 0);
	CHECK_EQ(v + w, 500);
	CHECK(v == 200 || v == 300);
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	canal_chan_destroy(ch);
}

int main(void)
{
	for (int i = 0; i < 5; i++)
		round_();
	printf("test_handoff_batch_wake: ok\n");
	return 0;
}
