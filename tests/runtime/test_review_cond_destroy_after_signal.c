/* test_review_cond_destroy_after_signal.c - hostile review (condvars).
 * task.h: canal_cond_destroy frees "one nobody waits on". Once
 * canal_cond_signal has returned 1, the one waiter was woken (its wait is
 * over: it only has to return), so nobody waits on the condvar and the
 * signaller destroys it, as POSIX allows for pthread_cond_destroy after
 * the waiters were woken. But the woken task, when it resumes,
 * unregisters from the condvar under the condvar's lock (cond.c
 * canal__cond_unregister, called by canal_cond_wait after its park):
 * it locks freed memory. With glibc the freed block's first word is the
 * tcache link, never 0, so the spin lock never comes free and the
 * woken task spins on its loop for ever (a use-after-free; under ASan a
 * heap-use-after-free report). The same holds for a cancelling condvar
 * passed to an I/O operation (test_review_cond_destroy_after_cancel). */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

static struct canal_cond *cond;
static _Atomic int returned;

static void waiter(void *arg)
{
	(void)arg;
	int r = canal_cond_wait(cond, -1);
	CHECK_EQ(r, 0);
	atomic_store(&returned, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	cond = canal_cond_create();
	CHECK(cond != NULL);
	CHECK_EQ(canal_spawn(waiter, NULL), 0);
	/* Signal until the waiter is woken: then nobody waits on it. */
	int n;
	while ((n = canal_cond_signal(cond)) == 0)
		canal_sleep_ns(1000000);
	CHECK_EQ(n, 1);
	canal_cond_destroy(cond);
	/* A little more heap traffic of the same size class. */
	void *p = malloc(32);
	while (!atomic_load(&returned))
		canal_sleep_ns(1000000);
	free(p);
}

int main(void)
{
	alarm(10); /* the bug: the woken waiter spins on freed memory */
	for (unsigned loops = 1; loops <= 2; loops++) {
		atomic_store(&returned, 0);
		struct canal_run_options o = {.loops = loops};
		CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	}
	printf("test_review_cond_destroy_after_signal: ok\n");
	return 0;
}
