/* SPDX-License-Identifier: MIT */
/*
 * test_foreign_load - the wait layer's "do other processes take the CPUs?"
 * verdict (base/load.h): its arithmetic, the live sampler seeing busy
 * child processes, and a fork()ed child keeping its verdict. (That a quiet
 * machine gives "no" cannot be a pass/fail check: CTest runs tests side
 * by side.)
 */
#define _GNU_SOURCE 1
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/load.h"
#include "check.h"

#define MS 1000000ull

static void verdict_arithmetic(void)
{
	/* 2 CPUs: the threshold is 30 % of one CPU over the window. */
	CHECK(!canal__foreign_verdict(100 * MS, 100 * MS, 100 * MS, 2));
	CHECK(!canal__foreign_verdict(129 * MS, 100 * MS, 100 * MS, 2));
	CHECK(canal__foreign_verdict(131 * MS, 100 * MS, 100 * MS, 2));
	CHECK(canal__foreign_verdict(200 * MS, 0, 100 * MS, 2));
	/* 1 CPU: the same share of that CPU. */
	CHECK(canal__foreign_verdict(31 * MS, 0, 100 * MS, 1));
	CHECK(!canal__foreign_verdict(29 * MS, 0, 100 * MS, 1));
	/* 8 CPUs: 30 % of 7 CPUs, 210 ms of foreign time. */
	CHECK(!canal__foreign_verdict(200 * MS, 0, 100 * MS, 8));
	CHECK(canal__foreign_verdict(220 * MS, 0, 100 * MS, 8));
	/* The process's own time is never foreign; a clock that went back
	 * (own above busy) and an empty window give no verdict. */
	CHECK(!canal__foreign_verdict(100 * MS, 300 * MS, 100 * MS, 2));
	CHECK(!canal__foreign_verdict(300 * MS, 0, 0, 2));
	/* No overflow: an hour's window on 1 024 CPUs. */
	uint64_t hour = 3600ull * 1000 * MS;
	CHECK(!canal__foreign_verdict(1023 * hour / 4, 0, hour, 1024));
	CHECK(canal__foreign_verdict(1023 * hour / 2, 0, hour, 1024));

	/* Saturated: others took more than CPUs - 3/4 of the window. 2 CPUs:
	 * one busy process (100 ms of 100) is not; two (190 ms) are. */
	CHECK(!canal__saturated_verdict(100 * MS, 0, 100 * MS, 2));
	CHECK(!canal__saturated_verdict(124 * MS, 0, 100 * MS, 2));
	CHECK(canal__saturated_verdict(126 * MS, 0, 100 * MS, 2));
	CHECK(canal__saturated_verdict(190 * MS, 0, 100 * MS, 2));
	/* Own time is not foreign: 190 ms busy of which 80 ours. */
	CHECK(!canal__saturated_verdict(190 * MS, 80 * MS, 100 * MS, 2));
	/* 1 CPU: above a quarter of it. 8 CPUs: above 7.25. */
	CHECK(canal__saturated_verdict(26 * MS, 0, 100 * MS, 1));
	CHECK(!canal__saturated_verdict(24 * MS, 0, 100 * MS, 1));
	CHECK(!canal__saturated_verdict(720 * MS, 0, 100 * MS, 8));
	CHECK(canal__saturated_verdict(730 * MS, 0, 100 * MS, 8));
	CHECK(!canal__saturated_verdict(100 * MS, 300 * MS, 100 * MS, 2));
	CHECK(!canal__saturated_verdict(300 * MS, 0, 0, 2));
	CHECK(!canal__saturated_verdict(300 * MS, 0, 100 * MS, 0));
	/* No overflow. */
	CHECK(!canal__saturated_verdict(1023 * hour, 0, hour, 1024));
	CHECK(canal__saturated_verdict(1024 * hour, 0, hour, 1024));
}

/* Does a cgroup v2 CPU quota apply to this process's group? */
static bool cpu_quota(void)
{
	char buf[64] = "";
	FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
	if (!f)
		return false;
	bool q = fgets(buf, sizeof buf, f) && strncmp(buf, "max", 3) != 0;
	fclose(f);
	return q;
}

/* Children that keep every CPU busy: the sampler must say so within a few
 * windows. */
static void live_busy_children(void)
{
	if (access("/proc/stat", R_OK) != 0) {
		printf("live part skipped: /proc/stat not readable\n");
		return;
	}
	cpu_set_t set;
	long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
							     : 1;
	if (n < 1)
		n = 1;
	if (n > 64)
		n = 64;
	pid_t kids[64];
	for (long i = 0; i < n; i++) {
		kids[i] = fork();
		CHECK(kids[i] >= 0);
		if (kids[i] == 0) {
			alarm(10); /* bounded even if the parent dies */
			for (volatile unsigned long x = 0;; x++)
				;
		}
	}
	/* canal__foreign_load_last: the verdict as it stands, no sample of
	 * its own (none taken yet: none). */
	CHECK(!canal__foreign_load_last());
	CHECK(canal__foreign_samples() == 0);
	bool seen = false;
	uint64_t end = canal_now_ns() + 5000 * MS, t = 0;
	while (!seen && (t = canal_now_ns()) < end) {
		seen = canal__foreign_load(t);
		usleep(10000);
	}
	for (long i = 0; i < n; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	if (seen) {
		/* The verdict stands until the next sample, however late. */
		uint64_t before = canal__foreign_samples();
		CHECK(canal__foreign_load_last());
		usleep(2 * CANAL__FOREIGN_WINDOW_NS / 1000);
		CHECK(canal__foreign_load_last());
		CHECK(canal__foreign_samples() == before);
	}
	if (seen) {
		/* A child of this process keeps the parent's verdict, and
		 * takes no sample of its own (no read of /proc/stat) for
		 * CANAL__FORK_QUIET_NS after the fork (load.c,
		 * load_fork_child: the machine did not change at the fork;
		 * fwd's 2 000 short-lived children each read it twice
		 * before): asked two windows later it still says yes without
		 * a sample. Past the quiet time it samples, and that first
		 * sample keeps the verdict for one more window (its process
		 * clock starts again, so it has nothing to compare with).
		 * (Without the fork handler the child would compare its new
		 * clock with the parent's records: no.) */
		uint64_t t0 = canal_now_ns(); /* before the fork handler's */
		pid_t c = fork();
		CHECK(c >= 0);
		if (c == 0) {
			int code = 0;
			if (!canal__foreign_load_last() ||
			    !canal__foreign_load(t0))
				code = 1; /* parent's verdict not inherited */
			else if (!canal__foreign_load(
					 t0 + 2 * CANAL__FOREIGN_WINDOW_NS) ||
				 canal__foreign_samples() != 0)
				code = 2; /* sampled within the quiet time */
			else if (!canal__foreign_load(
					 canal_now_ns() + CANAL__FORK_QUIET_NS +
					 CANAL__FOREIGN_WINDOW_NS) ||
				 canal__foreign_samples() != 1)
				code = 3; /* no sample past it, or verdict lost */
			_exit(code);
		}
		int st = 0;
		CHECK(waitpid(c, &st, 0) == c);
		CHECK(WIFEXITED(st));
		if (WEXITSTATUS(st) != 0)
			fprintf(stderr, "fork()ed child: failed step %d\n",
				WEXITSTATUS(st));
		CHECK(WEXITSTATUS(st) == 0);
	}
	if (!seen && cpu_quota()) {
		/* load.h: a quota is not seen (the children may not have
		 * had the CPUs to be seen). */
		printf("live part skipped: a cgroup CPU quota applies\n");
		exit(77);
	}
	CHECK(seen);
}

int main(void)
{
	verdict_arithmetic();
	live_busy_children();
	printf("test_foreign_load: ok\n");
	return 0;
}
