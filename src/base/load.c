/* SPDX-License-Identifier: MIT */
/* load.c - the foreign-load verdict of load.h. */
#include "base/load.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/compiler.h"

/*
 * State. window_end and verdict are hints read by every yield phase and
 * written by the one sampler: relaxed both ways (a reader that sees a new
 * window_end with the old verdict decides one yield phase on last
 * window's verdict). The sampler's own records (last_*) are touched only
 * by the thread that holds `sampling`: its acquire CAS pairs with the
 * previous holder's release store, so each sampler sees the last one's
 * records.
 */
static _Atomic uint64_t window_end;
static _Atomic bool verdict;
static _Atomic int sampling;
static uint64_t last_wall, last_busy, last_own;

/* fork(): the child has one thread, and its process clock starts again.
 * A sampler of the parent that held `sampling` at the fork is gone: free
 * it, and start the records afresh (no verdict until two samples). */
static void load_fork_child(void)
{
	atomic_store_explicit(&sampling, 0, memory_order_relaxed);
	atomic_store_explicit(&window_end, 0, memory_order_relaxed);
	atomic_store_explicit(&verdict, false, memory_order_relaxed);
	last_wall = 0;
}

static void load_register_atfork(void)
{
	pthread_atfork(NULL, NULL, load_fork_child);
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

/* The machine's user + nice + system time in ns, from /proc/stat's first
 * line; false if it cannot be read. */
static bool machine_busy_ns(uint64_t *out)
{
	static long tck;
	if (tck == 0)
		tck = sysconf(_SC_CLK_TCK);
	if (tck <= 0)
		return false;
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	unsigned long long user, nice, sys;
	if (sscanf(buf, "cpu %llu %llu %llu", &user, &nice, &sys) != 3)
		return false;
	*out = (uint64_t)(user + nice + sys) * (1000000000ull / (uint64_t)tck);
	return true;
}

static uint64_t own_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned cpus_online(void)
{
	static unsigned n;
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 && c < 65536 ? (unsigned)c : 1;
	}
	return n;
}

bool canal__foreign_load(uint64_t now_ns)
{
	if (likely(now_ns < atomic_load_explicit(&window_end,
						 memory_order_relaxed)))
		return atomic_load_explicit(&verdict, memory_order_relaxed);
	int free_ = 0;
	if (!atomic_compare_exchange_strong_explicit(&sampling, &free_, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return atomic_load_explicit(&verdict, memory_order_relaxed);

	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, load_register_atfork);
	uint64_t busy, own = own_cpu_ns();
	bool v = false, ok = machine_busy_ns(&busy);
	/* A first sample (in this process: see load_fork_child), or
	 * clocks that went back: no verdict yet. */
	if (ok && last_wall != 0 && own >= last_own && busy >= last_busy &&
	    now_ns > last_wall)
		v = canal__foreign_verdict(busy - last_busy, own - last_own,
					   now_ns - last_wall, cpus_online());
	if (ok) {
		last_wall = now_ns;
		last_busy = busy;
		last_own = own;
	}
	atomic_store_explicit(&verdict, v, memory_order_relaxed);
	atomic_store_explicit(&window_end, now_ns + CANAL__FOREIGN_WINDOW_NS,
			      memory_order_relaxed);
	atomic_store_explicit(&sampling, 0, memory_order_release);
	return v;
}
