/* test_review_rt_submit_errors.c - hostile review: canal_io_submit's
 * documented errors (task.h: -EINVAL for the refused flags, -EOPNOTSUPP on
 * the epoll backend) are not returned for timeout_ns == 0: io_run_until
 * returns -ETIMEDOUT before the backend (which makes those checks) is
 * asked. A program that probes with timeout 0 is told "timed out" for an
 * SQE that can never run. (canal_io_submit_link checks first: its -EINVAL
 * comes before the timeout's -ETIMEDOUT.) */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <liburing.h>

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static void main_task(void *arg)
{
	(void)arg;
	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_nop(&sqe);
	int want_plain = on_epoll() ? -EOPNOTSUPP : 0;
	int r = canal_io_submit(&sqe, -1, NULL);
	fprintf(stderr, "nop, no timeout: %d (want %d)\n", r, want_plain);
	CHECK_EQ(r, want_plain);
	sqe.flags |= IOSQE_IO_LINK;
	int want = on_epoll() ? -EOPNOTSUPP : -EINVAL;
	r = canal_io_submit(&sqe, -1, NULL);
	fprintf(stderr, "linked nop, no timeout: %d (want %d)\n", r, want);
	CHECK_EQ(r, want);
	r = canal_io_submit(&sqe, 0, NULL);
	fprintf(stderr, "linked nop, timeout 0: %d (want %d)\n", r, want);
	CHECK_EQ(r, want);
	sqe.flags = 0;
	r = canal_io_submit(&sqe, 0, NULL);
	fprintf(stderr, "nop, timeout 0: %d (epoll wants %d)\n", r, -EOPNOTSUPP);
	if (on_epoll())
		CHECK_EQ(r, -EOPNOTSUPP);
}

int main(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_review_rt_submit_errors: ok\n");
	return 0;
}
