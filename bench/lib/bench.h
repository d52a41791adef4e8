/* SPDX-License-Identifier: MIT */
/*
 * bench.h - what every benchmark program of canal needs, written once:
 * the clock, CPU pinning, the polite busy-wait, full reads and writes,
 * argument parsing, the "skipped" exit status, fatal errors, memory shared
 * with forked children, and percentiles (the same definition as the
 * harness's stats.py).
 *
 * Layers: bench/lib depends on libc only (not on canal), so that the
 * programs measuring kernel channels and canal share it alike.
 */
#ifndef CANAL_BENCH_LIB_H
#define CANAL_BENCH_LIB_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Exit status of a program that cannot run here (a missing feature, a
 * peer not built): the harness reports it SKIPPED, with the reason the
 * program printed ("SKIPPED: <why>"). */
#define BENCH_EXIT_SKIPPED 77

/* CLOCK_MONOTONIC in nanoseconds / in seconds: the clock of every figure. */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double bench_now_s(void)
{
	return (double)bench_now_ns() * 1e-9;
}

/* One CPU relax instruction (PAUSE on x86, YIELD on arm64): in a poll
 * loop, it frees the pipeline for the sibling hyper-thread and slows the
 * loop down to the rate at which the polled line can change. */
static inline void bench_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A poll that gives the CPU away now and then: bench_relax(), and every
 * BENCH_YIELD_AFTER fruitless polls (counted in *spins) a sched_yield(),
 * so that two sides sharing one CPU (a busy or small machine) progress. */
#define BENCH_YIELD_AFTER 1000UL
static inline void bench_relax_yield(unsigned long *spins)
{
	bench_relax();
	if (++*spins >= BENCH_YIELD_AFTER) {
		*spins = 0;
		sched_yield();
	}
}

/* Pin the calling thread to cpu (a no-op for cpu < 0). Returns 0 or a
 * negative errno; callers treat a failure as "not pinned". */
int bench_pin_self(int cpu);

/* The first two CPUs this process may run on, in *a and *b, or -1 and -1
 * when pin is 0 or only one CPU is allowed (pinning two busy sides to one
 * CPU would only hurt). */
void bench_two_cpus(int pin, int *a, int *b);

/* write() all of buf, restarting on EINTR and short writes: 0 or -errno.
 * bench_read_full: read exactly len bytes: len, 0 at end of file before
 * len bytes, or -errno. */
int bench_write_all(int fd, const void *buf, size_t len);
ssize_t bench_read_full(int fd, void *buf, size_t len);

/* "<program>: <message>" on stderr, then exit(1) / return. */
void bench_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void bench_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "SKIPPED: <message>" on stdout; returns BENCH_EXIT_SKIPPED (for
 * `return bench_skipped(...)` in main). */
int bench_skipped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A decimal integer in [min, max]: 0 and *out, or -1 for anything else
 * (sign, junk, overflow). bench_parse_size also takes a K/M suffix
 * (optionally followed by "B" or "iB"): "4K", "1MiB", "64B". */
int bench_parse_long(const char *s, long min, long max, long *out);
int bench_parse_size(const char *s, size_t min, size_t max, size_t *out);
/* Same, dying with "bad <what> '<s>' (<min>..<max>)" on bad input. */
long bench_arg_long(const char *s, const char *what, long min, long max);

/* len bytes of zero-filled memory shared with children forked later
 * (MAP_SHARED | MAP_ANONYMOUS); NULL with errno set on failure. */
void *bench_shared_alloc(size_t len);
void bench_shared_free(void *p, size_t len);

/* Sort n values; the p-th percentile (0..100) of sorted values, with
 * linear interpolation between ranks (stats.percentile in the harness). */
void bench_sort_u64(uint64_t *v, size_t n);
double bench_percentile(const uint64_t *sorted, size_t n, double p);

#endif /* CANAL_BENCH_LIB_H */
