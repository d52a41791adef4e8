/* SPDX-License-Identifier: MIT */
/*
 * schedule/chunks.c - the receiver's record of a rendezvous message's
 * DATA chunks (layout and invariants: chunks.h).
 *
 * One bit per chunk. A message of up to 64 chunks (4 MiB) keeps its map
 * in the request (chunks.small); a larger one allocates it at its RTR, at
 * most 8 KiB (a message is below 4 GiB: 65536 chunks). Nothing of it is
 * set at request init, which every message pays.
 */
#include "chunks.h"

#include <errno.h>
#include <stdlib.h>

#define MAP_BITS 64u

int canal__chunks_start(struct canal__gate *g, struct canal_engine_req *r)
{
	struct canal__chunks *c = &r->chunks;
	size_t n = (r->msg_len + CANAL__DATA_CHUNK - 1) / CANAL__DATA_CHUNK;
	c->small = 0;
	c->map = &c->small;
	if (n > MAP_BITS) {
		c->map = calloc((n + MAP_BITS - 1) / MAP_BITS, sizeof *c->map);
		if (!c->map)
			return -ENOMEM;
	}
	c->left = (uint32_t)n;
	canal__list_init(&c->link);
	canal__list_append(&g->rndv_recv, &c->link);
	return 0;
}

int canal__chunks_claim(struct canal_engine_req *r, uint64_t off,
			uint32_t len, const char **why)
{
	struct canal__chunks *c = &r->chunks;
	if (off >= r->msg_len || off % CANAL__DATA_CHUNK != 0 ||
	    len != canal__chunk_len(r->msg_len, (size_t)off)) {
		*why = "data piece that is not a chunk of its message";
		return -EPROTO;
	}
	size_t i = (size_t)(off / CANAL__DATA_CHUNK);
	uint64_t bit = (uint64_t)1 << (i % MAP_BITS);
	uint64_t *word = &c->map[i / MAP_BITS];
	if (*word & bit) {
		*why = "data piece for a chunk already written (repeated or "
		       "forged)";
		return -EPROTO;
	}
	*word |= bit;
	c->left--;
	return 0;
}

void canal__chunks_end(struct canal_engine_req *r)
{
	struct canal__chunks *c = &r->chunks;
	canal__list_remove(&c->link);
	if (c->map != &c->small)
		free(c->map);
	c->map = NULL;
}
