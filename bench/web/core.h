/* SPDX-License-Identifier: MIT */
/*
 * core.h - what every web server program shares besides HTTP (issue 14).
 *
 * Each program build/bench/web/<style> is core.c + http.c + one file
 * <style>.c that defines `const struct web_style web_style`. core.c owns
 * the fixed command line
 *     <style> --port P --root DIR --cores N
 *             [--bind ADDR] [--header-timeout MS] [--idle-timeout MS]
 * (environment: CANAL_WEB_HEADER_TIMEOUT_MS, CANAL_WEB_IDLE_TIMEOUT_MS),
 * raising RLIMIT_NOFILE's soft limit to the hard one, the listening socket,
 * SIGTERM (sets web_stop; every style looks at it at least every
 * WEB_TICK_MS and returns, and the program exits 0) and the line
 *     web <style>: listening on ADDR:PORT
 * on stdout once the server accepts (--port 0 picks a free port; tests
 * read it from that line).
 *
 * Styles (see CMakeLists.txt): threads, pool, select, poll, epoll, uring,
 * tasks (one task per connection on canal's runtime, tasks.c).
 */
#ifndef CANAL_BENCH_WEB_CORE_H
#define CANAL_BENCH_WEB_CORE_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "http.h"

#define WEB_TICK_MS 200
/* Accept pauses this long after EMFILE/ENFILE/ENOBUFS/ENOMEM. */
#define WEB_ACCEPT_BACKOFF_MS 50
/* web_serve_conn: a connection that sent nothing yet counts as idle only
 * after this long (its request is usually on its way). */
#define WEB_FRESH_GRACE_MS 100

struct web_ctx {
	struct web_server srv;
	int listen_fd;		 /* non-blocking, SO_REUSEPORT */
	struct sockaddr_in addr; /* bound address, port filled in */
	int cores;		 /* --cores N */
	const char *style;
	/* web_run_loops: only the first loop listens, the others get -1
	 * (connections come to them from the first; uring.c). */
	bool one_listener;
};

struct web_style {
	const char *name;
	/* Serve until web_stop; return 0 (or -errno on a fatal setup error). */
	int (*run)(struct web_ctx *ctx);
};

extern const struct web_style web_style;
/* Set once SIGTERM/SIGINT came (a thread takes them with sigwait, core.c);
 * read by every thread (an atomic: plain reads and writes are sequentially
 * consistent). */
extern atomic_int web_stop;

/* Another non-blocking listener on ctx's address (SO_REUSEPORT), for a
 * style with one listener per loop. Returns the fd or -errno. */
int web_listen_again(const struct web_ctx *ctx);

/* accept4 (non-blocking, close-on-exec, TCP_NODELAY, and SO_SNDBUF when
 * $CANAL_WEB_SNDBUF is set: a test's small send buffer). Returns the fd, or
 * -EAGAIN, or -EMFILE for every resource shortage (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM: the caller backs off WEB_ACCEPT_BACKOFF_MS), or another
 * negative errno to ignore (ECONNABORTED, EPERM...). */
int web_accept(int listen_fd);

/*
 * How many more connections a style that takes one connection per turn of
 * its loop should take now (with web_accept, until it returns -EAGAIN)
 * after one: when the listener's accept queue is deeper than a quarter of
 * its capacity, up to the capacity; otherwise 0 (TCP_INFO of the
 * listening socket: one system call). One connection per turn answers
 * what was admitted in small groups: under ab at 1 000 connections, p99
 * 49-74 ms, against 67-95 when the queue is taken whole from a thirty-second
 * of its capacity up and 68-95 when it is always taken whole, as a multishot
 * accept does (nginx 49-55). But when ab opens 10 000 connections at once
 * the turns come too seldom: the queue (4 096) fills and the kernel drops
 * SYNs, and 3-9 % of the requests wait for the client's SYN
 * retransmission, 1 s (p99 1.3-1.5 s in 2 to 4 runs of 4, server on one
 * CPU, Intel Xeon, 2026-11-28). $CANAL_WEB_ACCEPT=one turns it off
 * (the excess rule returns 0), and web_accept_next too: to measure them.
 *
 * near: a server with several loops that keeps a light load on one
 * (uring.c, tasks.c) asks for bursts too: when WEB_NEAR_BURST or more
 * connections wait, *burst (if not NULL) is set and, if the excess rule
 * gives 0, the queue's length is returned, so that a burst of connections
 * (wrk opening its 1 000 at once, before any request) is taken whole and
 * spreads over the loops. 16, not 4: with the server on both CPUs and wrk
 * on one, wrk's 100 connections stayed on one loop (117-119k requests/s)
 * where from 4 up a third of them went to the loop that shares wrk's CPU
 * (91k); its 1 000 spread either way (106-108k against 92-100k; AMD EPYC,
 * 2026-11-30, one run each). One TCP_INFO call answers both.
 */
unsigned web_accept_excess(int listen_fd, bool near, bool *burst);
#define WEB_NEAR_BURST 16u

/* For a style whose accepts wait their turn: once a connection is closed,
 * the next queued one (web_accept), so that under a connection per request
 * a connection's end admits the next without waiting for the accept's
 * turn; -EAGAIN when $CANAL_WEB_ACCEPT=one. */
int web_accept_next(int listen_fd);

/* Prepare an accepted fd (from io_uring): non-blocking, TCP_NODELAY (and
 * $CANAL_WEB_SNDBUF as web_accept). */
void web_sock_setup(int fd);

/* Close a connection's socket: for a connection closed by the server
 * with unread input, shut down writing and drain what is there first, so
 * the peer reads the last response instead of a reset; a client found
 * still sending after a response that closes the connection gets a
 * lingering close (web_linger). Returns true in that case. */
bool web_close(struct web_conn *c);
/* The same for a socket registered in the epoll set epfd: a lingering
 * socket stays open, so close(2) would not take it out of the set; it is
 * taken out before the linger thread owns it (after, it could already be
 * closed and its number reused). */
bool web_close_in(struct web_conn *c, int epfd);

/* linger.c: take over a socket whose writing is shut down and whose
 * client is still sending: read and discard until its end of input, 1 s
 * without input or 5 s in all, then close it (at most 1024 at once; past
 * that, and if the linger thread cannot start, close at once). */
void web_linger(int fd);

/* Wait for events on one fd until deadline_ns (web_now_ns clock), in
 * slices of WEB_TICK_MS. Returns 1 ready, 0 deadline passed, -1 stop. */
int web_wait_fd(int fd, short events, uint64_t deadline_ns);

/* Sleep ms milliseconds (accept back-off). */
void web_sleep_ms(int ms);

/*
 * web_serve_conn - serve one connection with blocking waits (the threads
 * and pool styles) until it closes (returns 0, socket closed). If watch_fd
 * >= 0, while the connection is idle and watch_fd becomes readable,
 * returns 1 with the connection still open (the pool style then parks it
 * and takes the waiting work). Idle: waiting for input with no output
 * pending, and either no input buffered and a response completed or
 * nothing came for WEB_FRESH_GRACE_MS since the connection was accepted,
 * or a head incomplete for WEB_FRESH_GRACE_MS (a slow client); and
 * may_trade (if given, asked every WEB_TICK_MS) says yes.
 */
int web_serve_conn(const struct web_ctx *ctx, struct web_conn *c, int watch_fd,
		   bool (*may_trade)(void));

/*
 * web_run_loops - run loop on ctx->cores threads: the first on
 * ctx->listen_fd, the others each on its own SO_REUSEPORT listener (the
 * kernel spreads connections), or on none (listen_fd -1) when
 * ctx->one_listener is set. Announces the server once every loop called
 * web_loop_ready(0). Returns when every loop returned: 0 or the first
 * error.
 */
int web_run_loops(struct web_ctx *ctx, int (*loop)(struct web_ctx *ctx, int listen_fd));

/* Print the "listening" line (once the server accepts). The threads and
 * pool styles call it; web_run_loops calls it when every loop is ready. */
void web_announce(const struct web_ctx *ctx);

/* A loop run by web_run_loops reports its setup: 0, or the negative errno
 * it then returns (the server exits 1 at once). Called once per loop. */
void web_loop_ready(int err);

/* Threads of the styles that make them: small stacks. */
int web_thread_attr(void *attr /* pthread_attr_t * */);

#endif
