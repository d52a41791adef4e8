/* SPDX-License-Identifier: MIT */
/*
 * engine/req.c - the request table (ids that serve as rendezvous cookies)
 * and completion, shared by every layer.
 *
 * A cookie is (generation << 32) | index. The generation of a slot moves on
 * each time its request is freed, so a stale or forged cookie from a peer
 * finds either no request or one whose cookie differs: lookups compare the
 * whole cookie, the gate and the kind, and ignore completed requests.
 */
#include "internal.h"

#include "collect/collect.h"
#include "schedule/schedule.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Freed requests kept for reuse (a malloc/free pair less per message), at
 * most REQ_CACHE_MAX of them (about 3.6 MB held after a peak; the rest are
 * freed). 256 left the seed's parallel ping-pongs at 1 000 packs (4 000
 * live requests) paying malloc and free for most of them: 23 % of the
 * instructions (callgrind). */
#define REQ_CACHE_MAX 16384u

static int table_grow(struct canal_engine *e)
{
	uint32_t cap = e->reqcap ? e->reqcap * 2 : 64;
	struct canal_engine_req **t = realloc(e->reqtab, cap * sizeof *t);
	if (!t)
		return -ENOMEM;
	e->reqtab = t;
	uint32_t *gen = realloc(e->reqgen, cap * sizeof *gen);
	if (!gen)
		return -ENOMEM;
	e->reqgen = gen;
	uint32_t *fr = realloc(e->reqfree, cap * sizeof *fr);
	if (!fr)
		return -ENOMEM;
	e->reqfree = fr;
	for (uint32_t i = cap; i-- > e->reqcap;) {
		t[i] = NULL;
		gen[i] = 1;
		fr[e->nfree++] = i;
	}
	e->reqcap = cap;
	return 0;
}

struct canal_engine_req *canal__req_new(struct canal_engine *e, int kind)
{
	if (e->nfree == 0 && table_grow(e) < 0)
		return NULL;
	struct canal_engine_req *r = e->req_cache;
	if (r) {
		e->req_cache = (struct canal_engine_req *)(void *)r->link.next;
		e->req_cached--;
	} else if (!(r = malloc(sizeof *r))) {
		return NULL;
	}
	/* Every field before the embedded piece, one by one (a memset here
	 * compiled to rep stos: a fifth of the engine's CPU per message, by
	 * perf on engine_overhead). The piece is set up whole by
	 * canal__sched_send() before any use. Keep in step with the struct. */
	r->done = r->posted = r->internal = r->rndv_wait = false;
	r->error = 0;
	r->tag = 0;
	r->seq = 0;
	r->flags = 0;
	r->buf = NULL;
	r->len = r->msg_len = r->arrived = 0;
	r->pieces_left = 0;
	r->parent = NULL;
	r->children_left = 0;
	r->bulk = NULL;
	r->nat.h = NULL;
	r->nat.live = false;
	uint32_t idx = e->reqfree[--e->nfree];
	canal__list_init(&r->link);
	r->e = e;
	r->kind = (uint8_t)kind;
	r->gate = CANAL_ENGINE_ANY_GATE;
	r->cookie = ((uint64_t)e->reqgen[idx] << 32) | idx;
	e->reqtab[idx] = r;
	e->reqlive++;
	e->undone++;
	return r;
}

struct canal_engine_req *canal__req_lookup(struct canal_engine *e,
					   uint64_t cookie, int gate, int kind)
{
	uint32_t idx = (uint32_t)cookie;
	if (idx >= e->reqcap)
		return NULL;
	struct canal_engine_req *r = e->reqtab[idx];
	if (!r || r->cookie != cookie || r->gate != gate || r->kind != kind ||
	    r->done)
		return NULL;
	return r;
}

void canal__req_free(struct canal_engine_req *r)
{
	struct canal_engine *e = r->e;
	uint32_t idx = (uint32_t)r->cookie;
	if (r->posted)
		canal__collect_unpost(r);
	e->reqtab[idx] = NULL;
	if (!r->done)
		e->undone--;
	if (++e->reqgen[idx] == 0)
		e->reqgen[idx] = 1;
	e->reqfree[e->nfree++] = idx;
	e->reqlive--;
	if (e->req_cached < REQ_CACHE_MAX) {
		r->link.next = (struct canal__list *)(void *)e->req_cache;
		e->req_cache = r;
		e->req_cached++;
	} else {
		free(r);
	}
}

void canal__req_complete_slow(struct canal_engine_req *r, int error)
{
	if (r->done)
		return;
	r->done = true;
	r->error = error;
	r->e->undone--;
	if (r->posted)
		canal__collect_unpost(r);
	struct canal_engine_req *p = r->parent;
	if (p) {
		if (error && !p->error)
			p->error = error;
		if (--p->children_left == 0)
			canal__req_complete(p, p->error);
	}
	if (r->internal)
		canal__req_free(r);
}

/* End the UCP operations of gate gi (or of any-gate receives) with
 * error: they must end before their requests complete (internal.h). A
 * request may be freed by its end (a pack's piece): the table is read
 * again at each index. */
void canal__req_native_abort(struct canal_engine_req *r, int error)
{
	struct canal_engine *e = r->e;
	e->native_abort_err = error;
	canal__ucx_native_abort(e->native, &r->nat);
	e->native_abort_err = 0;
}

static void native_abort(struct canal_engine *e, int gi, int error)
{
	for (uint32_t i = 0; i < e->reqcap; i++) {
		struct canal_engine_req *r = e->reqtab[i];
		if (r && r->nat.live && r->gate == gi)
			canal__req_native_abort(r, error);
	}
}

int canal__gate_fail(struct canal_engine *e, int gi, int error,
		     const char *fmt, ...)
{
	struct canal__gate *g = &e->gates[gi];
	if (g->error)
		return error;
	g->error = error;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->errmsg, sizeof g->errmsg, fmt, ap);
	va_end(ap);
	canal__sched_gate_drop(g);
	if (e->native)
		native_abort(e, gi, error);
	for (uint32_t i = 0; i < e->reqcap; i++) {
		struct canal_engine_req *r = e->reqtab[i];
		if (r && !r->done && r->gate == gi && r->kind != REQ_PACK)
			canal__req_complete(r, error);
	}
	/* With every gate closed, an any-gate receive can never be matched
	 * (what had arrived was matched when it arrived): fail it too. */
	for (int other = 0; other < e->size; other++)
		if (other != e->rank && !e->gates[other].error)
			return error;
	if (e->native)
		native_abort(e, CANAL_ENGINE_ANY_GATE, error);
	while (!canal__list_empty(&e->any_posted))
		canal__req_complete(canal__container_of(e->any_posted.next,
							struct canal_engine_req,
							link),
				    error);
	return error;
}
