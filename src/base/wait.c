/* SPDX-License-Identifier: MIT */
/* wait.c - the out-of-line parts of the wait layer (wait.h). */
#include "base/wait.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <unistd.h>

void waitq_wake(struct canal_waitq *q, uint32_t count, bool shared)
{
	/* Release: pairs with the acquire read of seq in waitq_prepare(), so
	 * a waiter that reads the new key also sees the notifier's update. */
	atomic_fetch_add_explicit(&q->seq, 1, memory_order_release);
	canal__wake(&q->seq, count, shared);
}

uint32_t canal_yield_limit(void)
{
	/* Yielding pays when a few threads share a few cores; with many more
	 * sleepers than cores it only churns the run queues. */
	static _Atomic uint32_t limit;
	uint32_t l = atomic_load_explicit(&limit, memory_order_relaxed);
	if (__builtin_expect(l == 0, 0)) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		l = n > 0 && n < 1024 ? 2 * (uint32_t)n : 8;
		atomic_store_explicit(&limit, l, memory_order_relaxed);
	}
	return l;
}

bool canal_yield_phase(bool (*done)(void *), void *arg, uint64_t deadline_ns)
{
	const struct canal__parker *p = canal__parker_get();
	for (uint64_t t0 = canal_now_ns();;) {
		p->ops->yield(p->self);
		if (done(arg))
			return true;
		uint64_t now = canal_now_ns();
		if (now - t0 >= CANAL_YIELD_NS || now >= deadline_ns)
			return false;
	}
}
