/* SPDX-License-Identifier: MIT */
/*
 * collect/match.c - sequence numbers and matching of receives with
 * arrivals (see collect.h for the invariants), and the public isend,
 * irecv and probe.
 */
#include "collect.h"
#include "table.h"

#include "../schedule/schedule.h"
#include "../transfer/driver.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct canal__unexpected {
	struct canal__list link;
	struct canal__piece_hdr h;
	unsigned char data[];
};

#define TAGS (CANAL_ENGINE_TAG_MAX + 1)

static void posted_key(const struct canal__list *l, unsigned *tag,
		       uint32_t *seq)
{
	const struct canal_engine_req *r =
		canal__container_of(l, struct canal_engine_req, link);
	*tag = r->tag;
	*seq = r->seq;
}

static void unexpected_key(const struct canal__list *l, unsigned *tag,
			   uint32_t *seq)
{
	const struct canal__unexpected *u =
		canal__container_of(l, struct canal__unexpected, link);
	*tag = u->h.tag;
	*seq = u->h.seq;
}

int canal__collect_gate_init(struct canal__gate *g, uint32_t *seq)
{
	g->unexpected_bytes = 0;
	int err = canal__table_init(&g->posted);
	if (!err && (err = canal__table_init(&g->unexpected)) < 0)
		canal__table_free(&g->posted);
	if (err)
		return err;
	g->send_next = seq;
	g->recv_next = seq + TAGS;
	return 0;
}

/* What an unexpected arrival counts against the cut-off below: the
 * credit its sender spent on it (an eager message's header and bytes, an
 * RTS's header), so that a peer ignoring credits is cut off whether it
 * floods data or requests to send (each of those costs an allocation
 * here too); a sender that keeps to its credits never reaches it. */
static uint64_t unexpected_cost(const struct canal__piece_hdr *h)
{
	return h->kind == PIECE_EAGER ? canal__eager_cost(h->len)
				      : CANAL__RTS_COST;
}

/* Off the table (its link left self-linked: removing it again is a
 * no-op), still counted in unexpected_bytes. */
static void unexpected_unlink(struct canal__gate *g, struct canal__unexpected *u)
{
	canal__list_remove(&u->link);
	canal__list_init(&u->link);
	g->unexpected.n--;
}

static void unexpected_release(struct canal__gate *g,
			       struct canal__unexpected *u)
{
	g->unexpected_bytes -= unexpected_cost(&u->h);
	free(u);
}

void canal__collect_gate_free(struct canal__gate *g)
{
	if (g->unexpected.bucket) {
		for (uint32_t i = 0; i <= g->unexpected.mask; i++) {
			struct canal__list *b = &g->unexpected.bucket[i];
			while (!canal__list_empty(b)) {
				struct canal__unexpected *u = canal__container_of(
					b->next, struct canal__unexpected, link);
				unexpected_unlink(g, u);
				unexpected_release(g, u);
			}
		}
	}
	/* Posted receives are the requests': they are freed with them (a
	 * closing engine frees every request before its gates). */
	canal__table_free(&g->unexpected);
	canal__table_free(&g->posted);
	g->send_next = g->recv_next = NULL; /* the session's mapping */
}

/* Hand a matched arrival to receive r (already off every list). */
static int deliver(struct canal_engine *e, int gi, struct canal_engine_req *r,
		   const struct canal__piece_hdr *h, const unsigned char *payload)
{
	r->gate = gi;
	r->seq = h->seq;
	if (h->flags & PIECE_FLAG_MORE)
		r->flags |= CANAL__FLAG_MORE;
	if (h->kind == PIECE_RTS) {
		canal__sched_credit_return(e, gi, CANAL__RTS_COST);
		return canal__sched_accept_rts(e, gi, r, h);
	}
	size_t n = h->len < r->len ? h->len : r->len;
	if (n)
		memcpy(r->buf, payload, n);
	r->msg_len = h->len;
	canal__req_complete(r, h->len > r->len ? -EMSGSIZE : 0);
	canal__sched_credit_return(e, gi, canal__eager_cost(h->len));
	return 0;
}

static struct canal__unexpected *find_unexpected(struct canal__gate *g,
						 unsigned tag, uint32_t seq)
{
	struct canal__list *b = canal__table_bucket(&g->unexpected, tag, seq);
	for (struct canal__list *l = b->next; l != b; l = l->next) {
		struct canal__unexpected *u =
			canal__container_of(l, struct canal__unexpected, link);
		if (u->h.tag == tag && u->h.seq == seq)
			return u;
	}
	return NULL;
}

static int deliver_unexpected(struct canal_engine *e, int gi,
			      struct canal_engine_req *r,
			      struct canal__unexpected *u)
{
	struct canal__gate *g = &e->gates[gi];
	unexpected_unlink(g, u);
	int err = deliver(e, gi, r, &u->h, u->data);
	unexpected_release(g, u);
	return err;
}

/* deliver_unexpected() for a receive being posted: an error (an RTS the
 * driver could not follow) fails the gate, and with it r. */
static void deliver_posting(struct canal_engine *e, int gi,
			    struct canal_engine_req *r,
			    struct canal__unexpected *u)
{
	int err = deliver_unexpected(e, gi, r, u);
	if (err)
		canal__gate_fail(e, gi, err, "peer %d: %s", gi,
				 err == -EPROTO ? "malformed frame"
						: strerror(-err));
}

static struct canal_engine_req *first_any(struct canal_engine *e, unsigned tag)
{
	for (struct canal__list *l = e->any_posted.next; l != &e->any_posted;
	     l = l->next) {
		struct canal_engine_req *r =
			canal__container_of(l, struct canal_engine_req, link);
		if (r->tag == tag)
			return r;
	}
	return NULL;
}

void canal__collect_unpost(struct canal_engine_req *r)
{
	canal__list_remove(&r->link);
	r->posted = false;
	if (r->gate != CANAL_ENGINE_ANY_GATE)
		r->e->gates[r->gate].posted.n--;
}

/* Give any-gate receives of tag the unexpected messages of gate gi that
 * are next in their flow. */
static int drain_any(struct canal_engine *e, int gi, unsigned tag)
{
	struct canal__gate *g = &e->gates[gi];
	for (;;) {
		struct canal_engine_req *r = first_any(e, tag);
		if (!r)
			return 0;
		struct canal__unexpected *u =
			find_unexpected(g, tag, g->recv_next[tag]);
		if (!u)
			return 0;
		g->recv_next[tag]++;
		canal__collect_unpost(r);
		int err = deliver_unexpected(e, gi, r, u);
		if (err)
			return err;
	}
}

int canal__collect_arrive(struct canal_engine *e, int gi,
			  const struct canal__piece_hdr *h,
			  const unsigned char *payload)
{
	struct canal__gate *g = &e->gates[gi];
	unsigned tag = h->tag;
	struct canal__list *b = canal__table_bucket(&g->posted, tag, h->seq);
	for (struct canal__list *l = b->next; l != b; l = l->next) {
		struct canal_engine_req *r =
			canal__container_of(l, struct canal_engine_req, link);
		if (r->tag == tag && r->seq == h->seq) {
			canal__collect_unpost(r);
			return deliver(e, gi, r, h, payload);
		}
	}
	if ((int32_t)(h->seq - g->recv_next[tag]) < 0 ||
	    find_unexpected(g, tag, h->seq))
		return canal__gate_fail(e, gi, -EPROTO,
					"peer %d: malformed frame: duplicate "
					"message %u on tag %u",
					gi, h->seq, tag);
	if (h->seq == g->recv_next[tag]) {
		struct canal_engine_req *r = first_any(e, tag);
		if (r) {
			g->recv_next[tag]++;
			canal__collect_unpost(r);
			int err = deliver(e, gi, r, h, payload);
			return err ? err : drain_any(e, gi, tag);
		}
	}
	size_t keep = h->kind == PIECE_EAGER ? h->len : 0;
	if (g->unexpected_bytes + unexpected_cost(h) >
	    2 * (uint64_t)CANAL__CREDIT_WINDOW)
		return canal__gate_fail(e, gi, -EPROTO,
					"peer %d: malformed frame: unexpected "
					"data beyond the credit window", gi);
	struct canal__unexpected *u = malloc(sizeof *u + keep);
	if (!u)
		return -ENOMEM;
	u->h = *h;
	if (keep)
		memcpy(u->data, payload, keep);
	canal__table_add(&g->unexpected, &u->link, tag, h->seq,
			 unexpected_key);
	g->unexpected_bytes += unexpected_cost(h);
	return 0;
}

/* The next message of (g, tag) has arrived whole (eager). */
static bool deliverable(struct canal__gate *g, unsigned tag)
{
	struct canal__unexpected *u = find_unexpected(g, tag, g->recv_next[tag]);
	return u && u->h.kind == PIECE_EAGER;
}

int canal__collect_recv_error(struct canal_engine *e, int gate, unsigned tag)
{
	int err = e->gates[gate].error;
	if (!err)
		return 0;
	if (e->native) {
		/* What UCX holds whole from the closed gate (native_irecv). */
		canal__ucx_native_drain(e->native);
		return canal__ucx_native_probe(e->native, gate, tag, NULL) == 1
			       ? 0
			       : err;
	}
	return deliverable(&e->gates[gate], tag) ? 0 : err;
}

static int check_tag_gate(struct canal_engine *e, int gate, unsigned tag,
			  bool any_ok)
{
	if (!e || tag > CANAL_ENGINE_TAG_MAX)
		return -EINVAL;
	if (gate == CANAL_ENGINE_ANY_GATE && any_ok)
		return 0;
	if (!canal__gate_valid(e, gate))
		return -EINVAL;
	return 0;
}

static int gate_error(struct canal_engine *e, int gate)
{
	return gate == CANAL_ENGINE_ANY_GATE ? 0 : e->gates[gate].error;
}

/* gate's error; for any gate, once every gate is closed (nothing can
 * come any more), the error of one of them (the lowest rank's), else 0. */
static int closed_error(const struct canal_engine *e, int gate)
{
	if (gate != CANAL_ENGINE_ANY_GATE)
		return e->gates[gate].error;
	int err = 0;
	for (int gi = 0; gi < e->size; gi++) {
		if (gi == e->rank)
			continue;
		if (!e->gates[gi].error)
			return 0;
		if (!err)
			err = e->gates[gi].error;
	}
	return err;
}

/* UCX's matching (e->native): the end of a message's UCP operation. An
 * operation ended by a failing gate (req.c) reports the gate's error. */
static int native_err(const struct canal_engine_req *r, int err)
{
	return err == -ECANCELED && r->e->native_abort_err
		       ? r->e->native_abort_err
		       : err;
}

static void native_send_done(struct canal__native_op *op, int err,
			     const struct canal__native_info *info)
{
	(void)info;
	struct canal_engine_req *r =
		canal__container_of(op, struct canal_engine_req, nat);
	canal__req_complete(r, native_err(r, err));
}

static void native_recv_done(struct canal__native_op *op, int err,
			     const struct canal__native_info *info)
{
	struct canal_engine_req *r =
		canal__container_of(op, struct canal_engine_req, nat);
	if (info) {
		r->msg_len = info->len;
		if (r->gate == CANAL_ENGINE_ANY_GATE)
			r->gate = info->rank;
		if (info->more)
			r->flags |= CANAL__FLAG_MORE;
	}
	canal__req_complete(r, native_err(r, err));
}

int canal__collect_native_send(struct canal_engine *e,
			       struct canal_engine_req *r)
{
	r->nat.done = native_send_done;
	unsigned tag = r->tag | ((r->flags & CANAL__FLAG_MORE)
					 ? CANAL__NATIVE_MORE : 0);
	int k = canal__ucx_native_send(e->native, r->gate, tag, r->buf,
				       r->len, &r->nat);
	if (k == 1)
		canal__req_complete(r, 0);
	return k < 0 ? k : 0;
}

/* The arguments of a send: 0 or the error isend returns. */
static inline int send_check(struct canal_engine *e, int gi, unsigned tag,
			     const void *buf, size_t len, unsigned flags,
			     struct canal_engine_req **req)
{
	int err = check_tag_gate(e, gi, tag, false);
	if (!err)
		err = gate_error(e, gi);
	if (err)
		return err;
	/* CANAL_ENGINE_REORDER is a piece's place among the pieces of one
	 * pack (pack.c): a message of its own has none, and engine.h lists
	 * it as refused here (test_reveng2_isend_reorder). */
	if (!req || (!buf && len) || (flags & ~(unsigned)CANAL_ENGINE_EXPRESS))
		return -EINVAL;
	if (len > UINT32_MAX)
		return -EMSGSIZE;
	return 0;
}

/* A send request's message: gate gi, tag, buf[len], flags. */
static inline void send_set(struct canal_engine_req *r, int gi, unsigned tag,
			    const void *buf, size_t len, unsigned flags)
{
	r->gate = gi;
	r->tag = tag;
	r->flags = flags;
	r->buf = (unsigned char *)(uintptr_t)buf;
	r->len = len;
}

/* isend with UCX's matching: UCX keeps the order and has no express
 * queue (the flags are only recorded). The message leaves first, the
 * request is set up after: on a ping-pong the setup is then off the
 * round trip's path. Nothing can end the UCP operation in between (UCX
 * calls a send back only from progress, never from inside the send), and
 * nothing else sees the request before it is returned. */
static int native_isend(struct canal_engine *e, int gi, unsigned tag,
			const void *buf, size_t len, unsigned flags,
			struct canal_engine_req **req)
{
	int err = send_check(e, gi, tag, buf, len, flags, req);
	if (err)
		return err;
	struct canal_engine_req *r = canal__req_take(e);
	if (!r)
		return -ENOMEM;
	r->nat.done = native_send_done;
	int k = canal__ucx_native_send(e->native, gi, tag, buf, len, &r->nat);
	if (k < 0) {
		canal__req_cache_put(e, r); /* never set up: not in the table */
		return k;
	}
	/* UCX called nothing back inside the send (no NO_IMM_CMPL flag on
	 * it, ucx_native.c): a send under way is still live, so its done
	 * comes later, to a request set up by then. */
	assert(k != 0 || r->nat.live);
	canal__req_init_but_nat(e, r, REQ_SEND);
	send_set(r, gi, tag, buf, len, flags);
	if (k == 1)
		canal__req_complete(r, 0);
	*req = r;
	return 0;
}

int canal__collect_send(struct canal_engine *e, int gi, unsigned tag,
			const void *buf, size_t len, unsigned flags,
			struct canal_engine_req **req)
{
	assert(!e->native); /* native_isend's */
	int err = send_check(e, gi, tag, buf, len, flags, req);
	if (err)
		return err;
	struct canal__gate *g = &e->gates[gi];
	struct canal_engine_req *r = canal__req_new(e, REQ_SEND);
	if (!r)
		return -ENOMEM;
	send_set(r, gi, tag, buf, len, flags);
	if (e->urgent[tag / 64] >> (tag % 64) & 1)
		r->flags |= CANAL_ENGINE_EXPRESS;
	r->seq = g->send_next[tag]++;
	err = canal__sched_send(e, gi, r);
	if (err) {
		g->send_next[tag]--;
		canal__req_free(r);
		return err;
	}
	*req = r;
	return 0;
}

EXPORT int canal_engine_isend(struct canal_engine *e, int gate, unsigned tag,
			      const void *buf, size_t len, unsigned flags,
			      struct canal_engine_req **req)
{
	if (!e)
		return -EINVAL;
	canal__engine_lock(e);
	int err = e->native ? native_isend(e, gate, tag, buf, len, flags, req)
			    : canal__collect_send(e, gate, tag, buf, len, flags,
						  req);
	/* Latency first: if the window lets it, the packet leaves now (it
	 * may already have, by the fast path of canal__sched_send). */
	if (!err && !(*req)->done && !e->native)
		canal__sched_push(e, gate);
	/* UCX's matching: a send refused on a failed endpoint fails its
	 * gate now, not at the next health check. */
	if (err == -ECONNRESET && e->native && canal__gate_valid(e, gate))
		canal__gate_check(e, gate);
	canal__engine_unlock(e);
	return err;
}

static int irecv(struct canal_engine *e, int gate, unsigned tag, void *buf,
		 size_t len, struct canal_engine_req **req);

EXPORT int canal_engine_irecv(struct canal_engine *e, int gate, unsigned tag,
			      void *buf, size_t len,
			      struct canal_engine_req **req)
{
	if (!e)
		return -EINVAL;
	canal__engine_lock(e);
	int err = irecv(e, gate, tag, buf, len, req);
	canal__engine_unlock(e);
	return err;
}

/* A receive request for (gate, tag) into buf[len], or NULL. */
static struct canal_engine_req *recv_new(struct canal_engine *e, int gate,
					 unsigned tag, void *buf, size_t len)
{
	struct canal_engine_req *r = canal__req_new(e, REQ_RECV);
	if (r) {
		r->gate = gate;
		r->tag = tag;
		r->buf = buf;
		r->len = len;
	}
	return r;
}

/* irecv with UCX's matching: what arrived whole from a closed gate is
 * still handed out (UCX holds it as unexpected), as below: the receive
 * is posted, the worker progressed while it has work, and a receive
 * that is still under way then (the rest of the message would have to
 * come from the dead peer) ends with the gate's error. */
static int native_irecv(struct canal_engine *e, int gate, unsigned tag,
			void *buf, size_t len, struct canal_engine_req **req)
{
	int err = closed_error(e, gate);
	if (err) {
		canal__ucx_native_drain(e->native);
		if (canal__ucx_native_probe(e->native, gate, tag, NULL) != 1)
			return err;
	}
	struct canal_engine_req *r = recv_new(e, gate, tag, buf, len);
	if (!r)
		return -ENOMEM;
	r->nat.done = native_recv_done;
	int gerr = err;
	err = canal__ucx_native_recv(e->native, gate, tag, buf, len, &r->nat);
	if (err) {
		canal__req_free(r);
		return err;
	}
	if (gerr) {
		canal__ucx_native_drain(e->native);
		canal__req_native_abort(r, gerr);
	}
	*req = r;
	return 0;
}

static int irecv(struct canal_engine *e, int gate, unsigned tag, void *buf,
		 size_t len, struct canal_engine_req **req)
{
	int err = check_tag_gate(e, gate, tag, true);
	if (err)
		return err;
	if (!req || (!buf && len))
		return -EINVAL;
	if (e->native)
		return native_irecv(e, gate, tag, buf, len, req);
	err = gate_error(e, gate);
	/* A closed gate still hands out the eager messages that arrived
	 * before it closed (a peer may send its last words and exit). */
	if (err && !deliverable(&e->gates[gate], tag))
		return err;
	struct canal_engine_req *r = recv_new(e, gate, tag, buf, len);
	if (!r)
		return -ENOMEM;
	*req = r;
	if (gate != CANAL_ENGINE_ANY_GATE) {
		struct canal__gate *g = &e->gates[gate];
		r->seq = g->recv_next[tag]++;
		struct canal__unexpected *u = find_unexpected(g, tag, r->seq);
		if (u) {
			deliver_posting(e, gate, r, u);
		} else {
			canal__table_add(&g->posted, &r->link, tag, r->seq,
					 posted_key);
			r->posted = true;
		}
		/* The flow's next number moved on: a message that arrived
		 * ahead of its turn (an EXPRESS one overtaking) may be next
		 * now, with any-gate receives waiting for just that. Arrivals
		 * are handed to them only when the arrival is the next
		 * message (canal__collect_arrive), so it is handed over here,
		 * or they waited for ever although it was there. */
		if (!g->error && !canal__list_empty(&e->any_posted)) {
			int derr = drain_any(e, gate, tag);
			if (derr)
				canal__gate_fail(e, gate, derr, "peer %d: %s", gate,
						 derr == -EPROTO ? "malformed frame"
								 : strerror(-derr));
		}
		return 0;
	}
	for (int i = 0; i < e->size; i++) {
		int gi = (e->any_next + i) % e->size;
		struct canal__gate *g = &e->gates[gi];
		if (gi == e->rank || (g->error && !deliverable(g, tag)))
			continue;
		struct canal__unexpected *u =
			find_unexpected(g, tag, g->recv_next[tag]);
		if (u) {
			e->any_next = (gi + 1) % e->size;
			g->recv_next[tag]++;
			deliver_posting(e, gi, r, u);
			return 0;
		}
	}
	int closed = closed_error(e, CANAL_ENGINE_ANY_GATE);
	if (closed) {
		/* Nothing can come any more (canal__gate_fail fails the
		 * any-gate receives posted before). */
		canal__req_free(r);
		return closed;
	}
	canal__list_append(&e->any_posted, &r->link);
	r->posted = true;
	return 0;
}

static int probe(struct canal_engine *e, int gate, unsigned tag,
		 struct canal_engine_status *st);

EXPORT int canal_engine_probe(struct canal_engine *e, int gate, unsigned tag,
			      struct canal_engine_status *st)
{
	int err = check_tag_gate(e, gate, tag, true);
	if (err)
		return err;
	canal__engine_lock(e);
	err = probe(e, gate, tag, st);
	canal__engine_unlock(e);
	return err;
}

static int probe(struct canal_engine *e, int gate, unsigned tag,
		 struct canal_engine_status *st)
{
	canal__engine_progress_once(e);
	if (e->native) {
		struct canal__native_info ni;
		/* Closed: what the dead peer had delivered first (irecv). */
		if (closed_error(e, gate))
			canal__ucx_native_drain(e->native);
		if (canal__ucx_native_probe(e->native, gate, tag, &ni) == 1) {
			if (st) {
				st->gate = ni.rank;
				st->tag = tag;
				st->len = ni.len;
			}
			return 1;
		}
		return closed_error(e, gate);
	}
	for (int gi = 0; gi < e->size; gi++) {
		if (gi == e->rank || (gate != CANAL_ENGINE_ANY_GATE && gi != gate))
			continue;
		struct canal__gate *g = &e->gates[gi];
		if (g->error && !deliverable(g, tag)) {
			if (gate != CANAL_ENGINE_ANY_GATE)
				return g->error;
			continue;
		}
		struct canal__unexpected *u =
			find_unexpected(g, tag, g->recv_next[tag]);
		if (u) {
			if (st) {
				st->gate = gi;
				st->tag = tag;
				st->len = u->h.len;
			}
			return 1;
		}
	}
	/* Any gate: nothing, and nothing can come any more. */
	return closed_error(e, gate);
}

EXPORT int canal_engine_set_urgent(struct canal_engine *e, unsigned tag,
				   int urgent)
{
	if (!e || tag > CANAL_ENGINE_TAG_MAX)
		return -EINVAL;
	uint64_t bit = (uint64_t)1 << (tag % 64);
	canal__engine_lock(e);
	if (urgent)
		e->urgent[tag / 64] |= bit;
	else
		e->urgent[tag / 64] &= ~bit;
	canal__engine_unlock(e);
	return 0;
}
