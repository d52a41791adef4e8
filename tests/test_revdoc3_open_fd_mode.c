/* SPDX-License-Identifier: MIT */
/*
 * test_revdoc3_open_fd_mode - canal_chan_open_fd and canal_chan_recv_handle
 * of a channel's memory file through a descriptor that is open but cannot
 * be read (O_WRONLY, O_PATH): channel.h gives -EBADF for "fd is not open"
 * and -EACCES for a descriptor the channel cannot be used through (as a
 * read-only one), so such a descriptor is -EACCES, as a read-only one is.
 *
 * Failed before its fix with: -EBADF (the header read's pread), which
 * says the descriptor is not open.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "expect.h"

/* Hand fd over the socket pair sv and receive it as a channel. */
static int recv_as_handle(int sv[2], int fd)
{
	char byte = 'c';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	CHECK_EQ(sendmsg(sv[0], &msg, 0), 1);
	struct canal_chan *o = NULL;
	int r = canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
				       CANAL_SHARED, &o);
	CHECK(o == NULL || r == 0);
	canal_chan_destroy(o);
	return r;
}

int main(void)
{
	alarm(20); /* a hang is a failure */
	struct canal_chan *s = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(s);
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", canal_chan_fd(s));
	int wo = open(proc, O_WRONLY | O_CLOEXEC);
	int pa = open(proc, O_PATH | O_CLOEXEC);
	int ro = open(proc, O_RDONLY | O_CLOEXEC);
	CHECK(wo >= 0 && pa >= 0 && ro >= 0);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);

	struct canal_chan *o = NULL;
	EXPECT(canal_chan_open_fd(wo, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &o),
	       -EACCES);
	EXPECT(canal_chan_open_fd(pa, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &o),
	       -EACCES);
	EXPECT(canal_chan_open_fd(ro, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &o),
	       -EACCES);
	CHECK(o == NULL);
	EXPECT(recv_as_handle(sv, wo), -EACCES);
	EXPECT(recv_as_handle(sv, ro), -EACCES);
	/* (O_PATH descriptors cannot be passed with SCM_RIGHTS on every
	 * kernel: not handed over here.) */
	CHECK_EQ(expect_failures, 0);

	close(sv[0]);
	close(sv[1]);
	close(wo);
	close(pa);
	close(ro);
	canal_chan_destroy(s);
	TEST_DONE("test_revdoc3_open_fd_mode");
}
