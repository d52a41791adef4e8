/* SPDX-License-Identifier: MIT */
/*
 * test_wait_spin.c - the wait layer's spin phases against the number of
 * threads already asleep on the queue (base/wait.h, phases 1 and 2).
 *
 * The calling thread installs a parker that counts its calls and never
 * sleeps, and waits on a queue whose sleeper count is set by hand. The
 * condition turns true at its READY_AT-th probe (the spin phases' poll);
 * ready() reads that same state, so a waiter that never probes never sees
 * it. Below canal__yield_limit() sleepers the waiter must spin and meet
 * the condition without parking; at the limit or above it must not probe
 * at all, and parks. A spin that keeps failing is given up after a few
 * waits (canal__spin_outcome); the check: the first wait of a fresh
 * thread spins.
 */
#include "check.h"
#include "../src/base/park.h"
#include "../src/base/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define READY_AT 10u

struct counts {
	unsigned waits, yields, sleeps;
};

static int c_wait(void *self, _Atomic uint32_t *word, uint32_t key,
		  bool shared, uint64_t deadline_ns)
{
	(void)word, (void)key, (void)shared, (void)deadline_ns;
	((struct counts *)self)->waits++;
	return 0; /* as a wake-up: canal__wait returns 0 (retry) */
}

static int c_wait_many(void *self, _Atomic uint32_t *const *words,
		       const uint32_t *keys, const bool *shared, unsigned n,
		       uint64_t deadline_ns)
{
	(void)words, (void)keys, (void)shared, (void)n, (void)deadline_ns;
	((struct counts *)self)->waits++;
	return 0;
}

static void c_yield(void *self)
{
	((struct counts *)self)->yields++;
}

static void c_sleep_until(void *self, uint64_t deadline_ns)
{
	(void)deadline_ns;
	((struct counts *)self)->sleeps++;
}

static const struct canal__parker_ops counting_ops = {
	.wait = c_wait,
	.wait_many = c_wait_many,
	.yield = c_yield,
	.sleep_until = c_sleep_until,
};

struct cond_state {
	unsigned probes, readies;
};

static bool probe(void *arg)
{
	struct cond_state *s = arg;
	return ++s->probes >= READY_AT;
}

static bool ready(void *arg)
{
	struct cond_state *s = arg;
	s->readies++;
	return s->probes >= READY_AT;
}

struct run {
	uint32_t sleepers;
	int rc;
	struct counts n;
	struct cond_state s;
};

/* One wait on a fresh thread (the spin policy's counters are per thread). */
static void *one_wait(void *arg)
{
	struct run *r = arg;
	struct canal__parker p = { &counting_ops, &r->n };
	struct canal_waitq q = { 0 };
	atomic_store(&q.waiters, r->sleepers);
	canal__parker_install(&p);
	struct canal__wait_cond c = {
		.ready = ready, .probe = probe, .arg = &r->s,
		.kind = CANAL__WAIT_PLAIN, .hook = NULL,
	};
	r->rc = canal__wait(&q, false, &c, CANAL_NO_DEADLINE);
	canal__parker_install(NULL);
	/* The waiter's own registration, if it parked, is gone again. */
	CHECK_EQ(atomic_load(&q.waiters), r->sleepers);
	return NULL;
}

static struct run wait_with(uint32_t sleepers)
{
	struct run r = { .sleepers = sleepers };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, one_wait, &r), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	return r;
}

int main(void)
{
	uint32_t limit = canal__yield_limit();
	CHECK(limit >= 2);

	/* Nobody asleep, one, and just below the limit: the spin meets the
	 * condition; no yield, no park. */
	uint32_t below[] = { 0, 1, limit - 1 };
	for (unsigned i = 0; i < sizeof(below) / sizeof(below[0]); i++) {
		struct run r = wait_with(below[i]);
		CHECK_EQ(r.rc, 0);
		CHECK_EQ(r.s.probes, READY_AT);
		CHECK_EQ(r.n.waits, 0u);
		CHECK_EQ(r.n.yields, 0u);
	}

	/* A crowd asleep: no probe; the waiter parks (the counting parker
	 * returns at once, as a wake-up would). */
	uint32_t crowd[] = { limit, 4 * limit };
	for (unsigned i = 0; i < sizeof(crowd) / sizeof(crowd[0]); i++) {
		struct run r = wait_with(crowd[i]);
		CHECK_EQ(r.rc, 0);
		CHECK_EQ(r.s.probes, 0u);
		CHECK(r.s.readies >= 1);
		CHECK_EQ(r.n.waits, 1u);
	}
	return 0;
}
