/* SPDX-License-Identifier: MIT */
/*
 * handoff.c - senders parked with their element; receivers that move those
 * elements into the ring (handoff.h: states, proof, who wakes whom).
 */
#include "handoff.h"
#include "wake.h"

#include <errno.h>

enum {
	HO_PENDING = 0,
	HO_CLAIMED = 1,
	HO_DONE = 2,
	HO_CLOSED = 3,
};

/* On the parked sender's stack. */
struct canal__handoff {
	_Atomic uint32_t state;	    /* HO_*: the word its sender sleeps on */
	const void *elt;	    /* the sender's element (read-only) */
	struct canal__handoff *prev; /* under ho_lock, while linked */
	struct canal__handoff *next;
};

/* The list's lock: held for a few instructions (link, unlink, a state
 * change), never across a claim, a copy or a wake-up. A waiter snoozes
 * (pauses, then yields through its parker: the holder may be preempted). */
static void ho_lock(struct canal_chan *ch)
{
	struct canal__snooze sn = CANAL__SNOOZE_INIT;
	while (atomic_exchange_explicit(&ch->ho_lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&ch->ho_lock, memory_order_relaxed))
			canal__snooze(&sn);
}

static void ho_unlock(struct canal_chan *ch)
{
	atomic_store_explicit(&ch->ho_lock, 0, memory_order_release);
}

/* Under ho_lock. The count is seq_cst: the sender's "link" of the
 * pairing in handoff.h. */
static void link_last(struct canal_chan *ch, struct canal__handoff *n)
{
	n->next = NULL;
	n->prev = ch->ho_last;
	if (ch->ho_last)
		ch->ho_last->next = n;
	else
		ch->ho_first = n;
	ch->ho_last = n;
	atomic_fetch_add_explicit(&ch->st->handoffs, 1, memory_order_seq_cst);
}

static void link_first(struct canal_chan *ch, struct canal__handoff *n)
{
	n->prev = NULL;
	n->next = ch->ho_first;
	if (ch->ho_first)
		ch->ho_first->prev = n;
	else
		ch->ho_last = n;
	ch->ho_first = n;
	atomic_fetch_add_explicit(&ch->st->handoffs, 1, memory_order_seq_cst);
}

static void unlink_node(struct canal_chan *ch, struct canal__handoff *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		ch->ho_first = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		ch->ho_last = n->prev;
	atomic_fetch_sub_explicit(&ch->st->handoffs, 1, memory_order_relaxed);
}

/* The last touch of a node by anyone but its sender: the exchange (seq_cst
 * RMW, release for the sender's acquire; canal__wake's contract), then the
 * wake-up of its word. */
static void settle(struct canal__handoff *n, uint32_t state)
{
	atomic_exchange_explicit(&n->state, state, memory_order_seq_cst);
	canal__wake(&n->state, 1, false);
}

bool canal__handoff_eligible(const struct canal_chan *ch)
{
	return !ch->shared && !ch->sync && !ch->hook &&
	       !canal__parker_get()->ops->is_task;
}

/* The sender takes its node back: true if it was still PENDING (now
 * unlinked: the element is the sender's again); false if a receiver holds
 * it (CLAIMED) or settled it. */
static bool withdraw(struct canal_chan *ch, struct canal__handoff *n)
{
	ho_lock(ch);
	bool mine = atomic_load_explicit(&n->state, memory_order_relaxed) ==
		    HO_PENDING;
	if (mine)
		unlink_node(ch, n);
	ho_unlock(ch);
	return mine;
}

int canal__handoff_park(void *arg, uint64_t deadline)
{
	const struct canal__handoff_arg *a = arg;
	struct canal_chan *ch = a->ch;
	const struct canal__parker *p = canal__parker_get();
	struct canal__handoff n = { HO_PENDING, a->elt, NULL, NULL };
	struct canal_waitq *q = &ch->st->send_wq;

	/* Counted among the queue's waiters, as any sleeper (the spin
	 * policy reads the count: wait.h), though it sleeps on its own
	 * word. */
	(void)waitq_prepare(q);
	ho_lock(ch);
	link_last(ch, &n);
	ho_unlock(ch);
	int ret = 0;
	/* W2: room, or closed, seen after the link: take the element back
	 * and claim the room (or meet the close) ourselves. */
	bool leave = canal__ring_can_send(ch);
	for (;;) {
		if (leave && withdraw(ch, &n))
			break;
		uint32_t s = atomic_load_explicit(&n.state,
						  memory_order_acquire);
		if (s == HO_DONE) {
			ret = CANAL__WAIT_DONE;
			break;
		}
		if (s == HO_CLOSED)
			break; /* the retry's claim says -EPIPE */
		/* PENDING, or CLAIMED: a receiver is moving the element and
		 * settles the node within a few instructions; its deadline
		 * does not apply (the outcome is not ours to choose). */
		int w = p->ops->wait(p->self, &n.state, s, false,
				     s == HO_CLAIMED ? CANAL_NO_DEADLINE
						     : deadline);
		if (w == -ETIMEDOUT && canal_now_ns() >= deadline) {
			leave = true;
			ret = -ETIMEDOUT;
		}
	}
	waitq_finish(q);
	return ret;
}

void canal__handoff_serve(struct canal_chan *ch, uint32_t k)
{
	if (ch->shared)
		return; /* the count is a shared word: never trusted there */
	while (k-- &&
	       atomic_load_explicit(&ch->st->handoffs, memory_order_relaxed)) {
		ho_lock(ch);
		struct canal__handoff *n = ch->ho_first;
		if (!n) {
			ho_unlock(ch);
			return;
		}
		unlink_node(ch, n);
		atomic_store_explicit(&n->state, HO_CLAIMED,
				      memory_order_relaxed);
		const void *elt = n->elt;
		ho_unlock(ch);
		/* A try claim: it never waits (a slot still held by another
		 * receiver, or taken by a sender meanwhile, sends the node
		 * back to the list, whose next serve takes it). */
		uint64_t pos;
		long r = canal__ring_claim_send(ch, 1, &pos, 0, NULL, false);
		if (r > 0) {
			/* A thread channel's fill cannot fail (no repair). */
			(void)canal__ring_fill(ch, pos, elt);
			wake_receivers(ch, pos, 1);
			settle(n, HO_DONE);
			continue;
		}
		if (r == -EPIPE) {
			settle(n, HO_CLOSED);
			return;
		}
		/* No room after all (-EAGAIN, -EBUSY): first in line again.
		 * The state goes back under the lock, before anyone can
		 * claim it again; the wake-up after (its sender may be
		 * waiting on CLAIMED to withdraw). */
		ho_lock(ch);
		link_first(ch, n);
		atomic_exchange_explicit(&n->state, HO_PENDING,
					 memory_order_seq_cst);
		ho_unlock(ch);
		canal__wake(&n->state, 1, false);
		return;
	}
}

void canal__handoff_close(struct canal_chan *ch)
{
	if (ch->shared)
		return;
	for (;;) {
		ho_lock(ch);
		struct canal__handoff *n = ch->ho_first;
		if (n) {
			unlink_node(ch, n);
			atomic_store_explicit(&n->state, HO_CLAIMED,
					      memory_order_relaxed);
		}
		ho_unlock(ch);
		if (!n)
			return;
		settle(n, HO_CLOSED);
	}
}
