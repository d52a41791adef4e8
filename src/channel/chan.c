/* SPDX-License-Identifier: MIT */
/*
 * chan.c - channel creation, the ring, send/recv (blocking, try, timed),
 * batches and single copy. The layout, invariants and memory-ordering
 * pairs are described in internal.h; the wait protocol in wait.h.
 *
 * Fast paths first: an uncontended send or receive is one load of a slot
 * stamp, one CAS of an index, a copy, one release store of the stamp and one
 * load of the other side's waiter count (no syscall when nobody sleeps).
 */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Busy-wait budget before parking: 2^0 + ... + 2^(SPIN_ROUNDS-1) pauses,
 * a few microseconds, shorter than a futex round trip (~9 us here). */
#define SPIN_ROUNDS 8


/* ------------------------------------------------------------------ */
/* Backoff while the other side is between its index CAS and its stamp */
/* store (bounded: it is running, or preempted and then we yield).     */
/* ------------------------------------------------------------------ */

struct backoff {
	unsigned step;
	uint64_t pos;	/* the stuck position */
	uint64_t since; /* when we started waiting on it (shared channels) */
};

/* Time spent on one stuck slot before a shared channel suspects that its
 * claimer died (see shared.c). */
#define REPAIR_CHECK_NS 1000000u

static void backoff_snooze(struct canal_chan *ch, struct backoff *b,
			   uint64_t pos)
{
	if (b->pos != pos) {
		/* A new slot: spin again, but keep counting the time this
		 * operation has been stuck (since), so that a damaged ring
		 * costs one repair delay, not one per slot. */
		b->pos = pos;
		b->step = 0;
	}
	if (b->step < 6) {
		for (unsigned i = 0; i < (1u << b->step); i++)
			canal_cpu_relax();
		b->step++;
		return;
	}
	if (likely(!ch->shared)) {
		sched_yield();
		return;
	}
	uint64_t now = canal_now_ns();
	if (!b->since)
		b->since = now;
	if (now - b->since < REPAIR_CHECK_NS) {
		sched_yield();
		return;
	}
	chan_repair_slot(ch, pos, now - b->since);
	usleep(100); /* a peer is stopped or dead: do not burn the CPU */
}

static inline void set_owner(struct canal_chan *ch, uint64_t pos,
			     unsigned role)
{
	uint64_t owner = ((uint64_t)chan_self_pid() << 32) |
			 ((pos & 0x7fffffffu) << 1) | role;
	atomic_store_explicit(&slot_at(ch, pos)->owner[0], owner,
			      memory_order_release);
}

/* ------------------------------------------------------------------ */
/* Ring primitives                                                      */
/* ------------------------------------------------------------------ */

/*
 * After losing the CAS on tail (head) to another sender (receiver): wait
 * 2^step PAUSEs, step growing to CAS_BACKOFF_MAX, before trying again.
 * Retrying at once makes the line bounce between the contenders, each
 * retry a miss that the winner's next claim must take back; backing off
 * lets the winner claim a few positions in a row. Measured on a 2-vCPU VM,
 * capacity 1M, 4 senders (mpsc), 15 interleaved runs: 32.7 -> 29.2 ns a
 * message; 4 senders and 4 receivers (mpmc) 37.9 -> 29.6 ns. The bound is
 * crossbeam's (64 PAUSEs, under a microsecond).
 */
#define CAS_BACKOFF_MAX 6u

static inline void cas_backoff(unsigned *step)
{
	for (unsigned i = 0; i < (1u << *step); i++)
		canal_cpu_relax();
	if (*step < CAS_BACKOFF_MAX)
		(*step)++;
}

long ring_claim_send(struct canal_chan *ch, size_t n, uint64_t *pos_out)
{
	struct backoff b = { 0, UINT64_MAX, 0 };
	unsigned ck = 0;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);

	for (;;) {
		if (unlikely(t & TAIL_CLOSED))
			return -EPIPE;
		uint64_t pos = t >> 1;
		struct canal_slot_hdr *s = slot_at(ch, pos);
		uint64_t st = atomic_load_explicit(&s->stamp,
						   memory_order_acquire);

		if (likely(st == stamp_for(ch, pos, STAMP_FREE))) {
			size_t k = 1;
			while (k < n && k < ch->ring &&
			       atomic_load_explicit(&slot_at(ch, pos + k)->stamp,
						    memory_order_acquire) ==
				       stamp_for(ch, pos + k, STAMP_FREE))
				k++;
			/* seq_cst: the "N1" of the wait protocol for
			 * receivers, whose condition reads tail. */
			if (atomic_compare_exchange_weak_explicit(
				    &ch->st->tail, &t, t + ((uint64_t)k << 1),
				    memory_order_seq_cst, memory_order_relaxed)) {
				if (unlikely(ch->shared))
					for (size_t i = 0; i < k; i++)
						set_owner(ch, pos + i, 0);
				*pos_out = pos;
				return (long)k;
			}
			cas_backoff(&ck);
			continue;
		}
		uint64_t stamp_pos = (st >> 2) + ring_index(ch, pos);
		if (stamp_pos < pos) {
			/* The slot still holds position pos - ring. */
			uint64_t h = atomic_load_explicit(&ch->st->head,
							  memory_order_seq_cst);
			if (pos - h >= ch->ring) {
				uint64_t t2 = atomic_load_explicit(
					&ch->st->tail, memory_order_relaxed);
				if (t2 == t)
					return -EAGAIN; /* full */
				t = t2;
				continue;
			}
			/* A receiver claimed it and is copying out. */
			backoff_snooze(ch, &b, pos);
		} else {
			/* Our tail was stale: the slot is ahead of it. If tail
			 * has not moved, the slot is ahead of the real tail,
			 * which no sender ever does: a corrupted segment. */
			uint64_t t2 = atomic_load_explicit(
				&ch->st->tail, memory_order_seq_cst);
			if (unlikely(t2 == t))
				return -EBADMSG;
			t = t2;
			continue;
		}
		t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);
	}
}

long ring_claim_recv(struct canal_chan *ch, size_t max, uint64_t *pos_out,
		     bool try_only)
{
	struct backoff b = { 0, UINT64_MAX, 0 };
	unsigned ck = 0;
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_relaxed);

	for (;;) {
		struct canal_slot_hdr *s = slot_at(ch, h);
		uint64_t st = atomic_load_explicit(&s->stamp,
						   memory_order_acquire);

		if (likely(st == stamp_for(ch, h, STAMP_FULL) ||
			   st == stamp_for(ch, h, STAMP_SKIP))) {
			size_t k = 1;
			while (k < max && k < ch->ring) {
				uint64_t st2 = atomic_load_explicit(
					&slot_at(ch, h + k)->stamp,
					memory_order_acquire);
				if (st2 != stamp_for(ch, h + k, STAMP_FULL) &&
				    st2 != stamp_for(ch, h + k, STAMP_SKIP))
					break;
				k++;
			}
			/* seq_cst: the "N1" of the wait protocol for senders,
			 * whose condition reads head. */
			if (atomic_compare_exchange_weak_explicit(
				    &ch->st->head, &h, h + k, memory_order_seq_cst,
				    memory_order_relaxed)) {
				if (unlikely(ch->shared))
					for (size_t i = 0; i < k; i++)
						set_owner(ch, h + i, 1);
				*pos_out = h;
				return (long)k;
			}
			cas_backoff(&ck);
			continue;
		}
		uint64_t stamp_pos = (st >> 2) + ring_index(ch, h);
		if (stamp_pos <= h) {
			/* Position h is not published yet. A try operation on
			 * an open channel says so without reading tail (the
			 * line every sender writes: a poller that reads it
			 * slows them all down); closed_hint is on a line
			 * that is never written but by close. */
			if (try_only && !atomic_load_explicit(
					       &ch->st->closed_hint,
					       memory_order_acquire))
				return -EAGAIN;
			uint64_t t = atomic_load_explicit(&ch->st->tail,
							  memory_order_seq_cst);
			if ((t >> 1) == h)
				return (t & TAIL_CLOSED) ? -EPIPE : -EAGAIN;
			uint64_t h2 = atomic_load_explicit(
				&ch->st->head, memory_order_relaxed);
			if (h2 != h) {
				h = h2;
				continue;
			}
			/* A sender claimed h and is copying in. */
			backoff_snooze(ch, &b, h);
		} else {
			/* Our head was stale (see ring_claim_send). */
			uint64_t h2 = atomic_load_explicit(
				&ch->st->head, memory_order_seq_cst);
			if (unlikely(h2 == h))
				return -EBADMSG;
			h = h2;
			continue;
		}
		h = atomic_load_explicit(&ch->st->head, memory_order_relaxed);
	}
}

bool ring_publish(struct canal_chan *ch, uint64_t pos, unsigned state)
{
	/* Release: pairs with the acquire load of the stamp by the receiver
	 * that claims pos (ring_claim_recv), publishing the data. */
	if (likely(!ch->shared)) {
		atomic_store_explicit(&slot_at(ch, pos)->stamp,
				      stamp_for(ch, pos, state),
				      memory_order_release);
		return true;
	}
	/* Shared: a CAS, in case a peer repaired the slot, believing us dead
	 * (shared.c). */
	uint64_t expect = stamp_for(ch, pos, STAMP_FREE);
	return atomic_compare_exchange_strong_explicit(
		&slot_at(ch, pos)->stamp, &expect, stamp_for(ch, pos, state),
		memory_order_release, memory_order_relaxed);
}

bool ring_release(struct canal_chan *ch, uint64_t pos)
{
	/* Release: pairs with the acquire load of the stamp by the sender of
	 * pos + ring (ring_claim_send): our reads of the data come first. */
	struct canal_slot_hdr *s = slot_at(ch, pos);
	uint64_t freed = stamp_next_lap(ch, pos, STAMP_FREE);
	if (likely(!ch->shared)) {
		atomic_store_explicit(&s->stamp, freed, memory_order_release);
		return true;
	}
	uint64_t expect = atomic_load_explicit(&s->stamp, memory_order_relaxed);
	if (expect != stamp_for(ch, pos, STAMP_FULL) &&
	    expect != stamp_for(ch, pos, STAMP_SKIP))
		return false;
	return atomic_compare_exchange_strong_explicit(
		&s->stamp, &expect, freed, memory_order_release,
		memory_order_relaxed);
}

bool ring_can_send(struct canal_chan *ch)
{
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	if (t & TAIL_CLOSED)
		return true;
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	return (t >> 1) - h < ch->ring;
}

bool ring_can_recv(struct canal_chan *ch)
{
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	return (t >> 1) != h || (t & TAIL_CLOSED);
}

/* Polling probe for receivers: is the slot at head published? */
static bool ring_probe_recv(struct canal_chan *ch)
{
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_relaxed);
	uint64_t st = atomic_load_explicit(&slot_at(ch, h)->stamp,
					   memory_order_relaxed);
	return st == stamp_for(ch, h, STAMP_FULL) ||
	       st == stamp_for(ch, h, STAMP_SKIP);
}

/* Spinning probe for senders: is the slot at tail free? (No seq_cst, no
 * index of the other side: see wait_for. Receivers spin on the indices,
 * which measured faster in ping-pong: the slot line is then left alone
 * while the sender writes it.) */
static bool ring_probe_send(struct canal_chan *ch)
{
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);
	uint64_t pos = t >> 1;
	return (t & TAIL_CLOSED) ||
	       atomic_load_explicit(&slot_at(ch, pos)->stamp,
				    memory_order_relaxed) ==
		       stamp_for(ch, pos, STAMP_FREE);
}

bool sync_can_send(struct canal_chan *ch)
{
	return atomic_load_explicit(&ch->st->demand, memory_order_seq_cst) > 0 ||
	       chan_closed(ch);
}

/* ------------------------------------------------------------------ */
/* Waiting (spin, then park on an event count)                         */
/* ------------------------------------------------------------------ */


static uint64_t shared_sleep_limit(struct canal_chan *ch, uint64_t deadline)
{
	if (likely(!ch->shared))
		return deadline;
	uint64_t limit = canal_now_ns() + SHARED_RECHECK_NS;
	return limit < deadline ? limit : deadline;
}

/* Wait until cond(ch) holds or the deadline passes: 0 or -ETIMEDOUT.
 * A 0 return only says "try again": the caller re-attempts its operation.
 *
 * Four phases, cheapest first:
 *  1. if nobody sleeps on this queue, spin a little without writing
 *     anything shared (a reply that is already on its way, as in a
 *     ping-pong, costs no cache-line transfer for our bookkeeping);
 *  2. take the queue's one spinner role if it is free (wait.h): notifiers
 *     then skip the wake syscall, because the spinner will see their
 *     element. If nobody sleeps, spin longer;
 *  3. yield the CPU, re-checking, for up to CANAL_YIELD_NS (wait.h): with
 *     more threads than cores, the thread we wait for may be waiting for
 *     this CPU; and a reply that is a few microseconds away (its sender
 *     was itself woken) is met awake, not with a sleep and a wake-up. The
 *     spinner does this even when many others sleep: it is then the one
 *     awake waiter that takes the next element without a wake-up (a
 *     forwarder feeding many sleeping readers makes no wake syscall while
 *     a reader spins; fwd-canal 1/1000 went from 0.07 to 0.03 s). Other
 *     waiters yield only while threads do not far outnumber cores;
 *  4. park on the queue's futex word. The spinner leaves its role first
 *     (waitq_spin_end before waitq_prepare: the pairing of wait.h). */
#define QUIET_SPINS 64

/* A condition of wait_for, for canal_yield_phase. */
struct cond_call {
	bool (*cond)(struct canal_chan *);
	struct canal_chan *ch;
};

static bool cond_holds(void *arg)
{
	struct cond_call *c = arg;
	return c->cond(c->ch);
}

static int wait_for(struct canal_chan *ch, struct canal_waitq *q,
		    bool (*cond)(struct canal_chan *),
		    bool (*probe)(struct canal_chan *), uint64_t deadline)
{
	/* Spinning polls `probe` (the slot we want, one cache line that the
	 * other side writes with the data); parking needs `cond` (indices,
	 * the protocol of wait.h). */
	uint32_t waiters = atomic_load_explicit(&q->waiters,
						memory_order_relaxed);
	if (!waiters) {
		for (unsigned i = 1; i <= QUIET_SPINS; i++) {
			canal_cpu_relax();
			if (probe(ch))
				return 0;
		}
	}
	bool spinner = waitq_spin_begin(q, ch->shared);
	if (spinner && !waiters) {
		for (unsigned r = 0; r < SPIN_ROUNDS; r++) {
			for (unsigned i = 0; i < (1u << r); i++)
				canal_cpu_relax();
			if (probe(ch)) {
				waitq_spin_end(q);
				return 0;
			}
		}
	}
	if (spinner || waiters < canal_yield_limit()) {
		struct cond_call c = { cond, ch };
		if (canal_yield_phase(cond_holds, &c, deadline)) {
			if (spinner)
				waitq_spin_end(q);
			return 0;
		}
	}
	if (spinner)
		waitq_spin_end(q);
	uint32_t key = waitq_prepare(q);
	if (cond(ch)) {
		waitq_finish(q);
		return 0;
	}
	int w = waitq_sleep(q, key, ch->shared, shared_sleep_limit(ch, deadline));
	waitq_finish(q);
	return w == -ETIMEDOUT && canal_now_ns() < deadline ? 0 : w;
}

struct ack_wait {
	struct canal_chan *ch;
	uint64_t pos;
};

static bool acked(void *arg)
{
	struct ack_wait *a = arg;
	return atomic_load_explicit(&a->ch->st->head, memory_order_seq_cst) >
	       a->pos;
}

/* Synchronous send: wait until the receiver has claimed position pos. */
static void wait_ack(struct canal_chan *ch, uint64_t pos)
{
	for (;;) {
		if (atomic_load_explicit(&ch->st->head, memory_order_seq_cst) > pos)
			return;
		for (unsigned r = 0; r < SPIN_ROUNDS; r++) {
			for (unsigned i = 0; i < (1u << r); i++)
				canal_cpu_relax();
			if (atomic_load_explicit(&ch->st->head,
						 memory_order_seq_cst) > pos)
				return;
		}
		struct ack_wait a = { ch, pos };
		if (canal_yield_phase(acked, &a, CANAL_NO_DEADLINE))
			return;
		uint32_t key = waitq_prepare(&ch->st->ack_wq);
		if (atomic_load_explicit(&ch->st->head, memory_order_seq_cst) > pos) {
			waitq_finish(&ch->st->ack_wq);
			return;
		}
		waitq_sleep(&ch->st->ack_wq, key, ch->shared,
			    shared_sleep_limit(ch, CANAL_NO_DEADLINE));
		waitq_finish(&ch->st->ack_wq);
	}
}

/* ------------------------------------------------------------------ */
/* Who wakes whom                                                      */
/* ------------------------------------------------------------------ */
/*
 * Wake-ups follow the transitions, as Linux pipes do, so that the thread
 * that is the bottleneck (a forwarder feeding many readers) makes as few
 * wake syscalls as possible:
 *  - a sender wakes receivers only when its first element made the channel
 *    non-empty (head == its position when it looks after publishing);
 *  - a receiver that leaves elements behind wakes one more receiver (the
 *    chain), so there is an awake receiver while elements remain;
 *  - symmetrically, a receiver wakes senders only when it made the channel
 *    non-full, and a sender that leaves room behind wakes one more sender.
 * No wake-up is lost: a sender does [CAS tail (seq_cst); load head
 * (seq_cst)] and a receiver [CAS head (seq_cst); load tail (seq_cst)]. In
 * the seq_cst total order, of the sender of position p and the receiver of
 * position p - 1, either the receiver's load of tail comes after the
 * sender's CAS (it sees p claimed and chains) or the sender's load of head
 * comes after the receiver's CAS (it sees head == p and wakes). Each side
 * first reads the queue's waiter count (the wait.h protocol), so the common
 * case with no sleeper costs one load.
 */

/* After publishing positions [pos, pos + k). */
static inline void wake_receivers(struct canal_chan *ch, uint64_t pos,
				  uint32_t k)
{
	if (likely(!waitq_needs_wake(&ch->st->recv_wq, ch->shared)))
		return;
	if (atomic_load_explicit(&ch->st->head, memory_order_seq_cst) == pos)
		waitq_wake(&ch->st->recv_wq, k, ch->shared);
}

/* After claiming receive positions up to (not including) next. */
static inline void chain_receivers(struct canal_chan *ch, uint64_t next)
{
	if (likely(!waitq_needs_wake(&ch->st->recv_wq, ch->shared)))
		return;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	if ((t >> 1) > next)
		waitq_wake(&ch->st->recv_wq, 1, ch->shared);
}

/* After releasing the slots of positions [pos, pos + k). */
static inline void wake_senders(struct canal_chan *ch, uint64_t pos,
				uint32_t k)
{
	if (likely(!waitq_needs_wake(&ch->st->send_wq, ch->shared)))
		return;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	if ((t >> 1) == pos + ch->ring)
		waitq_wake(&ch->st->send_wq, k, ch->shared);
}

/* After claiming send positions up to (not including) next. */
static inline void chain_senders(struct canal_chan *ch, uint64_t next)
{
	if (likely(!waitq_needs_wake(&ch->st->send_wq, ch->shared)))
		return;
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	if (next - h < ch->ring)
		waitq_wake(&ch->st->send_wq, 1, ch->shared);
}

/* ------------------------------------------------------------------ */
/* Synchronous channels: demand                                        */
/* ------------------------------------------------------------------ */

void sync_announce(struct canal_chan *ch)
{
	int64_t o = atomic_load_explicit(&ch->st->orphans, memory_order_relaxed);
	while (o > 0) {
		if (atomic_compare_exchange_weak_explicit(
			    &ch->st->orphans, &o, o - 1, memory_order_seq_cst,
			    memory_order_relaxed))
			return; /* an element without receiver is ours */
	}
	/* seq_cst: the "N1" of the wait protocol for senders waiting for
	 * demand (sync_can_send). */
	atomic_fetch_add_explicit(&ch->st->demand, 1, memory_order_seq_cst);
	waitq_notify(&ch->st->demand_wq, 1, ch->shared);
}

bool sync_retract(struct canal_chan *ch)
{
	int64_t d = atomic_load_explicit(&ch->st->demand, memory_order_relaxed);
	while (d > 0) {
		if (atomic_compare_exchange_weak_explicit(
			    &ch->st->demand, &d, d - 1, memory_order_seq_cst,
			    memory_order_relaxed))
			return true;
	}
	return false;
}

void sync_make_orphan(struct canal_chan *ch)
{
	atomic_fetch_add_explicit(&ch->st->orphans, 1, memory_order_seq_cst);
}

/* Give back a unit of demand taken by a sender that could not push. */
static void sync_give_back(struct canal_chan *ch)
{
	atomic_fetch_add_explicit(&ch->st->demand, 1, memory_order_seq_cst);
	waitq_notify(&ch->st->demand_wq, 1, ch->shared);
}

/* Take one unit of demand: 0, -EAGAIN (try_only), -EPIPE, -ETIMEDOUT. */
static int sync_take_demand(struct canal_chan *ch, uint64_t deadline,
			    bool try_only)
{
	bool counted = false;
	int ret;
	int64_t d = atomic_load_explicit(&ch->st->demand, memory_order_relaxed);

	for (;;) {
		while (d > 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &ch->st->demand, &d, d - 1,
				    memory_order_seq_cst, memory_order_relaxed)) {
				ret = 0;
				goto out;
			}
		}
		if (chan_closed(ch)) {
			ret = -EPIPE;
			goto out;
		}
		if (try_only) {
			ret = -EAGAIN;
			goto out;
		}
		if (!counted) {
			/* Lets a try_recv know that a sender waits. */
			atomic_fetch_add_explicit(&ch->st->senders_waiting, 1,
						  memory_order_seq_cst);
			counted = true;
		}
		int w = wait_for(ch, &ch->st->demand_wq, sync_can_send, sync_can_send, deadline);
		d = atomic_load_explicit(&ch->st->demand, memory_order_relaxed);
		if (w == -ETIMEDOUT && d <= 0 && !chan_closed(ch)) {
			ret = -ETIMEDOUT;
			goto out;
		}
	}
out:
	if (counted)
		atomic_fetch_sub_explicit(&ch->st->senders_waiting, 1,
					  memory_order_relaxed);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Send and receive, every flavour                                     */
/* ------------------------------------------------------------------ */

/*
 * send_common - claim a position, then copy elt in and publish it, or lend
 * the slot (reserve != NULL). Synchronous channels first take demand and,
 * for a blocking send, wait for the ack.
 */
static int send_common(struct canal_chan *ch, const void *elt,
		       struct canal_slot *reserve, uint64_t deadline,
		       bool try_only)
{
	uint64_t pos;
	long r;

	if (unlikely(ch->sync)) {
		int d = sync_take_demand(ch, deadline, try_only);
		if (d)
			return d;
	}
	for (;;) {
		r = ring_claim_send(ch, 1, &pos);
		if (likely(r > 0))
			break;
		if (r == -EAGAIN && !try_only &&
		    wait_for(ch, &ch->st->send_wq, ring_can_send, ring_probe_send, deadline) == 0)
			continue;
		if (r == -EAGAIN && !try_only) {
			/* Timed out: one last attempt. */
			r = ring_claim_send(ch, 1, &pos);
			if (r > 0)
				break;
			if (r == -EAGAIN)
				r = -ETIMEDOUT;
		}
		if (ch->sync && r != -EPIPE)
			sync_give_back(ch);
		return (int)r;
	}
	chain_senders(ch, pos + 1);
	if (reserve) {
		reserve->data = slot_data(ch, slot_at(ch, pos));
		reserve->position = pos;
		return 0;
	}
	copy_elt(slot_data(ch, slot_at(ch, pos)), elt, ch->elt_size);
	if (unlikely(!ring_publish(ch, pos, STAMP_FULL)))
		return -EOWNERDEAD;
	wake_receivers(ch, pos, 1);
	if (unlikely(ch->sync) && !try_only)
		wait_ack(ch, pos);
	return 0;
}

/* After claiming position pos for receiving: hand it out (copy, or lend
 * it). Returns 0, TAKE_SKIPPED for a withdrawn element (released), or
 * -EOWNERDEAD if a peer repaired the slot meanwhile (shared.c). */
#define TAKE_SKIPPED 1
static int take_claimed(struct canal_chan *ch, uint64_t pos, void *elt,
			struct canal_slot *lend)
{
	struct canal_slot_hdr *s = slot_at(ch, pos);
	uint64_t st = atomic_load_explicit(&s->stamp, memory_order_acquire);

	if (unlikely(ch->sync))
		waitq_notify(&ch->st->ack_wq, UINT32_MAX, ch->shared);
	chain_receivers(ch, pos + 1);
	if (unlikely((st & 3) == STAMP_SKIP)) {
		ring_release(ch, pos);
		wake_senders(ch, pos, 1);
		return TAKE_SKIPPED;
	}
	if (lend) {
		lend->data = slot_data(ch, s);
		lend->position = pos;
		return 0;
	}
	copy_elt(elt, slot_data(ch, s), ch->elt_size);
	if (unlikely(!ring_release(ch, pos)))
		return -EOWNERDEAD;
	wake_senders(ch, pos, 1);
	return 0;
}

/* Receive from the ring, the receiver having announced itself if the
 * channel is synchronous. committed: a sender has matched this receiver,
 * so it must not time out. */
static int recv_ring(struct canal_chan *ch, void *elt, struct canal_slot *lend,
		     uint64_t deadline, bool try_only, bool committed)
{
	uint64_t pos;
	/* First poll as a try operation does (the slot, not tail: see
	 * ring_claim_recv), QUIET_SPINS times: the cheapest wait for an
	 * element that is on its way. */
	unsigned polls = try_only ? 0 : QUIET_SPINS;

	for (;;) {
		long r = ring_claim_recv(ch, 1, &pos, try_only || polls);
		if (likely(r > 0)) {
			int t = take_claimed(ch, pos, elt, lend);
			if (t != TAKE_SKIPPED)
				return t;
			continue;
		}
		if (r == -EAGAIN && polls) {
			/* Read-only until the slot looks published. */
			do {
				polls--;
				canal_cpu_relax();
			} while (polls && !ring_probe_recv(ch));
			continue;
		}
		if (r != -EAGAIN || try_only)
			return (int)r; /* -EPIPE, -EAGAIN, -EBADMSG */
		uint64_t dl = committed ? CANAL_NO_DEADLINE : deadline;
		if (wait_for(ch, &ch->st->recv_wq, ring_can_recv, ring_can_recv, dl) == 0)
			continue;
		/* Timed out: one last attempt, then give up. */
		r = ring_claim_recv(ch, 1, &pos, false);
		if (r > 0) {
			int t = take_claimed(ch, pos, elt, lend);
			if (t != TAKE_SKIPPED)
				return t;
			continue;
		}
		if (r != -EAGAIN)
			return (int)r;
		if (!ch->sync || sync_retract(ch))
			return -ETIMEDOUT;
		committed = true; /* a sender took our demand: wait for it */
	}
}

int sync_recv_announced(struct canal_chan *ch, void *elt, uint64_t deadline,
			bool committed)
{
	return recv_ring(ch, elt, NULL, deadline, false, committed);
}

/* How long a try_recv on a synchronous channel waits for a sender that is
 * already waiting to hand its element over. */
#define SYNC_TRY_WAIT_NS 1000000u

/* try_only receive on a synchronous channel: only an element in the ring
 * or (if wait_sender) a waiting sender can make it succeed. */
static int sync_try_recv(struct canal_chan *ch, void *elt,
			 struct canal_slot *lend, bool wait_sender)
{
	bool ready = ring_can_recv(ch);
	if (!ready && (!wait_sender ||
		       atomic_load_explicit(&ch->st->senders_waiting,
					    memory_order_seq_cst) == 0))
		return -EAGAIN;
	sync_announce(ch);
	int r = recv_ring(ch, elt, lend,
			  ready ? canal_now_ns()
				: canal_now_ns() + SYNC_TRY_WAIT_NS,
			  false, false);
	return r == -ETIMEDOUT ? -EAGAIN : r;
}

static int recv_common(struct canal_chan *ch, void *elt,
		       struct canal_slot *lend, uint64_t deadline,
		       bool try_only)
{
	if (likely(!ch->sync))
		return recv_ring(ch, elt, lend, deadline, try_only, false);
	if (try_only)
		return sync_try_recv(ch, elt, lend, true);
	sync_announce(ch);
	return recv_ring(ch, elt, lend, deadline, false, false);
}

int chan_try_send_one(struct canal_chan *ch, const void *elt)
{
	return send_common(ch, elt, NULL, 0, true);
}

int chan_try_recv_one(struct canal_chan *ch, void *elt, bool wait_sender)
{
	if (ch->sync)
		return sync_try_recv(ch, elt, NULL, wait_sender);
	return recv_common(ch, elt, NULL, 0, true);
}

EXPORT size_t canal_chan_elt_size(const struct canal_chan *ch)
{
	return ch->elt_size;
}

EXPORT size_t canal_chan_capacity(const struct canal_chan *ch)
{
	return ch->capacity;
}

EXPORT size_t canal_chan_len(const struct canal_chan *ch)
{
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	return (t >> 1) > h ? (size_t)((t >> 1) - h) : 0;
}

EXPORT int canal_chan_is_closed(const struct canal_chan *ch)
{
	return chan_closed(ch) ? 1 : 0;
}

EXPORT int canal_close(struct canal_chan *ch)
{
	if (unlikely(!ch))
		return -EINVAL;
	/* seq_cst: the "N1" of every waiter's condition (they all read tail). */
	uint64_t old = atomic_fetch_or_explicit(&ch->st->tail, TAIL_CLOSED,
						memory_order_seq_cst);
	if (old & TAIL_CLOSED)
		return -EPIPE;
	/* After tail: a try_recv that sees the hint finds CLOSED in tail. */
	atomic_store_explicit(&ch->st->closed_hint, 1, memory_order_release);
	waitq_notify(&ch->st->recv_wq, UINT32_MAX, ch->shared);
	waitq_notify(&ch->st->send_wq, UINT32_MAX, ch->shared);
	waitq_notify(&ch->st->demand_wq, UINT32_MAX, ch->shared);
	waitq_notify(&ch->st->ack_wq, UINT32_MAX, ch->shared);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Public send/recv                                                    */
/* ------------------------------------------------------------------ */

#define CHECK_ELT(ch, elt)                                                   \
	do {                                                                 \
		if (unlikely(!(ch) || (!(elt) && (ch)->elt_size)))           \
			return -EINVAL;                                      \
	} while (0)

/*
 * Fast paths of canal_send and canal_recv, inlined: one attempt at the slot
 * the index points to, for a buffered thread channel, the common case. The
 * steps and orderings are exactly those of ring_claim_send + ring_publish
 * (ring_claim_recv + ring_release) and the wake-up checks, without the
 * calls; anything else (full, empty, contention, closed, synchronous or
 * shared channels) takes the general path.
 */
static inline bool send_fast(struct canal_chan *ch, const void *elt)
{
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);
	uint64_t pos = t >> 1;
	struct canal_slot_hdr *s = slot_at(ch, pos);

	if (unlikely(t & TAIL_CLOSED) ||
	    atomic_load_explicit(&s->stamp, memory_order_acquire) !=
		    stamp_for(ch, pos, STAMP_FREE) ||
	    !atomic_compare_exchange_strong_explicit(
		    &ch->st->tail, &t, t + 2, memory_order_seq_cst,
		    memory_order_relaxed))
		return false;
	copy_elt(slot_data(ch, s), elt, ch->elt_size);
	atomic_store_explicit(&s->stamp, stamp_for(ch, pos, STAMP_FULL),
			      memory_order_release);
	wake_receivers(ch, pos, 1);
	chain_senders(ch, pos + 1);
	return true;
}

static inline bool recv_fast(struct canal_chan *ch, void *elt)
{
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_relaxed);
	struct canal_slot_hdr *s = slot_at(ch, h);

	if (atomic_load_explicit(&s->stamp, memory_order_acquire) !=
		    stamp_for(ch, h, STAMP_FULL) ||
	    !atomic_compare_exchange_strong_explicit(
		    &ch->st->head, &h, h + 1, memory_order_seq_cst,
		    memory_order_relaxed))
		return false;
	chain_receivers(ch, h + 1);
	copy_elt(elt, slot_data(ch, s), ch->elt_size);
	atomic_store_explicit(&s->stamp, stamp_next_lap(ch, h, STAMP_FREE),
			      memory_order_release);
	wake_senders(ch, h, 1);
	return true;
}

EXPORT int canal_send(struct canal_chan *ch, const void *elt)
{
	CHECK_ELT(ch, elt);
	if (likely(!ch->sync && !ch->shared) && likely(send_fast(ch, elt)))
		return 0;
	return send_common(ch, elt, NULL, CANAL_NO_DEADLINE, false);
}

EXPORT int canal_recv(struct canal_chan *ch, void *elt)
{
	CHECK_ELT(ch, elt);
	if (likely(!ch->sync && !ch->shared) && likely(recv_fast(ch, elt)))
		return 0;
	return recv_common(ch, elt, NULL, CANAL_NO_DEADLINE, false);
}

EXPORT int canal_try_send(struct canal_chan *ch, const void *elt)
{
	CHECK_ELT(ch, elt);
	return send_common(ch, elt, NULL, 0, true);
}

EXPORT int canal_try_recv(struct canal_chan *ch, void *elt)
{
	CHECK_ELT(ch, elt);
	return recv_common(ch, elt, NULL, 0, true);
}

EXPORT int canal_send_deadline(struct canal_chan *ch, const void *elt,
			       uint64_t deadline_ns)
{
	CHECK_ELT(ch, elt);
	return send_common(ch, elt, NULL, deadline_ns, false);
}

EXPORT int canal_recv_deadline(struct canal_chan *ch, void *elt,
			       uint64_t deadline_ns)
{
	CHECK_ELT(ch, elt);
	return recv_common(ch, elt, NULL, deadline_ns, false);
}

EXPORT int canal_send_timeout(struct canal_chan *ch, const void *elt,
			      int64_t timeout_ns)
{
	return canal_send_deadline(ch, elt,
				   canal__deadline_from_timeout(timeout_ns));
}

EXPORT int canal_recv_timeout(struct canal_chan *ch, void *elt,
			      int64_t timeout_ns)
{
	return canal_recv_deadline(ch, elt,
				   canal__deadline_from_timeout(timeout_ns));
}

/* ------------------------------------------------------------------ */
/* Batches                                                             */
/* ------------------------------------------------------------------ */

static ssize_t send_batch(struct canal_chan *ch, const void *elts, size_t n,
			  bool try_only)
{
	const char *src = elts;
	size_t done = 0;
	long r = 0;

	if (unlikely(!ch || (!elts && n && ch->elt_size)))
		return -EINVAL;
	if (ch->sync) {
		/* A rendezvous per element. */
		for (; done < n; done++) {
			r = send_common(ch, src + done * ch->elt_size, NULL,
					CANAL_NO_DEADLINE, try_only);
			if (r)
				break;
		}
		return done ? (ssize_t)done : (n ? (ssize_t)r : 0);
	}
	while (done < n) {
		uint64_t pos;
		r = ring_claim_send(ch, n - done, &pos);
		if (r == -EAGAIN && !try_only) {
			wait_for(ch, &ch->st->send_wq, ring_can_send,
				 ring_probe_send, CANAL_NO_DEADLINE);
			continue;
		}
		if (r < 0)
			break;
		chain_senders(ch, pos + (uint64_t)r);
		long ok = r;
		for (long i = 0; i < r; i++) {
			uint64_t p = pos + (uint64_t)i;
			copy_elt(slot_data(ch, slot_at(ch, p)),
				 src + (done + (size_t)i) * ch->elt_size,
				 ch->elt_size);
			/* After a slot lost to a repair (shared channels),
			 * withdraw the rest: a batch is sent as a prefix. */
			if (!ring_publish(ch, p, ok < r ? STAMP_SKIP : STAMP_FULL) &&
			    ok == r)
				ok = i;
		}
		wake_receivers(ch, pos, (uint32_t)r);
		done += (size_t)ok;
		if (ok < r) {
			r = -EOWNERDEAD;
			break;
		}
	}
	return done ? (ssize_t)done : (n ? (ssize_t)r : 0);
}

static ssize_t recv_batch(struct canal_chan *ch, void *elts, size_t max,
			  bool try_only)
{
	char *dst = elts;

	if (unlikely(!ch || (!elts && max && ch->elt_size)))
		return -EINVAL;
	if (max == 0)
		return 0;
	if (ch->sync) {
		int r = recv_common(ch, dst, NULL, CANAL_NO_DEADLINE, try_only);
		return r ? r : 1;
	}
	for (;;) {
		uint64_t pos;
		long r = ring_claim_recv(ch, max, &pos, try_only);
		if (r == -EAGAIN && !try_only) {
			wait_for(ch, &ch->st->recv_wq, ring_can_recv,
				 ring_can_recv, CANAL_NO_DEADLINE);
			continue;
		}
		if (r < 0)
			return r;
		chain_receivers(ch, pos + (uint64_t)r);
		size_t got = 0;
		for (long i = 0; i < r; i++) {
			uint64_t p = pos + (uint64_t)i;
			struct canal_slot_hdr *s = slot_at(ch, p);
			uint64_t st = atomic_load_explicit(&s->stamp,
							   memory_order_acquire);
			if ((st & 3) == STAMP_FULL) {
				copy_elt(dst + got * ch->elt_size,
					 slot_data(ch, s), ch->elt_size);
				got++;
			}
			/* A slot repaired meanwhile (shared.c): what we
			 * copied may be torn, drop it. Later ones are fine:
			 * each slot is released on its own. */
			if (!ring_release(ch, p) && (st & 3) == STAMP_FULL)
				got--;
		}
		wake_senders(ch, pos, (uint32_t)r);
		if (got)
			return (ssize_t)got;
	}
}

EXPORT ssize_t canal_send_batch(struct canal_chan *ch, const void *elts,
				size_t n)
{
	return send_batch(ch, elts, n, false);
}

EXPORT ssize_t canal_recv_batch(struct canal_chan *ch, void *elts, size_t max)
{
	return recv_batch(ch, elts, max, false);
}

EXPORT ssize_t canal_try_send_batch(struct canal_chan *ch, const void *elts,
				    size_t n)
{
	return send_batch(ch, elts, n, true);
}

EXPORT ssize_t canal_try_recv_batch(struct canal_chan *ch, void *elts,
				    size_t max)
{
	return recv_batch(ch, elts, max, true);
}

/* ------------------------------------------------------------------ */
/* Single copy                                                         */
/* ------------------------------------------------------------------ */

EXPORT int canal_send_reserve(struct canal_chan *ch, struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return send_common(ch, NULL, slot, CANAL_NO_DEADLINE, false);
}

EXPORT int canal_try_send_reserve(struct canal_chan *ch,
				  struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return send_common(ch, NULL, slot, 0, true);
}

static bool slot_is_lent(struct canal_chan *ch, const struct canal_slot *slot)
{
	return slot && slot->data == slot_data(ch, slot_at(ch, slot->position));
}

EXPORT int canal_send_commit(struct canal_chan *ch, struct canal_slot *slot)
{
	if (unlikely(!ch || !slot_is_lent(ch, slot)))
		return -EINVAL;
	uint64_t pos = slot->position;
	slot->data = NULL;
	if (!ring_publish(ch, pos, STAMP_FULL))
		return -EOWNERDEAD;
	wake_receivers(ch, pos, 1);
	if (ch->sync)
		wait_ack(ch, pos);
	return 0;
}

EXPORT int canal_send_abort(struct canal_chan *ch, struct canal_slot *slot)
{
	if (unlikely(!ch || !slot_is_lent(ch, slot)))
		return -EINVAL;
	slot->data = NULL;
	ring_publish(ch, slot->position, STAMP_SKIP);
	/* Receivers may wait on this position: let one skip it. */
	wake_receivers(ch, slot->position, 1);
	if (ch->sync)
		sync_give_back(ch);
	return 0;
}

EXPORT int canal_recv_borrow(struct canal_chan *ch, struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return recv_common(ch, NULL, slot, CANAL_NO_DEADLINE, false);
}

EXPORT int canal_try_recv_borrow(struct canal_chan *ch,
				 struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return recv_common(ch, NULL, slot, 0, true);
}

EXPORT int canal_recv_release(struct canal_chan *ch, struct canal_slot *slot)
{
	if (unlikely(!ch || !slot_is_lent(ch, slot)))
		return -EINVAL;
	slot->data = NULL;
	if (!ring_release(ch, slot->position))
		return -EOWNERDEAD;
	wake_senders(ch, slot->position, 1);
	return 0;
}
