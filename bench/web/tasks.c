/* SPDX-License-Identifier: MIT */
/*
 * tasks.c - a task per connection on canal's runtime (issue 14, the CPC
 * column of seed 004): the server reads as sequential code, as CPC's does
 * (accept, spawn; read a request, answer it, again), and the runtime turns
 * every wait into a suspended task on io_uring (or epoll). --cores sets the
 * runtime's loops.
 *
 * One task accepts (canal_io_accept, with a timeout of WEB_TICK_MS so that
 * it sees SIGTERM) and spawns a task per connection, near
 * (CANAL_RUN_SPAWN_NEAR, task.h): on the accept task's loop while that
 * loop's queue is short, spread over the loops in a burst (with more than
 * one loop, 16 or more connections waiting in the listener's queue are
 * taken in one turn, so that their spawns pass the bound); a connection
 * stays on its loop for its life (its stream), so under light load one
 * loop serves them all and the others sleep, their CPUs free for other
 * processes (wrk, in the placement where the server has both CPUs);
 * CANAL_WEB_SPREAD=1: spread every connection in turn. It takes one connection per turn, the whole queue when
 * the queue is deep; connection tasks also look at a deep queue every 64
 * turns (accept_help), and a connection that ends admits the next queued
 * one (web_accept_next); CANAL_WEB_ACCEPT=one: one per turn only. A
 * connection task drives the shared HTTP state machine
 * (http.h): web_conn_run answers what is buffered and sends what it can;
 * when it needs input the task suspends in canal_io_recv until bytes come
 * or the connection's deadline (header or idle timeout); when the socket
 * is full it suspends until writable (canal_io_poll, on both backends).
 *
 * Small responses (web_conn's style_sends_small, as the io_uring style):
 * on io_uring the task submits one batch (canal_io_submit_batch): a READ
 * of the file after the head linked to a SEND of head and body (and to
 * the RECV of the next request), the file's CLOSE apart, in the loop's
 * ring with the other tasks' operations: one suspension per request and
 * no system call of its own. On epoll it
 * reads the file (canal_io_read), sends head and body in one
 * canal_io_send and closes the file (canal_io_close). Larger bodies: the
 * core's send + sendfile.
 *
 * Input comes through a receive stream the connection task opens for its
 * whole life (canal_io_rstream_open: one multishot receive kept armed, as
 * the io_uring style keeps one per connection), and the chain above ends
 * with the stream's next bytes (canal_io_submit_batch_recv) instead of a
 * RECV of its own: still one suspension per request, and no receive armed
 * and disarmed per request in the kernel. CANAL_WEB_NO_RSTREAM=1: a
 * RECV per request, as before (to measure the stream).
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
/* Connections spawned near (CANAL_RUN_SPAWN_NEAR; CANAL_WEB_SPREAD=1:
 * not). Written before canal_run. */
static bool g_near;

static bool g_no_rstream;    /* CANAL_WEB_NO_RSTREAM */

/* Suspend until fd is writable (canal_io_poll, both backends): true;
 * false at deadline_ns (web_now_ns clock) or SIGTERM. The deadline stands
 * across the WEB_TICK_MS waits (web_conn_run, which sets it, is not
 * called between them): web_conn_run moves it only when it sent bytes or
 * started a response (http.h). */
static bool wait_writable(int fd, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = web_now_ns();
		if (web_stop || now >= deadline_ns)
			return false;
		int64_t left = (int64_t)(deadline_ns - now);
		if (left > (int64_t)WEB_TICK_MS * 1000000)
			left = (int64_t)WEB_TICK_MS * 1000000;
		int r = canal_io_poll(fd, POLLOUT, left, NULL);
		if (r != -ETIMEDOUT && r != -EINTR)
			return true; /* writable, or an error the write will see */
	}
}

/* Wait for input, received straight behind what the connection's input
 * buffer holds (no copy, and no buffer on the task's stack: a parked
 * connection task touches one page of stack, which counts at 10 000
 * connections): the bytes, 0 at the end of input, or -1 to close (an
 * error, SIGTERM, or the deadline web_conn_run set: the header or idle
 * timeout, which stands across the WEB_TICK_MS waits). web_conn_run asks
 * for input only with room left (a full buffer is answered, 431). */
static ssize_t wait_input(struct web_conn *c, struct canal_io_rstream *rs)
{
	for (;;) {
		uint64_t now = web_now_ns();
		if (web_stop || now >= c->deadline_ns)
			return -1;
		int64_t left = (int64_t)(c->deadline_ns - now);
		if (left > (int64_t)WEB_TICK_MS * 1000000)
			left = (int64_t)WEB_TICK_MS * 1000000;
		ssize_t n = rs ? canal_io_rstream_recv(rs, c->in + c->in_len,
						       sizeof c->in - c->in_len,
						       left, NULL)
			       : canal_io_recv(c->fd, c->in + c->in_len,
					       sizeof c->in - c->in_len, 0,
					       left, NULL);
		if (n == -ETIMEDOUT || n == -EAGAIN || n == -EINTR)
			continue;
		return n < 0 ? -1 : n;
	}
}

static _Atomic bool no_link; /* the backend has no chains (epoll) */
static int send_rest(struct web_conn *c, const char *out, size_t n,
		     size_t off);

/*
 * The response as one batch through the loop's ring
 * (canal_io_submit_batch): a READ of the file after the head in out,
 * linked to one SEND of head + body (MSG_WAITALL: only once all of it is
 * sent does the chain go on) and, when no input is left over, to the
 * RECV of the next request into the connection's empty input buffer; the
 * file's CLOSE apart, submitted with them: one suspension per request and
 * no system call of this task's own (the io_uring style's READ + SEND +
 * CLOSE, and its receive always posted). As in the io_uring style, the
 * SEND comes right after the READ and the CLOSE does not wait for it
 * (the kernel holds the file for the READ, which is the head of its
 * chain, task.h). Linked after the SEND (2026-11-29 morning), the CLOSE
 * held the file while the SEND waited on a full socket: wrk at 10 000
 * connections (descriptor limit 20 000) got 503s, the next request's
 * open failing with EMFILE; and it cost each response one more step of
 * the chain in the kernel (a task-work hop). Linked before the SEND
 * (until then), every response waited for that step before leaving. A
 * failed CLOSE is not retried: the descriptor is gone either way. Under
 * ThreadSanitizer the CLOSE is left out: its model of descriptors must
 * see the close(2) (canal_io_close says why); the file is then closed
 * below. A short or failed READ (the file shrank) closes the connection,
 * as the core does; a SEND cut by the tick (a client that does not read)
 * leaves the rest to send_rest, and the RECV to the loop. Returns 0, -1
 * to close, or 1: not done, send it the other way (no chains on this
 * backend: no_link is set; or no room in the ring now). *got: the RECV's
 * result (bytes, 0 at end of input), or -1: none.
 */
static int send_linked(struct web_conn *c, struct canal_io_rstream *rs,
		       char *out, size_t head, size_t body, ssize_t *got)
{
	struct io_uring_sqe s[4];
	/* -ECANCELED: what never ran (the call may start nothing). */
	int32_t res[4] = {-ECANCELED, -ECANCELED, -ECANCELED, -ECANCELED};
	unsigned n = 0, i_close = 4, i_recv = 4;
	bool tsan = false;
#ifdef __SANITIZE_THREAD__
	tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	tsan = true;
#endif
#endif
	memset(s, 0, sizeof(s));
	io_uring_prep_read(&s[n++], c->file_fd, out + head, (unsigned)body, 0);
	s[0].flags |= IOSQE_IO_LINK;
	unsigned i_send = n;
	io_uring_prep_send(&s[n++], c->fd, out, head + body,
			   MSG_NOSIGNAL | MSG_WAITALL | web_conn_send_flags(c));
	bool want_input = !c->close_after && !c->eof && c->in_len == 0;
	if (want_input && !rs) {
		s[i_send].flags |= IOSQE_IO_LINK;
		i_recv = n;
		io_uring_prep_recv(&s[n++], c->fd, c->in, sizeof c->in, 0);
	}
	if (!tsan) {
		i_close = n;
		io_uring_prep_close(&s[n++], c->file_fd); /* apart */
	}
	*got = -1;
	int r;
	if (want_input && rs) {
		/* The chain, then the stream's next bytes: one suspension. */
		ssize_t in = -EAGAIN;
		r = canal_io_submit_batch_recv(s, n, res, rs, c->in,
					       sizeof c->in, &in,
					       (int64_t)WEB_TICK_MS * 1000000,
					       NULL);
		if (in >= 0)
			*got = in;
		else if (in != -EAGAIN && in != -EBUSY)
			c->eof = true; /* the stream's error: no more input */
	} else {
		r = canal_io_submit_batch(s, n, res,
					  (int64_t)WEB_TICK_MS * 1000000, NULL);
	}
	if (r == -EOPNOTSUPP)
		atomic_store_explicit(&no_link, true, memory_order_relaxed);
	if (r == -EOPNOTSUPP || r == -EBUSY)
		return 1;
	/* A CLOSE that ran has taken the descriptor out of the table even
	 * when it reports an error (a flush error): never close it again. */
	if (i_close < n && res[i_close] != -ECANCELED)
		c->file_fd = -1;
	if (c->file_fd >= 0) {
		canal_io_close(c->file_fd);
		c->file_fd = -1;
	}
	if (res[0] != (int32_t)body)
		return -1;
	int32_t sent = res[i_send];
	if (sent < 0 && sent != -ECANCELED && sent != -EAGAIN)
		return -1;
	if (i_recv < n && res[i_recv] >= 0)
		*got = res[i_recv];
	else if (i_recv < n && res[i_recv] != -ECANCELED &&
		 res[i_recv] != -EAGAIN)
		return -1; /* the connection failed */
	return send_rest(c, out, head + body, sent > 0 ? (size_t)sent : 0);
}

/* Send the small response pending on c (web_conn_small_out) through the
 * runtime: 0, or -1 to close the connection. *out is the connection's
 * buffer for head + body, grown as needed. *got: what a RECV chained
 * behind the response received into c->in (send_linked), or -1. */
static int send_small(struct web_conn *c, struct canal_io_rstream *rs,
		      char **out, size_t *cap, ssize_t *got)
{
	*got = -1;
	size_t head = c->out_len, body = c->file_fd >= 0 ? (size_t)c->file_end : 0;
	size_t n = head + body;

	if (n > *cap) {
		char *b = realloc(*out, n);
		if (!b)
			return -1;
		*out = b;
		*cap = n;
	}
	memcpy(*out, c->out, head);
	if (c->file_fd >= 0 && !atomic_load_explicit(&no_link,
						     memory_order_relaxed)) {
		int r = send_linked(c, rs, *out, head, body, got);
		if (r <= 0)
			return r;
	}
	if (c->file_fd >= 0) {
		size_t done = 0;
		while (done < body) {
			ssize_t r = canal_io_read(c->file_fd, *out + head + done,
						  body - done, -1, NULL);
			if (r <= 0)
				return -1; /* an error, or the file shrank */
			done += (size_t)r;
		}
		canal_io_close(c->file_fd);
		c->file_fd = -1;
	}
	return send_rest(c, *out, n, 0);
}

/* Send out[off..n) with canal_io_send: 0, or -1 to close. The idle
 * timeout counts from the last progress (off > 0 on entry: the chained
 * SEND's), as the core's sends count it (http.h). */
static int send_rest(struct web_conn *c, const char *out, size_t n, size_t off)
{
	int64_t tick = (int64_t)WEB_TICK_MS * 1000000;
	if (off > 0)
		c->deadline_ns = web_now_ns() + g_ctx->srv.idle_timeout_ns;
	while (off < n) {
		if (web_stop || web_now_ns() >= c->deadline_ns)
			return -1;
		ssize_t r = canal_io_send(c->fd, out + off, n - off,
					  web_conn_send_flags(c), tick,
					  NULL);
		if (r == -ETIMEDOUT || r == -EAGAIN || r == -EINTR)
			continue;
		if (r < 0)
			return -1;
		off += (size_t)r;
		if (r > 0)
			c->deadline_ns = web_now_ns() + g_ctx->srv.idle_timeout_ns;
	}
	c->out_off = c->out_len;
	return 0;
}

/* n >= 0 bytes received behind c->in[0..in_len): 0, or -1 to close. */
static int take_input(struct web_conn *c, ssize_t n)
{
	if (n == 0) {
		c->eof = true;
		return c->in_len == 0 ? -1 : 0;
	}
	c->in_len += (size_t)n;
	return 0;
}

static bool admit(struct web_ctx *ctx, int fd, bool tuned);

/*
 * Accepting is also the connection tasks' job, a little: every
 * HELP_EVERY turns of connection tasks (counted over all of them), the
 * turn's task looks at the listener's queue and, when it is deep, takes it
 * (web_accept_excess). The accept task's own turns come once its loop has
 * run every task ready before it; when ab opens 10 000 connections at once
 * that was thousands of requests apart, and the queue overflowed at the
 * start of 2 runs in 3 even with the queue taken whole at each turn. One
 * system call per HELP_EVERY turns. The count is a relaxed load and store,
 * not an atomic increment: turns counted twice or missed change nothing.
 */
#define HELP_EVERY 64u
static _Atomic unsigned g_turns;

static void accept_help(void)
{
	unsigned t = atomic_load_explicit(&g_turns, memory_order_relaxed) + 1;
	atomic_store_explicit(&g_turns, t, memory_order_relaxed);
	if (t % HELP_EVERY != 0 || web_stop)
		return;
	for (unsigned k = web_accept_excess(g_ctx->listen_fd, false, NULL); k && !web_stop;
	     k--) {
		int fd = web_accept(g_ctx->listen_fd);
		if (fd < 0 || !admit(g_ctx, fd, true))
			break;
	}
}

/* Input taken (take_input, n > 0 bytes): every WEB_DRIVE_READS of them,
 * the connection's turn ends (http.h). A receive of bytes already in the
 * socket completes at once (the runtime's shortcut), and so does the send
 * of a status answer: a client pipelining requests for missing files
 * without end never let its task wait, and the loop's other tasks (the
 * accept task among them) waited for it, seconds on the epoll backend
 * (test_web's "pipeline hog"). Not canal_yield: with no other task ready
 * (the accept task waits in the backend) the loop runs the yielder again
 * and looks at its backend only every POLL_EVERY runs (loop.c), 32 turns
 * of 16 receives of up to 16 KiB: the other request waited 0.6 s. A
 * sleep of 1 ns parks the task, so the loop looks at its backend and its
 * timers before it runs again: the others' wakes come first. */
static void end_turn_every(unsigned *receives)
{
	if (++*receives % WEB_DRIVE_READS == 0)
		canal_sleep_ns(1);
}

static void conn_task(void *p)
{
	struct web_conn *c = p;
	char *out = NULL;
	size_t out_cap = 0;
	unsigned receives = 0;
	struct canal_io_rstream *rs = NULL;

	if (!g_no_rstream && canal_io_rstream_open(c->fd, &rs) < 0)
		rs = NULL; /* no memory: a receive per request */
	c->style_sends_small = true;
	for (;;) {
		accept_help();
		enum web_want w = web_conn_run(&g_ctx->srv, c);
		if (w == WEB_CLOSE || web_stop)
			break;
		if (w == WEB_WANT_WRITE && c->style_sends_small &&
		    web_conn_small_out(c)) {
			ssize_t more;
			if (send_small(c, rs, &out, &out_cap, &more) < 0 ||
			    (more >= 0 && take_input(c, more) < 0))
				break;
			if (more > 0)
				end_turn_every(&receives);
			continue;
		}
		if (w == WEB_WANT_WRITE) {
			if (!wait_writable(c->fd, c->deadline_ns))
				break;
			continue;
		}
		ssize_t n = wait_input(c, rs);
		if (n < 0 || take_input(c, n) < 0)
			break;
		if (n > 0)
			end_turn_every(&receives);
	}
	if (rs)
		canal_io_rstream_close(rs);
	free(out);
	web_close(c);
	free(c);
	/* A connection ends, the next queued one starts (web_accept_next):
	 * not waiting for the accept task's turn, which comes once its loop
	 * has run every ready task (accept_task). */
	if (!web_stop) {
		int fd = web_accept_next(g_ctx->listen_fd);
		if (fd >= 0)
			admit(g_ctx, fd, true);
	}
}

/* A new connection: a task for it (false: dropped, and the accept task
 * should back off). tuned: web_accept prepared the socket already. */
static bool admit(struct web_ctx *ctx, int fd, bool tuned)
{
	if (!tuned)
		web_sock_setup(fd);
	struct web_conn *c = malloc(sizeof(*c));
	if (!c) {
		close(fd);
		return false;
	}
	web_conn_init(c, fd, &ctx->srv);
	if (canal_spawn(conn_task, c) < 0) {
		close(fd);
		free(c);
		return false;
	}
	return true;
}

/*
 * The accept task takes one connection per turn, and more when the
 * listener's queue is deep (web_accept_excess says why and how many). It
 * waits in canal_io_accept, and its wake goes behind every task already
 * ready on its loop: a turn comes once the loop has run all of them, which
 * at 10 000 connections is too seldom for one connection per turn.
 */
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
		bool ok = admit(ctx, fd, false);
		/* With near: a burst is taken whole; spawned in a row, its
		 * connections spread (the loop's queue grows past
		 * CANAL_RUN_SPAWN_NEAR's bound). */
		unsigned k = ok ? web_accept_excess(ctx->listen_fd,
						    g_near && ctx->cores > 1,
						    NULL)
				: 0;
		for (; ok && k && !web_stop; k--) {
			fd = web_accept(ctx->listen_fd);
			if (fd < 0)
				break; /* empty queue; errors: the next accept */
			ok = admit(ctx, fd, true); /* web_accept tuned it */
		}
		if (!ok)
			canal_sleep_ns((uint64_t)WEB_ACCEPT_BACKOFF_MS * 1000000);
	}
}

static int run(struct web_ctx *ctx)
{
	struct canal_run_options opts = { 0 };
	g_ctx = ctx;
	opts.loops = ctx->cores > 0 ? (unsigned)ctx->cores : 0;
	/* Connections need little stack: many thousands of tasks. */
	opts.stack_size = 64 << 10;
	const char *nr = getenv("CANAL_WEB_NO_RSTREAM");
	g_no_rstream = nr && *nr && strcmp(nr, "0") != 0;
	const char *ns = getenv("CANAL_WEB_NO_SHORTCUT");
	if (ns && *ns && strcmp(ns, "0") != 0)
		opts.flags |= CANAL_RUN_NO_SYNC_SHORTCUT;
	const char *sp = getenv("CANAL_WEB_SPREAD");
	g_near = !(sp && *sp && strcmp(sp, "0") != 0);
	if (g_near)
		opts.flags |= CANAL_RUN_SPAWN_NEAR;
	return canal_run(accept_task, ctx, &opts);
}

const struct web_style web_style = {"tasks", run};
