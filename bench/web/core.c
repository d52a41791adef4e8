/* SPDX-License-Identifier: MIT */
/*
 * core.c - command line, limits, listener, signals and small socket
 * helpers of every web server style (see core.h).
 */
#define _GNU_SOURCE
#include "core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

atomic_int web_stop;

/*
 * SIGTERM and SIGINT are blocked in every thread (the mask is set before
 * any thread starts, and threads inherit it) and taken synchronously by
 * this thread's sigwait(2). No handler runs asynchronously: under
 * ThreadSanitizer an asynchronous handler is deferred to the interrupted
 * thread's next intercepted call, and a signal that lands in a task (a
 * TSan fiber) that then ends was never handled: the tasks server ran on
 * after SIGTERM (seen 1 run in 6 with a busy CPU beside it; web_stop still
 * 0 ten seconds later, every loop asleep in io_uring on its timers).
 */
static void *signal_watch(void *arg)
{
	const sigset_t *set = arg;
	int sig;
	while (sigwait(set, &sig) != 0)
		;
	web_stop = 1;
	return NULL;
}

static int watch_signals(void)
{
	static sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	int r = pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_t tid;
	if (r == 0)
		r = pthread_create(&tid, NULL, signal_watch, &set);
	if (r == 0)
		r = pthread_detach(tid);
	return -r;
}

static int make_listener(const struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)addr, sizeof *addr) < 0 ||
	    listen(fd, 4096) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int web_listen_again(const struct web_ctx *ctx)
{
	return make_listener(&ctx->addr);
}

/* $CANAL_WEB_SNDBUF (tests): SO_SNDBUF of every accepted socket, so
 * that a slow reader stalls the server's sends even on loopback (whose
 * 64 KiB segments otherwise let a whole small response into the socket);
 * 0: the kernel's. Set by main before any connection. */
static int web_sndbuf;

static void sock_tune(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (web_sndbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &web_sndbuf,
			   sizeof web_sndbuf);
}

void web_sock_setup(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	sock_tune(fd);
}

/* $CANAL_WEB_ACCEPT=one (read once; the loops' threads may race to read
 * it, and read the same). */
static bool accept_one_only(void)
{
	static _Atomic int off = -1;
	int v = atomic_load_explicit(&off, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv("CANAL_WEB_ACCEPT");
		v = e && strcmp(e, "one") == 0;
		atomic_store_explicit(&off, v, memory_order_relaxed);
	}
	return v;
}

int web_accept_next(int listen_fd)
{
	return accept_one_only() ? -EAGAIN : web_accept(listen_fd);
}

unsigned web_accept_excess(int listen_fd, bool near, bool *burst)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	bool one = accept_one_only();
	if (burst)
		*burst = false;
	if ((one && !near) ||
	    getsockopt(listen_fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct tcp_info, tcpi_sacked) + sizeof(ti.tcpi_sacked))
		return 0;
	/* A listening socket's tcpi_unacked is its accept queue's length,
	 * tcpi_sacked the queue's capacity (the listen backlog). */
	bool b = near && ti.tcpi_unacked >= WEB_NEAR_BURST;
	if (burst)
		*burst = b;
	if (!one && ti.tcpi_unacked > ti.tcpi_sacked / 4)
		return ti.tcpi_sacked;
	return b ? ti.tcpi_unacked : 0;
}

int web_accept(int listen_fd)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			sock_tune(fd);
			return fd;
		}
		switch (errno) {
		case EINTR:
			continue;
		case EAGAIN:
#if EAGAIN != EWOULDBLOCK
		case EWOULDBLOCK:
#endif
			return -EAGAIN;
		case EMFILE:
		case ENFILE:
		case ENOBUFS:
		case ENOMEM:
			return -EMFILE;
		default:
			return -errno;
		}
	}
}

bool web_close(struct web_conn *c)
{
	return web_close_in(c, -1);
}

bool web_close_in(struct web_conn *c, int epfd)
{
	if (c->fd < 0)
		return false;
	bool more = c->in_len > 0;
	if (c->close_after || c->in_len) {
		char buf[4096];
		shutdown(c->fd, SHUT_WR);
		for (int i = 0; i < 16; i++) {
			ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
			if (n <= 0) {
				if (n == 0)
					more = false; /* the client is done */
				break;
			}
			more = true;
		}
	}
	web_conn_fini(c);
	/* A client still sending after a response that closes the
	 * connection gets a lingering close (linger.c), not a reset that
	 * would cut that response. One that got no response (a header
	 * timeout) has nothing to lose: closed at once. */
	bool linger = more && c->close_after;
	if (linger && epfd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (linger)
		web_linger(c->fd);
	else
		close(c->fd);
	c->fd = -1;
	return linger;
}

void web_announce(const struct web_ctx *ctx)
{
	char a[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &ctx->addr.sin_addr, a, sizeof a);
	printf("web %s: listening on %s:%d\n", web_style.name, a, ntohs(ctx->addr.sin_port));
	fflush(stdout);
}

int web_wait_fd(int fd, short events, uint64_t deadline_ns)
{
	for (;;) {
		if (web_stop)
			return -1;
		uint64_t now = web_now_ns();
		if (now >= deadline_ns)
			return 0;
		uint64_t left_ms = (deadline_ns - now) / 1000000 + 1;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, left_ms > WEB_TICK_MS ? WEB_TICK_MS : (int)left_ms);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1; /* let the caller's I/O report it */
	}
}

void web_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !web_stop)
		;
}

static void usage(const char *name)
{
	fprintf(stderr,
		"usage: %s --port P --root DIR --cores N [--bind ADDR]\n"
		"       [--header-timeout MS] [--idle-timeout MS]\n"
		"Serves GET/HEAD of the files under DIR over HTTP/1.1 until SIGTERM.\n",
		name);
	exit(2);
}

static long num_arg(const char *name, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "web: bad %s: '%s' (%ld..%ld)\n", name, s, lo, hi);
		exit(2);
	}
	return v;
}

/*
 * Grow the descriptor table to what the server may use, now, while the
 * process has one thread. The kernel grows it by doubling as descriptors
 * are taken, and in a process of several threads (a runtime's loops and
 * pool, io_uring's workers) each growth waits for an RCU grace period
 * (synchronize_rcu in expand_files), with the thread that took the
 * descriptor blocked: 5-13 ms at a time on this VM. The tasks server took
 * 2 000 descriptors (connections and the files they send) in the first
 * 100 ms of a run at 60 000 requests/s over 1 000 connections, and its
 * p99.9 was 13-25 ms for it (perf: its thread in D state in alloc_fd).
 * nginx's workers are single-threaded: no grace period. Tables never
 * shrink, so once is enough: a descriptor at the top of the range, closed.
 * Capped at 65 536 (512 KiB of table).
 */
static void reserve_fd_table(int any_fd)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	rlim_t top = rl.rlim_cur;
	if (top == RLIM_INFINITY || top > 65536)
		top = 65536;
	if (top < 2)
		return;
	int fd = (int)top - 1;
	if (fcntl(fd, F_GETFD) >= 0)
		return; /* in use: the table is that big already */
	if (dup2(any_fd, fd) == fd)
		close(fd);
}

int main(int argc, char **argv)
{
	struct web_ctx ctx = {.cores = 1, .style = web_style.name};
	long port = -1, header_ms = 10000, idle_ms = 60000;
	const char *root = NULL, *bind_addr = "127.0.0.1", *e;
	if ((e = getenv("CANAL_WEB_HEADER_TIMEOUT_MS")))
		header_ms = num_arg("CANAL_WEB_HEADER_TIMEOUT_MS", e, 1, 86400000);
	if ((e = getenv("CANAL_WEB_IDLE_TIMEOUT_MS")))
		idle_ms = num_arg("CANAL_WEB_IDLE_TIMEOUT_MS", e, 1, 86400000);
	if ((e = getenv("CANAL_WEB_SNDBUF")))
		web_sndbuf = (int)num_arg("CANAL_WEB_SNDBUF", e, 1024, 1 << 26);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			usage(argv[0]);
		if (!v)
			usage(argv[0]);
		if (strcmp(a, "--port") == 0)
			port = num_arg("--port", v, 0, 65535);
		else if (strcmp(a, "--root") == 0)
			root = v;
		else if (strcmp(a, "--cores") == 0)
			ctx.cores = (int)num_arg("--cores", v, 1, 1024);
		else if (strcmp(a, "--bind") == 0)
			bind_addr = v;
		else if (strcmp(a, "--header-timeout") == 0)
			header_ms = num_arg("--header-timeout", v, 1, 86400000);
		else if (strcmp(a, "--idle-timeout") == 0)
			idle_ms = num_arg("--idle-timeout", v, 1, 86400000);
		else
			usage(argv[0]);
		i++;
	}
	if (port < 0 || !root)
		usage(argv[0]);
	ctx.srv.header_timeout_ns = (uint64_t)header_ms * 1000000u;
	ctx.srv.idle_timeout_ns = (uint64_t)idle_ms * 1000000u;

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	ctx.srv.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ctx.srv.root_fd < 0) {
		fprintf(stderr, "web: --root %s: %s\n", root, strerror(errno));
		return 1;
	}
	reserve_fd_table(ctx.srv.root_fd);
	ctx.addr.sin_family = AF_INET;
	ctx.addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, bind_addr, &ctx.addr.sin_addr) != 1) {
		fprintf(stderr, "web: --bind %s: not an IPv4 address\n", bind_addr);
		return 2;
	}
	ctx.listen_fd = make_listener(&ctx.addr);
	if (ctx.listen_fd < 0) {
		fprintf(stderr, "web: listen on %s:%ld: %s\n", bind_addr, port,
			strerror(-ctx.listen_fd));
		return 1;
	}
	socklen_t al = sizeof ctx.addr;
	getsockname(ctx.listen_fd, (struct sockaddr *)&ctx.addr, &al);

	int w = watch_signals();
	if (w < 0) {
		fprintf(stderr, "web: cannot watch SIGTERM: %s\n", strerror(-w));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	int r = web_style.run(&ctx);
	if (r < 0) {
		fprintf(stderr, "web %s: %s\n", web_style.name, strerror(-r));
		return 1;
	}
	return 0;
}

int web_serve_conn(const struct web_ctx *ctx, struct web_conn *c, int watch_fd,
		   bool (*may_trade)(void))
{
	for (;;) {
		enum web_want w = web_conn_drive(&ctx->srv, c);
		if (w == WEB_CLOSE) {
			web_close(c);
			return 0;
		}
		bool can_idle = w == WEB_WANT_READ && watch_fd >= 0;
		struct pollfd p[2] = {
			{.fd = c->fd, .events = w == WEB_WANT_READ ? POLLIN : POLLOUT},
			{.fd = watch_fd, .events = POLLIN},
		};
		for (;;) {
			if (web_stop) {
				web_close(c);
				return 0;
			}
			uint64_t now = web_now_ns();
			if (now >= c->deadline_ns) {
				web_close(c);
				return 0;
			}
			uint64_t left_ms = (c->deadline_ns - now) / 1000000 + 1;
			/* Idle: between requests, silent since it came (a client
			 * that connected and sent nothing for WEB_FRESH_GRACE_MS),
			 * or its head incomplete for as long (a slow client). */
			uint64_t grace = WEB_FRESH_GRACE_MS * 1000000ull;
			bool idle = can_idle &&
				    (c->in_len ? now - c->head_start_ns >= grace
					       : c->requests > 0 || now - c->opened_ns >= grace) &&
				    (!may_trade || may_trade());
			int r = poll(p, idle ? 2 : 1,
				     left_ms > WEB_TICK_MS ? WEB_TICK_MS : (int)left_ms);
			if (r < 0 && errno != EINTR)
				break;
			if (r <= 0)
				continue;
			if (p[0].revents)
				break;
			if (idle && p[1].revents)
				return 1;
		}
	}
}

struct loop_arg {
	struct web_ctx *ctx;
	int (*loop)(struct web_ctx *ctx, int listen_fd);
	int fd;
	int result;
	pthread_t tid;
};

/* Loops report their setup here; web_run_loops announces the server when
 * all have (mutex + condition variable: no ordering subtleties). */
static pthread_mutex_t ready_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static int ready_n, ready_err;

void web_loop_ready(int err)
{
	pthread_mutex_lock(&ready_mu);
	ready_n++;
	if (err && !ready_err)
		ready_err = err;
	pthread_cond_broadcast(&ready_cv);
	pthread_mutex_unlock(&ready_mu);
}

static void *loop_main(void *p)
{
	struct loop_arg *a = p;
	a->result = a->loop(a->ctx, a->fd);
	return NULL;
}

int web_thread_attr(void *attr)
{
	pthread_attr_t *at = attr;
	pthread_attr_init(at);
	return pthread_attr_setstacksize(at, 256 << 10);
}

int web_run_loops(struct web_ctx *ctx, int (*loop)(struct web_ctx *ctx, int listen_fd))
{
	int n = ctx->cores;
	struct loop_arg *a = calloc((size_t)n, sizeof *a);
	if (!a)
		return -ENOMEM;
	int started = 0, err = 0;
	for (int i = 0; i < n; i++) {
		a[i] = (struct loop_arg){.ctx = ctx, .loop = loop};
		a[i].fd = i == 0 ? ctx->listen_fd
			  : ctx->one_listener ? -1
					      : web_listen_again(ctx);
		if (a[i].fd < 0 && (i == 0 || !ctx->one_listener)) {
			err = a[i].fd;
			break;
		}
		if (pthread_create(&a[i].tid, NULL, loop_main, &a[i]) != 0) {
			if (i && a[i].fd >= 0)
				close(a[i].fd);
			err = -EAGAIN;
			break;
		}
		started = i + 1;
	}
	pthread_mutex_lock(&ready_mu);
	while (ready_n < started)
		pthread_cond_wait(&ready_cv, &ready_mu);
	if (!err)
		err = ready_err;
	pthread_mutex_unlock(&ready_mu);
	if (err)
		web_stop = 1; /* a loop could not start: fail at once, not later */
	else
		web_announce(ctx);
	for (int i = 0; i < started; i++) {
		pthread_join(a[i].tid, NULL);
		if (i && a[i].fd >= 0)
			close(a[i].fd);
		if (!err)
			err = a[i].result;
	}
	free(a);
	return err;
}
