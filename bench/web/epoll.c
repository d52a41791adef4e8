/* SPDX-License-Identifier: MIT */
/*
 * epoll.c - edge-triggered epoll loops (issue 14), one per --cores, each
 * with its own epoll instance and SO_REUSEPORT listener. Every socket is
 * registered once (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET); on any
 * event the connection is driven until it would block, which is what edge
 * triggering needs, or for its turn of WEB_DRIVE_READS reads (http.h):
 * then the socket may still hold input, which no new edge announces, and
 * EPOLL_CTL_MOD asks again (the kernel looks at the socket and, if it is
 * readable, queues the event behind those already ready). The listener is drained until EAGAIN; after EMFILE the
 * loop stops accepting for WEB_ACCEPT_BACKOFF_MS, then drains again (the
 * edge was consumed, so it must not wait for a new one).
 *
 * Timeouts: each loop keeps its connections in a table indexed by fd and
 * scans it every WEB_TICK_MS. Nothing is shared between loops.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#define EVENTS 256
#define CONN_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

/* Forget a connection (web_close_in takes a socket that goes on
 * lingering out of the set: its next event would name c after free). */
static void drop(int ep, struct web_conn **conn, struct web_conn *c)
{
	conn[c->fd] = NULL;
	web_close_in(c, ep);
	free(c);
}

/* Drive c for one turn (web_conn_drive); a connection whose turn ended
 * with input maybe left is queued again (EPOLL_CTL_MOD), one that closed
 * is dropped. */
static void drive(const struct web_ctx *ctx, int ep, struct web_conn **conn,
		  struct web_conn *c)
{
	if (web_conn_drive(&ctx->srv, c) == WEB_CLOSE) {
		drop(ep, conn, c);
		return;
	}
	if (c->drive_yielded) {
		struct epoll_event ev = {.events = CONN_EVENTS, .data.ptr = c};
		if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
			drop(ep, conn, c); /* no event would ever come */
	}
}

static int loop(struct web_ctx *ctx, int lfd)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	size_t cap = rl.rlim_cur > 1 << 20 ? 1 << 20 : rl.rlim_cur;
	struct web_conn **conn = calloc(cap, sizeof *conn);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int err = !conn ? -ENOMEM : ep < 0 ? -errno : 0;
	web_loop_ready(err);
	if (err) {
		free(conn);
		if (ep >= 0)
			close(ep);
		return err;
	}
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = NULL};
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	struct epoll_event evs[EVENTS];
	uint64_t paused_until = 0, next_scan = 0;
	bool accept_ready = true;
	size_t maxfd = 0;
	while (!web_stop) {
		int n = epoll_wait(ep, evs, EVENTS, WEB_TICK_MS);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			struct web_conn *c = evs[i].data.ptr;
			if (!c) {
				accept_ready = true;
				continue;
			}
			drive(ctx, ep, conn, c);
		}
		uint64_t now = web_now_ns();
		while (accept_ready && now >= paused_until) {
			int fd = web_accept(lfd);
			if (fd == -EMFILE) {
				paused_until = now + WEB_ACCEPT_BACKOFF_MS * 1000000ull;
				break;
			}
			if (fd == -EAGAIN) {
				accept_ready = false;
				break;
			}
			if (fd < 0)
				continue;
			struct web_conn *c = (size_t)fd < cap ? malloc(sizeof *c) : NULL;
			if (!c) {
				close(fd);
				continue;
			}
			web_conn_init(c, fd, &ctx->srv);
			ev.events = CONN_EVENTS;
			ev.data.ptr = c;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
				close(fd);
				free(c);
				continue;
			}
			conn[fd] = c;
			if ((size_t)fd > maxfd)
				maxfd = (size_t)fd;
			/* Data may have come with the connection: read it now. */
			drive(ctx, ep, conn, c);
		}
		if (now >= next_scan) {
			next_scan = now + WEB_TICK_MS * 1000000ull;
			for (size_t fd = 0; fd <= maxfd; fd++) {
				struct web_conn *c = conn[fd];
				if (c && now >= c->deadline_ns)
					drop(ep, conn, c);
			}
		}
	}
	for (size_t fd = 0; fd <= maxfd; fd++)
		if (conn[fd])
			drop(ep, conn, conn[fd]);
	free(conn);
	close(ep);
	return 0;
}

static int run(struct web_ctx *ctx)
{
	return web_run_loops(ctx, loop);
}

const struct web_style web_style = {"epoll", run};
