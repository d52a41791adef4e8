/* SPDX-License-Identifier: MIT */
/*
 * transfer/ucx_native.c - the engine's messages as UCP tagged messages
 * (driver.h, "ucx_native.c"): with the ucx driver alone, a message is one
 * ucp_tag_send_nbx from the user's buffer and a receive one
 * ucp_tag_recv_nbx into the user's buffer; UCX matches them, chooses eager
 * or rendezvous, and keeps the order. What the engine adds per message is
 * its request: no header, no packet, no matching of its own.
 *
 * Measured against ucx_perftest and Open MPI's pml ucx: docs/ENGINE.md,
 * "UCX's own matching".
 *
 * Tags (64 bits): NATIVE_BIT (bit 62; a packet's tag is the sender's
 * rank, a bulk transfer's has bit 63: neither has it), the engine's tag
 * in bits 32-47, MORE_BIT (bit 48: a piece of a pack followed by others;
 * every receive and probe masks it out), the sender's rank in bits 0-31.
 * A receive from any sender masks the rank out.
 *
 * Operations: op->live is set before UCX is called and cleared by the
 * one path that ends the operation (the callback, or abort), which also
 * frees UCX's request and then calls op->done, last (done may free the
 * request that holds op). A receive whose message is already there is
 * called back inside ucp_tag_recv_nbx (always a request: UCX 1.13 leaves
 * recv_info unwritten when a receive completes at once, see ucx.c):
 * op->h is then not set, since that request is already freed.
 */
#define _GNU_SOURCE
#include "driver.h"
#include "ucx_priv.h"

#include <errno.h>
#include <stdlib.h>

#define NATIVE_BIT ((ucp_tag_t)1 << 62)
#define RANK_MASK ((ucp_tag_t)0xffffffffu)
#define MORE_BIT ((ucp_tag_t)1 << 48)
struct canal__native {
	struct ucx_ctx *c;
	int size, rank;
	struct ucx_driver **peer; /* size entries, peer[rank] NULL */
};

static ucp_tag_t native_tag(unsigned tag, int rank)
{
	return NATIVE_BIT | (ucp_tag_t)(tag & 0xffffu) << 32 |
	       ((tag & CANAL__NATIVE_MORE) ? MORE_BIT : 0) |
	       (ucp_tag_t)(uint32_t)rank;
}

static int status_err(ucs_status_t st)
{
	switch (st) {
	case UCS_OK:
		return 0;
	case UCS_ERR_MESSAGE_TRUNCATED:
		return -EMSGSIZE;
	case UCS_ERR_CANCELED:
		return -ECANCELED;
	case UCS_ERR_NO_MEMORY:
		return -ENOMEM;
	default:
		return -ECONNRESET;
	}
}

/* The end of op: UCX's request freed, op->done last. */
static void end(struct canal__native_op *op, void *req, int err,
		const struct canal__native_info *info)
{
	if (req)
		ucp_request_free(req);
	op->h = NULL;
	op->live = false;
	op->done(op, err, info);
}

static void send_cb(void *req, ucs_status_t st, void *arg)
{
	end(arg, req, status_err(st), NULL);
}

static void recv_cb(void *req, ucs_status_t st,
		    const ucp_tag_recv_info_t *info, void *arg)
{
	struct canal__native_op *op = arg;
	struct canal__native_info ni;
	bool have = info && st != UCS_ERR_CANCELED;
	if (have) {
		ni.rank = (int)(info->sender_tag & RANK_MASK);
		ni.tag = (unsigned)(info->sender_tag >> 32 & 0xffffu);
		ni.len = info->length;
		ni.more = (info->sender_tag & MORE_BIT) != 0;
		/* UCX 1.13 ends a rendezvous receive too small for its
		 * message with UCS_OK and the message's length. */
		if (st == UCS_OK && ni.len > op->cap)
			st = UCS_ERR_MESSAGE_TRUNCATED;
	}
	end(op, req, status_err(st), have ? &ni : NULL);
}

int canal__ucx_native_new(struct canal__driver **drivers, int size, int rank,
			  struct canal__native **out)
{
	struct canal__native *n = calloc(1, sizeof *n);
	if (n)
		n->peer = calloc((size_t)size, sizeof *n->peer);
	if (!n || !n->peer) {
		free(n);
		return -ENOMEM;
	}
	n->size = size;
	n->rank = rank;
	for (int i = 0; i < size; i++) {
		n->peer[i] = i == rank ? NULL : (struct ucx_driver *)drivers[i];
		if (n->peer[i] && !n->c)
			n->c = n->peer[i]->c;
	}
	if (!n->c) { /* no peer: nothing to match */
		free(n->peer);
		free(n);
		return -ENODEV;
	}
	n->c->refs++;
	*out = n;
	return 0;
}

unsigned canal__ucx_native_drain(struct canal__native *n)
{
	return canal__ucx_worker_drain(n->c);
}

void canal__ucx_native_free(struct canal__native *n)
{
	if (!n)
		return;
	if (n->c)
		canal__ucx_ctx_unref(n->c);
	free(n->peer);
	free(n);
}

int canal__ucx_native_send(struct canal__native *n, int rank, unsigned tag,
			   const void *buf, size_t len,
			   struct canal__native_op *op)
{
	struct ucx_driver *d = n->peer[rank];
	if (d->failed)
		return status_err(d->failed);
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
				UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = send_cb,
		.user_data = op,
	};
	op->h = NULL;
	op->live = true;
	op->send = true;
	ucs_status_ptr_t r = ucp_tag_send_nbx(d->ep, buf, len,
					      native_tag(tag, n->rank), &p);
	if (!UCS_PTR_IS_PTR(r)) {
		/* Done at once, or refused: UCX calls nothing back. */
		op->live = false;
		return r == NULL ? 1 : status_err(UCS_PTR_STATUS(r));
	}
	if (op->live)
		op->h = r;
	return 0;
}

int canal__ucx_native_recv(struct canal__native *n, int rank, unsigned tag,
			   void *buf, size_t cap, struct canal__native_op *op)
{
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
				UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
		.cb.recv = recv_cb,
		.user_data = op,
	};
	ucp_tag_t mask = (rank < 0 ? ~RANK_MASK : ~(ucp_tag_t)0) & ~MORE_BIT;
	op->h = NULL;
	op->live = true;
	op->send = false;
	op->cap = cap;
	ucs_status_ptr_t r = ucp_tag_recv_nbx(n->c->worker, buf, cap,
					      native_tag(tag, rank < 0 ? 0 : rank),
					      mask, &p);
	if (UCS_PTR_IS_ERR(r)) {
		op->live = false;
		return status_err(UCS_PTR_STATUS(r));
	}
	/* op is still readable if done ran inside the call: a receive's
	 * done completes its request, never frees it (receives are never
	 * a pack's internal pieces: unpack posts them by the public irecv,
	 * and the caller holds the request until wait or test). */
	if (op->live)
		op->h = r;
	return 0;
}

int canal__ucx_native_probe(struct canal__native *n, int rank, unsigned tag,
			    struct canal__native_info *info)
{
	ucp_tag_recv_info_t ri;
	ucp_tag_t mask = (rank < 0 ? ~RANK_MASK : ~(ucp_tag_t)0) & ~MORE_BIT;
	ucp_tag_message_h m = ucp_tag_probe_nb(
		n->c->worker, native_tag(tag, rank < 0 ? 0 : rank), mask, 0, &ri);
	if (!m)
		return 0;
	if (info) {
		info->rank = (int)(ri.sender_tag & RANK_MASK);
		info->tag = tag;
		info->len = ri.length;
		info->more = (ri.sender_tag & MORE_BIT) != 0;
	}
	return 1;
}

unsigned canal__ucx_native_progress(struct canal__native *n)
{
	return ucp_worker_progress(n->c->worker);
}

void canal__ucx_native_abort(struct canal__native *n,
			     struct canal__native_op *op)
{
	if (!op->live)
		return;
	void *h = op->h;
	/* A receive not matched yet is called back at once; one under way
	 * ends with its data or its endpoint's error. A send cannot be
	 * cancelled in UCX 1.13 (ucp_request_cancel ignores it), and one to
	 * a dead peer never ends: not waited for. */
	if (!op->send) {
		ucp_request_cancel(n->c->worker, h);
		/* while the worker has work: bounded, no waiting */
		for (int i = 0; op->live && i < UCX_DRAIN_ROUNDS; i++)
			if (ucp_worker_progress(n->c->worker) == 0)
				break;
	}
	if (op->live) {
		/* Freed under way: UCX calls nothing back for it. */
		end(op, h, -ECANCELED, NULL);
	}
}
