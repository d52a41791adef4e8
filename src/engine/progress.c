/* SPDX-License-Identifier: MIT */
/*
 * engine/progress.c - the session lock and the progress thread (the
 * session option progress = "thread", or $CANAL_ENGINE_PROGRESS=thread).
 *
 * The thread makes progress while the caller computes: a rendezvous
 * answered, a large message copied, credits returned, a window pushed,
 * without the caller inside canal_engine_wait/test. It sleeps (futex) when
 * the session has no work: no request incomplete, no piece queued, no byte
 * accepted by a driver but not yet sent.
 *
 * The lock. One word, 0 free / 1 held, taken by exchange with acquire and
 * released by a store with release: everything a holder wrote is seen by
 * the next holder. Holders keep it for one call or one round of progress
 * (microseconds); a waiter spins with pauses, then yields the CPU (the
 * holder may be preempted: with two vCPUs, spinning on would only delay
 * it). No futex here: a sleeping lock would put a 20-45 us futex wake-up
 * on this VM in the caller's path whenever the thread held it.
 *
 * Sleeping and waking (invariants and the ordering pairs):
 *  - The thread sleeps in two cases: the session has no work (decided
 *    under the lock: has_work() false), or a caller is inside
 *    canal_engine_wait() (e->waiters > 0, decided without the lock: that
 *    caller polls itself; two pollers would share the CPUs for nothing,
 *    and on a machine with more threads than cores a thread that sleeps is
 *    scheduled sooner once woken). Either way it first stores
 *    pt->sleeping = 1 (seq_cst), reads key = pt->seq, checks its reason
 *    again, and only then waits on pt->seq while it still equals key.
 *  - Every public call ends in canal__engine_unlock(): under the lock, if
 *    it reads pt->sleeping set (seq_cst), no caller waits and has_work(),
 *    it clears sleeping and increments seq (release), then releases the
 *    lock and wakes the word.
 *    Either the thread's wait starts after the increment (seq != key: it
 *    returns at once) or it already waits (the wake reaches it): the futex
 *    contract.
 *  - No work: the thread's check and the caller's are both under the lock,
 *    which orders them. A waiter: the caller decrements e->waiters (seq_cst)
 *    then reads pt->sleeping; the thread stores sleeping then reads
 *    waiters: a Dekker pair in seq_cst, so either the thread sees the
 *    count at zero (and does not sleep) or the caller sees it asleep (and
 *    wakes it, if work is left). No wake-up is lost. Work never appears
 *    outside a public call or a round of the thread itself (peers' packets
 *    wait in the driver until someone polls).
 *  - stop is set under the lock with the same wake, then the thread is
 *    joined: it re-checks stop each time it holds the lock.
 *
 * Backing off while work is pending but nothing happens (a peer computing):
 * polls without a pause for the first rounds, then with pauses for
 * SPIN_NS, then yields the CPU until YIELD_NS, then sleeps in steps growing
 * from NAP_MIN_NS to NAP_MAX_NS (so a long wait costs little CPU; an arrival
 * during a nap is seen within NAP_MAX_NS). Any event starts over.
 */
#define _GNU_SOURCE
#include "internal.h"

#include "schedule/schedule.h"
#include "transfer/driver.h"

#include "base/park.h"
#include "base/spin.h"

#include <canal/base.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOCK_SPINS 128
#define SPIN_NS (50u * 1000)
#define YIELD_NS (1000u * 1000)
#define NAP_MIN_NS (10u * 1000)
#define NAP_MAX_NS (500u * 1000)

struct canal__progress {
	pthread_t thread;
	_Atomic uint32_t seq; /* futex word: moved on each wake */
	_Atomic uint32_t sleeping; /* 1 from just before a wait to a wake */
	bool stop;            /* under the lock */
};

void canal__engine_lock_slow(struct canal_engine *e)
{
	unsigned spins = 0;
	for (;;) {
		if (atomic_load_explicit(&e->lock, memory_order_relaxed) == 0 &&
		    atomic_exchange_explicit(&e->lock, 1,
					     memory_order_acquire) == 0)
			return;
		if (++spins < LOCK_SPINS)
			canal__cpu_relax();
		else
			sched_yield();
	}
}

static bool try_lock(struct canal_engine *e)
{
	return atomic_load_explicit(&e->lock, memory_order_relaxed) == 0 &&
	       atomic_exchange_explicit(&e->lock, 1, memory_order_acquire) ==
		       0;
}

static void release(struct canal_engine *e)
{
	atomic_store_explicit(&e->lock, 0, memory_order_release);
}

/* Whether the thread has anything to do (under the lock). */
static bool has_work(const struct canal_engine *e)
{
	if (e->undone)
		return true;
	for (int gi = 0; gi < e->size; gi++) {
		const struct canal__gate *g = &e->gates[gi];
		if (gi == e->rank || g->error || !g->drv)
			continue;
		/* (Credits owed below a quarter of the window are not work:
		 * they go back once a quarter is owed, as a queued piece.) */
		if (canal__gate_queued(g))
			return true;
		if (!g->drv->caps.flush_noop && !g->drv->ops->idle(g->drv))
			return true;
	}
	return false;
}

/* Under the lock: whether the thread must be woken; the wake itself
 * (a system call, and on this VM an inter-processor interrupt) is made
 * after the lock is released, so that the woken thread does not find it
 * held. */
static bool wake_begin(struct canal__progress *pt)
{
	atomic_store_explicit(&pt->sleeping, 0, memory_order_relaxed);
	/* Seq_cst: canal__wake's skip test (base/park.h) comes after it. */
	atomic_fetch_add_explicit(&pt->seq, 1, memory_order_seq_cst);
	return true;
}

static void wake_end(struct canal__progress *pt)
{
	canal__wake(&pt->seq, 1, false);
}

void canal__engine_unlock_slow(struct canal_engine *e)
{
	struct canal__progress *pt = e->pt;
	bool w = atomic_load(&pt->sleeping) && !atomic_load(&e->waiters) &&
		 has_work(e) && wake_begin(pt);
	release(e);
	if (w)
		wake_end(pt);
}

static void nap(uint64_t ns)
{
	struct timespec ts = { 0, (long)ns };
	nanosleep(&ts, NULL);
}

static void *progress_main(void *arg)
{
	struct canal_engine *e = arg;
	struct canal__progress *pt = e->pt;
	const struct canal__parker *pk = canal__parker_get();
	unsigned idle = 0, busy = 0;
	uint64_t idle_since = 0, nap_ns = NAP_MIN_NS;
	for (;;) {
		if (atomic_load(&e->waiters)) {
			atomic_store(&pt->sleeping, 1);
			uint32_t key = atomic_load(&pt->seq);
			if (atomic_load(&e->waiters))
				pk->ops->wait(pk->self, &pt->seq, key, false,
					      CANAL_NO_DEADLINE);
			atomic_store(&pt->sleeping, 0);
			idle = 0;
			continue;
		}
		if (!try_lock(e)) {
			/* A caller holds it, for one call: pause, and after a
			 * while give the CPU away (it may be waiting for it). */
			if (++busy < LOCK_SPINS)
				canal__cpu_relax();
			else
				sched_yield();
			continue;
		}
		busy = 0;
		if (pt->stop) {
			release(e);
			return NULL;
		}
		if (!has_work(e)) {
			atomic_store(&pt->sleeping, 1);
			uint32_t key = atomic_load(&pt->seq);
			release(e);
			pk->ops->wait(pk->self, &pt->seq, key, false,
				      CANAL_NO_DEADLINE);
			atomic_store(&pt->sleeping, 0);
			idle = 0;
			continue;
		}
		int n = canal__engine_progress_once(e);
		release(e);
		if (n > 0) {
			idle = 0;
			nap_ns = NAP_MIN_NS;
			continue;
		}
		if (idle++ == 0) {
			idle_since = canal_now_ns();
			continue;
		}
		if (idle < 64)
			continue;
		uint64_t waited = canal_now_ns() - idle_since;
		if (waited < SPIN_NS) {
			canal__cpu_relax();
		} else if (waited < YIELD_NS) {
			sched_yield();
		} else {
			nap(nap_ns);
			if (nap_ns < NAP_MAX_NS)
				nap_ns *= 2;
		}
	}
}

int canal__progress_start(struct canal_engine *e)
{
	struct canal__progress *pt = calloc(1, sizeof *pt);
	if (!pt)
		return -ENOMEM;
	e->pt = pt;
	int err = pthread_create(&pt->thread, NULL, progress_main, e);
	if (err) {
		e->pt = NULL;
		free(pt);
		return -err;
	}
	return 0;
}

void canal__progress_stop(struct canal_engine *e)
{
	struct canal__progress *pt = e->pt;
	if (!pt)
		return;
	canal__engine_lock_slow(e);
	pt->stop = true;
	wake_begin(pt);
	release(e);
	wake_end(pt);
	pthread_join(pt->thread, NULL);
	e->pt = NULL;
	free(pt);
}
