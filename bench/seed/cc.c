/* SPDX-License-Identifier: MIT */
/*
 * cc.c - the seed's cat and copy programs, for every transport
 * (transport.h):
 *   cat-<transport>[-proc] <in>          a reading side -> a printing side
 *   copy-<transport>[-proc] <in> <out>   a reading side -> a writing side
 * The reading side reads CC_CHUNK bytes at a time and sends what it got as
 * one chunk; the other side writes each chunk out. End of file on the
 * channel ends the program. Threads by default; -proc: the reading side is
 * the parent, the writing side a forked child.
 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SEED_PROGRAM
#error "SEED_PROGRAM (cat-<transport>[-proc] or copy-...) must be defined"
#endif

static const struct cc_transport *t;
static int in_fd, out_fd;

/* Reading side: file -> channel. */
static void produce(void)
{
	struct cc_chunk c;

	for (;;) {
		ssize_t n = read(in_fd, c.data, sizeof(c.data));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			bench_die("read input: %s", strerror(errno));
		if (n == 0)
			break;
		c.len = (uint32_t)n;
		if (t->send(&c) == -EPIPE)
			break; /* the writing side gave up (it said why) */
	}
	t->end();
}

/* Writing side: channel -> output. Returns 0, or 1 on failure. */
static int consume(void)
{
	struct cc_chunk c;
	int failed = 0;

	while (t->recv(&c)) {
		int r = bench_write_all(out_fd, c.data, c.len);
		if (r) {
			fprintf(stderr, "write output: %s\n", strerror(-r));
			failed = 1;
			break;
		}
	}
	t->consumer_done();
	return failed;
}

static void *consumer(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)consume();
}

int main(int argc, char **argv)
{
	char name[64];
	int proc, copy;

	copy = strncmp(SEED_PROGRAM, "copy-", 5) == 0;
	seed_program_name(SEED_PROGRAM, copy ? "copy" : "cat", name, sizeof(name), &proc);
	t = cc_transport_find(name);
	if (!t)
		bench_die("no cat/copy transport '%s'", name);
	if (argc != (copy ? 3 : 2))
		bench_die(copy ? "usage: %s <input> <output>" : "usage: %s <input>", argv[0]);
	signal(SIGPIPE, SIG_IGN);
	int r = t->setup(proc);
	if (r)
		return r;
	in_fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (in_fd < 0)
		bench_die("%s: %s", argv[1], strerror(errno));
	out_fd = STDOUT_FILENO;
	if (copy) {
		out_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out_fd < 0)
			bench_die("%s: %s", argv[2], strerror(errno));
	}

	int failed;
	if (proc) {
		fflush(stdout);
		if (seed_fork() == 0) {
			if (t->keep_only)
				t->keep_only(0);
			close(in_fd);
			int f = consume();
			if (copy && !f && close(out_fd) < 0)
				f = 1;
			_exit(f);
		}
		if (t->keep_only)
			t->keep_only(1);
		if (copy)
			close(out_fd);
		produce();
		failed = seed_wait_children(1) != 0;
	} else {
		void *ret;
		pthread_t *th = seed_spawn(1, consumer, NULL, 0);
		produce();
		int err = pthread_join(th[0], &ret);
		if (err)
			bench_die("pthread_join: %s", strerror(err));
		free(th);
		failed = (int)(intptr_t)ret;
		if (copy && !failed && close(out_fd) < 0)
			bench_die("%s: %s", argv[2], strerror(errno));
	}
	if (t->teardown)
		t->teardown();
	return failed;
}
