/* SPDX-License-Identifier: MIT */
/* zeromq - a ZMQ_PAIR socket pair over the ipc:// transport (a Unix socket
 * in $TMPDIR); each side has its own context, created after the fork. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#if defined(__SANITIZE_THREAD__)
/* libzmq is not built with ThreadSanitizer: TSan cannot see its
 * synchronisation (its own atomics, its I/O thread) and reports false races
 * inside it. Ignore what happens in libzmq; races in this program's own
 * code are still reported. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "called_from_lib:libzmq.so\n"
	       "race:libzmq.so\n";
}
#endif

struct zmq_shared {
	char path[PATH_MAX];
	char endpoint[PATH_MAX + 8];
};

struct zmq_side {
	void *zctx, *sock;
};

static int zmq_setup_shared(const struct ipc_opts *o, void **shared,
			    char *why, size_t whylen)
{
	struct zmq_shared *z = calloc(1, sizeof(*z));
	char name[64];

	(void)o, (void)why, (void)whylen;
	if (!z)
		return -ENOMEM;
	ipc_unique_name(name, sizeof(name), "zmq");
	snprintf(z->path, sizeof(z->path), "%s/%s", ipc_tmpdir(), name);
	snprintf(z->endpoint, sizeof(z->endpoint), "ipc://%s", z->path);
	*shared = z;
	return 0;
}

static int zmq_open_side(void *shared, const struct ipc_opts *o, int side,
			 void **ctxp)
{
	const struct zmq_shared *z = shared;
	struct zmq_side *s = calloc(1, sizeof(*s));
	int linger = 1000, err;

	(void)o;
	if (!s)
		return -ENOMEM;
	s->zctx = zmq_ctx_new();
	if (!s->zctx) {
		err = zmq_errno();
		free(s);
		return -err;
	}
	s->sock = zmq_socket(s->zctx, ZMQ_PAIR);
	if (!s->sock)
		goto fail;
	if (zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof(linger)))
		goto fail;
	/* The server binds, the client connects (zmq retries until the
	 * endpoint exists). */
	if (side == 1 ? zmq_bind(s->sock, z->endpoint)
		      : zmq_connect(s->sock, z->endpoint))
		goto fail;
	*ctxp = s;
	return 0;
fail:
	err = zmq_errno();
	ipc_err("zeromq: %s", zmq_strerror(err));
	if (s->sock)
		zmq_close(s->sock);
	zmq_ctx_term(s->zctx);
	free(s);
	return -err;
}

static int zmq_send_msg(void *ctx, const void *buf, size_t len)
{
	const struct zmq_side *s = ctx;

	for (;;) {
		int n = zmq_send(s->sock, buf, len, 0);
		if (n >= 0)
			return (size_t)n == len ? 0 : -EMSGSIZE;
		if (zmq_errno() != EINTR)
			return -zmq_errno();
	}
}

static ssize_t zmq_recv_msg(void *ctx, void *buf, size_t len)
{
	const struct zmq_side *s = ctx;

	for (;;) {
		/* Returns the real length of the message even when longer
		 * than len (then truncated): the caller sees it. */
		int n = zmq_recv(s->sock, buf, len, 0);
		if (n >= 0)
			return n;
		if (zmq_errno() != EINTR)
			return -zmq_errno();
	}
}

static void zmq_close_side(void *ctx)
{
	struct zmq_side *s = ctx;

	zmq_close(s->sock);
	zmq_ctx_term(s->zctx);
	free(s);
}

static void zmq_teardown(void *shared)
{
	struct zmq_shared *z = shared;

	unlink(z->path);
	free(z);
}

static const struct ipc_method method = {
	.name = "zeromq",
	.setup = zmq_setup_shared,
	.open = zmq_open_side,
	.send = zmq_send_msg,
	.recv = zmq_recv_msg,
	.close = zmq_close_side,
	.teardown = zmq_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
