/* SPDX-License-Identifier: MIT */
/*
 * select.c - select(2) readiness loops (issue 14), one per --cores (each
 * with its own SO_REUSEPORT listener). select cannot watch a descriptor
 * >= FD_SETSIZE (1024): such a connection is closed at once and counted,
 * the style's limit, shown in the report. Each loop owns its connections;
 * nothing is shared between loops.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <unistd.h>

struct loop {
	struct web_conn *conn[FD_SETSIZE];
	enum web_want want[FD_SETSIZE];
	int maxfd;
	unsigned long refused; /* fd >= FD_SETSIZE */
};

static void drop(struct loop *l, int fd)
{
	web_close(l->conn[fd]);
	free(l->conn[fd]);
	l->conn[fd] = NULL;
}

static int loop(struct web_ctx *ctx, int lfd)
{
	struct loop *l = calloc(1, sizeof *l);
	web_loop_ready(l ? 0 : -ENOMEM);
	if (!l)
		return -ENOMEM;
	uint64_t paused_until = 0, next_scan = 0;
	while (!web_stop) {
		fd_set rd, wr;
		FD_ZERO(&rd);
		FD_ZERO(&wr);
		uint64_t now = web_now_ns();
		int max = -1;
		if (now >= paused_until && lfd < FD_SETSIZE) {
			FD_SET(lfd, &rd);
			max = lfd;
		}
		for (int fd = 0; fd <= l->maxfd; fd++) {
			if (!l->conn[fd])
				continue;
			FD_SET(fd, l->want[fd] == WEB_WANT_READ ? &rd : &wr);
			max = fd;
		}
		l->maxfd = max;
		struct timeval tv = {.tv_sec = 0, .tv_usec = WEB_TICK_MS * 1000};
		int n = select(max + 1, &rd, &wr, NULL, &tv);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && FD_ISSET(lfd, &rd)) {
			for (int i = 0; i < 64; i++) {
				int fd = web_accept(lfd);
				if (fd == -EMFILE) {
					paused_until = web_now_ns() + WEB_ACCEPT_BACKOFF_MS * 1000000ull;
					break;
				}
				if (fd == -EAGAIN)
					break;
				if (fd < 0)
					continue;
				struct web_conn *c = fd < FD_SETSIZE ? malloc(sizeof *c) : NULL;
				if (!c) {
					l->refused++;
					close(fd);
					continue;
				}
				web_conn_init(c, fd, &ctx->srv);
				l->conn[fd] = c;
				l->want[fd] = WEB_WANT_READ;
				if (fd > l->maxfd)
					l->maxfd = fd;
			}
		}
		now = web_now_ns();
		bool scan = now >= next_scan;
		if (scan)
			next_scan = now + WEB_TICK_MS * 1000000ull;
		for (int fd = 0; fd <= l->maxfd && (n > 0 || scan); fd++) {
			struct web_conn *c = l->conn[fd];
			if (!c)
				continue;
			if (n > 0 && (FD_ISSET(fd, &rd) || FD_ISSET(fd, &wr))) {
				l->want[fd] = web_conn_drive(&ctx->srv, c);
				if (l->want[fd] == WEB_CLOSE) {
					drop(l, fd);
					continue;
				}
			}
			if (scan && now >= c->deadline_ns)
				drop(l, fd);
		}
	}
	for (int fd = 0; fd < FD_SETSIZE; fd++)
		if (l->conn[fd])
			drop(l, fd);
	if (l->refused)
		fprintf(stderr, "web select: %lu connections refused (fd >= FD_SETSIZE)\n",
			l->refused);
	free(l);
	return 0;
}

static int run(struct web_ctx *ctx)
{
	return web_run_loops(ctx, loop);
}

const struct web_style web_style = {"select", run};
