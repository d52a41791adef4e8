/* SPDX-License-Identifier: MIT */
/*
 * test_errmap_epoll_ctl - a read, write or receive that the epoll backend
 * must wait for on an epoll descriptor returns the system call's answer
 * (task.h: "what the system call returns"), not epoll_ctl's error.
 *
 * The epoll backend watches the descriptor of an operation that would
 * block with epoll_ctl(EPOLL_CTL_ADD) in its loop's set, and returned
 * that call's error: -ELOOP for an epoll descriptor whose set holds the
 * loop's set (a cycle), -EINVAL for the loop's set itself. Neither is
 * the operation's: an epoll file has no read, write or socket side, and
 * read(2) says -EINVAL, recv(2) -ENOTSOCK, at once, as io_uring does for
 * recv and send. (Regular files, directories, /dev/null: epoll_ctl's
 * EPERM, made synchronously already; checked here as the control.)
 *
 * Reached where no try comes first: CANAL_RUN_NO_SYNC_SHORTCUT (the
 * second run); the first run, with the shortcut, is the control. The
 * loop's set is found among the process's descriptors (anon_inode
 * "[eventpoll]": the test opens none before its runs); on io_uring there
 * is none, and the epoll descriptor is one with an empty set.
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#define TMO 200000000 /* 200 ms: a wait that should not be */

static int failures;

static void expect(const char *ctx, const char *what, long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %s: %ld (%s), want %ld (%s)\n", ctx, what, got,
		strerror((int)-got), want, strerror((int)-want));
	failures++;
}

/* The loop's epoll set: the one epoll descriptor of the process (-1:
 * none, io_uring). */
static int loop_epfd(void)
{
	int found = -1;
	for (int fd = 0; fd < 1024; fd++) {
		char p[64], l[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, l, sizeof l - 1);
		if (n <= 0)
			continue;
		l[n] = '\0';
		if (strstr(l, "[eventpoll]"))
			found = fd;
	}
	return found;
}

/* An epoll file: read, write, readv, writev -EINVAL (no read or write
 * side); recv, send -ENOTSOCK. read and readv may wait for the file's
 * readiness on io_uring without the shortcut (io_uring polls a file
 * without non-blocking reads first): -ETIMEDOUT there. */
static void epoll_file(const char *ctx, int fd, bool uring_waits)
{
	char b[8] = "x";
	struct iovec v = {b, 1};
	long rd_want = uring_waits ? -ETIMEDOUT : -EINVAL;
	expect(ctx, "read", canal_io_read(fd, b, 1, TMO, NULL), rd_want);
	expect(ctx, "readv", canal_io_readv(fd, &v, 1, TMO, NULL), rd_want);
	expect(ctx, "write", canal_io_write(fd, b, 1, TMO, NULL),
	       uring_waits ? -ETIMEDOUT : -EINVAL);
	expect(ctx, "writev", canal_io_writev(fd, &v, 1, TMO, NULL),
	       uring_waits ? -ETIMEDOUT : -EINVAL);
	expect(ctx, "recv", canal_io_recv(fd, b, 1, 0, TMO, NULL), -ENOTSOCK);
	expect(ctx, "send", canal_io_send(fd, b, 1, 0, TMO, NULL), -ENOTSOCK);
}

/* Files epoll cannot watch (epoll_ctl: EPERM): the calls themselves. */
static void unwatchable(const char *ctx)
{
	char b[8] = "x", c[64];
	char name[] = "/tmp/canal-errmap.XXXXXX";
	int f = mkostemp(name, O_CLOEXEC);
	CHECK(f >= 0);
	unlink(name);
	snprintf(c, sizeof c, "%s, regular file", ctx);
	expect(c, "write", canal_io_write(f, b, 1, TMO, NULL), 1);
	expect(c, "read at its end", canal_io_read(f, b, 1, TMO, NULL), 0);
	expect(c, "recv", canal_io_recv(f, b, 1, 0, TMO, NULL), -ENOTSOCK);
	close(f);
	int d = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(d >= 0);
	snprintf(c, sizeof c, "%s, directory", ctx);
	expect(c, "read", canal_io_read(d, b, 1, TMO, NULL), -EISDIR);
	expect(c, "write", canal_io_write(d, b, 1, TMO, NULL), -EBADF);
	close(d);
	int n = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(n >= 0);
	snprintf(c, sizeof c, "%s, /dev/null", ctx);
	expect(c, "read", canal_io_read(n, b, 1, TMO, NULL), 0);
	expect(c, "write", canal_io_write(n, b, 1, TMO, NULL), 1);
	close(n);
}

static void task_calls(void *arg)
{
	bool shortcut = arg != NULL;
	const char *mode = shortcut ? "shortcut" : "no shortcut";
	char ctx[96];
	int ep = loop_epfd(); /* (>= 0: the epoll backend) */

	/* An epoll set that holds the loop's (on io_uring: empty). */
	int outer = epoll_create1(EPOLL_CLOEXEC);
	CHECK(outer >= 0);
	if (ep >= 0) {
		struct epoll_event ev = {.events = EPOLLIN};
		CHECK_EQ(epoll_ctl(outer, EPOLL_CTL_ADD, ep, &ev), 0);
	}
	snprintf(ctx, sizeof ctx, "%s, epoll set holding the loop's", mode);
	epoll_file(ctx, outer, !shortcut && ep < 0);
	close(outer);

	/* The loop's set itself (epoll only). */
	if (ep >= 0) {
		snprintf(ctx, sizeof ctx, "%s, the loop's epoll set", mode);
		epoll_file(ctx, ep, false);
	}
	unwatchable(mode);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	CHECK(loop_epfd() < 0); /* (none before the runs) */
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(task_calls, "", &o), 0);
	o.flags = CANAL_RUN_NO_SYNC_SHORTCUT;
	CHECK_EQ(canal_run(task_calls, NULL, &o), 0);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_errmap_epoll_ctl");
}
