/* SPDX-License-Identifier: MIT */
/*
 * test_revlife_uring_probe - a canal_run that finds no free descriptor
 * does not take io_uring away from the process (hostile review of the
 * runtime's lifecycle, branch rev-life, 2026-11-30).
 *
 * task.h, canal_run: -ENOSYS when "the backend asked for ... is not
 * available"; -EMFILE (and -ENOMEM, -EAGAIN) when "the loops, threads or
 * rings could not be created (nothing was run)"; canal_run "may be called
 * again after it returned"; CANAL_BACKEND_AUTO takes io_uring "when
 * io_uring_setup works (not ENOSYS/EPERM)". canal__uring_available probed
 * with a ring of its own once per process and kept the answer for good,
 * whatever the error: the first canal_run made while the process had no
 * free descriptor (RLIMIT_NOFILE reached, EMFILE) recorded "no io_uring".
 * Before the fix: that run, asked for io_uring, returned -ENOSYS instead
 * of -EMFILE; once descriptors were free again, every later canal_run
 * asked for io_uring returned -ENOSYS, and every automatic one ran on
 * epoll, where canal_io_submit returns -EOPNOTSUPP. Now only a definite
 * refusal (ENOSYS, EPERM, ...) is kept; a probe that fails for want of
 * resources is made again at the next canal_run.
 *
 * Backends: the test asks for io_uring by option, and unsets
 * CANAL_BACKEND for the automatic choice, so its _epoll run is the same
 * test. Skipped where this process cannot set up an io_uring at all.
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static int ran, submitted;

/* A NOP through the generic primitive: 0 on io_uring, -EOPNOTSUPP on
 * epoll. */
static void nop_task(void *arg)
{
	(void)arg;
	struct io_uring_sqe sqe;
	io_uring_prep_nop(&sqe);
	submitted = canal_io_submit(&sqe, -1, NULL);
	ran++;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	{
		/* io_uring here at all? (our own ring: canal's probe untouched) */
		struct io_uring ring;
		int r = io_uring_queue_init(4, &ring, 0);
		if (r < 0) {
			printf("test_revlife_uring_probe: no io_uring here "
			       "(%d): skipped\n", r);
			return 0;
		}
		io_uring_queue_exit(&ring);
	}
	CHECK_EQ(unsetenv("CANAL_BACKEND"), 0);
	struct canal_run_options uring = {.loops = 1,
					  .backend = CANAL_BACKEND_IO_URING};
	struct canal_run_options automatic = {.loops = 1};

	/* No descriptor free: the soft limit at the lowest free number. */
	struct rlimit old, rl;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
	int lowest = fcntl(0, F_DUPFD, 0);
	CHECK(lowest >= 0);
	close(lowest);
	rl = old;
	rl.rlim_cur = (rlim_t)lowest;
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
	int r = canal_run(nop_task, NULL, &uring);
	printf("io_uring asked, no descriptor free: %d\n", r);
	CHECK_EQ(r, -EMFILE);
	r = canal_run(nop_task, NULL, &automatic);
	printf("automatic, no descriptor free: %d\n", r);
	CHECK_EQ(r, -EMFILE);
	CHECK_EQ(ran, 0);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);

	/* Descriptors free again: io_uring as before. */
	r = canal_run(nop_task, NULL, &uring);
	printf("io_uring asked, descriptors free: %d\n", r);
	CHECK_EQ(r, 0);
	CHECK_EQ(ran, 1);
	CHECK_EQ(submitted, 0);
	submitted = -1;
	r = canal_run(nop_task, NULL, &automatic);
	printf("automatic, descriptors free: %d, canal_io_submit %d\n", r,
	       submitted);
	CHECK_EQ(r, 0);
	CHECK_EQ(ran, 2);
	CHECK_EQ(submitted, 0); /* io_uring, not epoll's -EOPNOTSUPP */
	TEST_DONE("test_revlife_uring_probe");
}
