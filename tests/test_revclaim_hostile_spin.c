/* SPDX-License-Identifier: MIT */
/*
 * test_revclaim_hostile_spin - a peer that rewrites a shared channel's
 * indices (and slot stamps) without pause must not keep a claim loop of
 * ring.c retrying for ever. channel.h: a try operation returns at once and
 * a timed one by its deadline, whatever another process writes into a
 * shared segment; GUARANTEES.md says the same of a hostile segment.
 *
 * The peer (a thread standing in for a hostile process, writing the
 * channel's own mapping) "publishes" ever new positions: tail p + 2, stamp
 * of p + 1 FULL, head p + 1, p growing. Every state is one live parties
 * could show (two positions in flight, stamps right), so no damage check
 * fires; but each claim's CAS of head or tail loses, and a sender finds
 * its slot held at a new position at each look, so the held wait's pause
 * phase (which is what ends a try) starts afresh each time. Each call must
 * return (the alarm catches a hang, 10 s per call) with one of its
 * documented results.
 *
 * Before its fix a call kept retrying for as long as the peer ran beside
 * it on another CPU. On the 2-vCPU machine of the fix, shared with other
 * builds (load 12-16), that was up to 58 825 retries in one
 * canal_try_send and try_send calls of up to 0.13 s (a temporary counter
 * and clock around the call), but the peer was always preempted before
 * the alarm: the test passed there before the fix too. It can only fail
 * (the alarm: "canal_try_send did not return in 10 s") where the peer
 * keeps a CPU of its own while the call runs.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <string.h>

#define CAPACITY 8
#define CALLS 200
#define TIMED_NS 5000000 /* 5 ms */

static struct canal_chan *ch;
static atomic_bool stop;
static const char *volatile current_op;

/* The hostile peer: positions far from the channel's own, each published
 * and claimed past as fast as it can. */
static void *hostile(void *arg)
{
	(void)arg;
	struct chan_state *st = ch->st;
	/* Each step is one a sender and a receiver could make, in their
	 * order (a claim of tail, then the stamp, then a claim of head), so
	 * that no state seen is damage: at most two positions in flight. */
	uint64_t p = 1ull << 20;
	atomic_store_explicit(&slot_at(ch, p)->stamp, stamp_for(ch, p, STAMP_FULL),
			      memory_order_release);
	atomic_store_explicit(&st->tail, (p + 1) << 1, memory_order_seq_cst);
	atomic_store_explicit(&st->head, p, memory_order_seq_cst);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		atomic_store_explicit(&st->tail, (p + 2) << 1,
				      memory_order_seq_cst);
		atomic_store_explicit(&slot_at(ch, p + 1)->stamp,
				      stamp_for(ch, p + 1, STAMP_FULL),
				      memory_order_release);
		atomic_store_explicit(&st->head, p + 1, memory_order_seq_cst);
		p++;
	}
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
	const char *op = current_op ? current_op : "?";
	static const char tail[] = " did not return in 10 s\n";
	if (write(2, op, strlen(op)) < 0 || write(2, tail, sizeof(tail) - 1) < 0)
		_exit(2);
	abort();
}

/* r is one of the n results allowed. */
static void expect_one_of(const char *op, long r, const long *ok, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r == ok[i])
			return;
	fprintf(stderr, "%s -> %ld (%s)\n", op, r, canal_strerror((int)r));
	CHECK(!"unexpected result");
}

/* What a call may end with on a ring a peer scribbles on: done (the peer's
 * values let a claim through), would block / timed out, damage, or a slot
 * the peer's writes took back (-EOWNERDEAD). */
static const long try_ok[] = { 0, -EAGAIN, -EBADMSG, -EOWNERDEAD };
static const long timed_ok[] = { 0, -ETIMEDOUT, -EBADMSG, -EOWNERDEAD };
#define N_OK 4

static long op_try_send(void)
{
	uint64_t v = 1;
	return canal_try_send(ch, &v);
}

static long op_try_recv(void)
{
	uint64_t v;
	return canal_try_recv(ch, &v);
}

static long op_send_timeout(void)
{
	uint64_t v = 1;
	return canal_send_timeout(ch, &v, TIMED_NS);
}

static long op_recv_timeout(void)
{
	uint64_t v;
	return canal_recv_timeout(ch, &v, TIMED_NS);
}

static long op_try_send_batch(void)
{
	uint64_t v[4] = { 1, 2, 3, 4 };
	ssize_t r = canal_try_send_batch(ch, v, 4);
	return r > 0 ? 0 : (long)r;
}

static long op_try_recv_batch(void)
{
	uint64_t v[4];
	ssize_t r = canal_try_recv_batch(ch, v, 4);
	return r > 0 ? 0 : (long)r;
}

static long op_try_send_reserve(void)
{
	struct canal_slot s;
	int r = canal_try_send_reserve(ch, &s);
	if (r == 0)
		(void)canal_send_abort(ch, &s); /* the peer may have taken it */
	return r;
}

static long op_try_recv_borrow(void)
{
	struct canal_slot s;
	int r = canal_try_recv_borrow(ch, &s);
	if (r == 0)
		(void)canal_recv_release(ch, &s);
	return r;
}

static long op_select_poll(void)
{
	uint64_t in, out = 1;
	struct canal_case c[2] = { { ch, CANAL_OP_RECV, &in, 0 },
				   { ch, CANAL_OP_SEND, &out, 0 } };
	int r = canal_select(c, 2, 0, 0);
	if (r >= 0)
		return c[r].result == -EBADMSG || c[r].result == -EOWNERDEAD
			       ? c[r].result
			       : 0;
	return r;
}

static const struct {
	const char *name;
	long (*fn)(void);
	bool timed;
} ops[] = {
	{ "canal_try_send", op_try_send, false },
	{ "canal_try_recv", op_try_recv, false },
	{ "canal_send_timeout", op_send_timeout, true },
	{ "canal_recv_timeout", op_recv_timeout, true },
	{ "canal_try_send_batch", op_try_send_batch, false },
	{ "canal_try_recv_batch", op_try_recv_batch, false },
	{ "canal_try_send_reserve", op_try_send_reserve, false },
	{ "canal_try_recv_borrow", op_try_recv_borrow, false },
	{ "canal_select (timeout 0)", op_select_poll, false },
};

int main(int argc, char **argv)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);

	ch = canal_chan_create(sizeof(uint64_t), CAPACITY, CANAL_SHARED);
	CHECK(ch);
	pthread_t peer = spawn(hostile, NULL);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (argc > 1 && strcmp(argv[1], ops[i].name) != 0)
			continue;
		current_op = ops[i].name;
		for (int k = 0; k < CALLS; k++) {
			alarm(10);
			long r = ops[i].fn();
			alarm(0);
			expect_one_of(ops[i].name, r,
				      ops[i].timed ? timed_ok : try_ok, N_OK);
		}
	}
	atomic_store(&stop, true);
	join(peer);
	canal_chan_destroy(ch);
	TEST_DONE("test_revclaim_hostile_spin");
}
