/* SPDX-License-Identifier: MIT */
/* load.c - the foreign-load verdict of load.h. */
#define _GNU_SOURCE 1
#include "base/load.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/compiler.h"

/*
 * State. window_end and verdict are hints read by every yield phase and
 * written by the one sampler: relaxed both ways (a reader that sees a new
 * window_end with the old verdict decides one yield phase on the last
 * window's verdict). The sampler's records (last_*, the buffer) are
 * touched only by the thread that holds `sampling`: its acquire CAS pairs
 * with the previous holder's release store, so each sampler sees the last
 * one's records. The sampler cannot die holding it: cancellation is
 * disabled while it samples (open and read are cancellation points), and
 * a fork()ed child frees it (load_fork_child).
 */
static _Atomic uint64_t window_end;
/* The verdict: LOAD_NONE, LOAD_FOREIGN, or LOAD_SATURATED (foreign, and
 * this process had less than a CPU left: load.h). */
enum { LOAD_NONE, LOAD_FOREIGN, LOAD_SATURATED };
static _Atomic unsigned char verdict;
static _Atomic int sampling;
static uint64_t last_wall, last_busy_ticks, last_own;
static _Atomic uint64_t samples; /* canal__foreign_samples */
static char stat_buf[16384];

bool canal__saturated_verdict(uint64_t busy_ns, uint64_t own_ns,
			      uint64_t window_ns, unsigned ncpus)
{
	if (busy_ns <= own_ns || window_ns == 0 || ncpus == 0)
		return false;
	/* foreign > window * (ncpus - 3/4), without overflow. */
	return (busy_ns - own_ns) / (4ull * ncpus - 3) > window_ns / 4;
}

bool canal__foreign_verdict(uint64_t busy_ns, uint64_t own_ns,
			    uint64_t window_ns, unsigned ncpus)
{
	if (busy_ns <= own_ns || window_ns == 0)
		return false;
	uint64_t cpus = ncpus > 2 ? ncpus - 1 : 1;
	/* foreign / (window * cpus) > permille / 1000, without overflow for
	 * windows up to hours on 1 000-CPU machines. */
	return (busy_ns - own_ns) / cpus >
	       window_ns / 1000 * CANAL__FOREIGN_SHARE_PERMILLE;
}

/* fork(): the child has one thread, and its process clock starts again.
 * A sampler of the parent that held `sampling` at the fork is gone: free
 * it, and start the records afresh. The machine's load did not change:
 * the child keeps the parent's verdict (false if the parent never had
 * one: it forked before its first wait, as fwd's forwarder does) for
 * CANAL__FORK_QUIET_NS (load.h: a child that lives shorter never reads
 * /proc/stat), and its first sample keeps that verdict for one more
 * window (sample(): nothing to compare with yet). */
static void load_fork_child(void)
{
	atomic_store_explicit(&sampling, 0, memory_order_relaxed);
	atomic_store_explicit(&samples, 0, memory_order_relaxed);
	last_wall = 0;
	uint64_t quiet = canal_now_ns() + CANAL__FORK_QUIET_NS;
	if (atomic_load_explicit(&window_end, memory_order_relaxed) < quiet)
		atomic_store_explicit(&window_end, quiet,
				      memory_order_relaxed);
}

/* At load: a process that forks before its first wait hands its children
 * the state above too. */
__attribute__((constructor)) static void load_register_atfork(void)
{
	pthread_atfork(NULL, NULL, load_fork_child);
}

/*
 * user + nice + system ticks of the CPUs this thread may run on, summed
 * from /proc/stat's cpuN lines (the CPUs a container's cpuset gives it,
 * not the whole host), and how many of them; false if it cannot be read.
 */
static bool allowed_busy_ticks(uint64_t *ticks, unsigned *ncpus)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return false;
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, stat_buf + len, sizeof stat_buf - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof stat_buf - 1)
			break; /* the cpuN lines come first: enough of them */
	}
	close(fd);
	stat_buf[len] = '\0';
	uint64_t sum = 0;
	unsigned seen = 0;
	for (char *line = stat_buf; strncmp(line, "cpu", 3) == 0;) {
		unsigned cpu;
		unsigned long long user, nice, sys;
		/* "cpu  ..." is the sum of all: skipped (%u would skip the
		 * blanks and read its first count as a CPU number). */
		if (line[3] >= '0' && line[3] <= '9' &&
		    sscanf(line, "cpu%u %llu %llu %llu", &cpu, &user, &nice,
			   &sys) == 4 &&
		    cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set)) {
			sum += user + nice + sys;
			seen++;
		}
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	if (seen == 0)
		return false;
	*ticks = sum;
	*ncpus = seen;
	return true;
}

/* One sample, by the holder of `sampling`: the verdict for the window
 * since the last one. No verdict for a first sample (in this process), for
 * clocks that went back, for a window under half the nominal one (two
 * samplers back to back: one tick of 10 ms would weigh too much) or over
 * ten times it (after an idle spell: an average over a long past). */
static unsigned char sample(uint64_t now_ns)
{
	static long tck;
	if (tck == 0)
		tck = sysconf(_SC_CLK_TCK);
	uint64_t ticks, own = canal__clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	unsigned ncpus;
	atomic_fetch_add_explicit(&samples, 1, memory_order_relaxed);
	if (tck <= 0 || tck > 1000000000 || !allowed_busy_ticks(&ticks, &ncpus))
		return LOAD_NONE;
	uint64_t window = now_ns - last_wall;
	bool fresh = last_wall == 0 || now_ns <= last_wall ||
		     window > 10 * CANAL__FOREIGN_WINDOW_NS ||
		     own < last_own || ticks < last_busy_ticks;
	if (!fresh && window < CANAL__FOREIGN_WINDOW_NS / 2)
		return atomic_load_explicit(&verdict, memory_order_relaxed);
	/* No verdict from a fresh sample, except for the first one after a
	 * fork(), which keeps the parent's (load_fork_child). */
	unsigned char v = LOAD_NONE;
	if (fresh) {
		if (last_wall == 0)
			v = atomic_load_explicit(&verdict, memory_order_relaxed);
	} else {
		uint64_t busy = (ticks - last_busy_ticks) *
				(1000000000ull / (uint64_t)tck);
		if (canal__foreign_verdict(busy, own - last_own, window, ncpus))
			v = canal__saturated_verdict(busy, own - last_own,
						     window, ncpus)
				    ? LOAD_SATURATED
				    : LOAD_FOREIGN;
	}
	last_wall = now_ns;
	last_busy_ticks = ticks;
	last_own = own;
	return v;
}

static unsigned char last_verdict(void)
{
	return atomic_load_explicit(&verdict, memory_order_relaxed);
}

bool canal__foreign_load(uint64_t now_ns)
{
	if (likely(now_ns < atomic_load_explicit(&window_end,
						 memory_order_relaxed)))
		return last_verdict() != LOAD_NONE;
	int free_ = 0;
	if (atomic_load_explicit(&sampling, memory_order_relaxed) != 0 ||
	    !atomic_compare_exchange_strong_explicit(&sampling, &free_, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return last_verdict() != LOAD_NONE;
	/* Another sampler may have finished between our look at window_end
	 * and the CAS. */
	if (now_ns < atomic_load_explicit(&window_end, memory_order_relaxed)) {
		atomic_store_explicit(&sampling, 0, memory_order_release);
		return last_verdict() != LOAD_NONE;
	}
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	unsigned char v = sample(now_ns);
	pthread_setcancelstate(cancel, NULL);
	atomic_store_explicit(&verdict, v, memory_order_relaxed);
	atomic_store_explicit(&window_end, now_ns + CANAL__FOREIGN_WINDOW_NS,
			      memory_order_relaxed);
	atomic_store_explicit(&sampling, 0, memory_order_release);
	return v != LOAD_NONE;
}

uint64_t canal__foreign_samples(void)
{
	return atomic_load_explicit(&samples, memory_order_relaxed);
}

bool canal__foreign_load_last(void)
{
	return last_verdict() != LOAD_NONE;
}

bool canal__foreign_saturated(void)
{
	return last_verdict() == LOAD_SATURATED;
}
