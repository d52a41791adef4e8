/* SPDX-License-Identifier: MIT */
/*
 * osu_common.h - what the OSU-format programs of bench/engine share (canal's
 * osu_*, raw_latency, zmq_osu): the command line and the OSU micro-
 * benchmarks' iteration counts, so that every program measures with the
 * same rules.
 */
#ifndef CANAL_BENCH_OSU_COMMON_H
#define CANAL_BENCH_OSU_COMMON_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A message buffer of n bytes (at least 1) filled with fill, aligned to
 * the page as the OSU benchmarks align theirs (ucx_perftest's come from
 * mmap): with malloc's 16-byte alignment UCX's copies of 16-32 KiB took
 * 0.3-0.7 us longer (Intel Xeon host, 2026-11-28). NULL if out of
 * memory; free() it. */
static inline void *osu_buffer(size_t n, int fill)
{
	void *p = NULL;
	long page = sysconf(_SC_PAGESIZE);
	if (n == 0)
		n = 1;
	if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, n) != 0)
		return NULL;
	memset(p, fill, n);
	return p;
}

/* Above this many bytes, OSU runs fewer iterations. */
#define OSU_LARGE 8192

struct osu_args {
	const char *select;  /* the value of the program's own option */
	size_t min_size, max_size;
	long iterations;     /* 0: OSU's count for the size */
	long warmup;	     /* < 0: OSU's count for the size */
};

/* Parse "--<select_flag> V --min-size N --max-size N --iterations N
 * --warmup N" (pairs, any order) into a, whose fields hold the defaults.
 * Returns 0, or -1 on an unknown option or a missing value. */
static inline int osu_parse_args(int argc, char **argv, const char *select_flag,
				 struct osu_args *a)
{
	for (int i = 1; i < argc; i += 2) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v || strncmp(o, "--", 2))
			return -1;
		if (!strcmp(o + 2, select_flag))
			a->select = v;
		else if (!strcmp(o, "--min-size"))
			a->min_size = strtoul(v, NULL, 0);
		else if (!strcmp(o, "--max-size"))
			a->max_size = strtoul(v, NULL, 0);
		else if (!strcmp(o, "--iterations"))
			a->iterations = strtol(v, NULL, 0);
		else if (!strcmp(o, "--warmup"))
			a->warmup = strtol(v, NULL, 0);
		else
			return -1;
	}
	return 0;
}

/* OSU's counts for one size: kind 0 latency (round trips), else bandwidth
 * (windows); the command line's --iterations / --warmup win. */
static inline void osu_counts(int kind, size_t size, const struct osu_args *a,
			      long *iters, long *skip)
{
	if (kind == 0) {
		*iters = size > OSU_LARGE ? 1000 : 10000;
		*skip = size > OSU_LARGE ? 10 : 100;
	} else {
		*iters = size > OSU_LARGE ? 20 : 100;
		*skip = size > OSU_LARGE ? 2 : 10;
	}
	if (a->iterations > 0)
		*iters = a->iterations;
	if (a->warmup >= 0)
		*skip = a->warmup;
}

#endif
