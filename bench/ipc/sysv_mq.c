/* SPDX-License-Identifier: MIT */
/* sysv-mq - two System V message queues (msgget), one per direction. A
 * message is at most /proc/sys/kernel/msgmax bytes, a queue holds at most
 * /proc/sys/kernel/msgmnb bytes. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>

#define MSGMAX_PATH "/proc/sys/kernel/msgmax"
#define MSGMNB_PATH "/proc/sys/kernel/msgmnb"

struct smq_ctx {
	int out, in;
	size_t cap;
	struct smq_buf {
		long mtype;
		char mtext[];
	} *buf;
};

static int smq_check(const struct ipc_opts *o, char *why, size_t whylen)
{
	long max = ipc_read_proc_long(MSGMAX_PATH);
	long mnb = ipc_read_proc_long(MSGMNB_PATH);

	if (max > 0 && o->size > (size_t)max) {
		snprintf(why, whylen,
			 "a message is at most %ld bytes (%s); asked for %zu",
			 max, MSGMAX_PATH, o->size);
		return IPC_EXIT_SIZE;
	}
	if (mnb > 0 && o->size > (size_t)mnb) {
		snprintf(why, whylen,
			 "a queue holds at most %ld bytes (%s); asked for %zu",
			 mnb, MSGMNB_PATH, o->size);
		return IPC_EXIT_SIZE;
	}
	return 0;
}

static int smq_setup(const struct ipc_opts *o, void **shared, char *why,
		     size_t whylen)
{
	int *q = malloc(2 * sizeof(*q));

	(void)o;
	if (!q)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		q[i] = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
		if (q[i] < 0) {
			int err = errno;
			snprintf(why, whylen, "msgget");
			if (i == 1)
				msgctl(q[0], IPC_RMID, NULL);
			free(q);
			return -err;
		}
	}
	*shared = q;
	return 0;
}

static int smq_open(void *shared, const struct ipc_opts *o, int side,
		    void **ctx)
{
	const int *q = shared;
	struct smq_ctx *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->out = q[side];
	c->in = q[1 - side];
	c->cap = o->size;
	c->buf = malloc(sizeof(*c->buf) + o->size);
	if (!c->buf) {
		free(c);
		return -ENOMEM;
	}
	c->buf->mtype = 1;
	*ctx = c;
	return 0;
}

static int smq_send(void *ctx, const void *buf, size_t len)
{
	struct smq_ctx *c = ctx;

	if (len > c->cap)
		return -EMSGSIZE;
	c->buf->mtype = 1;
	memcpy(c->buf->mtext, buf, len);
	while (msgsnd(c->out, c->buf, len, 0)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static ssize_t smq_recv(void *ctx, void *buf, size_t len)
{
	struct smq_ctx *c = ctx;
	ssize_t n;

	if (len > c->cap)
		len = c->cap;
	/* Without MSG_NOERROR a longer message fails with E2BIG. */
	while ((n = msgrcv(c->in, c->buf, len, 0, 0)) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	memcpy(buf, c->buf->mtext, (size_t)n);
	return n;
}

static void smq_close(void *ctx)
{
	struct smq_ctx *c = ctx;

	free(c->buf);
	free(c);
}

static void smq_teardown(void *shared)
{
	int *q = shared;

	msgctl(q[0], IPC_RMID, NULL);
	msgctl(q[1], IPC_RMID, NULL);
	free(q);
}

static const struct ipc_method method = {
	.name = "sysv-mq",
	.check = smq_check,
	.setup = smq_setup,
	.open = smq_open,
	.send = smq_send,
	.recv = smq_recv,
	.close = smq_close,
	.teardown = smq_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
