/* SPDX-License-Identifier: MIT */
/*
 * test_handoff.c - a thread channel's sender parked on a full ring hands
 * its element to a receiver that finds the ring empty (channel/handoff.h).
 *
 * The sender runs with a parker that holds it in its wait until the test
 * opens a gate (or, in the close case, until its word changes), so what
 * the receiver gets cannot come from the sender's own thread running:
 *  - hand-off: capacity 1 holding e0, the sender parked with e1; two try
 *    receives get e0 and then e1 while the sender is still held (before
 *    handoff.c, the second said -EAGAIN: e1 existed only once the sender
 *    ran again); its send then returns 0 and nothing else is in the ring;
 *  - timeout: the parked sender's deadline passes; its send says
 *    -ETIMEDOUT and e1 is never received (withdrawn exactly once);
 *  - close: a sender parked with its element gets -EPIPE from close, and
 *    only e0 is received (a receive after the close never takes it);
 *  - not for shared channels, nor for reserves: their senders park as
 *    before (nothing is counted in the hand-off list).
 */
#include "check.h"
#include "../src/base/park.h"
#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

struct gate {
	bool hold;		 /* ignore wake-ups until the gate opens */
	_Atomic int parked;	 /* the sender is in its parker's wait */
	_Atomic int open;	 /* hold: let it return */
	_Atomic int expire;	 /* return -ETIMEDOUT now */
};

/* Hold: sleep until the gate opens (or the test expires the wait),
 * whatever wakes the words; else until a word differs from its key. */
static int g_wait_many(void *self, _Atomic uint32_t *const *words,
		       const uint32_t *keys, const bool *shared, unsigned n,
		       uint64_t deadline_ns)
{
	struct gate *g = self;
	(void)shared, (void)deadline_ns;
	for (unsigned i = 0; i < n; i++)
		if (atomic_load(words[i]) != keys[i])
			return 0;
	atomic_store(&g->parked, 1);
	for (;;) {
		if (atomic_load(&g->expire)) {
			atomic_store(&g->expire, 0);
			atomic_store(&g->parked, 0);
			return -ETIMEDOUT;
		}
		bool changed = false;
		for (unsigned i = 0; i < n; i++)
			changed |= atomic_load(words[i]) != keys[i];
		if (g->hold ? atomic_load(&g->open) != 0 : changed)
			break;
		sched_yield();
	}
	atomic_store(&g->parked, 0);
	return 0;
}

static int g_wait(void *self, _Atomic uint32_t *word, uint32_t key,
		  bool shared, uint64_t deadline_ns)
{
	_Atomic uint32_t *words[1] = { word };
	return g_wait_many(self, words, &key, &shared, 1, deadline_ns);
}

static void g_yield(void *self)
{
	(void)self;
	sched_yield();
}

static void g_sleep_until(void *self, uint64_t deadline_ns)
{
	(void)self, (void)deadline_ns;
	sched_yield();
}

static const struct canal__parker_ops gate_ops = {
	.wait = g_wait,
	.wait_many = g_wait_many,
	.yield = g_yield,
	.sleep_until = g_sleep_until,
};

struct sender {
	struct canal_chan *ch;
	struct gate g;
	uint64_t value;
	int64_t timeout_ns; /* < 0: a blocking send */
	bool reserve;
	_Atomic int done;
	int result;
};

static void *send_gated(void *arg)
{
	struct sender *s = arg;
	struct canal__parker p = { &gate_ops, &s->g };
	canal__parker_install(&p);
	if (s->reserve) {
		struct canal_slot slot;
		s->result = canal_send_reserve(s->ch, &slot);
		if (s->result == 0) {
			memcpy(slot.data, &s->value, sizeof(s->value));
			s->result = canal_send_commit(s->ch, &slot);
		}
	} else if (s->timeout_ns < 0) {
		s->result = canal_send(s->ch, &s->value);
	} else {
		s->result = canal_send_timeout(s->ch, &s->value,
					       s->timeout_ns);
	}
	canal__parker_install(NULL);
	atomic_store(&s->done, 1);
	return NULL;
}

static void wait_parked(struct sender *s)
{
	while (!atomic_load(&s->g.parked))
		sched_yield();
}

static struct canal_chan *full_channel(unsigned flags)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 1, flags);
	CHECK(ch != NULL);
	uint64_t e0 = 100;
	CHECK_EQ(canal_send(ch, &e0), 0);
	return ch;
}

static void test_handoff(void)
{
	struct canal_chan *ch = full_channel(0);
	struct sender s = { .ch = ch, .g = { .hold = true }, .value = 101,
			    .timeout_ns = -1 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, send_gated, &s), 0);
	wait_parked(&s);
	uint64_t v = 0;
	CHECK_EQ(canal_try_recv(ch, &v), 0);
	CHECK_EQ(v, 100);
	/* The sender is still held in its wait: e1 came from the receiver's
	 * own move. */
	CHECK_EQ(canal_try_recv(ch, &v), 0);
	CHECK_EQ(v, 101);
	CHECK_EQ(atomic_load(&s.done), 0);
	atomic_store(&s.g.open, 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(s.result, 0);
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	CHECK_EQ(atomic_load(&ch->st->handoffs), 0);
	canal_chan_destroy(ch);
}

static void test_timeout(void)
{
	struct canal_chan *ch = full_channel(0);
	struct sender s = { .ch = ch, .g = { .hold = true }, .value = 101,
			    .timeout_ns = 20 * 1000 * 1000 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, send_gated, &s), 0);
	wait_parked(&s);
	CHECK_EQ(atomic_load(&ch->st->handoffs), 1);
	struct timespec ts = { 0, 40 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	atomic_store(&s.g.expire, 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(s.result, -ETIMEDOUT);
	CHECK_EQ(atomic_load(&ch->st->handoffs), 0);
	uint64_t v = 0;
	CHECK_EQ(canal_try_recv(ch, &v), 0);
	CHECK_EQ(v, 100);
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	canal_chan_destroy(ch);
}

static void test_close(void)
{
	struct canal_chan *ch = full_channel(0);
	struct sender s = { .ch = ch, .g = { .hold = false }, .value = 101,
			    .timeout_ns = -1 };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, send_gated, &s), 0);
	wait_parked(&s);
	CHECK_EQ(atomic_load(&ch->st->handoffs), 1);
	CHECK_EQ(canal_close(ch), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(s.result, -EPIPE);
	CHECK_EQ(atomic_load(&ch->st->handoffs), 0);
	uint64_t v = 0;
	CHECK_EQ(canal_try_recv(ch, &v), 0);
	CHECK_EQ(v, 100);
	CHECK_EQ(canal_try_recv(ch, &v), -EPIPE);
	canal_chan_destroy(ch);
}

/* Senders that do not hand their element over park as before: a shared
 * channel's, and a reserve (it has no element yet). */
static void test_not_eligible(unsigned flags, bool reserve)
{
	struct canal_chan *ch = full_channel(flags);
	struct sender s = { .ch = ch, .g = { .hold = false }, .value = 101,
			    .timeout_ns = -1, .reserve = reserve };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, send_gated, &s), 0);
	wait_parked(&s);
	CHECK_EQ(atomic_load(&ch->st->handoffs), 0);
	uint64_t v = 0;
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 100);
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 101);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(s.result, 0);
	canal_chan_destroy(ch);
}

int main(void)
{
	for (int i = 0; i < 20; i++) {
		test_handoff();
		test_timeout();
		test_close();
	}
	test_not_eligible(CANAL_SHARED, false);
	test_not_eligible(0, true);
	printf("test_handoff: ok\n");
	return 0;
}
