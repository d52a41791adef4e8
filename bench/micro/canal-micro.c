/* SPDX-License-Identifier: MIT */
/*
 * canal-micro - canal's micro benchmark (issue 2 section 3): ns per message
 * of seq, spsc, mpsc, mpmc (4 senders, 4 receivers) and select (4 senders,
 * one receiver selecting over their 4 channels) at capacity 0, 1 and 1024,
 * ns per round trip of ping-pong between two threads at the same
 * capacities, and in the same run the floor of a round trip: two threads
 * bouncing a value in one cache line with atomics. The two threads of
 * ping-pong and of the cache-line bounce are pinned to two CPUs when
 * possible. The workloads are bench/chan/workloads.c, shared with
 * chanbench-canal.
 *
 * Output, one line per result (bench/harness/canal_bench/micro.py parses it):
 *     spsc_1024 23.4 ns/msg
 *     ping_pong_1 412.0 ns/rt
 *     cacheline_rt 180.2 ns/rt
 * seq at capacity 0 is impossible (one thread cannot rendezvous with itself)
 * and is not printed.
 *
 * Usage: canal-micro [-n MESSAGES] [-m MESSAGES_SMALL] [-r ROUND_TRIPS]
 *                    [-s 0|8|64] [-P]
 *   -n  messages at capacity 1024 (default 200000);
 *   -m  messages at capacity 0 and 1 (default n / 10, at least 1000): these
 *       cost a thread hand-off per message, 10 to 1000 times more, and
 *       fewer messages give the same precision in the same time;
 *   -r  ping-pong and cache-line round trips (default 50000);
 *   -P  do not pin threads.
 */
#define _GNU_SOURCE
#include "workloads.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MICRO_THREADS 4

static void usage(void)
{
	fprintf(stderr, "usage: canal-micro [-n MESSAGES] [-m MESSAGES_SMALL] "
			"[-r ROUND_TRIPS] [-s 0|8|64] [-P]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct { enum wl_kind kind; const char *name; } tests[] = {
		{ WL_SEQ, "seq" },	 { WL_SPSC, "spsc" },
		{ WL_MPSC, "mpsc" },	 { WL_MPMC, "mpmc" },
		{ WL_SELECT_RX, "select" },
	};
	static const size_t caps[] = { 0, 1, 1024 };
	size_t n = 200000, n_small = 0, rounds = 50000, size = 8;
	int pin = 1, opt;

	while ((opt = getopt(argc, argv, "n:m:r:s:Ph")) != -1) {
		switch (opt) {
		case 'n':
			n = wl_parse_count(optarg, "message count");
			break;
		case 'm':
			n_small = wl_parse_count(optarg, "message count");
			break;
		case 'r':
			rounds = wl_parse_count(optarg, "round trips");
			break;
		case 's':
			size = wl_parse_count(optarg, "message size");
			break;
		case 'P':
			pin = 0;
			break;
		default:
			usage();
		}
	}
	if (!n_small)
		n_small = n / 10 > 1000 ? n / 10 : 1000;
	if (optind != argc || n < MICRO_THREADS || n_small < MICRO_THREADS ||
	    rounds < 2 ||
	    (size != 0 && size != 8 && size != 64))
		usage();

	for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
		for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
			struct wl_params p = { .n = caps[c] > 1 ? n : n_small,
					       .threads = MICRO_THREADS,
					       .msg_size = size, .capacity = caps[c] };

			if (!wl_possible(tests[t].kind, &p))
				continue;
			double s = wl_run(tests[t].kind, &p);

			printf("%s_%zu %.1f ns/msg\n", tests[t].name, caps[c],
			       s * 1e9 / (double)wl_messages(tests[t].kind, &p));
			fflush(stdout);
		}
	}
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		struct wl_params p = { .n = 2 * rounds, .threads = 1,
				       .msg_size = size, .capacity = caps[c],
				       .pin = pin };
		double s = wl_run(WL_PING_PONG, &p);

		printf("ping_pong_%zu %.1f ns/rt\n", caps[c],
		       s * 1e9 / (double)rounds);
		fflush(stdout);
	}
	printf("cacheline_rt %.1f ns/rt\n",
	       wl_cacheline_roundtrips(rounds, pin) * 1e9 / (double)rounds);
	return 0;
}
