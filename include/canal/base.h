/* SPDX-License-Identifier: MIT */
/*
 * canal/base.h - what every part of canal shares: the clock of deadlines
 * and the descriptions of error codes. Included by the other headers.
 *
 * Errors are negative errno values everywhere in canal (see the
 * conventions at the top of <canal/channel.h>).
 */
#ifndef CANAL_BASE_H
#define CANAL_BASE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * canal_now_ns - CLOCK_MONOTONIC in nanoseconds: the clock of every
 * deadline canal takes. Never fails, never blocks; thread-safe.
 */
uint64_t canal_now_ns(void);

/*
 * canal_strerror - a static English description of a canal error code (a
 * negative errno value, as canal's functions return), e.g. "channel closed"
 * for -EPIPE. Never NULL; never blocks; thread-safe.
 */
const char *canal_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* CANAL_BASE_H */
