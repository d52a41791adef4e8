/* SPDX-License-Identifier: MIT */
/*
 * collect/collect.h - the engine's top layer: per-gate, per-tag flows.
 *
 * Sending: a message takes the next sequence number of its (gate, tag)
 * flow and goes to the schedule layer as one piece (or a request to send).
 * Receiving: a receive posted on (gate, tag) takes the next receive
 * sequence number of that flow at posting time, so the n-th receive of a
 * flow gets the n-th message, whatever order the pieces arrive in. An
 * any-gate receive takes a number only when it is matched: with the
 * oldest arrived-and-unclaimed message of the flow's next number, on any
 * gate (round robin over gates for fairness).
 *
 * Invariants, per gate g and tag t:
 *  C1 every receive on g's posted table has tag t and seq < recv_next[t];
 *     no two have the same (t, seq). (Posted receives and unexpected
 *     messages are in hash tables keyed by (t, seq): collect/table.h.)
 *  C2 every unexpected message of (t, s) has no posted receive of (t, s);
 *     if s < recv_next[t] it would have one: arrive() matches first.
 *  C3 an arrival with s < recv_next[t] and no posted receive is a
 *     duplicate: a protocol error.
 *  C4 unexpected eager bytes stay below twice the credit window (a peer
 *     that ignores flow control is cut off with -EPROTO, not followed into
 *     unbounded memory).
 *  C5 while an any-gate receive of tag t waits, no open gate holds an
 *     unexpected message of (t, recv_next[t]): arrive() hands such a
 *     message over when it is the arrival, and irecv() of one gate when
 *     its posting moves recv_next[t] onto one that came early (an EXPRESS
 *     message overtaking: test_reveng_any_gap).
 */
#ifndef CANAL_ENGINE_COLLECT_H
#define CANAL_ENGINE_COLLECT_H

#include "../internal.h"
#include "../wire.h"

/* A gate's sequence numbers: the next one of each tag, sent then
 * received (2 * (CANAL_ENGINE_TAG_MAX + 1) words, 512 KiB). The session
 * holds every gate's in one anonymous mapping (session.c), so that only
 * the pages of the tags in use become resident: with two 256 KiB
 * callocs per gate, past about 32 000 gates the mappings ran out
 * (vm.max_map_count) and glibc zeroed the rest on its heap, 9.2 GB
 * resident for a session of 65 536 (test_revapi_open_size_max). */
#define CANAL__COLLECT_SEQ_WORDS (2 * ((size_t)CANAL_ENGINE_TAG_MAX + 1))

/* seq: the gate's CANAL__COLLECT_SEQ_WORDS zeroed words, the session's;
 * gate_free does not free them. */
int canal__collect_gate_init(struct canal__gate *g, uint32_t *seq);
void canal__collect_gate_free(struct canal__gate *g);
/* The schedule layer's upcall: a piece (EAGER or RTS) arrived. */
int canal__collect_arrive(struct canal_engine *e, int g,
			  const struct canal__piece_hdr *h,
			  const unsigned char *payload);
/* What a receive posted now on gate (a peer, not any gate) and tag would
 * meet: 0 while the gate is open, or when it is closed but the flow's next
 * message arrived whole before (a closed gate still hands those out, as
 * irecv does); else the gate's error. */
int canal__collect_recv_error(struct canal_engine *e, int gate, unsigned tag);
/* Free the packs of e begun and not ended (free_session(): their
 * requests are the session's, freed with it). */
void canal__collect_packs_free(struct canal_engine *e);
/* Take receive r off its posted table or list (r->posted: true). */
void canal__collect_unpost(struct canal_engine_req *r);
/* isend without pushing: the request is queued (for pack_end). Not for
 * a session with UCX's matching (isend takes its own path there). */
int canal__collect_send(struct canal_engine *e, int g, unsigned tag,
			const void *buf, size_t len, unsigned flags,
			struct canal_engine_req **req);
/* With UCX's matching (e->native): start send r (gate, tag, buf, len
 * set) as a UCP message; r completes now or when UCX is done with buf.
 * 0, or a negative errno (nothing started, r untouched otherwise). */
int canal__collect_native_send(struct canal_engine *e,
			       struct canal_engine_req *r);

#endif /* CANAL_ENGINE_COLLECT_H */
