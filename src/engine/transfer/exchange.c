/* SPDX-License-Identifier: MIT */
/*
 * transfer/exchange.c - the files back end of the address exchange and the
 * dispatch to PMIx (see exchange.h).
 */
#define _GNU_SOURCE
#include "exchange.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int canal__pmix_put(const struct canal__xchg *x, const char *key,
		    const char *value);
int canal__pmix_fence(const struct canal__xchg *x);
int canal__pmix_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms);

uint64_t canal__now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int canal__xchg_put(const struct canal__xchg *x, const char *key,
		    const char *value)
{
	if (x->pmix)
		return canal__pmix_put(x, key, value);
	char path[600], tmp[620];
	snprintf(path, sizeof path, "%s/%s.%d", x->dir, key, x->rank);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", value);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

int canal__xchg_fence(const struct canal__xchg *x)
{
	return x->pmix ? canal__pmix_fence(x) : 0;
}

int canal__xchg_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms)
{
	if (x->pmix)
		return canal__pmix_get(x, rank, key, buf, cap, deadline_ms);
	char path[600];
	snprintf(path, sizeof path, "%s/%s.%d", x->dir, key, rank);
	for (;;) {
		FILE *f = fopen(path, "r");
		if (f) {
			char *ok = fgets(buf, (int)cap, f);
			fclose(f);
			if (!ok)
				return -EPROTO;
			size_t n = strlen(buf);
			if (n == 0 || buf[n - 1] != '\n')
				return -EPROTO; /* too long, or cut */
			buf[n - 1] = 0;
			return 0;
		}
		if (canal__now_ms() > deadline_ms)
			return -ETIMEDOUT;
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
	}
}
