/* SPDX-License-Identifier: MIT */
/*
 * schedule/window.c - the window of a gate: queueing pieces, handing the
 * packets the strategy builds to the driver, and parsing what arrives
 * (the rendezvous and credit pieces are handled here; eager data and
 * requests to send go up to collect/ through the arrive upcall).
 *
 * The window holds the pieces not yet accepted by the driver. "One packet
 * in flight" is the driver's (the ring record the peer has not taken yet,
 * the TCP bytes the socket has not taken yet); "one ready ahead" is the
 * packet the strategy builds from the window the moment the driver can
 * take it. A piece leaves the window only when the driver has accepted its
 * packet whole; then its request may complete (send() copies, so the
 * user's buffer is free again).
 */
#include "schedule.h"

#include "chunks.h"
#include "../transfer/driver.h"
#include "../transfer/lazy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_SELECT 30
#define POLL_BUDGET 32

void canal__sched_gate_init(struct canal__gate *g)
{
	canal__list_init(&g->control);
	canal__list_init(&g->express);
	canal__list_init(&g->data);
	canal__list_init(&g->normal);
	canal__list_init(&g->bulk);
	canal__list_init(&g->rndv_recv);
	g->queued_bytes = 0;
	g->enq_order = 0;
	g->credits = CANAL__CREDIT_WINDOW;
	g->credit_owed = 0;
}

static struct canal__piece *piece_new(const struct canal__piece_hdr *h,
				      struct canal_engine_req *r)
{
	struct canal__piece *p = malloc(sizeof *p);
	if (!p)
		return NULL;
	p->embedded = false;
	canal__list_init(&p->link);
	p->hdr_len = (uint8_t)canal__piece_encode(h, p->hdr);
	p->express = false;
	p->payload = NULL;
	p->payload_len = 0;
	p->credit_cost = 0;
	p->req = r;
	return p;
}

static void enqueue_on(struct canal__gate *g, struct canal__list *q,
		       struct canal__piece *p)
{
	p->order = g->enq_order++;
	canal__list_append(q, &p->link);
	g->queued_bytes += p->payload_len;
}

static void enqueue(struct canal__gate *g, struct canal__piece *p)
{
	enqueue_on(g, p->express ? &g->express : &g->normal, p);
}

/* A control piece (RTR, FIN, CREDIT): express, free of credit, in the
 * control queue (internal.h). */
static int enqueue_control(struct canal__gate *g,
			   const struct canal__piece_hdr *h)
{
	struct canal__piece *p = piece_new(h, NULL);
	if (!p)
		return -ENOMEM;
	p->express = true;
	canal__list_append(&g->control, &p->link);
	return 0;
}

/* The data of send r leaves by the driver's rendezvous, after its RTS
 * (sent or queued): the receiver's UCX then usually has the receive
 * posted when the data's own request arrives. A failure fails the gate
 * (the RTS may be out: its receive would wait for ever), which completes
 * r with the gate's error (and frees it if it is a pack's piece): 0 is
 * returned all the same, so that the caller, as after any accepted send,
 * neither frees r nor counts it out of its pack a second time. */
static int bulk_start(struct canal_engine *e, int gi,
		      struct canal_engine_req *r)
{
	struct canal__gate *g = &e->gates[gi];
	int err = g->drv->ops->bulk_send(g->drv, r->cookie, r->buf, r->len,
					 &r->bulk);
	if (err) {
		r->bulk = NULL;
		canal__gate_fail(e, gi, err, "peer %d: %s", gi, g->drv->why);
		return 0;
	}
	canal__list_append(&g->bulk, &r->bulk_link);
	return 0;
}

int canal__sched_send(struct canal_engine *e, int gi,
		      struct canal_engine_req *r)
{
	struct canal__gate *g = &e->gates[gi];
	if (!g->drv) {
		/* First use of a lazily connected gate. */
		int err = canal__lazy_connect(e, gi);
		if (err)
			return err;
	}
	const struct canal__driver_caps *caps = &g->drv->caps;
	struct canal__piece_hdr h = {
		.tag = (uint16_t)r->tag,
		.seq = r->seq,
		.flags = ((r->flags & CANAL_ENGINE_EXPRESS) ? PIECE_FLAG_EXPRESS
							   : 0) |
			 ((r->flags & CANAL__FLAG_MORE) ? PIECE_FLAG_MORE : 0),
	};
	bool eager = r->len <= caps->eager_max;
	if (eager) {
		h.kind = PIECE_EAGER;
		h.len = (uint32_t)r->len;
	} else {
		h.kind = PIECE_RTS;
		h.len = (uint32_t)r->len;
		h.a = r->cookie;
		h.b = caps->rts_address &&
				      (!caps->read_max || r->len <= caps->read_max)
			      ? (uint64_t)(uintptr_t)r->buf
			      : 0;
		if (caps->bulk && r->len >= caps->bulk_min) {
			h.flags |= PIECE_FLAG_BULK;
			h.b = 0;
		}
	}
	/* The message's own piece lives in its request. */
	struct canal__piece *p = &r->piece;
	canal__list_init(&p->link);
	p->hdr_len = (uint8_t)canal__piece_encode(&h, p->hdr);
	p->embedded = true;
	p->payload = NULL;
	p->payload_len = 0;
	p->req = r;
	p->express = (r->flags & CANAL_ENGINE_EXPRESS) != 0;
	if (eager) {
		p->payload = r->buf;
		p->payload_len = (uint32_t)r->len;
		p->credit_cost = canal__eager_cost((uint32_t)r->len);
	} else {
		p->credit_cost = CANAL__RTS_COST;
		r->rndv_wait = true;
	}
	r->pieces_left = 1;
	/* Fast path (a small message into an empty window): straight to the
	 * driver, no queueing and no select(). The strategy still decides
	 * (lone()), credit is taken as walk() would, and anything but
	 * success falls back to the queue (push() then meets a broken link
	 * again and fails the gate). Not for the pieces of a pack: they are
	 * queued together so that a strategy may join them. The RTS of a
	 * bulk transfer too: its data is already on its way, and the
	 * receiver's side starts only when the RTS is there. */
	bool bulk = (h.flags & PIECE_FLAG_BULK) != 0;
	if ((eager || bulk) && !r->internal &&
	    !canal__gate_queued(g) &&
	    !g->error && g->credits >= (int64_t)p->credit_cost &&
	    e->strategy->lone(g, p)) {
		struct iovec iov[2] = {
			{ p->hdr, p->hdr_len },
			{ (void *)p->payload, p->payload_len },
		};
		if (g->drv->ops->send(g->drv, iov, p->payload_len ? 2 : 1,
				      (size_t)p->hdr_len + p->payload_len) == 0) {
			g->credits -= p->credit_cost;
			r->pieces_left = 0;
			if (eager)
				canal__req_complete(r, 0);
			return bulk ? bulk_start(e, gi, r) : 0;
		}
	}
	enqueue(g, p);
	return bulk ? bulk_start(e, gi, r) : 0;
}

int canal__sched_accept_rts(struct canal_engine *e, int gi,
			    struct canal_engine_req *r,
			    const struct canal__piece_hdr *rts)
{
	struct canal__gate *g = &e->gates[gi];
	struct canal__driver *d = g->drv;
	r->msg_len = rts->len;
	size_t n = r->msg_len < r->len ? r->msg_len : r->len;
	if (rts->flags & PIECE_FLAG_BULK) {
		if (!d->caps.bulk)
			return -EPROTO; /* not a request this driver can follow */
		int err = d->ops->bulk_recv(d, rts->a, r->buf, n, r->msg_len,
					    &r->bulk);
		if (err)
			return err;
		canal__list_append(&g->bulk, &r->bulk_link);
		r->rndv_wait = true;
		return 0;
	}
	if (rts->b && d->caps.read_peer_memory && d->ops->read_peer) {
		int err = d->ops->read_peer(d, r->buf, (unsigned long)rts->b, n);
		if (err == 0) {
			struct canal__piece_hdr fin = { .kind = PIECE_FIN,
							.a = rts->a };
			int q = enqueue_control(g, &fin);
			if (q)
				return q;
			canal__req_complete(r, r->msg_len > r->len ? -EMSGSIZE : 0);
			return 0;
		}
		/* Not allowed here (ptrace rules, seccomp), or no such
		 * process (another pid namespace): use the ring from now on.
		 * A bad address is caught by the sender's own checks: it only
		 * sends DATA within its buffer. */
		if (err == -EPERM || err == -ENOSYS || err == -ESRCH)
			d->caps.read_peer_memory = false;
	}
	/* An address this side did not read (its read failed, whatever the
	 * reason, or its mode is the ring): NOREAD tells the sender, which
	 * then sends to us as the ring does (eager to its larger size, no
	 * address): the pair converges instead of failing a read per RTS. */
	struct canal__piece_hdr rtr = {
		.kind = PIECE_RTR,
		.flags = rts->b ? PIECE_FLAG_NOREAD : 0,
		.a = rts->a,
		.b = r->cookie
	};
	/* DATA pieces are accepted only for a receive in this state, each
	 * chunk once (chunks.h): the map is there before the RTR can leave.
	 * An error fails the gate (the caller's), which ends the chunks. */
	int err = canal__chunks_start(g, r);
	if (err)
		return err;
	r->rndv_wait = true;
	return enqueue_control(g, &rtr);
}

void canal__sched_credit_send(struct canal_engine *e, int gi)
{
	struct canal__gate *g = &e->gates[gi];
	struct canal__piece_hdr c = { .kind = PIECE_CREDIT,
				      .len = (uint32_t)g->credit_owed };
	if (enqueue_control(g, &c) == 0)
		g->credit_owed = 0;
}

/* The RTR for send request r arrived: queue its data, chunk by chunk
 * (the layout the receiver checks: chunks.h). */
static int send_data(struct canal__gate *g, struct canal_engine_req *r,
		     uint64_t cookie_r)
{
	for (size_t off = 0; off < r->len; off += CANAL__DATA_CHUNK) {
		uint32_t n = canal__chunk_len(r->len, off);
		struct canal__piece_hdr h = { .kind = PIECE_DATA,
					      .tag = (uint16_t)r->tag,
					      .len = n,
					      .a = cookie_r, .b = off };
		struct canal__piece *p = piece_new(&h, r);
		if (!p)
			return -ENOMEM;
		p->payload = r->buf + off;
		p->payload_len = n;
		/* In the data queue, express: free of credit, for a receive
		 * that is posted (it sent the RTR), it must never wait behind
		 * pieces that wait for credit the receiver returns only as
		 * it takes messages, maybe this one first (a deadlock with
		 * more RTS pending than their credit: test_engine_flow; and
		 * with more EXPRESS pieces waiting for credit than a
		 * strategy looks at: test_reveng4_data_behind_express). */
		p->express = true;
		r->pieces_left++;
		enqueue_on(g, &g->data, p);
	}
	return 0;
}

static void piece_sent(struct canal__gate *g, struct canal__piece *p)
{
	canal__list_remove(&p->link);
	g->queued_bytes -= p->payload_len;
	g->credits -= p->credit_cost;
	struct canal_engine_req *r = p->req;
	/* Completing r may free it, and an embedded p with it: p first. */
	if (!p->embedded)
		free(p);
	if (r && --r->pieces_left == 0 && !r->rndv_wait && !r->done)
		canal__req_complete(r, 0);
}

int canal__sched_push(struct canal_engine *e, int gi)
{
	struct canal__gate *g = &e->gates[gi];
	struct canal__driver *d = g->drv;
	if (g->error || !d)
		return 0;
	int err = d->ops->flush(d);
	if (err < 0)
		return canal__gate_fail(e, gi, err, "peer %d: %s", gi, d->why), 0;
	int sent = 0;
	while (canal__gate_queued(g)) {
		struct canal__piece *sel[MAX_SELECT];
		int k = e->strategy->select(e, g, sel, MAX_SELECT);
		if (k == 0)
			break;
		struct iovec iov[2 * MAX_SELECT];
		int n = 0;
		size_t total = 0;
		for (int i = 0; i < k; i++) {
			iov[n].iov_base = sel[i]->hdr;
			iov[n++].iov_len = sel[i]->hdr_len;
			total += sel[i]->hdr_len;
			if (sel[i]->payload_len) {
				iov[n].iov_base = (void *)sel[i]->payload;
				iov[n++].iov_len = sel[i]->payload_len;
				total += sel[i]->payload_len;
			}
		}
		err = d->ops->send(d, iov, n, total);
		if (err == -EAGAIN)
			break;
		if (err < 0) {
			canal__gate_fail(e, gi, err, "peer %d: %s", gi, d->why);
			return sent;
		}
		for (int i = 0; i < k; i++)
			piece_sent(g, sel[i]);
		sent++;
	}
	return sent;
}

/* One piece that arrived: handle it, or return a negative errno with *why
 * set (the gate is then closed). */
static int dispatch(struct canal_engine *e, int gi,
		    const struct canal__piece_hdr *h,
		    const unsigned char *payload, canal__sched_arrive_fn arrive,
		    const char **why)
{
	struct canal__gate *g = &e->gates[gi];
	struct canal_engine_req *r;
	int err;
	switch (h->kind) {
	case PIECE_EAGER:
		if (h->len > (g->drv->caps.eager_accept_max
				      ? g->drv->caps.eager_accept_max
				      : g->drv->caps.eager_max)) {
			*why = "eager piece above the eager size";
			return -EPROTO;
		}
		return arrive(e, gi, h, payload);
	case PIECE_RTS:
		if (h->len <= (g->drv->caps.rts_min ? g->drv->caps.rts_min
						    : g->drv->caps.eager_max)) {
			*why = "request to send below the eager size";
			return -EPROTO;
		}
		if ((h->flags & PIECE_FLAG_BULK) &&
		    (!g->drv->caps.bulk || h->len < g->drv->caps.bulk_min)) {
			*why = "bulk request to send this driver cannot follow";
			return -EPROTO;
		}
		return arrive(e, gi, h, NULL);
	case PIECE_RTR:
		r = canal__req_lookup(e, h->a, gi, REQ_SEND);
		if (!r || !r->rndv_wait || r->bulk) {
			*why = "ready-to-receive for no pending send";
			return -EPROTO;
		}
		r->rndv_wait = false;
		if ((h->flags & PIECE_FLAG_NOREAD) && g->drv->caps.rts_address) {
			g->drv->caps.rts_address = false;
			if (g->drv->caps.eager_max_noread)
				g->drv->caps.eager_max = g->drv->caps.eager_max_noread;
		}
		return send_data(g, r, h->b);
	case PIECE_DATA:
		r = canal__req_lookup(e, h->a, gi, REQ_RECV);
		if (!r || !r->rndv_wait || r->bulk) {
			*why = "data piece outside any pending receive";
			return -EPROTO;
		}
		/* One chunk of the message, not written before: the receive
		 * completes when every chunk has been written, never with a
		 * byte missing. */
		err = canal__chunks_claim(r, h->b, h->len, why);
		if (err)
			return err;
		if (h->b < r->len) {
			size_t n = r->len - h->b < h->len ? r->len - h->b : h->len;
			memcpy(r->buf + h->b, payload, n);
		}
		if (r->chunks.left == 0) {
			canal__chunks_end(r);
			r->rndv_wait = false;
			canal__req_complete(r, r->msg_len > r->len ? -EMSGSIZE : 0);
		}
		return 0;
	case PIECE_FIN:
		r = canal__req_lookup(e, h->a, gi, REQ_SEND);
		if (!r || !r->rndv_wait || r->bulk) {
			*why = "finish for no pending send";
			return -EPROTO;
		}
		r->rndv_wait = false;
		if (r->pieces_left == 0)
			canal__req_complete(r, 0);
		return 0;
	case PIECE_CREDIT:
		g->credits += h->len;
		if (g->credits > CANAL__CREDIT_WINDOW) {
			*why = "credits beyond the window";
			return -EPROTO;
		}
		return 0;
	default:
		*why = "unknown piece kind";
		return -EPROTO;
	}
}

/* The gate's bulk transfers that ended: their requests complete. A
 * receive that got other than the RTS's length closes the gate. */
static int bulk_poll(struct canal_engine *e, int gi)
{
	struct canal__gate *g = &e->gates[gi];
	struct canal__driver *d = g->drv;
	int n = 0;
	for (struct canal__list *l = g->bulk.next, *next; l != &g->bulk;
	     l = next) {
		next = l->next;
		struct canal_engine_req *r =
			canal__container_of(l, struct canal_engine_req, bulk_link);
		size_t got = 0;
		int t = d->ops->bulk_test(d, r->bulk, &got);
		if (t == 0)
			continue;
		n++;
		r->bulk = NULL;
		canal__list_remove(&r->bulk_link);
		if (t < 0 && t != -EMSGSIZE)
			return canal__gate_fail(e, gi, t, "peer %d: %s", gi,
						d->why),
			       n;
		r->rndv_wait = false;
		if (r->kind == REQ_SEND) {
			if (r->pieces_left == 0)
				canal__req_complete(r, 0);
		} else if (t == -EMSGSIZE || got != r->msg_len) {
			/* more (truncated) or fewer bytes than its RTS said */
			canal__gate_fail(e, gi, -EPROTO,
					 "peer %d: malformed frame: bulk data of "
					 "another length than its message's %zu",
					 gi, r->msg_len);
			return n;
		} else {
			canal__req_complete(r, r->msg_len > r->len ? -EMSGSIZE : 0);
		}
	}
	return n;
}

int canal__sched_poll(struct canal_engine *e, int gi,
		      canal__sched_arrive_fn arrive)
{
	struct canal__gate *g = &e->gates[gi];
	struct canal__driver *d = g->drv;
	int got = 0;
	if (!canal__list_empty(&g->bulk))
		got += bulk_poll(e, gi);
	while (!g->error && got < POLL_BUDGET) {
		const unsigned char *pkt;
		size_t len;
		/* After a packet, read on only what is already here: an empty
		 * read is a system call on TCP, one more per message. */
		if (got > 0 && !d->ops->buffered(d))
			break;
		int r = d->ops->recv(d, &pkt, &len);
		if (r == 0)
			break;
		if (r < 0) {
			canal__gate_fail(e, gi, r, "peer %d: %s", gi, d->why);
			break;
		}
		got++;
		const char *why = NULL;
		int err = 0;
		for (size_t off = 0; off < len && !err;) {
			struct canal__piece_hdr h;
			unsigned hl = canal__piece_decode(pkt + off, len - off, &h);
			if (!hl) {
				why = "truncated piece header or unknown kind";
				err = -EPROTO;
				break;
			}
			size_t plen = canal__piece_has_payload(h.kind) ? h.len : 0;
			if (plen > len - off - hl) {
				why = "piece length beyond its packet";
				err = -EPROTO;
				break;
			}
			err = dispatch(e, gi, &h, pkt + off + hl, arrive, &why);
			off += hl + plen;
		}
		d->ops->release(d);
		if (err) {
			canal__gate_fail(e, gi, err, "peer %d: malformed frame: %s",
					 gi, why ? why : strerror(-err));
			break;
		}
	}
	return got;
}

void canal__sched_gate_drop(struct canal__gate *g)
{
	/* A gate an open never reached (it failed at an earlier one) is all
	 * zeros: nothing was queued on it, and its lists are not lists. */
	if (!g->control.next)
		return;
	/* Bulk transfers end first: their buffers are the users'. */
	while (g->bulk.next && !canal__list_empty(&g->bulk)) {
		struct canal_engine_req *r = canal__container_of(
			g->bulk.next, struct canal_engine_req, bulk_link);
		canal__list_remove(&r->bulk_link);
		g->drv->ops->bulk_cancel(g->drv, r->bulk);
		r->bulk = NULL;
	}
	/* Receives waiting for DATA: their chunk maps (chunks.h). */
	while (g->rndv_recv.next && !canal__list_empty(&g->rndv_recv))
		canal__chunks_end(canal__container_of(g->rndv_recv.next,
						      struct canal_engine_req,
						      chunks.link));
	struct canal__list *qs[] = { &g->control, &g->express, &g->data,
				     &g->normal };
	for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
		while (!canal__list_empty(qs[i])) {
			struct canal__piece *p = canal__container_of(
				qs[i]->next, struct canal__piece, link);
			canal__list_remove(&p->link);
			if (!p->embedded)
				free(p);
		}
	}
	g->queued_bytes = 0;
}
