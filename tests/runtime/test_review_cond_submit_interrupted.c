/* test_review_cond_submit_interrupted.c - hostile review (the generic
 * primitive). task.h, canal_io_submit: "Cancellable by timeout_ns (>= 0;
 * -ETIMEDOUT) and by the cancel condvar (-ECANCELED) through
 * IORING_OP_ASYNC_CANCEL; exactly one outcome ...: if the operation
 * completed first, its res is returned"; canal_io_submit_link: res[i] is
 * "its result if it ran ..., -ECANCELED if it did not".
 * An operation that io_uring runs in its worker threads and that blocks
 * there (a SPLICE from an empty pipe: io_uring always punts it) is not
 * found waiting: IORING_OP_ASYNC_CANCEL interrupts the worker with a
 * signal, and the operation ends with the interrupted system call's
 * error: -ERESTARTSYS (-512, a kernel-internal value) here on 6.18,
 * -EINTR elsewhere. io_run_until (io.c) maps only -ECANCELED to the
 * reason that cancelled it, so canal_io_submit returns -512 for a
 * timeout or a condvar's cancel, nothing having moved; the chain's
 * res[0] is -512 too. Skipped on epoll (no SQEs). */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>
#include <liburing.h>

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static struct canal_cond *cond;
static int p[2], q[2];
static _Atomic int stage;
static int wrong;

static void prep(struct io_uring_sqe *sqe)
{
	memset(sqe, 0, sizeof(*sqe));
	io_uring_prep_splice(sqe, p[0], -1, q[1], -1, 16, 0);
}

static void canceller(void *arg)
{
	(void)arg;
	/* Cancel the waiting splice: signal until a waiter is there. */
	while (canal_cond_signal(cond) == 0)
		canal_sleep_ns(1000000);
	atomic_store(&stage, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(pipe(q), 0);
	struct io_uring_sqe sqe;

	/* 1. The timeout. */
	prep(&sqe);
	int r = canal_io_submit(&sqe, 20 * 1000000, NULL);
	fprintf(stderr, "splice from an empty pipe, timeout 20 ms: %d "
		"(want %d)\n", r, -ETIMEDOUT);
	wrong += r != -ETIMEDOUT;

	/* 2. The cancelling condvar. */
	cond = canal_cond_create();
	CHECK(cond != NULL);
	CHECK_EQ(canal_spawn(canceller, NULL), 0);
	prep(&sqe);
	r = canal_io_submit(&sqe, -1, cond);
	fprintf(stderr, "splice from an empty pipe, cancelled: %d "
		"(want %d)\n", r, -ECANCELED);
	wrong += r != -ECANCELED;
	while (!atomic_load(&stage))
		canal_sleep_ns(1000000);

	/* 3. A chain of one, timed out: res[0] is -ECANCELED (did not
	 * run). */
	prep(&sqe);
	int32_t res[1] = {7};
	r = canal_io_submit_link(&sqe, 1, res, 20 * 1000000, NULL);
	fprintf(stderr, "chain of the splice, timeout 20 ms: %d, res[0] %d "
		"(want %d, %d)\n", r, res[0], -ETIMEDOUT, -ECANCELED);
	wrong += r != -ETIMEDOUT || res[0] != -ECANCELED;

	/* Nothing moved. */
	CHECK_EQ(write(p[1], "z", 1), 1);
	char c;
	CHECK_EQ(read(p[0], &c, 1), 1);
	canal_cond_destroy(cond);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

int main(void)
{
	if (on_epoll()) {
		printf("test_review_cond_submit_interrupted: skipped (epoll)\n");
		return 0;
	}
	alarm(20);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	CHECK_EQ(wrong, 0);
	printf("test_review_cond_submit_interrupted: ok\n");
	return 0;
}
