/* SPDX-License-Identifier: MIT */
/*
 * fwd_canal.c - fwd's transports on canal channels (fwd.c runs them):
 *   canal          canal_send / canal_recv (-proc: CANAL_SHARED channels)
 *   canal-sync     the same, writer -> forwarder has capacity 0
 *   canal-batch    the forwarder moves batches, readers take batches
 *   canal-onecopy  reserve/commit and borrow/release: one copy per hop
 *   canal-select   try_* operations with canal_select as the passive
 *                  wait; the forwarder selects over its input and output
 * Both channels hold FWD_CAPACITY messages (the seed's 256), except the
 * input of canal-sync.
 */
#include "transport.h"

#include <canal/channel.h>
#include <errno.h>
#include <string.h>

/* Batch sizes of canal-batch: the forwarder moves up to FWD_BATCH_FWD
 * messages per call, a reader takes up to FWD_BATCH_READ per call. */
#define FWD_BATCH_FWD 64
#define FWD_BATCH_READ 16
/* Messages the select forwarder may hold between its input and output. */
#define FWD_SELECT_QUEUE 64

static struct canal_chan *in_ch, *out_ch;

static void fail(const char *what, int err)
{
	bench_die("%s: %s", what, canal_strerror(err));
}

static int create(size_t in_capacity, int shared)
{
	unsigned flags = shared ? CANAL_SHARED : 0u;

	in_ch = canal_chan_create(sizeof(struct fwd_msg), in_capacity, flags);
	if (!in_ch && errno == EOPNOTSUPP)
		return bench_skipped("canal shared channels (CANAL_SHARED) are not supported by this build");
	if (!in_ch)
		bench_die("canal_chan_create: %s", strerror(errno));
	out_ch = canal_chan_create(sizeof(struct fwd_msg), FWD_CAPACITY, flags);
	if (!out_ch)
		bench_die("canal_chan_create: %s", strerror(errno));
	return 0;
}

static int setup(int shared)
{
	return create(FWD_CAPACITY, shared);
}

static int setup_sync(int shared)
{
	return create(0, shared);
}

static void writers_done(int shared)
{
	(void)shared;
	canal_close(in_ch); /* -EPIPE if the forwarder closed it first */
}

static void finish(void)
{
	canal_close(in_ch);
	canal_close(out_ch);
}

static void teardown(int shared)
{
	(void)shared;
	canal_chan_destroy(in_ch);
	canal_chan_destroy(out_ch);
}

/* ---------------------------------------------------------------- copy */

static void writer_copy(int id, long quota)
{
	struct fwd_msg m;

	for (long k = 0; k < quota; k++) {
		fwd_msg_fill(&m, id, k);
		int r = canal_send(in_ch, &m);
		if (r == -EPIPE)
			break; /* the forwarder closed the channel: stop */
		if (r)
			fail("canal_send", r);
	}
}

static long reader_copy(long *bad)
{
	struct fwd_msg m;
	long got = 0;
	int r;

	while ((r = canal_recv(out_ch, &m)) == 0) {
		*bad += !fwd_msg_check(&m);
		got++;
	}
	if (r != -EPIPE) /* -EPIPE: closed and drained */
		fail("canal_recv", r);
	return got;
}

static long forward_copy(long max)
{
	struct fwd_msg m;
	long done = 0;

	while (done < max) {
		int r = canal_recv(in_ch, &m);
		if (r == -EPIPE)
			break;
		if (r)
			fail("canal_recv", r);
		r = canal_send(out_ch, &m);
		if (r)
			fail("canal_send", r);
		done++;
	}
	finish();
	return done;
}

/* --------------------------------------------------------------- batch */

static long reader_batch(long *bad)
{
	struct fwd_msg m[FWD_BATCH_READ];
	long got = 0;
	ssize_t n;

	while ((n = canal_recv_batch(out_ch, m, FWD_BATCH_READ)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			*bad += !fwd_msg_check(&m[i]);
		got += n;
	}
	if (n != -EPIPE)
		fail("canal_recv_batch", (int)n);
	return got;
}

static long forward_batch(long max)
{
	struct fwd_msg buf[FWD_BATCH_FWD];
	long done = 0;

	while (done < max) {
		long want = max - done;
		ssize_t n = canal_recv_batch(in_ch, buf,
					     want < FWD_BATCH_FWD ? (size_t)want : FWD_BATCH_FWD);
		if (n == -EPIPE)
			break;
		if (n < 0)
			fail("canal_recv_batch", (int)n);
		ssize_t s = canal_send_batch(out_ch, buf, (size_t)n);
		if (s != n)
			fail("canal_send_batch", s < 0 ? (int)s : -EIO);
		done += n;
	}
	finish();
	return done;
}

/* ------------------------------------------------------------- onecopy */

static void writer_onecopy(int id, long quota)
{
	struct canal_slot slot;

	for (long k = 0; k < quota; k++) {
		int r = canal_send_reserve(in_ch, &slot);
		if (r == -EPIPE)
			break;
		if (r)
			fail("canal_send_reserve", r);
		fwd_msg_fill(slot.data, id, k);
		canal_send_commit(in_ch, &slot);
	}
}

static long reader_onecopy(long *bad)
{
	struct canal_slot slot;
	long got = 0;
	int r;

	while ((r = canal_recv_borrow(out_ch, &slot)) == 0) {
		*bad += !fwd_msg_check(slot.data);
		canal_recv_release(out_ch, &slot);
		got++;
	}
	if (r != -EPIPE)
		fail("canal_recv_borrow", r);
	return got;
}

static long forward_onecopy(long max)
{
	long done = 0;

	while (done < max) {
		struct canal_slot from, to;
		int r = canal_recv_borrow(in_ch, &from);
		if (r == -EPIPE)
			break;
		if (r)
			fail("canal_recv_borrow", r);
		r = canal_send_reserve(out_ch, &to);
		if (r)
			fail("canal_send_reserve", r);
		memcpy(to.data, from.data, sizeof(struct fwd_msg));
		canal_recv_release(in_ch, &from);
		canal_send_commit(out_ch, &to);
		done++;
	}
	finish();
	return done;
}

/* -------------------------------------------------------------- select */

/* One operation: try it, and when it would block wait for it passively
 * with canal_select. 0 or -EPIPE; dies on other errors. */
static int try_then_select(struct canal_chan *ch, int op, void *m)
{
	int r = op == CANAL_OP_SEND ? canal_try_send(ch, m) : canal_try_recv(ch, m);

	if (r == -EAGAIN) {
		struct canal_case c = { ch, op, m, 0 };
		r = canal_select(&c, 1, -1, 0);
		if (r < 0)
			fail("canal_select", r);
		r = c.result;
	}
	if (r && r != -EPIPE)
		fail(op == CANAL_OP_SEND ? "canal_try_send" : "canal_try_recv", r);
	return r;
}

static void writer_select(int id, long quota)
{
	struct fwd_msg m;

	for (long k = 0; k < quota; k++) {
		fwd_msg_fill(&m, id, k);
		if (try_then_select(in_ch, CANAL_OP_SEND, &m) == -EPIPE)
			break;
	}
}

static long reader_select(long *bad)
{
	struct fwd_msg m;
	long got = 0;

	while (try_then_select(out_ch, CANAL_OP_RECV, &m) == 0) {
		*bad += !fwd_msg_check(&m);
		got++;
	}
	return got;
}

/* A small ring of messages received and not yet forwarded. Each turn waits
 * passively on the input (if there is room and more may be taken) and the
 * output (if a message is waiting). */
static long forward_select(long max)
{
	struct fwd_msg q[FWD_SELECT_QUEUE], tmp;
	size_t head = 0, len = 0;
	long taken = 0, done = 0;
	int in_open = 1;

	while (done < max) {
		int can_take = in_open && len < FWD_SELECT_QUEUE && taken < max;
		struct canal_case c[2] = {
			{ can_take ? in_ch : NULL, CANAL_OP_RECV, &tmp, 0 },
			{ len ? out_ch : NULL, CANAL_OP_SEND, &q[head], 0 },
		};
		if (!c[0].ch && !c[1].ch)
			break; /* input closed and everything forwarded */
		int i = canal_select(c, 2, -1, 0);
		if (i < 0)
			fail("canal_select", i);
		if (i == 0) {
			if (c[0].result == -EPIPE) {
				in_open = 0;
				continue;
			}
			q[(head + len) % FWD_SELECT_QUEUE] = tmp;
			len++;
			taken++;
		} else {
			if (c[1].result)
				fail("select send", c[1].result);
			head = (head + 1) % FWD_SELECT_QUEUE;
			len--;
			done++;
		}
	}
	finish();
	return done;
}

#define CANAL_TRANSPORT(tname, tsetup, twriter, treader, tforward)                 \
	{ .name = tname, .setup = tsetup, .writer = twriter,                       \
	  .writers_done = writers_done, .reader = treader, .forward = tforward,    \
	  .teardown = teardown }

const struct fwd_transport fwd_canal_transports[] = {
	CANAL_TRANSPORT("canal", setup, writer_copy, reader_copy, forward_copy),
	CANAL_TRANSPORT("canal-sync", setup_sync, writer_copy, reader_copy, forward_copy),
	CANAL_TRANSPORT("canal-batch", setup, writer_copy, reader_batch, forward_batch),
	CANAL_TRANSPORT("canal-onecopy", setup, writer_onecopy, reader_onecopy, forward_onecopy),
	CANAL_TRANSPORT("canal-select", setup, writer_select, reader_select, forward_select),
	{ .name = NULL },
};
