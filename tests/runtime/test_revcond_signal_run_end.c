/* test_revcond_signal_run_end.c - hostile review (condvars, the runtime's
 * end). task.h: canal_cond_signal is "callable from any thread, task or
 * not". A plain thread's signal that wins the wake of the runtime's last
 * task pushes it to its loop's queue, unlocks, and only then looks at the
 * loop (loop_wake: its `sleeping` word, and, if it sleeps, its backend's
 * eventfd). Meanwhile the loop may run the task to its end, and canal_run
 * then frees the loops and closes their backends: the signaller reads
 * freed memory (or writes a closed, perhaps reused, fd). canal_run waits
 * for plain threads inside the channels' local waker (park.c,
 * canal__local_wake_quiesce), but a condvar's signaller was not counted.
 *
 * Here the loop never sleeps (a spinner task yields until the waiter has
 * returned), so the signaller's last touch of the loop, its load of
 * `sleeping`, races with canal_run's free of the loops: TSan reports it
 * at once (nothing orders the load before the free); ASan when the
 * signaller is preempted in that window (over many rounds). */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>
#include <pthread.h>
#include <sched.h>

static struct canal_cond *cond;
static _Atomic int woken;

static void spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&woken))
		canal_yield();
}

static void main_task(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(spinner, NULL), 0);
	CHECK_EQ(canal_cond_wait(cond, -1), 0);
	atomic_store(&woken, 1);
}

static void *signaller(void *arg)
{
	(void)arg;
	while (canal_cond_signal(cond) == 0)
		sched_yield();
	return NULL;
}

int main(void)
{
	alarm(120); /* hang guard */
	for (int round = 0; round < 500; round++) {
		cond = canal_cond_create();
		CHECK(cond != NULL);
		atomic_store(&woken, 0);
		pthread_t th;
		CHECK_EQ(pthread_create(&th, NULL, signaller, NULL), 0);
		struct canal_run_options o = {.loops = 1, .detach_threads = 1};
		CHECK_EQ(canal_run(main_task, NULL, &o), 0);
		CHECK_EQ(pthread_join(th, NULL), 0);
		canal_cond_destroy(cond);
	}
	printf("test_revcond_signal_run_end: ok\n");
	return 0;
}
