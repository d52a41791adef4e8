/* SPDX-License-Identifier: MIT */
/*
 * park.c - the parker of each thread, the default (thread) parker on
 * futex(2) / futex_waitv(2), and canal__wake(). See park.h.
 */
#include "base/park.h"
#include "base/clock.h"
#include "base/compiler.h"
#include "base/syscall.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdalign.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
#endif

static struct timespec to_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u),
	};
	return ts;
}

/* park.h: kernel sleepers on process-private words, per bucket. */
static struct {
	alignas(CANAL_CACHELINE) _Atomic uint32_t n;
} private_sleepers[CANAL__SLEEP_BUCKETS];

static _Atomic uint32_t *sleepers_of(const _Atomic uint32_t *word)
{
	/* The cache line's number, mixed (Fibonacci hashing): most queues of
	 * a channel are on consecutive lines (a synchronous channel's demand
	 * and ack queues share one, so they share a bucket: a useless wake
	 * at most). The top CANAL__SLEEP_BUCKETS_LOG2 bits of the product. */
	_Static_assert(CANAL__SLEEP_BUCKETS_LOG2 >= 1 &&
			       CANAL__SLEEP_BUCKETS_LOG2 <= 16,
		       "bucket count out of range");
	uint64_t line = (uint64_t)(uintptr_t)word / CANAL_CACHELINE;
	return &private_sleepers[(line * 0x9E3779B97F4A7C15ull) >>
				 (64u - CANAL__SLEEP_BUCKETS_LOG2)]
			.n;
}

void canal__private_sleep_begin(_Atomic uint32_t *const *words,
				const bool *shared, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!shared[i])
			atomic_fetch_add_explicit(sleepers_of(words[i]), 1,
						  memory_order_seq_cst);
}

void canal__private_sleep_end(_Atomic uint32_t *const *words,
			      const bool *shared, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!shared[i])
			atomic_fetch_sub_explicit(sleepers_of(words[i]), 1,
						  memory_order_relaxed);
}

static int thread_wait(void *self, _Atomic uint32_t *word, uint32_t key,
		       bool shared, uint64_t deadline_ns)
{
	struct timespec ts, *tsp = NULL;
	int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);

	(void)self;
	if (deadline_ns != CANAL_NO_DEADLINE) {
		if (canal_now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		ts = to_timespec(deadline_ns);
		tsp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout. */
	canal__private_sleep_begin(&word, &shared, 1);
	long r = canal__syscall(SYS_futex, (uint32_t *)word, op, key, tsp,
				NULL, FUTEX_BITSET_MATCH_ANY);
	canal__private_sleep_end(&word, &shared, 1);
	if (r == -ETIMEDOUT)
		return -ETIMEDOUT;
	return 0; /* woken, EAGAIN (word changed) or EINTR: caller re-checks */
}

/* futex_waitv(2): struct futex_waitv from <linux/futex.h> (6.1 headers). */
static int thread_wait_many(void *self, _Atomic uint32_t *const *words,
			    const uint32_t *keys, const bool *shared,
			    unsigned n, uint64_t deadline_ns)
{
	struct futex_waitv wv[CANAL__WAIT_MANY_MAX];
	struct timespec ts, *tsp = NULL;
	static _Atomic int no_waitv;

	if (n == 0 || n > CANAL__WAIT_MANY_MAX)
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
			wv[i].flags = FUTEX_32 |
				      (shared[i] ? 0 : FUTEX_PRIVATE_FLAG);
			wv[i].__reserved = 0;
		}
		canal__private_sleep_begin(words, shared, n);
		long r = canal__syscall(SYS_futex_waitv, wv, n, 0, tsp,
					CLOCK_MONOTONIC, 0);
		canal__private_sleep_end(words, shared, n);
		if (r >= 0)
			return 0;
		if (r == -ETIMEDOUT)
			return -ETIMEDOUT;
		if (r != -ENOSYS)
			return 0; /* EAGAIN (a word changed), EINTR */
		atomic_store_explicit(&no_waitv, 1, memory_order_relaxed);
	}
	/* Kernels before 5.16: no vectored wait. Sleep on the first word with
	 * a short timeout and let the caller re-check all of them: still
	 * mostly passive (at most 1000 wake-ups a second). */
	uint64_t until = canal_now_ns() + 1000000u;
	if (until > deadline_ns)
		until = deadline_ns;
	int r = thread_wait(self, words[0], keys[0], shared[0], until);
	if (r == -ETIMEDOUT && until != deadline_ns)
		return 0;
	return r;
}

static void thread_yield(void *self)
{
	(void)self;
	canal__syscall(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

static void thread_sleep_until(void *self, uint64_t deadline_ns)
{
	(void)self;
	struct timespec ts = to_timespec(deadline_ns);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

const struct canal__parker_ops canal__thread_parker_ops = {
	.wait = thread_wait,
	.wait_many = thread_wait_many,
	.yield = thread_yield,
	.sleep_until = thread_sleep_until,
	.is_task = false,
};

static const struct canal__parker thread_parker = {
	.ops = &canal__thread_parker_ops,
	.self = NULL,
};

static _Thread_local const struct canal__parker *current_parker;

const struct canal__parker *canal__parker_get(void)
{
	const struct canal__parker *p = current_parker;
	return p ? p : &thread_parker;
}

void canal__parker_install(const struct canal__parker *p)
{
	current_parker = p;
}

static _Atomic(canal__local_waker_fn) local_waker;

void canal__set_local_waker(canal__local_waker_fn fn)
{
	atomic_store_explicit(&local_waker, fn, memory_order_release);
}

uint32_t canal__wake(_Atomic uint32_t *word, uint32_t count, bool shared)
{
	if (!shared) {
		canal__local_waker_fn fn = atomic_load_explicit(
			&local_waker, memory_order_acquire);
		if (fn) {
			uint32_t woken = fn(word, count);
			/* The tasks woken run when their loops get to them
			 * (a computing task holds its loop): a thread asleep
			 * on the word is woken too, one more than asked
			 * (its re-check may find nothing: a spurious
			 * return), so that it does not sleep beside the
			 * work (test_review_taskchan_busy_wake). */
			if (count != UINT32_MAX)
				count = woken >= count ? 1 : count - woken;
		}
	}
	/* No thread (or io_uring wait) sleeps on a private word of this
	 * word's bucket: nobody for FUTEX_WAKE to find (park.h, the
	 * pairing). */
	if (!shared && atomic_load_explicit(sleepers_of(word),
					    memory_order_seq_cst) == 0)
		return 0;
	int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	int n = count > INT_MAX ? INT_MAX : (int)count;

	long r = canal__syscall(SYS_futex, (uint32_t *)word, op, n, NULL, NULL,
				0);
	/* On a private word, while a runtime runs in this process, whoever
	 * FUTEX_WAKE found may be a task in an io_uring futex wait (a select
	 * over shared and private channels): counted as nobody (park.h).
	 * Loaded after the wake: a task the wake found was queued after its
	 * runtime installed the waker (the kernel's bucket lock orders it). */
	if (r <= 0 || (!shared && atomic_load_explicit(&local_waker,
						       memory_order_acquire)))
		return 0;
	return (uint32_t)r;
}
