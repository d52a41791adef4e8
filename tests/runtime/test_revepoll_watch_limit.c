/* SPDX-License-Identifier: MIT */
/*
 * test_revepoll_watch_limit - on the epoll backend, a read or write whose
 * descriptor the loop cannot watch returns -ENOMEM (task.h), not
 * epoll_ctl's -ENOSPC (an audit of the task runtime, branch h9uring).
 *
 * The canal_io_* calls return "what the system call returns"; epoll's
 * submission added errors of its own: -ENOMEM when the loop's table of
 * descriptors could not grow, and epoll_ctl's -ENOMEM and -ENOSPC (the
 * user's limit of watches, fs.epoll.max_user_watches, reached), which
 * task.h did not list. -ENOSPC from canal_io_write reads as "no space
 * left on the device", which it is not. Now a descriptor the loop cannot
 * watch is -ENOMEM, and task.h says so.
 *
 * How: in a forked child a seccomp filter makes epoll_ctl(EPOLL_CTL_ADD)
 * of one descriptor number fail with ENOSPC (the limit, without changing
 * the machine's sysctl); a task reads an empty pipe and writes a full
 * one at that number with a timeout of 1 ms: -ENOMEM on epoll,
 * -ETIMEDOUT on io_uring (which uses no epoll_ctl).
 */
#define _GNU_SOURCE
#include "check.h"
#include "seccomp_filter.h"

#include <canal/task.h>

#include <fcntl.h>
#include <stdbool.h>
#include <sys/epoll.h>

#define FD_NO 900

static int rd_fd, wr_fd;
static ssize_t rd_res, wr_res;

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static void main_task(void *arg)
{
	(void)arg;
	char c;
	rd_res = canal_io_read(rd_fd, &c, 1, 1000000, NULL);
	static char buf[4096];
	wr_res = canal_io_write(wr_fd, buf, sizeof buf, 1000000, NULL);
}

static int child(int arg)
{
	(void)arg;
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC | O_NONBLOCK))
		return 2;
	while (write(b[1], "xxxxxxxxxxxxxxxx", 16) == 16)
		; /* full */
	rd_fd = dup2(a[0], FD_NO);
	wr_fd = dup2(b[1], FD_NO + 1);
	if (rd_fd != FD_NO || wr_fd != FD_NO + 1)
		return 2;
	/* epoll_ctl(_, EPOLL_CTL_ADD, fd >= FD_NO, _): ENOSPC. */
	if (!seccomp_test_epoll_add_limit(FD_NO))
		return 77;
	struct canal_run_options o = {.loops = 1};
	if (canal_run(main_task, NULL, &o) != 0)
		return 3;
	long want = on_epoll() ? -ENOMEM : -ETIMEDOUT;
	printf("read: %zd, write: %zd (want %ld)\n", rd_res, wr_res, want);
	return rd_res == want && wr_res == want ? 0 : 1;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	if (!seccomp_test_child("test_revepoll_watch_limit", child, 0))
		return 0;
	TEST_DONE("test_revepoll_watch_limit");
}
