/* SPDX-License-Identifier: MIT */
/*
 * fwd_canal.c - the seed's fwd program on canal channels:
 *   <writers> writers -> 1 forwarder -> <readers> readers.
 * One source, one binary per variant (chosen at compile time):
 *   (default)     fwd-canal         thread channels, canal_send/canal_recv
 *   FWD_SYNC      fwd-canal-sync    writer -> forwarder has capacity 0
 *   FWD_BATCH     fwd-canal-batch   forwarder -> readers by batches
 *   FWD_ONECOPY   fwd-canal-onecopy reserve/commit, borrow/release
 *   FWD_SELECT    fwd-canal-select  try_* operations, canal_select as the
 *                                   passive wait (the forwarder selects
 *                                   over its input and its output)
 *   FWD_PROC      fwd-canal-proc    shared channels; writers and readers
 *                                   are processes (forwarder: the parent)
 */
#include "seed.h"

#include <canal/channel.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FWD_SYNC
#define IN_CAPACITY 0
#else
#define IN_CAPACITY FWD_CAPACITY
#endif
#ifdef FWD_PROC
#define CHAN_FLAGS CANAL_SHARED
#else
#define CHAN_FLAGS 0u
#endif

/* Batch sizes of fwd-canal-batch: the forwarder moves up to FWD_BATCH_FWD
 * messages per call, a reader takes up to FWD_BATCH_READ per call. */
#define FWD_BATCH_FWD 64
#define FWD_BATCH_READ 16
/* Messages the select forwarder may hold between its input and output. */
#define FWD_SELECT_QUEUE 64

static struct canal_chan *in_ch, *out_ch;
static struct fwd_shared *shared;
static long n_writers;

static void fail(const char *what, int err)
{
	seed_die("%s: %s", what, canal_strerror(err));
}

/* The last writer to finish closes the input: then the forwarder stops
 * even if the writers sent fewer than FWD_FORWARD_MAX messages. */
static void writer_done(void)
{
	if (atomic_fetch_sub(&shared->writers_left, 1) == 1)
		canal_close(in_ch); /* -EPIPE if the forwarder closed it first */
}

static void *writer(void *arg)
{
	int id = (int)(intptr_t)arg;
	long quota = fwd_writer_quota(id, n_writers);
	for (long k = 0; k < quota; k++) {
#if defined(FWD_ONECOPY)
		struct canal_slot slot;
		int r = canal_send_reserve(in_ch, &slot);
		if (r == -EPIPE)
			break;
		if (r)
			fail("canal_send_reserve", r);
		fwd_msg_fill(slot.data, id, k);
		canal_send_commit(in_ch, &slot);
#else
		struct fwd_msg m;
		fwd_msg_fill(&m, id, k);
#if defined(FWD_SELECT)
		int r = canal_try_send(in_ch, &m);
		if (r == -EAGAIN) {
			struct canal_case c = {in_ch, CANAL_OP_SEND, &m, 0};
			r = canal_select(&c, 1, -1, 0);
			if (r < 0)
				fail("canal_select", r);
			r = c.result;
		}
#else
		int r = canal_send(in_ch, &m);
#endif
		if (r == -EPIPE)
			break; /* the forwarder closed the channel: stop */
		if (r)
			fail("canal_send", r);
#endif
	}
	writer_done();
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	long got = 0, bad = 0;
	for (;;) {
#if defined(FWD_BATCH)
		struct fwd_msg m[FWD_BATCH_READ];
		ssize_t n = canal_recv_batch(out_ch, m, FWD_BATCH_READ);
		if (n == -EPIPE)
			break;
		if (n < 0)
			fail("canal_recv_batch", (int)n);
		for (ssize_t i = 0; i < n; i++)
			bad += !fwd_msg_check(&m[i]);
		got += n;
#elif defined(FWD_ONECOPY)
		struct canal_slot slot;
		int r = canal_recv_borrow(out_ch, &slot);
		if (r == -EPIPE)
			break;
		if (r)
			fail("canal_recv_borrow", r);
		bad += !fwd_msg_check(slot.data);
		canal_recv_release(out_ch, &slot);
		got++;
#else
		struct fwd_msg m;
#if defined(FWD_SELECT)
		int r = canal_try_recv(out_ch, &m);
		if (r == -EAGAIN) {
			struct canal_case c = {out_ch, CANAL_OP_RECV, &m, 0};
			r = canal_select(&c, 1, -1, 0);
			if (r < 0)
				fail("canal_select", r);
			r = c.result;
		}
#else
		int r = canal_recv(out_ch, &m);
#endif
		if (r == -EPIPE)
			break; /* closed and drained */
		if (r)
			fail("canal_recv", r);
		bad += !fwd_msg_check(&m);
		got++;
#endif
	}
	if (bad)
		seed_die("reader: %ld corrupted messages", bad);
	atomic_fetch_add(&shared->received, got);
	return NULL;
}

static long forward(void)
{
	long done = 0;
#if defined(FWD_BATCH)
	struct fwd_msg buf[FWD_BATCH_FWD];
	while (done < FWD_FORWARD_MAX) {
		long want = FWD_FORWARD_MAX - done;
		ssize_t n = canal_recv_batch(in_ch, buf,
					     want < FWD_BATCH_FWD ? (size_t)want
								  : FWD_BATCH_FWD);
		if (n == -EPIPE)
			break;
		if (n < 0)
			fail("canal_recv_batch", (int)n);
		ssize_t s = canal_send_batch(out_ch, buf, (size_t)n);
		if (s != n)
			fail("canal_send_batch", s < 0 ? (int)s : -EIO);
		done += n;
	}
#elif defined(FWD_ONECOPY)
	while (done < FWD_FORWARD_MAX) {
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
#elif defined(FWD_SELECT)
	/* A small ring of messages received and not yet forwarded. Each turn
	 * waits passively on the input (if there is room and more may be
	 * taken) and the output (if a message is waiting). */
	struct fwd_msg q[FWD_SELECT_QUEUE], tmp;
	size_t head = 0, len = 0;
	long taken = 0;
	int in_open = 1;
	while (done < FWD_FORWARD_MAX) {
		int can_take = in_open && len < FWD_SELECT_QUEUE &&
			       taken < FWD_FORWARD_MAX;
		struct canal_case c[2] = {
			{can_take ? in_ch : NULL, CANAL_OP_RECV, &tmp, 0},
			{len ? out_ch : NULL, CANAL_OP_SEND, &q[head], 0},
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
#else
	struct fwd_msg m;
	while (done < FWD_FORWARD_MAX) {
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
#endif
	canal_close(in_ch);
	canal_close(out_ch);
	atomic_store(&shared->forwarded, done);
	return done;
}

#ifndef FWD_PROC
static void *forwarder(void *arg)
{
	(void)arg;
	forward();
	return NULL;
}
#endif

int main(int argc, char **argv)
{
	long n_readers;
	fwd_parse_args(argc, argv, &n_writers, &n_readers);
	signal(SIGPIPE, SIG_IGN);
	in_ch = canal_chan_create(sizeof(struct fwd_msg), IN_CAPACITY, CHAN_FLAGS);
	if (!in_ch && errno == EOPNOTSUPP)
		return seed_skipped("canal shared channels (CANAL_SHARED) are not supported by this build");
	if (!in_ch)
		seed_die("canal_chan_create: %s", strerror(errno));
	out_ch = canal_chan_create(sizeof(struct fwd_msg), FWD_CAPACITY, CHAN_FLAGS);
	if (!out_ch)
		seed_die("canal_chan_create: %s", strerror(errno));
	shared = fwd_shared_new(n_writers);
	seed_working();

#ifdef FWD_PROC
	for (long i = 0; i < n_readers; i++)
		if (seed_fork() == 0) {
			reader(NULL);
			_exit(0);
		}
	for (long i = 0; i < n_writers; i++)
		if (seed_fork() == 0) {
			writer((void *)(intptr_t)i);
			_exit(0);
		}
	long done = forward();
	long bad = seed_wait_children(n_readers + n_writers);
	if (bad)
		seed_die("%ld children failed", bad);
#else
	pthread_t *r = seed_spawn((size_t)n_readers, reader, NULL, 0);
	pthread_t *f = seed_spawn(1, forwarder, NULL, 0);
	pthread_t *w = seed_spawn((size_t)n_writers, writer, NULL, 0);
	seed_join(w, (size_t)n_writers);
	seed_join(f, 1);
	seed_join(r, (size_t)n_readers);
	long done = atomic_load(&shared->forwarded);
#endif
	long got = atomic_load(&shared->received);
	if (got != done)
		seed_die("forwarded %ld messages but readers received %ld", done, got);
	canal_chan_destroy(in_ch);
	canal_chan_destroy(out_ch);
	seed_end();
	return 0;
}
