/* SPDX-License-Identifier: MIT */
/*
 * osu.c - the OSU micro-benchmarks' latency, bandwidth and bidirectional
 * bandwidth, over canal's message engine (built three times: OSU_KIND
 * 0 = osu_latency, 1 = osu_bw, 2 = osu_bibw). Same method and output as
 * the OSU programs: sizes 1 B .. max (powers of 2), warm-up iterations
 * skipped, fixed iterations (fewer above 8 KiB), a window of 64 messages
 * for the bandwidths, and the table "# Size  Latency (us)" or
 * "# Size  Bandwidth (MB/s)" (MB = 10^6 bytes, as OSU).
 *
 *   canal-launch -n 2 osu_latency [--driver shm|tcp|ucx] [--strategy NAME]
 *       [--min-size B] [--max-size B] [--iterations N] [--warmup N]
 *       [--loop osu|perftest]
 *
 * --loop (latency only) chooses the ping-pong's shape. osu (the default)
 * is osu_latency's: blocking send, then blocking receive (MPI_Send,
 * MPI_Recv), so rank 0 posts its receive only once its send has
 * completed. perftest is ucx_perftest's tag_lat (UCX's own latency tool,
 * the raw figure of issue 16): a send is started without waiting for it,
 * the receive is posted at once and waited for, and a send's completion
 * is waited for only before the next send (one send in flight, as
 * ucx_perftest's default window of 1) and before the clock stops. Above
 * UCX's rendezvous threshold the two differ: with the osu loop the peer's
 * next message can arrive before the receive for it is posted.
 */
#include "osu_common.h"
#include <canal/channel.h>
#include <canal/engine.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define TAG 1
#define ACK_TAG 2

static void die(const char *what, int err)
{
	fprintf(stderr, "osu: %s: %s\n", what, strerror(-err));
	exit(1);
}

#define CK(call)                                                             \
	do {                                                                 \
		int err_ = (call);                                           \
		if (err_ < 0)                                                \
			die(#call, err_);                                    \
	} while (0)

int main(int argc, char **argv)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	size_t min_size = 1, max_size = (size_t)4 << 20;
	long iters_opt = 0, warm_opt = -1;
	int perftest_loop = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			goto usage;
		if (!strcmp(a, "--driver"))
			o.driver = v;
		else if (!strcmp(a, "--strategy"))
			o.strategy = v;
		else if (!strcmp(a, "--min-size"))
			min_size = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--max-size"))
			max_size = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--iterations"))
			iters_opt = strtol(v, NULL, 0);
		else if (!strcmp(a, "--warmup"))
			warm_opt = strtol(v, NULL, 0);
		else if (!strcmp(a, "--loop") && OSU_KIND == 0 &&
			 (!strcmp(v, "osu") || !strcmp(v, "perftest")))
			perftest_loop = !strcmp(v, "perftest");
		else
			goto usage;
		i++;
	}
	const struct osu_args count_args = { NULL, min_size, max_size,
					     iters_opt, warm_opt };
	struct canal_engine *e;
	CK(canal_engine_open(&o, &e));
	int rank = canal_engine_rank(e);
	if (canal_engine_size(e) != 2) {
		fprintf(stderr, "osu: needs exactly 2 processes (canal-launch -n 2)\n");
		return 1;
	}
	int peer = 1 - rank;
	char *sbuf = osu_buffer(max_size, 'a');
	char *rbuf = osu_buffer(max_size, 'b');
	if (!sbuf || !rbuf)
		return 1;
	if (rank == 0) {
		printf("# OSU-style %s Test (canal engine, driver %s, strategy %s)\n",
		       OSU_KIND == 0 ? "Latency" : OSU_KIND == 1 ? "Bandwidth"
							  : "Bi-Directional Bandwidth",
		       canal_engine_driver(e), canal_engine_strategy(e));
		printf("# Size  %s\n", OSU_KIND == 0 ? "Latency (us)" : "Bandwidth (MB/s)");
		fflush(stdout);
	}
	struct canal_engine_req *req[WINDOW], *r;
	char ack[4] = { 0 };
	for (size_t size = min_size; size <= max_size; size *= 2) {
		long iters, skip;
		osu_counts(OSU_KIND, size, &count_args, &iters, &skip);
		uint64_t t0 = 0;
		struct canal_engine_req *inflight = NULL; /* perftest loop's send */
		for (long i = 0; i < iters + skip; i++) {
			if (i == skip)
				t0 = canal_now_ns();
			if (OSU_KIND == 0 && perftest_loop) {
				if (rank == 1) {
					CK(canal_engine_irecv(e, peer, TAG, rbuf, size, &r));
					CK(canal_engine_wait(e, r, NULL));
				}
				if (inflight)
					CK(canal_engine_wait(e, inflight, NULL));
				CK(canal_engine_isend(e, peer, TAG, sbuf, size, 0, &inflight));
				if (rank == 0) {
					CK(canal_engine_irecv(e, peer, TAG, rbuf, size, &r));
					CK(canal_engine_wait(e, r, NULL));
				}
			} else if (OSU_KIND == 0) {
				if (rank == 0) {
					CK(canal_engine_isend(e, peer, TAG, sbuf, size, 0, &r));
					CK(canal_engine_wait(e, r, NULL));
					CK(canal_engine_irecv(e, peer, TAG, rbuf, size, &r));
					CK(canal_engine_wait(e, r, NULL));
				} else {
					CK(canal_engine_irecv(e, peer, TAG, rbuf, size, &r));
					CK(canal_engine_wait(e, r, NULL));
					CK(canal_engine_isend(e, peer, TAG, sbuf, size, 0, &r));
					CK(canal_engine_wait(e, r, NULL));
				}
			} else if (OSU_KIND == 1) {
				if (rank == 0) {
					for (int j = 0; j < WINDOW; j++)
						CK(canal_engine_isend(e, peer, TAG, sbuf, size, 0, &req[j]));
					for (int j = 0; j < WINDOW; j++)
						CK(canal_engine_wait(e, req[j], NULL));
					CK(canal_engine_irecv(e, peer, ACK_TAG, ack, sizeof ack, &r));
					CK(canal_engine_wait(e, r, NULL));
				} else {
					for (int j = 0; j < WINDOW; j++)
						CK(canal_engine_irecv(e, peer, TAG, rbuf, size, &req[j]));
					for (int j = 0; j < WINDOW; j++)
						CK(canal_engine_wait(e, req[j], NULL));
					CK(canal_engine_isend(e, peer, ACK_TAG, ack, sizeof ack, 0, &r));
					CK(canal_engine_wait(e, r, NULL));
				}
			} else {
				struct canal_engine_req *sreq[WINDOW];
				for (int j = 0; j < WINDOW; j++)
					CK(canal_engine_irecv(e, peer, TAG, rbuf, size, &req[j]));
				for (int j = 0; j < WINDOW; j++)
					CK(canal_engine_isend(e, peer, TAG, sbuf, size, 0, &sreq[j]));
				for (int j = 0; j < WINDOW; j++)
					CK(canal_engine_wait(e, sreq[j], NULL));
				for (int j = 0; j < WINDOW; j++)
					CK(canal_engine_wait(e, req[j], NULL));
			}
		}
		if (inflight)
			CK(canal_engine_wait(e, inflight, NULL));
		double s = (double)(canal_now_ns() - t0) * 1e-9;
		if (rank == 0) {
			if (OSU_KIND == 0)
				printf("%-10zu%18.2f\n", size, s * 1e6 / (2.0 * (double)iters));
			else
				printf("%-10zu%18.2f\n", size,
				       (double)size / 1e6 * (double)iters * WINDOW *
					       (OSU_KIND == 2 ? 2 : 1) / s);
			fflush(stdout);
		}
		if (size == 0)
			break;
	}
	free(sbuf);
	free(rbuf);
	CK(canal_engine_close(e));
	return 0;
usage:
	fprintf(stderr, "usage: osu [--driver shm|tcp|ucx] [--strategy default|aggregate] "
		"[--min-size B] [--max-size B] [--iterations N] [--warmup N]%s\n",
		OSU_KIND == 0 ? " [--loop osu|perftest]" : "");
	return 2;
}
