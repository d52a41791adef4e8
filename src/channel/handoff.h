/* SPDX-License-Identifier: MIT */
/*
 * handoff.h - a thread channel's senders parked with their element, and
 * the receivers that move those elements into the ring themselves.
 *
 * Why: at capacity 1 with several senders, a receiver that frees the slot
 * used to wake one parked sender and then wait for it: the next element
 * existed only once that thread had been scheduled again (20-45 us for a
 * futex wake-up on a VM, longer beside a busy process). Go's receiver takes
 * a blocked sender's element from its sudog, and flume's from its hook
 * (pull_pending), before waking the sender; so do canal's receivers now,
 * for buffered thread channels and blocking or timed sends from threads
 * (not tasks, whose parked stacks compaction may give back; not shared
 * channels, whose senders are other processes; not a channel with a
 * progress hook, nor reserves, batches or selects).
 *
 * Node states (the word the sender sleeps on, through its parker):
 *   PENDING  linked in the list, the sender asleep or about to be;
 *   CLAIMED  unlinked by a receiver that is moving the element into the
 *            ring; only that receiver changes it again, to DONE, or back
 *            to PENDING (relinked first) when the ring had no room after
 *            all, or to CLOSED when it found the channel closed;
 *   DONE     the element is in the ring (the send returns 0);
 *   CLOSED   unlinked by canal_close (the send retries and gets -EPIPE).
 * Transitions out of PENDING happen under the handle's ho_lock and with
 * the node unlinked, so the sender's withdrawal (timeout, room seen, close
 * seen) and a receiver's claim exclude each other: an element goes into
 * the ring exactly once (by its receiver, after CLAIMED, or by the sender
 * itself after a withdrawal), never both.
 *
 * No lost hand-off (Dekker, as the wait protocol's W1/W2 - N1/N2): the
 * sender does [link + handoffs++ (seq_cst RMW); load tail and head
 * (seq_cst, can_send)]; a receiver does [CAS head (seq_cst); release its
 * slot; load handoffs (seq_cst, wake.h)]. Either the receiver sees the
 * count and serves the list, or the sender sees the room and withdraws to
 * claim it itself. close: [fetch_or CLOSED into tail (seq_cst); lock and
 * empty the list] against the sender's [link (seq_cst); load tail]: either
 * close finds the node or the sender sees CLOSED. The sender's element is
 * read by the receiver under the lock's acquire, after the sender's
 * release of it.
 *
 * Who wakes whom: the receiver (or close) that moved a node to DONE,
 * CLOSED or back to PENDING changes the word with a seq_cst exchange and
 * wakes it (canal__wake); it touches the node no more after that exchange
 * (the sender may return at once and its stack be reused; a wake-up on a
 * reused address is a spurious return for whoever waits there, which every
 * waiter tolerates).
 */
#ifndef CANAL_CHANNEL_HANDOFF_H
#define CANAL_CHANNEL_HANDOFF_H

#include "internal.h"

/* A sender that found the ring full parks through this (wait.h, the
 * wait condition's park): arg is a struct canal__handoff_arg. Returns
 * CANAL__WAIT_DONE (its element was moved into the ring: the send is
 * done), 0 (try again: room, closed, or woken), or -ETIMEDOUT. */
struct canal__handoff_arg {
	struct canal_chan *ch;
	const void *elt;
};
int canal__handoff_park(void *arg, uint64_t deadline);

/* Whether this caller's send may park with its element (see the top). */
bool canal__handoff_eligible(const struct canal_chan *ch);

/* After slots were freed: move up to k parked senders' elements into the
 * ring (wake.h calls it when handoffs is not 0). */
void canal__handoff_serve(struct canal_chan *ch, uint32_t k);

/* After close set CLOSED in tail: release every parked sender. */
void canal__handoff_close(struct canal_chan *ch);

#endif /* CANAL_CHANNEL_HANDOFF_H */
