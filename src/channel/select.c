/* SPDX-License-Identifier: MIT */
/*
 * select.c - a passive wait on a set of send and receive operations.
 *
 * Algorithm (one round):
 *  1. Poll: try each case once without blocking, from a random start (or in
 *     order when biased). The first that completes, or finds its channel
 *     closed, is the result.
 *  2. Register: for each case, prepare on the event count its operation
 *     waits on (receivers: recv_wq; senders: send_wq, or demand_wq on a
 *     synchronous channel) and, for a receive on a synchronous channel,
 *     announce the thread as a waiting receiver (sync_announce).
 *  3. Re-check every case's wait condition (seq_cst loads of the indices,
 *     the W2 of wait.h); if none holds, sleep on all the futex words at once
 *     (futex_waitv), until one is bumped or the deadline passes.
 *  4. Unregister; retract the announcements. A retraction that fails means
 *     a sender matched us and its element is coming: the select completes
 *     that case (it is committed). Should a second one fail too, its
 *     element becomes an orphan that the next receiver of that channel
 *     takes (see internal.h).
 *  5. If we were woken but complete nothing, go round again. If we were
 *     woken and complete a case, wake-ups meant for other cases are passed
 *     on (notify one on each other ready case), so a wake-one never gets
 *     lost in a select that went elsewhere.
 *
 * No lock is held at any time; the thread only sleeps while every
 * condition was false after registration (wait.h's protocol, per channel).
 */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

static _Thread_local uint64_t rng_state;

static uint32_t rng_next(void)
{
	uint64_t x = rng_state;
	if (unlikely(x == 0)) {
		x = canal_now_ns() ^ (uint64_t)(uintptr_t)&rng_state ^
		    0x9e3779b97f4a7c15ull;
		if (x == 0)
			x = 1;
	}
	/* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}

static struct canal_waitq *case_queue(const struct canal_case *c)
{
	if (c->op == CANAL_OP_RECV)
		return &c->ch->st->recv_wq;
	return c->ch->sync ? &c->ch->st->demand_wq : &c->ch->st->send_wq;
}

static bool case_ready(const struct canal_case *c)
{
	if (c->op == CANAL_OP_RECV)
		return ring_can_recv(c->ch);
	return c->ch->sync ? sync_can_send(c->ch) : ring_can_send(c->ch);
}

static int case_try(struct canal_case *c, bool wait_sender)
{
	return c->op == CANAL_OP_SEND
		       ? chan_try_send_one(c->ch, c->elt)
		       : chan_try_recv_one(c->ch, c->elt, wait_sender);
}

/* Poll every case once from start; index of the completed case or -1.
 * wait_sender: a receive on a synchronous channel waits briefly for a
 * sender that is waiting (a select that will not block); otherwise the
 * blocking phase announces the thread on every such channel at once, so
 * that their senders are woken together. */
static int poll_cases(struct canal_case *cases, size_t n, size_t start,
		      bool wait_sender)
{
	for (size_t j = 0; j < n; j++) {
		size_t i = start + j < n ? start + j : start + j - n;
		struct canal_case *c = &cases[i];
		if (!c->ch)
			continue;
		int r = case_try(c, wait_sender);
		if (r != -EAGAIN) {
			c->result = r;
			return (int)i;
		}
	}
	return -1;
}

/* Wake on each other ready case, passing on wake-ups we may have eaten. */
static void pass_on(struct canal_case *cases, size_t n, size_t done)
{
	for (size_t i = 0; i < n; i++) {
		if (i == done || !cases[i].ch || !case_ready(&cases[i]))
			continue;
		waitq_notify(case_queue(&cases[i]), 1, cases[i].ch->shared);
	}
}

/* For canal_yield_phase: has a notifier bumped one of the words? */
struct bumped_call {
	_Atomic uint32_t *const *words;
	const uint32_t *keys;
	unsigned n;
};

static bool any_bumped(void *arg)
{
	struct bumped_call *b = arg;
	/* Acquire: pairs with the release increment of waitq_wake, as the
	 * futex wait's own read of the word would. */
	for (unsigned i = 0; i < b->n; i++)
		if (atomic_load_explicit(b->words[i], memory_order_acquire) !=
		    b->keys[i])
			return true;
	return false;
}

EXPORT int canal_select(struct canal_case *cases, size_t n, int64_t timeout_ns,
			unsigned flags)
{
	if ((flags & ~(unsigned)CANAL_SELECT_BIASED) || (n && !cases) ||
	    n > CANAL_SELECT_MAX)
		return -EINVAL;
	size_t active = 0;
	for (size_t i = 0; i < n; i++) {
		struct canal_case *c = &cases[i];
		if (c->op != CANAL_OP_SEND && c->op != CANAL_OP_RECV)
			return -EINVAL;
		if (!c->ch)
			continue;
		if (!c->elt && c->ch->elt_size)
			return -EINVAL;
		active++;
	}
	uint64_t deadline = canal__deadline_from_timeout(timeout_ns);
	if (active == 0) {
		if (timeout_ns < 0)
			return -ENOENT;
		if (timeout_ns == 0)
			return -EAGAIN;
		const struct canal__parker *p = canal__parker_get();
		p->ops->sleep_until(p->self, deadline);
		return -ETIMEDOUT;
	}

	bool biased = flags & CANAL_SELECT_BIASED;
	_Atomic uint32_t *words[CANAL_SELECT_MAX];
	uint32_t keys[CANAL_SELECT_MAX];
	bool shared[CANAL_SELECT_MAX];
	struct canal_waitq *queues[CANAL_SELECT_MAX];
	bool announced[CANAL_SELECT_MAX];
	bool woken = false;
	unsigned busy = 0; /* rounds that found a case ready but completed none */

	for (;;) {
		if (busy) {
			/* A case looked ready (by the indices) but its operation
			 * did not complete: another thread is between its index
			 * CAS and its stamp store (a sender copying in). Back
			 * off as ring_claim_* do: if that thread was preempted,
			 * a hot loop here (and in every other select waiting on
			 * the channel) would keep it off the CPU. */
			if (busy < 7)
				for (unsigned i = 0; i < (1u << busy); i++)
					canal_cpu_relax();
			else
				sched_yield();
		}
		int done = poll_cases(cases, n, biased ? 0 : rng_next() % n,
				      timeout_ns == 0);
		if (done >= 0) {
			if (woken)
				pass_on(cases, n, (size_t)done);
			return done;
		}
		if (timeout_ns == 0)
			return -EAGAIN;
		if (canal_now_ns() >= deadline)
			return -ETIMEDOUT;

		/* Register on every queue (each queue once). */
		unsigned nq = 0;
		bool ready = false;
		for (size_t i = 0; i < n; i++) {
			announced[i] = false;
			if (!cases[i].ch)
				continue;
			struct canal_waitq *q = case_queue(&cases[i]);
			unsigned k;
			for (k = 0; k < nq && queues[k] != q; k++)
				;
			if (k == nq) {
				queues[nq] = q;
				words[nq] = &q->seq;
				shared[nq] = cases[i].ch->shared;
				keys[nq] = waitq_prepare(q);
				nq++;
			}
			if (cases[i].op == CANAL_OP_RECV && cases[i].ch->sync) {
				sync_announce(cases[i].ch);
				announced[i] = true;
			}
		}
		for (size_t i = 0; i < n && !ready; i++)
			ready = cases[i].ch && case_ready(&cases[i]);
		int w = 0;
		/* The yield phase (wait.h), unless threads far outnumber
		 * cores (waiters counts us: "others >= the limit", as in
		 * wait_for); a bumped word counts as a wake-up. */
		bool crowded = false;
		for (unsigned k = 0; k < nq && !crowded; k++)
			crowded = atomic_load_explicit(&queues[k]->waiters,
						       memory_order_relaxed) >
				  canal_yield_limit();
		struct bumped_call bc = { words, keys, nq };
		bool bumped = !ready && !crowded &&
			      canal_yield_phase(any_bumped, &bc, deadline);
		if (!ready && !bumped) {
			/* Shared channels: re-check every SHARED_RECHECK_NS,
			 * in case a notifier died before its wake-up. */
			uint64_t dl = deadline, now = canal_now_ns();
			for (unsigned k = 0; k < nq; k++)
				if (shared[k] && dl > now + SHARED_RECHECK_NS)
					dl = now + SHARED_RECHECK_NS;
			const struct canal__parker *p = canal__parker_get();
			w = p->ops->wait_many(p->self, words, keys, shared,
					      nq, dl);
			if (w == -ETIMEDOUT && dl != deadline)
				w = 0;
		}
		for (unsigned k = 0; k < nq; k++)
			waitq_finish(queues[k]);
		woken = bumped || (!ready && w == 0);
		busy = ready ? busy + (busy < 7) : 0;

		/* Retract the announcements on synchronous channels. */
		int committed = -1;
		for (size_t i = 0; i < n; i++) {
			if (!announced[i] || sync_retract(cases[i].ch))
				continue;
			if (committed < 0)
				committed = (int)i;
			else
				sync_make_orphan(cases[i].ch);
		}
		if (committed >= 0) {
			struct canal_case *c = &cases[committed];
			c->result = sync_recv_announced(c->ch, c->elt,
							CANAL_NO_DEADLINE, true);
			pass_on(cases, n, (size_t)committed);
			return committed;
		}
		if (w == -ETIMEDOUT) {
			/* Last poll: a case may have become ready at the end. */
			done = poll_cases(cases, n, biased ? 0 : rng_next() % n,
					  false);
			return done >= 0 ? done : -ETIMEDOUT;
		}
	}
}
