/* SPDX-License-Identifier: MIT */
/*
 * canal, canal-spin - two canal channels, one per direction, of elements of
 * the message size (capacity 8, the slots of the shm rings).
 *   CANAL_SPIN 0  canal:      blocking canal_send / canal_recv;
 *   CANAL_SPIN 1  canal-spin: canal_try_send / canal_try_recv in a busy
 *                 loop (the wait "tuned to spin", until canal has a knob).
 * Processes need CANAL_SHARED channels (created before fork, inherited);
 * while canal_chan_create(..., CANAL_SHARED) fails, the process mode prints
 * SKIPPED and --threads uses ordinary thread channels.
 */
#define _GNU_SOURCE
#include "common.h"

#include <canal/channel.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if CANAL_SPIN
#define CANAL_NAME "canal-spin"
#else
#define CANAL_NAME "canal"
#endif

#define CANAL_BENCH_CAPACITY 8

struct canal_pair {
	struct canal_chan *ch[2]; /* ch[0]: client -> server */
};

struct canal_ctx {
	struct canal_chan *out, *in;
	size_t size;
};

static int canal_setup(const struct ipc_opts *o, void **shared, char *why,
		       size_t whylen)
{
	struct canal_pair *p = calloc(1, sizeof(*p));
	unsigned flags = o->threads ? 0 : CANAL_SHARED;

	if (!p)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		p->ch[i] = canal_chan_create(o->size, CANAL_BENCH_CAPACITY, flags);
		if (!p->ch[i]) {
			int err = errno;
			canal_chan_destroy(p->ch[0]);
			free(p);
			if (flags & CANAL_SHARED) {
				snprintf(why, whylen,
					 "canal shared channels not available: "
					 "%s",
					 strerror(err));
				return IPC_EXIT_SKIPPED;
			}
			snprintf(why, whylen, "canal_chan_create(%zu, %d)",
				 o->size, CANAL_BENCH_CAPACITY);
			return -err;
		}
	}
	*shared = p;
	return 0;
}

static int canal_open(void *shared, const struct ipc_opts *o, int side,
		      void **ctxp)
{
	struct canal_pair *p = shared;
	struct canal_ctx *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->out = p->ch[side];
	c->in = p->ch[1 - side];
	c->size = o->size;
	*ctxp = c;
	return 0;
}

static int canal_bench_send(void *ctx, const void *buf, size_t len)
{
	const struct canal_ctx *c = ctx;

	if (len != c->size)
		return -EMSGSIZE;
#if CANAL_SPIN
	unsigned long spins = 0;
	int rc;
	while ((rc = canal_try_send(c->out, buf)) == -EAGAIN)
		bench_relax_yield(&spins);
	return rc;
#else
	return canal_send(c->out, buf);
#endif
}

static ssize_t canal_bench_recv(void *ctx, void *buf, size_t len)
{
	const struct canal_ctx *c = ctx;
	int rc;

	if (len < c->size)
		return -EMSGSIZE;
#if CANAL_SPIN
	unsigned long spins = 0;
	while ((rc = canal_try_recv(c->in, buf)) == -EAGAIN)
		bench_relax_yield(&spins);
#else
	rc = canal_recv(c->in, buf);
#endif
	return rc ? rc : (ssize_t)c->size;
}

static void canal_close_side(void *ctx)
{
	free(ctx);
}

static void canal_teardown(void *shared)
{
	struct canal_pair *p = shared;

	canal_chan_destroy(p->ch[0]);
	canal_chan_destroy(p->ch[1]);
	free(p);
}

static const struct ipc_method method = {
	.name = CANAL_NAME,
	.setup = canal_setup,
	.open = canal_open,
	.send = canal_bench_send,
	.recv = canal_bench_recv,
	.close = canal_close_side,
	.teardown = canal_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
