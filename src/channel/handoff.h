/* SPDX-License-Identifier: MIT */
/*
 * handoff.h - a thread channel's senders parked with their element, and
 * the receivers that move those elements into the ring themselves.
 *
 * Why: at capacity 1 with several senders, a receiver that frees the slot
 * wakes one parked sender and then, back for the next element, finds the
 * ring empty: the next element existed only once that thread had been
 * scheduled again (20-45 us for a futex wake-up on a VM, longer beside a
 * busy process). Go's receiver takes a blocked sender's element from its
 * sudog, and flume's from its hook (pull_pending), instead of waiting for
 * the sender to run; so does a canal receiver that finds the ring empty
 * while senders are parked with their element: a try receive at once, a
 * waiting one when its wait would sleep (after its polls and its wait's
 * spin phases, wait.h: on a quiet machine the sender a release just woke
 * usually comes within them, and a take costs a wake-up: taking at the
 * first look made bounded1_mpsc 438 -> 668 ns a message; beside a busy
 * process those phases are skipped and the take comes at once). Only
 * then: a receiver that finds elements in the ring takes them as before,
 * and wakes senders by the transitions of wake.h (a forwarder that is the
 * bottleneck makes no wake-up per element: taking on every release made
 * fwd between threads at 100/100 8.2 -> 46 ms). For buffered thread channels and blocking or
 * timed sends from threads (not tasks, whose parked stacks compaction may
 * give back; not shared channels, whose senders are other processes; not
 * a channel with a progress hook, nor reserves, batches or selects); for
 * receives of one element that copy it out (not borrows, batches or
 * selects).
 *
 * The parked sender keeps the whole wait protocol of wait.h: it counts in
 * send_wq's waiters and sleeps on send_wq's word as well as on its node's
 * (a vectored wait), so every wake-up of the ring's senders (transitions,
 * chains, close) reaches it as before, and it then takes its node back and
 * claims its slot itself. The node only adds a way to finish the send
 * without running: a receiver takes the element. Such a sender may have
 * been the one a release woke to fill the room it made: once back, it
 * passes that wake-up on to another sender while room remains (else that
 * one sleeps beside an empty ring).
 *
 * Node states (the node's word):
 *   PENDING  linked in the list, the sender asleep or about to be;
 *   CLAIMED  unlinked by a receiver that is copying the element out; only
 *            that receiver changes it again, to DONE;
 *   DONE     received (the send returns 0).
 * Leaving PENDING happens under the handle's ho_lock with the node
 * unlinked, so the sender's withdrawal (woken, timeout, room seen) and a
 * receiver's take exclude each other: the element is received exactly
 * once, by a taker or from the ring after the sender's own claim.
 *
 * Order. A receiver takes only when, under the lock (the node linked, so
 * its sender blocked), head == tail: every position claimed so far has
 * been claimed by a receiver, among them every earlier element of the
 * parked sender, so no receiver can get that sender's later element
 * before an earlier one (per-producer FIFO). A claim not yet published
 * (tail past head) is not "empty": it may be that sender's previous
 * element behind another one's. And only while tail is not CLOSED (read
 * under the lock): a send taken before close's fetch_or is ordered before
 * the close.
 *
 * Memory ordering: the sender writes the element before linking the node
 * (release by the lock), the taker reads it after taking the lock
 * (acquire) and copies it before its seq_cst exchange to DONE, which the
 * sender's acquire load of the word pairs with: the sender reuses its
 * buffer only after the copy. No lost wake-up: the taker changes the word
 * (exchange, seq_cst) and then wakes it (canal__wake), as park.h asks; it
 * touches the node no more after that exchange (the sender may return at
 * once and its stack be reused; a wake-up on a reused address is a
 * spurious return for whoever waits there, which every waiter tolerates).
 */
#ifndef CANAL_CHANNEL_HANDOFF_H
#define CANAL_CHANNEL_HANDOFF_H

#include "internal.h"

/* A sender that found the ring full parks through this (wait.h, the
 * wait condition's park): arg is a struct canal__handoff_arg. Returns
 * CANAL__WAIT_DONE (a receiver took its element: the send is done), 0
 * (try again) or -ETIMEDOUT. */
struct canal__handoff_arg {
	struct canal_chan *ch;
	const void *elt;
};
int canal__handoff_park(void *arg, uint64_t deadline);

/* Whether this caller's send may park with its element (see the top). */
bool canal__handoff_eligible(const struct canal_chan *ch);

/* A receiver of one element that found the ring empty: take the oldest
 * parked sender's element into elt if the ring is still empty and open
 * (true), else false (also when another thread holds the list's lock:
 * it never waits). Buffered thread channels only. */
bool canal__handoff_take(struct canal_chan *ch, void *elt);

#endif /* CANAL_CHANNEL_HANDOFF_H */
