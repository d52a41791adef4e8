/* SPDX-License-Identifier: MIT */
/*
 * cc_fd.c - the seed's cat and copy programs on kernel channels.
 *   cat <in>          a reading thread -> a printing thread (stdout)
 *   copy <in> <out>   a reading thread -> a writing thread (file)
 * Compile-time choices:
 *   CC_COPY    copy instead of cat
 *   CC_SOCKET  a Unix SOCK_STREAM socket pair instead of a pipe
 *   CC_PROC    two processes (parent reads, child writes) instead of two
 *              threads
 * The reading side reads CC_CHUNK bytes at a time and writes what it got to
 * the channel; the writing side reads up to CC_CHUNK bytes from the channel
 * and writes them out. Closing the channel's write end is the end of file.
 */
#define _GNU_SOURCE /* pipe2 */
#include "seed.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int chan_fd[2]; /* [0]: read end, [1]: write end */
static int in_fd, out_fd;

/* Reading side: file -> channel. */
static void produce(void)
{
	char buf[CC_CHUNK];
	for (;;) {
		ssize_t n = read(in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			seed_die("read input: %s", strerror(errno));
		if (n == 0)
			break;
		int r = seed_write_all(chan_fd[1], buf, (size_t)n);
		if (r == -EPIPE || r == -ECONNRESET)
			break; /* the writing side gave up (it said why) */
		if (r)
			seed_die("write channel: %s", strerror(-r));
	}
	close(chan_fd[1]);
}

/* Writing side: channel -> output. Returns 0 or 1 (failure). */
static int consume(void)
{
	char buf[CC_CHUNK];
	for (;;) {
		ssize_t n = read(chan_fd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			seed_die("read channel: %s", strerror(errno));
		if (n == 0)
			break;
		int r = seed_write_all(out_fd, buf, (size_t)n);
		if (r) {
			fprintf(stderr, "write output: %s\n", strerror(-r));
			close(chan_fd[0]); /* the reading side gets EPIPE */
			return 1;
		}
	}
	close(chan_fd[0]);
	return 0;
}

#ifndef CC_PROC
static void *consumer(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)consume();
}
#endif

int main(int argc, char **argv)
{
#ifdef CC_COPY
	if (argc != 3)
		seed_die("usage: %s <input> <output>", argv[0]);
#else
	if (argc != 2)
		seed_die("usage: %s <input>", argv[0]);
#endif
	signal(SIGPIPE, SIG_IGN);
	in_fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (in_fd < 0)
		seed_die("%s: %s", argv[1], strerror(errno));
#ifdef CC_COPY
	out_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out_fd < 0)
		seed_die("%s: %s", argv[2], strerror(errno));
#else
	out_fd = STDOUT_FILENO;
#endif
#ifdef CC_SOCKET
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan_fd) < 0)
		seed_die("socketpair: %s", strerror(errno));
#else
	if (pipe2(chan_fd, O_CLOEXEC) < 0)
		seed_die("pipe2: %s", strerror(errno));
#endif

	int failed;
#ifdef CC_PROC
	fflush(stdout);
	if (seed_fork() == 0) {
		close(chan_fd[1]);
		close(in_fd);
		int f = consume();
#ifdef CC_COPY
		if (!f && close(out_fd) < 0)
			f = 1;
#endif
		_exit(f);
	}
	close(chan_fd[0]);
#ifdef CC_COPY
	close(out_fd);
#endif
	produce();
	failed = seed_wait_children(1) != 0;
#else
	void *ret;
	pthread_t *t = seed_spawn(1, consumer, NULL, 0);
	produce();
	int err = pthread_join(t[0], &ret);
	if (err)
		seed_die("pthread_join: %s", strerror(err));
	free(t);
	failed = (int)(intptr_t)ret;
#endif
#if defined(CC_COPY) && !defined(CC_PROC)
	if (!failed && close(out_fd) < 0)
		seed_die("%s: %s", argv[2], strerror(errno));
#endif
	return failed;
}
