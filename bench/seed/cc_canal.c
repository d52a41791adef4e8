/* SPDX-License-Identifier: MIT */
/*
 * cc_canal.c - cat and copy's transport on a canal channel (cc.c runs it):
 * elements are whole chunks (up to CC_CHUNK bytes and their length); the
 * channel holds CC_CAPACITY of them (64 KiB, a Linux pipe's default
 * buffer). -proc: a CANAL_SHARED channel. Closing the channel is the end
 * of file.
 */
#include "transport.h"

#include <canal/channel.h>
#include <errno.h>
#include <string.h>

#define CC_CAPACITY 16

static struct canal_chan *ch;

static int setup(int shared)
{
	ch = canal_chan_create(sizeof(struct cc_chunk), CC_CAPACITY, shared ? CANAL_SHARED : 0u);
	if (!ch && errno == EOPNOTSUPP)
		return bench_skipped("canal shared channels (CANAL_SHARED) are not supported by this build");
	if (!ch)
		bench_die("canal_chan_create: %s", strerror(errno));
	return 0;
}

static int send_chunk(const struct cc_chunk *c)
{
	int r = canal_send(ch, c);

	if (r && r != -EPIPE)
		bench_die("canal_send: %s", canal_strerror(r));
	return r;
}

static void end(void)
{
	canal_close(ch); /* -EPIPE if the consumer closed it first */
}

static int recv_chunk(struct cc_chunk *c)
{
	int r = canal_recv(ch, c);

	if (r == -EPIPE)
		return 0; /* closed and drained: end of file */
	if (r)
		bench_die("canal_recv: %s", canal_strerror(r));
	return 1;
}

static void consumer_done(void)
{
	canal_close(ch); /* the producer, if still sending, gets -EPIPE */
}

static void teardown(void)
{
	canal_chan_destroy(ch);
}

const struct cc_transport cc_canal_transport = {
	.name = "canal", .setup = setup, .send = send_chunk, .end = end, .recv = recv_chunk,
	.consumer_done = consumer_done, .teardown = teardown,
};
