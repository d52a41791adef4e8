/* trial_pace.h - the pacing of the stress tests in which plain threads
 * race a task at random moments, trial after trial: the main task starts
 * trial t by storing t + 1 in a counter, and each thread waits for that,
 * then busy-waits a random time before it acts (a spin, not a sleep: the
 * moments are finer than the scheduler's). */
#ifndef CANAL_TESTS_TRIAL_PACE_H
#define CANAL_TESTS_TRIAL_PACE_H

#include "check.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* Busy-wait us microseconds (CLOCK_MONOTONIC). */
static inline void spin_us(unsigned us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		if ((b.tv_sec - a.tv_sec) * 1000000 +
			    (b.tv_nsec - a.tv_nsec) / 1000 >=
		    us)
			return;
	}
}

/* Wait (yielding the CPU) until *go says trial `trial` has started
 * (*go == trial + 1), then spin a random time below max_us (drawn with
 * check_rand64 from *seed). */
static inline void trial_pace(_Atomic int *go, int trial, uint64_t *seed,
			      unsigned max_us)
{
	while (atomic_load(go) != trial + 1)
		sched_yield();
	spin_us((unsigned)(check_rand64(seed) % max_us));
}

#endif
