/* SPDX-License-Identifier: MIT */
/*
 * io.c - I/O that suspends the task: the operations, the synchronous-
 * completion shortcut, timeouts and cancellation.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/backend.h"
#include "runtime/io.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

void canal__io_complete(struct canal__io *op, int32_t res)
{
	op->result = res;
	op->done = true;
	canal__task_wake(op->task, WAKE_WOKEN);
}

static int ret(ssize_t r)
{
	return r < 0 ? -errno : (int)r;
}

int canal__io_try(struct canal__io *op)
{
	int r;
	switch (op->kind) {
	case IO_READ: {
		struct iovec v = {op->buf, op->len};
		r = ret(preadv2(op->fd, &v, 1, -1, RWF_NOWAIT));
		break;
	}
	case IO_WRITE: {
		struct iovec v = {op->buf, op->len};
		r = ret(pwritev2(op->fd, &v, 1, -1, RWF_NOWAIT));
		break;
	}
	case IO_READV:
		r = ret(preadv2(op->fd, op->iov, op->iovcnt, -1, RWF_NOWAIT));
		break;
	case IO_WRITEV:
		r = ret(pwritev2(op->fd, op->iov, op->iovcnt, -1,
				 RWF_NOWAIT));
		break;
	case IO_RECV:
		r = ret(recv(op->fd, op->buf, op->len,
			     op->flags | MSG_DONTWAIT));
		break;
	case IO_SEND:
		r = ret(send(op->fd, op->buf, op->len,
			     op->flags | MSG_DONTWAIT | MSG_NOSIGNAL));
		break;
	case IO_ACCEPT:
		r = ret(accept4(op->fd, op->addr, op->addrlenp,
				op->flags | SOCK_NONBLOCK));
		break;
	default:
		return -EAGAIN;
	}
	if (r == -EWOULDBLOCK)
		r = -EAGAIN;
	if (r == -EOPNOTSUPP && (op->kind == IO_READ || op->kind == IO_WRITE ||
				 op->kind == IO_READV ||
				 op->kind == IO_WRITEV))
		r = -EAGAIN; /* RWF_NOWAIT unsupported for this file */
	return r;
}
