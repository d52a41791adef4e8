/* SPDX-License-Identifier: MIT */
/*
 * wait.c - the default parker: futex(2) for one word, futex_waitv(2) (Linux
 * 5.16+) for several; deadlines on CLOCK_MONOTONIC.
 */
#include "wait.h"

#include <canal/channel.h>

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
#endif

__attribute__((visibility("default"))) uint64_t canal_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t canal_deadline_from_timeout(int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return CANAL_NO_DEADLINE;
	uint64_t now = canal_now_ns();
	if ((uint64_t)timeout_ns > CANAL_NO_DEADLINE - 1 - now)
		return CANAL_NO_DEADLINE - 1;
	return now + (uint64_t)timeout_ns;
}

static struct timespec to_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u),
	};
	return ts;
}

static int futex_parker_wait(_Atomic uint32_t *word, uint32_t key,
			     bool shared, uint64_t deadline_ns)
{
	struct timespec ts, *tsp = NULL;
	int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);

	if (deadline_ns != CANAL_NO_DEADLINE) {
		if (canal_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		ts = to_timespec(deadline_ns);
		tsp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout. */
	long r = syscall(SYS_futex, (uint32_t *)word, op, key, tsp, NULL,
			 FUTEX_BITSET_MATCH_ANY);
	if (r == -1 && errno == ETIMEDOUT)
		return -ETIMEDOUT;
	return 0; /* woken, EAGAIN (word changed) or EINTR: caller re-checks */
}

/* futex_waitv(2): struct futex_waitv from <linux/futex.h> (6.1 headers). */
static int futex_parker_wait_many(_Atomic uint32_t *const *words,
				  const uint32_t *keys, const bool *shared,
				  unsigned n, uint64_t deadline_ns)
{
	struct futex_waitv wv[CANAL_SELECT_MAX];
	struct timespec ts, *tsp = NULL;
	static _Atomic int no_waitv;

	if (n == 0 || n > CANAL_SELECT_MAX)
		return -EINVAL;
	if (deadline_ns != CANAL_NO_DEADLINE) {
		if (canal_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		ts = to_timespec(deadline_ns);
		tsp = &ts;
	}
	if (!atomic_load_explicit(&no_waitv, memory_order_relaxed)) {
		for (unsigned i = 0; i < n; i++) {
			wv[i].val = keys[i];
			wv[i].uaddr = (uint64_t)(uintptr_t)words[i];
			wv[i].flags = FUTEX_32 | (shared[i] ? 0 : FUTEX_PRIVATE_FLAG);
			wv[i].__reserved = 0;
		}
		long r = syscall(SYS_futex_waitv, wv, n, 0, tsp,
				 CLOCK_MONOTONIC);
		if (r >= 0)
			return 0;
		if (errno == ETIMEDOUT)
			return -ETIMEDOUT;
		if (errno != ENOSYS)
			return 0; /* EAGAIN (a word changed), EINTR */
		atomic_store_explicit(&no_waitv, 1, memory_order_relaxed);
	}
	/* Kernels before 5.16: no vectored wait. Sleep on the first word with
	 * a short timeout and let the caller re-check all of them: still
	 * mostly passive (at most 1000 wake-ups a second). */
	uint64_t until = canal_now_ns() + 1000000u;
	if (until > deadline_ns)
		until = deadline_ns;
	int r = futex_parker_wait(words[0], keys[0], shared[0], until);
	if (r == -ETIMEDOUT && until != deadline_ns)
		return 0;
	return r;
}

static void futex_parker_wake(_Atomic uint32_t *word, uint32_t count,
			      bool shared)
{
	int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	int n = count > INT_MAX ? INT_MAX : (int)count;

	syscall(SYS_futex, (uint32_t *)word, op, n, NULL, NULL, 0);
}

static const struct canal_parker futex_parker = {
	.wait = futex_parker_wait,
	.wait_many = futex_parker_wait_many,
	.wake = futex_parker_wake,
};

const struct canal_parker *canal_parker_current = &futex_parker;

void waitq_wake(struct canal_waitq *q, uint32_t count, bool shared)
{
	/* Release: pairs with the acquire read of seq in waitq_prepare(), so
	 * a waiter that reads the new key also sees the notifier's update. */
	atomic_fetch_add_explicit(&q->seq, 1, memory_order_release);
	canal_parker_current->wake(&q->seq, count, shared);
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
	for (uint64_t t0 = canal_now_ns();;) {
		sched_yield();
		if (done(arg))
			return true;
		uint64_t now = canal_now_ns();
		if (now - t0 >= CANAL_YIELD_NS || now >= deadline_ns)
			return false;
	}
}
