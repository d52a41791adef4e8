/* test_task_yield_steal.c - yields switch straight to the next task of the
 * loop (the direct yield of loop.c) while other loops steal: no task ever
 * runs on two threads at once, none is lost, each yields exactly its
 * count. Tasks have uneven yield counts, so that loops run out of work at
 * different times and steal from each other. (A yielding task takes
 * its loop's yield slot before its switch and moves to the stealable
 * queue only once its context is saved: that no other thread takes a
 * task still switching out is checked by TSan on this test, not by
 * `inside`, which is cleared before the yield.) */
#include "check.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>

#define TASKS 96
#define ROUNDS 4000

static _Atomic int inside[TASKS];
static long yields[TASKS];
static _Atomic int done;

static void yielder(void *arg)
{
	int i = (int)(intptr_t)arg;
	long n = ROUNDS / (1 + i % 7);
	for (long k = 0; k < n; k++) {
		/* Running here and nowhere else. */
		CHECK_EQ(atomic_exchange(&inside[i], 1), 0);
		yields[i]++;
		atomic_store(&inside[i], 0);
		canal_yield();
	}
	CHECK_EQ(yields[i], n);
	atomic_fetch_add(&done, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	for (int i = 0; i < TASKS; i++)
		CHECK_EQ(canal_spawn(yielder, (void *)(intptr_t)i), 0);
}

int main(void)
{
	struct canal_run_options o = {.loops = 2};
	for (int rep = 0; rep < 3; rep++) {
		atomic_store(&done, 0);
		for (int i = 0; i < TASKS; i++)
			yields[i] = 0;
		CHECK_EQ(canal_run(main_task, NULL, &o), 0);
		CHECK_EQ(atomic_load(&done), TASKS);
	}
	printf("%d tasks yielding on 2 loops, 3 runs: each ran alone, none lost\n", TASKS);
	return 0;
}
