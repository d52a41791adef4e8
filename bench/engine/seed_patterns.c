/* SPDX-License-Identifier: MIT */
/*
 * seed_patterns.c - the seed's two scheduling experiments (seed 002,
 * NewMadeleine), written with canal's pack/unpack:
 *
 *  page  The page requests of a distributed shared memory (the seed's
 *        figure 3): the client asks for 3 pages of 65 KiB; each request is
 *        4 small pieces (requester, page number, diff flag, access type);
 *        the server answers with the page number, a "found" flag (express:
 *        the client's next unpack depends on it) and the page. The seed
 *        chose its page size so that the page goes by rendezvous, not as
 *        the request does; 65 KiB (66 560 B) is above the eager size of
 *        shm and TCP (64 KiB) and of UCX (8 KiB; not with a UCX_RNDV_THRESH
 *        of the user's: then UCX's own eager size, up to 1 MiB, applies).
 *        --page-bytes N changes it (65536: an eager page on shm and TCP).
 *        Output: microseconds per series of 3 pages.
 *  mux   Two flows (tags) multiplexed: a ping-pong where each side packs
 *        n small pieces on each of 2 tags, then unpacks the other's 2 x n
 *        (the seed's figure 6). Output: the OSU-style table
 *        "# Packs  Latency (us)" for n = 1 .. 1000 (one-way).
 * Run with the default strategy (one packet per piece) and aggregate to
 * see the gain:
 *   canal-launch -n 2 seed_patterns page|mux --driver shm|tcp --strategy S
 */
#include <canal/channel.h>
#include <canal/engine.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_DEFAULT 66560 /* 65 KiB, the seed's "65 Ko" */
#define PAGES 3
#define REQ_TAG 1
#define REP_TAG 2

static void die(const char *what, int err)
{
	fprintf(stderr, "seed_patterns: %s: %s\n", what, strerror(-err));
	exit(1);
}

#define CK(call)                                                             \
	do {                                                                 \
		int err_ = (call);                                           \
		if (err_ < 0)                                                \
			die(#call, err_);                                    \
	} while (0)

static size_t page_bytes = PAGE_DEFAULT;

static void page_client(struct canal_engine *e, int server, char *pages)
{
	int me = canal_engine_rank(e);
	for (int i = 0; i < PAGES; i++) {
		int number = i, access = 1, rnumber = -1;
		bool diff = false, found = false;
		struct canal_engine_pack *p;
		struct canal_engine_req *r;
		CK(canal_engine_pack_begin(e, server, REQ_TAG, &p));
		CK(canal_engine_pack(p, &me, sizeof me, 0));
		CK(canal_engine_pack(p, &number, sizeof number, 0));
		CK(canal_engine_pack(p, &diff, sizeof diff, 0));
		CK(canal_engine_pack(p, &access, sizeof access, 0));
		CK(canal_engine_pack_end(p, &r));
		CK(canal_engine_unpack_begin(e, server, REP_TAG, &p));
		CK(canal_engine_unpack(p, &rnumber, sizeof rnumber, 0));
		CK(canal_engine_unpack(p, &found, sizeof found, CANAL_ENGINE_EXPRESS));
		if (found)
			CK(canal_engine_unpack(p, pages + (size_t)i * page_bytes, page_bytes, 0));
		CK(canal_engine_unpack_end(p, NULL));
		CK(canal_engine_wait(e, r, NULL));
		if (rnumber != number || !found)
			die("page reply", -EPROTO);
	}
}

static void page_server(struct canal_engine *e, char *pages)
{
	for (int i = 0; i < PAGES; i++) {
		int source = -1, number = -1, access = 0;
		bool diff = false, found = true;
		struct canal_engine_pack *p;
		struct canal_engine_req *r;
		CK(canal_engine_unpack_begin(e, CANAL_ENGINE_ANY_GATE, REQ_TAG, &p));
		CK(canal_engine_unpack(p, &source, sizeof source, 0));
		CK(canal_engine_unpack(p, &number, sizeof number, 0));
		CK(canal_engine_unpack(p, &diff, sizeof diff, 0));
		CK(canal_engine_unpack(p, &access, sizeof access, 0));
		CK(canal_engine_unpack_end(p, NULL));
		if (number < 0 || number >= PAGES)
			die("page number", -EPROTO);
		CK(canal_engine_pack_begin(e, source, REP_TAG, &p));
		CK(canal_engine_pack(p, &number, sizeof number, 0));
		CK(canal_engine_pack(p, &found, sizeof found, CANAL_ENGINE_EXPRESS));
		CK(canal_engine_pack(p, pages + (size_t)number * page_bytes, page_bytes, 0));
		CK(canal_engine_pack_end(p, &r));
		CK(canal_engine_wait(e, r, NULL));
	}
}

static void mux_round(struct canal_engine *e, int peer, int n, int *out, int *in,
		      bool first)
{
	struct canal_engine_pack *p[2];
	struct canal_engine_req *r[2];
	for (int pass = 0; pass < 2; pass++) {
		if (pass == (first ? 1 : 0)) {
			for (int t = 0; t < 2; t++) {
				CK(canal_engine_unpack_begin(e, peer, 10 + (unsigned)t, &p[t]));
				for (int k = 0; k < n; k++)
					CK(canal_engine_unpack(p[t], &in[t * n + k], sizeof(int), 0));
			}
			for (int t = 0; t < 2; t++)
				CK(canal_engine_unpack_end(p[t], NULL));
		} else {
			for (int t = 0; t < 2; t++) {
				CK(canal_engine_pack_begin(e, peer, 10 + (unsigned)t, &p[t]));
				for (int k = 0; k < n; k++)
					CK(canal_engine_pack(p[t], &out[t * n + k], sizeof(int), 0));
				CK(canal_engine_pack_end(p[t], &r[t]));
			}
			for (int t = 0; t < 2; t++)
				CK(canal_engine_wait(e, r[t], NULL));
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "page") && strcmp(argv[1], "mux"))) {
		fprintf(stderr, "usage: seed_patterns page|mux [--driver D] [--strategy S] [--iterations N] [--max-packs N] [--page-bytes N]\n");
		return 2;
	}
	bool page = !strcmp(argv[1], "page");
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	long iters = page ? 1000 : 0, max_packs = 1000;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--driver"))
			o.driver = argv[i + 1];
		else if (!strcmp(argv[i], "--strategy"))
			o.strategy = argv[i + 1];
		else if (!strcmp(argv[i], "--iterations"))
			iters = strtol(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--max-packs"))
			max_packs = strtol(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--page-bytes")) {
			char *end;
			long v = strtol(argv[i + 1], &end, 0);
			if (*end || v < 1 || v > (1L << 30)) {
				fprintf(stderr, "seed_patterns: --page-bytes: 1 .. 2^30\n");
				return 2;
			}
			page_bytes = (size_t)v;
		}
	}
	struct canal_engine *e;
	CK(canal_engine_open(&o, &e));
	int rank = canal_engine_rank(e), peer = 1 - rank;
	if (page) {
		char *pages = calloc(PAGES, page_bytes);
		if (!pages)
			die("pages", -ENOMEM);
		long skip = iters / 10 + 1;
		uint64_t t0 = 0;
		for (long i = 0; i < iters + skip; i++) {
			if (i == skip)
				t0 = canal_now_ns();
			if (rank == 0)
				page_client(e, 1, pages);
			else
				page_server(e, pages);
		}
		if (rank == 0)
			printf("# Page requests (%d pages of %zu B; driver %s, strategy %s)\n"
			       "series of %d pages: %.2f us\n", PAGES, page_bytes, canal_engine_driver(e),
			       canal_engine_strategy(e), PAGES,
			       (double)(canal_now_ns() - t0) / 1e3 / (double)iters);
		free(pages);
	} else {
		int *out = calloc(2 * (size_t)max_packs, sizeof(int));
		int *in = calloc(2 * (size_t)max_packs, sizeof(int));
		if (rank == 0)
			printf("# Two multiplexed flows of n packs (driver %s, strategy %s)\n"
			       "# Packs  Latency (us)\n", canal_engine_driver(e), canal_engine_strategy(e));
		static const int ns[] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 };
		for (size_t q = 0; q < sizeof ns / sizeof ns[0] && ns[q] <= max_packs; q++) {
			int n = ns[q];
			long it = iters > 0 ? iters : (n <= 50 ? 1000 : 100);
			uint64_t t0 = 0;
			for (long i = 0; i < it + it / 10; i++) {
				if (i == it / 10)
					t0 = canal_now_ns();
				mux_round(e, peer, n, out, in, rank == 0);
			}
			if (rank == 0)
				printf("%-10d%18.2f\n", n,
				       (double)(canal_now_ns() - t0) / 1e3 / (2.0 * (double)it));
			fflush(stdout);
		}
		free(out);
		free(in);
	}
	CK(canal_engine_close(e));
	return 0;
}
