/* SPDX-License-Identifier: MIT */
/*
 * cc_canal.c - the seed's cat and copy programs on a canal channel.
 *   cat <in>          a reading thread -> a printing thread (stdout)
 *   copy <in> <out>   a reading thread -> a writing thread (file)
 * CC_COPY: copy instead of cat; CC_PROC: two processes over a shared
 * channel (CANAL_SHARED; SKIPPED with exit status 77 while unsupported).
 * Elements are chunks of up to CC_CHUNK bytes; the channel holds
 * CC_CAPACITY of them (64 KiB, a Linux pipe's default buffer). Closing the
 * channel is the end of file.
 */
#include "seed.h"

#include <canal/channel.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CC_CAPACITY 16

struct chunk {
	uint32_t len;
	char data[CC_CHUNK];
};

static struct canal_chan *ch;
static int in_fd, out_fd;

/* Reading side: file -> channel. */
static void produce(void)
{
	struct chunk c;
	for (;;) {
		ssize_t n = read(in_fd, c.data, sizeof(c.data));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			seed_die("read input: %s", strerror(errno));
		if (n == 0)
			break;
		c.len = (uint32_t)n;
		int r = canal_send(ch, &c);
		if (r == -EPIPE)
			return; /* the writing side gave up (it said why) */
		if (r)
			seed_die("canal_send: %s", canal_strerror(r));
	}
	canal_close(ch);
}

/* Writing side: channel -> output. Returns 0 or 1 (failure). */
static int consume(void)
{
	struct chunk c;
	for (;;) {
		int r = canal_recv(ch, &c);
		if (r == -EPIPE)
			return 0; /* closed and drained: end of file */
		if (r)
			seed_die("canal_recv: %s", canal_strerror(r));
		r = seed_write_all(out_fd, c.data, c.len);
		if (r) {
			fprintf(stderr, "write output: %s\n", strerror(-r));
			canal_close(ch); /* the reading side gets -EPIPE */
			return 1;
		}
	}
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
#ifdef CC_PROC
	ch = canal_chan_create(sizeof(struct chunk), CC_CAPACITY, CANAL_SHARED);
#else
	ch = canal_chan_create(sizeof(struct chunk), CC_CAPACITY, 0);
#endif
	if (!ch && errno == EOPNOTSUPP)
		return seed_skipped("canal shared channels (CANAL_SHARED) are not supported by this build");
	if (!ch)
		seed_die("canal_chan_create: %s", strerror(errno));
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

	int failed;
#ifdef CC_PROC
	fflush(stdout);
	if (seed_fork() == 0) {
		close(in_fd);
		int f = consume();
#ifdef CC_COPY
		if (!f && close(out_fd) < 0)
			f = 1;
#endif
		_exit(f);
	}
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
	canal_chan_destroy(ch);
	return failed;
}
