/* SPDX-License-Identifier: MIT */
/* pipe - two anonymous pipes, one per direction (default pipe size). */
#define _GNU_SOURCE
#include "common.h"
#include "fdio.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct pipe_shared {
	int c2s[2], s2c[2];
};

static int pipe_setup(const struct ipc_opts *o, void **shared, char *why,
		      size_t whylen)
{
	struct pipe_shared *p = malloc(sizeof(*p));

	(void)o, (void)why, (void)whylen;
	if (!p)
		return -ENOMEM;
	if (pipe(p->c2s)) {
		free(p);
		return -errno;
	}
	if (pipe(p->s2c)) {
		int err = errno;
		close(p->c2s[0]);
		close(p->c2s[1]);
		free(p);
		return -err;
	}
	*shared = p;
	return 0;
}

static int pipe_open(void *shared, const struct ipc_opts *o, int side,
		     void **ctx)
{
	struct pipe_shared *p = shared;

	(void)o;
	*ctx = side == 0 ? ipc_fds_new(p->s2c[0], p->c2s[1], 0)
			 : ipc_fds_new(p->c2s[0], p->s2c[1], 0);
	return *ctx ? 0 : -ENOMEM;
}

static void pipe_teardown(void *shared)
{
	struct pipe_shared *p = shared;

	close(p->c2s[0]);
	close(p->c2s[1]);
	close(p->s2c[0]);
	close(p->s2c[1]);
	free(p);
}

static const struct ipc_method method = {
	.name = "pipe",
	.setup = pipe_setup,
	.open = pipe_open,
	.send = ipc_fd_send_stream,
	.recv = ipc_fd_recv_stream,
	.close = ipc_fds_close,
	.teardown = pipe_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
