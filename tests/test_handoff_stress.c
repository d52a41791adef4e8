/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_stress.c - senders parked with their element and receivers
 * moving those elements into the ring (channel/handoff.h), raced against
 * the senders' deadlines, the receivers' pace and close.
 *
 * P producers send (id, seq) on a thread channel of capacity 1 or 2, by
 * blocking sends and by timed sends with deadlines of 0-200 us (so that
 * withdrawals race the receivers' claims); C consumers receive with
 * blocking, timed and try receives and now and then stop for a moment
 * (so that the ring fills and senders park). In half the rounds the
 * channel is closed while the producers still send. Invariants:
 *  - exactly once: an element is received iff its send returned 0 (a
 *    send that said -ETIMEDOUT or -EPIPE delivered nothing; none twice);
 *  - per-producer FIFO: each consumer sees each producer's seq rising;
 *  - no deadlock: the round ends (a watchdog aborts after 60 s).
 * CANAL_STRESS=1 runs more rounds.
 */
#include "check.h"

#include <canal/channel.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define P 4
#define C 2
#define PER 20000u

struct round {
	struct canal_chan *ch;
	/* sent[p][seq]: the send returned 0; got[p][seq]: receptions. */
	uint8_t sent[P][PER];
	_Atomic uint8_t got[P][PER];
	_Atomic int producers_left;
	bool close_early;
	uint64_t seed;
};

static _Atomic unsigned long timeouts;

struct worker {
	struct round *r;
	unsigned id;
};

static void *producer(void *arg)
{
	struct worker *w = arg;
	struct round *r = w->r;
	uint64_t rng = r->seed * 31 + w->id + 1;
	for (uint32_t seq = 0; seq < PER; seq++) {
		uint64_t v = ((uint64_t)w->id << 32) | seq;
		uint64_t dice = check_rand64(&rng);
		int rc;
		if (dice % 3 == 0)
			rc = canal_send(r->ch, &v);
		else
			rc = canal_send_timeout(r->ch, &v,
						(int64_t)(dice >> 8) % 200000);
		if (rc == 0)
			r->sent[w->id][seq] = 1;
		else if (rc == -EPIPE)
			break;
		else {
			CHECK_EQ(rc, -ETIMEDOUT);
			atomic_fetch_add(&timeouts, 1);
		}
		if (r->close_early && w->id == 0 && seq == PER / 2)
			CHECK_EQ(canal_close(r->ch), 0);
	}
	if (atomic_fetch_sub(&r->producers_left, 1) == 1) {
		int rc = canal_close(r->ch);
		CHECK(rc == 0 || rc == -EPIPE);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct worker *w = arg;
	struct round *r = w->r;
	uint64_t rng = r->seed * 17 + w->id + 100;
	int64_t last[P];
	for (unsigned p = 0; p < P; p++)
		last[p] = -1;
	for (;;) {
		uint64_t v, dice = check_rand64(&rng);
		int rc;
		if (dice % 64 == 0) {
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		}
		switch (dice % 3) {
		case 0:
			rc = canal_recv(r->ch, &v);
			break;
		case 1:
			rc = canal_recv_timeout(r->ch, &v, 100000);
			break;
		default:
			rc = canal_try_recv(r->ch, &v);
			break;
		}
		if (rc == -EPIPE)
			break;
		if (rc == -ETIMEDOUT || rc == -EAGAIN)
			continue;
		CHECK_EQ(rc, 0);
		unsigned p = (unsigned)(v >> 32);
		uint32_t seq = (uint32_t)v;
		CHECK(p < P && seq < PER);
		CHECK((int64_t)seq > last[p]); /* per-producer FIFO */
		last[p] = seq;
		CHECK_EQ(atomic_fetch_add(&r->got[p][seq], 1), 0); /* once */
	}
	return NULL;
}

static void *watchdog(void *arg)
{
	(void)arg;
	sleep(60);
	fprintf(stderr, "test_handoff_stress: a round did not end in 60 s\n");
	abort();
}

int main(void)
{
	unsigned rounds = getenv("CANAL_STRESS") ? 40 : 8;
	pthread_t wd;
	CHECK_EQ(pthread_create(&wd, NULL, watchdog, NULL), 0);
	pthread_detach(wd);
	unsigned long delivered = 0, refused = 0;
	for (unsigned k = 0; k < rounds; k++) {
		struct round *r = calloc(1, sizeof(*r));
		CHECK(r != NULL);
		r->ch = canal_chan_create(sizeof(uint64_t), 1 + k % 2, 0);
		CHECK(r->ch != NULL);
		r->close_early = k % 2 == 1;
		r->seed = k + 1;
		atomic_store(&r->producers_left, P);
		pthread_t pt[P], ct[C];
		struct worker pw[P], cw[C];
		for (unsigned i = 0; i < C; i++) {
			cw[i] = (struct worker){ r, i };
			CHECK_EQ(pthread_create(&ct[i], NULL, consumer, &cw[i]),
				 0);
		}
		for (unsigned i = 0; i < P; i++) {
			pw[i] = (struct worker){ r, i };
			CHECK_EQ(pthread_create(&pt[i], NULL, producer, &pw[i]),
				 0);
		}
		for (unsigned i = 0; i < P; i++)
			CHECK_EQ(pthread_join(pt[i], NULL), 0);
		for (unsigned i = 0; i < C; i++)
			CHECK_EQ(pthread_join(ct[i], NULL), 0);
		for (unsigned p = 0; p < P; p++)
			for (uint32_t s = 0; s < PER; s++) {
				CHECK_EQ(atomic_load(&r->got[p][s]),
					 r->sent[p][s]);
				if (r->sent[p][s])
					delivered++;
				else
					refused++;
			}
		canal_chan_destroy(r->ch);
		free(r);
	}
	/* The rounds exercised both outcomes (a test that cannot fail its
	 * checks because nothing timed out is no test of withdrawal). */
	CHECK(delivered > 0 && atomic_load(&timeouts) > 0);
	printf("test_handoff_stress: ok (%u rounds, %lu delivered, %lu not "
	       "sent, %lu timed out)\n",
	       rounds, delivered, refused, atomic_load(&timeouts));
	return 0;
}
