/* test_review_rt_timeout0.c - hostile review: timeout_ns 0 on an input
 * operation whose previous try by the same task on the same fd would have
 * blocked. task.h: such an operation "skips the try, but one time in 8
 * ...; the outcome is the same either way". With timeout_ns == 0,
 * io_run_until returns -ETIMEDOUT as soon as the try is skipped (io.c),
 * so a byte already in the pipe is not read: the outcome depends on the
 * skip. A task polling an fd with timeout 0 sees its data only one call
 * in eight (the probe). */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

static void main_task(void *arg)
{
	(void)arg;
	int p[2];
	CHECK_EQ(pipe(p), 0);
	char c;
	/* Nothing there: -ETIMEDOUT, and the task now "missed" on p[0]. */
	CHECK_EQ(canal_io_read(p[0], &c, 1, 0, NULL), -ETIMEDOUT);
	int wrong = 0;
	for (int i = 0; i < 8; i++) {
		CHECK_EQ(write(p[1], "y", 1), 1);
		/* The byte is in the pipe before the call. */
		ssize_t r = canal_io_read(p[0], &c, 1, 0, NULL);
		fprintf(stderr, "round %d: canal_io_read(timeout 0) with a byte "
			"in the pipe = %zd\n", i, r);
		if (r != 1) {
			wrong++;
			/* drain it so each round starts alike */
			CHECK_EQ(read(p[0], &c, 1), 1);
		}
	}
	close(p[0]);
	close(p[1]);
	CHECK_EQ(wrong, 0);
}

int main(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_review_rt_timeout0: ok\n");
	return 0;
}
