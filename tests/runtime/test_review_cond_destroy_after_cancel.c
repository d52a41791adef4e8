/* test_review_cond_destroy_after_cancel.c - hostile review (condvars).
 * task.h: "a condvar passed to a waiting operation cancels it when
 * signalled: the operation ends with -ECANCELED and its resources are
 * released"; canal_cond_destroy frees "one nobody waits on". A task
 * reads a pipe with cancel = c; another signals c until the signal
 * cancels one waiter (returns 1), then destroys c: the only waiter has
 * been cancelled. The cancelled task, resuming, still unregisters from c
 * (io.c canal__io_park_cancellable -> cond.c canal__cond_unregister):
 * it takes the lock of freed memory, whose first word (glibc's tcache
 * link) is never 0, and spins on its loop for ever. Both backends. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

static struct canal_cond *cond;
static _Atomic int returned;
static int pfd[2];

static void reader(void *arg)
{
	(void)arg;
	char c;
	ssize_t r = canal_io_read(pfd[0], &c, 1, -1, cond);
	CHECK_EQ(r, -ECANCELED);
	atomic_store(&returned, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	CHECK_EQ(pipe(pfd), 0);
	cond = canal_cond_create();
	CHECK(cond != NULL);
	CHECK_EQ(canal_spawn(reader, NULL), 0);
	int n;
	while ((n = canal_cond_signal(cond)) == 0)
		canal_sleep_ns(1000000);
	CHECK_EQ(n, 1);
	canal_cond_destroy(cond); /* nobody waits on it any more */
	void *p = malloc(32);
	while (!atomic_load(&returned))
		canal_sleep_ns(1000000);
	free(p);
	close(pfd[0]);
	close(pfd[1]);
}

int main(void)
{
	alarm(10); /* the bug: the cancelled reader spins on freed memory */
	for (unsigned loops = 1; loops <= 2; loops++) {
		atomic_store(&returned, 0);
		struct canal_run_options o = {.loops = loops};
		CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	}
	printf("test_review_cond_destroy_after_cancel: ok\n");
	return 0;
}
