/* SPDX-License-Identifier: MIT */
/*
 * test_revrt2_rstream_enomem - a receive stream whose socket the epoll
 * loop cannot watch still gives the bytes that came, and the end of
 * input (hostile review of the task runtime, branch rtrev).
 *
 * task.h: on epoll "an operation that must wait on a descriptor the loop
 * cannot watch returns -ENOMEM, nothing done"; an input operation whose
 * previous try on the same fd would have blocked skips its try (the
 * adaptive shortcut) and "the outcome is the same either way"; a stream's
 * receive there is one canal_io_recv, "the same results". But the epoll
 * backend's submission answered -ENOMEM without looking, so once a try
 * had missed, every later receive skipped its try and said -ENOMEM,
 * bytes or end of input waiting in the socket (but for one call in 8,
 * the shortcut's probe): to the stream's caller, whom task.h told that
 * -ENOMEM means bytes were lost, a live connection looked dead. Failed
 * before the fix (epoll):
 *   first: -12 (want -12), second: -12 (want 2), third: -12 (want 0)
 * Now an operation on a descriptor that cannot be watched is made once
 * without blocking (backend_epoll.c unwatchable()): -ENOMEM only when it
 * would wait; task.h says what such an -ENOMEM of a stream means.
 *
 * How (as test_revepoll_watch_limit): in a forked child a seccomp filter
 * makes epoll_ctl(EPOLL_CTL_ADD) of descriptor numbers >= FD_NO fail with
 * ENOSPC; the receiving end of a TCP loopback pair is moved to FD_NO.
 * A receive with nothing there, 1 ms timeout: -ENOMEM on epoll (it must
 * wait, and cannot), -ETIMEDOUT on io_uring (no epoll_ctl). Then the
 * peer writes "ab": the next receive returns those 2 bytes on both
 * backends, and after the peer's shutdown the next one 0. No timing in
 * the verdict (the 1 ms timeout only bounds io_uring's first receive);
 * bounded by alarm().
 */
#define _GNU_SOURCE
#include "check.h"
#include "fds.h"
#include "seccomp_filter.h"

#include <canal/task.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define FD_NO 900

static int peer_fd, recv_fd;
static ssize_t first, second, third;
static char got[2];

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static void main_task(void *arg)
{
	(void)arg;
	struct canal_io_rstream *s;
	CHECK_EQ(canal_io_rstream_open(recv_fd, &s), 0);
	char buf[16];
	first = canal_io_rstream_recv(s, buf, sizeof buf, 1000000, NULL);
	CHECK_EQ(write(peer_fd, "ab", 2), 2);
	second = canal_io_rstream_recv(s, buf, sizeof buf, -1, NULL);
	if (second == 2)
		memcpy(got, buf, 2);
	CHECK_EQ(shutdown(peer_fd, SHUT_WR), 0);
	/* (epoll: the watch is still refused; the try before the wait
	 * sees the end of input.) */
	third = canal_io_rstream_recv(s, buf, sizeof buf, -1, NULL);
	CHECK_EQ(canal_io_rstream_close(s), 0);
}

static int child(int arg)
{
	(void)arg;
	struct sockaddr_in a;
	int l = test_loopback_listener(1, &a);
	peer_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (peer_fd < 0 || connect(peer_fd, (struct sockaddr *)&a, sizeof a))
		return 2;
	int r = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (r < 0)
		return 2;
	close(l);
	recv_fd = dup3(r, FD_NO, O_CLOEXEC);
	if (recv_fd != FD_NO)
		return 2;
	close(r);
	/* epoll_ctl(_, EPOLL_CTL_ADD, fd >= FD_NO, _): ENOSPC. */
	if (!seccomp_test_epoll_add_limit(FD_NO))
		return 77;
	struct canal_run_options o = {.loops = 1};
	if (canal_run(main_task, NULL, &o) != 0)
		return 3;
	long want = on_epoll() ? -ENOMEM : -ETIMEDOUT;
	printf("first: %zd (want %ld), second: %zd (want 2), third: %zd "
	       "(want 0)\n",
	       first, want, second, third);
	return first == want && second == 2 && memcmp(got, "ab", 2) == 0 &&
			       third == 0
		       ? 0
		       : 1;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	if (!seccomp_test_child("test_revrt2_rstream_enomem", child, 0))
		return 0;
	TEST_DONE("test_revrt2_rstream_enomem");
}
