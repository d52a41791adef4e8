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

/*
 * Waiting senders. A sender that waits for demand (a blocking send, a
 * select with a send case) is counted, so that canal_try_recv, which
 * succeeds only with an element or a waiting sender, announces itself
 * and waits briefly for that sender's element. A process killed while
 * counted would leave the count up for good, and every later try receive
 * would wait its full 1 ms for nobody (test_revseg_dead_waiting_sender).
 * So on a shared channel a waiting sender counts itself in the cell of
 * its attacher id (a cell holds (id << 32) | count: the threads of one
 * handle share it), and a try receive that finds senders counted first
 * drops the cells of attachers that are gone (liveness.c: their locks
 * went with their process). A cell changes only by its attacher's own
 * CASes while that attacher lives, and only from (gone id, n) to 0 once
 * it is gone: no count is lost or dropped twice. Senders that find no
 * cell free, and every sender of a thread channel, count in
 * senders_waiting, which no repair can tell (GUARANTEES.md).
 * Every change is a seq_cst RMW, read seq_cst (see select.c for the
 * pairing with the sender's re-check of demand).
 */
#define CELL_COUNT_MASK 0xffffffffull
#define TOKEN_ANONYMOUS (-1)

static inline uint32_t cell_id(uint64_t cell)
{
	return (uint32_t)(cell >> 32);
}

int canal__sync_sender_waits(struct canal_chan *ch)
{
	if (ch->shared) {
		uint32_t id = canal__self_id(ch);
		uint64_t mine = (uint64_t)id << 32;
		for (int i = 0; id != 0 && i < CANAL_SENDER_CELLS; i++) {
			_Atomic uint64_t *c = &ch->st->sender_cells[i];
			uint64_t v = atomic_load_explicit(c,
							  memory_order_relaxed);
			/* Our id's cell (its count below the top), or a
			 * free one. */
			while (v == 0 ||
			       (cell_id(v) == id &&
				(v & CELL_COUNT_MASK) != CELL_COUNT_MASK)) {
				if (atomic_compare_exchange_weak_explicit(
					    c, &v, (v ? v : mine) + 1,
					    memory_order_seq_cst,
					    memory_order_relaxed))
					return i;
			}
		}
	}
	atomic_fetch_add_explicit(&ch->st->senders_waiting, 1,
				  memory_order_seq_cst);
	return TOKEN_ANONYMOUS;
}

void canal__sync_sender_done(struct canal_chan *ch, int token)
{
	if (token == TOKEN_ANONYMOUS) {
		atomic_fetch_sub_explicit(&ch->st->senders_waiting, 1,
					  memory_order_relaxed);
		return;
	}
	uint32_t id = canal__self_id(ch);
	_Atomic uint64_t *c = &ch->st->sender_cells[token];
	uint64_t v = atomic_load_explicit(c, memory_order_relaxed);
	/* Still our id's (else a peer scribbled on it: leave it). */
	while (cell_id(v) == id && (v & CELL_COUNT_MASK) != 0 &&
	       !atomic_compare_exchange_weak_explicit(
		       c, &v, (v & CELL_COUNT_MASK) == 1 ? 0 : v - 1,
		       memory_order_relaxed, memory_order_relaxed))
		;
}

bool canal__sync_senders_waiting(struct canal_chan *ch)
{
	bool any = atomic_load_explicit(&ch->st->senders_waiting,
					memory_order_seq_cst) != 0;
	if (!ch->shared)
		return any;
	for (int i = 0; i < CANAL_SENDER_CELLS; i++) {
		_Atomic uint64_t *c = &ch->st->sender_cells[i];
		uint64_t v = atomic_load_explicit(c, memory_order_seq_cst);
		if (v == 0)
			continue;
		/* A cell of an attacher that is gone: it can never change
		 * again but by this drop (a CAS: of two droppers one wins). */
		if (canal__attacher_gone(ch, cell_id(v)) &&
		    atomic_compare_exchange_strong_explicit(
			    c, &v, 0, memory_order_seq_cst,
			    memory_order_relaxed))
			continue;
		any = true;
	}
	return any;
}

static bool demand_ready(void *arg)
{
	return canal__sync_can_send(arg);
}

int canal__sync_take_demand(struct canal_chan *ch, uint64_t deadline,
			    bool try_only, bool *select)
{
	const struct canal__wait_cond c = { .ready = demand_ready,
					    .probe = demand_ready,
					    .arg = ch,
					    .kind = CANAL__WAIT_DEMAND };
	bool counted = false;
	int token = TOKEN_ANONYMOUS;
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
			token = canal__sync_sender_waits(ch);
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
		canal__sync_sender_done(ch, token);
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
	const struct canal__wait_cond c = { .ready = acked,
					    .probe = acked,
					    .arg = &a,
					    .kind = CANAL__WAIT_ACK };

	while (!acked(&a)) {
		if (canal__wait(&ch->st->ack_wq, ch->shared, &c, deadline) ==
			    -ETIMEDOUT &&
		    !acked(&a))
			return withdraw(ch, pos) ? -ETIMEDOUT : 0;
	}
	return 0;
}
