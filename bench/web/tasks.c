/* SPDX-License-Identifier: MIT */
/*
 * tasks.c - a task per connection on canal's runtime (issue 14, the CPC
 * column of seed 004): the server reads as sequential code, as CPC's does
 * (accept, spawn; read a request, answer it, again), and the runtime turns
 * every wait into a suspended task on io_uring (or epoll). --cores sets the
 * runtime's loops.
 *
 * One task accepts (canal_io_accept, with a timeout of WEB_TICK_MS so that
 * it sees SIGTERM) and spawns a task per connection; spawn spreads them
 * over the loops. A connection task drives the shared HTTP state machine
 * (http.h): web_conn_run answers what is buffered and sends what it can;
 * when it needs input the task suspends in canal_io_recv until bytes come
 * or the connection's deadline (header or idle timeout); when the socket
 * is full it suspends until writable (a POLLOUT poll through the runtime's
 * generic primitive, or short sleeps on the epoll backend).
 */
#define _GNU_SOURCE
#include "core.h"

#include <canal/task.h>

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

static struct web_ctx *g_ctx;

/* Suspend until fd is writable or deadline_ns (web_now_ns clock). */
static void wait_writable(int fd, uint64_t deadline_ns)
{
	struct io_uring_sqe sqe;
	uint64_t now = web_now_ns();
	int64_t left = deadline_ns > now ? (int64_t)(deadline_ns - now) : 0;
	if (left > (int64_t)WEB_TICK_MS * 1000000)
		left = (int64_t)WEB_TICK_MS * 1000000;
	io_uring_prep_poll_add(&sqe, fd, POLLOUT);
	if (canal_io_submit(&sqe, left, NULL) == -EOPNOTSUPP)
		canal_sleep_ns(100000); /* epoll backend: poll by sleeping */
}

static void conn_task(void *p)
{
	struct web_conn *c = p;
	char buf[4096];

	for (;;) {
		enum web_want w = web_conn_run(&g_ctx->srv, c);
		if (w == WEB_CLOSE || web_stop)
			break;
		uint64_t now = web_now_ns();
		if (now >= c->deadline_ns)
			break; /* header or idle timeout */
		if (w == WEB_WANT_WRITE) {
			wait_writable(c->fd, c->deadline_ns);
			continue;
		}
		/* Wait for input at most WEB_TICK_MS at a time (SIGTERM). */
		int64_t left = (int64_t)(c->deadline_ns - now);
		if (left > (int64_t)WEB_TICK_MS * 1000000)
			left = (int64_t)WEB_TICK_MS * 1000000;
		ssize_t n = canal_io_recv(c->fd, buf, sizeof(buf), 0, left, NULL);
		if (n == -ETIMEDOUT || n == -EAGAIN || n == -EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0) {
			c->eof = true;
			if (c->in_len == 0)
				break;
			continue;
		}
		if (web_conn_feed(c, buf, (size_t)n) < 0)
			break;
	}
	web_close(c);
	free(c);
}

static void accept_task(void *arg)
{
	struct web_ctx *ctx = arg;
	web_announce(ctx);
	while (!web_stop) {
		int fd = canal_io_accept(ctx->listen_fd, NULL, NULL,
					 SOCK_NONBLOCK | SOCK_CLOEXEC,
					 (int64_t)WEB_TICK_MS * 1000000, NULL);
		if (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS ||
		    fd == -ENOMEM) {
			canal_sleep_ns((uint64_t)WEB_ACCEPT_BACKOFF_MS * 1000000);
			continue;
		}
		if (fd < 0)
			continue; /* -ETIMEDOUT, -ECONNABORTED, ... */
		web_sock_setup(fd);
		struct web_conn *c = malloc(sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		web_conn_init(c, fd, &ctx->srv);
		if (canal_spawn(conn_task, c) < 0) {
			close(fd);
			free(c);
			canal_sleep_ns((uint64_t)WEB_ACCEPT_BACKOFF_MS * 1000000);
		}
	}
}

static int run(struct web_ctx *ctx)
{
	struct canal_run_options opts = { 0 };
	g_ctx = ctx;
	opts.loops = ctx->cores > 0 ? (unsigned)ctx->cores : 0;
	/* Connections need little stack: many thousands of tasks. */
	opts.stack_size = 64 << 10;
	return canal_run(accept_task, ctx, &opts);
}

const struct web_style web_style = {"tasks", run};
