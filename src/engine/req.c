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

/* canal__req_take() without a free index or a cached request: the table
 * grows, the request comes from malloc. */
struct canal_engine_req *canal__req_take_slow(struct canal_engine *e)
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

/* canal__req_free() of a posted request, or with the cache full. */
void canal__req_free_slow(struct canal_engine_req *r)
{
	if (r->posted)
		canal__collect_unpost(r);
	canal__req_release(r);
	struct canal_engine *e = r->e;
	if (e->req_cached < CANAL__REQ_CACHE_MAX)
		canal__req_cache_put(e, r);
	else
		free(r);
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
