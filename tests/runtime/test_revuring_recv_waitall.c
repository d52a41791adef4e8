/* SPDX-License-Identifier: MIT */
/*
 * test_revuring_recv_waitall - canal_io_recv with MSG_WAITALL on a stream
 * socket waits for the whole count, as recv(2) does, whatever the path
 * (hostile review of the io_uring backend and its I/O paths, branch
 * rev-uring).
 *
 * task.h: canal_io_recv is recv(2) for a task ("returns what the system
 * call returns"), and the synchronous-completion shortcut changes "the
 * cost, never the outcome". The shortcut's try is recv(MSG_DONTWAIT),
 * which MSG_WAITALL does not hold back: with 4 of 8 bytes there, the task
 * got 4, where io_uring's receive (CANAL_RUN_NO_SYNC_SHORTCUT, or a try
 * skipped) waits for the 8; on epoll the receive after readiness gave 4
 * too. A protocol reading a fixed-size header with MSG_WAITALL read half
 * of it.
 *
 * Deterministic: 4 bytes are in the socket before the call; a plain
 * thread sends the other 4 only once the first 4 were taken (FIONREAD 0):
 * a call that returns early has returned before the rest can come. Then
 * a timeout case: 4 of 8 bytes and nothing after them, timeout 100 ms:
 * the 4 bytes (recv(2) with MSG_WAITALL, cut by SO_RCVTIMEO, returns what
 * it took), never -ETIMEDOUT with the bytes lost; and the same cut by
 * the cancelling condvar instead (no timeout: the wait for the rest
 * must end on the signal; -ECANCELED with the 4 bytes left in the socket
 * is the other one outcome, where the signal came before anything
 * moved).
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int sv[2];
static ssize_t got_full, got_cut, got_cancel;
static struct canal_cond *cond;
static _Atomic int signalled;

/* Runs once the reader is parked (one loop): its receive's rest is
 * cancelled; the 4 bytes taken stand. */
static void signaller(void *arg)
{
	(void)arg;
	while (canal_cond_signal(cond) != 1)
		canal_yield();
	atomic_store(&signalled, 1);
}
static char buf[8];

static void *feeder(void *arg)
{
	(void)arg;
	for (;;) {
		int n = -1;
		CHECK_EQ(ioctl(sv[0], FIONREAD, &n), 0);
		if (n == 0)
			break;
		usleep(200);
	}
	CHECK_EQ(send(sv[1], "efgh", 4, MSG_NOSIGNAL), 4);
	return NULL;
}

static void reader(void *arg)
{
	(void)arg;
	memset(buf, 0, sizeof buf);
	CHECK_EQ(send(sv[1], "abcd", 4, 0), 4);
	pthread_t th = spawn(feeder, NULL);
	got_full = canal_io_recv(sv[0], buf, 8, MSG_WAITALL, 10000000000ll,
				 NULL);
	join(th);
	if (got_full == 8)
		CHECK(memcmp(buf, "abcdefgh", 8) == 0);
	else if (got_full == 4) /* (drain the rest for the next case) */
		CHECK_EQ(recv(sv[0], buf + 4, 4, MSG_WAITALL), 4);

	memset(buf, 0, sizeof buf);
	CHECK_EQ(send(sv[1], "ijkl", 4, 0), 4);
	got_cut = canal_io_recv(sv[0], buf, 8, MSG_WAITALL, 100000000, NULL);
	if (got_cut == 4)
		CHECK(memcmp(buf, "ijkl", 4) == 0);

	/* The condvar cuts the wait for the rest (no timeout: a rest that
	 * ignored it would wait for ever; alarm). */
	memset(buf, 0, sizeof buf);
	CHECK_EQ(send(sv[1], "mnop", 4, 0), 4);
	cond = canal_cond_create();
	CHECK(cond != NULL);
	CHECK_EQ(canal_spawn(signaller, NULL), 0);
	got_cancel = canal_io_recv(sv[0], buf, 8, MSG_WAITALL, -1, cond);
	while (!atomic_load(&signalled))
		canal_yield();
	canal_cond_destroy(cond);
	int left = -1;
	CHECK_EQ(ioctl(sv[0], FIONREAD, &left), 0);
	if (got_cancel == 4) {
		CHECK(memcmp(buf, "mnop", 4) == 0);
		CHECK_EQ(left, 0);
	} else if (got_cancel == -ECANCELED) {
		/* Cut before anything moved (epoll: the signal came before
		 * the readiness): the bytes wait in the socket. */
		CHECK_EQ(left, 4);
		got_cancel = 4; /* (one outcome, either way) */
	}
}

static void run(unsigned flags, const char *what)
{
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	got_full = got_cut = got_cancel = -1000;
	atomic_store(&signalled, 0);
	struct canal_run_options o = {.loops = 1, .flags = flags};
	CHECK_EQ(canal_run(reader, NULL, &o), 0);
	printf("%s: 4 then 4 more: %zd (want 8); 4 and a timeout: %zd "
	       "(want 4); 4 and a cancel: %zd (want 4)\n",
	       what, got_full, got_cut, got_cancel);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	run(CANAL_RUN_NO_SYNC_SHORTCUT, "no shortcut");
	CHECK_EQ(got_full, 8);
	CHECK_EQ(got_cut, 4);
	CHECK_EQ(got_cancel, 4);
	run(0, "shortcut");
	CHECK_EQ(got_full, 8);
	CHECK_EQ(got_cut, 4);
	CHECK_EQ(got_cancel, 4);
	printf("test_revuring_recv_waitall: ok\n");
	return 0;
}
