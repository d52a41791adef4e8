/* SPDX-License-Identifier: MIT */
/*
 * ring.c - the ring's primitives: claiming positions (send and receive),
 * publishing and releasing slots, and the wait conditions on the indices.
 * The layout, invariants and memory-ordering pairs are in internal.h.
 *
 * Waiting for a slot. A claimer finds the slot at its position in one of
 * three states: ready (free for a sender, published for a receiver); held
 * behind by the other side (a receiver copying out, a sender copying in,
 * or a slot lent by reserve/borrow); or damaged (a stamp ahead of the
 * index, indices that contradict each other: a hostile or buggy peer),
 * which gives -EBADMSG. A held slot is snoozed on (spin.h), for as
 * long as the caller's deadline allows: a try operation (deadline 0) gives
 * up after the pause phase with -EAGAIN, a timed one at its deadline with
 * -ETIMEDOUT. On a shared channel, a slot held for REPAIR_CHECK_NS (counted
 * per slot and holder, from this process's first sighting of that holder,
 * whatever call or thread saw it: held_since) is shown to the crash
 * repair (repair.c), with the stamp its holder holds it with and how long
 * that stamp has been seen: a repair judges one claim by the time spent on
 * that claim, never by the time spent on the slot's previous holder. A
 * try operation asks the repair too before it gives up, once that time is
 * reached: a process that only polls must not leave a dead holder's slot
 * wedged (test_revshm_poll_dead).
 */
#include "handoff.h"
#include "internal.h"

#include <errno.h>

/* Time spent on one held slot before a shared channel suspects that its
 * holder died (repair.c decides). */
#define REPAIR_CHECK_NS 1000000u

/* Shared channels: when this process first saw the slot at pos held with
 * stamp st (now, if this is the first sighting), by a sender (send) or a
 * receiver. A (position, stamp) pair names one holder: a position is
 * claimed once and a stamp only moves forward; and it is noted only once
 * the claim is seen (tail past pos for a receiver, head past the slot's
 * older position for a sender), so that the time counted never starts
 * before the holder's claim. A try-lock, not a lock: a thread that finds
 * it taken (another one noting, or a fork() that copied it taken) counts
 * from now, as every wait did before. */
static uint64_t held_since(struct canal_chan *ch, bool send, uint64_t pos,
			   uint64_t st, uint64_t now)
{
	struct canal__held_seen *h = &ch->held_seen[send];
	uint32_t free_ = 0;
	if (!atomic_compare_exchange_strong_explicit(&h->lock, &free_, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return now;
	if (h->since == 0 || h->pos != pos || h->stamp != st) {
		h->pos = pos;
		h->stamp = st;
		h->since = now;
	}
	uint64_t since = h->since;
	atomic_store_explicit(&h->lock, 0, memory_order_release);
	return since < now ? since : now;
}

/* The slot at pos is held, with stamp st, waited on by a sender (send) or
 * a receiver. */
static void held_note(struct canal_chan *ch, bool send,
		      struct canal__held_wait *w, uint64_t pos, uint64_t st)
{
	if (w->pos != pos) {
		/* A new slot: the snooze starts again. */
		w->pos = pos;
		w->snooze = (struct canal__snooze)CANAL__SNOOZE_INIT;
	} else if (w->stamp == st) {
		return;
	}
	/* A new holder: its grace period starts now, or, on a shared
	 * channel, when this process first saw it (held_since). */
	w->stamp = st;
	w->since = canal_now_ns();
	if (unlikely(ch->shared))
		w->since = held_since(ch, send, pos, st, w->since);
}

/* How long the holder noted in w has been seen, at now (a clock read
 * before held_note moved since past it: 0, not a wrapped difference, which
 * would read as a holder far past every grace). */
static uint64_t held_age(const struct canal__held_wait *w, uint64_t now)
{
	return now > w->since ? now - w->since : 0;
}

static void held_repair(struct canal_chan *ch, struct canal__held_wait *w,
			uint64_t now)
{
	canal__repair_slot(ch, w->pos, w->stamp, held_age(w, now));
}

/* Shared: ask the repair once the holder noted in w has been seen for
 * REPAIR_CHECK_NS (by this process: held_since). */
static void held_repair_due(struct canal_chan *ch, struct canal__held_wait *w)
{
	uint64_t now = canal_now_ns();
	if (held_age(w, now) >= REPAIR_CHECK_NS)
		held_repair(ch, w, now);
}

/* Waiting on the slot at pos, held by the other side. Returns 0 to look
 * again, -EAGAIN (try: deadline 0) or -ETIMEDOUT. The repair is asked
 * before the deadline is: a caller that waits in short slices (a
 * committed receiver, 1 ms) is past each slice's deadline whenever it has
 * waited long enough to ask (test_holes, test_sync_dead_select). */
static int wait_held(struct canal_chan *ch, bool send,
		     struct canal__held_wait *w, uint64_t pos, uint64_t st,
		     uint64_t deadline)
{
	held_note(ch, send, w, pos, st);
	if (deadline == 0 && !canal__snooze_spinning(&w->snooze)) {
		/* A try gives up, after asking the repair if this process
		 * has waited on the holder long enough (across calls). */
		if (unlikely(ch->shared))
			held_repair_due(ch, w);
		return -EAGAIN;
	}
	uint64_t held = canal__snooze(&w->snooze);
	/* Past the pause phase (held), the time on this holder counts from
	 * this process's first sighting of it. */
	if (unlikely(ch->shared) && held)
		held_repair_due(ch, w);
	if (held && deadline != CANAL_NO_DEADLINE && canal_now_ns() >= deadline)
		return -ETIMEDOUT;
	return 0;
}

/* A try receive's miss on a shared channel (it returns at an unpublished
 * slot without reading tail): if the slot at head is held by a sender
 * (the claim's own tests: claimed, not published, no damage), note its
 * holder in hw and, once this process has seen it REPAIR_CHECK_NS, ask
 * the crash repair, as a blocking receive's wait on that slot does. */
static void held_check_recv(struct canal_chan *ch, struct canal__held_wait *hw)
{
	uint64_t pos = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	uint64_t st = atomic_load_explicit(&slot_at(ch, pos)->stamp,
					   memory_order_acquire);
	if (stamp_is_published(ch, pos, st) || stamp_position(ch, pos, st) > pos)
		return;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	if (tail_position(t) <= pos)
		return;
	held_note(ch, false, hw, pos, st);
	held_repair_due(ch, hw);
}

/* A try receive on a shared channel that found the slot at head
 * unpublished looks at its holder once in this many (a relaxed count:
 * a lost increment only delays a look). */
#define HELD_POLL_EVERY 16u

static bool poll_look_due(struct canal_chan *ch)
{
	uint32_t n = atomic_load_explicit(&ch->poll_misses,
					  memory_order_relaxed) + 1;
	atomic_store_explicit(&ch->poll_misses, n, memory_order_relaxed);
	return n % HELD_POLL_EVERY == 0;
}

/* The slices of canal__ring_wait_slot: how often a sender that gave up a
 * held slot looks at it without a wake-up (the repair's checks; the
 * senders after the first one woken by the slot's release). */
#define SLOT_SLICE_NS 10000000u

struct slot_cond {
	struct canal_chan *ch;
	uint64_t pos;
};

/* seq_cst loads: the W2 of the wait protocol (wait.h). Its N1s: another
 * sender's claim of tail (a seq_cst CAS), a shared slot's release (a
 * seq_cst CAS); a private slot's release is a release store, which a
 * notifier's look at the waiter count may pass: a wake-up lost there costs
 * one slice (SLOT_SLICE_NS), the sleeper looks again then. */
static bool slot_may_claim(void *arg)
{
	struct slot_cond *c = arg;
	uint64_t st = atomic_load_explicit(&slot_at(c->ch, c->pos)->stamp,
					   memory_order_seq_cst);
	/* Free for pos; or a stamp for pos or later: damage, which the
	 * claim then reports (-EBADMSG). */
	if (st == stamp_for(c->ch, c->pos, STAMP_FREE) ||
	    stamp_position(c->ch, c->pos, st) >= c->pos ||
	    chan_damaged(c->ch))
		return true;
	uint64_t t = atomic_load_explicit(&c->ch->st->tail,
					  memory_order_seq_cst);
	return tail_position(t) != c->pos || (t & TAIL_CLOSED);
}

int canal__ring_wait_slot(struct canal_chan *ch, struct canal__held_wait *hw,
			  uint64_t deadline)
{
	struct slot_cond sc = { ch, hw->pos };
	struct canal_waitq *q = &ch->st->send_wq;
	bool slept = false;
	for (;;) {
		if (slot_may_claim(&sc)) {
			/* The wake-up that ended our sleep may have been meant
			 * for a sender waiting for room on the same queue
			 * (notifiers wake one; a task parker wakes the newest
			 * sleeper, which we are, every slice): pass one on, as
			 * a sender's claim would (chain_senders), since we may
			 * not claim (our demand may be gone). */
			if (slept)
				waitq_notify(q, 1, ch->shared);
			return 0;
		}
		uint64_t now = canal_now_ns();
		if (deadline != CANAL_NO_DEADLINE && now >= deadline)
			return -ETIMEDOUT;
		if (unlikely(ch->shared)) {
			held_note(ch, true, hw, hw->pos,
				  atomic_load_explicit(
					  &slot_at(ch, hw->pos)->stamp,
					  memory_order_acquire));
			if (held_age(hw, now) >= REPAIR_CHECK_NS)
				held_repair(ch, hw, now);
		}
		uint64_t dl = now + SLOT_SLICE_NS;
		if (dl > deadline)
			dl = deadline;
		/* The wait protocol's steps (wait.h), not canal__wait: its
		 * spin phase would take the queue's spinner role, which
		 * tells notifiers that a waiter will see *their* condition
		 * (room in the ring), not ours; a sleeper waiting for room
		 * could then miss its wake-up. This sender already spent
		 * its pause phase on the slot (claim_send). */
		uint32_t key = waitq_prepare(q);
		if (!slot_may_claim(&sc)) {
			waitq_sleep(q, key, ch->shared, dl);
			/* Not a retry of the queue's condition (room): a
			 * chain's miss is passed on (wait.h). */
			waitq_woken_pass(q, ch->shared);
			slept = true;
		}
		waitq_finish(q);
	}
}

/*
 * A claim's CAS lost (most likely to another claimer). A thread pauses
 * (growing) before it retries, so that the line does not bounce at every
 * try. A task whose loop has other tasks ready lets them run first
 * (base/park.h, yield_to_ready): the race was most likely lost to a task
 * on another CPU working the same end of the ring, and while both fight,
 * every claim moves the index's line (and the slot's) between the CPUs;
 * the other ready tasks (often this channel's other end) work meanwhile,
 * and the ends drift apart onto the two loops. Only where the caller
 * holds nothing another party waits for and may block anyway
 * (may_switch): not a try or a last attempt (deadline 0, try_only), and
 * not a capacity-0 sender (give_up_held), which holds a receiver's demand
 * unit from before its claim until its claim (GUARANTEES.md: only a few
 * instructions; a switch here could last as long as another task runs,
 * and a process killed meanwhile would take the unit with it). Measured
 * (Intel Xeon host, 2 loops, 4 senders and 4 receivers of 1 M messages,
 * capacity 1 M, 8 interleaved runs): with the operation quantum
 * (quantum.h), 0.197 s -> 0.048 s median (Go 0.099); alone, 0.064 s but
 * bimodal (0.03-0.24).
 */
static inline void lost_race(unsigned *ck, bool may_switch)
{
	if (!may_switch || !canal__yield_to_ready())
		canal__pause_exp(ck);
}

/*
 * Bounded claims. A claim looks again when what it read moved under it: its
 * CAS of the index lost, its copy of the index was stale, or the slot at
 * its (new) position was held. Between live parties every such retry is
 * another claim's success (the ring is lock-free), but a peer that
 * rewrites a shared channel's indices and stamps without pause, with
 * plausible values, can make every look a new one for ever: the CAS always
 * loses, and the held wait's pause phase (which ends a try, wait_held)
 * starts afresh at each new position (test_revclaim_hostile_spin).
 * Invariant I4 (internal.h): a try claim (deadline 0) retries at most
 * CLAIM_TRY_RETRIES times, then returns -EAGAIN (would block; nothing was
 * claimed, so nothing is lost); a timed claim reads the clock every
 * CLAIM_CLOCK_EVERY retries and returns -ETIMEDOUT once past its deadline;
 * a blocking claim (CANAL_NO_DEADLINE) retries as long as it takes (it may
 * wait; between live parties some claim always succeeds). Not -EBADMSG:
 * each state such a peer shows is one live parties could show, and the
 * damage checks before the retries still report the impossible ones.
 * Counted on the retry paths only: a claim whose first look and CAS
 * succeed never touches the count.
 * CLAIM_TRY_RETRIES is far above what live contention makes: each retry
 * there follows a pause (lost_race, the snooze) and means that another
 * party claimed meanwhile (or that a weak CAS failed spuriously), so a
 * try that gives up has seen about a thousand other claims succeed during
 * its call. Measured (2 vCPUs, loaded): at most 9 retries in one try call
 * of test_review_ebadmsg_stress (also with CANAL_STRESS=1),
 * test_revmodel_chan_stress and test_stress. Under a hostile peer, a try
 * so spends at most 1024 pauses of at most 64 PAUSE instructions each (a
 * few milliseconds), plus whatever preemption adds.
 */
#define CLAIM_TRY_RETRIES 1024u
#define CLAIM_CLOCK_EVERY 16u

/* A claim is about to look again: 0 to go on, or -EAGAIN (try) or
 * -ETIMEDOUT (timed) to give up (I4). */
static inline int claim_retry(unsigned *retries, uint64_t deadline)
{
	if (deadline == CANAL_NO_DEADLINE)
		return 0;
	++*retries;
	if (deadline == 0)
		return *retries > CLAIM_TRY_RETRIES ? -EAGAIN : 0;
	if (*retries % CLAIM_CLOCK_EVERY == 0 && canal_now_ns() >= deadline)
		return -ETIMEDOUT;
	return 0;
}

long canal__ring_claim_send(struct canal_chan *ch, size_t n, uint64_t *pos_out,
			    uint64_t deadline, struct canal__held_wait *hw,
			    bool give_up_held)
{
	struct canal__held_wait own = CANAL__HELD_WAIT_INIT;
	if (!hw)
		hw = &own;
	unsigned ck = 0, retries = 0;
	int give_up;
	uint32_t id = unlikely(ch->shared) ? canal__self_id(ch) : 0;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);

	for (;;) {
		if (unlikely(t & TAIL_CLOSED))
			return -EPIPE;
		uint64_t pos = tail_position(t);
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
				    &ch->st->tail, &t, t + tail_advance(k),
				    memory_order_seq_cst, memory_order_relaxed)) {
				if (unlikely(ch->shared))
					for (size_t i = 0; i < k; i++)
						canal__claim_name(ch, id, pos + i,
								  OWNER_SENDER);
				*pos_out = pos;
				return (long)k;
			}
			lost_race(&ck, deadline != 0 && !give_up_held);
			if ((give_up = claim_retry(&retries, deadline)))
				return give_up;
			continue;
		}
		uint64_t sp = stamp_position(ch, pos, st);
		uint64_t t2 = atomic_load_explicit(&ch->st->tail,
						   memory_order_seq_cst);
		if (t2 != t) {
			t = t2; /* our tail was stale */
			if ((give_up = claim_retry(&retries, deadline)))
				return give_up;
			continue;
		}
		/* A stamp for pos or later was written after pos was claimed
		 * (acquire on the stamp: that claim happens before our load
		 * of tail), so with tail still at pos it is damage. Stamps
		 * may lag any number of laps (senders queue behind a slow
		 * receiver), so nothing is concluded from a lag. */
		if (unlikely(sp >= pos))
			return -EBADMSG;
		/* The slot still holds an older position. */
		uint64_t h = atomic_load_explicit(&ch->st->head,
						  memory_order_seq_cst);
		if (unlikely(h > pos)) {
			/* head is never past tail: if tail has not moved
			 * since, the indices contradict each other. */
			if (atomic_load_explicit(&ch->st->tail,
						 memory_order_seq_cst) == t)
				return -EBADMSG;
			t = atomic_load_explicit(&ch->st->tail,
						 memory_order_relaxed);
			if ((give_up = claim_retry(&retries, deadline)))
				return give_up;
			continue;
		}
		if (pos - h >= ch->ring)
			return -EAGAIN; /* full */
		/* A receiver claimed it and is copying out, or holds it lent. */
		held_note(ch, true, hw, pos, st);
		if (give_up_held && !canal__snooze_spinning(&hw->snooze))
			return -EBUSY;
		int w = wait_held(ch, true, hw, pos, st, deadline);
		if (w || (w = claim_retry(&retries, deadline)))
			return w;
		t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);
	}
}

long canal__ring_claim_recv(struct canal_chan *ch, size_t max,
			    uint64_t *pos_out, bool try_only,
			    uint64_t deadline, struct canal__held_wait *hw)
{
	struct canal__held_wait own = CANAL__HELD_WAIT_INIT;
	if (!hw)
		hw = &own;
	unsigned ck = 0, retries = 0;
	int give_up;
	uint32_t id = unlikely(ch->shared) ? canal__self_id(ch) : 0;
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_relaxed);

	for (;;) {
		struct canal_slot_hdr *s = slot_at(ch, h);
		uint64_t st = atomic_load_explicit(&s->stamp,
						   memory_order_acquire);

		if (likely(stamp_is_published(ch, h, st))) {
			size_t k = 1;
			while (k < max && k < ch->ring &&
			       stamp_is_published(
				       ch, h + k,
				       atomic_load_explicit(
					       &slot_at(ch, h + k)->stamp,
					       memory_order_acquire)))
				k++;
			/* seq_cst: the "N1" of the wait protocol for senders,
			 * whose condition reads head. */
			if (atomic_compare_exchange_weak_explicit(
				    &ch->st->head, &h, h + k, memory_order_seq_cst,
				    memory_order_relaxed)) {
				if (unlikely(ch->shared))
					for (size_t i = 0; i < k; i++)
						canal__claim_name(ch, id, h + i,
								  OWNER_RECEIVER);
				*pos_out = h;
				return (long)k;
			}
			lost_race(&ck, !try_only && deadline != 0);
			if ((give_up = claim_retry(&retries, deadline)))
				return give_up;
			continue;
		}
		/* Position h is not published yet. A try operation on an open
		 * channel says so without reading tail (the line every sender
		 * writes: a poller that reads it slows them all down);
		 * closed_hint is on a line that is never written but by
		 * close. */
		if (try_only && !atomic_load_explicit(&ch->st->closed_hint,
						      memory_order_acquire)) {
			/* Shared: every HELD_POLL_EVERY-th such miss looks
			 * at the slot's holder (tail, once in a while), so
			 * that a receiver that only polls repairs a dead
			 * sender's slot too. */
			if (unlikely(ch->shared) && poll_look_due(ch))
				held_check_recv(ch, hw);
			return -EAGAIN;
		}
		uint64_t sp = stamp_position(ch, h, st);
		uint64_t h2 = atomic_load_explicit(&ch->st->head,
						   memory_order_seq_cst);
		if (h2 != h) {
			h = h2; /* our head was stale */
			if ((give_up = claim_retry(&retries, deadline)))
				return give_up;
			continue;
		}
		/* A stamp past h was released by h's receiver (acquire: its
		 * CAS of head happens before our load of head): damage. */
		if (unlikely(sp > h))
			return -EBADMSG;
		uint64_t t = atomic_load_explicit(&ch->st->tail,
						  memory_order_seq_cst);
		if (tail_position(t) == h)
			return (t & TAIL_CLOSED) ? -EPIPE : -EAGAIN;
		if (unlikely(tail_position(t) < h))
			return -EBADMSG; /* head past tail */
		/* A sender claimed h and is copying in, or holds it
		 * reserved. */
		int w = wait_held(ch, false, hw, h, st, deadline);
		if (w || (w = claim_retry(&retries, deadline)))
			return w;
		h = atomic_load_explicit(&ch->st->head, memory_order_relaxed);
	}
}

bool canal__ring_publish(struct canal_chan *ch, uint64_t pos, unsigned state)
{
	/* Release: pairs with the acquire load of the stamp by the receiver
	 * that claims pos (canal__ring_claim_recv), publishing the data. */
	if (likely(!ch->shared)) {
		atomic_store_explicit(&slot_at(ch, pos)->stamp,
				      stamp_for(ch, pos, state),
				      memory_order_release);
		return true;
	}
	/* Shared: a CAS, in case a peer repaired the slot, believing us dead
	 * (repair.c). */
	uint64_t expect = stamp_for(ch, pos, STAMP_FREE);
	return atomic_compare_exchange_strong_explicit(
		&slot_at(ch, pos)->stamp, &expect, stamp_for(ch, pos, state),
		memory_order_release, memory_order_relaxed);
}

bool canal__ring_release(struct canal_chan *ch, uint64_t pos)
{
	/* Release: pairs with the acquire load of the stamp by the sender of
	 * pos + ring (canal__ring_claim_send): our reads of the data come
	 * first. */
	struct canal_slot_hdr *s = slot_at(ch, pos);
	uint64_t freed = stamp_next_lap(ch, pos, STAMP_FREE);
	if (likely(!ch->shared)) {
		atomic_store_explicit(&s->stamp, freed, memory_order_release);
		return true;
	}
	uint64_t expect = atomic_load_explicit(&s->stamp, memory_order_relaxed);
	if (!stamp_is_published(ch, pos, expect) &&
	    expect != stamp_for(ch, pos, STAMP_TAKEN))
		return false;
	return atomic_compare_exchange_strong_explicit(
		&s->stamp, &expect, freed, memory_order_release,
		memory_order_relaxed);
}

bool canal__ring_still_claimed(struct canal_chan *ch, uint64_t pos)
{
	return likely(!ch->shared) ||
	       atomic_load_explicit(&slot_at(ch, pos)->stamp,
				    memory_order_relaxed) ==
		       stamp_for(ch, pos, STAMP_FREE);
}

bool canal__ring_fill(struct canal_chan *ch, uint64_t pos, const void *elt)
{
	if (unlikely(!canal__ring_still_claimed(ch, pos)))
		return false;
	copy_elt(slot_data(ch, slot_at(ch, pos)), elt, ch->elt_size);
	return canal__ring_publish(ch, pos, STAMP_FULL);
}

bool canal__ring_holds_claimed(struct canal_chan *ch, uint64_t pos)
{
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	return pos < tail_position(t) &&
	       atomic_load_explicit(&slot_at(ch, pos)->stamp,
				    memory_order_acquire) ==
		       stamp_for(ch, pos, STAMP_FREE);
}

bool canal__ring_holds_taken(struct canal_chan *ch, uint64_t pos)
{
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	uint64_t st = atomic_load_explicit(&slot_at(ch, pos)->stamp,
					   memory_order_acquire);
	return pos < h && (stamp_is_published(ch, pos, st) ||
			   st == stamp_for(ch, pos, STAMP_TAKEN));
}

/* ------------------------------------------------------------------ */
/* Wait conditions (struct canal__wait_cond, arg = the channel)         */
/* ------------------------------------------------------------------ */

/* Not full, or closed (seq_cst: the W2 of wait.h). */
static bool can_send(void *arg)
{
	struct canal_chan *ch = arg;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	if (t & TAIL_CLOSED)
		return true;
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	return tail_position(t) - h < ch->ring;
}

/* Not empty, or closed. */
static bool can_recv(void *arg)
{
	struct canal_chan *ch = arg;
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	return tail_position(t) != h || (t & TAIL_CLOSED);
}

/* Spinning probe for senders: is the slot at tail free? (No seq_cst, no
 * index of the other side. Receivers spin on the indices, which measured
 * faster in ping-pong: the slot line is then left alone while the sender
 * writes it.) */
static bool probe_send(void *arg)
{
	struct canal_chan *ch = arg;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);
	uint64_t pos = tail_position(t);
	return (t & TAIL_CLOSED) ||
	       atomic_load_explicit(&slot_at(ch, pos)->stamp,
				    memory_order_relaxed) ==
		       stamp_for(ch, pos, STAMP_FREE);
}

bool canal__ring_can_send(struct canal_chan *ch)
{
	return can_send(ch);
}

bool canal__ring_can_recv(struct canal_chan *ch)
{
	return can_recv(ch);
}

bool canal__ring_probe_recv(struct canal_chan *ch)
{
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_relaxed);
	return stamp_is_published(ch, h,
				  atomic_load_explicit(&slot_at(ch, h)->stamp,
						       memory_order_relaxed));
}

bool canal__ring_recv_idle(struct canal_chan *ch)
{
	/* The first look of canal__ring_claim_recv's try, read-only: the
	 * slot at head not published, and no close hinted. Relaxed: an
	 * answer "idle" that is already stale is one the try could have
	 * given too (its acquire load orders what it reads after a
	 * published stamp, which this never follows). Not for a shared
	 * channel, whose try looks at a dead sender's slot now and then. */
	return !canal__ring_probe_recv(ch) &&
	       !atomic_load_explicit(&ch->st->closed_hint,
				     memory_order_relaxed);
}

int canal__ring_wait_send(struct canal_chan *ch, const void *elt,
			  uint64_t deadline)
{
	struct canal__handoff_arg a = { ch, elt };
	const bool park = elt && canal__handoff_eligible(ch);
	const struct canal__wait_cond c = {
		.ready = can_send,
		.probe = probe_send,
		.arg = ch,
		.kind = CANAL__WAIT_PLAIN,
		.hook = ch->hook,
		.park = park ? canal__handoff_park : NULL,
		.park_arg = &a
	};
	return canal__wait(&ch->st->send_wq, ch->shared, &c, deadline);
}

/* The receiver's take before it sleeps (handoff.h). */
struct take_arg {
	struct canal_chan *ch;
	void *elt;
};

static bool take_before_park(void *arg)
{
	struct take_arg *a = arg;
	return canal__handoff_take(a->ch, a->elt);
}

int canal__ring_wait_recv(struct canal_chan *ch, void *take_elt,
			  uint64_t deadline)
{
	struct take_arg a = { ch, take_elt };
	const struct canal__wait_cond c = {
		.ready = can_recv,
		.probe = can_recv,
		.arg = ch,
		.kind = ch->sync ? CANAL__WAIT_PLAIN : CANAL__WAIT_ELEMENT,
		.hook = ch->hook,
		.pre_park = take_elt ? take_before_park : NULL,
		.park_arg = &a
	};
	return canal__wait(&ch->st->recv_wq, ch->shared, &c, deadline);
}
