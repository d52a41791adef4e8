/* SPDX-License-Identifier: MIT */
/*
 * spin.h - busy-waiting: the CPU's pause hint, exponential pauses after a
 * lost race, and the snooze of a thread (or task) that waits for another
 * to finish a step of a few instructions (a claimer between its index CAS
 * and its stamp store). Yielding and sleeping go through the parker.
 */
#ifndef CANAL_BASE_SPIN_H
#define CANAL_BASE_SPIN_H

#include <stdbool.h>
#include <stdint.h>

static inline void canal__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * After losing a CAS to another thread: wait 2^step pauses, step growing to
 * CANAL__PAUSE_EXP_MAX. Retrying at once makes the line bounce between the
 * contenders, each retry a miss that the winner's next claim must take
 * back; backing off lets the winner claim a few positions in a row.
 * Measured on a 2-vCPU VM, capacity 1M, 4 senders (mpsc), 15 interleaved
 * runs: 32.7 -> 29.2 ns a message; 4 senders and 4 receivers (mpmc) 37.9 ->
 * 29.6 ns. The bound is crossbeam's (64 PAUSEs, under a microsecond).
 */
#define CANAL__PAUSE_EXP_MAX 6u

static inline void canal__pause_exp(unsigned *step)
{
	for (unsigned i = 0; i < (1u << *step); i++)
		canal__cpu_relax();
	if (*step < CANAL__PAUSE_EXP_MAX)
		(*step)++;
}

/*
 * Snoozing on a step another thread must finish: pauses growing to 64
 * (under a microsecond: the other side is running), then giving the CPU
 * away through the parker (it may be preempted, and on a machine with more
 * threads than cores it may be waiting for this CPU), then, once the wait
 * has lasted CANAL__SNOOZE_SLEEP_AFTER_NS, short sleeps (it is stopped or
 * dead: do not burn the CPU while a repair decides).
 */
#define CANAL__SNOOZE_SLEEP_AFTER_NS 2000000u
#define CANAL__SNOOZE_SLEEP_NS 100000u

struct canal__snooze {
	unsigned step;
	uint64_t since; /* first snooze that gave the CPU away, 0 before */
};

#define CANAL__SNOOZE_INIT { 0, 0 }

/* One step of snoozing. Returns how long this wait has been giving the
 * CPU away (0 during the pause phase). */
uint64_t canal__snooze(struct canal__snooze *s);

/* Still in the pause phase (a try operation gives up when it ends). */
static inline bool canal__snooze_spinning(const struct canal__snooze *s)
{
	return s->step <= CANAL__PAUSE_EXP_MAX;
}

#endif /* CANAL_BASE_SPIN_H */
