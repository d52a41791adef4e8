/* SPDX-License-Identifier: MIT */
/*
 * schedule/chunks.h - the chunks of a rendezvous message that goes by RTR
 * and DATA, and the receiver's record of those it has written.
 *
 * The layout, fixed by the sender (window.c, send_data): chunk i is the
 * DATA piece at offset i * CANAL__DATA_CHUNK, CANAL__DATA_CHUNK bytes
 * long, the last one the rest of the message (1 to CANAL__DATA_CHUNK
 * bytes); each piece goes whole in one packet, never split or joined
 * with another chunk. The chunks may arrive in any order: a strategy
 * sends a later, smaller chunk when the earlier one does not fit its
 * packet (strategy.c, EXPRESS_PACKET), and rails (rails.c) deliver the
 * packets of different rails in any order. Each arrives once: a driver
 * loses and repeats nothing (rails drop the packets they send again).
 *
 * So a DATA piece that is not exactly one chunk of the message, or that
 * is a chunk already written, is a repeated or forged frame: -EPROTO, the
 * gate closes (counting bytes let two copies of the first half complete
 * a receive whose second half was never written: test_rev_data_replay).
 *
 * Invariants, while the gate is open (one thread at a time: internal.h):
 * a receive with rndv_wait set and no bulk handle has queued its RTR,
 * owns r->chunks (set up before the RTR was queued) and is on its gate's
 * rndv_recv list; chunks.left counts the message's chunks whose bit in
 * the map is still clear. It leaves that state by its last chunk
 * (canal__chunks_end, then it completes) or by the gate's failure or the
 * session's close (canal__sched_gate_drop ends the chunks of every
 * receive on the list; the request is completed or freed after, and no
 * DATA is read from a closed gate).
 */
#ifndef CANAL_ENGINE_CHUNKS_H
#define CANAL_ENGINE_CHUNKS_H

#include "../internal.h"

/* Rendezvous data goes in chunks of this size (one per packet: every
 * driver's max_packet holds one with its header). */
#define CANAL__DATA_CHUNK ((uint32_t)65536)

/* The length of the chunk at offset off (on a chunk boundary, below len)
 * of a message of len bytes. */
static inline uint32_t canal__chunk_len(size_t len, size_t off)
{
	return len - off < CANAL__DATA_CHUNK ? (uint32_t)(len - off)
					     : CANAL__DATA_CHUNK;
}

/* Receive r (msg_len set, at least 1 byte, at most UINT32_MAX) is about
 * to send its RTR on gate g: its chunk map, none written yet, and r on
 * g's rndv_recv list. 0, or -ENOMEM (r then owns nothing). */
int canal__chunks_start(struct canal__gate *g, struct canal_engine_req *r);

/* A DATA piece at offset off, len bytes long, for receive r (in the state
 * above): 0 when it is one of r's chunks not written yet (now counted as
 * written: the caller writes it), else -EPROTO with *why set. */
int canal__chunks_claim(struct canal_engine_req *r, uint64_t off,
			uint32_t len, const char **why);

/* r leaves the state above: off its gate's list, its map freed. */
void canal__chunks_end(struct canal_engine_req *r);

#endif /* CANAL_ENGINE_CHUNKS_H */
