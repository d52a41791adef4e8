/* SPDX-License-Identifier: MIT */
/*
 * chanbench-canal - canal's side of the channel comparison with Go,
 * crossbeam-channel and flume (issue 5; docs/bench-chan.md). Same workloads
 * and output as the peers (bench/peers/), one line per result in
 * crossbeam-channel's benchmark format:
 *
 *     bounded1_spsc C canal 0.123456 sec
 *
 * Usage: chanbench-canal [-n N] [-t T] [-s 0|8|64] [-w KIND,..] [-c 0,1,N,u]
 *                        [-m thread|task]
 * canal has no unbounded channel: capacity u is accepted and prints nothing.
 * -m task runs every workload with canal tasks in place of threads (the
 * runtime of canal/task.h, one loop per CPU, as Go runs goroutines on
 * GOMAXPROCS threads) and names the implementation canal-task:
 *
 *     bounded1_spsc C canal-task 0.012345 sec
 *
 * CANAL_BENCH_LOOPS=K runs the tasks on K loops instead (K = 1: every task
 * on one thread, for callgrind, which serialises threads anyway).
 */
#define _GNU_SOURCE
#include "workloads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr,
		"usage: chanbench-canal [-n N] [-t T] [-s 0|8|64] [-w KIND,..] "
		"[-c 0,1,N,u] [-m thread|task]\nkinds:");
	for (int k = 0; k < WL_NKINDS; k++)
		fprintf(stderr, "%s%s", k ? "," : " ", wl_kind_name(k));
	fputc('\n', stderr);
	exit(2);
}

/* Capacities selected by -c: 0, 1 and N (u: none in canal). */
enum { CAP_0 = 1, CAP_1 = 2, CAP_N = 4 };

static unsigned parse_caps(char *list)
{
	unsigned caps = 0;

	for (char *c = strtok(list, ","); c; c = strtok(NULL, ",")) {
		if (strcmp(c, "0") == 0)
			caps |= CAP_0;
		else if (strcmp(c, "1") == 0)
			caps |= CAP_1;
		else if (strcmp(c, "N") == 0)
			caps |= CAP_N;
		else if (strcmp(c, "u") != 0)
			usage();
	}
	return caps;
}

static unsigned parse_kinds(char *list)
{
	unsigned kinds = 0;

	for (char *w = strtok(list, ","); w; w = strtok(NULL, ",")) {
		int k = wl_kind_parse(w);

		if (k < 0) {
			fprintf(stderr, "chanbench-canal: unknown workload %s\n", w);
			usage();
		}
		kinds |= 1u << k;
	}
	return kinds;
}

int main(int argc, char **argv)
{
	struct wl_params p = { .n = 1000000, .threads = 4, .msg_size = 8 };
	unsigned kinds = (1u << WL_NKINDS) - 1, caps = CAP_0 | CAP_1 | CAP_N;
	const struct { unsigned bit; const char *name; } capv[] = {
		{ CAP_0, "bounded0" }, { CAP_1, "bounded1" }, { CAP_N, "boundedN" },
	};
	char suffix[16] = "";
	int opt;

	while ((opt = getopt(argc, argv, "n:t:s:w:c:m:h")) != -1) {
		switch (opt) {
		case 'n':
			p.n = wl_parse_count(optarg, "message count");
			break;
		case 't':
			p.threads = wl_parse_count(optarg, "thread count");
			break;
		case 's':
			p.msg_size = wl_parse_count(optarg, "message size");
			break;
		case 'w':
			kinds = parse_kinds(optarg);
			break;
		case 'c':
			caps = parse_caps(optarg);
			break;
		case 'm':
			if (strcmp(optarg, "task") == 0)
				p.tasks = 1;
			else if (strcmp(optarg, "thread") == 0)
				p.tasks = 0;
			else
				usage();
			break;
		default:
			usage();
		}
	}
	if (optind != argc || p.n < 2 || p.threads < 1 ||
	    p.threads > WL_THREADS_MAX || p.n < p.threads ||
	    (p.msg_size != 0 && p.msg_size != 8 && p.msg_size != 64))
		usage();
	if (p.msg_size != 8)
		snprintf(suffix, sizeof(suffix), "_%zuB", p.msg_size);

	for (int k = 0; k < WL_NKINDS; k++) {
		if (!(kinds & (1u << k)))
			continue;
		for (size_t c = 0; c < sizeof(capv) / sizeof(capv[0]); c++) {
			if (!(caps & capv[c].bit))
				continue;
			p.capacity = capv[c].bit == CAP_0 ? 0
				     : capv[c].bit == CAP_1 ? 1 : p.n;
			if (!wl_possible(k, &p))
				continue;
			double secs = wl_run(k, &p);

			printf("%s_%s%s C %s %.6f sec\n", capv[c].name,
			       wl_kind_name(k), suffix,
			       p.tasks ? "canal-task" : "canal", secs);
			fflush(stdout);
		}
	}
	return 0;
}
