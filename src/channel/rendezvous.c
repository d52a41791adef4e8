/* SPDX-License-Identifier: MIT */
/*
 * rendezvous.c - synchronous channels (capacity 0): demand, orphans and the
 * acknowledgement a sender waits for. The protocol is described in
 * internal.h ("SYNCHRONOUS CHANNELS").
 *
 * Invariants (besides the ring's):
 *  R1 A sender pushes an element only after taking one unit of demand, so
 *     every element in the ring has a receiver committed to it, or is an
 *     orphan (counted in orphans) that the next announcing receiver takes.
 *  R2 A unit of demand taken and not pushed is given back (try that finds
 *     the ring full, timeout, abort of a reserve, and crash repair of a
 *     dead sender's slot: repair.c).
 *  R3 Orphans come only from select units, whose senders wait for the
 *     ack: so a send returns only once its element is in the hands of a
 *     receiver that will take it (a plain one, which never goes
 *     elsewhere) or has been taken.
 * Memory ordering: every change of demand is a seq_cst RMW (the N1 of the
 * wait protocol for senders waiting for demand, whose condition reads it);
 * the ack is the receiver's seq_cst CAS of head (the N1 for the sender
 * waiting for head to pass its position).
 */
#include "internal.h"

#include <errno.h>

static _Atomic int64_t *demand_of(struct canal_chan *ch, bool select)
{
	return select ? &ch->st->select_demand : &ch->st->demand;
}

bool canal__sync_can_send(struct canal_chan *ch)
{
	return atomic_load_explicit(&ch->st->demand, memory_order_seq_cst) > 0 ||
	       atomic_load_explicit(&ch->st->select_demand,
				    memory_order_seq_cst) > 0 ||
	       chan_closed(ch);
}

/* CAS *d from a positive value to one less. */
static bool take_unit(_Atomic int64_t *d)
{
	int64_t v = atomic_load_explicit(d, memory_order_relaxed);
	while (v > 0) {
		if (atomic_compare_exchange_weak_explicit(d, &v, v - 1,
							  memory_order_seq_cst,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

void canal__sync_announce(struct canal_chan *ch, bool select)
{
	if (!select && take_unit(&ch->st->orphans))
		return; /* an element without receiver is ours */
	/* seq_cst: the "N1" of the wait protocol for senders waiting for
	 * demand (canal__sync_can_send). */
	atomic_fetch_add_explicit(demand_of(ch, select), 1,
				  memory_order_seq_cst);
	waitq_notify(&ch->st->demand_wq, 1, ch->shared);
}

bool canal__sync_retract(struct canal_chan *ch, bool select)
{
	return take_unit(demand_of(ch, select));
}

void canal__sync_make_orphan(struct canal_chan *ch)
{
	atomic_fetch_add_explicit(&ch->st->orphans, 1, memory_order_seq_cst);
}

void canal__sync_give_back(struct canal_chan *ch, bool select)
{
	/* An orphan counted meanwhile stands for the element this unit was
	 * taken for (its receiver left: a committed receiver past its grace,
	 * a select that went elsewhere), which will now never come: cancel
	 * it instead of counting a receiver that is gone. If the receiver is
	 * still there, it takes the element the orphan stood for (receivers
	 * are interchangeable, as in canal__sync_announce). */
	if (take_unit(&ch->st->orphans))
		return;
	atomic_fetch_add_explicit(demand_of(ch, select), 1,
				  memory_order_seq_cst);
	waitq_notify(&ch->st->demand_wq, 1, ch->shared);
}

static bool demand_ready(void *arg)
{
	return canal__sync_can_send(arg);
}

int canal__sync_take_demand(struct canal_chan *ch, uint64_t deadline,
			    bool try_only, bool *select)
{
	const struct canal__wait_cond c = { demand_ready, demand_ready, ch,
					    CANAL__WAIT_DEMAND, NULL };
	bool counted = false;
	int ret;

	for (;;) {
		if (chan_damaged(ch)) {
			ret = -EBADMSG;
			goto out;
		}
		/* Plain receivers first: their hand-off needs no ack. */
		if (take_unit(&ch->st->demand)) {
			*select = false;
			ret = 0;
			goto out;
		}
		if (take_unit(&ch->st->select_demand)) {
			*select = true;
			ret = 0;
			goto out;
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
		int w = canal__wait(&ch->st->demand_wq, ch->shared, &c,
				    deadline);
		if (w == -ETIMEDOUT && !canal__sync_can_send(ch)) {
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

struct ack_wait {
	struct canal_chan *ch;
	uint64_t pos;
};

/* Head past our position (a receiver claimed it), or closed. */
static bool acked(void *arg)
{
	struct ack_wait *a = arg;
	return atomic_load_explicit(&a->ch->st->head, memory_order_seq_cst) >
		       a->pos ||
	       chan_closed(a->ch) || chan_damaged(a->ch);
}

/* A timed sender's element nobody took by its deadline: withdraw it (the
 * receiver's CAS to TAKEN and ours to SKIP: exactly one wins), give its
 * unit back, and let a receiver waiting on the position skip it. */
static bool withdraw(struct canal_chan *ch, uint64_t pos)
{
	uint64_t full = stamp_for(ch, pos, STAMP_FULL);
	if (!atomic_compare_exchange_strong_explicit(
		    &slot_at(ch, pos)->stamp, &full,
		    stamp_for(ch, pos, STAMP_SKIP), memory_order_seq_cst,
		    memory_order_relaxed))
		return false;
	canal__sync_give_back(ch, true);
	waitq_notify(&ch->st->recv_wq, 1, ch->shared);
	return true;
}

int canal__sync_wait_ack(struct canal_chan *ch, uint64_t pos,
			 uint64_t deadline)
{
	struct ack_wait a = { ch, pos };
	const struct canal__wait_cond c = { acked, acked, &a, CANAL__WAIT_ACK, NULL };

	while (!acked(&a)) {
		if (canal__wait(&ch->st->ack_wq, ch->shared, &c, deadline) ==
			    -ETIMEDOUT &&
		    !acked(&a))
			return withdraw(ch, pos) ? -ETIMEDOUT : 0;
	}
	return 0;
}
