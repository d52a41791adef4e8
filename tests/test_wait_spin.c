/* SPDX-License-Identifier: MIT */
/*
 * test_wait_spin.c - the wait layer's spin phases against the number of
 * threads already asleep on the queue (base/wait.h, phases 1 and 2).
 *
 * The calling thread installs a parker that counts its calls and never
 * sleeps, and waits on a queue whose sleeper count (and spinner role) is
 * set by hand. The condition turns true at a chosen probe (the spin
 * phases' poll); ready() reads that same state, so a waiter that never
 * probes never sees it. Probe 10 falls in phase 1 (QUIET_SPINS = 64
 * polls, wait.c), probe 70 in phase 2 (SPIN_ROUNDS = 8 more). Below
 * canal__yield_limit() sleepers the waiter must meet the condition in
 * either phase without yielding or parking, release the spinner role if
 * it took it, and leave another holder's role alone; at the limit or
 * above (including a hostile count in a shared queue) it must not probe
 * at all, and parks. Private and shared queues alike. Each wait runs on
 * a fresh thread: the spin policy's miss counters are per thread
 * (canal__spin_outcome). Phase 2's cases come from a review of the
 * change (test_revspin_phase2): a guard put back to the spinner alone,
 * or a waiter clearing another's role, passed the phase-1 cases.
 */
#include "check.h"
#include "../src/base/park.h"
#include "../src/base/wait.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

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
	unsigned ready_at, probes, readies;
};

static bool probe(void *arg)
{
	struct cond_state *s = arg;
	return ++s->probes >= s->ready_at;
}

static bool ready(void *arg)
{
	struct cond_state *s = arg;
	s->readies++;
	return s->probes >= s->ready_at;
}

enum role { ROLE_FREE, ROLE_HELD };

struct run {
	uint32_t sleepers;
	bool shared;
	enum role role;
	uint32_t held;	       /* the other holder's role word (ROLE_HELD) */
	uint32_t spinners_end; /* the queue's role word after the wait */
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
	if (r->role == ROLE_HELD) {
		r->held = r->shared ? spin_lease_now()
				    : canal__fork_generation();
		atomic_store(&q.spinners, r->held);
	}
	canal__parker_install(&p);
	struct canal__wait_cond c = {
		.ready = ready, .probe = probe, .arg = &r->s,
		.kind = CANAL__WAIT_PLAIN, .hook = NULL,
	};
	r->rc = canal__wait(&q, r->shared, &c, CANAL_NO_DEADLINE);
	canal__parker_install(NULL);
	r->spinners_end = atomic_load(&q.spinners);
	/* The waiter's own registration, if it parked, is gone again. */
	CHECK_EQ(atomic_load(&q.waiters), r->sleepers);
	return NULL;
}

static struct run wait_with(uint32_t sleepers, bool shared, enum role role,
			    unsigned ready_at)
{
	struct run r = { .sleepers = sleepers, .shared = shared,
			 .role = role, .s = { .ready_at = ready_at } };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, one_wait, &r), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	return r;
}

/* canal__spin (a select's spin, without a queue): a probe that holds at
 * 10 or 70 ends it there, without yielding or parking; one that never
 * holds gets exactly phase 1 and phase 2's polls (64 + 8) and false;
 * after SPIN_MISS_LIMIT (4) such misses in a row the thread stops
 * spinning (no probe) but for one probe spin in SPIN_PROBE_EVERY (16),
 * and a success starts it again. A task never spins. */
static const struct canal__parker_ops task_ops = {
	.wait = c_wait,
	.wait_many = c_wait_many,
	.yield = c_yield,
	.sleep_until = c_sleep_until,
	.is_task = true,
};

static void *spin_checks(void *arg)
{
	(void)arg;
	struct counts n = { 0 };
	struct canal__parker p = { &counting_ops, &n };
	canal__parker_install(&p);
	struct cond_state s = { .ready_at = 10 };
	CHECK(canal__spin(probe, &s));
	CHECK_EQ(s.probes, 10u);
	s = (struct cond_state){ .ready_at = 70 };
	CHECK(canal__spin(probe, &s));
	CHECK_EQ(s.probes, 70u);
	for (unsigned miss = 0; miss < 4; miss++) {
		s = (struct cond_state){ .ready_at = 1000 };
		CHECK(!canal__spin(probe, &s));
		CHECK_EQ(s.probes, 72u);
	}
	/* Spins stopped: 15 calls without a probe, the 16th probes. */
	unsigned probing = 0, quiet = 0;
	for (unsigned k = 0; k < 16; k++) {
		s = (struct cond_state){ .ready_at = 1000 };
		CHECK(!canal__spin(probe, &s));
		if (s.probes)
			probing++;
		else
			quiet++;
	}
	CHECK_EQ(probing, 1u);
	CHECK_EQ(quiet, 15u);
	/* Probing until one pays: then spins again. */
	for (unsigned k = 0; k < 32; k++) {
		s = (struct cond_state){ .ready_at = 1 };
		if (canal__spin(probe, &s))
			break;
	}
	s = (struct cond_state){ .ready_at = 5 };
	CHECK(canal__spin(probe, &s));
	CHECK_EQ(s.probes, 5u);
	CHECK_EQ(n.waits + n.yields + n.sleeps, 0u);
	canal__parker_install(NULL);

	struct canal__parker t = { &task_ops, &n };
	canal__parker_install(&t);
	s = (struct cond_state){ .ready_at = 1 };
	CHECK(!canal__spin(probe, &s));
	CHECK_EQ(s.probes, 0u);
	canal__parker_install(NULL);
	return NULL;
}

int main(void)
{
	alarm(60);
	uint32_t limit = canal__yield_limit();
	CHECK(limit >= 2);

	/* Nobody asleep, one, and just below the limit: the spin meets the
	 * condition in phase 1 or in phase 2, the role free (taken and
	 * released) or held by another (spun without it, left alone). */
	uint32_t below[] = { 0, 1, limit - 1 };
	unsigned ready_at[] = { 10, 70 };
	for (unsigned sh = 0; sh < 2; sh++)
		for (unsigned i = 0; i < sizeof(below) / sizeof(below[0]); i++)
			for (unsigned k = 0; k < 2; k++)
				for (unsigned role = ROLE_FREE; role <= ROLE_HELD;
				     role++) {
					struct run r = wait_with(below[i], sh,
								 role,
								 ready_at[k]);
					CHECK_EQ(r.rc, 0);
					CHECK_EQ(r.s.probes, ready_at[k]);
					CHECK_EQ(r.n.waits, 0u);
					CHECK_EQ(r.n.yields, 0u);
					CHECK_EQ(r.spinners_end,
						 role == ROLE_HELD ? r.held
								   : 0u);
				}

	/* A crowd asleep, or a hostile count in a shared queue: no probe;
	 * the waiter parks (the counting parker returns at once, as a
	 * wake-up would) and releases the role it took for its yield
	 * phase. */
	uint32_t crowd[] = { limit, 4 * limit, 0x7fffffffu, 0xfffffffeu };
	for (unsigned sh = 0; sh < 2; sh++)
		for (unsigned i = 0; i < sizeof(crowd) / sizeof(crowd[0]); i++) {
			struct run r = wait_with(crowd[i], sh, ROLE_FREE, 10);
			CHECK_EQ(r.rc, 0);
			CHECK_EQ(r.s.probes, 0u);
			CHECK(r.s.readies >= 1);
			CHECK_EQ(r.n.waits, 1u);
			CHECK_EQ(r.spinners_end, 0u);
		}
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, spin_checks, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	return 0;
}
