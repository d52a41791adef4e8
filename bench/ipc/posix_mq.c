/* SPDX-License-Identifier: MIT */
/* posix-mq - two POSIX message queues (mq_open), one per direction. A
 * message is at most /proc/sys/fs/mqueue/msgsize_max bytes. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSGSIZE_MAX_PATH "/proc/sys/fs/mqueue/msgsize_max"
#define MSG_MAX_PATH "/proc/sys/fs/mqueue/msg_max"

struct pmq_shared {
	char name[2][64];
	mqd_t q[2]; /* q[0]: client -> server, q[1]: server -> client */
};

struct pmq_ctx {
	mqd_t out, in;
};

static int pmq_check(const struct ipc_opts *o, char *why, size_t whylen)
{
	long max = ipc_read_proc_long(MSGSIZE_MAX_PATH);

	if (max > 0 && o->size > (size_t)max) {
		snprintf(why, whylen,
			 "a message is at most %ld bytes (%s); asked for %zu",
			 max, MSGSIZE_MAX_PATH, o->size);
		return IPC_EXIT_SIZE;
	}
	return 0;
}

static int pmq_setup(const struct ipc_opts *o, void **shared, char *why,
		     size_t whylen)
{
	struct pmq_shared *p = calloc(1, sizeof(*p));
	long msg_max = ipc_read_proc_long(MSG_MAX_PATH);
	struct mq_attr attr = {
		.mq_maxmsg = msg_max > 0 && msg_max < 10 ? msg_max : 10,
		.mq_msgsize = (long)o->size,
	};

	if (!p)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		char tag[8];
		snprintf(tag, sizeof(tag), "mq%d", i);
		p->name[i][0] = '/';
		ipc_unique_name(p->name[i] + 1, sizeof(p->name[i]) - 1, tag);
		p->q[i] = mq_open(p->name[i], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
				  0600, &attr);
		if (p->q[i] == (mqd_t)-1) {
			int err = errno;
			snprintf(why, whylen, "mq_open %s (msgsize %zu, maxmsg "
				 "%ld)", p->name[i], o->size, attr.mq_maxmsg);
			if (i == 1) {
				mq_close(p->q[0]);
				mq_unlink(p->name[0]);
			}
			free(p);
			return -err;
		}
	}
	*shared = p;
	return 0;
}

static int pmq_open(void *shared, const struct ipc_opts *o, int side,
		    void **ctx)
{
	struct pmq_shared *p = shared;
	struct pmq_ctx *c = malloc(sizeof(*c));

	(void)o;
	if (!c)
		return -ENOMEM;
	c->out = p->q[side];
	c->in = p->q[1 - side];
	*ctx = c;
	return 0;
}

static int pmq_send(void *ctx, const void *buf, size_t len)
{
	const struct pmq_ctx *c = ctx;

	while (mq_send(c->out, buf, len, 0)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static ssize_t pmq_recv(void *ctx, void *buf, size_t len)
{
	const struct pmq_ctx *c = ctx;
	ssize_t n;

	while ((n = mq_receive(c->in, buf, len, NULL)) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return n;
}

static void pmq_close(void *ctx)
{
	free(ctx);
}

static void pmq_teardown(void *shared)
{
	struct pmq_shared *p = shared;

	for (int i = 0; i < 2; i++) {
		mq_close(p->q[i]);
		mq_unlink(p->name[i]);
	}
	free(p);
}

static const struct ipc_method method = {
	.name = "posix-mq",
	.check = pmq_check,
	.setup = pmq_setup,
	.open = pmq_open,
	.send = pmq_send,
	.recv = pmq_recv,
	.close = pmq_close,
	.teardown = pmq_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
