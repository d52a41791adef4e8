/* SPDX-License-Identifier: MIT */
/*
 * collect/pack.c - messages of several pieces. Each piece is a message of
 * its own on the (gate, tag) flow (its own sequence number), so the
 * receiver's n-th unpack gets the n-th piece whatever order the strategy
 * sent them in. pack_end hands all pieces to the window at once (express
 * pieces to the express queue, then the ordered ones, then the
 * reorderable ones) and pushes once, so the aggregate strategy can put
 * them in one packet. With UCX's matching (e->native) each piece is a UCP
 * message of its own, sent in packing order.
 *
 * Every piece but the last (in packing order) says MORE (wire.h; a UCP
 * tag bit with UCX's matching), so the receiver knows where the message
 * ends: unpack_end takes and drops the pieces that were not unpacked
 * (after an unpack error, typically), and the flow's next receive gets
 * the next message, not the rest of this one (test_reveng2_unpack_rest).
 */
#include "collect.h"

#include "../schedule/schedule.h"
#include "../transfer/lazy.h"

#include <errno.h>
#include <stdlib.h>

/* Pieces per message (the arrays grow on demand up to this). */
#define PACK_MAX 1024
/* Unpack: the piece's receive took a message (pack_piece.flags; beside
 * the public flags and CANAL__FLAG_MORE). */
#define PIECE_TAKEN (1u << 30)

struct canal_engine_pack {
	struct canal__list link; /* on e->packs, under the session lock */
	struct canal_engine *e;
	int gate;
	unsigned tag;
	bool unpack;
	int n, cap;
	int first_error;
	size_t total;
	struct pack_piece {
		const void *buf;
		size_t len;
		unsigned flags;
	} *piece;
	struct canal_engine_req **req; /* unpack: not yet waited */
};

/* Off the session's list (the caller holds the session lock) and freed. */
static void pack_free(struct canal_engine_pack *p)
{
	canal__list_remove(&p->link);
	free(p->piece);
	free(p->req);
	free(p);
}

/* Room for one more piece: 0, -EINVAL beyond PACK_MAX, -ENOMEM. */
static int pack_room(struct canal_engine_pack *p)
{
	if (p->n < p->cap)
		return 0;
	if (p->cap >= PACK_MAX)
		return -EINVAL;
	int cap = p->cap ? 2 * p->cap : 8;
	struct pack_piece *pc = realloc(p->piece, (size_t)cap * sizeof *pc);
	if (!pc)
		return -ENOMEM;
	p->piece = pc;
	struct canal_engine_req **rq = realloc(p->req, (size_t)cap * sizeof *rq);
	if (!rq)
		return -ENOMEM;
	p->req = rq;
	p->cap = cap;
	return 0;
}

static int begin(struct canal_engine *e, int gate, unsigned tag, bool unpack,
		 struct canal_engine_pack **out)
{
	if (!e || !out || tag > CANAL_ENGINE_TAG_MAX)
		return -EINVAL;
	if (!(unpack && gate == CANAL_ENGINE_ANY_GATE)) {
		if (!canal__gate_valid(e, gate))
			return -EINVAL;
		/* An unpack takes, as irecv, what a closed gate had delivered
		 * whole before it closed (test_revapi_unpack_closed). */
		canal__engine_lock(e);
		int gerr = unpack ? canal__collect_recv_error(e, gate, tag)
				  : e->gates[gate].error;
		canal__engine_unlock(e);
		if (gerr)
			return gerr;
	}
	struct canal_engine_pack *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->e = e;
	p->gate = gate;
	p->tag = tag;
	p->unpack = unpack;
	/* The session's, so that its close frees it if it is never ended
	 * (test_revapi_close_packs). */
	canal__engine_lock(e);
	canal__list_append(&e->packs, &p->link);
	canal__engine_unlock(e);
	*out = p;
	return 0;
}

void canal__collect_packs_free(struct canal_engine *e)
{
	while (e->packs.next && !canal__list_empty(&e->packs))
		pack_free(canal__container_of(e->packs.next,
					      struct canal_engine_pack, link));
}

EXPORT int canal_engine_pack_begin(struct canal_engine *e, int gate,
				   unsigned tag, struct canal_engine_pack **pack)
{
	return begin(e, gate, tag, false, pack);
}

EXPORT int canal_engine_pack(struct canal_engine_pack *p, const void *buf,
			     size_t len, unsigned flags)
{
	if (!p || p->unpack || (!buf && len) ||
	    (flags & ~(unsigned)(CANAL_ENGINE_EXPRESS | CANAL_ENGINE_REORDER)))
		return -EINVAL;
	int err = pack_room(p);
	if (err)
		return err;
	p->piece[p->n].buf = buf;
	p->piece[p->n].len = len;
	p->piece[p->n].flags = flags;
	p->n++;
	return 0;
}

static int pack_end(struct canal_engine_pack *p, struct canal_engine_req **req);

uint64_t canal__engine_pack_fail_pieces(struct canal_engine *e,
					uint64_t pieces)
{
	canal__engine_lock(e);
	uint64_t left = e->pack_faults;
	e->pack_faults = pieces;
	canal__engine_unlock(e);
	return left;
}

/* A send request for piece i of a pack; NULL: no memory (or the test
 * hook's fault). */
static struct canal_engine_req *piece_req_new(struct canal_engine *e, int i)
{
	if (i < 64 && (e->pack_faults >> i & 1)) {
		e->pack_faults &= ~((uint64_t)1 << i);
		return NULL;
	}
	return canal__req_new(e, REQ_SEND);
}

EXPORT int canal_engine_pack_end(struct canal_engine_pack *p,
				 struct canal_engine_req **req)
{
	if (!p || p->unpack || !req)
		return -EINVAL;
	struct canal_engine *e = p->e;
	int gate = p->gate; /* p is freed by pack_end */
	canal__engine_lock(e);
	int err = pack_end(p, req);
	/* UCX's matching: a piece refused on a failed endpoint fails the
	 * gate now (as canal_engine_isend). */
	if (e->native && (err == -ECONNRESET ||
			  (!err && (*req)->error == -ECONNRESET)))
		canal__gate_check(e, gate);
	canal__engine_unlock(e);
	return err;
}

static int pack_end(struct canal_engine_pack *p, struct canal_engine_req **req)
{
	struct canal_engine *e = p->e;
	struct canal__gate *g = &e->gates[p->gate];
	int err = g->error;
	/* Whatever can fail is done before any sequence number is taken: a
	 * number taken and never sent leaves a hole in the flow, and every
	 * later message of (gate, tag) waits behind it for ever (a hostile
	 * review; test_rev_pack_hole, test_revpack_nomem). So: the lazy
	 * connection, the pieces' sizes, a request for every piece (in
	 * p->req, as many slots as pieces); a failure then sends nothing. */
	if (!err && !e->native && !g->drv)
		err = canal__lazy_connect(e, p->gate);
	/* A pack of no piece is still a message: one empty piece, which the
	 * receiver's unpacks (or its unpack_end alone) take as any
	 * (test_revapi_unpack_none). */
	if (!err && p->n == 0 && (err = pack_room(p)) == 0)
		p->piece[p->n++] = (struct pack_piece){ NULL, 0, 0 };
	if (err) {
		pack_free(p);
		return err;
	}
	struct canal_engine_req *parent = canal__req_new(e, REQ_PACK);
	if (!parent) {
		pack_free(p);
		return -ENOMEM;
	}
	parent->gate = p->gate;
	parent->tag = p->tag;
	/* A piece no packet header can describe (4 GiB or more) fails the
	 * whole message: pack_end returns 0, its request says -EMSGSIZE
	 * (engine.h). */
	for (int i = 0; i < p->n; i++) {
		if (p->piece[i].len > UINT32_MAX) {
			pack_free(p);
			parent->error = -EMSGSIZE;
			canal__req_complete(parent, parent->error);
			*req = parent;
			return 0;
		}
	}
	for (int i = 0; i < p->n; i++) {
		p->req[i] = piece_req_new(e, i);
		if (!p->req[i]) {
			while (i-- > 0)
				canal__req_free(p->req[i]);
			canal__req_free(parent);
			pack_free(p);
			return -ENOMEM;
		}
	}
	/* Sequence numbers in packing order; queueing order: ordered pieces
	 * first, reorderable ones after (they give way). With the driver in
	 * place canal__sched_send cannot fail (a bulk start that fails
	 * fails the gate, and 0 is returned); UCX's matching has no
	 * sequence numbers (UCX keeps the order), and a send it refuses
	 * fails the gate (canal_engine_pack_end). */
	uint32_t seq0 = g->send_next[p->tag];
	g->send_next[p->tag] += (uint32_t)p->n;
	int sent = 0;
	parent->children_left = 1; /* held until every piece is queued */
	for (int pass = 0; pass < 2 && !err; pass++) {
		for (int i = 0; i < p->n && !err; i++) {
			/* UCX's matching: every piece in packing order (its
			 * own message; UCX keeps their order). */
			bool reorder = !e->native &&
				       (p->piece[i].flags & CANAL_ENGINE_REORDER);
			if (reorder != (pass == 1))
				continue;
			/* The gate failed while an earlier piece was handed
			 * over (a bulk start: window.c): it completed the
			 * pieces it had; the others go nowhere (queued on the
			 * closed gate they would never complete, nor would
			 * the pack: test_revapi_pack_gate_fail). */
			if (g->error) {
				err = g->error;
				break;
			}
			struct canal_engine_req *r = p->req[i];
			p->req[i] = NULL;
			r->gate = p->gate;
			r->tag = p->tag;
			r->flags = p->piece[i].flags;
			if (i < p->n - 1)
				r->flags |= CANAL__FLAG_MORE;
			if (e->urgent[p->tag / 64] >> (p->tag % 64) & 1)
				r->flags |= CANAL_ENGINE_EXPRESS;
			r->buf = (unsigned char *)(uintptr_t)p->piece[i].buf;
			r->len = p->piece[i].len;
			r->seq = seq0 + (uint32_t)i;
			r->internal = true;
			r->parent = parent;
			parent->children_left++;
			err = e->native ? canal__collect_native_send(e, r)
					: canal__sched_send(e, p->gate, r);
			if (err) {
				parent->children_left--;
				canal__req_free(r);
			} else {
				sent++;
			}
		}
	}
	/* The requests of the pieces not handed over (after a failure). */
	for (int i = 0; i < p->n; i++)
		if (p->req[i])
			canal__req_free(p->req[i]);
	pack_free(p);
	if (err && sent == 0) {
		/* Nothing left: the numbers go back, as an isend's. */
		g->send_next[parent->tag] = seq0;
		canal__req_free(parent);
		return err;
	}
	if (err) {
		/* Pieces already queued still go; the request reports err. */
		parent->error = err;
	}
	if (--parent->children_left == 0)
		canal__req_complete(parent, parent->error);
	if (!e->native)
		canal__sched_push(e, parent->gate);
	*req = parent;
	return 0;
}

EXPORT int canal_engine_unpack_begin(struct canal_engine *e, int gate,
				     unsigned tag,
				     struct canal_engine_pack **pack)
{
	return begin(e, gate, tag, true, pack);
}

/* The outcome of piece i (st: NULL when nothing was received; flags:
 * the receive's, CANAL__FLAG_MORE). A piece that took a message fixes
 * the gate of an any-gate unpack, even when it failed (-EMSGSIZE): the
 * later pieces are that gate's. */
static void note(struct canal_engine_pack *p, int i, int err,
		 const struct canal_engine_status *st, unsigned flags)
{
	if (err && !p->first_error)
		p->first_error = err;
	if (st && p->gate == CANAL_ENGINE_ANY_GATE && st->gate >= 0)
		p->gate = st->gate;
	if (st)
		p->total += st->len;
	if (i >= 0) /* unpack: what the receive said, and that it took one */
		p->piece[i].flags = flags | (st && (!err || err == -EMSGSIZE)
						     ? PIECE_TAKEN
						     : 0u);
}

/* More unpacks than the message had pieces: a piece before the last one
 * unpacked came without MORE (it was the message's last), so the unpacks
 * after it took the messages that followed the pack. The receiver cannot
 * give them back; unpack_end says so (-EPROTO) instead of 0. */
static bool unpacked_past_end(const struct canal_engine_pack *p)
{
	for (int i = 0; i + 1 < p->n; i++)
		if ((p->piece[i].flags & (PIECE_TAKEN | CANAL__FLAG_MORE)) ==
		    PIECE_TAKEN)
			return true;
	return false;
}

/* After the unpacked pieces: take and drop the rest of the message, while
 * the last piece taken says MORE. */
static void drop_rest(struct canal_engine_pack *p)
{
	bool more = p->n > 0 && (p->piece[p->n - 1].flags & CANAL__FLAG_MORE);
	while (more && p->gate != CANAL_ENGINE_ANY_GATE) {
		struct canal_engine_req *r;
		if (canal_engine_irecv(p->e, p->gate, p->tag, NULL, 0, &r) < 0)
			return; /* the gate failed: nothing more comes */
		struct canal_engine_status st = { 0 };
		unsigned flags = 0;
		int err = canal__engine_wait_flags(p->e, r, &st, &flags);
		if (err && err != -EMSGSIZE)
			return;
		p->total += st.len;
		more = (flags & CANAL__FLAG_MORE) != 0;
	}
}

EXPORT int canal_engine_unpack(struct canal_engine_pack *p, void *buf,
			       size_t len, unsigned flags)
{
	if (!p || !p->unpack ||
	    (flags & ~(unsigned)(CANAL_ENGINE_EXPRESS | CANAL_ENGINE_REORDER)))
		return -EINVAL;
	int err = pack_room(p);
	if (err)
		return err;
	struct canal_engine_req *r;
	err = canal_engine_irecv(p->e, p->gate, p->tag, buf, len, &r);
	if (err) {
		note(p, -1, err, NULL, 0);
		return err;
	}
	int i = p->n++;
	p->req[i] = NULL;
	p->piece[i].flags = 0;
	if ((flags & CANAL_ENGINE_EXPRESS) || p->gate == CANAL_ENGINE_ANY_GATE) {
		struct canal_engine_status st = { 0 };
		unsigned got = 0;
		err = canal__engine_wait_flags(p->e, r, &st, &got);
		note(p, i, err, &st, got);
		return err;
	}
	p->req[i] = r;
	return 0;
}

EXPORT int canal_engine_unpack_end(struct canal_engine_pack *p,
				   struct canal_engine_status *st)
{
	if (!p || !p->unpack)
		return -EINVAL;
	if (p->n == 0 && !p->first_error) {
		/* No unpack made: the whole message is dropped, so its first
		 * piece is taken here (drop_rest() takes the others;
		 * test_revapi_unpack_none). A piece longer than no buffer
		 * is dropped, not an error. */
		struct canal_engine_req *r;
		int err = pack_room(p);
		if (!err)
			err = canal_engine_irecv(p->e, p->gate, p->tag, NULL, 0, &r);
		if (err) {
			note(p, -1, err, NULL, 0);
		} else {
			struct canal_engine_status s = { 0 };
			unsigned got = 0;
			err = canal__engine_wait_flags(p->e, r, &s, &got);
			p->req[0] = NULL;
			p->n = 1;
			note(p, 0, err == -EMSGSIZE ? 0 : err, &s, got);
		}
	}
	for (int i = 0; i < p->n; i++) {
		if (!p->req[i])
			continue;
		struct canal_engine_status s = { 0 };
		unsigned got = 0;
		int err = canal__engine_wait_flags(p->e, p->req[i], &s, &got);
		note(p, i, err, &s, got);
	}
	if (unpacked_past_end(p) && !p->first_error)
		p->first_error = -EPROTO;
	drop_rest(p);
	if (st) {
		st->gate = p->gate;
		st->tag = p->tag;
		st->len = p->total;
	}
	int err = p->first_error;
	struct canal_engine *e = p->e;
	canal__engine_lock(e);
	pack_free(p);
	canal__engine_unlock(e);
	return err;
}
