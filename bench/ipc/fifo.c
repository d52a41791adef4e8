/* SPDX-License-Identifier: MIT */
/* fifo - two named pipes (mkfifo) in a private temporary directory, opened
 * by path by each side. */
#define _GNU_SOURCE
#include "common.h"
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct fifo_shared {
	char dir[PATH_MAX / 2];
	char c2s[PATH_MAX], s2c[PATH_MAX];
};

static int fifo_setup(const struct ipc_opts *o, void **shared, char *why,
		      size_t whylen)
{
	struct fifo_shared *f = calloc(1, sizeof(*f));

	(void)o;
	if (!f)
		return -ENOMEM;
	snprintf(f->dir, sizeof(f->dir), "%s/canal-ipc-fifo-XXXXXX",
		 ipc_tmpdir());
	if (!mkdtemp(f->dir)) {
		int err = errno;
		snprintf(why, whylen, "mkdtemp %s", f->dir);
		free(f);
		return -err;
	}
	snprintf(f->c2s, sizeof(f->c2s), "%s/c2s", f->dir);
	snprintf(f->s2c, sizeof(f->s2c), "%s/s2c", f->dir);
	if (mkfifo(f->c2s, 0600) || mkfifo(f->s2c, 0600)) {
		int err = errno;
		snprintf(why, whylen, "mkfifo in %s", f->dir);
		unlink(f->c2s);
		rmdir(f->dir);
		free(f);
		return -err;
	}
	*shared = f;
	return 0;
}

static int open_path(const char *path, int flags)
{
	int fd;

	do
		fd = open(path, flags | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd;
}

static int fifo_open(void *shared, const struct ipc_opts *o, int side,
		     void **ctx)
{
	struct fifo_shared *f = shared;
	int rfd, wfd, err;

	(void)o;
	/* Same order on both sides (c2s first), so that neither open blocks
	 * for ever: an open for writing waits for the reader and vice versa. */
	if (side == 0) {
		wfd = open_path(f->c2s, O_WRONLY);
		if (wfd < 0)
			return -errno;
		rfd = open_path(f->s2c, O_RDONLY);
	} else {
		rfd = open_path(f->c2s, O_RDONLY);
		if (rfd < 0)
			return -errno;
		wfd = open_path(f->s2c, O_WRONLY);
	}
	if (rfd < 0 || wfd < 0) {
		err = errno;
		close(rfd < 0 ? wfd : rfd);
		return -err;
	}
	*ctx = ipc_fds_new(rfd, wfd, 1);
	if (!*ctx) {
		close(rfd);
		close(wfd);
		return -ENOMEM;
	}
	return 0;
}

static void fifo_teardown(void *shared)
{
	struct fifo_shared *f = shared;

	unlink(f->c2s);
	unlink(f->s2c);
	rmdir(f->dir);
	free(f);
}

static const struct ipc_method method = {
	.name = "fifo",
	.setup = fifo_setup,
	.open = fifo_open,
	.send = ipc_fd_send_stream,
	.recv = ipc_fd_recv_stream,
	.close = ipc_fds_close,
	.teardown = fifo_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
