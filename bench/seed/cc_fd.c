/* SPDX-License-Identifier: MIT */
/*
 * cc_fd.c - cat and copy's transports on kernel channels (cc.c runs them):
 *   pipe     a pipe
 *   socket   a Unix SOCK_STREAM socket pair
 * A chunk is written whole; the other side reads up to CC_CHUNK bytes at a
 * time, whatever the kernel has. Closing the write end is the end of file.
 */
#define _GNU_SOURCE /* pipe2 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int chan_fd[2]; /* [0]: read end, [1]: write end */

static int setup_pipe(int shared)
{
	(void)shared;
	if (pipe2(chan_fd, O_CLOEXEC) < 0)
		bench_die("pipe2: %s", strerror(errno));
	return 0;
}

static int setup_socket(int shared)
{
	(void)shared;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan_fd) < 0)
		bench_die("socketpair: %s", strerror(errno));
	return 0;
}

static void keep_only(int producer)
{
	close(chan_fd[producer ? 0 : 1]);
}

static int send_chunk(const struct cc_chunk *c)
{
	int r = bench_write_all(chan_fd[1], c->data, c->len);

	if (r == -EPIPE || r == -ECONNRESET)
		return -EPIPE;
	if (r)
		bench_die("write channel: %s", strerror(-r));
	return 0;
}

static void end(void)
{
	close(chan_fd[1]);
}

static int recv_chunk(struct cc_chunk *c)
{
	for (;;) {
		ssize_t n = read(chan_fd[0], c->data, sizeof(c->data));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			bench_die("read channel: %s", strerror(errno));
		c->len = (uint32_t)n;
		return n > 0;
	}
}

static void consumer_done(void)
{
	close(chan_fd[0]); /* the producer, if still writing, gets EPIPE */
}

const struct cc_transport cc_fd_transports[] = {
	{ .name = "pipe", .setup = setup_pipe, .keep_only = keep_only, .send = send_chunk,
	  .end = end, .recv = recv_chunk, .consumer_done = consumer_done },
	{ .name = "socket", .setup = setup_socket, .keep_only = keep_only, .send = send_chunk,
	  .end = end, .recv = recv_chunk, .consumer_done = consumer_done },
	{ .name = NULL },
};
