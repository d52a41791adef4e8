/* SPDX-License-Identifier: MIT */
/*
 * signal - real-time signals carrying one int: sigqueue(3) (processes) or
 * pthread_sigqueue(3) (threads), received with sigwaitinfo(2). Side s
 * receives SIGRTMIN + s, blocked everywhere before the sides start so that
 * it stays queued until sigwaitinfo takes it. A message is at most
 * sizeof(int) bytes.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sig_shared {
	pid_t pid[2];
	pthread_t thread[2];
};

struct sig_ctx {
	struct sig_shared *sh;
	int side, threads;
	sigset_t mine;
};

static int sig_check(const struct ipc_opts *o, char *why, size_t whylen)
{
	if (o->size > sizeof(int)) {
		snprintf(why, whylen,
			 "a signal carries one int (%zu bytes, sigval); asked "
			 "for %zu",
			 sizeof(int), o->size);
		return IPC_EXIT_SIZE;
	}
	return 0;
}

static int sig_setup(const struct ipc_opts *o, void **shared, char *why,
		     size_t whylen)
{
	sigset_t set;

	(void)o, (void)why, (void)whylen;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigaddset(&set, SIGRTMIN + 1);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	*shared = bench_shared_alloc(sizeof(struct sig_shared));
	return *shared ? 0 : -errno;
}

static int sig_open(void *shared, const struct ipc_opts *o, int side,
		    void **ctxp)
{
	struct sig_shared *sh = shared;
	struct sig_ctx *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->sh = sh;
	c->side = side;
	c->threads = o->threads;
	sigemptyset(&c->mine);
	sigaddset(&c->mine, SIGRTMIN + side);
	/* Published to the peer by the start barrier. */
	sh->pid[side] = getpid();
	sh->thread[side] = pthread_self();
	*ctxp = c;
	return 0;
}

static int sig_send(void *ctx, const void *buf, size_t len)
{
	const struct sig_ctx *c = ctx;
	int peer = 1 - c->side, err;
	union sigval v = { .sival_int = 0 };

	if (len > sizeof(int))
		return -EMSGSIZE;
	memcpy(&v.sival_int, buf, len);
	for (;;) {
		if (c->threads)
			err = pthread_sigqueue(c->sh->thread[peer], SIGRTMIN + peer,
					       v);
		else
			err = sigqueue(c->sh->pid[peer], SIGRTMIN + peer, v) ? errno
									    : 0;
		if (err == 0)
			return 0;
		if (err != EAGAIN) /* EAGAIN: queue full (RLIMIT_SIGPENDING) */
			return -err;
		sched_yield();
	}
}

static ssize_t sig_recv(void *ctx, void *buf, size_t len)
{
	const struct sig_ctx *c = ctx;
	siginfo_t info;

	if (len > sizeof(int))
		return -EMSGSIZE;
	while (sigwaitinfo(&c->mine, &info) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (info.si_code != SI_QUEUE)
		return -EPROTO; /* not one of ours */
	memcpy(buf, &info.si_value.sival_int, len);
	return (ssize_t)len;
}

static void sig_close(void *ctx)
{
	free(ctx);
}

static void sig_teardown(void *shared)
{
	bench_shared_free(shared, sizeof(struct sig_shared));
}

static const struct ipc_method method = {
	.name = "signal",
	.check = sig_check,
	.setup = sig_setup,
	.open = sig_open,
	.send = sig_send,
	.recv = sig_recv,
	.close = sig_close,
	.teardown = sig_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
