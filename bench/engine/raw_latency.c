/* SPDX-License-Identifier: MIT */
/*
 * raw_latency.c - the engine's drivers alone: a ping-pong of one packet
 * each way through the shm ring or the TCP socket, with no collect or
 * schedule layer on top (no headers, matching, requests). The engine's
 * overhead is osu_latency minus this, size by size (the seed's first
 * experiment). Sizes up to the driver's largest packet (64 KiB); same
 * iterations and output as osu_latency.
 *   canal-launch -n 2 raw_latency --driver shm|tcp [--max-size B] ...
 */
#include "osu_common.h"
#include "../../src/engine/transfer/driver.h"

#include <canal/channel.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, int err)
{
	fprintf(stderr, "raw_latency: %s: %s\n", what, strerror(-err));
	exit(1);
}

static void send_packet(struct canal__driver *d, void *buf, size_t n)
{
	struct iovec v = { buf, n };
	int err;
	while ((err = d->ops->send(d, &v, 1, n)) == -EAGAIN)
		;
	if (err)
		die("send", err);
	while (!d->ops->idle(d) && (err = d->ops->flush(d)) == 0 &&
	       strcmp(d->ops->name, "tcp") == 0)
		;
}

static void recv_packet(struct canal__driver *d, void *buf, size_t n)
{
	const unsigned char *p;
	size_t len;
	int r;
	/* the engine's wait (session.c): poll 2 ms, then yield between polls */
	uint64_t start = 0;
	for (unsigned idle = 0; (r = d->ops->recv(d, &p, &len)) == 0;) {
		if (++idle % 1024 == 0) {
			uint64_t now = canal_now_ns();
			if (idle == 1024)
				start = now;
			else if (now - start > 2000000u) {
				sched_yield();
				continue;
			}
		}
		__builtin_ia32_pause();
	}
	if (r < 0)
		die("recv", r);
	if (len != n)
		die("length", -EPROTO);
	memcpy(buf, p, len); /* as the engine does: into the user's buffer */
	d->ops->release(d);
}

int main(int argc, char **argv)
{
	struct osu_args args = { "shm", 1, 65536, 0, -1 };
	if (osu_parse_args(argc, argv, "driver", &args) < 0) {
		fprintf(stderr, "usage: raw_latency [--driver shm|tcp] [--min-size N] "
				"[--max-size N] [--iterations N] [--warmup N]\n");
		return 2;
	}
	const char *driver = args.select;
	size_t min_size = args.min_size, max_size = args.max_size;
	const char *r = getenv("CANAL_RANK"), *dir = getenv("CANAL_LAUNCH_DIR");
	if (!r || !dir) {
		fprintf(stderr, "raw_latency: run under canal-launch -n 2\n");
		return 2;
	}
	int rank = atoi(r), peer = 1 - rank;
	struct canal__driver *drv[2] = { NULL, NULL }, *d;
	int err = !strcmp(driver, "tcp")
			  ? canal__tcp_connect_all(dir, NULL, rank, 2, 30000, 0, drv)
			  : canal__shm_connect(dir, rank, peer, 30000, false, &drv[peer]);
	if (err)
		die("connect", err);
	d = drv[peer];
	if (max_size > d->caps.max_packet)
		max_size = d->caps.max_packet;
	char *sbuf = calloc(1, max_size), *rbuf = calloc(1, max_size);
	if (rank == 0)
		printf("# Raw %s driver ping-pong (no engine)\n# Size  Latency (us)\n", driver);
	for (size_t size = min_size; size <= max_size; size *= 2) {
		long iters, skip;
		osu_counts(0, size, &args, &iters, &skip);
		uint64_t t0 = 0;
		for (long i = 0; i < iters + skip; i++) {
			if (i == skip)
				t0 = canal_now_ns();
			if (rank == 0) {
				send_packet(d, sbuf, size);
				recv_packet(d, rbuf, size);
			} else {
				recv_packet(d, rbuf, size);
				send_packet(d, sbuf, size);
			}
		}
		if (rank == 0) {
			printf("%-10zu%18.2f\n", size,
			       (double)(canal_now_ns() - t0) / 1e3 / (2.0 * (double)iters));
			fflush(stdout);
		}
	}
	/* the last pong must be taken before the segment/socket goes */
	if (rank == 1)
		while (!d->ops->idle(d) && d->ops->health(d) == 0)
			;
	d->ops->close(d);
	free(sbuf);
	free(rbuf);
	return 0;
}
