/* SPDX-License-Identifier: MIT */
/*
 * test_revdoc3_close_damaged - canal_close on a shared channel whose
 * segment a peer cut short (a named channel's file truncated): channel.h
 * says shared channels return -EBADMSG from an operation once the ring is
 * found damaged, and GUARANTEES.md that every operation on such a handle
 * does. canal_close is one: its close lands in the zeros that replaced the
 * lost mapping (sigbus.c), which no peer sees.
 *
 * Failed before its fix with: canal_close returning 0 (the first close
 * after the cut, which is the access that faulted, and the first close of
 * a handle already known damaged), then -EPIPE (the zeros' own CLOSED
 * bit), never -EBADMSG.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <unistd.h>

int main(void)
{
	alarm(20); /* a hang is a failure */
	char name[64], path[128];
	snprintf(name, sizeof name, "canal-revdoc3-close-%d", (int)getpid());
	snprintf(path, sizeof path, "/dev/shm/%s", name);
	canal_chan_unlink(name);
	struct canal_chan *a = NULL, *b = NULL;
	CHECK_EQ(canal_chan_create_named(name, sizeof(uint64_t), 16,
					 CANAL_SHARED, 0600, &a),
		 0);
	CHECK_EQ(canal_chan_open(name, sizeof(uint64_t), 16, CANAL_SHARED, &b),
		 0);
	uint64_t v = 1;
	CHECK_EQ(canal_send(a, &v), 0);
	CHECK_EQ(canal_recv(b, &v), 0);

	int fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, 0), 0); /* the hostile peer */
	close(fd);

	/* a: the close is the first access after the cut. */
	CHECK_EQ(canal_close(a), -EBADMSG);
	CHECK_EQ(canal_close(a), -EBADMSG);
	CHECK_EQ(canal_send(a, &v), -EBADMSG);
	/* b: known damaged by an operation first. */
	CHECK_EQ(canal_try_recv(b, &v), -EBADMSG);
	CHECK_EQ(canal_close(b), -EBADMSG);
	CHECK_EQ(canal_close(b), -EBADMSG);

	canal_chan_destroy(b);
	canal_chan_destroy(a);
	CHECK_EQ(canal_chan_unlink(name), 0);
	TEST_DONE("test_revdoc3_close_damaged");
}
