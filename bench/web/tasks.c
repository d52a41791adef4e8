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
 *
 * Small responses (web_conn's style_sends_small, as the io_uring style):
 * the task reads the file after the head (canal_io_read), sends head and
 * body in one canal_io_send, and closes the file with canal_io_close, so
 * that on io_uring these go through the loop's ring, batched with the
 * other tasks' operations, instead of a send(2), a sendfile(2) and a
 * close(2) of their own. Larger bodies: the core's send + sendfile.
 *
 * CANAL_WEB_NO_SHORTCUT=1 runs the runtime with CANAL_RUN_NO_SYNC_SHORTCUT
 * (every operation through the backend), to measure the shortcut.
 */
#define _GNU_SOURCE
#include "core.h"

#include <canal/task.h>

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
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

/* Send the small response pending on c (web_conn_small_out) through the
 * runtime: 0, or -1 to close the connection. *out is the connection's
 * buffer for head + body, grown as needed. */
static int send_small(struct web_conn *c, char **out, size_t *cap)
{
	size_t head = c->out_len, body = c->file_fd >= 0 ? (size_t)c->file_end : 0;
	size_t n = head + body;
	int64_t tick = (int64_t)WEB_TICK_MS * 1000000;

	if (n > *cap) {
		char *b = realloc(*out, n);
		if (!b)
			return -1;
		*out = b;
		*cap = n;
	}
	memcpy(*out, c->out, head);
	if (c->file_fd >= 0) {
		size_t got = 0;
		while (got < body) {
			ssize_t r = canal_io_read(c->file_fd, *out + head + got,
						  body - got, -1, NULL);
			if (r <= 0)
				return -1; /* an error, or the file shrank */
			got += (size_t)r;
		}
		canal_io_close(c->file_fd);
		c->file_fd = -1;
	}
	for (size_t off = 0; off < n;) {
		if (web_stop || web_now_ns() >= c->deadline_ns)
			return -1;
		ssize_t r = canal_io_send(c->fd, *out + off, n - off, 0, tick,
					  NULL);
		if (r == -ETIMEDOUT || r == -EAGAIN || r == -EINTR)
			continue;
		if (r < 0)
			return -1;
		off += (size_t)r;
	}
	c->out_off = c->out_len;
	return 0;
}

static void conn_task(void *p)
{
	struct web_conn *c = p;
	char buf[4096];
	char *out = NULL;
	size_t out_cap = 0;

	c->style_sends_small = true;
	for (;;) {
		enum web_want w = web_conn_run(&g_ctx->srv, c);
		if (w == WEB_CLOSE || web_stop)
			break;
		if (w == WEB_WANT_WRITE && c->style_sends_small &&
		    web_conn_small_out(c)) {
			if (send_small(c, &out, &out_cap) < 0)
				break;
			continue;
		}
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
	free(out);
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
	const char *ns = getenv("CANAL_WEB_NO_SHORTCUT");
	if (ns && *ns && strcmp(ns, "0") != 0)
		opts.flags |= CANAL_RUN_NO_SYNC_SHORTCUT;
	return canal_run(accept_task, ctx, &opts);
}

const struct web_style web_style = {"tasks", run};
