/* SPDX-License-Identifier: MIT */
/*
 * poll.c - poll(2) readiness loops (issue 14), one per --cores (each with
 * its own SO_REUSEPORT listener). Each loop keeps a dense pollfd array
 * (slot 0: the listener) and the matching connections; a closed
 * connection's slot takes the last one. Nothing is shared between loops.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static int loop(struct web_ctx *ctx, int lfd)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	size_t cap = rl.rlim_cur > 1 << 20 ? 1 << 20 : rl.rlim_cur;
	struct pollfd *pf = calloc(cap + 1, sizeof *pf);
	struct web_conn **conn = calloc(cap + 1, sizeof *conn);
	web_loop_ready(pf && conn ? 0 : -ENOMEM);
	if (!pf || !conn) {
		free(pf);
		free(conn);
		return -ENOMEM;
	}
	size_t n = 1;
	uint64_t paused_until = 0, next_scan = 0;
	pf[0].fd = lfd;
	while (!web_stop) {
		uint64_t now = web_now_ns();
		pf[0].events = now >= paused_until ? POLLIN : 0;
		int r = poll(pf, n, WEB_TICK_MS);
		if (r < 0 && errno != EINTR)
			break;
		now = web_now_ns();
		bool scan = now >= next_scan;
		if (scan)
			next_scan = now + WEB_TICK_MS * 1000000ull;
		for (size_t i = 1; i < n && (r > 0 || scan);) {
			struct web_conn *c = conn[i];
			enum web_want w = pf[i].events == POLLIN ? WEB_WANT_READ : WEB_WANT_WRITE;
			if (r > 0 && pf[i].revents)
				w = web_conn_drive(&ctx->srv, c);
			if (w == WEB_CLOSE || (scan && now >= c->deadline_ns)) {
				web_close(c);
				free(c);
				n--;
				pf[i] = pf[n];
				conn[i] = conn[n];
				continue; /* slot i holds the moved one, not yet seen */
			}
			pf[i].events = w == WEB_WANT_READ ? POLLIN : POLLOUT;
			pf[i].revents = 0;
			i++;
		}
		if (r > 0 && (pf[0].revents & POLLIN)) {
			for (int k = 0; k < 64 && n < cap; k++) {
				int fd = web_accept(lfd);
				if (fd == -EMFILE) {
					paused_until = web_now_ns() + WEB_ACCEPT_BACKOFF_MS * 1000000ull;
					break;
				}
				if (fd == -EAGAIN)
					break;
				if (fd < 0)
					continue;
				struct web_conn *c = malloc(sizeof *c);
				if (!c) {
					close(fd);
					continue;
				}
				web_conn_init(c, fd, &ctx->srv);
				pf[n] = (struct pollfd){.fd = fd, .events = POLLIN};
				conn[n++] = c;
			}
		}
		pf[0].revents = 0;
	}
	for (size_t i = 1; i < n; i++) {
		web_close(conn[i]);
		free(conn[i]);
	}
	free(pf);
	free(conn);
	return 0;
}

static int run(struct web_ctx *ctx)
{
	return web_run_loops(ctx, loop);
}

const struct web_style web_style = {"poll", run};
