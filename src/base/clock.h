/* SPDX-License-Identifier: MIT */
/* clock.h - the clock of deadlines: CLOCK_MONOTONIC in nanoseconds. */
#ifndef CANAL_BASE_CLOCK_H
#define CANAL_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Clock `id` in nanoseconds; 0 if it cannot be read. */
static inline uint64_t canal__clock_ns(clockid_t id)
{
	struct timespec ts = { 0, 0 };

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Public (declared in <canal/channel.h> too): CLOCK_MONOTONIC in ns. */
uint64_t canal_now_ns(void);

/* The deadline timeout_ns from now (timeout_ns < 0: CANAL_NO_DEADLINE),
 * saturating below CANAL_NO_DEADLINE. */
uint64_t canal__deadline_from_timeout(int64_t timeout_ns);

#endif /* CANAL_BASE_CLOCK_H */
