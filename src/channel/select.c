/* SPDX-License-Identifier: MIT */
/*
 * select.c - a passive wait on a set of send and receive operations.
 *
 * Algorithm (one round):
 *  1. Poll: try each case once without blocking, in a random order (or in
 *     array order when biased). The first that completes, or finds its channel
 *     closed, is the result.
 *  1b. Spin: when every case is on a buffered channel and no other thread
 *     is registered on their queues, poll the cases read-only for a few
 *     microseconds (canal__spin, wait.h) and go back to 1 as soon as one
 *     is ready. Nothing is registered yet, so nobody owes us a wake-up.
 *  2. Register: for a receive on a synchronous channel, announce the
 *     thread as a waiting receiver (canal__sync_announce); then, for each
 *     case, prepare on the event count its operation waits on (receivers:
 *     recv_wq; senders: send_wq, or demand_wq on a synchronous channel).
 *     Announcing first keeps the select from bumping a word it then waits
 *     on (a send and a receive case on one synchronous channel), and a
 *     send case on a channel where we announced counts as ready only for
 *     demand beyond our own announcements.
 *  3. Re-check every case's wait condition (seq_cst loads of the indices,
 *     the W2 of wait.h); if none holds, wait on all the words at once
 *     (canal__wait_many: the yield phase, then the parker's wait on many
 *     words), until one is bumped or the deadline passes.
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
#include <stdint.h>

static _Thread_local uint64_t rng_state;

/* The thread's generator state, seeded at its first use; a poll draws
 * from a copy (rng_next) and stores it back once (rng_put): the draws of
 * a 4-case shuffle cost 27 instructions each through the thread-local
 * word, a third of a poll's own work (callgrind, select_rx on tasks). */
static inline uint64_t rng_get(void)
{
	uint64_t x = rng_state;
	if (unlikely(x == 0)) {
		x = canal_now_ns() ^ (uint64_t)(uintptr_t)&rng_state ^
		    0x9e3779b97f4a7c15ull;
		if (x == 0)
			x = 1;
	}
	return x;
}

static inline void rng_put(uint64_t x)
{
	rng_state = x;
}

static inline uint32_t rng_next(uint64_t *state)
{
	/* xorshift64* */
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}

static struct canal_waitq *case_queue(const struct canal_case *c)
{
	if (c->op == CANAL_OP_RECV)
		return &c->ch->st->recv_wq;
	return c->ch->sync ? &c->ch->st->demand_wq : &c->ch->st->send_wq;
}

/* own_demand: announcements this select made on the case's channel (a
 * send case on a synchronous channel must not count them as receivers). */
static bool case_ready(const struct canal_case *c, int64_t own_demand)
{
	if (c->op == CANAL_OP_RECV)
		return canal__ring_can_recv(c->ch);
	if (!c->ch->sync)
		return canal__ring_can_send(c->ch);
	return atomic_load_explicit(&c->ch->st->demand, memory_order_seq_cst) >
		       0 ||
	       atomic_load_explicit(&c->ch->st->select_demand,
				    memory_order_seq_cst) > own_demand ||
	       chan_closed(c->ch);
}

struct spin_cases {
	const struct canal_case *cases;
	size_t n;
};

/* canal__spin's probe: is any case ready (read-only loads)? */
static bool any_case_ready(void *arg)
{
	const struct spin_cases *s = arg;
	for (size_t i = 0; i < s->n; i++)
		if (s->cases[i].ch && case_ready(&s->cases[i], 0))
			return true;
	return false;
}

/*
 * Whether a select may spin before it registers: every case on a buffered
 * channel (a synchronous receive needs the announcement a spin would
 * delay: its sender waits for it), and no other thread registered on any
 * of its queues (several selects waiting on the same channels, as in
 * select_both, spin against each other and against the threads they wait
 * for: 0.104 -> 0.141 s there at capacity 1, while one select's spin took
 * select_rx at capacity 1 from 0.259 to 0.071 s; AMD EPYC, 2026-11-30).
 * Relaxed loads: a hint; a wrong guess costs one spin or one yield.
 */
static bool spin_alone(const struct canal_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct canal_case *c = &cases[i];
		if (!c->ch)
			continue;
		if (c->ch->sync ||
		    atomic_load_explicit(&case_queue(c)->waiters,
					 memory_order_relaxed) != 0)
			return false;
	}
	return true;
}

static int case_try(struct canal_case *c, bool wait_sender)
{
	/* An empty buffered thread channel: the try's answer (-EAGAIN)
	 * from two loads, without the call (a receive's try costs about
	 * 140 instructions to say it; a select_rx poll on 4 channels made
	 * 2.6 such tries a round: callgrind, tasks, capacity 1). */
	if (c->op == CANAL_OP_RECV && !c->ch->sync && !c->ch->shared &&
	    canal__ring_recv_idle(c->ch))
		return -EAGAIN;
	return c->op == CANAL_OP_SEND
		       ? canal__try_send_one(c->ch, c->elt)
		       : canal__try_recv_one(c->ch, c->elt, wait_sender);
}

/* Poll every case once, in array order when biased, else in a uniformly
 * random order (a Fisher-Yates shuffle, as Go's pollorder): the first
 * ready case of a random permutation is uniform among the ready ones. A
 * random start alone is not (channel.h's promise): a ready case after k
 * cases that are not ready (or NULL) would be chosen for k + 1 starts.
 * Index of the completed case or -1.
 * wait_sender: a receive on a synchronous channel waits briefly for a
 * sender that is waiting (a select that will not block); otherwise the
 * blocking phase announces the thread on every such channel at once, so
 * that their senders are woken together. */
static int poll_cases(struct canal_case *cases, size_t n, bool biased,
		      bool wait_sender)
{
	uint8_t order[CANAL_SELECT_MAX];
	size_t start = 0;
	bool shuffled = !biased && n > 2;
	if (!biased) {
		uint64_t rs = rng_get();
		if (shuffled) {
			for (size_t i = 0; i < n; i++) {
				/* j uniform in [0, i] (multiply-shift:
				 * no division; bias below 2^-25). */
				size_t j = (size_t)(((uint64_t)rng_next(&rs) *
						     (i + 1)) >> 32);
				if (j != i)
					order[i] = order[j];
				order[j] = (uint8_t)i;
			}
		} else {
			start = rng_next(&rs) % n; /* n <= 2: uniform already */
		}
		rng_put(rs);
	}
	for (size_t j = 0; j < n; j++) {
		size_t i = shuffled	    ? order[j]
			   : start + j < n ? start + j
					    : start + j - n;
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
		if (i == done || !cases[i].ch || !case_ready(&cases[i], 0))
			continue;
		waitq_notify(case_queue(&cases[i]), 1, cases[i].ch->shared);
	}
}

/* Announcements of this select on ch (receive cases on a synchronous
 * channel), for a send case on ch. */
static int64_t own_announcements(const struct canal_case *cases,
				 const bool *announced, size_t n,
				 const struct canal_chan *ch)
{
	int64_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += announced[i] && cases[i].ch == ch;
	return k;
}

CANAL_EXPORT int canal_select(struct canal_case *cases, size_t n, int64_t timeout_ns,
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
	uint32_t keys[CANAL_SELECT_MAX];
	bool shared[CANAL_SELECT_MAX];
	struct canal_waitq *queues[CANAL_SELECT_MAX];
	bool announced[CANAL_SELECT_MAX];
	/* A send case on a synchronous channel: its waiting sender's token
	 * (canal__sync_sender_waits). */
	int sender_token[CANAL_SELECT_MAX];
	bool woken = false;
	/* Rounds that found a case ready but completed none: another thread
	 * is between its index CAS and its stamp store (a sender copying in).
	 * Snooze as the ring's claimers do: if that thread was preempted, a
	 * hot loop here (and in every other select waiting on the channel)
	 * would keep it off the CPU. */
	bool busy = false;
	/* The last round's spin saw a case ready (the same index test that
	 * makes a registered round busy). */
	bool spun = false;
	struct canal__snooze snooze = CANAL__SNOOZE_INIT;

	for (;;) {
		if (busy)
			canal__snooze(&snooze);
		else
			snooze = (struct canal__snooze)CANAL__SNOOZE_INIT;
		int done = poll_cases(cases, n, biased, timeout_ns == 0);
		if (done >= 0) {
			if (woken)
				pass_on(cases, n, (size_t)done);
			return done;
		}
		if (timeout_ns == 0)
			return -EAGAIN;
		/* No clock read without a deadline: a task's select that
		 * parks every round spent 6 % of its CPU time here (perf,
		 * select_rx at capacity 1 on tasks). */
		if (deadline != CANAL_NO_DEADLINE && canal_now_ns() >= deadline)
			return -ETIMEDOUT;
		/* A spin that saw a case ready, then a poll that could not
		 * complete it: the case is held (a reserved or borrowed slot,
		 * a claimer preempted before its stamp store). Busy, as a
		 * registered round that finds it ready: snooze, then register;
		 * spinning again would loop hot for as long as it is held
		 * (test_review_select_spin_hot). */
		if (spun) {
			spun = false;
			busy = true;
			continue;
		}
		/* A short spin before registering (wait.h, canal__spin): the
		 * registration writes a word on every case's channel, and a
		 * yield is a system call, for an element that often comes
		 * within a microsecond from a sender on the other CPU. */
		struct spin_cases sc = { cases, n };
		if (!busy && spin_alone(cases, n) &&
		    canal__spin(any_case_ready, &sc)) {
			spun = true;
			continue;
		}

		/* Announce on synchronous channels, then register on every
		 * queue (each queue once). */
		for (size_t i = 0; i < n; i++) {
			announced[i] = cases[i].ch && cases[i].op == CANAL_OP_RECV &&
				       cases[i].ch->sync;
			if (announced[i])
				canal__sync_announce(cases[i].ch, true);
		}
		/* A send case on a synchronous channel counts as a waiting
		 * sender while the select waits, as a blocking send does
		 * (canal__sync_take_demand): a canal_try_recv then announces
		 * itself and waits briefly for our element (sync_try_recv),
		 * as canal_try_send meets a select waiting to receive.
		 * Seq_cst, before the re-check of demand below: a try_recv
		 * that reads the count as 0 comes earlier in the total
		 * order, and one that reads it counted announces (a seq_cst
		 * RMW of demand, then a notify of demand_wq) which our
		 * re-check sees or our wait is woken by. */
		for (size_t i = 0; i < n; i++)
			if (cases[i].ch && cases[i].op == CANAL_OP_SEND &&
			    cases[i].ch->sync)
				sender_token[i] =
					canal__sync_sender_waits(cases[i].ch);
		unsigned nq = 0;
		for (size_t i = 0; i < n; i++) {
			if (!cases[i].ch)
				continue;
			struct canal_waitq *q = case_queue(&cases[i]);
			unsigned k;
			for (k = 0; k < nq && queues[k] != q; k++)
				;
			if (k == nq) {
				queues[nq] = q;
				shared[nq] = cases[i].ch->shared;
				keys[nq] = waitq_prepare(q);
				nq++;
			}
		}
		bool ready = false;
		for (size_t i = 0; i < n && !ready; i++) {
			const struct canal_case *c = &cases[i];
			ready = c->ch &&
				case_ready(c, c->op == CANAL_OP_SEND
						      ? own_announcements(
								cases, announced,
								n, c->ch)
						      : 0);
		}
		int w = 0;
		if (!ready) {
			/* The yield phase unless threads far outnumber cores
			 * (waiters counts us: "others >= the limit", as in
			 * canal__wait). */
			bool crowded = false;
			for (unsigned k = 0; k < nq && !crowded; k++)
				crowded = atomic_load_explicit(
						  &queues[k]->waiters,
						  memory_order_relaxed) >
					  canal__yield_limit();
			w = canal__wait_many(queues, keys, shared, nq, crowded,
					     deadline);
		}
		for (unsigned k = 0; k < nq; k++)
			waitq_finish(queues[k]);
		for (size_t i = 0; i < n; i++)
			if (cases[i].ch && cases[i].op == CANAL_OP_SEND &&
			    cases[i].ch->sync)
				canal__sync_sender_done(cases[i].ch,
							sender_token[i]);
		woken = !ready && w == 0;
		busy = ready;

		/* Retract the announcements on synchronous channels. */
		int committed = -1;
		for (size_t i = 0; i < n; i++) {
			if (!announced[i] ||
			    canal__sync_retract(cases[i].ch, true))
				continue;
			if (committed < 0)
				committed = (int)i;
			else
				canal__sync_make_orphan(cases[i].ch);
		}
		if (committed >= 0) {
			struct canal_case *c = &cases[committed];
			int r = canal__sync_recv_announced(c->ch, c->elt,
							   deadline, true);
			pass_on(cases, n, (size_t)committed);
			if (r == -ETIMEDOUT && canal_now_ns() >= deadline)
				return -ETIMEDOUT; /* its unit came back */
			if (r == -ETIMEDOUT) {
				/* Freed before the deadline (a unit came
				 * back): no element is coming to this case;
				 * go round the cases again. */
				woken = false;
				continue;
			}
			c->result = r;
			return committed;
		}
		if (w == -ETIMEDOUT) {
			/* Last poll: a case may have become ready at the end. */
			done = poll_cases(cases, n, biased, false);
			return done >= 0 ? done : -ETIMEDOUT;
		}
	}
}
