/* SPDX-License-Identifier: MIT */
/*
 * sendrecv.c - sending and receiving one element, every flavour (blocking,
 * try, timed; copying or lending the slot), close and the inspectors.
 * The layout, invariants and memory-ordering pairs are in internal.h; the
 * wait protocol in base/wait.h; the wake-ups in wake.h.
 *
 * Fast paths first: an uncontended send or receive is one load of a slot
 * stamp, one CAS of an index, a copy, one release store of the stamp and one
 * load of the other side's waiter count (no syscall when nobody sleeps).
 */
#include "handoff.h"
#include "internal.h"
#include "quantum.h"
#include "wake.h"

#include <errno.h>

/* Polls of the slot at head before a receiver waits (read-only). */
#define QUIET_SPINS 64

/*
 * canal__send - claim a position, then copy elt in and publish it, or lend
 * the slot (reserve != NULL). Synchronous channels first take demand and,
 * for a blocking send, wait for the ack.
 */
static int send_impl(struct canal_chan *ch, const void *elt,
		     struct canal_slot *reserve, uint64_t deadline,
		     bool try_only)
{
	uint64_t pos;
	long r;
	bool select_unit = false;
	/* Synchronous, not try: never wait on a held slot while holding a
	 * unit of demand (below); the wait on that slot goes on across the
	 * units given back and taken again. */
	struct canal__held_wait hw = CANAL__HELD_WAIT_INIT;
	bool give_up_held = ch->sync && !try_only;

again:
	if (unlikely(ch->sync)) {
		int d = canal__sync_take_demand(ch, deadline, try_only,
						&select_unit);
		if (d)
			return d;
	}
	/* A task's blocking send on a buffered private channel comes here
	 * from canal_send's fast path, which has just found the ring full
	 * (or lost a race for its position): wait first, as recv_ring does
	 * (the wait looks at the ring again once registered and returns at
	 * once if there is room). */
	bool wait_first = !ch->sync && !ch->shared && !try_only && !reserve &&
			  deadline == CANAL_NO_DEADLINE &&
			  canal__parker_get()->ops->is_task;
	for (;;) {
		if (chan_damaged(ch))
			return -EBADMSG;
		if (wait_first) {
			wait_first = false;
			if (canal__ring_wait_send(ch, NULL, deadline) == 0)
				continue;
		}
		r = canal__ring_claim_send(ch, 1, &pos, try_only ? 0 : deadline,
					   &hw, give_up_held);
		if (likely(r > 0))
			break;
		if (r == -EBUSY) {
			/* The slot at our position is still held by a
			 * receiver (lent by a borrow, or being copied out).
			 * Killed while waiting for it with the unit taken,
			 * this sender would take the unit with it: no slot
			 * and no owner word for the repair to find, the
			 * receiver it was counted for waiting for ever
			 * (test_holes, test_sync_dead_claim_wait). So, once
			 * the pause phase on the slot is over (a receiver
			 * copying out is done by then), the unit goes back;
			 * the sender sleeps without one until the slot is
			 * free or tail has moved (the repair of a dead holder
			 * asked meanwhile), and only then takes demand again:
			 * once per release of the slot, and the other blocked
			 * senders sleep as before. What remains is the pause
			 * phase and the instructions between the unit's CAS
			 * and the tail's. */
			canal__sync_give_back(ch, select_unit);
			int w = canal__ring_wait_slot(ch, &hw, deadline);
			if (w)
				return w;
			goto again;
		}
		if (r == -EAGAIN && !try_only) {
			/* A send of one element may park with it: a
			 * receiver may take it (handoff.h). */
			int w = canal__ring_wait_send(ch, reserve ? NULL : elt,
						      deadline);
			if (w == CANAL__WAIT_DONE)
				return 0;
			if (w == 0)
				continue;
		}
		if (r == -EAGAIN && !try_only) {
			/* Timed out: one last attempt. */
			r = canal__ring_claim_send(ch, 1, &pos, 0, NULL,
						   false);
			if (r > 0)
				break;
			if (r == -EAGAIN)
				r = -ETIMEDOUT;
		}
		if (ch->sync && r != -EPIPE)
			canal__sync_give_back(ch, select_unit);
		return (int)r;
	}
	if (reserve) {
		chain_senders(ch, pos + 1);
		if (unlikely(!canal__ring_still_claimed(ch, pos)))
			return -EOWNERDEAD;
		reserve->data = slot_data(ch, slot_at(ch, pos));
		reserve->position = pos;
		return 0;
	}
	/* The chain once the element is published, not while its slot
	 * holds up the receivers (see take_claimed). */
	bool published = canal__ring_fill(ch, pos, elt);
	if (likely(published))
		wake_receivers(ch, pos, 1);
	chain_senders(ch, pos + 1);
	if (unlikely(!published))
		return -EOWNERDEAD;
	if (unlikely(select_unit) && !try_only)
		return canal__sync_wait_ack(ch, pos, deadline);
	return 0;
}

/* After claiming position pos for receiving: hand it out (copy, or lend
 * it). Returns 0, TAKE_SKIPPED for a withdrawn element (released), or
 * -EOWNERDEAD if a peer repaired the slot meanwhile (repair.c). */
#define TAKE_SKIPPED 1
static int take_claimed(struct canal_chan *ch, uint64_t pos, void *elt,
			struct canal_slot *lend)
{
	struct canal_slot_hdr *s = slot_at(ch, pos);
	uint64_t st = atomic_load_explicit(&s->stamp, memory_order_acquire);

	/* A claim withdrawn before we named ourselves (canal__claim_name):
	 * the slot is no longer ours, and what it holds may be another
	 * claim's element: neither copied nor lent. */
	if (unlikely(ch->shared) && !stamp_is_published(ch, pos, st)) {
		chain_receivers(ch, pos + 1);
		return -EOWNERDEAD;
	}
	if (unlikely(ch->sync)) {
		waitq_notify(&ch->st->ack_wq, UINT32_MAX, ch->shared);
		/* Take the element: a timed sender may withdraw it at its
		 * deadline (FULL -> SKIP, rendezvous.c); of its CAS and ours
		 * exactly one wins. On failure st is SKIP. Release on
		 * success: a repair that reads TAKEN (acquire, repair.c)
		 * sees our owner word, written after our claim of head. */
		if (stamp_state(st) == STAMP_FULL)
			atomic_compare_exchange_strong_explicit(
				&s->stamp, &st, stamp_for(ch, pos, STAMP_TAKEN),
				memory_order_acq_rel, memory_order_acquire);
	}
	/* The chain (wake.h) once the slot is released, not while we hold
	 * it: its FUTEX_WAKE takes microseconds, and the thread it wakes may
	 * preempt us on this CPU, while the sender of the next lap waits for
	 * the slot (canal__ring_claim_send's held wait). */
	if (unlikely(stamp_state(st) == STAMP_SKIP)) {
		canal__ring_release(ch, pos);
		wake_senders(ch, pos, 1);
		chain_receivers(ch, pos + 1);
		return TAKE_SKIPPED;
	}
	if (lend) {
		chain_receivers(ch, pos + 1);
		lend->data = slot_data(ch, s);
		lend->position = pos;
		return 0;
	}
	copy_elt(elt, slot_data(ch, s), ch->elt_size);
	bool released = canal__ring_release(ch, pos);
	if (likely(released))
		wake_senders(ch, pos, 1);
	chain_receivers(ch, pos + 1);
	return likely(released) ? 0 : -EOWNERDEAD;
}

/* A committed receiver waits past its deadline in slices of this long, and
 * leaves after this long (see recv_ring). */
#define COMMITTED_SLICE_NS 1000000u
#define COMMITTED_GRACE_NS 2000000u

/* Receive from the ring, the receiver having announced itself if the
 * channel is synchronous. committed: a sender has taken this receiver's
 * demand, so its element is coming: the receiver waits past its deadline,
 * in slices, retrying the retract after each (it succeeds once a unit is
 * back: crash repair gives a dead sender's unit back, repair.c); after
 * COMMITTED_GRACE_NS it leaves the coming element to the next receiver. */
static int recv_ring(struct canal_chan *ch, void *elt, struct canal_slot *lend,
		     uint64_t deadline, bool try_only, bool committed,
		     bool select)
{
	uint64_t pos;
	/* One wait on a held slot across the committed slices below: the
	 * time on a dead sender's slot must add up to the repair's grace
	 * periods (1 ms, then 0.9 s for a claim without an owner word; each
	 * slice afresh never reached them: test_sync_dead_select). */
	struct canal__held_wait hw = CANAL__HELD_WAIT_INIT;
	/* First poll as a try operation does (the slot, not tail: see
	 * canal__ring_claim_recv), QUIET_SPINS times: the cheapest wait for an
	 * element that is on its way. */
	/* (A channel with a progress hook polls through it instead: its
	 * elements come only from the hook's party, hook.h.) */
	unsigned polls = try_only || ch->hook || !canal__spin_pays()
				 ? 0
				 : QUIET_SPINS;
	/* A task (it never polls) that comes here has just found no
	 * element: canal_recv's fast path failed, or a synchronous receive
	 * announced itself, which no sender can have answered yet while
	 * this task runs. A claim now would only fail again: go straight to
	 * the wait, which looks at the ring again once registered (and
	 * returns at once if an element came meanwhile). */
	bool wait_first = !try_only && !committed && !select && !polls &&
			  canal__parker_get()->ops->is_task;
	/* A receive of one element copied out may take a parked sender's
	 * (handoff.h: buffered thread channels). */
	bool take_ok = !lend && !select && !ch->sync && !ch->shared &&
		       !ch->hook;

	for (;;) {
		if (chan_damaged(ch))
			return -EBADMSG;
		if (wait_first) {
			wait_first = false;
			int w = canal__ring_wait_recv(
				ch, take_ok ? elt : NULL, deadline);
			if (w == CANAL__WAIT_DONE)
				return 0;
			if (w == 0)
				continue;
		}
		uint64_t dl = deadline;
		/* Committed: wait past the deadline, in slices (see
		 * above). A select also wakes at each slice before its
		 * deadline, however far (none: the same): the retractions
		 * below may free it meanwhile (a unit of the other class
		 * left over), and it must then go round its cases again,
		 * since no element may be coming to this one: one waiting
		 * for ever here, while the element it was counted for went
		 * to another channel as an orphan, hung select_both at
		 * capacity 0 (test_task_select_sync). */
		if (committed) {
			uint64_t slice = canal_now_ns() + COMMITTED_SLICE_NS;
			if (slice > dl || select)
				dl = slice;
		}
		long r = canal__ring_claim_recv(ch, 1, &pos, try_only || polls,
						try_only ? 0 : dl, &hw);
		if (likely(r > 0)) {
			int t = take_claimed(ch, pos, elt, lend);
			if (t != TAKE_SKIPPED)
				return t;
			continue;
		}
		/* Empty, and senders parked with their element: a try
		 * receive takes the oldest one's (handoff.h); a waiting one
		 * after its polls and its wait's spin phases, before it
		 * would sleep (the sender a release just woke usually comes
		 * within them on a quiet machine: an early take costs a
		 * wake-up, bounded1_mpsc 438 -> 668 ns a message). */
		if (r == -EAGAIN && try_only && take_ok &&
		    canal__handoff_take(ch, elt))
			return 0;
		if (r == -EAGAIN && polls) {
			/* Read-only until the slot looks published. */
			do {
				polls--;
				canal__cpu_relax();
			} while (polls && !canal__ring_probe_recv(ch));
			canal__spin_outcome(polls != 0);
			continue;
		}
		if (try_only)
			return (int)r; /* -EAGAIN, -EPIPE, -EBADMSG */
		if (r == -EAGAIN) {
			int w = canal__ring_wait_recv(ch, take_ok ? elt : NULL,
						      dl);
			if (w == CANAL__WAIT_DONE)
				return 0;
			if (w == 0)
				continue;
			/* Timed out: one last attempt, then give up. */
			r = canal__ring_claim_recv(ch, 1, &pos, false, 0, &hw);
			if (r > 0) {
				int t = take_claimed(ch, pos, elt, lend);
				if (t != TAKE_SKIPPED)
					return t;
				continue;
			}
		}
		if (r != -EAGAIN && r != -ETIMEDOUT)
			return (int)r; /* -EPIPE, -EBADMSG */
		if (!ch->sync || canal__sync_retract(ch, select))
			return -ETIMEDOUT;
		/* A sender took our unit. Receivers are interchangeable (they
		 * take elements from one ring in order), so a unit of the
		 * other class left over also frees us: a select whose element
		 * a plain receiver took, a reserve's unit given back as plain
		 * by its abort or by crash repair. Else an element is coming
		 * for us: wait for it, past the deadline, in slices. */
		if (committed && canal__sync_retract(ch, !select))
			return -ETIMEDOUT;
		/* (now >= deadline first: the unsigned difference wraps
		 * while the deadline is ahead, test_revsel_committed_finite.) */
		uint64_t now = committed && deadline != CANAL_NO_DEADLINE
				       ? canal_now_ns()
				       : 0;
		if (committed && deadline != CANAL_NO_DEADLINE &&
		    now >= deadline && now - deadline >= COMMITTED_GRACE_NS) {
			/* The sender that took our unit still holds its slot:
			 * a reserve (its commit waits for the ack), or a
			 * sender preempted before publishing. Leave by the
			 * deadline (and a grace): its element goes to the next
			 * receiver, as an orphan. */
			canal__sync_make_orphan(ch);
			return -ETIMEDOUT;
		}
		committed = true;
	}
}

int canal__sync_recv_announced(struct canal_chan *ch, void *elt,
			       uint64_t deadline, bool committed)
{
	return recv_ring(ch, elt, NULL, deadline, false, committed, true);
}

/* How long a try_recv on a synchronous channel waits for a sender that is
 * already waiting to hand its element over. */
#define SYNC_TRY_WAIT_NS 1000000u

/* try_only receive on a synchronous channel: only an element in the ring
 * or (if wait_sender) a waiting sender can make it succeed. */
static int sync_try_recv(struct canal_chan *ch, void *elt,
			 struct canal_slot *lend, bool wait_sender)
{
	bool ready = canal__ring_can_recv(ch);
	if (!ready && (!wait_sender || !canal__sync_senders_waiting(ch)))
		return -EAGAIN;
	canal__sync_announce(ch, false);
	int r = recv_ring(ch, elt, lend,
			  ready ? canal_now_ns()
				: canal_now_ns() + SYNC_TRY_WAIT_NS,
			  false, false, false);
	return r == -ETIMEDOUT ? -EAGAIN : r;
}

static int recv_impl(struct canal_chan *ch, void *elt,
		     struct canal_slot *lend, uint64_t deadline, bool try_only)
{
	if (likely(!ch->sync))
		return recv_ring(ch, elt, lend, deadline, try_only, false,
				 false);
	if (try_only)
		return sync_try_recv(ch, elt, lend, true);
	canal__sync_announce(ch, false);
	return recv_ring(ch, elt, lend, deadline, false, false, false);
}

/* A shared channel whose mapping was lost meanwhile: whatever the
 * operation did, it did it in memory no peer sees. */
/* Deadline 0 means "try" inside (the ring's claims): a timed call given an
 * absolute deadline of 0 (long past) is a timed call all the same, ending
 * in -ETIMEDOUT, never -EAGAIN, and never a loop between a claim that
 * says "try again" and a wait whose condition holds (a slot lent while
 * the indices say there is room). */
static uint64_t timed_deadline(uint64_t deadline, bool try_only)
{
	return !try_only && deadline == 0 ? 1 : deadline;
}

int canal__send(struct canal_chan *ch, const void *elt,
		struct canal_slot *reserve, uint64_t deadline, bool try_only)
{
	int r = send_impl(ch, elt, reserve, timed_deadline(deadline, try_only),
			  try_only);
	return chan_damaged(ch) ? -EBADMSG : r;
}

int canal__recv(struct canal_chan *ch, void *elt, struct canal_slot *lend,
		uint64_t deadline, bool try_only)
{
	int r = recv_impl(ch, elt, lend, timed_deadline(deadline, try_only),
			  try_only);
	return chan_damaged(ch) ? -EBADMSG : r;
}

int canal__try_send_one(struct canal_chan *ch, const void *elt)
{
	return canal__send(ch, elt, NULL, 0, true);
}

int canal__try_recv_one(struct canal_chan *ch, void *elt, bool wait_sender)
{
	if (ch->sync) {
		int r = sync_try_recv(ch, elt, NULL, wait_sender);
		return chan_damaged(ch) ? -EBADMSG : r;
	}
	return canal__recv(ch, elt, NULL, 0, true);
}

CANAL_EXPORT size_t canal_chan_elt_size(const struct canal_chan *ch)
{
	return ch->elt_size;
}

CANAL_EXPORT size_t canal_chan_capacity(const struct canal_chan *ch)
{
	return ch->capacity;
}

CANAL_EXPORT size_t canal_chan_len(const struct canal_chan *ch)
{
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	uint64_t n = tail_position(t) > h ? tail_position(t) - h : 0;
	/* At most the ring (I1): a shared header's indices are a peer's to
	 * write, and the count is not to be trusted beyond what the channel
	 * can hold (test_revdoc3_len_hostile). */
	return (size_t)(n < ch->ring ? n : ch->ring);
}

CANAL_EXPORT int canal_chan_is_closed(const struct canal_chan *ch)
{
	return chan_closed(ch) ? 1 : 0;
}

CANAL_EXPORT int canal_close(struct canal_chan *ch)
{
	if (unlikely(!ch))
		return -EINVAL;
	/* A damaged handle's mapping is private zeros (sigbus.c): a close
	 * there reaches no peer. Asked again after the fetch_or, which may
	 * be the access that found the cut (test_revdoc3_close_damaged). */
	if (chan_damaged(ch))
		return -EBADMSG;
	/* seq_cst: the "N1" of every waiter's condition (they all read tail). */
	uint64_t old = atomic_fetch_or_explicit(&ch->st->tail, TAIL_CLOSED,
						memory_order_seq_cst);
	if (chan_damaged(ch))
		return -EBADMSG;
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
 * steps and orderings are exactly those of canal__ring_claim_send + publish
 * (canal__ring_claim_recv + release) and the wake-up checks, without the
 * calls; anything else (full, empty, contention, closed, synchronous or
 * shared channels) takes the general path.
 */
static inline bool send_fast(struct canal_chan *ch, const void *elt)
{
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_relaxed);
	uint64_t pos = tail_position(t);
	struct canal_slot_hdr *s = slot_at(ch, pos);

	if (unlikely(t & TAIL_CLOSED) ||
	    atomic_load_explicit(&s->stamp, memory_order_acquire) !=
		    stamp_for(ch, pos, STAMP_FREE) ||
	    !atomic_compare_exchange_strong_explicit(
		    &ch->st->tail, &t, t + tail_advance(1), memory_order_seq_cst,
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
	copy_elt(elt, slot_data(ch, s), ch->elt_size);
	atomic_store_explicit(&s->stamp, stamp_next_lap(ch, h, STAMP_FREE),
			      memory_order_release);
	wake_senders(ch, h, 1);
	chain_receivers(ch, h + 1);
	return true;
}

CANAL_EXPORT int canal_send(struct canal_chan *ch, const void *elt)
{
	CHECK_ELT(ch, elt);
	if (likely(!ch->sync && !ch->shared) && likely(send_fast(ch, elt))) {
		canal__ops_done(1);
		return 0;
	}
	return canal__counted(canal__send(ch, elt, NULL, CANAL_NO_DEADLINE,
					  false));
}

CANAL_EXPORT int canal_recv(struct canal_chan *ch, void *elt)
{
	CHECK_ELT(ch, elt);
	if (likely(!ch->sync && !ch->shared) && likely(recv_fast(ch, elt))) {
		canal__ops_done(1);
		return 0;
	}
	return canal__counted(canal__recv(ch, elt, NULL, CANAL_NO_DEADLINE,
					  false));
}

CANAL_EXPORT int canal_try_send(struct canal_chan *ch, const void *elt)
{
	CHECK_ELT(ch, elt);
	return canal__send(ch, elt, NULL, 0, true);
}

CANAL_EXPORT int canal_try_recv(struct canal_chan *ch, void *elt)
{
	CHECK_ELT(ch, elt);
	return canal__recv(ch, elt, NULL, 0, true);
}

CANAL_EXPORT int canal_send_deadline(struct canal_chan *ch, const void *elt,
			       uint64_t deadline_ns)
{
	CHECK_ELT(ch, elt);
	return canal__counted(canal__send(ch, elt, NULL, deadline_ns, false));
}

CANAL_EXPORT int canal_recv_deadline(struct canal_chan *ch, void *elt,
			       uint64_t deadline_ns)
{
	CHECK_ELT(ch, elt);
	return canal__counted(canal__recv(ch, elt, NULL, deadline_ns, false));
}

CANAL_EXPORT int canal_send_timeout(struct canal_chan *ch, const void *elt,
			      int64_t timeout_ns)
{
	return canal_send_deadline(ch, elt,
				   canal__deadline_from_timeout(timeout_ns));
}

CANAL_EXPORT int canal_recv_timeout(struct canal_chan *ch, void *elt,
			      int64_t timeout_ns)
{
	return canal_recv_deadline(ch, elt,
				   canal__deadline_from_timeout(timeout_ns));
}

