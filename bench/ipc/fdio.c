/* SPDX-License-Identifier: MIT */
/* fdio.c - see fdio.h. */
#define _GNU_SOURCE
#include "fdio.h"

#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct ipc_fds *ipc_fds_new(int rfd, int wfd, int owned)
{
	struct ipc_fds *f = malloc(sizeof(*f));

	if (f)
		*f = (struct ipc_fds){ .rfd = rfd, .wfd = wfd, .owned = owned };
	return f;
}

int ipc_fd_send_stream(void *ctx, const void *buf, size_t len)
{
	return bench_write_all(((struct ipc_fds *)ctx)->wfd, buf, len);
}

ssize_t ipc_fd_recv_stream(void *ctx, void *buf, size_t len)
{
	return bench_read_full(((struct ipc_fds *)ctx)->rfd, buf, len);
}

int ipc_fd_send_msg(void *ctx, const void *buf, size_t len)
{
	const struct ipc_fds *f = ctx;

	for (;;) {
		ssize_t n = send(f->wfd, buf, len, 0);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EMSGSIZE; /* a message socket never cuts */
		if (errno != EINTR)
			return -errno;
	}
}

ssize_t ipc_fd_recv_msg(void *ctx, void *buf, size_t len)
{
	const struct ipc_fds *f = ctx;

	for (;;) {
		ssize_t n = recv(f->rfd, buf, len, MSG_TRUNC);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

void ipc_fds_close(void *ctx)
{
	struct ipc_fds *f = ctx;

	if (!f)
		return;
	if (f->owned) {
		close(f->rfd);
		if (f->wfd != f->rfd)
			close(f->wfd);
	}
	free(f);
}
