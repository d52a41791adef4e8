/* remote_stress.h - the channel stress invariants across a remote channel
 * each way between ranks 0 and 1 of a session (tags 1 and 2): PRODUCERS
 * threads per process send n elements each (a mix of blocking, try and
 * timed sends), CONSUMERS threads of the other process receive (single and
 * batch receives); the sending side closes once its producers are done,
 * midway through the consumers' work. Every element must be received
 * exactly once, each producer's elements in order for every consumer,
 * then -EPIPE; both ends close normally. Used by test_remote_channel
 * (loopback, shm) and test_remote_netns (two network namespaces). */
#ifndef CANAL_TEST_REMOTE_STRESS_H
#define CANAL_TEST_REMOTE_STRESS_H

#include "check.h"

#include <canal/remote.h>
#include <sched.h>
#include <stdint.h>

#define PRODUCERS 4
#define CONSUMERS 2

struct elt {
	uint32_t producer, seq;
	uint64_t pattern;
};

static inline uint64_t pattern(uint32_t p, uint32_t s)
{
	return ((uint64_t)p << 40) ^ (uint64_t)s * 2654435761u ^ 0x5a5a;
}

/* ---- stress ---- */

struct producer_arg {
	struct canal_chan *ch;
	uint32_t id;
	int n;
};

static inline void *producer(void *arg)
{
	struct producer_arg *a = arg;
	for (int i = 0; i < a->n; i++) {
		struct elt x = { a->id, (uint32_t)i, pattern(a->id, (uint32_t)i) };
		/* a mix of the send forms */
		int err;
		if (i % 3 == 0) {
			err = canal_send(a->ch, &x);
		} else if (i % 3 == 1) {
			while ((err = canal_try_send(a->ch, &x)) == -EAGAIN)
				sched_yield();
		} else {
			while ((err = canal_send_timeout(a->ch, &x, 1000000)) == -ETIMEDOUT)
				;
		}
		CHECK_EQ(err, 0);
	}
	return NULL;
}

struct consumer_arg {
	struct canal_chan *ch;
	unsigned char *seen; /* PRODUCERS * n, atomically marked */
	int n;
	long got;
};

static inline void *consumer(void *arg)
{
	struct consumer_arg *a = arg;
	int64_t last[PRODUCERS];
	for (int p = 0; p < PRODUCERS; p++)
		last[p] = -1;
	for (;;) {
		struct elt x[4];
		ssize_t k;
		if (a->got % 2)
			k = canal_recv_batch(a->ch, x, 4);
		else
			k = canal_recv(a->ch, x) == 0 ? 1 : -EPIPE;
		if (k == -EPIPE)
			break;
		CHECK(k >= 1);
		for (ssize_t j = 0; j < k; j++) {
			CHECK(x[j].producer < PRODUCERS);
			CHECK(x[j].seq < (uint32_t)a->n);
			CHECK_EQ(x[j].pattern, pattern(x[j].producer, x[j].seq));
			/* per-producer FIFO, as this consumer sees it */
			CHECK((int64_t)x[j].seq > last[x[j].producer]);
			last[x[j].producer] = x[j].seq;
			unsigned char *s = &a->seen[(size_t)x[j].producer * (size_t)a->n + x[j].seq];
			CHECK_EQ(__atomic_exchange_n(s, 1, __ATOMIC_RELAXED), 0);
			a->got++;
		}
	}
	return NULL;
}

static inline int remote_stress(struct canal_remote_hub *hub, int rank, int n,
				size_t capacity)
{
	int peer = 1 - rank;
	struct canal_remote *out, *in;
	/* rank 0 sends on tag 1, rank 1 on tag 2 */
	CHECK_EQ(canal_remote_open(hub, peer, rank == 0 ? 1 : 2, CANAL_REMOTE_SEND,
				   sizeof(struct elt), capacity, &out), 0);
	CHECK_EQ(canal_remote_open(hub, peer, rank == 0 ? 2 : 1, CANAL_REMOTE_RECV,
				   sizeof(struct elt), capacity, &in), 0);
	CHECK_EQ(canal_chan_capacity(canal_remote_chan(out)), capacity / 2);
	CHECK_EQ(canal_chan_capacity(canal_remote_chan(in)), capacity - capacity / 2);
	CHECK_EQ(canal_chan_elt_size(canal_remote_chan(in)), sizeof(struct elt));

	unsigned char *seen = calloc((size_t)PRODUCERS * (size_t)n, 1);
	CHECK(seen);
	struct producer_arg pa[PRODUCERS];
	struct consumer_arg ca[CONSUMERS];
	pthread_t pt[PRODUCERS], ct[CONSUMERS];
	for (int c = 0; c < CONSUMERS; c++) {
		ca[c] = (struct consumer_arg){ canal_remote_chan(in), seen, n, 0 };
		ct[c] = spawn(consumer, &ca[c]);
	}
	for (int p = 0; p < PRODUCERS; p++) {
		pa[p] = (struct producer_arg){ canal_remote_chan(out), (uint32_t)p, n };
		pt[p] = spawn(producer, &pa[p]);
	}
	for (int p = 0; p < PRODUCERS; p++)
		join(pt[p]);
	/* close midway through the receivers' work: they must still get
	 * every element sent before */
	CHECK_EQ(canal_close(canal_remote_chan(out)), 0);
	long total = 0;
	for (int c = 0; c < CONSUMERS; c++) {
		join(ct[c]);
		total += ca[c].got;
	}
	CHECK_EQ(total, (long)PRODUCERS * n);
	for (size_t i = 0; i < (size_t)PRODUCERS * (size_t)n; i++)
		CHECK_EQ(seen[i], 1);
	struct elt x;
	CHECK_EQ(canal_recv(canal_remote_chan(in), &x), -EPIPE);
	CHECK_EQ(canal_send(canal_remote_chan(out), &x), -EPIPE);
	char why[64];
	CHECK_EQ(canal_remote_error(in, why, sizeof why), 0);
	CHECK_EQ(why[0], 0);
	CHECK_EQ(canal_remote_close(out, 20000000000), 0);
	CHECK_EQ(canal_remote_close(in, 20000000000), 0);
	free(seen);
	return 0;
}

#endif
