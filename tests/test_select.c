/* test_select.c - canal_select: argument errors, polling, timeouts,
 * fairness (random choice among ready cases), biased mode, close during a
 * select, synchronous channels on both sides, and a select-only stress
 * with exactly-once accounting. */
#include "check.h"

#include <canal/channel.h>

#include <stdint.h>
#include <unistd.h>

static void test_errors(void)
{
	struct canal_chan *a = canal_chan_create(8, 1, 0);
	uint64_t v = 0;
	struct canal_case c[2] = {
		{ .ch = a, .op = CANAL_OP_RECV, .elt = &v },
		{ .ch = NULL, .op = CANAL_OP_RECV, .elt = &v },
	};
	CHECK_EQ(canal_select(NULL, 1, 0, 0), -EINVAL);
	CHECK_EQ(canal_select(c, 1, 0, 0x10), -EINVAL);
	CHECK_EQ(canal_select(c, CANAL_SELECT_MAX + 1, 0, 0), -EINVAL);
	c[0].op = 7;
	CHECK_EQ(canal_select(c, 1, 0, 0), -EINVAL);
	c[0].op = CANAL_OP_RECV;
	c[0].elt = NULL;
	CHECK_EQ(canal_select(c, 1, 0, 0), -EINVAL);
	c[0].elt = &v;
	/* only nil channels */
	CHECK_EQ(canal_select(c + 1, 1, -1, 0), -ENOENT);
	CHECK_EQ(canal_select(c + 1, 1, 0, 0), -EAGAIN);
	CHECK_EQ(canal_select(c + 1, 1, 1000000, 0), -ETIMEDOUT);
	CHECK_EQ(canal_select(NULL, 0, 0, 0), -EAGAIN);
	/* poll and timeout with nothing ready */
	CHECK_EQ(canal_select(c, 2, 0, 0), -EAGAIN);
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_select(c, 2, 5000000, 0), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 5000000);
	/* ready */
	v = 5;
	CHECK_EQ(canal_send(a, &v), 0);
	v = 0;
	CHECK_EQ(canal_select(c, 2, 0, 0), 0);
	CHECK_EQ(c[0].result, 0);
	CHECK_EQ(v, 5);
	/* send case */
	c[0].op = CANAL_OP_SEND;
	CHECK_EQ(canal_select(c, 2, -1, 0), 0);
	CHECK_EQ(canal_chan_len(a), 1);
	CHECK_EQ(canal_select(c, 2, 0, 0), -EAGAIN); /* full */
	/* closed: send case completes with -EPIPE */
	CHECK_EQ(canal_close(a), 0);
	CHECK_EQ(canal_select(c, 2, -1, 0), 0);
	CHECK_EQ(c[0].result, -EPIPE);
	/* recv case drains, then -EPIPE */
	c[0].op = CANAL_OP_RECV;
	CHECK_EQ(canal_select(c, 2, -1, 0), 0);
	CHECK_EQ(c[0].result, 0);
	CHECK_EQ(canal_select(c, 2, -1, 0), 0);
	CHECK_EQ(c[0].result, -EPIPE);
	canal_chan_destroy(a);
}

static void test_fairness(void)
{
	struct canal_chan *a = canal_chan_create(0, 1, 0);
	struct canal_chan *b = canal_chan_create(0, 1, 0);
	struct canal_case c[2] = {
		{ .ch = a, .op = CANAL_OP_RECV },
		{ .ch = b, .op = CANAL_OP_RECV },
	};
	int count[2] = { 0, 0 };
	enum { N = 100000 };
	CHECK(a && b);
	for (int i = 0; i < N; i++) {
		/* both always ready */
		canal_try_send(a, NULL);
		canal_try_send(b, NULL);
		int r = canal_select(c, 2, -1, 0);
		CHECK(r == 0 || r == 1);
		CHECK_EQ(c[r].result, 0);
		count[r]++;
	}
	printf("fairness: %d / %d\n", count[0], count[1]);
	CHECK(count[0] >= N * 45 / 100 && count[0] <= N * 55 / 100);
	/* biased: always the first ready case */
	for (int i = 0; i < 1000; i++) {
		canal_try_send(a, NULL);
		canal_try_send(b, NULL);
		CHECK_EQ(canal_select(c, 2, -1, CANAL_SELECT_BIASED), 0);
	}
	canal_chan_destroy(a);
	canal_chan_destroy(b);
}

struct closer_arg {
	struct canal_chan *ch;
	useconds_t delay;
};

static void *close_later(void *p)
{
	struct closer_arg *a = p;
	usleep(a->delay);
	CHECK_EQ(canal_close(a->ch), 0);
	return NULL;
}

static void test_close_during_select(size_t cap)
{
	struct canal_chan *a = canal_chan_create(8, cap, 0);
	struct canal_chan *b = canal_chan_create(8, cap, 0);
	uint64_t v;
	struct canal_case c[2] = {
		{ .ch = a, .op = CANAL_OP_RECV, .elt = &v },
		{ .ch = b, .op = CANAL_OP_RECV, .elt = &v },
	};
	struct closer_arg arg = { b, 20000 };
	pthread_t t = spawn(close_later, &arg);
	CHECK_EQ(canal_select(c, 2, -1, 0), 1);
	CHECK_EQ(c[1].result, -EPIPE);
	join(t);
	canal_chan_destroy(b);

	/* a blocked send case is completed by close too */
	b = canal_chan_create(8, cap, 0);
	for (size_t i = 0; i < cap; i++)
		CHECK_EQ(canal_send(b, &v), 0);
	c[1].ch = b;
	c[1].op = CANAL_OP_SEND;
	arg.ch = b;
	t = spawn(close_later, &arg);
	CHECK_EQ(canal_select(c, 2, -1, 0), 1);
	CHECK_EQ(c[1].result, -EPIPE);
	join(t);
	canal_chan_destroy(a);
	canal_chan_destroy(b);
}

/* A sender selecting over 2 synchronous channels meets receivers that
 * select over the same 2 (select on both sides, as Go's select_both). */
struct both_arg {
	struct canal_chan *ch[2];
	int id;
	uint32_t n;
	uint8_t *seen;
	_Atomic uint64_t *total;
};

static void *both_sender(void *p)
{
	struct both_arg *a = p;
	for (uint32_t i = 0; i < a->n; i++) {
		uint64_t v = ((uint64_t)a->id << 32) | i;
		struct canal_case c[2] = {
			{ .ch = a->ch[0], .op = CANAL_OP_SEND, .elt = &v },
			{ .ch = a->ch[1], .op = CANAL_OP_SEND, .elt = &v },
		};
		int r = canal_select(c, 2, -1, 0);
		CHECK(r == 0 || r == 1);
		CHECK_EQ(c[r].result, 0);
	}
	return NULL;
}

static void *both_receiver(void *p)
{
	struct both_arg *a = p;
	for (;;) {
		uint64_t v0, v1;
		struct canal_case c[2] = {
			{ .ch = a->ch[0], .op = CANAL_OP_RECV, .elt = &v0 },
			{ .ch = a->ch[1], .op = CANAL_OP_RECV, .elt = &v1 },
		};
		int r = canal_select(c, 2, -1, 0);
		CHECK(r == 0 || r == 1);
		if (c[r].result == -EPIPE)
			break;
		CHECK_EQ(c[r].result, 0);
		uint64_t v = r ? v1 : v0;
		uint32_t id = (uint32_t)(v >> 32), i = (uint32_t)v;
		CHECK(id < 4 && i < a->n);
		__atomic_fetch_add(&a->seen[id * a->n + i], 1, __ATOMIC_RELAXED);
		atomic_fetch_add(a->total, 1);
	}
	return NULL;
}

static void *drain_and_close(void *p)
{
	struct both_arg *a = p;
	while (atomic_load(a->total) < 4ull * a->n)
		usleep(200);
	/* every message received: close both, waking the receivers */
	canal_close(a->ch[0]);
	canal_close(a->ch[1]);
	return NULL;
}

static void test_select_both(size_t cap)
{
	enum { S = 4, R = 3 };
	uint32_t n = 2000 * (uint32_t)stress_scale();
#ifdef CANAL_SANITIZED
	n /= 4;
#endif
	_Atomic uint64_t total = 0;
	uint8_t *seen = calloc((size_t)S * n, 1);
	struct both_arg a[S + R + 1];
	pthread_t t[S + R + 1];
	struct canal_chan *ch0 = canal_chan_create(8, cap, 0);
	struct canal_chan *ch1 = canal_chan_create(8, cap, 0);
	CHECK(seen && ch0 && ch1);
	for (int i = 0; i < S + R + 1; i++) {
		a[i] = (struct both_arg){ { ch0, ch1 }, i, n, seen, &total };
		t[i] = spawn(i < S ? both_sender
				   : i < S + R ? both_receiver : drain_and_close,
			     &a[i]);
	}
	for (int i = 0; i < S + R + 1; i++)
		join(t[i]);
	for (size_t i = 0; i < (size_t)S * n; i++)
		CHECK_EQ(seen[i], 1);
	free(seen);
	canal_chan_destroy(ch0);
	canal_chan_destroy(ch1);
}

/* A receive case whose position a sender has claimed but not published
 * (a reservation in progress): the indices say "ready", the operation
 * cannot complete yet. The select times out cleanly, then completes with
 * the element once it is committed, from this thread or another. */
static struct canal_slot pending;
static struct canal_chan *pending_ch;

static void *commit_later(void *arg)
{
	(void)arg;
	usleep(20000);
	*(uint64_t *)pending.data = 77;
	canal_send_commit(pending_ch, &pending);
	return NULL;
}

static void test_in_flight_send(void)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 4, 0);
	CHECK(ch);
	pending_ch = ch;
	uint64_t v = 0;
	struct canal_case c = { ch, CANAL_OP_RECV, &v, 0 };

	CHECK_EQ(canal_send_reserve(ch, &pending), 0);
	CHECK_EQ(canal_select(&c, 1, 0, 0), -EAGAIN);
	CHECK_EQ(canal_select(&c, 1, 5000000, 0), -ETIMEDOUT);
	*(uint64_t *)pending.data = 42;
	canal_send_commit(ch, &pending);
	CHECK_EQ(canal_select(&c, 1, -1, 0), 0);
	CHECK_EQ(c.result, 0);
	CHECK_EQ(v, 42);

	CHECK_EQ(canal_send_reserve(ch, &pending), 0);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, commit_later, NULL), 0);
	v = 0;
	CHECK_EQ(canal_select(&c, 1, -1, 0), 0);
	CHECK_EQ(c.result, 0);
	CHECK_EQ(v, 77);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	canal_chan_destroy(ch);
}

int main(void)
{
	test_in_flight_send();
	test_errors();
	test_fairness();
	test_close_during_select(0);
	test_close_during_select(1);
	test_close_during_select(16);
	test_select_both(0);
	test_select_both(1);
	test_select_both(64);
	TEST_DONE("test_select");
}
