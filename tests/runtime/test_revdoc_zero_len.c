/* test_revdoc_zero_len.c - task.h's I/O calls are "the system calls of
 * the same names" whose shortcut "changes the cost, never the outcome":
 * a call the system call answers at once, without waiting for anything,
 * is answered at once on both backends, with or without the shortcut,
 * in a task and outside one:
 *  - canal_io_read / canal_io_write of 0 bytes: 0 (an empty pipe, a full
 *    one);
 *  - canal_io_readv / canal_io_writev of 0 parts, or of parts all empty:
 *    0; of a negative count
 *    or more than IOV_MAX parts: -EINVAL (readv(2)'s first check).
 * Each call has a timeout of 1 s (a wrong -ETIMEDOUT is a value, not a
 * race: the right answer comes without any wait).
 *
 * Failed before its fix with: on the epoll backend, with
 * CANAL_RUN_NO_SYNC_SHORTCUT or after a try of the same kind had missed
 * on the same fd (the adaptive shortcut's skip), and outside a task with
 * a timeout, each of these waited for the readiness the call never needs
 * (an empty pipe's POLLIN, a full pipe's POLLOUT) and said -ETIMEDOUT
 * (without a timeout: waited for ever); io_uring answered at once.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "expect.h"

#include <canal/task.h>

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>

#define WAIT_NS 1000000000

static int empty[2], full[2];

static void calls(const char *ctx)
{
	char buf[8];
	struct iovec iov = {buf, sizeof buf};
	EXPECT_IN(ctx, canal_io_read(empty[0], buf, 0, WAIT_NS, NULL), 0);
	struct iovec none[2] = {{buf, 0}, {buf + 1, 0}};
	EXPECT_IN(ctx, canal_io_readv(empty[0], &iov, 0, WAIT_NS, NULL), 0);
	EXPECT_IN(ctx, canal_io_readv(empty[0], none, 2, WAIT_NS, NULL), 0);
	EXPECT_IN(ctx, canal_io_readv(empty[0], &iov, -1, WAIT_NS, NULL),
		  -EINVAL);
	EXPECT_IN(ctx,
		  canal_io_readv(empty[0], &iov, IOV_MAX + 1, WAIT_NS, NULL),
		  -EINVAL);
	EXPECT_IN(ctx, canal_io_write(full[1], buf, 0, WAIT_NS, NULL), 0);
	EXPECT_IN(ctx, canal_io_writev(full[1], &iov, 0, WAIT_NS, NULL), 0);
	EXPECT_IN(ctx, canal_io_writev(full[1], none, 2, WAIT_NS, NULL), 0);
	EXPECT_IN(ctx, canal_io_writev(full[1], &iov, -1, WAIT_NS, NULL),
		  -EINVAL);
	EXPECT_IN(ctx,
		  canal_io_writev(full[1], &iov, IOV_MAX + 1, WAIT_NS, NULL),
		  -EINVAL);
}

static void task_calls(void *arg)
{
	const char *ctx = arg;
	calls(ctx);
	/* The adaptive shortcut: a read (readv) that missed on the fd makes
	 * the next ones of its kind skip the try, 7 in 8 (the first after a
	 * miss is skipped). */
	char buf[8];
	struct iovec iov = {buf, sizeof buf};
	for (int i = 0; i < 2; i++) {
		EXPECT_IN(ctx, canal_io_read(empty[0], buf, 1, 1000, NULL),
			  -ETIMEDOUT);
		EXPECT_IN(ctx, canal_io_read(empty[0], buf, 0, WAIT_NS, NULL),
			  0);
		EXPECT_IN(ctx, canal_io_readv(empty[0], &iov, 1, 1000, NULL),
			  -ETIMEDOUT);
		EXPECT_IN(ctx, canal_io_readv(empty[0], &iov, 0, WAIT_NS, NULL),
			  0);
		EXPECT_IN(ctx,
			  canal_io_readv(empty[0], &iov, -1, WAIT_NS, NULL),
			  -EINVAL);
	}
}

int main(void)
{
	alarm(120); /* a hang is a failure */
	CHECK_EQ(pipe2(empty, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(full, O_CLOEXEC | O_NONBLOCK), 0);
	char fill[4096] = {0};
	while (write(full[1], fill, sizeof fill) > 0)
		;
	CHECK_EQ(errno, EAGAIN);
	/* Both pipes in blocking mode, as a program's usually are. */
	CHECK_EQ(fcntl(full[0], F_SETFL, 0), 0);
	CHECK_EQ(fcntl(full[1], F_SETFL, 0), 0);

	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(task_calls, "task", &o), 0);
	o.flags = CANAL_RUN_NO_SYNC_SHORTCUT;
	CHECK_EQ(canal_run(task_calls, "task, no sync shortcut", &o), 0);
	calls("outside a task");

	CHECK_EQ(expect_failures, 0);
	TEST_DONE("test_revdoc_zero_len");
}
