/* SPDX-License-Identifier: MIT */
/*
 * schedule/schedule.h - the engine's middle layer: per gate, a window of
 * outgoing pieces (two queues: express/control first, then the others in
 * order), the strategy that builds the next packet from it when the driver
 * can take one, eager flow control by credits, and the rendezvous protocol
 * for messages above the driver's eager size.
 *
 * Called by collect/ (sending a message, accepting a rendezvous, returning
 * credits) and by session.c (push, poll). It calls transfer/ only. The
 * receive path goes up through canal__sched_arrive_fn, given by the caller.
 *
 * Flow control: a sender may have at most CANAL__CREDIT_WINDOW bytes of
 * eager pieces (header included; an RTS costs its header) that the receiver
 * has not yet freed (matched to a receive). The receiver counts what it
 * frees and returns it in a CREDIT piece once a quarter of the window is
 * owed. So a receiver holds at most one window of unexpected bytes per
 * gate, and pieces beyond wait in the sender's queue (memory: the queue
 * entries only, the payloads are the user's buffers).
 */
#ifndef CANAL_ENGINE_SCHEDULE_H
#define CANAL_ENGINE_SCHEDULE_H

#include "../internal.h"
#include "../wire.h"

#define CANAL__CREDIT_WINDOW ((int64_t)2 << 20)

/* A strategy: choose the pieces of the next packet (at most max, peeked in
 * queue order, not removed) or none (0) to wait for a better moment. */
struct canal__strategy {
	const char *name;
	int (*select)(struct canal_engine *e, struct canal__gate *g,
		      struct canal__piece **out, int max);
	/* The window is empty and p (an eager piece with credit) is alone:
	 * may it go to the driver at once, without queueing and select()?
	 * (The fast path of a small message; select() would take it now.) */
	bool (*lone)(struct canal__gate *g, const struct canal__piece *p);
};
const struct canal__strategy *canal__strategy_find(const char *name);

/* Receive-path upcall: an EAGER piece (payload, len) or an RTS (len is the
 * message's length, cookie and addr the sender's) arrived on (g, tag, seq).
 * Returns 0 or a negative errno that closes the gate. */
typedef int (*canal__sched_arrive_fn)(struct canal_engine *e, int g,
				      const struct canal__piece_hdr *h,
				      const unsigned char *payload);

void canal__sched_gate_init(struct canal__gate *g);
/* Queue the message of send request r (tag, seq set): one EAGER piece, or
 * an RTS. The request completes when its bytes have left. */
int canal__sched_send(struct canal_engine *e, int g,
		      struct canal_engine_req *r);
/* A receive r was matched with an RTS: fetch the data (read the peer's
 * memory, or ask for it with an RTR). */
int canal__sched_accept_rts(struct canal_engine *e, int g,
			    struct canal_engine_req *r,
			    const struct canal__piece_hdr *rts);
/* bytes of eager data were freed here: owe them back to the sender (a
 * CREDIT piece once a quarter of the window is owed; canal__sched_credit_send
 * queues it). */
void canal__sched_credit_send(struct canal_engine *e, int g);
static inline void canal__sched_credit_return(struct canal_engine *e, int gi,
					      uint32_t bytes)
{
	struct canal__gate *g = &e->gates[gi];
	g->credit_owed += bytes;
	if (g->credit_owed >= (uint64_t)CANAL__CREDIT_WINDOW / 4)
		canal__sched_credit_send(e, gi);
}
/* Send what the window and the strategy allow: the number of packets. */
int canal__sched_push(struct canal_engine *e, int g);
/* Take what arrived (a bounded number of packets): their number. */
int canal__sched_poll(struct canal_engine *e, int g,
		      canal__sched_arrive_fn arrive);
/* Drop the queued pieces of a failed gate (their requests are failed by
 * canal__gate_fail). */
void canal__sched_gate_drop(struct canal__gate *g);

/* Cost of an eager piece against the receiver's credit. */
static inline uint32_t canal__eager_cost(uint32_t len)
{
	return PIECE_HDR + len;
}

/* The credit of a request to send (RTS), spent by the sender and returned
 * when a receive takes it: more than its 12 bytes, because an unmatched
 * RTS costs the receiver an allocation and a place in the unexpected list
 * it scans: a sender may have at most 8192 of them unmatched per gate
 * (the credit window over this), and a peer that ignores credits is cut
 * off at twice that (match.c). */
#define CANAL__RTS_COST 256u

#endif /* CANAL_ENGINE_SCHEDULE_H */
