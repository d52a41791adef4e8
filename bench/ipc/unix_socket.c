/* SPDX-License-Identifier: MIT */
/*
 * unix-stream, unix-dgram, unix-seqpacket - a connected pair of Unix domain
 * sockets (socketpair(2): the same data path as bind/connect, without the
 * path). Built three times, with UNIX_KIND = 0 (stream), 1 (dgram) or 2
 * (seqpacket).
 */
#define _GNU_SOURCE
#include "common.h"
#include "fdio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#if UNIX_KIND == 0
#define UNIX_TYPE SOCK_STREAM
#define UNIX_NAME "unix-stream"
#elif UNIX_KIND == 1
#define UNIX_TYPE SOCK_DGRAM
#define UNIX_NAME "unix-dgram"
#elif UNIX_KIND == 2
#define UNIX_TYPE SOCK_SEQPACKET
#define UNIX_NAME "unix-seqpacket"
#else
#error "UNIX_KIND must be 0, 1 or 2"
#endif

struct unix_shared {
	int sv[2];
};

/* Message sockets carry one message whole: the socket buffers must hold
 * it. Ask for room (capped by net.core.wmem_max / rmem_max), then probe
 * with one real message so that an impossible size is reported as such. */
static int fit_message(struct unix_shared *u, size_t size, char *why,
		       size_t whylen)
{
	int want = size > (1u << 30) ? 1 << 30 : (int)(2 * size + 65536);

	for (int i = 0; i < 2; i++) {
		int cur;
		socklen_t l = sizeof(cur);
		if (getsockopt(u->sv[i], SOL_SOCKET, SO_SNDBUF, &cur, &l) == 0 &&
		    cur < want) {
			setsockopt(u->sv[i], SOL_SOCKET, SO_SNDBUF, &want,
				   sizeof(want));
			setsockopt(u->sv[i], SOL_SOCKET, SO_RCVBUF, &want,
				   sizeof(want));
		}
	}
	char *buf = calloc(1, size);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		ssize_t n = send(u->sv[i], buf, size, MSG_DONTWAIT);
		if (n != (ssize_t)size) {
			int err = n < 0 ? errno : EMSGSIZE;
			long wmax = ipc_read_proc_long(
				"/proc/sys/net/core/wmem_max");
			snprintf(why, whylen,
				 "a %zu-byte message does not fit the socket "
				 "buffer (%s; net.core.wmem_max = %ld)",
				 size, strerror(err), wmax);
			free(buf);
			return IPC_EXIT_SIZE;
		}
		n = recv(u->sv[1 - i], buf, size, MSG_TRUNC | MSG_DONTWAIT);
		if (n != (ssize_t)size) {
			snprintf(why, whylen, "probe message came back with %zd "
				 "bytes", n);
			free(buf);
			return -EIO;
		}
	}
	free(buf);
	return 0;
}

static int unix_setup(const struct ipc_opts *o, void **shared, char *why,
		      size_t whylen)
{
	struct unix_shared *u = malloc(sizeof(*u));
	int rc;

	if (!u)
		return -ENOMEM;
	if (socketpair(AF_UNIX, UNIX_TYPE | SOCK_CLOEXEC, 0, u->sv)) {
		rc = -errno;
		free(u);
		return rc;
	}
	if (UNIX_TYPE != SOCK_STREAM &&
	    (rc = fit_message(u, o->size, why, whylen))) {
		close(u->sv[0]);
		close(u->sv[1]);
		free(u);
		return rc;
	}
	*shared = u;
	return 0;
}

static int unix_open(void *shared, const struct ipc_opts *o, int side,
		     void **ctx)
{
	struct unix_shared *u = shared;

	(void)o;
	*ctx = ipc_fds_new(u->sv[side], u->sv[side], 0);
	return *ctx ? 0 : -ENOMEM;
}

static void unix_teardown(void *shared)
{
	struct unix_shared *u = shared;

	close(u->sv[0]);
	close(u->sv[1]);
	free(u);
}

static const struct ipc_method method = {
	.name = UNIX_NAME,
	.setup = unix_setup,
	.open = unix_open,
#if UNIX_KIND == 0
	.send = ipc_fd_send_stream,
	.recv = ipc_fd_recv_stream,
#else
	.send = ipc_fd_send_msg,
	.recv = ipc_fd_recv_msg,
#endif
	.close = ipc_fds_close,
	.teardown = unix_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
