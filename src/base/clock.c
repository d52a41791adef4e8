/* SPDX-License-Identifier: MIT */
/* clock.c - the clock of deadlines (clock.h). */
#include "base/clock.h"
#include "base/compiler.h"
#include "base/park.h"


CANAL_EXPORT uint64_t canal_now_ns(void)
{
	return canal__clock_ns(CLOCK_MONOTONIC);
}

uint64_t canal__deadline_from_timeout(int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return CANAL_NO_DEADLINE;
	uint64_t now = canal_now_ns();
	if ((uint64_t)timeout_ns > CANAL_NO_DEADLINE - 1 - now)
		return CANAL_NO_DEADLINE - 1;
	return now + (uint64_t)timeout_ns;
}

