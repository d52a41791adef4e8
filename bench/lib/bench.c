/* SPDX-License-Identifier: MIT */
/* bench.c - the helpers of bench.h. */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int bench_pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* pid 0: the calling thread only (Linux affinity is per thread). */
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

void bench_two_cpus(int pin, int *a, int *b)
{
	cpu_set_t set;

	*a = *b = -1;
	if (!pin || sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (*a < 0) {
			*a = c;
		} else {
			*b = c;
			return;
		}
	}
	*a = -1; /* only one CPU */
}

int bench_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t bench_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static void vmessage(FILE *f, const char *fmt, va_list ap)
{
	fprintf(f, "%s: ", program_invocation_short_name);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(stderr, fmt, ap);
	va_end(ap);
	exit(1);
}

void bench_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage(stderr, fmt, ap);
	va_end(ap);
}

int bench_skipped(const char *fmt, ...)
{
	va_list ap;

	fputs("SKIPPED: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	return BENCH_EXIT_SKIPPED;
}

int bench_parse_long(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int bench_parse_size(const char *s, size_t min, size_t max, size_t *out)
{
	char *end;

	if (s[0] == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'k' || *end == 'K') {
		if (v > (~0ULL >> 10))
			return -1;
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		if (v > (~0ULL >> 20))
			return -1;
		v <<= 20;
		end++;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || v < min || v > max)
		return -1;
	*out = (size_t)v;
	return 0;
}

long bench_arg_long(const char *s, const char *what, long min, long max)
{
	long v;

	if (bench_parse_long(s, min, max, &v))
		bench_die("bad %s '%s' (%ld..%ld)", what, s, min, max);
	return v;
}

void *bench_shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void bench_shared_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void bench_sort_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
}

double bench_percentile(const uint64_t *sorted, size_t n, double p)
{
	if (n == 0)
		return 0.0;
	double rank = (double)(n - 1) * p / 100.0;
	size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
	return (double)sorted[lo] +
	       ((double)sorted[hi] - (double)sorted[lo]) * (rank - (double)lo);
}
