/* SPDX-License-Identifier: MIT */
/* seed.c - helpers shared by the seed benchmark programs (see seed.h). */
#include "seed.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct fwd_shared *fwd_shared_new(long writers)
{
	struct fwd_shared *s = bench_shared_alloc(sizeof(*s));
	if (!s)
		bench_die("mmap: %s", strerror(errno));
	atomic_init(&s->writers_left, writers);
	atomic_init(&s->received, 0);
	atomic_init(&s->forwarded, 0);
	return s;
}

void fwd_parse_args(int argc, char **argv, long *writers, long *readers)
{
	if (argc != 3)
		bench_die("usage: %s <writers> <readers>", argv[0]);
	*writers = bench_arg_long(argv[1], "writer count", 1, 1000000);
	*readers = bench_arg_long(argv[2], "reader count", 1, 1000000);
}

long fwd_writer_quota(long i, long n)
{
	return FWD_TOTAL / n + (i < FWD_TOTAL % n ? 1 : 0);
}

void fwd_msg_fill(struct fwd_msg *m, int id, long seq)
{
	m->id = id;
	memcpy(m->content, &seq, sizeof(seq));
	memset(m->content + sizeof(seq), 'a' + id % 26,
	       sizeof(m->content) - sizeof(seq));
}

int fwd_msg_check(const struct fwd_msg *m)
{
	return m->id >= 0 && m->content[sizeof(long)] == 'a' + m->id % 26;
}

pthread_t *seed_spawn(size_t n, void *(*fn)(void *), void *args, size_t arg_size)
{
	pthread_t *t = malloc(n * sizeof(*t));
	if (!t)
		bench_die("out of memory for %zu threads", n);
	pthread_attr_t attr;
	int err = pthread_attr_init(&attr);
	if (!err)
		err = pthread_attr_setstacksize(&attr, SEED_STACK_SIZE);
	if (err)
		bench_die("pthread_attr: %s", strerror(err));
	for (size_t i = 0; i < n; i++) {
		void *arg = args ? (char *)args + i * arg_size
				 : (void *)(intptr_t)i;
		err = pthread_create(&t[i], &attr, fn, arg);
		if (err)
			bench_die("pthread_create (thread %zu of %zu): %s", i + 1,
				 n, strerror(err));
	}
	pthread_attr_destroy(&attr);
	return t;
}

void seed_join(pthread_t *threads, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = pthread_join(threads[i], NULL);
		if (err)
			bench_die("pthread_join: %s", strerror(err));
	}
	free(threads);
}

pid_t seed_fork(void)
{
	pid_t pid = fork();
	if (pid < 0)
		bench_die("fork: %s", strerror(errno));
	return pid;
}

long seed_wait_children(long n)
{
	long bad = 0;
	for (long i = 0; i < n; i++) {
		int status;
		pid_t pid;
		do
			pid = wait(&status);
		while (pid < 0 && errno == EINTR);
		if (pid < 0)
			bench_die("wait: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	return bad;
}

void seed_working(void)
{
	fputs("Working...\n", stdout);
	fflush(stdout);
}

void seed_end(void)
{
	fputs("End of program\n", stdout);
	fflush(stdout);
}
