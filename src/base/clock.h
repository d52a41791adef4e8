/* SPDX-License-Identifier: MIT */
/* clock.h - the clock of deadlines: CLOCK_MONOTONIC in nanoseconds. */
#ifndef CANAL_BASE_CLOCK_H
#define CANAL_BASE_CLOCK_H

#include <stdint.h>

/* Public (declared in <canal/channel.h> too): CLOCK_MONOTONIC in ns. */
uint64_t canal_now_ns(void);

/* The deadline timeout_ns from now (timeout_ns < 0: CANAL_NO_DEADLINE),
 * saturating below CANAL_NO_DEADLINE. */
uint64_t canal__deadline_from_timeout(int64_t timeout_ns);

#endif /* CANAL_BASE_CLOCK_H */
