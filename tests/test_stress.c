/* test_stress.c - P producers x C consumers x capacity {0, 1, 7, 1024},
 * with and without a close in the middle, every way of sending and
 * receiving mixed (blocking, batch, single copy, select, timed, try).
 *
 * Invariants checked:
 *  - exactly once: every message whose send returned 0 (or whose batch
 *    count covered it) is received exactly once; none whose send failed is;
 *  - per-producer FIFO: each consumer sees each producer's sequence
 *    numbers in increasing order;
 *  - no hang: a watchdog aborts the test if a configuration runs too long.
 */
#include "check.h"

#include <canal/channel.h>

#include <stdint.h>
#include <unistd.h>

#define MAX_THREADS 8
#define MODES 6

struct msg {
	uint32_t producer;
	uint32_t seq;
};

struct config {
	struct canal_chan *ch;
	struct canal_chan *never; /* an always-empty channel for selects */
	int producers, consumers;
	uint32_t per_producer;
	int close_midway;
	int round;
	_Atomic uint64_t received_total;
	uint32_t sent[MAX_THREADS];	/* messages whose send succeeded */
	uint8_t *seen[MAX_THREADS];	/* seen[p][seq] counts */
	_Atomic int closer_done;
};

struct worker {
	struct config *cfg;
	int id;
};

static int send_one(struct config *c, int mode, struct msg *m)
{
	struct canal_slot s;
	int r;
	switch (mode) {
	case 0:
		return canal_send(c->ch, m);
	case 1: /* batch of one (batches of many are below) */
		r = (int)canal_send_batch(c->ch, m, 1);
		return r == 1 ? 0 : r;
	case 2:
		r = canal_send_reserve(c->ch, &s);
		if (r)
			return r;
		memcpy(s.data, m, sizeof(*m));
		return canal_send_commit(c->ch, &s);
	case 3: {
		struct canal_case cases[2] = {
			{ .ch = c->never, .op = CANAL_OP_RECV, .elt = &s },
			{ .ch = c->ch, .op = CANAL_OP_SEND, .elt = m },
		};
		struct msg dummy;
		cases[0].elt = &dummy;
		r = canal_select(cases, 2, -1, 0);
		CHECK_EQ(r, 1);
		return cases[1].result;
	}
	case 4:
		while ((r = canal_send_timeout(c->ch, m, 200000)) == -ETIMEDOUT)
			;
		return r;
	default:
		while ((r = canal_try_send(c->ch, m)) == -EAGAIN)
			sched_yield();
		return r;
	}
}

static void *producer(void *p)
{
	struct worker *w = p;
	struct config *c = w->cfg;
	int mode = (w->id + c->round) % MODES;
	uint32_t seq = 0;

	while (seq < c->per_producer) {
		if (mode == 1 && c->per_producer - seq >= 4 && seq % 3 == 0) {
			struct msg batch[4];
			for (int i = 0; i < 4; i++)
				batch[i] = (struct msg){ (uint32_t)w->id,
							 seq + (uint32_t)i };
			ssize_t r = canal_send_batch(c->ch, batch, 4);
			if (r < 0) {
				CHECK_EQ(r, -EPIPE);
				break;
			}
			seq += (uint32_t)r;
			if (r < 4)
				break;
			continue;
		}
		struct msg m = { (uint32_t)w->id, seq };
		int r = send_one(c, mode, &m);
		if (r) {
			CHECK_EQ(r, -EPIPE);
			CHECK(c->close_midway);
			break;
		}
		seq++;
	}
	c->sent[w->id] = seq;
	return NULL;
}

static void record(struct config *c, uint32_t *last, const struct msg *m)
{
	CHECK(m->producer < (uint32_t)c->producers);
	CHECK(m->seq < c->per_producer);
	/* per-producer FIFO for this consumer */
	CHECK(last[m->producer] == UINT32_MAX || m->seq > last[m->producer]);
	last[m->producer] = m->seq;
	/* each (producer, seq) is written by exactly one consumer, but
	 * several may share a byte's cache line: use an atomic add */
	__atomic_fetch_add(&c->seen[m->producer][m->seq], 1, __ATOMIC_RELAXED);
	atomic_fetch_add(&c->received_total, 1);
}

static void *consumer(void *p)
{
	struct worker *w = p;
	struct config *c = w->cfg;
	int mode = (w->id + c->round + 1) % MODES;
	uint32_t last[MAX_THREADS];
	struct msg m, buf[5];
	struct canal_slot s;
	int r;

	for (int i = 0; i < MAX_THREADS; i++)
		last[i] = UINT32_MAX;
	for (;;) {
		switch (mode) {
		case 0:
			r = canal_recv(c->ch, &m);
			break;
		case 1: {
			ssize_t n = canal_recv_batch(c->ch, buf, 5);
			if (n < 0) {
				r = (int)n;
				break;
			}
			CHECK(n >= 1 && n <= 5);
			for (ssize_t i = 0; i < n; i++)
				record(c, last, &buf[i]);
			continue;
		}
		case 2:
			r = canal_recv_borrow(c->ch, &s);
			if (r == 0) {
				memcpy(&m, s.data, sizeof(m));
				CHECK_EQ(canal_recv_release(c->ch, &s), 0);
			}
			break;
		case 3: {
			struct msg dummy;
			struct canal_case cases[2] = {
				{ .ch = c->ch, .op = CANAL_OP_RECV, .elt = &m },
				{ .ch = c->never, .op = CANAL_OP_RECV,
				  .elt = &dummy },
			};
			int i = canal_select(cases, 2, -1, 0);
			CHECK_EQ(i, 0);
			r = cases[0].result;
			break;
		}
		case 4:
			while ((r = canal_recv_timeout(c->ch, &m, 300000)) ==
			       -ETIMEDOUT)
				;
			break;
		default:
			while ((r = canal_try_recv(c->ch, &m)) == -EAGAIN)
				sched_yield();
			break;
		}
		if (r) {
			CHECK_EQ(r, -EPIPE);
			break;
		}
		record(c, last, &m);
	}
	return NULL;
}

static void *closer(void *p)
{
	struct config *c = p;
	uint64_t half = (uint64_t)c->per_producer * (uint64_t)c->producers / 2;
	while (atomic_load(&c->received_total) < half)
		usleep(100);
	CHECK_EQ(canal_close(c->ch), 0);
	atomic_store(&c->closer_done, 1);
	return NULL;
}

static _Atomic int watchdog_stage;

static void *watchdog(void *p)
{
	(void)p;
	int last = -1;
	for (;;) {
		sleep(60 * (unsigned)stress_scale());
		int now = atomic_load(&watchdog_stage);
		if (now == last) {
			fprintf(stderr, "watchdog: configuration %d hangs\n", now);
			abort();
		}
		last = now;
	}
	return NULL;
}

static void run(size_t cap, int producers, int consumers, int close_midway,
		uint32_t per_producer, int round)
{
	struct config c = { 0 };
	struct worker pw[MAX_THREADS], cw[MAX_THREADS];
	pthread_t pt[MAX_THREADS], ct[MAX_THREADS], closer_t = 0;

	c.ch = canal_chan_create(sizeof(struct msg), cap, 0);
	c.never = canal_chan_create(sizeof(struct msg), 1, 0);
	CHECK(c.ch && c.never);
	c.producers = producers;
	c.consumers = consumers;
	c.per_producer = per_producer;
	c.close_midway = close_midway;
	c.round = round;
	for (int i = 0; i < producers; i++) {
		c.seen[i] = calloc(per_producer, 1);
		CHECK(c.seen[i]);
	}
	for (int i = 0; i < consumers; i++) {
		cw[i] = (struct worker){ &c, i };
		ct[i] = spawn(consumer, &cw[i]);
	}
	if (close_midway)
		closer_t = spawn(closer, &c);
	for (int i = 0; i < producers; i++) {
		pw[i] = (struct worker){ &c, i };
		pt[i] = spawn(producer, &pw[i]);
	}
	for (int i = 0; i < producers; i++)
		join(pt[i]);
	if (close_midway) {
		/* producers may all finish before half is received */
		join(closer_t);
	} else {
		CHECK_EQ(canal_close(c.ch), 0);
	}
	for (int i = 0; i < consumers; i++)
		join(ct[i]);

	uint64_t total = 0;
	for (int p = 0; p < producers; p++) {
		if (!close_midway)
			CHECK_EQ(c.sent[p], per_producer);
		for (uint32_t s = 0; s < per_producer; s++) {
			int expect = s < c.sent[p] ? 1 : 0;
			if (c.seen[p][s] != expect) {
				fprintf(stderr,
					"cap %zu P%d C%d close %d round %d: "
					"producer %d seq %u seen %d times, "
					"sent %u\n",
					cap, producers, consumers, close_midway,
					round, p, s, c.seen[p][s], c.sent[p]);
				abort();
			}
		}
		total += c.sent[p];
		free(c.seen[p]);
	}
	CHECK_EQ(atomic_load(&c.received_total), total);
	canal_chan_destroy(c.ch);
	canal_chan_destroy(c.never);
}

int main(void)
{
	static const size_t caps[] = { 0, 1, 7, 1024 };
	static const int shapes[][2] = { { 1, 1 }, { 4, 4 }, { 2, 3 }, { 3, 1 } };
	uint32_t per = 3000 * (uint32_t)stress_scale();
#ifdef CANAL_SANITIZED
	per /= 3;
#endif
	pthread_t wd = spawn(watchdog, NULL);
	pthread_detach(wd);
	int stage = 0;
	for (int round = 0; round < MODES; round += 2) {
		for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
			for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]);
			     s++) {
				for (int cl = 0; cl < 2; cl++) {
					atomic_store(&watchdog_stage, ++stage);
					run(caps[k], shapes[s][0], shapes[s][1],
					    cl, per, round + (int)s);
				}
			}
		}
	}
	printf("%d configurations\n", stage);
	TEST_DONE("test_stress");
}
