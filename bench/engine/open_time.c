/* SPDX-License-Identifier: MIT */
/*
 * open_time.c - what opening a session costs a job of n processes, and a
 * first exchange after it: run under canal-launch -n N. Each rank times
 * canal_engine_open(), then sends 8 bytes to the next rank and receives
 * from the previous one (a ring: each rank talks to two peers, as a
 * nearest-neighbour code does); rank 0 gathers both times and prints
 *   open_us <max over ranks> ring_us <max over ranks> segments <sum>
 * where segments counts the gates with a driver (pair segments mapped) at
 * the end. Compare CANAL_ENGINE_CONNECT=lazy (default) and eager.
 */
#define _GNU_SOURCE
#include <canal/engine.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/internal.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void check(int err, const char *what)
{
	if (err < 0) {
		fprintf(stderr, "open_time: %s: %s\n", what, strerror(-err));
		exit(1);
	}
}

int main(void)
{
	uint64_t t0 = now_ns();
	struct canal_engine *e;
	check(canal_engine_open(NULL, &e), "open");
	uint64_t t1 = now_ns();
	int rank = canal_engine_rank(e), size = canal_engine_size(e);
	uint64_t v = 0;
	struct canal_engine_req *s, *r;
	check(canal_engine_isend(e, (rank + 1) % size, 1, &t1, sizeof t1, 0, &s),
	      "isend");
	check(canal_engine_irecv(e, (rank + size - 1) % size, 1, &v, sizeof v, &r),
	      "irecv");
	check(canal_engine_wait(e, s, NULL), "wait");
	check(canal_engine_wait(e, r, NULL), "wait");
	uint64_t t2 = now_ns();
	int segs = 0;
	for (int g = 0; g < size; g++)
		segs += g != rank && e->gates[g].drv != NULL;
	uint64_t mine[3] = { t1 - t0, t2 - t1, (uint64_t)segs };
	if (rank == 0) {
		uint64_t open_max = mine[0], ring_max = mine[1], seg_sum = mine[2];
		for (int g = 1; g < size; g++) {
			uint64_t o[3];
			check(canal_engine_irecv(e, g, 2, o, sizeof o, &r), "irecv");
			check(canal_engine_wait(e, r, NULL), "wait");
			open_max = o[0] > open_max ? o[0] : open_max;
			ring_max = o[1] > ring_max ? o[1] : ring_max;
			seg_sum += o[2];
		}
		printf("open_us %.0f ring_us %.0f segments %llu\n",
		       open_max / 1e3, ring_max / 1e3,
		       (unsigned long long)seg_sum);
	} else {
		check(canal_engine_isend(e, 0, 2, mine, sizeof mine, 0, &s),
		      "isend");
		check(canal_engine_wait(e, s, NULL), "wait");
	}
	/* everyone done before anyone closes */
	int one = 1;
	if (rank == 0) {
		for (int g = 1; g < size; g++) {
			check(canal_engine_isend(e, g, 3, &one, sizeof one, 0, &s),
			      "isend");
			check(canal_engine_wait(e, s, NULL), "wait");
		}
	} else {
		check(canal_engine_irecv(e, 0, 3, &one, sizeof one, &r), "irecv");
		check(canal_engine_wait(e, r, NULL), "wait");
	}
	canal_engine_close(e);
	return 0;
}
