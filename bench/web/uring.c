/* SPDX-License-Identifier: MIT */
/*
 * uring.c - io_uring completion loops (issue 14), one per --cores, each
 * with its own ring; each ring has one submitter (IORING_SETUP_SINGLE_ISSUER
 * and DEFER_TASKRUN when the kernel has them).
 *
 *   placement: the first loop listens and keeps the connections it admits
 *           in a pass with fewer than NEAR_KEEP receive completions (a
 *           request each, most often) while fewer than WEB_NEAR_BURST
 *           wait in the listener's queue; in a busier pass, or a burst of
 *           connections (taken whole then: wrk opens its 1 000 before any
 *           request), it hands them to the loops in turn (itself
 *           included), as the tasks server's spawns go near while the
 *           loop's queue of ready tasks (a request each) is short: the fd
 *           goes to the loop's hand-off
 *           list (a mutex), and an IORING_OP_MSG_RING posts a completion
 *           to that loop's ring when its list was empty, which wakes it.
 *           So a light load stays on one loop and the others sleep, their
 *           CPUs free for other processes (the client, in the placement
 *           where the server has both CPUs), as the tasks server does with
 *           CANAL_RUN_SPAWN_NEAR; a burst of connections spreads. A
 *           connection stays on its loop for its life. CANAL_WEB_SPREAD=1:
 *           one SO_REUSEPORT listener per loop instead (the kernel spreads
 *           connections by their addresses), nothing shared.
 *
 *   accept: one accept always posted ahead on the listener, registered
 *           as fixed file 0: by default a single-shot accept re-armed at
 *           the end of each pass over the completions, so a pass admits
 *           one new connection (nginx's multi_accept off); with
 *           CANAL_WEB_URING_ACCEPT=multishot, one multishot accept,
 *           re-armed when its CQE lacks IORING_CQE_F_MORE. Either way
 *           re-arming waits WEB_ACCEPT_BACKOFF_MS after EMFILE/ENFILE.
 *           Why single-shot: under a connection per request (ab, 1000
 *           concurrent, server on one CPU), the multishot accept admits a
 *           whole burst of connections in one wait, and the requests of a
 *           burst are then answered behind each other: p99 78-99 ms
 *           against a mean of 37-45 (nginx 37-63). One accept per pass
 *           leaves the queue in the kernel (FIFO) and answers what was
 *           admitted in small passes: p99 47-58 ms, mean 30-39, and more
 *           requests/s (25.5-33.4k against 22.2-27.2k; 3 interleaved runs,
 *           Intel Xeon, 2026-11-23); at 5000 concurrent 26.5k requests/s
 *           and p99 200 ms against multishot's 23.4k and 308 (nginx 23.5k,
 *           226). wrk (keep-alive) does not change. When the listener's
 *           queue is deep a pass takes it whole (web_accept_excess: when
 *           ab opens 10 000 connections at once, one per pass lets the
 *           queue fill and the kernel drop SYNs), and a connection that
 *           ends admits the next queued one (web_accept_next; neither with
 *           the multishot accept; CANAL_WEB_ACCEPT=one: neither at all).
 *   wait:   before each io_uring_enter that waits, a spin of up to 20 us
 *           watching the ring (spin_for_work), as canal's runtime does.
 *   recv:   one multishot recv per connection from a provided buffer ring
 *           (group 0); each buffer goes back to the ring as soon as its
 *           bytes are copied into the connection (web_conn_feed). Bytes
 *           past the core's input buffer (a client pipelining more than
 *           16 KiB of requests ahead of its responses) wait in the
 *           connection's spill, and the receive is cancelled until the
 *           core has taken them, so the socket and TCP's window hold the
 *           rest, as for the styles that read only what fits (up to
 *           SPILL_MAX, 1 MiB, delivered before the cancellation took
 *           effect; past it the connection is closed). It used to close
 *           the connection at once, unanswered (test_web's "pipeline
 *           deep").
 *   send:   a response whose body is at most WEB_SMALL_BODY bytes (and
 *           every status answer) goes through the ring, batched with
 *           everything else (web_conn's style_sends_small): the head is
 *           copied into the connection's buffer, a READ of the file fills
 *           the rest, linked (IOSQE_IO_LINK) to one SEND of head + body;
 *           the READ's completion queues a CLOSE of the file. A short
 *           READ (the file shrank) breaks the link: the SEND ends with
 *           -ECANCELED and the connection closes, as the core does. A
 *           short SEND is resubmitted for the rest. Larger bodies: the
 *           core's send(2) + sendfile(2) from the loop (web_conn_run);
 *           connection sockets stay ordinary descriptors because sendfile
 *           needs them; when the socket is full, a POLL_ADD(POLLOUT) waits.
 *           The core still opens and fstats each file with direct system
 *           calls (openat2, fstat): path checks stay in the core.
 *
 * Lifetime: a connection is in conn[fd] while it has operations in flight
 * (recv_armed, poll_armed, read_armed, send_armed). Closing cancels them (ASYNC_CANCEL by
 * user_data) and the fd is closed only when both CQEs have come back, so
 * no CQE ever names a reused fd.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define URING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define URING_TSAN 1
#endif
#endif
#ifndef URING_TSAN
#define URING_TSAN 0
#endif

#define RING_ENTRIES 4096
#define NBUF 1024 /* provided buffers, power of two */
#define BUF_SIZE 4096
#define BGID 0
/* At most this much input waits in a connection's spill (struct uconn):
 * what the multishot receive delivered before its cancellation took
 * effect; past it the connection is closed. */
#define SPILL_MAX (1u << 20)

enum op { OP_IGNORE = 0, OP_ACCEPT, OP_RECV, OP_POLL, OP_READ, OP_SEND,
	  OP_HANDOFF };

/* A listening loop keeps a connection admitted in a pass with fewer
 * receive completions (placement, above): the tasks server's bound on its
 * queue (task.h, CANAL_RUN_SPAWN_NEAR). Counting every completion (a
 * request makes three: receive, read, send) handed out connections at 10
 * connections, one round in five at 68-89k requests/s against 120k. */
#define NEAR_KEEP 4u

struct uconn {
	struct web_conn c;
	bool recv_armed, poll_armed, read_armed, send_armed, closing;
	/* Input received past the core's buffer (a client that pipelines
	 * more than WEB_IN_MAX bytes ahead of its responses): spill[0,
	 * spill_len), fed to the core as it makes room (progress). While it
	 * holds bytes the multishot receive is cancelled (the socket's own
	 * buffer and TCP's window then hold the rest, as for the styles that
	 * read only what fits) and not armed again until it is empty; the
	 * peer's end (peer_eof) is told to the core only after it. */
	char *spill;
	size_t spill_len, spill_cap;
	bool peer_eof;
	bool recv_stopped; /* take_input cancelled the receive: its end
			    * (-ECANCELED) is no error */
	bool busy; /* in a call that may close it: not freed until it returns */
	char *buf; /* head + body of a small response, bufcap bytes */
	size_t bufcap;
	const char *sdata; /* the SEND in flight: sdata[soff, slen) */
	size_t slen, soff;
};

struct loop {
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	char *bufs;
	struct uconn **conn;
	size_t cap, maxfd;
	const struct web_ctx *ctx;
	int lfd; /* the listener (fixed file 0 in the ring) */
	bool accept_armed;
	bool accept_multishot; /* CANAL_WEB_URING_ACCEPT=multishot */
	bool taskrun_stale;    /* work_ready */
	uint64_t paused_until;
	unsigned ready; /* receive completions in this pass (requests) */
	int ring_fd; /* the ring's fd, for hand-offs (written at setup) */
	/* Tests only (fault injection): $CANAL_WEB_URING_ENTRIES sets the
	 * ring's size, $CANAL_WEB_URING_FAIL_SUBMIT=N makes every Nth
	 * ring_submit fail with -EBUSY without entering the kernel. */
	unsigned fail_every, nsubmit;
	/* SQEs that found the SQ full after a failed submit (-EBUSY,
	 * -EAGAIN...), in order: queued into the SQ at the next pass
	 * (flush_backlog), before anything newer. */
	struct io_uring_sqe *backlog;
	size_t nback, backcap;
	/* Connections handed to this loop (placement, above): fds, under
	 * handoff_mu; the first push into an empty list posts OP_HANDOFF. */
	pthread_mutex_t handoff_mu;
	int *handoff;
	size_t handoff_n, handoff_cap;
};

/* Every loop, for the listening one's hand-offs: registered (under
 * loops_mu) before web_loop_ready, so all are there when the server is
 * announced; each stays until web_stop. */
#define LOOPS_MAX 1024
static pthread_mutex_t loops_mu = PTHREAD_MUTEX_INITIALIZER;
static struct loop *loops[LOOPS_MAX];
static _Atomic unsigned nloops;
static unsigned next_loop; /* the listening loop's only */

static inline uint64_t ud(int fd, enum op op)
{
	return ((uint64_t)(uint32_t)fd << 8) | (uint64_t)op;
}

/* io_uring_submit, or the injected failure (fail_every). */
static int ring_submit(struct loop *l)
{
	if (l->fail_every && ++l->nsubmit % l->fail_every == 0)
		return -EBUSY;
	return io_uring_submit(&l->ring);
}

/* An SQE to fill: from the SQ, or, when the SQ is full and a submit does
 * not make room (it failed), or a backlog is waiting (order), or
 * to_backlog (a link that must go in one submission), the backlog's next.
 * Never NULL (a backlog that cannot grow aborts: nothing else keeps the
 * operation). */
static struct io_uring_sqe *sqe_get_ex(struct loop *l, bool to_backlog)
{
	struct io_uring_sqe *s = NULL;
	if (!l->nback && !to_backlog) {
		s = io_uring_get_sqe(&l->ring);
		if (!s) {
			ring_submit(l);
			s = io_uring_get_sqe(&l->ring);
		}
		if (s)
			return s;
	}
	if (l->nback == l->backcap) {
		size_t cap = l->backcap ? 2 * l->backcap : 64;
		s = realloc(l->backlog, cap * sizeof *s);
		if (!s) {
			fprintf(stderr, "web uring: no memory for a queued SQE\n");
			abort();
		}
		l->backlog = s;
		l->backcap = cap;
	}
	s = &l->backlog[l->nback++];
	memset(s, 0, sizeof *s);
	return s;
}

static struct io_uring_sqe *sqe_get(struct loop *l)
{
	return sqe_get_ex(l, false);
}

/* Move the backlog into the SQ, in order, a link (READ + SEND) whole. */
static void flush_backlog(struct loop *l)
{
	size_t i = 0;
	while (i < l->nback) {
		unsigned need = l->backlog[i].flags & IOSQE_IO_LINK ? 2 : 1;
		if (io_uring_sq_space_left(&l->ring) < need) {
			ring_submit(l);
			if (io_uring_sq_space_left(&l->ring) < need)
				break;
		}
		for (unsigned k = 0; k < need && i < l->nback; k++)
			*io_uring_get_sqe(&l->ring) = l->backlog[i++];
	}
	if (i == 0)
		return; /* (backlog NULL while it never grew) */
	l->nback -= i;
	memmove(l->backlog, l->backlog + i, l->nback * sizeof *l->backlog);
}

/* Before waiting in io_uring_enter, spin up to SPIN_NS while nothing is
 * ready: completions posted, or deferred task work flagged by the kernel
 * (IORING_SQ_TASKRUN). On these VMs a CPU that goes idle costs a wake-up
 * through the hypervisor (20-45 us) when the next completion comes; canal's
 * runtime spins the same way (loop.c, io_spin) and the two servers are
 * measured alike. $CANAL_IO_SPIN_NS sets the bound (0: none). */
#define SPIN_NS 20000u

static uint64_t spin_ns(void)
{
	const char *e = getenv("CANAL_IO_SPIN_NS");
	if (!e || !*e)
		return SPIN_NS;
	char *end;
	unsigned long long v = strtoull(e, &end, 10);
	return *end || *e == '-' || v > 1000000000ull ? SPIN_NS : v;
}

static bool taskrun_flagged(struct loop *l)
{
	return __atomic_load_n(l->ring.sq.kflags, __ATOMIC_RELAXED) &
	       IORING_SQ_TASKRUN;
}

/* A flag that a pass found with nothing to reap is stale (the kernel
 * raises it after queueing work, io_uring_enter clears it before taking
 * the queue) until seen clear or a pass reaps something: the runtime's
 * rule (backend_uring.c, ur_pending). */
static bool work_ready(struct loop *l)
{
	unsigned f = __atomic_load_n(l->ring.sq.kflags, __ATOMIC_RELAXED);
	if (!(f & IORING_SQ_TASKRUN))
		l->taskrun_stale = false;
	return io_uring_cq_ready(&l->ring) || (f & IORING_SQ_CQ_OVERFLOW) ||
	       ((f & IORING_SQ_TASKRUN) && !l->taskrun_stale);
}

static uint64_t spin_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Submit what is queued (the kernel must start it for anything to come),
 * then spin; the io_uring_enter that follows reaps. Nothing is done when
 * work is ready already (no extra system call under load). */
static void spin_for_work(struct loop *l, uint64_t ns)
{
	if (!ns || work_ready(l))
		return;
	if (io_uring_sq_ready(&l->ring))
		io_uring_submit(&l->ring);
	/* A precise clock: web_now_ns is CLOCK_MONOTONIC_COARSE (a tick, 4 ms
	 * here), which kept this spin going until the tick turned, up to 4 ms
	 * before every sleep (until 2026-11-29: the server never slept). */
	uint64_t until = spin_clock_ns() + ns;
	do {
		for (int i = 0; i < 32; i++) {
			if (work_ready(l) || web_stop)
				return;
			cpu_relax();
		}
	} while (spin_clock_ns() < until);
}

static void arm_accept(struct loop *l)
{
	struct io_uring_sqe *s = sqe_get(l);
	if (l->accept_multishot)
		io_uring_prep_multishot_accept(s, 0, NULL, NULL,
					       SOCK_NONBLOCK | SOCK_CLOEXEC);
	else
		io_uring_prep_accept(s, 0, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	s->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(s, ud(0, OP_ACCEPT));
	l->accept_armed = true;
}

static void arm_recv(struct loop *l, struct uconn *u)
{
	struct io_uring_sqe *s = sqe_get(l);
	io_uring_prep_recv_multishot(s, u->c.fd, NULL, 0, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = BGID;
	io_uring_sqe_set_data64(s, ud(u->c.fd, OP_RECV));
	u->recv_armed = true;
}

static void arm_poll(struct loop *l, struct uconn *u)
{
	if (u->poll_armed)
		return;
	struct io_uring_sqe *s = sqe_get(l);
	io_uring_prep_poll_add(s, u->c.fd, POLLOUT);
	io_uring_sqe_set_data64(s, ud(u->c.fd, OP_POLL));
	u->poll_armed = true;
}

static void cancel(struct loop *l, int fd, enum op op)
{
	struct io_uring_sqe *s = sqe_get(l);
	io_uring_prep_cancel64(s, ud(fd, op), IORING_ASYNC_CANCEL_ALL);
	io_uring_sqe_set_data64(s, ud(fd, OP_IGNORE));
}

static bool admit(struct loop *l, int fd, bool tuned);
static bool place(struct loop *l, int fd, bool tuned, bool burst);

/* Free the connection once nothing of it is in flight; then take the next
 * queued connection now rather than at the accept's turn
 * (web_accept_next). */
static void maybe_free(struct loop *l, struct uconn *u)
{
	if (!u->closing || u->busy || u->recv_armed || u->poll_armed ||
	    u->read_armed || u->send_armed)
		return;
	l->conn[u->c.fd] = NULL;
	web_close(&u->c);
	free(u->buf);
	free(u->spill);
	free(u);
	if (web_stop || l->accept_multishot || l->lfd < 0)
		return;
	int fd = web_accept_next(l->lfd);
	if (fd >= 0)
		admit(l, fd, true);
}

static void conn_close(struct loop *l, struct uconn *u)
{
	if (u->closing)
		return;
	u->closing = true;
	/* The client sees the end now, not after the cancellations come back. */
	shutdown(u->c.fd, SHUT_WR);
	if (u->recv_armed)
		cancel(l, u->c.fd, OP_RECV);
	if (u->poll_armed)
		cancel(l, u->c.fd, OP_POLL);
	if (u->read_armed)
		cancel(l, u->c.fd, OP_READ);
	if (u->send_armed)
		cancel(l, u->c.fd, OP_SEND);
	maybe_free(l, u);
}

static void submit_send(struct loop *l, struct uconn *u, unsigned sqe_flags)
{
	struct io_uring_sqe *s = sqe_get(l);
	io_uring_prep_send(s, u->c.fd, u->sdata + u->soff, u->slen - u->soff,
			   MSG_NOSIGNAL | web_conn_send_flags(&u->c));
	s->flags |= sqe_flags;
	io_uring_sqe_set_data64(s, ud(u->c.fd, OP_SEND));
	u->send_armed = true;
}

/* Send a small response (web_conn_small_out) through the ring. Returns
 * false when it cannot (no memory): the core then sends it. */
static bool start_send(struct loop *l, struct uconn *u)
{
	struct web_conn *c = &u->c;
	if (c->file_fd < 0) {
		u->sdata = c->out;
		u->slen = c->out_len;
		u->soff = 0;
		submit_send(l, u, 0);
		return true;
	}
	size_t body = (size_t)c->file_end, n = c->out_len + body;
	if (n > u->bufcap) {
		char *b = realloc(u->buf, n);
		if (!b)
			return false;
		u->buf = b;
		u->bufcap = n;
	}
	memcpy(u->buf, c->out, c->out_len);
	/* Both SQEs must be in the same submission for the link: make room,
	 * or queue both in the backlog (flush_backlog moves them together). */
	if (!l->nback && io_uring_sq_space_left(&l->ring) < 2)
		ring_submit(l);
	bool back = l->nback || io_uring_sq_space_left(&l->ring) < 2;
	struct io_uring_sqe *s = sqe_get_ex(l, back);
	io_uring_prep_read(s, c->file_fd, u->buf + c->out_len, (unsigned)body, 0);
	s->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(s, ud(c->fd, OP_READ));
	u->read_armed = true;
	u->sdata = u->buf;
	u->slen = n;
	u->soff = 0;
	submit_send(l, u, 0); /* after s: backlog too if s was */
	return true;
}

/* Move what fits of the spill into the core's buffer; once it is empty,
 * the peer's end, if it came, reaches the core. */
static void unspill(struct uconn *u)
{
	if (u->spill_len) {
		size_t room = sizeof u->c.in - u->c.in_len;
		size_t n = u->spill_len < room ? u->spill_len : room;
		if (n && web_conn_feed(&u->c, u->spill, n) == 0) {
			memmove(u->spill, u->spill + n, u->spill_len - n);
			u->spill_len -= n;
		}
	}
	if (!u->spill_len && u->peer_eof)
		u->c.eof = true;
}

static void progress(struct loop *l, struct uconn *u)
{
	unspill(u);
	enum web_want w = web_conn_run(&l->ctx->srv, &u->c);
	/* The core took what it could: more from the spill while it has
	 * some and the core asks for input (each round makes room or
	 * answers). */
	while (w == WEB_WANT_READ && u->spill_len) {
		size_t before = u->spill_len;
		unspill(u);
		if (u->spill_len == before)
			break; /* no room: the core's buffer is full */
		w = web_conn_run(&l->ctx->srv, &u->c);
	}
	switch (w) {
	case WEB_WANT_READ:
		if (!u->recv_armed && !u->c.eof && !u->spill_len)
			arm_recv(l, u);
		break;
	case WEB_WANT_WRITE:
		if (u->c.style_sends_small && web_conn_small_out(&u->c)) {
			if (u->read_armed || u->send_armed)
				break; /* already on its way */
			if (start_send(l, u))
				break;
			/* No memory: the core sends. u is kept until the
			 * call returns (busy: maybe_free waits), then freed
			 * if it closed meanwhile. */
			u->c.style_sends_small = false;
			u->busy = true;
			progress(l, u);
			u->busy = false;
			u->c.style_sends_small = true;
			maybe_free(l, u);
			break;
		}
		arm_poll(l, u);
		break;
	case WEB_CLOSE:
		conn_close(l, u);
		break;
	}
}

/* A new connection (tuned: web_accept prepared the socket already);
 * false: dropped (no memory, or an fd past the table). */
static bool admit(struct loop *l, int fd, bool tuned)
{
	struct uconn *u = (size_t)fd < l->cap ? malloc(sizeof *u) : NULL;
	if (!u) {
		close(fd);
		return false;
	}
	if (!tuned)
		web_sock_setup(fd);
	web_conn_init(&u->c, fd, &l->ctx->srv);
	u->c.style_sends_small = true;
	u->recv_armed = u->poll_armed = u->closing = u->busy = false;
	u->read_armed = u->send_armed = false;
	u->buf = NULL;
	u->bufcap = 0;
	u->spill = NULL;
	u->spill_len = u->spill_cap = 0;
	u->peer_eof = u->recv_stopped = false;
	l->conn[fd] = u;
	if ((size_t)fd > l->maxfd)
		l->maxfd = (size_t)fd;
	arm_recv(l, u);
	return true;
}

/* One connection per pass, and more when the listener's queue is deep
 * (web_accept_excess: a pass comes too seldom at 10 000 connections). */
static void on_accept(struct loop *l, struct io_uring_cqe *cqe)
{
	if (!(cqe->flags & IORING_CQE_F_MORE)) {
		l->accept_armed = false;
		if (cqe->res == -EMFILE || cqe->res == -ENFILE ||
		    cqe->res == -ENOBUFS || cqe->res == -ENOMEM)
			l->paused_until = web_now_ns() + WEB_ACCEPT_BACKOFF_MS * 1000000ull;
	}
	if (cqe->res < 0)
		return;
	/* The listener's queue, looked at once per accept (one system
	 * call): 16 or more waiting is a burst, taken now so that it
	 * spreads (place). */
	bool burst;
	unsigned k = web_accept_excess(
		l->lfd, atomic_load_explicit(&nloops, memory_order_relaxed) > 1,
		&burst);
	place(l, cqe->res, false, burst);
	if (l->accept_multishot)
		return;
	for (; k && !web_stop; k--) {
		int fd = web_accept(l->lfd);
		if (fd < 0 || !place(l, fd, true, burst))
			break; /* empty queue; errors: the next accept */
	}
}

/* Post OP_HANDOFF to to's ring from l's. Its result is not looked at:
 * if the message is refused (no MSG_RING in this kernel, a full queue),
 * to finds the list at its next pass anyway, within WEB_TICK_MS. */
static void handoff_wake(struct loop *l, struct loop *to)
{
	struct io_uring_sqe *s = sqe_get(l);
	io_uring_prep_msg_ring(s, to->ring_fd, 0, ud(0, OP_HANDOFF), 0);
	io_uring_sqe_set_data64(s, ud(0, OP_IGNORE));
	io_uring_submit(&l->ring);
}

/* A connection the listening loop l admitted (tuned: web_accept prepared
 * it; burst: it came in one): kept, or handed to the next loop in turn
 * (placement, above). False as admit. */
static bool place(struct loop *l, int fd, bool tuned, bool burst)
{
	unsigned n = atomic_load_explicit(&nloops, memory_order_acquire);
	if (n < 2 || (l->ready < NEAR_KEEP && !burst))
		return admit(l, fd, tuned);
	struct loop *to = loops[next_loop++ % n];
	if (to == l)
		return admit(l, fd, tuned);
	if (!tuned)
		web_sock_setup(fd);
	pthread_mutex_lock(&to->handoff_mu);
	bool was_empty = to->handoff_n == 0;
	if (to->handoff_n == to->handoff_cap) {
		size_t cap = to->handoff_cap ? 2 * to->handoff_cap : 64;
		int *h = realloc(to->handoff, cap * sizeof *h);
		if (!h) {
			pthread_mutex_unlock(&to->handoff_mu);
			close(fd);
			return false;
		}
		to->handoff = h;
		to->handoff_cap = cap;
	}
	to->handoff[to->handoff_n++] = fd;
	pthread_mutex_unlock(&to->handoff_mu);
	if (was_empty)
		handoff_wake(l, to);
	return true;
}

/* Admit what the listening loop handed to l (at OP_HANDOFF, and at every
 * pass in case a wake was lost). */
static void take_handoffs(struct loop *l)
{
	pthread_mutex_lock(&l->handoff_mu);
	int *h = l->handoff;
	size_t n = l->handoff_n;
	l->handoff = NULL;
	l->handoff_n = l->handoff_cap = 0;
	pthread_mutex_unlock(&l->handoff_mu);
	for (size_t i = 0; i < n; i++)
		admit(l, h[i], true);
	free(h);
}

/* Received bytes: to the core's buffer, and what does not fit (or all of
 * it, behind bytes already spilled) to the spill; the first spill cancels
 * the multishot receive. 0, or -ENOBUFS (the core's buffer full behind a
 * closing response, no memory, or past SPILL_MAX). */
static int take_input(struct loop *l, struct uconn *u, const char *data,
		      size_t len)
{
	if (!u->spill_len) {
		size_t room = sizeof u->c.in - u->c.in_len;
		size_t n = len < room ? len : room;
		if (n)
			web_conn_feed(&u->c, data, n);
		data += n;
		len -= n;
		if (!len)
			return 0;
		if (u->c.close_after)
			return -ENOBUFS;
	}
	if (u->spill_len + len > SPILL_MAX)
		return -ENOBUFS;
	if (u->spill_len + len > u->spill_cap) {
		size_t cap = u->spill_cap ? 2 * u->spill_cap : 4 * BUF_SIZE;
		while (cap < u->spill_len + len)
			cap *= 2;
		char *sp = realloc(u->spill, cap);
		if (!sp)
			return -ENOBUFS;
		u->spill = sp;
		u->spill_cap = cap;
	}
	bool first = u->spill_len == 0;
	memcpy(u->spill + u->spill_len, data, len);
	u->spill_len += len;
	if (first && u->recv_armed && !u->recv_stopped) {
		cancel(l, u->c.fd, OP_RECV);
		u->recv_stopped = true;
	}
	return 0;
}

static void on_recv(struct loop *l, struct uconn *u, struct io_uring_cqe *cqe)
{
	bool more = cqe->flags & IORING_CQE_F_MORE;
	bool stopped = u->recv_stopped;
	if (!more)
		u->recv_armed = u->recv_stopped = false;
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		char *buf = l->bufs + (size_t)bid * BUF_SIZE;
		int fed = cqe->res > 0 && !u->closing
				  ? take_input(l, u, buf, (size_t)cqe->res) : 0;
		io_uring_buf_ring_add(l->br, buf, BUF_SIZE, (unsigned short)bid,
				      io_uring_buf_ring_mask(NBUF), 0);
		io_uring_buf_ring_advance(l->br, 1);
		/* Input past the buffer behind a response that closes the
		 * connection is never answered: dropped (the full buffer
		 * makes web_close linger), not a reason to cut that
		 * response. Otherwise (no memory, or past SPILL_MAX): close. */
		if (fed < 0 && !u->c.close_after) {
			u->c.in_len = 0;
			conn_close(l, u); /* may free u */
			return;
		}
	}
	if (u->closing) {
		maybe_free(l, u);
		return;
	}
	if (cqe->res == 0) {
		u->peer_eof = true;
		if (!u->spill_len)
			u->c.eof = true;
	} else if (cqe->res < 0 && cqe->res != -ENOBUFS &&
		   !(cqe->res == -ECANCELED && stopped)) {
		/* (-ECANCELED after take_input's cancellation: the multishot
		 * receive's end; armed again once the spill is empty.) */
		conn_close(l, u);
		return;
	}
	progress(l, u);
}

/* The file is read (or the READ failed): close it through the ring. */
static void on_read(struct loop *l, struct uconn *u)
{
	u->read_armed = false;
	if (u->c.file_fd >= 0 && URING_TSAN) {
		/* ThreadSanitizer tracks descriptors through the calls it
		 * intercepts: a CLOSE done by the kernel through the ring is
		 * invisible to it, and the next loop thread's close of the
		 * same number (reused for a socket accepted through the ring)
		 * is then reported as a race. Under TSan, close directly. */
		close(u->c.file_fd);
		u->c.file_fd = -1;
	}
	if (u->c.file_fd >= 0) {
		struct io_uring_sqe *s = sqe_get(l);
		io_uring_prep_close(s, u->c.file_fd);
		io_uring_sqe_set_data64(s, ud(u->c.fd, OP_IGNORE));
		u->c.file_fd = -1;
	}
	if (u->closing)
		maybe_free(l, u);
	/* A short READ broke the link: the SEND's -ECANCELED closes. */
}

static void on_send(struct loop *l, struct uconn *u, struct io_uring_cqe *cqe)
{
	u->send_armed = false;
	if (u->closing) {
		maybe_free(l, u);
		return;
	}
	if (cqe->res == -EAGAIN || cqe->res == -EINTR) {
		submit_send(l, u, 0);
		return;
	}
	if (cqe->res < 0) { /* the peer went away, or the file shrank */
		conn_close(l, u);
		return;
	}
	u->soff += (size_t)cqe->res;
	if (u->soff < u->slen) {
		/* Progress: the idle timeout counts from here, as the core's
		 * sends count it from their last progress (http.h). */
		if (cqe->res > 0)
			u->c.deadline_ns = web_now_ns() + l->ctx->srv.idle_timeout_ns;
		submit_send(l, u, 0);
		return;
	}
	/* Done: the core sees the response complete. */
	struct web_conn *c = &u->c;
	if (c->file_fd >= 0) { /* cannot happen: the READ completed first */
		close(c->file_fd);
		c->file_fd = -1;
	}
	c->out_off = c->out_len;
	c->file_off = c->file_end;
	progress(l, u);
}

static void on_poll(struct loop *l, struct uconn *u)
{
	u->poll_armed = false;
	if (u->closing) {
		maybe_free(l, u);
		return;
	}
	progress(l, u);
}

static int setup(struct loop *l, int lfd)
{
	l->lfd = lfd;
	struct io_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			 IORING_SETUP_TASKRUN_FLAG, /* for spin_for_work */
	};
	unsigned entries = RING_ENTRIES;
	const char *e = getenv("CANAL_WEB_URING_ENTRIES");
	if (e && atoi(e) > 0)
		entries = (unsigned)atoi(e);
	e = getenv("CANAL_WEB_URING_FAIL_SUBMIT");
	l->fail_every = e && atoi(e) > 0 ? (unsigned)atoi(e) : 0;
	int r = io_uring_queue_init_params(entries, &l->ring, &p);
	if (r == -EINVAL) {
		memset(&p, 0, sizeof p);
		r = io_uring_queue_init_params(entries, &l->ring, &p);
	}
	if (r < 0)
		return r;
	l->ring_fd = l->ring.ring_fd;
	size_t brsz = NBUF * sizeof(struct io_uring_buf);
	if (posix_memalign((void **)&l->br, 4096, brsz) ||
	    posix_memalign((void **)&l->bufs, 4096, (size_t)NBUF * BUF_SIZE))
		return -ENOMEM;
	io_uring_buf_ring_init(l->br);
	struct io_uring_buf_reg reg = {
		.ring_addr = (uint64_t)(uintptr_t)l->br,
		.ring_entries = NBUF,
		.bgid = BGID,
	};
	r = io_uring_register_buf_ring(&l->ring, &reg, 0);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < NBUF; i++)
		io_uring_buf_ring_add(l->br, l->bufs + (size_t)i * BUF_SIZE, BUF_SIZE,
				      (unsigned short)i, io_uring_buf_ring_mask(NBUF), (int)i);
	io_uring_buf_ring_advance(l->br, NBUF);
	if (lfd >= 0 && (r = io_uring_register_files(&l->ring, &lfd, 1)) < 0)
		return r;
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	l->cap = rl.rlim_cur > 1 << 20 ? 1 << 20 : rl.rlim_cur;
	l->conn = calloc(l->cap, sizeof *l->conn);
	return l->conn ? 0 : -ENOMEM;
}

static int loop(struct web_ctx *ctx, int lfd)
{
	struct loop *l = calloc(1, sizeof *l);
	if (!l)
		return -ENOMEM;
	l->ctx = ctx;
	const char *acc = getenv("CANAL_WEB_URING_ACCEPT");
	l->accept_multishot = acc && strcmp(acc, "multishot") == 0;
	pthread_mutex_init(&l->handoff_mu, NULL);
	int r = setup(l, lfd);
	if (r == 0 && ctx->one_listener) {
		/* Registered for good: the listening loop may hand it
		 * connections until it stops, so it is never freed. */
		pthread_mutex_lock(&loops_mu);
		unsigned i = atomic_load_explicit(&nloops, memory_order_relaxed);
		if (i < LOOPS_MAX) {
			loops[i] = l;
			atomic_store_explicit(&nloops, i + 1, memory_order_release);
		}
		pthread_mutex_unlock(&loops_mu);
	}
	web_loop_ready(r < 0 ? r : 0);
	if (r < 0) {
		fprintf(stderr, "web uring: setup: %s\n", strerror(-r));
		web_stop = 1;
		free(l);
		return r;
	}
	if (lfd >= 0)
		arm_accept(l);
	uint64_t next_scan = 0, spin = spin_ns();
	while (!web_stop) {
		struct __kernel_timespec ts = {.tv_nsec = WEB_TICK_MS * 1000000ll};
		struct io_uring_cqe *cqe;
		flush_backlog(l);
		spin_for_work(l, spin);
		bool flagged = taskrun_flagged(l);
		io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
		l->ready = 0;
		if (lfd >= 0 &&
		    atomic_load_explicit(&nloops, memory_order_relaxed) > 1) {
			unsigned h;
			io_uring_for_each_cqe(&l->ring, h, cqe)
				l->ready += (cqe->user_data & 0xff) == OP_RECV;
		}
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&l->ring, head, cqe) {
			seen++;
			uint64_t d = cqe->user_data;
			int fd = (int)(d >> 8);
			struct uconn *u = (size_t)fd < l->cap ? l->conn[fd] : NULL;
			switch ((enum op)(d & 0xff)) {
			case OP_ACCEPT:
				on_accept(l, cqe);
				break;
			case OP_RECV:
				if (u)
					on_recv(l, u, cqe);
				break;
			case OP_POLL:
				if (u)
					on_poll(l, u);
				break;
			case OP_READ:
				if (u)
					on_read(l, u);
				break;
			case OP_SEND:
				if (u)
					on_send(l, u, cqe);
				break;
			case OP_HANDOFF:
				take_handoffs(l);
				break;
			default:
				break;
			}
		}
		io_uring_cq_advance(&l->ring, seen);
		if (seen)
			l->taskrun_stale = false;
		else if (flagged && taskrun_flagged(l))
			l->taskrun_stale = true;
		uint64_t now = web_now_ns();
		if (lfd < 0)
			take_handoffs(l); /* a wake that did not come */
		else if (!l->accept_armed && now >= l->paused_until)
			arm_accept(l);
		if (now >= next_scan) {
			next_scan = now + WEB_TICK_MS * 1000000ull;
			for (size_t fd = 0; fd <= l->maxfd; fd++) {
				struct uconn *u = l->conn[fd];
				if (u && !u->closing && now >= u->c.deadline_ns)
					conn_close(l, u);
			}
		}
	}
	io_uring_queue_exit(&l->ring); /* ends every operation in flight */
	for (size_t fd = 0; fd <= l->maxfd; fd++)
		if (l->conn[fd]) {
			web_close(&l->conn[fd]->c);
			free(l->conn[fd]->buf);
			free(l->conn[fd]->spill); /* input pipelined ahead */
			free(l->conn[fd]);
		}
	free(l->conn);
	free(l->backlog);
	free(l->br);
	free(l->bufs);
	if (!ctx->one_listener)
		free(l); /* else the listening loop may still look at it */
	return 0;
}

static int run(struct web_ctx *ctx)
{
	const char *sp = getenv("CANAL_WEB_SPREAD");
	ctx->one_listener = !(sp && *sp && strcmp(sp, "0") != 0);
	return web_run_loops(ctx, loop);
}

const struct web_style web_style = {"uring", run};
