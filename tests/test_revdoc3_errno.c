/* SPDX-License-Identifier: MIT */
/*
 * test_revdoc3_errno - channel.h: "errno is not touched, except by
 * canal_chan_create()". The functions that name, open and hand over
 * shared channels return their errors as negative values and must leave
 * errno as the caller had it, failing or not.
 *
 * Failed before its fix with: errno left at the failed system call's
 * value by canal_chan_open (ENOENT), canal_chan_create_named (EEXIST),
 * canal_chan_unlink (ENOENT), canal_chan_open_fd (EBADF),
 * canal_chan_send_handle (EBADF) and canal_chan_recv_handle (EAGAIN).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <sys/socket.h>

#define MARK 4242

static int touched;

/* Calls call with errno at MARK; says which call changed it. */
#define KEEPS(call, want)                                                    \
	do {                                                                 \
		errno = MARK;                                                \
		long r_ = (long)(call);                                      \
		int e_ = errno;                                              \
		if (r_ != (long)(want) || e_ != MARK) {                      \
			fprintf(stderr, "%s: %ld (want %ld), errno %d\n",    \
				#call, r_, (long)(want), e_);                \
			touched++;                                           \
		}                                                            \
	} while (0)

int main(void)
{
	alarm(20); /* a hang is a failure */
	struct canal_chan *s = canal_chan_create(8, 4, CANAL_SHARED);
	struct canal_chan *o = NULL, *n = NULL;
	CHECK(s);
	char name[64], none[64];
	snprintf(name, sizeof name, "canal-revdoc3-errno-%d", (int)getpid());
	snprintf(none, sizeof none, "canal-revdoc3-none-%d", (int)getpid());
	canal_chan_unlink(name);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    0, sv),
		 0);
	/* A number no descriptor has. */
	int closed = fcntl(sv[1], F_DUPFD_CLOEXEC, 900);
	CHECK(closed >= 0);
	close(closed);

	KEEPS(canal_chan_open(none, 8, 4, CANAL_SHARED, &o), -ENOENT);
	KEEPS(canal_chan_unlink(none), -ENOENT);
	KEEPS(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0, &n), 0);
	KEEPS(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0, &o),
	      -EEXIST);
	KEEPS(canal_chan_open(name, 8, 4, CANAL_SHARED, &o), 0);
	canal_chan_destroy(o);
	o = NULL;
	KEEPS(canal_chan_open_fd(closed, 8, 4, CANAL_SHARED, &o), -EBADF);
	KEEPS(canal_chan_send_handle(closed, s), -EBADF);
	KEEPS(canal_chan_recv_handle(sv[1], 8, 4, CANAL_SHARED, &o), -EAGAIN);
	KEEPS(canal_chan_send_handle(sv[0], s), 0);
	KEEPS(canal_chan_recv_handle(sv[1], 8, 4, CANAL_SHARED, &o), 0);
	canal_chan_destroy(o);
	KEEPS(canal_chan_unlink(name), 0);
	CHECK_EQ(touched, 0);

	canal_chan_destroy(n);
	close(sv[0]);
	close(sv[1]);
	canal_chan_destroy(s);
	TEST_DONE("test_revdoc3_errno");
}
