/* test_review_rt_epoll_closed_fd.c - hostile review: on the epoll backend
 * the per-fd table (backend_epoll.c) keeps the operation of a task that
 * waits on an fd another task closes (canal_io_close goes through
 * ep_submit's IO_CLOSE, which leaves the table alone; the kernel drops the
 * fd from the epoll set by itself). The next file that gets the same
 * number inherits the stale entry: a read that must wait on it gets
 * -EBUSY, a write that must wait gets -ENOENT (EPOLL_CTL_MOD of an fd not
 * in the set), although nobody else uses the new file. io_uring has no
 * such table: both wait as they should. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <sys/socket.h>

static int old_rd, old_wr;
static _Atomic int waiter_done;

static void waiter(void *arg)
{
	(void)arg;
	char c;
	/* Waits on old_rd; its timeout ends it at 600 ms. */
	ssize_t r = canal_io_read(old_rd, &c, 1, 600000000, NULL);
	fprintf(stderr, "waiter on the closed fd: %zd\n", r);
	atomic_store(&waiter_done, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	int p[2];
	CHECK_EQ(pipe(p), 0);
	old_rd = p[0];
	old_wr = p[1];
	CHECK_EQ(canal_spawn(waiter, NULL), 0);
	canal_sleep_ns(20000000); /* one loop: the waiter waits now */
	CHECK_EQ(canal_io_close(old_rd), 0);
	/* A new socket pair takes the lowest free number: old_rd. */
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	CHECK_EQ(sv[0], old_rd);
	char c;
	/* Nothing to read: must wait, then -ETIMEDOUT. */
	ssize_t r = canal_io_read(sv[0], &c, 1, 50000000, NULL);
	fprintf(stderr, "read on the new fd %d: %zd (want -ETIMEDOUT %d)\n",
		sv[0], r, -ETIMEDOUT);
	/* Fill sv[0]'s send buffer so that a write must wait. */
	static char big[65536];
	while (send(sv[0], big, sizeof big, MSG_DONTWAIT) > 0)
		;
	ssize_t w = canal_io_write(sv[0], big, sizeof big, 50000000, NULL);
	fprintf(stderr, "write on the new fd %d: %zd (want -ETIMEDOUT %d)\n",
		sv[0], w, -ETIMEDOUT);
	while (!atomic_load(&waiter_done))
		canal_sleep_ns(10000000);
	close(sv[0]);
	close(sv[1]);
	close(old_wr);
	CHECK_EQ(r, -ETIMEDOUT);
	CHECK_EQ(w, -ETIMEDOUT);
}

int main(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_review_rt_epoll_closed_fd: ok\n");
	return 0;
}
