/* SPDX-License-Identifier: MIT */
/*
 * overlap.c - how much of a transfer the engine hides behind the sender's
 * computation (what a progress thread is for). Run under canal-launch -n 2:
 *
 *   overlap [--driver shm|tcp] [--progress caller|thread]
 *           [--compute busy|sleep] [--iterations N]
 *
 * For each size, rank 0 measures (1) comm: isend then wait at once, then
 * the 1-byte acknowledgement of rank 1 (which receives with irecv + wait);
 * (2) total: isend, a computation of the same duration as comm (no call
 * into the engine: a busy loop on the clock, or with --compute sleep a
 * nanosleep - the caller blocked elsewhere, in I/O or on a lock, which
 * leaves its CPU free), wait, acknowledgement.
 * Overlap = (comm + compute - total) / comm, in percent: 0 when nothing
 * moved during the computation, 100 when all of it did (OSU's non-blocking
 * benchmarks define it the same way). Medians of N iterations. Prints
 * "# Size  Comm (us)  Total (us)  Overlap (%)", one line per size.
 */
#define _GNU_SOURCE
#include "osu_common.h"

#include <canal/engine.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool compute_sleeps;

static void compute(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	if (compute_sleeps) {
		struct timespec ts = { (time_t)(end / 1000000000u),
				       (long)(end % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL))
			;
		return;
	}
	while (now_ns() < end)
		;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void check(int err, const char *what)
{
	if (err < 0) {
		fprintf(stderr, "overlap: %s: %s\n", what, strerror(-err));
		exit(1);
	}
}

/* One iteration: rank 0 returns its time in ns. */
static uint64_t round_trip(struct canal_engine *e, unsigned char *buf,
			   size_t size, uint64_t compute_ns)
{
	struct canal_engine_req *q;
	char ack = 0;
	if (canal_engine_rank(e) == 0) {
		uint64_t t0 = now_ns();
		check(canal_engine_isend(e, 1, 1, buf, size, 0, &q), "isend");
		if (compute_ns)
			compute(compute_ns);
		check(canal_engine_wait(e, q, NULL), "wait");
		check(canal_engine_irecv(e, 1, 2, &ack, 1, &q), "irecv");
		check(canal_engine_wait(e, q, NULL), "wait");
		return now_ns() - t0;
	}
	check(canal_engine_irecv(e, 0, 1, buf, size, &q), "irecv");
	check(canal_engine_wait(e, q, NULL), "wait");
	check(canal_engine_isend(e, 0, 2, &ack, 1, 0, &q), "isend");
	check(canal_engine_wait(e, q, NULL), "wait");
	return 0;
}

int main(int argc, char **argv)
{
	struct osu_args a = { .select = NULL, .min_size = 16384,
			      .max_size = 4u << 20, .iterations = 0,
			      .warmup = -1 };
	const char *progress = NULL;
	/* --progress is ours; the rest is OSU's command line. */
	char *rest[32];
	int nrest = 0;
	for (int i = 0; i < argc && nrest < 32; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--progress"))
			progress = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--compute"))
			compute_sleeps = !strcmp(argv[++i], "sleep");
		else
			rest[nrest++] = argv[i];
	}
	/* Sleeps end on time, not up to 50 us late (the default slack),
	 * which would count as time not overlapped. The wake-up itself
	 * still takes tens of microseconds on a VM: below ~100 us of
	 * transfer, the sleep mode measures that, not the engine. */
	if (compute_sleeps)
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (osu_parse_args(nrest, rest, "driver", &a) < 0) {
		fprintf(stderr, "usage: overlap [--driver shm|tcp] "
				"[--progress caller|thread] [--compute busy|sleep] "
				"[--min-size B] "
				"[--max-size B] [--iterations N]\n");
		return 2;
	}
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.driver = a.select;
	o.progress = progress;
	struct canal_engine *e;
	check(canal_engine_open(&o, &e), "open");
	long iters = a.iterations > 0 ? a.iterations : 50;
	unsigned char *buf = calloc(1, a.max_size);
	uint64_t *comm = calloc((size_t)iters, sizeof *comm);
	uint64_t *total = calloc((size_t)iters, sizeof *total);
	if (!buf || !comm || !total)
		return 1;
	int rank = canal_engine_rank(e);
	if (rank == 0)
		printf("# canal engine overlap, driver %s, compute %s, "
		       "progress %s\n"
		       "# Size  Comm (us)  Total (us)  Overlap (%%)\n",
		       canal_engine_driver(e), compute_sleeps ? "sleep" : "busy",
		       progress ? progress
				: getenv("CANAL_ENGINE_PROGRESS")
					  ? getenv("CANAL_ENGINE_PROGRESS")
					  : "caller");
	for (size_t size = a.min_size; size <= a.max_size; size *= 4) {
		for (int w = 0; w < 5; w++)
			round_trip(e, buf, size, 0);
		for (long i = 0; i < iters; i++)
			comm[i] = round_trip(e, buf, size, 0);
		/* Both ranks need the same compute time: rank 0 sends it. */
		uint64_t c = 0;
		struct canal_engine_req *q;
		if (rank == 0) {
			qsort(comm, (size_t)iters, sizeof *comm, cmp_u64);
			c = comm[iters / 2];
			check(canal_engine_isend(e, 1, 3, &c, sizeof c, 0, &q),
			      "isend");
		} else {
			check(canal_engine_irecv(e, 0, 3, &c, sizeof c, &q),
			      "irecv");
		}
		check(canal_engine_wait(e, q, NULL), "wait");
		for (long i = 0; i < iters; i++)
			total[i] = round_trip(e, buf, size, c);
		if (rank == 0) {
			qsort(total, (size_t)iters, sizeof *total, cmp_u64);
			uint64_t t = total[iters / 2];
			double ov = 100.0 * ((double)c + (double)c - (double)t) /
				    (double)c;
			if (ov < 0)
				ov = 0;
			printf("%-8zu %10.2f %11.2f %12.1f\n", size, c / 1e3,
			       t / 1e3, ov);
			fflush(stdout);
		}
	}
	canal_engine_close(e);
	free(buf);
	free(comm);
	free(total);
	return 0;
}
