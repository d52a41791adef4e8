/* SPDX-License-Identifier: MIT */
/*
 * transfer/pmix.c - the PMIx back end of the address exchange (mpirun of
 * Open MPI, Slurm's srun with --mpi=pmix): rank and job size from the PMIx
 * server, values published with PMIx_Put(PMIX_GLOBAL) + PMIx_Commit, a
 * PMIx_Fence over every process of the namespace that collects the data,
 * then PMIx_Get of a peer's key. Built when pkg-config finds pmix
 * (CANAL_HAVE_PMIX); otherwise canal__pmix_init says "not under PMIx".
 */
#define _GNU_SOURCE
#include "exchange.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int canal__pmix_put(const struct canal__xchg *x, const char *key,
		    const char *value);
int canal__pmix_fence(const struct canal__xchg *x, uint64_t deadline_ms);
int canal__pmix_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms);

#ifdef CANAL_HAVE_PMIX
#include <pmix.h>

/* PMIx keys are at most PMIX_MAX_KEYLEN: ours are "canal.<key>". */
static void full_key(char out[PMIX_MAX_KEYLEN + 1], const char *key)
{
	memset(out, 0, PMIX_MAX_KEYLEN + 1);
	snprintf(out, PMIX_MAX_KEYLEN + 1, "canal.%s", key);
}

int canal__pmix_init(struct canal__xchg *x)
{
	const char *r = getenv("PMIX_RANK"), *ns = getenv("PMIX_NAMESPACE");
	if (!r || !*r || !ns || !*ns)
		return 0;
	pmix_proc_t *me = calloc(1, sizeof *me);
	if (!me)
		return -ENOMEM;
	if (PMIx_Init(me, NULL, 0) != PMIX_SUCCESS) {
		free(me);
		return -ECONNREFUSED;
	}
	pmix_proc_t wild;
	PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
	pmix_value_t *v = NULL;
	if (PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &v) != PMIX_SUCCESS || !v) {
		PMIx_Finalize(NULL, 0);
		free(me);
		return -EPROTO;
	}
	uint32_t size = v->type == PMIX_UINT32 ? v->data.uint32 : 0;
	PMIX_VALUE_RELEASE(v);
	if (size < 1 || me->rank >= size) {
		PMIx_Finalize(NULL, 0);
		free(me);
		return -EPROTO;
	}
	x->rank = (int)me->rank;
	x->size = (int)size;
	x->dir = NULL;
	x->pmix = me;
	return 1;
}

void canal__pmix_fini(struct canal__xchg *x)
{
	if (!x->pmix)
		return;
	PMIx_Finalize(NULL, 0);
	free(x->pmix);
	x->pmix = NULL;
}

int canal__pmix_put(const struct canal__xchg *x, const char *key,
		    const char *value)
{
	(void)x;
	char k[PMIX_MAX_KEYLEN + 1];
	full_key(k, key);
	pmix_value_t v;
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = (char *)value;
	pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k, &v);
	return rc == PMIX_SUCCESS ? 0 : -EIO;
}

int canal__pmix_fence(const struct canal__xchg *x, uint64_t deadline_ms)
{
	const pmix_proc_t *me = x->pmix;
	if (PMIx_Commit() != PMIX_SUCCESS)
		return -EIO;
	pmix_proc_t all;
	PMIX_LOAD_PROCID(&all, me->nspace, PMIX_RANK_WILDCARD);
	/* The open's deadline, in PMIx's whole seconds (rounded up, at
	 * least 1): without it a rank that is alive but never opens (or
	 * opens late) held every other rank in the fence for ever, past
	 * connect_timeout_ms (engine.h: -ETIMEDOUT). The PMIx server fails
	 * the fence with PMIX_ERR_TIMEOUT then. */
	uint64_t now = canal__now_ms();
	uint64_t left = deadline_ms > now ? deadline_ms - now : 0;
	uint64_t secs = (left + 999) / 1000;
	int timeout = secs < 1 ? 1 : secs > INT_MAX ? INT_MAX : (int)secs;
	pmix_info_t info[2];
	bool yes = true;
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
	pmix_status_t rc = PMIx_Fence(&all, 1, info, 2);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	if (rc == PMIX_ERR_TIMEOUT) {
		fprintf(stderr, "canal engine: rank %d: PMIx fence: a peer did "
				"not open within the connect timeout\n",
			x->rank);
		return -ETIMEDOUT;
	}
	if (rc == PMIX_SUCCESS)
		return 0;
	/* A peer that ended (finalized, exited, aborted) without joining:
	 * PMIx's partial success or lost peer. engine.h's error for a peer
	 * that is gone is -ECONNRESET; -EIO stays for a PMIx that failed
	 * (test_revpmix_exit_peer). */
	bool gone = rc == PMIX_ERR_PARTIAL_SUCCESS ||
		    rc == PMIX_ERR_LOST_CONNECTION ||
		    rc == PMIX_ERR_UNREACH
#ifdef PMIX_ERR_PROC_TERM_WO_SYNC
		    || rc == PMIX_ERR_PROC_TERM_WO_SYNC
#endif
#ifdef PMIX_ERR_PROC_ABORTED
		    || rc == PMIX_ERR_PROC_ABORTED
#endif
#ifdef PMIX_ERR_LOST_PEER_CONNECTION
		    || rc == PMIX_ERR_LOST_PEER_CONNECTION
#endif
		    ;
	fprintf(stderr, "canal engine: rank %d: PMIx fence: %s%s\n", x->rank,
		PMIx_Error_string(rc),
		gone ? " (a peer ended without opening)" : "");
	return gone ? -ECONNRESET : -EIO;
}

int canal__pmix_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms)
{
	(void)deadline_ms; /* the fence made the data local */
	const pmix_proc_t *me = x->pmix;
	char k[PMIX_MAX_KEYLEN + 1];
	full_key(k, key);
	pmix_proc_t p;
	PMIX_LOAD_PROCID(&p, me->nspace, (pmix_rank_t)rank);
	pmix_value_t *v = NULL;
	if (PMIx_Get(&p, k, NULL, 0, &v) != PMIX_SUCCESS || !v)
		return -ENOENT;
	int err = 0;
	if (v->type != PMIX_STRING || !v->data.string ||
	    strlen(v->data.string) >= cap)
		err = -EPROTO;
	else
		strcpy(buf, v->data.string);
	PMIX_VALUE_RELEASE(v);
	return err;
}

#else /* !CANAL_HAVE_PMIX */

int canal__pmix_init(struct canal__xchg *x)
{
	(void)x;
	return 0;
}
void canal__pmix_fini(struct canal__xchg *x)
{
	(void)x;
}
int canal__pmix_put(const struct canal__xchg *x, const char *key,
		    const char *value)
{
	(void)x, (void)key, (void)value;
	return -ENOTSUP;
}
int canal__pmix_fence(const struct canal__xchg *x, uint64_t deadline_ms)
{
	(void)x, (void)deadline_ms;
	return -ENOTSUP;
}
int canal__pmix_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms)
{
	(void)x, (void)rank, (void)key, (void)buf, (void)cap, (void)deadline_ms;
	return -ENOTSUP;
}
#endif
