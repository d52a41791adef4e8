/*
 * test_review_ebadmsg_stress - ring.c's damage checks (-EBADMSG) must never
 * fire on a healthy channel, however contended: capacities 1, 2 and 3 (not
 * a power of two), thread and shared channels, 3 producers and 3
 * consumers mixing every flavour (blocking, try, timed with tiny
 * deadlines, batches, reserve/commit, reserve/abort, borrow/release).
 * Invariants: no -EBADMSG (or any unexpected error), every element exactly
 * once, per-producer FIFO as seen by each consumer. Capacity 0 rides
 * along for exactly-once.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <stdint.h>

#ifndef P
#define P 3
#endif
#ifndef C
#define C 3
#endif

static long per_producer;
static struct canal_chan *ch;
static _Atomic uint8_t *seen;
static _Atomic long received;

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)*s;
}

static void bad(const char *what, long r)
{
	fprintf(stderr, "%s -> %ld (%s)\n", what, r, canal_strerror((int)r));
	CHECK(!"unexpected error on a healthy channel");
}

static void *producer(void *arg)
{
	long id = (long)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
	long i = 0;
	while (i < per_producer) {
		uint64_t v = ((uint64_t)id << 32) | (uint64_t)i;
		long r;
		switch (rnd(&s) % 7) {
		case 0:
			r = canal_send(ch, &v);
			if (r)
				bad("send", r);
			i++;
			break;
		case 1:
			r = canal_try_send(ch, &v);
			if (r == 0)
				i++;
			else if (r != -EAGAIN)
				bad("try_send", r);
			break;
		case 2:
			r = canal_send_timeout(ch, &v, rnd(&s) % 3 * 20000);
			if (r == 0)
				i++;
			else if (r != -ETIMEDOUT)
				bad("send_timeout", r);
			break;
		case 3: {
			uint64_t b[4];
			long n = 1 + rnd(&s) % 4;
			if (n > per_producer - i)
				n = per_producer - i;
			for (long k = 0; k < n; k++)
				b[k] = ((uint64_t)id << 32) | (uint64_t)(i + k);
			r = rnd(&s) & 1 ? canal_send_batch(ch, b, (size_t)n)
					: canal_try_send_batch(ch, b, (size_t)n);
			if (r > 0)
				i += r;
			else if (r != -EAGAIN)
				bad("send_batch", r);
			break;
		}
		default: {
			struct canal_slot sl;
			r = canal_send_reserve(ch, &sl);
			if (r)
				bad("send_reserve", r);
			if (rnd(&s) % 4 == 0) {
				r = canal_send_abort(ch, &sl);
				if (r)
					bad("send_abort", r);
			} else {
				memcpy(sl.data, &v, sizeof(v));
				r = canal_send_commit(ch, &sl);
				if (r)
					bad("send_commit", r);
				i++;
			}
		}
		}
	}
	return NULL;
}

static void got(uint64_t v, long *last)
{
	uint32_t p = (uint32_t)(v >> 32), i = (uint32_t)v;
	CHECK(p < P && i < per_producer);
	CHECK((long)i > last[p]); /* FIFO per producer */
	last[p] = i;
	uint8_t old = atomic_exchange(&seen[p * per_producer + i], 1);
	CHECK_EQ(old, 0); /* exactly once */
	atomic_fetch_add(&received, 1);
}

static void *consumer(void *arg)
{
	uint64_t s = 0x2545f4914f6cdd1dull * (uint64_t)((long)arg + 7);
	long last[P];
	for (int p = 0; p < P; p++)
		last[p] = -1;
	for (;;) {
		uint64_t v;
		long r;
		switch (rnd(&s) % 6) {
		case 0:
			r = canal_recv(ch, &v);
			if (r == -EPIPE)
				return NULL;
			if (r)
				bad("recv", r);
			got(v, last);
			break;
		case 1:
			r = canal_try_recv(ch, &v);
			if (r == 0)
				got(v, last);
			else if (r == -EPIPE)
				return NULL;
			else if (r != -EAGAIN)
				bad("try_recv", r);
			break;
		case 2:
			r = canal_recv_timeout(ch, &v, rnd(&s) % 3 * 20000);
			if (r == 0)
				got(v, last);
			else if (r == -EPIPE)
				return NULL;
			else if (r != -ETIMEDOUT)
				bad("recv_timeout", r);
			break;
		case 3: {
			uint64_t b[4];
			r = rnd(&s) & 1 ? canal_recv_batch(ch, b, 4)
					: canal_try_recv_batch(ch, b, 4);
			if (r == -EPIPE)
				return NULL;
			if (r == -EAGAIN)
				break;
			if (r <= 0)
				bad("recv_batch", r);
			for (long k = 0; k < r; k++)
				got(b[k], last);
			break;
		}
		default: {
			struct canal_slot sl;
			r = rnd(&s) & 1 ? canal_recv_borrow(ch, &sl)
					: canal_try_recv_borrow(ch, &sl);
			if (r == -EPIPE)
				return NULL;
			if (r == -EAGAIN)
				break;
			if (r)
				bad("recv_borrow", r);
			memcpy(&v, sl.data, sizeof(v));
			r = canal_recv_release(ch, &sl);
			if (r)
				bad("recv_release", r);
			got(v, last);
		}
		}
	}
}

static void run(size_t cap, unsigned flags)
{
	ch = canal_chan_create(sizeof(uint64_t), cap, flags);
	CHECK(ch);
	seen = calloc((size_t)(P * per_producer), 1);
	CHECK(seen);
	atomic_store(&received, 0);
	pthread_t pt[P], ct[C];
	for (long i = 0; i < C; i++)
		ct[i] = spawn(consumer, (void *)i);
	for (long i = 0; i < P; i++)
		pt[i] = spawn(producer, (void *)i);
	for (int i = 0; i < P; i++)
		join(pt[i]);
	CHECK_EQ(canal_close(ch), 0);
	for (int i = 0; i < C; i++)
		join(ct[i]);
	CHECK_EQ(atomic_load(&received), P * per_producer);
	free((void *)seen);
	canal_chan_destroy(ch);
	fprintf(stderr, "capacity %zu %s: ok\n", cap,
		flags ? "shared" : "thread");
}

int main(void)
{
	alarm(120);
	per_producer = 5000L * stress_scale();
	static const size_t caps[] = { 0, 1, 2, 3 };
	for (unsigned k = 0; k < 4; k++) {
		run(caps[k], 0);
		run(caps[k], CANAL_SHARED);
	}
	TEST_DONE("test_review_ebadmsg_stress");
}
