/* SPDX-License-Identifier: MIT */
/*
 * handoff.c - senders parked with their element; receivers that find the
 * ring empty take those elements (handoff.h: states, proof, who wakes
 * whom).
 */
#include "handoff.h"

#include <errno.h>

enum {
	HO_PENDING = 0,
	HO_CLAIMED = 1,
	HO_DONE = 2,
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

/* Under ho_lock. The count is a hint for receivers (no wake-up depends on
 * it: handoff.h); the list under the lock is the truth. */
static void link_last(struct canal_chan *ch, struct canal__handoff *n)
{
	n->next = NULL;
	n->prev = ch->ho_last;
	if (ch->ho_last)
		ch->ho_last->next = n;
	else
		ch->ho_first = n;
	ch->ho_last = n;
	atomic_fetch_add_explicit(&ch->st->handoffs, 1, memory_order_relaxed);
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

bool canal__handoff_eligible(const struct canal_chan *ch)
{
	return !ch->shared && !ch->sync && !ch->hook &&
	       !canal__parker_get()->ops->is_task;
}

/* The sender takes its node back: true if it was still PENDING (now
 * unlinked: the element is the sender's again); false if a receiver took
 * it (CLAIMED or DONE). */
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
	int ret = 0;
	bool slept = false;

	/* W1 of wait.h on send_wq, then the link. */
	uint32_t key = waitq_prepare(q);
	ho_lock(ch);
	link_last(ch, &n);
	ho_unlock(ch);
	/* W2: room, or closed: no sleep; the node goes back and the caller
	 * claims (or meets the close) itself. */
	if (!canal__ring_can_send(ch)) {
		_Atomic uint32_t *words[2] = { &q->seq, &n.state };
		const uint32_t keys[2] = { key, HO_PENDING };
		const bool shared[2] = { false, false };
		int w = p->ops->wait_many(p->self, words, keys, shared, 2,
					  deadline);
		slept = true;
		if (w == -ETIMEDOUT && canal_now_ns() >= deadline)
			ret = -ETIMEDOUT;
	}
	if (!withdraw(ch, &n)) {
		/* A receiver took it: wait for its copy (a few
		 * instructions; the deadline is not ours to apply any
		 * more: the element is received). */
		uint32_t s;
		while ((s = atomic_load_explicit(&n.state,
						 memory_order_acquire)) !=
		       HO_DONE)
			p->ops->wait(p->self, &n.state, s, false,
				     CANAL_NO_DEADLINE);
		ret = CANAL__WAIT_DONE;
	}
	/* As canal__wait after a sleep on q: a sender that retries clears a
	 * chain's mark; one whose send is done passes it on (wait.h). */
	if (slept)
		waitq_after_sleep(q, false, ret != CANAL__WAIT_DONE);
	waitq_finish(q);
	/* A send a receiver finished may have been the one woken to fill
	 * the room a release made (wake_senders wakes one sender): it will
	 * not fill it, so while room remains the wake-up goes on to another
	 * sender asleep on q (a review: the other sender slept beside an
	 * empty ring, test_handoff_lost_wake). Whether or not this one was
	 * woken: a spare wake-up only makes a sender re-check. */
	if (ret == CANAL__WAIT_DONE && canal__ring_can_send(ch) &&
	    waitq_needs_wake(q, false))
		waitq_wake(q, 1, false);
	return ret;
}

bool canal__handoff_take(struct canal_chan *ch, void *elt)
{
	/* The count first (nobody parked: one load). Then one attempt at
	 * the lock: a receive never waits for a list holder that was
	 * preempted (a try receive returns at once); it then polls or waits
	 * as without parked senders. */
	if (!atomic_load_explicit(&ch->st->handoffs, memory_order_relaxed) ||
	    atomic_load_explicit(&ch->ho_lock, memory_order_relaxed) ||
	    atomic_exchange_explicit(&ch->ho_lock, 1, memory_order_acquire))
		return false;
	struct canal__handoff *n = ch->ho_first;
	if (n) {
		/* Empty and open, read with the node linked (its sender
		 * blocked): handoff.h, "Order". seq_cst: close's fetch_or
		 * and the claims are seq_cst RMWs. */
		uint64_t t = atomic_load_explicit(&ch->st->tail,
						  memory_order_seq_cst);
		uint64_t h = atomic_load_explicit(&ch->st->head,
						  memory_order_seq_cst);
		if ((t & TAIL_CLOSED) || tail_position(t) != h)
			n = NULL;
	}
	if (n) {
		unlink_node(ch, n);
		atomic_store_explicit(&n->state, HO_CLAIMED,
				      memory_order_relaxed);
	}
	ho_unlock(ch);
	if (!n)
		return false;
	copy_elt(elt, n->elt, ch->elt_size);
	/* The last touch of the node: the exchange (seq_cst RMW, release
	 * for the sender's acquire; canal__wake's contract), then the
	 * wake-up of its word. */
	atomic_exchange_explicit(&n->state, HO_DONE, memory_order_seq_cst);
	canal__wake(&n->state, 1, false);
	return true;
}
