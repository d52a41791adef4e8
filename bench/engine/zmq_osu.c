/* SPDX-License-Identifier: MIT */
/*
 * zmq_osu.c - the ZeroMQ peer of osu.c: a ZMQ_PAIR socket pair over ipc://
 * or tcp:// (loopback), as a ZeroMQ user writes it (zmq_send / zmq_recv,
 * default socket options). OSU_KIND 0: latency (ping-pong), 1: bandwidth
 * (a window of 64 sends, then a 4-byte ack). Same sizes, iterations and
 * output as osu.c.
 *   canal-launch -n 2 zmq_osu_latency --transport ipc|tcp [--max-size B]
 */
#include "osu_common.h"
#include <canal/channel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define WINDOW 64

static void die(const char *what)
{
	fprintf(stderr, "zmq_osu: %s: %s\n", what, zmq_strerror(zmq_errno()));
	exit(1);
}

int main(int argc, char **argv)
{
	struct osu_args args = { "ipc", 1, (size_t)4 << 20, 0, -1 };
	if (osu_parse_args(argc, argv, "transport", &args) < 0) {
		fprintf(stderr, "usage: zmq_osu [--transport ipc|tcp] [--min-size N] "
				"[--max-size N] [--iterations N] [--warmup N]\n");
		return 2;
	}
	const char *transport = args.select;
	size_t min_size = args.min_size, max_size = args.max_size;
	const char *r = getenv("CANAL_RANK"), *dir = getenv("CANAL_LAUNCH_DIR");
	if (!r || !dir) {
		fprintf(stderr, "zmq_osu: run under canal-launch -n 2\n");
		return 2;
	}
	int rank = atoi(r);
	void *ctx = zmq_ctx_new();
	void *s = zmq_socket(ctx, ZMQ_PAIR);
	char ep[512], path[512];
	snprintf(path, sizeof path, "%s/zmq.endpoint", dir);
	if (rank == 0) {
		if (!strcmp(transport, "tcp"))
			snprintf(ep, sizeof ep, "tcp://127.0.0.1:*");
		else
			snprintf(ep, sizeof ep, "ipc://%s/zmq.sock", dir);
		if (zmq_bind(s, ep) != 0)
			die("bind");
		size_t l = sizeof ep;
		zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &l);
		char tmp[600];
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		FILE *f = fopen(tmp, "w");
		fprintf(f, "%s\n", ep);
		fclose(f);
		rename(tmp, path);
	} else {
		FILE *f;
		while (!(f = fopen(path, "r")))
			usleep(1000);
		if (fscanf(f, "%511s", ep) != 1)
			return 1;
		fclose(f);
		if (zmq_connect(s, ep) != 0)
			die("connect");
	}
	char *sbuf = osu_buffer(max_size, 0), *rbuf = osu_buffer(max_size, 0), ack[4] = { 0 };
	if (!sbuf || !rbuf)
		die("out of memory");
	if (rank == 0)
		printf("# OSU-style %s Test (ZeroMQ PAIR over %s)\n# Size  %s\n",
		       OSU_KIND == 0 ? "Latency" : "Bandwidth", transport,
		       OSU_KIND == 0 ? "Latency (us)" : "Bandwidth (MB/s)");
	for (size_t size = min_size; size <= max_size; size *= 2) {
		long iters, skip;
		osu_counts(OSU_KIND, size, &args, &iters, &skip);
		uint64_t t0 = 0;
		for (long i = 0; i < iters + skip; i++) {
			if (i == skip)
				t0 = canal_now_ns();
			if (OSU_KIND == 0) {
				if (rank == 0) {
					if (zmq_send(s, sbuf, size, 0) < 0 || zmq_recv(s, rbuf, size, 0) < 0)
						die("ping");
				} else {
					if (zmq_recv(s, rbuf, size, 0) < 0 || zmq_send(s, sbuf, size, 0) < 0)
						die("pong");
				}
			} else if (rank == 0) {
				for (int j = 0; j < WINDOW; j++)
					if (zmq_send(s, sbuf, size, 0) < 0)
						die("send");
				if (zmq_recv(s, ack, sizeof ack, 0) < 0)
					die("ack");
			} else {
				for (int j = 0; j < WINDOW; j++)
					if (zmq_recv(s, rbuf, size, 0) < 0)
						die("recv");
				if (zmq_send(s, ack, sizeof ack, 0) < 0)
					die("ack");
			}
		}
		double sec = (double)(canal_now_ns() - t0) * 1e-9;
		if (rank == 0) {
			if (OSU_KIND == 0)
				printf("%-10zu%18.2f\n", size, sec * 1e6 / (2.0 * (double)iters));
			else
				printf("%-10zu%18.2f\n", size, (double)size / 1e6 * (double)iters * WINDOW / sec);
			fflush(stdout);
		}
	}
	int linger = 1000;
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(sbuf);
	free(rbuf);
	return 0;
}
