/* test_task_idle_work.c - what a loop with nothing to run does for the
 * others (loop.c, "Idle work"):
 *  - it commits the window of stack pages the pool posted ahead of the
 *    next spawns (stack.c, COMMIT_AHEAD): with one loop and with two, a
 *    runtime whose first task waits finds the window taken by a loop;
 *  - a loop whose own tasks make BURST_WAKE (512) of them ready at once
 *    wakes a sleeping loop, which steals: 1 100 tasks parked on a channel
 *    on two loops, the other loop asleep, the channel closed by a task
 *    that then holds its own loop without yielding; some of the woken
 *    tasks must run on the other loop (without the wake it sleeps on and
 *    the test fails at its 60 s bound). */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include "runtime/internal.h"
#include "runtime/stack.h"

#include <stdio.h>
#include <time.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct canal__runtime *runtime(void)
{
	return atomic_load(&canal__rt);
}

/* ---- idle loops commit the posted window ---- */

static void help_main(void *arg)
{
	(void)arg;
	struct canal__stack_pool *p = runtime()->pool;
	/* This task's block was the pool's first: the window after it is
	 * posted, unless the kernel refused committing ahead or blocks are
	 * not carved from slabs here. */
	if (!canal__stack_pool_commits_ahead(p) ||
	    (!canal__stack_pool_job_posted(p) &&
	     canal__stack_pool_helped(p) == 0)) {
		printf("idle help: nothing posted here, not checked\n");
		return;
	}
	uint64_t until = mono_ns() + 60000000000ull;
	while (canal__stack_pool_helped(p) == 0 && mono_ns() < until)
		CHECK_EQ(canal_sleep_ns(1000000), 0);
	CHECK(canal__stack_pool_helped(p) > 0);
	CHECK(!canal__stack_pool_job_posted(p));
}

/* ---- a burst of wake-ups wakes a sleeping loop ---- */

#define WAITERS 1100

static struct canal_chan *gate;
static _Atomic unsigned parked, ran_elsewhere, ended;
static _Atomic unsigned closer_loop;

static void waiter(void *arg)
{
	(void)arg;
	atomic_fetch_add(&parked, 1);
	char c;
	CHECK_EQ(canal_recv(gate, &c), -EPIPE);
	if (canal__this_loop()->index != atomic_load(&closer_loop))
		atomic_fetch_add(&ran_elsewhere, 1);
	atomic_fetch_add(&ended, 1);
}

static void burst_main(void *arg)
{
	(void)arg;
	struct canal__runtime *rt = runtime();
	CHECK_EQ(rt->nloops, 2u);
	for (int i = 0; i < WAITERS; i++)
		CHECK_EQ(canal_spawn(waiter, NULL), 0);
	uint64_t until = mono_ns() + 60000000000ull;
	while (atomic_load(&parked) < WAITERS && mono_ns() < until)
		CHECK_EQ(canal_sleep_ns(1000000), 0);
	CHECK_EQ(atomic_load(&parked), WAITERS);
	/* Every waiter is in canal_recv (parked, or about to: the close
	 * wakes it either way); the other loop, out of work, goes to
	 * sleep. */
	for (;;) {
		CHECK(mono_ns() < until);
		CHECK_EQ(canal_sleep_ns(2000000), 0);
		struct canal__loop *me = canal__this_loop();
		struct canal__loop *other = &rt->loops[1 - me->index];
		if (atomic_load(&other->sleeping)) {
			atomic_store(&closer_loop, me->index);
			break;
		}
	}
	/* From here on this task holds its loop: the woken waiters come to
	 * its queue (a task woken by a task moves to the waker's loop), and
	 * only the other loop can run them. */
	CHECK_EQ(canal_close(gate), 0);
	while (atomic_load(&ran_elsewhere) == 0 && mono_ns() < until)
		;
	CHECK(atomic_load(&ran_elsewhere) > 0);
}

int main(void)
{
	for (unsigned loops = 1; loops <= 2; loops++) {
		struct canal_run_options o = {.loops = loops};
		CHECK_EQ(canal_run(help_main, NULL, &o), 0);
	}
	printf("idle help: a loop took the posted window, 1 and 2 loops\n");

	gate = canal_chan_create(1, 1, 0);
	CHECK(gate != NULL);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(burst_main, NULL, &o), 0);
	CHECK_EQ(atomic_load(&ended), WAITERS);
	printf("burst: %u of %d woken tasks ran on the other loop\n",
	       atomic_load(&ran_elsewhere), WAITERS);
	canal_chan_destroy(gate);
	return 0;
}
