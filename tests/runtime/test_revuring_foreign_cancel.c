/* SPDX-License-Identifier: MIT */
/*
 * test_revuring_foreign_cancel - canal_io_submit and its batch refuse the
 * SQEs that act on other requests of the ring or on another ring (an
 * audit of the task runtime, branch h9uring).
 *
 * canal_io_submit starts any SQE the caller prepared. An
 * IORING_OP_ASYNC_CANCEL with IORING_ASYNC_CANCEL_ANY (or _FD, or by
 * user_data), a POLL_REMOVE or TIMEOUT_REMOVE, went to the loop's ring as
 * given: it cancelled another task's read, which returned -ECANCELED
 * though no condvar of its own was signalled (and the loop's internal
 * wake-up read with it); an IORING_OP_MSG_RING posted a CQE with the
 * caller's user_data into a ring, which a loop's reaping takes for an
 * operation of its own. Now each is -EINVAL (task.h), on its own and in a
 * batch, and the other task's read is not disturbed.
 *
 * One loop: a reader task waits in canal_io_read on an empty pipe while
 * the main task submits each such SQE, then writes a byte: the read must
 * return it. On epoll every submission is -EOPNOTSUPP and the read the
 * same.
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

static int pfd[2];
static _Atomic int reading;
static ssize_t got = -1000;
static char byte;

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static void reader(void *arg)
{
	(void)arg;
	atomic_store(&reading, 1);
	got = canal_io_read(pfd[0], &byte, 1, -1, NULL);
}

static void refused(const char *what, const struct io_uring_sqe *sqe)
{
	int want = on_epoll() ? -EOPNOTSUPP : -EINVAL;
	int r = canal_io_submit(sqe, -1, NULL);
	printf("%s: %d (want %d)\n", what, r, want);
	CHECK_EQ(r, want);
	int32_t res = 12345;
	r = canal_io_submit_batch(sqe, 1, &res, -1, NULL);
	printf("%s in a batch: %d (want %d)\n", what, r, want);
	CHECK_EQ(r, want);
	CHECK_EQ(res, 12345);
	r = canal_io_submit_link(sqe, 1, &res, -1, NULL);
	CHECK_EQ(r, want);
}

static void main_task(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(reader, NULL), 0);
	/* One loop: once the reader said so and the main task runs again,
	 * the reader is parked in its read (its only way to let go). */
	while (!atomic_load(&reading))
		canal_yield();
	canal_yield();

	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_cancel64(&sqe, 0, IORING_ASYNC_CANCEL_ANY |
					       IORING_ASYNC_CANCEL_ALL);
	refused("cancel ANY|ALL", &sqe);
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_cancel_fd(&sqe, pfd[0], IORING_ASYNC_CANCEL_ALL);
	refused("cancel FD|ALL", &sqe);
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_cancel64(&sqe, 0, 0); /* the loop's wake-up read */
	refused("cancel by user_data", &sqe);
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_poll_remove(&sqe, 0);
	refused("poll remove", &sqe);
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_timeout_remove(&sqe, 0, 0);
	refused("timeout remove", &sqe);

	/* MSG_RING to a ring of the test's own (a loop's would be fed a
	 * user_data it takes for an operation). */
	struct io_uring other;
	if (io_uring_queue_init(4, &other, 0) == 0) {
		memset(&sqe, 0, sizeof sqe);
		io_uring_prep_msg_ring(&sqe, other.ring_fd, 0, 0x1234, 0);
		refused("msg ring", &sqe);
		io_uring_queue_exit(&other);
	}

	/* Still a plain SQE works. */
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_nop(&sqe);
	CHECK_EQ(canal_io_submit(&sqe, -1, NULL), on_epoll() ? -EOPNOTSUPP : 0);

	CHECK_EQ(got, -1000); /* the reader still waits */
	CHECK_EQ(write(pfd[1], "x", 1), 1);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	CHECK_EQ(pipe2(pfd, O_CLOEXEC), 0);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("reader's read: %zd (want 1)\n", got);
	CHECK_EQ(got, 1);
	CHECK_EQ(byte, 'x');
	close(pfd[0]);
	close(pfd[1]);
	TEST_DONE("test_revuring_foreign_cancel");
}
