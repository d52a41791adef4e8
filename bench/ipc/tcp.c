/* SPDX-License-Identifier: MIT */
/* tcp - one TCP connection over loopback (127.0.0.1), TCP_NODELAY on both
 * ends; the server side accepts on a socket listened to before the sides
 * start, the client connects. */
#define _GNU_SOURCE
#include "common.h"
#include "fdio.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct tcp_shared {
	int lfd;
	struct sockaddr_in addr;
};

static int tcp_setup(const struct ipc_opts *o, void **shared, char *why,
		     size_t whylen)
{
	struct tcp_shared *t = calloc(1, sizeof(*t));
	socklen_t len = sizeof(t->addr);
	int err;

	(void)o, (void)why, (void)whylen;
	if (!t)
		return -ENOMEM;
	t->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->lfd < 0) {
		err = errno;
		free(t);
		return -err;
	}
	t->addr.sin_family = AF_INET;
	t->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	t->addr.sin_port = 0; /* any free port */
	if (bind(t->lfd, (struct sockaddr *)&t->addr, sizeof(t->addr)) ||
	    listen(t->lfd, 1) ||
	    getsockname(t->lfd, (struct sockaddr *)&t->addr, &len)) {
		err = errno;
		close(t->lfd);
		free(t);
		return -err;
	}
	*shared = t;
	return 0;
}

static int tcp_open(void *shared, const struct ipc_opts *o, int side,
		    void **ctx)
{
	struct tcp_shared *t = shared;
	int fd, one = 1, err;

	(void)o;
	if (side == 1) {
		do
			fd = accept4(t->lfd, NULL, NULL, SOCK_CLOEXEC);
		while (fd < 0 && errno == EINTR);
		if (fd < 0)
			return -errno;
	} else {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&t->addr, sizeof(t->addr))) {
			err = errno;
			close(fd);
			return -err;
		}
	}
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
		err = errno;
		close(fd);
		return -err;
	}
	*ctx = ipc_fds_new(fd, fd, 1);
	if (!*ctx) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

static void tcp_teardown(void *shared)
{
	struct tcp_shared *t = shared;

	close(t->lfd);
	free(t);
}

static const struct ipc_method method = {
	.name = "tcp",
	.setup = tcp_setup,
	.open = tcp_open,
	.send = ipc_fd_send_stream,
	.recv = ipc_fd_recv_stream,
	.close = ipc_fds_close,
	.teardown = tcp_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
