/* test_task_yield_visible.c - a task that yielded is visible to the other
 * loops while the task it yielded to runs on without switching out (a
 * computation, a blocking call): an idle loop steals it and runs it.
 *
 * On loop 0, main yields to `first`, which yields to `spinner`; spinner
 * then spins, never switching out, until main has run again (the flag).
 * Only another loop can run main: it must find it in loop 0's queue,
 * behind which `first` sits in the yield slot. A yield list kept private
 * to loop 0 until its next pass through the scheduler held main until the
 * spinner gave up (a hostile review of the direct yield), and so do
 * thieves that do not count the slot's task (main alone in the queue is
 * not stolen). Loop 1 is kept busy by `blocker` for the first
 * milliseconds so that it does not steal before the yields. The spinner's
 * bound (10 s) only ends a failing run: it is not a timing check. */
#include "check.h"

#include <canal/task.h>

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define SPIN_LIMIT_NS 10000000000ull
#define BLOCK_NS 30000000ull

static _Atomic int flag, spinner_done, seen;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Loop 1: busy at first (no early steal), then idle and stealing until
 * the spinner is done. */
static void blocker(void *arg)
{
	(void)arg;
	uint64_t t0 = now_ns();
	while (now_ns() - t0 < BLOCK_NS)
		;
	while (!atomic_load(&spinner_done))
		canal_sleep_ns(100000);
}

static void first(void *arg)
{
	(void)arg;
	canal_yield();
}

static void spinner(void *arg)
{
	(void)arg;
	uint64_t t0 = now_ns();
	while (!atomic_load(&flag) && now_ns() - t0 < SPIN_LIMIT_NS)
		;
	atomic_store(&seen, atomic_load(&flag));
	atomic_store(&spinner_done, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	/* Spawn places tasks on the loops in turn: first on loop 0, blocker
	 * on loop 1, spinner on loop 0 (main's). */
	CHECK_EQ(canal_spawn(first, NULL), 0);
	CHECK_EQ(canal_spawn(blocker, NULL), 0);
	CHECK_EQ(canal_spawn(spinner, NULL), 0);
	canal_yield(); /* to first, which yields to spinner */
	atomic_store(&flag, 1);
}

int main(void)
{
	struct canal_run_options o = {.loops = 2};
	for (int rep = 0; rep < 3; rep++) {
		atomic_store(&flag, 0);
		atomic_store(&spinner_done, 0);
		atomic_store(&seen, 0);
		CHECK_EQ(canal_run(main_task, NULL, &o), 0);
		/* The spinner saw main run elsewhere before its bound. */
		CHECK_EQ(atomic_load(&seen), 1);
	}
	printf("a yielded task ran on another loop while its loop spun, 3 runs\n");
	return 0;
}
