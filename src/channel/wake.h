/* SPDX-License-Identifier: MIT */
/*
 * wake.h - who wakes whom: the wake-ups that follow each transition of the
 * ring, shared by send/recv, batches, single copy and the rendezvous.
 */
#ifndef CANAL_CHANNEL_WAKE_H
#define CANAL_CHANNEL_WAKE_H

#include "internal.h"

/*
 * Wake-ups follow the transitions, as Linux pipes do, so that the thread
 * that is the bottleneck (a forwarder feeding many readers) makes as few
 * wake syscalls as possible:
 *  - a sender wakes receivers only when its first element made the channel
 *    non-empty (head == its position when it looks after publishing);
 *  - a receiver that leaves elements behind wakes one more receiver (the
 *    chain), so there is an awake receiver while elements remain;
 *  - symmetrically, a receiver wakes senders only when it made the channel
 *    non-full, and a sender that leaves room behind wakes one more sender;
 *  - one chain in flight per queue: a chain that finds the thread woken by
 *    the previous one not yet back from its sleep leaves the work to it
 *    (base/wait.h, waitq_chain: fwd 100/100 between processes 0.094 ->
 *    0.044 s, pipes 0.035; threads 1000/1000 0.137 -> 0.104 s, floor
 *    0.087; docs/results/chain-20261128);
 *  - a chain runs once the slot is published or released, never between
 *    the claim and that store: its FUTEX_WAKE (and a preemption by the
 *    thread it wakes) would hold the slot the other side waits for.
 * No wake-up is lost: a sender does [CAS tail (seq_cst); load head
 * (seq_cst)] and a receiver [CAS head (seq_cst); load tail (seq_cst)]. In
 * the seq_cst total order, of the sender of position p and the receiver of
 * position p - 1, either the receiver's load of tail comes after the
 * sender's CAS (it sees p claimed and chains) or the sender's load of head
 * comes after the receiver's CAS (it sees head == p and wakes). Each side
 * first reads the queue's waiter count (the wait.h protocol), so the common
 * case with no sleeper costs one load.
 */

/* After publishing positions [pos, pos + k). (Also tells a progress
 * hook that wants to know, hook.h: every publication passes here.) */
static inline void wake_receivers(struct canal_chan *ch, uint64_t pos,
				  uint32_t k)
{
	if (unlikely(ch->hook != NULL) && ch->hook->published)
		ch->hook->published(ch->hook->arg);
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
	if (tail_position(t) > next)
		waitq_chain(&ch->st->recv_wq, ch->shared);
}

/* After releasing the slots of positions [pos, pos + k). */
static inline void wake_senders(struct canal_chan *ch, uint64_t pos,
				uint32_t k)
{
	if (likely(!waitq_needs_wake(&ch->st->send_wq, ch->shared)))
		return;
	uint64_t t = atomic_load_explicit(&ch->st->tail, memory_order_seq_cst);
	if (tail_position(t) == pos + ch->ring)
		waitq_wake(&ch->st->send_wq, k, ch->shared);
}

/* After claiming send positions up to (not including) next. */
static inline void chain_senders(struct canal_chan *ch, uint64_t next)
{
	if (likely(!waitq_needs_wake(&ch->st->send_wq, ch->shared)))
		return;
	uint64_t h = atomic_load_explicit(&ch->st->head, memory_order_seq_cst);
	if (next - h < ch->ring)
		waitq_chain(&ch->st->send_wq, ch->shared);
}

#endif /* CANAL_CHANNEL_WAKE_H */
