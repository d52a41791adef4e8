/* remote_traffic.h - the exchange the issue-16 tests run over a session
 * (UCX, TCP between network namespaces, mpirun): every rank sends every
 * other rank `msgs` messages on each of TAGS tags, sizes from 1 B to
 * beyond the drivers' eager sizes (TCP 64 KiB, UCX 1 MiB) so that both the
 * engine's and UCX's rendezvous run. Every message carries (source, tag,
 * index) and a pattern derived from them. Receives are posted per (gate,
 * tag) in order, so the n-th receive must get index n: per-tag order; each
 * index received once and nothing left over after a final handshake on
 * FIN_TAG: exactly once. Returns 0 or prints what went wrong and returns 1. */
#ifndef CANAL_TEST_REMOTE_TRAFFIC_H
#define CANAL_TEST_REMOTE_TRAFFIC_H

#include <canal/engine.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_TAGS 4
#define RT_FIN_TAG 99

static inline size_t rt_len(int i, int t, int msgs, int big)
{
	if (big && t == 0 && i == msgs - 1)
		return (size_t)1536 * 1024; /* above UCX's 1 MiB packet */
	if (i % 10 == 7)
		return 70000 + (size_t)t; /* above TCP's eager size */
	return (size_t)((i * 131 + t * 17) % 3000) + 12;
}

static inline void rt_fill(unsigned char *b, size_t len, int src, int t, int i)
{
	uint32_t h[3] = { (uint32_t)src, (uint32_t)t, (uint32_t)i };
	memcpy(b, h, sizeof h);
	for (size_t k = sizeof h; k < len; k++)
		b[k] = (unsigned char)(src * 31 + t * 7 + i * 13 + (int)k);
}

static inline int rt_check(const unsigned char *b, size_t len, int src, int t,
			   int i)
{
	uint32_t h[3];
	memcpy(h, b, sizeof h);
	if (h[0] != (uint32_t)src || h[1] != (uint32_t)t || h[2] != (uint32_t)i) {
		fprintf(stderr, "order: from %d tag %d expected #%d, got %u/%u/#%u\n",
			src, t, i, h[0], h[1], h[2]);
		return 1;
	}
	for (size_t k = sizeof h; k < len; k++)
		if (b[k] != (unsigned char)(src * 31 + t * 7 + i * 13 + (int)k)) {
			fprintf(stderr, "data: from %d tag %d #%d byte %zu\n", src,
				t, i, k);
			return 1;
		}
	return 0;
}

static inline int remote_traffic(struct canal_engine *e, int msgs, int big)
{
	int rank = canal_engine_rank(e), size = canal_engine_size(e);
	size_t n = (size_t)size * RT_TAGS * (size_t)msgs;
	struct canal_engine_req **sr = calloc(n, sizeof *sr), **rr = calloc(n, sizeof *rr);
	unsigned char **sb = calloc(n, sizeof *sb), **rb = calloc(n, sizeof *rb);
	int bad = 0;
	if (!sr || !rr || !sb || !rb)
		return 1;
	for (int p = 0; p < size; p++)
		for (int t = 0; t < RT_TAGS; t++)
			for (int i = 0; i < msgs; i++) {
				size_t k = ((size_t)p * RT_TAGS + (size_t)t) * (size_t)msgs + (size_t)i;
				if (p == rank)
					continue;
				size_t len = rt_len(i, t, msgs, big);
				rb[k] = malloc(len);
				sb[k] = malloc(len);
				if (!rb[k] || !sb[k])
					return 1;
				rt_fill(sb[k], len, rank, t, i);
				/* Receives first for even ranks' odd tags: both
				 * posted-before and unexpected arrivals occur. */
				int r = canal_engine_irecv(e, p, (unsigned)t, rb[k], len, &rr[k]);
				int s = canal_engine_isend(e, p, (unsigned)t, sb[k], len, 0, &sr[k]);
				if (r || s) {
					fprintf(stderr, "rank %d: post: %d %d\n", rank, r, s);
					return 1;
				}
			}
	for (size_t k = 0; k < n; k++) {
		if (!sr[k])
			continue;
		struct canal_engine_status st;
		int r = canal_engine_wait(e, rr[k], &st);
		int s = canal_engine_wait(e, sr[k], NULL);
		int p = (int)(k / ((size_t)RT_TAGS * (size_t)msgs));
		int t = (int)(k / (size_t)msgs % RT_TAGS), i = (int)(k % (size_t)msgs);
		if (r || s) {
			fprintf(stderr, "rank %d: wait from %d tag %d #%d: %s / %s\n",
				rank, p, t, i, strerror(-r), strerror(-s));
			bad = 1;
		} else if (st.len != rt_len(i, t, msgs, big) || st.gate != p) {
			fprintf(stderr, "rank %d: status len %zu gate %d\n", rank,
				st.len, st.gate);
			bad = 1;
		} else {
			bad |= rt_check(rb[k], st.len, p, t, i);
		}
		free(rb[k]);
		free(sb[k]);
	}
	/* Everyone has sent everything: after the FIN round no data message
	 * may be left (a duplicate would be). */
	char fin = 'f', got[8];
	for (int p = 0; p < size && !bad; p++) {
		if (p == rank)
			continue;
		struct canal_engine_req *a, *b;
		if (canal_engine_isend(e, p, RT_FIN_TAG, &fin, 1, 0, &a) ||
		    canal_engine_irecv(e, p, RT_FIN_TAG, got, sizeof got, &b) ||
		    canal_engine_wait(e, a, NULL) || canal_engine_wait(e, b, NULL))
			bad = 1;
	}
	for (int t = 0; t < RT_TAGS && !bad; t++) {
		struct canal_engine_status st;
		if (canal_engine_probe(e, CANAL_ENGINE_ANY_GATE, (unsigned)t, &st) != 0) {
			fprintf(stderr, "rank %d: extra message on tag %d\n", rank, t);
			bad = 1;
		}
	}
	/* A second round before anyone returns: a peer starting its next
	 * exchange must not send before everyone has probed. */
	for (int p = 0; p < size && !bad; p++) {
		if (p == rank)
			continue;
		struct canal_engine_req *a, *b;
		if (canal_engine_isend(e, p, RT_FIN_TAG, &fin, 1, 0, &a) ||
		    canal_engine_irecv(e, p, RT_FIN_TAG, got, sizeof got, &b) ||
		    canal_engine_wait(e, a, NULL) || canal_engine_wait(e, b, NULL))
			bad = 1;
	}
	free(sr);
	free(rr);
	free(sb);
	free(rb);
	return bad;
}

#endif
