/* SPDX-License-Identifier: MIT */
/*
 * io.c - I/O that suspends the task: the operations, the synchronous-
 * completion shortcut, timeouts and cancellation.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/backend.h"
#include "runtime/io.h"
#include "runtime/cond.h"
#include "runtime/sanitizer.h"
#include "base/clock.h"
#include "base/park.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

void canal__io_complete(struct canal__io *op, int32_t res)
{
	op->task->loop->inflight--;
	op->result = res;
	op->done = true;
	canal__task_wake(op->task, WAKE_WOKEN);
}

void canal__io_chain_cqe(struct canal__loop *l, struct canal__io_chain *ch,
			 unsigned i, int32_t res, uint32_t flags)
{
	uint16_t bit = (uint16_t)(1u << i);
	if (!(flags & IORING_CQE_F_NOTIF) && !(ch->has_result & bit)) {
		ch->res[i] = res;
		ch->has_result |= bit;
	}
	if (flags & IORING_CQE_F_MORE)
		return;
	if (!(ch->has_result & bit))
		ch->res[i] = res;
	ch->done |= bit;
	l->inflight--;
	/* The last completion wakes the task, unless the chain's input is
	 * still to come (canal_io_submit_link_recv: the stream wakes it). */
	if (--ch->left == 0 &&
	    !(ch->then && canal__io_rstream_quiet(ch->then, ch)))
		canal__task_wake(ch->task, WAKE_WOKEN);
}

static int ret(ssize_t r)
{
	return r < 0 ? -errno : (int)r;
}

/* The events an operation waits for. */
static short poll_events(const struct canal__io *op)
{
	if (op->kind == IO_POLL)
		return (short)op->flags;
	return (op->kind == IO_READ || op->kind == IO_READV ||
		op->kind == IO_RECV || op->kind == IO_ACCEPT)
		       ? POLLIN
		       : POLLOUT;
}

/*
 * A read or write on a file that refuses RWF_NOWAIT (a pty, an inotify
 * descriptor, ...), reported ready by the backend (ready: epoll; io_uring
 * never asks, it does such files itself). A file in non-blocking mode is
 * read or written plainly. A file in blocking mode only if poll() says,
 * now, that it will not block: the readiness epoll reported may be stale
 * (level-triggered: each report is true when made); a write to it asks
 * for at most PLAIN_WRITE_MAX bytes. What remains: another reader
 * (writer) of the same blocking file that takes the bytes (room) between
 * this poll and the call, which then blocks the loop until more come;
 * give such files O_NONBLOCK. Before this, such a read was
 * "would block" for ever: epoll reported the fd at once, again and again,
 * and the loop spun without reading (a hostile review, 2026-11-30).
 */
/* Bytes a write to a blocking file may ask for once poll(2) said POLLOUT
 * (a tty reports it from 256 bytes of room, a pipe from PIPE_BUF): a
 * larger write(2) waits until it has all gone. A short count, as write(2)
 * may return. */
#define PLAIN_WRITE_MAX 256u

/* read, readv, write or writev of op, plainly: a write asks for at most
 * cap bytes (writev: of its first non-empty part, when cap is not
 * SIZE_MAX); a short count, as write(2) may return. */
static int plain_rw(const struct canal__io *op, size_t cap)
{
	switch (op->kind) {
	case IO_READ:
		return ret(read(op->fd, op->buf, op->len));
	case IO_READV:
		return ret(readv(op->fd, op->iov, op->iovcnt));
	case IO_WRITE:
		return ret(write(op->fd, op->buf,
				 op->len > cap ? cap : op->len));
	default:
		if (cap == SIZE_MAX)
			return ret(writev(op->fd, op->iov, op->iovcnt));
		for (int i = 0; i < op->iovcnt; i++) {
			size_t n = op->iov[i].iov_len;
			if (n != 0)
				return ret(write(op->fd, op->iov[i].iov_base,
						 n > cap ? cap : n));
		}
		return 0;
	}
}

static int try_plain(struct canal__io *op)
{
	int fl = fcntl(op->fd, F_GETFL);
	if (fl < 0)
		return -errno;
	bool blocking = !(fl & O_NONBLOCK);
	if (blocking) {
		struct pollfd p = {.fd = op->fd, .events = poll_events(op)};
		int n = poll(&p, 1, 0);
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EAGAIN;
	}
	return plain_rw(op, blocking ? PLAIN_WRITE_MAX : SIZE_MAX);
}

/*
 * accept4 has no per-call "don't wait": a listener in blocking mode,
 * reported readable, is made non-blocking for the call and put back at
 * once (as a connect is started, backend_epoll.c). A connection can be
 * gone by the time we accept: another loop's acceptor, woken by the same
 * connection, or a thread, took it; a blocking accept4 would then hold
 * the loop's thread (and every task on it) until the next connection (a
 * hostile review: 1.8 s against the task's 300 ms timeout). The mode's
 * look, change, accept and restore go under one lock of the process
 * (uncontended: a lock and an unlock per accept):
 * two loops doing it at once interleaved (A and B both see blocking, A
 * restores it, B accepts in blocking mode and blocks: 3 runs in 3 with
 * 30 connections). A thread of the program that enters a blocking accept
 * on the same listener within these few instructions gets EAGAIN; one
 * already waiting in it does not.
 */
static pthread_mutex_t accept_mode_lock = PTHREAD_MUTEX_INITIALIZER;

static int try_accept(struct canal__io *op, bool ready)
{
	/* Under the lock even to look: a mode seen non-blocking may be
	 * another loop's instant, put back before our accept4. */
	pthread_mutex_lock(&accept_mode_lock);
	int r, fl = fcntl(op->fd, F_GETFL);
	if (fl < 0) {
		r = -errno;
	} else if (fl & O_NONBLOCK) {
		r = ret(accept4(op->fd, op->addr, op->addrlenp, op->flags));
	} else if (!ready) {
		r = -EAGAIN; /* wait for readiness first */
	} else if (fcntl(op->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
		r = -errno;
	} else {
		r = ret(accept4(op->fd, op->addr, op->addrlenp, op->flags));
		(void)fcntl(op->fd, F_SETFL, fl);
	}
	pthread_mutex_unlock(&accept_mode_lock);
	return r;
}

int canal__io_try(struct canal__io *op, bool ready)
{
	int r;
	switch (op->kind) {
	case IO_READ: {
		struct iovec v = {op->buf, op->len};
		r = ret(preadv2(op->fd, &v, 1, -1, RWF_NOWAIT));
		break;
	}
	case IO_WRITE: {
		struct iovec v = {op->buf, op->len};
		r = ret(pwritev2(op->fd, &v, 1, -1, RWF_NOWAIT));
		break;
	}
	case IO_READV:
		r = ret(preadv2(op->fd, op->iov, op->iovcnt, -1, RWF_NOWAIT));
		break;
	case IO_WRITEV:
		r = ret(pwritev2(op->fd, op->iov, op->iovcnt, -1,
				 RWF_NOWAIT));
		break;
	case IO_RECV:
		r = ret(recv(op->fd, op->buf, op->len,
			     op->flags | MSG_DONTWAIT));
		break;
	case IO_SEND:
		r = ret(send(op->fd, op->buf, op->len,
			     op->flags | MSG_DONTWAIT | MSG_NOSIGNAL));
		break;
	case IO_ACCEPT:
		r = try_accept(op, ready);
		break;
	case IO_POLL: {
		/* The one look poll(2) makes with a timeout of 0. */
		struct pollfd p = {.fd = op->fd, .events = (short)op->flags};
		int n = poll(&p, 1, 0);
		if (n < 0)
			return -errno;
		return n == 0 ? -EAGAIN : canal__io_poll_result(p.revents);
	}
	case IO_CONNECT: {
		/* Only once the connection was started and the fd reported
		 * writable (epoll): how did it end? */
		if (!ready)
			return -EAGAIN;
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			return -errno;
		return -err;
	}
	default:
		return -EAGAIN;
	}
	if (r == -EWOULDBLOCK)
		r = -EAGAIN;
	if (r == -EOPNOTSUPP && (op->kind == IO_READ || op->kind == IO_WRITE ||
				 op->kind == IO_READV ||
				 op->kind == IO_WRITEV)) {
		/* RWF_NOWAIT unsupported for this file: wait for readiness
		 * first, then try it another way. */
		r = ready ? try_plain(op) : -EAGAIN;
		if (r == -EWOULDBLOCK)
			r = -EAGAIN;
	}
	return r;
}

/* connect(2) without blocking. A socket in blocking mode is made
 * non-blocking for the instant of the call: other users of its open file
 * description see it so meanwhile (task.h states the window); io_uring's
 * connect, which needs none of it, is used wherever the backend is
 * io_uring and the caller a task. */
int canal__io_connect_start(const struct canal__io *op, bool *blocking)
{
	*blocking = false;
	int fl = fcntl(op->fd, F_GETFL);
	if (fl < 0)
		return -errno;
	*blocking = !(fl & O_NONBLOCK);
	if (*blocking && fcntl(op->fd, F_SETFL, fl | O_NONBLOCK) != 0)
		return -errno;
	int r = ret(connect(op->fd, op->addr, op->addrlen));
	if (*blocking)
		(void)fcntl(op->fd, F_SETFL, fl);
	return r == -EWOULDBLOCK ? -EAGAIN : r;
}

/*
 * A connect's one try (timeout_ns 0, in a task or not): started without
 * blocking; one that cannot complete at once is -ETIMEDOUT, whether
 * nothing started (-EAGAIN: a Unix listener's full backlog) or it goes on
 * in the kernel (-EINPROGRESS: task.h says what the socket is then).
 * Before, a task's try asked how a connect it never started had ended
 * (always -ETIMEDOUT, even where connect(2) completes at once), and
 * outside a task the connect was a blocking connect(2), without limit
 * (a hostile review).
 */
static int connect_once(const struct canal__io *op)
{
	bool blocking;
	int r = canal__io_connect_start(op, &blocking);
	return r == -EAGAIN || r == -EINPROGRESS ? -ETIMEDOUT : r;
}

/*
 * When a connect(2) of fd in blocking mode gives up waiting for room in a
 * Unix listener's full backlog (EAGAIN): SO_SNDTIMEO after start, or
 * CANAL_NO_DEADLINE (none set). io_uring's worker makes that connect(2)
 * and keeps it; a connect started again after pauses keeps it here (it
 * waited to its own timeout, or for ever, where io_uring said -EAGAIN).
 */
static uint64_t sndtimeo_deadline(int fd, uint64_t start)
{
	struct timeval tv;
	socklen_t len = sizeof(tv);
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) != 0 ||
	    (tv.tv_sec <= 0 && tv.tv_usec <= 0))
		return CANAL_NO_DEADLINE;
	uint64_t ns = (uint64_t)tv.tv_sec * 1000000000u +
		      (uint64_t)tv.tv_usec * 1000u;
	return ns > CANAL_NO_DEADLINE - 1 - start ? CANAL_NO_DEADLINE - 1
						  : start + ns;
}

/* The pauses of a connect started again (a Unix listener's full backlog,
 * in a blocking socket: no readiness tells when it has room): 1 ms,
 * doubling up to 32 ms. */
#define CONNECT_RETRY_MIN_NS 1000000u
#define CONNECT_RETRY_MAX_NS 32000000u

/* ------------------------------------------------------------------ */
/* Outside a task: the blocking call, with the timeout on readiness.   */
/* ------------------------------------------------------------------ */

/* Wait until p->fd has one of p->events (p->revents then says which),
 * or the deadline (CANAL_NO_DEADLINE: none): 0, -ETIMEDOUT, or poll(2)'s
 * -errno. */
static int poll_until(struct pollfd *p, uint64_t deadline)
{
	/* poll() takes an int of milliseconds: waits longer than INT_MAX
	 * ms (24.8 days) go in several, to the deadline. */
	for (;;) {
		int ms = -1;
		if (deadline != CANAL_NO_DEADLINE) {
			uint64_t now = canal_now_ns();
			uint64_t left = deadline > now ? deadline - now : 0;
			uint64_t m = left / 1000000 + (left % 1000000 != 0);
			ms = m > INT_MAX ? INT_MAX : (int)m;
		}
		int r = poll(p, 1, ms);
		if (r < 0)
			return -errno;
		if (r > 0)
			return 0;
		if (canal_now_ns() >= deadline)
			return -ETIMEDOUT;
	}
}

/*
 * A connect outside a task. timeout_ns limits the connect itself, not the
 * readiness of a socket not yet connected (writable at once: the blocking
 * connect(2) after that poll waited without limit). Started without
 * blocking; a connect under way is waited for (poll(2): writable once it
 * ended) until the deadline, and SO_ERROR says how it ended; a Unix
 * listener's full backlog is tried again after pauses, as in a task, for
 * a socket in blocking mode (connect(2) would wait for room). A socket in
 * blocking mode without a timeout: connect(2) itself.
 */
static int connect_blocking(const struct canal__io *op, int64_t timeout_ns)
{
	if (timeout_ns == 0)
		return connect_once(op);
	if (timeout_ns < 0) {
		/* Nothing to limit: a socket in blocking mode gets
		 * connect(2) itself, its mode untouched (it was made
		 * non-blocking for a first try, which another thread of the
		 * socket saw: its blocking calls said EAGAIN). */
		int fl = fcntl(op->fd, F_GETFL);
		if (fl < 0)
			return -errno;
		if (!(fl & O_NONBLOCK))
			return ret(connect(op->fd, op->addr, op->addrlen));
	}
	uint64_t deadline = canal__deadline_from_timeout(timeout_ns);
	uint64_t give_up = 0; /* SO_SNDTIMEO's, at the first EAGAIN */
	uint64_t retry_ns = CONNECT_RETRY_MIN_NS;
	bool blocking;
	int r;
	while ((r = canal__io_connect_start(op, &blocking)) == -EAGAIN &&
	       blocking) {
		uint64_t now = canal_now_ns();
		if (!give_up)
			give_up = sndtimeo_deadline(op->fd, now);
		if (now >= deadline)
			return -ETIMEDOUT;
		if (now >= give_up)
			return -EAGAIN; /* as connect(2) */
		uint64_t end = give_up < deadline ? give_up : deadline;
		uint64_t d = end - now < retry_ns ? end - now : retry_ns;
		struct timespec ts = {.tv_sec = (time_t)(d / 1000000000u),
				      .tv_nsec = (long)(d % 1000000000u)};
		nanosleep(&ts, NULL);
		if (retry_ns < CONNECT_RETRY_MAX_NS)
			retry_ns *= 2;
	}
	if (r != -EINPROGRESS)
		return r;
	struct pollfd p = {.fd = op->fd, .events = POLLOUT};
	r = poll_until(&p, deadline);
	if (r < 0)
		return r; /* -ETIMEDOUT: it goes on in the kernel (task.h) */
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return -errno;
	return -err;
}

/*
 * A read or write that the system call answers without waiting for
 * anything: 0 bytes (read, write: 0; readv, writev: 0 parts, or parts all
 * empty), a count of parts out of range (-EINVAL, readv(2)'s first
 * check). It is made at once, as the try (canal__io_try, ready), never
 * after a wait for a readiness it does not need: the epoll backend and a call outside a
 * task with a timeout waited for an empty pipe's POLLIN (a full one's
 * POLLOUT) and said -ETIMEDOUT, or waited for ever, where the system
 * call and io_uring answered at once (test_revdoc_zero_len).
 */
static bool io_cannot_wait(const struct canal__io *op)
{
	switch (op->kind) {
	case IO_READ:
	case IO_WRITE:
		return op->len == 0;
	case IO_READV:
	case IO_WRITEV:
		if (op->iovcnt <= 0 || op->iovcnt > IOV_MAX)
			return true;
		for (int i = 0; i < op->iovcnt; i++)
			if (op->iov[i].iov_len != 0)
				return false;
		return true; /* every part empty: readv(2) says 0 */
	default:
		return false;
	}
}

/* fd is a listening socket (SO_ACCEPTCONN; as backend_epoll.c asks). */
static bool is_listener(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);
	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 &&
	       on != 0;
}

static int io_blocking(struct canal__io *op, int64_t timeout_ns)
{
	if (op->kind == IO_SQE)
		return -EPERM;
	if (op->kind == IO_POLL) {
		/* The wait is the whole operation: poll(2) itself (a
		 * negative timeout: no deadline). */
		struct pollfd p = {.fd = op->fd, .events = (short)op->flags};
		int r = poll_until(&p, canal__deadline_from_timeout(timeout_ns));
		return r < 0 ? r : canal__io_poll_result(p.revents);
	}
	if (op->kind == IO_CONNECT)
		return connect_blocking(op, timeout_ns);
	if (io_cannot_wait(op)) {
		int r = canal__io_try(op, true);
		if (r != -EAGAIN)
			return r;
		/* (A file that refuses RWF_NOWAIT and is not ready: as
		 * below.) */
	}
	/* No readiness to wait for on a negative fd (poll(2) skips it: the
	 * call waited out its timeout, then said -ETIMEDOUT): the call
	 * itself says -EBADF, as in a task and without a timeout. Nor for
	 * an accept on a descriptor that does not listen (a pipe, a
	 * connected or datagram socket): accept4(2) fails at once (-ENOTSOCK,
	 * -EINVAL, -EOPNOTSUPP), never blocks; with a timeout the call
	 * waited it out and said -ETIMEDOUT (test_revdoc_accept_outside). */
	if (op->kind == IO_ACCEPT && !is_listener(op->fd))
		return ret(accept4(op->fd, op->addr, op->addrlenp, op->flags));
	if (timeout_ns >= 0 && op->kind != IO_CLOSE && op->fd >= 0) {
		struct pollfd p = {.fd = op->fd, .events = poll_events(op)};
		int r = poll_until(&p, canal__deadline_from_timeout(timeout_ns));
		if (r < 0)
			return r;
	}
	switch (op->kind) {
	case IO_READ:
	case IO_WRITE:
	case IO_READV:
	case IO_WRITEV:
		return plain_rw(op, SIZE_MAX);
	case IO_RECV:
		return ret(recv(op->fd, op->buf, op->len, op->flags));
	case IO_SEND:
		return ret(send(op->fd, op->buf, op->len,
				op->flags | MSG_NOSIGNAL));
	case IO_ACCEPT:
		return ret(accept4(op->fd, op->addr, op->addrlenp, op->flags));
	case IO_CLOSE:
		return ret(close(op->fd));
	}
	return -EINVAL;
}

/*
 * The one way a task waits for an operation. Order of events:
 *  1. (shortcut) try it without blocking;
 *  2. arm the task's wake, pin the task to this loop, submit;
 *  3. register on the cancelling condvar; park until the first of: the
 *     completion, the deadline, the condvar;
 *  4. if the completion has not come, ask the backend to cancel and wait
 *     for the completion anyway: the op (on this stack) and its buffers
 *     are released only after the backend is done with them. Completions
 *     are dispatched by this loop's thread between tasks, never while
 *     this task runs, so op->done is stable while we look at it.
 *  5. The outcome: the completion's result, unless it says -ECANCELED,
 *     which is reported as the reason that cancelled it.
 */
static int io_run_until(struct canal__io *op, int64_t timeout_ns,
			uint64_t deadline, struct canal_cond *cancel);

static int io_run(struct canal__io *op, int64_t timeout_ns,
		  struct canal_cond *cancel)
{
	uint64_t deadline = canal__deadline_from_timeout(timeout_ns);
	return io_run_until(op, timeout_ns, deadline, cancel);
}

/*
 * The adaptive shortcut. An input operation (read, readv, recv, accept)
 * whose previous try on the same fd, by the same task, would have blocked
 * goes to the backend without trying, but for one try in TRY_PROBE_EVERY:
 * a task serving a keep-alive connection reads each request after sending
 * the previous answer, when the next one has not come yet, and the try is
 * then a system call that always fails. Output operations always try (a
 * socket's buffer has room most of the time). The outcome is the same
 * either way; only the cost differs.
 */
#define TRY_PROBE_EVERY 8u

static bool is_input(int kind)
{
	/* (A poll counts as input: its caller usually asks it because a
	 * call just said it would block, so its try fails most of the
	 * time, as a keep-alive connection's next read.) */
	return kind == IO_READ || kind == IO_READV || kind == IO_RECV ||
	       kind == IO_ACCEPT || kind == IO_POLL;
}

static bool try_first(struct canal__loop *l, struct canal__task *t,
		      const struct canal__io *op)
{
	/* On io_uring, while other tasks of this loop are ready to run, an
	 * operation submitted now shares the loop's next io_uring_enter with
	 * theirs (the loop flushes its SQEs when it polls): a try would be a
	 * system call of its own. The try pays when the loop would otherwise
	 * enter the kernel for this operation alone. */
	if (l->rt->backend == &canal__backend_uring &&
	    (l->runnext ||
	     atomic_load_explicit(&l->yslot, memory_order_relaxed) ||
	     atomic_load_explicit(&l->queued, memory_order_relaxed)))
		return false;
	if (!is_input(op->kind) || !t->try_missed || t->try_fd != op->fd + 1 ||
	    t->try_kind != op->kind)
		return true;
	return ++t->try_skips % TRY_PROBE_EVERY == 0;
}

static void try_outcome(struct canal__task *t, const struct canal__io *op,
			int r)
{
	if (!is_input(op->kind))
		return;
	t->try_fd = op->fd + 1;
	t->try_kind = (uint8_t)op->kind;
	t->try_missed = r == -EAGAIN;
	t->try_skips = 0;
}

/* Step 3 of io_run_until (and of a chain, and of a stream's receive):
 * park the armed task t until its wake, the deadline or, if cancel is not
 * NULL, a signal of cancel (registered for the park only). Returns the
 * winning reason. */
uint32_t canal__io_park_cancellable(struct canal__task *t, uint64_t deadline,
				    struct canal_cond *cancel)
{
	struct canal__cond_waiter w;
	if (cancel)
		canal__cond_register(cancel, &w, t, WAKE_CANCELED);
	uint32_t why = canal__task_park(t, deadline);
	if (cancel)
		canal__cond_unregister(cancel, &w);
	return why;
}

uint32_t canal__io_park_kept(struct canal__task *t, uint64_t deadline,
			     struct canal_cond *cancel, bool *taken)
{
	*taken = false;
	if (!cancel)
		return canal__task_park(t, deadline);
	/* Registered with t armed: a signal wins its wake (WAKE_CANCELED)
	 * or, once another wake was won, takes the registration. */
	struct canal__cond_waiter kw;
	canal__cond_register_keep(cancel, &kw, t);
	uint32_t why = canal__task_park(t, deadline);
	*taken = canal__cond_unregister_keep(cancel, &kw) && why == WAKE_WOKEN;
	return why;
}

/* An operation that io_uring runs in its worker threads, blocked there,
 * is interrupted by an ASYNC_CANCEL (a signal to the worker): it ends
 * with the interrupted call's error, -EINTR or a kernel-internal
 * -ERESTART* value (SPLICE: -ERESTARTSYS, -512), having done nothing. */
static bool interrupted(int32_t res)
{
	return res == -EINTR || (res <= -512 && res >= -516);
}

/* A connect's kept registration (io_run_until) ends: unregistered. True
 * if a signal had taken it (that signal counted this connect). */
static bool keep_end(struct canal_cond *cancel, struct canal__cond_waiter *kw,
		     bool kept)
{
	return kept && canal__cond_unregister_keep(cancel, kw);
}

/* A connect's kept registration was taken by a signal (or one won the
 * wake of the task, armed, not yet parked): the connect ends
 * -ECANCELED, nothing started. */
static int keep_cancelled(struct canal__task *t, struct canal_cond *cancel,
			  struct canal__cond_waiter *kw)
{
	if (!canal__task_disarm(t))
		(void)canal__task_park(t, CANAL_NO_DEADLINE); /* its push */
	(void)canal__cond_unregister_keep(cancel, kw);
	return -ECANCELED;
}

/*
 * A count short of what the system call would have moved. Invariant: the
 * shortcut, and the backend, change the cost of a call, never its
 * outcome (task.h): a count that stops where the call would go on is not
 * the call's result, and the rest goes through the backend until the call
 * would have returned (io_finish_rest).
 *  - preadv2(RWF_NOWAIT) of a regular file (or a block device) stops at
 *    the first page not in the page cache and returns what it copied,
 *    where read(2) reads on to the end of the file or of the request and
 *    io_uring does the same (it reads the rest in its worker): a task got
 *    4096 bytes of a 65536-byte file with the shortcut, 65536 without
 *    (test_revuring_short_file_read). Only a try's count: the backend's
 *    is the call's (short at the end of the file).
 *  - recv with MSG_WAITALL on a stream socket waits for the whole count
 *    (recv(2); io_uring's receive retries until it has it), but the try
 *    is recv(MSG_DONTWAIT), which returns what is there, and so is epoll's
 *    receive once the socket is ready: a task asking for 8 bytes got the
 *    4 already there (test_revuring_recv_waitall). Not with MSG_PEEK (a
 *    rest would peek at the same bytes again) or MSG_DONTWAIT.
 * Asked only of a short count: an fstat (and, for a regular file, a look
 * at its position: a read cut by the end of the file is whole), or a
 * getsockopt for a short MSG_WAITALL receive.
 */
/* The most one read or write moves (the kernel's MAX_RW_COUNT, as
 * backend_uring.c's URING_RW_MAX and read(2)). */
#define IO_RW_MAX 0x7ffff000u

static size_t rw_total(const struct canal__io *op)
{
	size_t n = 0;
	if (op->kind == IO_READ || op->kind == IO_RECV)
		n = op->len;
	else
		for (int i = 0; i < op->iovcnt; i++)
			n += op->iov[i].iov_len;
	return n > IO_RW_MAX ? IO_RW_MAX : n;
}

static bool cut_short(const struct canal__io *op, int r)
{
	if (op->kind != IO_READ && op->kind != IO_READV && op->kind != IO_RECV)
		return false;
	if (op->kind == IO_RECV &&
	    (!(op->flags & MSG_WAITALL) || (op->flags & (MSG_PEEK | MSG_DONTWAIT))))
		return false;
	if ((size_t)r >= rw_total(op))
		return false;
	if (op->kind == IO_RECV) {
		int type = 0;
		socklen_t len = sizeof(type);
		return getsockopt(op->fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
		       type == SOCK_STREAM;
	}
	struct stat st;
	if (fstat(op->fd, &st) != 0)
		return false;
	if (S_ISBLK(st.st_mode))
		return true;
	if (!S_ISREG(st.st_mode))
		return false; /* a pipe, a socket: a short count is theirs */
	off_t pos = lseek(op->fd, 0, SEEK_CUR);
	return pos >= 0 && pos < st.st_size;
}

static int io_run_once(struct canal__io *op, int64_t timeout_ns,
		       uint64_t deadline, struct canal_cond *cancel);

/* The rest of op after got bytes, a short count (cut_short: op->go_on),
 * through the backend (no try), again while the rest is short in turn (a
 * loop, not a recursion: a peer that sends a byte at a time), until the
 * deadline or the condvar: got plus what the rest moved. A rest that
 * fails, times out or is cancelled, or that reaches the end of input,
 * leaves got, the bytes that did move (read(2) and recv(2) cut after
 * some bytes return them). */
static int io_finish_rest(const struct canal__io *op, int got,
			  int64_t timeout_ns, uint64_t deadline,
			  struct canal_cond *cancel)
{
	size_t total = rw_total(op);
	struct canal__io rest = *op;
	struct iovec *iov = NULL;
	if (op->kind == IO_READV) {
		/* The parts not yet filled, the first one cut. */
		iov = malloc((size_t)op->iovcnt * sizeof(*iov));
		if (!iov)
			return got; /* a short count, as before */
		size_t skip = (size_t)got, left = total - (size_t)got;
		int n = 0;
		for (int i = 0; i < op->iovcnt && left > 0; i++) {
			struct iovec v = op->iov[i];
			if (skip >= v.iov_len) {
				skip -= v.iov_len;
				continue;
			}
			v.iov_base = (char *)v.iov_base + skip;
			v.iov_len -= skip;
			skip = 0;
			if (v.iov_len > left)
				v.iov_len = left; /* (IO_RW_MAX in all) */
			left -= v.iov_len;
			iov[n++] = v;
		}
		rest.iov = iov;
		rest.iovcnt = n;
	}
	for (;;) {
		if (op->kind != IO_READV) {
			rest.buf = (char *)op->buf + got;
			rest.len = total - (size_t)got;
		}
		rest.no_try = true;
		int r = io_run_once(&rest, timeout_ns, deadline, cancel);
		if (r <= 0)
			break;
		got += r;
		if ((size_t)got >= total || !rest.go_on || op->kind == IO_READV)
			break;
	}
	free(iov);
	return got;
}

static int io_run_until(struct canal__io *op, int64_t timeout_ns,
			uint64_t deadline, struct canal_cond *cancel)
{
	int r = io_run_once(op, timeout_ns, deadline, cancel);
	if (r > 0 && op->go_on)
		return io_finish_rest(op, r, timeout_ns, deadline, cancel);
	return r;
}

static int io_run_once(struct canal__io *op, int64_t timeout_ns,
		       uint64_t deadline, struct canal_cond *cancel)
{
	struct canal__task *t = canal__this_task();
	op->go_on = false;
	if (!t || t->detached)
		return io_blocking(op, timeout_ns);
	struct canal__loop *l = canal__this_loop();
	struct canal__runtime *rt = l->rt;
	if (op->kind == IO_SQE) {
		/* Refused SQEs are refused whatever the timeout (a timeout
		 * of 0 said -ETIMEDOUT to a linked SQE, and on epoll). */
		int e = rt->backend->sqe_check
				? rt->backend->sqe_check(op->sqe)
				: -EOPNOTSUPP;
		if (e)
			return e;
	}
	/* A connect's one try (timeout 0). io_uring's IORING_OP_CONNECT
	 * makes it without touching the socket's mode: submitted, then
	 * cancelled at once (the deadline has passed), it completes if it
	 * could at once (the kernel's first issue does not block) and ends
	 * -ECANCELED (-ETIMEDOUT here) if not. The epoll backend has only
	 * connect(2), made non-blocking for the instant (task.h). */
	bool uring_connect0 = op->kind == IO_CONNECT && timeout_ns == 0 &&
			      rt->backend == &canal__backend_uring;
	if (op->kind == IO_CONNECT && timeout_ns == 0 && !uring_connect0)
		return connect_once(op); /* (no shortcut: this is the call) */
	/* A timeout of 0 always tries: the shortcut's skips (try_first)
	 * and CANAL_RUN_NO_SYNC_SHORTCUT change the cost, never the
	 * outcome, and a poll that does not look could never succeed. */
	bool must_try = timeout_ns == 0 || io_cannot_wait(op);
	if (op->kind != IO_SQE && op->kind != IO_FUTEX_WAIT &&
	    !uring_connect0 && !op->no_try &&
	    (must_try ||
	     (!(rt->opts.flags & CANAL_RUN_NO_SYNC_SHORTCUT) &&
	      try_first(l, t, op)))) {
		/* ready: with timeout 0 (or for a call that cannot wait,
		 * io_cannot_wait) this try is the whole operation, so
		 * it must look even where it otherwise waits for readiness
		 * first (a blocking listener: made non-blocking for the
		 * accept; a file refusing RWF_NOWAIT: poll(2), then read),
		 * or a connection waiting in the backlog, a byte in a pty,
		 * was -ETIMEDOUT (a hostile review). (A connect's try, with
		 * a timeout, is -EAGAIN: the backend starts it.) */
		int r = canal__io_try(op, must_try);
		try_outcome(t, op, r);
		if (r != -EAGAIN) {
			op->result = r; /* (the op's own: canal__io_recv_stream) */
			/* (timeout 0: this try is the whole call.) */
			op->go_on = r > 0 && timeout_ns != 0 && cut_short(op, r);
			return r;
		}
	}
	if (timeout_ns == 0 && !uring_connect0)
		return -ETIMEDOUT;
	uint64_t give_up = 0; /* a connect's SO_SNDTIMEO (sndtimeo_deadline) */
	/* A connect started again after pauses waits from its first pause
	 * to its end with one kept registration on cancel (cond.h): a
	 * signal between two parks (a pause's timer won, the task queued or
	 * starting the connect again) was skipped, lost, and the connect
	 * went on (test_revrt_connect_retry_signal). */
	struct canal__cond_waiter kw;
	bool kept = false;
	uint32_t why;
	for (uint64_t retry_ns = CONNECT_RETRY_MIN_NS;;) {
		op->task = t;
		op->done = false;
		canal__task_arm(t);
		if (kept && canal__cond_keep_taken(&kw))
			return keep_cancelled(t, cancel, &kw);
		int r = rt->backend->submit(l, op);
		if (r >= 0)
			break;
		/* Nothing will complete: take the wake back (only a kept
		 * registration's signal could have won it). */
		if (!canal__task_disarm(t))
			return keep_cancelled(t, cancel, &kw);
		if (r == -EPERM && op->kind != IO_SQE) {
			(void)keep_end(cancel, &kw, kept);
			return io_blocking(op, timeout_ns); /* not pollable */
		}
		if (r != -EAGAIN || op->kind != IO_CONNECT) {
			(void)keep_end(cancel, &kw, kept);
			return r;
		}
		/* A connect the backend could neither complete nor wait
		 * for (epoll: a Unix socket in blocking mode whose
		 * listener's backlog is full, where connect(2) would wait
		 * for room; no readiness tells when there is some): start
		 * it again after a pause, until the deadline or the
		 * condvar, or SO_SNDTIMEO (-EAGAIN, as connect(2) and
		 * io_uring say then). Not -EAGAIN at once, which a blocking
		 * connect never says (a hostile review: where io_uring
		 * waited). */
		uint64_t now = canal_now_ns();
		if (!give_up)
			give_up = sndtimeo_deadline(op->fd, now);
		if (now >= deadline || now >= give_up) {
			/* A signal that took the registration since the
			 * last look (it returned 1, counting this connect)
			 * cancels it, rather than the timeout (a review). */
			if (keep_end(cancel, &kw, kept))
				return -ECANCELED;
			return now >= deadline ? -ETIMEDOUT : -EAGAIN;
		}
		uint64_t end = give_up < deadline ? give_up : deadline;
		uint64_t until = end - now > retry_ns ? now + retry_ns : end;
		if (retry_ns < CONNECT_RETRY_MAX_NS)
			retry_ns *= 2;
		if (cancel && !kept) {
			canal__cond_register_keep(cancel, &kw, t);
			kept = true;
		}
		canal__task_arm(t);
		if (kept && canal__cond_keep_taken(&kw))
			return keep_cancelled(t, cancel, &kw);
		if (canal__task_park(t, until) == WAKE_CANCELED) {
			(void)keep_end(cancel, &kw, kept);
			return -ECANCELED;
		}
		l = canal__this_loop(); /* (it may have moved meanwhile) */
	}
	t->pinned++;
	l->inflight++; /* (a backend may have completed it already: then
			* its -- came first; the count is this thread's) */
	if (kept) {
		why = canal__task_park(t, deadline);
		/* Taken while the task was not armed: as a signal that won
		 * its wake, unless the completion came first. */
		if (canal__cond_unregister_keep(cancel, &kw) &&
		    why == WAKE_TIMEDOUT)
			why = WAKE_CANCELED;
	} else {
		why = canal__io_park_cancellable(t, deadline, cancel);
	}
	/* An ASYNC_CANCEL again every millisecond until the completion
	 * comes (as for a chain): one can find nothing while the kernel
	 * moves the op between its states (a blocking Unix connect to a
	 * full backlog: tried inline, queued for a retry after its poll said
	 * ready, then handed to a worker to wait there), and the op then
	 * waited for ever, its task with it (test_revrt_cancel_resend). A
	 * stale cancel finds nothing: this op's user_data is not reused
	 * before its completion came, and a cancel queued before it is
	 * submitted before any later op of this task (SQ order). */
	while (!op->done) {
		rt->backend->cancel(l, op);
		if (op->done)
			break;
		canal__task_arm(t);
		canal__task_park(t, canal_now_ns() + 1000000);
	}
	t->pinned--;
	if (why != WAKE_WOKEN && interrupted(op->result))
		op->result = -ECANCELED; /* by our ASYNC_CANCEL: did not run */
	if (uring_connect0 && op->result == -EAGAIN)
		return -ETIMEDOUT; /* a full backlog: the one try (task.h) */
	if (op->result == -ECANCELED) {
		if (why == WAKE_TIMEDOUT)
			return -ETIMEDOUT;
		return -ECANCELED;
	}
	/* A receive that completed on its own (not cut by the timeout or
	 * the condvar, whose count stands) short of its MSG_WAITALL: epoll's
	 * receive after readiness (cut_short). */
	op->go_on = why == WAKE_WOKEN && op->kind == IO_RECV &&
		    op->result > 0 && cut_short(op, op->result);
	return op->result;
}

EXPORT ssize_t canal_io_read(int fd, void *buf, size_t len,
			     int64_t timeout_ns, struct canal_cond *cancel)
{
	struct canal__io op = {.kind = IO_READ, .fd = fd, .buf = buf,
			       .len = len};
	return io_run(&op, timeout_ns, cancel);
}

EXPORT ssize_t canal_io_write(int fd, const void *buf, size_t len,
			      int64_t timeout_ns, struct canal_cond *cancel)
{
	struct canal__io op = {.kind = IO_WRITE, .fd = fd,
			       .buf = (void *)buf, .len = len};
	return io_run(&op, timeout_ns, cancel);
}

EXPORT ssize_t canal_io_readv(int fd, const struct iovec *iov, int iovcnt,
			      int64_t timeout_ns, struct canal_cond *cancel)
{
	struct canal__io op = {.kind = IO_READV, .fd = fd, .iov = iov,
			       .iovcnt = iovcnt};
	return io_run(&op, timeout_ns, cancel);
}

EXPORT ssize_t canal_io_writev(int fd, const struct iovec *iov, int iovcnt,
			       int64_t timeout_ns, struct canal_cond *cancel)
{
	struct canal__io op = {.kind = IO_WRITEV, .fd = fd, .iov = iov,
			       .iovcnt = iovcnt};
	return io_run(&op, timeout_ns, cancel);
}

EXPORT ssize_t canal_io_recv(int fd, void *buf, size_t len, int flags,
			     int64_t timeout_ns, struct canal_cond *cancel)
{
	struct canal__io op = {.kind = IO_RECV, .fd = fd, .buf = buf,
			       .len = len, .flags = flags};
	return io_run(&op, timeout_ns, cancel);
}

ssize_t canal__io_recv_stream(int fd, void *buf, size_t len,
			     int64_t timeout_ns, struct canal_cond *cancel,
			     bool *conn_timedout)
{
	struct canal__io op = {.kind = IO_RECV, .fd = fd, .buf = buf,
			       .len = len};
	ssize_t r = io_run(&op, timeout_ns, cancel);
	/* io_run_until says -ETIMEDOUT for its timeout only when the op
	 * ended -ECANCELED (or did not start: timeout 0, result untouched);
	 * an op that ended -ETIMEDOUT, by its completion or its try, is the
	 * socket's. */
	*conn_timedout = r == -ETIMEDOUT && op.result == -ETIMEDOUT;
	return r;
}

EXPORT ssize_t canal_io_send(int fd, const void *buf, size_t len, int flags,
			     int64_t timeout_ns, struct canal_cond *cancel)
{
	struct canal__io op = {.kind = IO_SEND, .fd = fd, .buf = (void *)buf,
			       .len = len, .flags = flags | MSG_NOSIGNAL};
	return io_run(&op, timeout_ns, cancel);
}

EXPORT int canal_io_accept(int fd, struct sockaddr *addr, socklen_t *addrlen,
			   int flags, int64_t timeout_ns,
			   struct canal_cond *cancel)
{
	/* accept4(2)'s first check, before it looks at the listener; made
	 * here, whatever the backend: the epoll backend, and a call outside
	 * a task (poll(2) first), waited for a connection before accept4
	 * said it, io_uring refused at once (a hostile review). */
	if (flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK))
		return -EINVAL;
	struct canal__io op = {.kind = IO_ACCEPT, .fd = fd, .addr = addr,
			       .addrlenp = addrlen, .flags = flags};
	return io_run(&op, timeout_ns, cancel);
}

EXPORT int canal_io_connect(int fd, const struct sockaddr *addr,
			    socklen_t addrlen, int64_t timeout_ns,
			    struct canal_cond *cancel)
{
	struct canal__io op = {.kind = IO_CONNECT, .fd = fd,
			       .addr = (struct sockaddr *)addr,
			       .addrlen = addrlen};
	return io_run(&op, timeout_ns, cancel);
}

EXPORT int canal_io_close(int fd)
{
	struct canal__io op = {.kind = IO_CLOSE, .fd = fd};
#ifdef CANAL_TSAN
	/* TSan keeps a model of file descriptors fed by its interceptors;
	 * a close done by io_uring is invisible to it, and the descriptor's
	 * next owner (a socket accepted by another task) then races, in its
	 * eyes, with the last use of the file it was. Under TSan the close
	 * is the close(2) it sees (close(2) does not block). */
	return io_blocking(&op, -1);
#else
	return io_run(&op, -1, NULL);
#endif
}

/* canal_io_poll's pauses while io_uring reports an unasked POLLRDHUP. */
#define POLL_RDHUP_PAUSE_MIN_NS 1000000u
#define POLL_RDHUP_PAUSE_MAX_NS 32000000u

/* The events canal_io_poll may be asked for (task.h). */
#define IO_POLL_ASKABLE (POLLIN | POLLPRI | POLLOUT | POLLRDHUP)

int canal__io_poll_result(short revents)
{
	/* POLLNVAL: fd is not open (poll(2) says it in revents, io_uring's
	 * poll and epoll_ctl say -EBADF). */
	return (revents & POLLNVAL) ? -EBADF : (int)(uint16_t)revents;
}

EXPORT int canal_io_poll(int fd, short events, int64_t timeout_ns,
			 struct canal_cond *cancel)
{
	/* poll(2) skips a negative fd and would wait out the timeout. */
	if (fd < 0)
		return -EBADF;
	/* POLLERR and POLLHUP are always reported and may be asked for
	 * (poll(2) ignores them in events); something else must be. */
	if ((events & ~(IO_POLL_ASKABLE | POLLERR | POLLHUP)) ||
	    !(events & IO_POLL_ASKABLE))
		return -EINVAL;
	int asked = events & IO_POLL_ASKABLE;
	uint64_t deadline = canal__deadline_from_timeout(timeout_ns);
	for (uint64_t pause = POLL_RDHUP_PAUSE_MIN_NS;;) {
		struct canal__io op = {.kind = IO_POLL, .fd = fd,
				       .flags = asked};
		int r = io_run_until(&op, timeout_ns, deadline, cancel);
		if (r <= 0)
			return r;
		/* io_uring's poll waits for POLLRDHUP whether asked or
		 * not (the kernel adds it to every poll, as ERR and HUP)
		 * and reports it: the answer is poll(2)'s on every path. */
		int got = r & (asked | POLLERR | POLLHUP);
		if (got)
			return got;
		/* Only that: the peer shut its side down, and what was
		 * asked (POLLOUT, POLLPRI) is not there. The backend waits
		 * on through pauses itself (backend_uring.c, poll_again:
		 * one wait, one registration on the condvar); it returns
		 * this only when it had no SQE for a pause. A poll now
		 * would complete at once again: look again after pauses
		 * (1 ms, doubling to 32 ms) until the deadline or the
		 * condvar (a signal between two of these waits is lost). */
		uint64_t now = canal_now_ns();
		if (timeout_ns == 0 || now >= deadline)
			return -ETIMEDOUT;
		uint64_t d = deadline - now < pause ? deadline - now : pause;
		if (cancel) {
			if (canal_cond_wait(cancel, (int64_t)d) == 0)
				return -ECANCELED;
		} else {
			canal_sleep_ns(d);
		}
		if (pause < POLL_RDHUP_PAUSE_MAX_NS)
			pause *= 2;
	}
}

EXPORT int canal_io_submit(const struct io_uring_sqe *sqe, int64_t timeout_ns,
			   struct canal_cond *cancel)
{
	if (!sqe)
		return -EINVAL;
	struct canal__io op = {.kind = IO_SQE, .fd = -1, .sqe = sqe};
	return io_run(&op, timeout_ns, cancel);
}

/*
 * A chain (canal_io_submit_link; a batch, canal_io_submit_batch: the
 * same, with the caller's links): io_run_until's steps 2-5 for n
 * operations, parked once. Completions are dispatched by this loop's
 * thread between tasks, so chain.left and the ops' done flags are stable
 * while the task runs; only the last completion wakes it (io.h). Once the
 * timeout or the condvar won the wake, every incomplete operation is sent
 * an ASYNC_CANCEL, again every millisecond while any is left: a cancel
 * can miss an operation that its predecessor was just handing over to
 * (not started yet when the cancel looked, started after), and a chain
 * member must not outlive its task's stack.
 */
static int submit_chain(const struct io_uring_sqe *sqes, unsigned n,
			bool as_given, int32_t *res, int64_t timeout_ns,
			struct canal_cond *cancel)
{
	if (!sqes || !res || n == 0 || n > CANAL_IO_LINK_MAX)
		return -EINVAL;
	struct canal__task *t = canal__this_task();
	if (!t || t->detached)
		return -EPERM;
	return canal__io_link_run(sqes, n, as_given, res, NULL, NULL,
				  timeout_ns,
				  canal__deadline_from_timeout(timeout_ns),
				  cancel);
}

EXPORT int canal_io_submit_link(const struct io_uring_sqe *sqes, unsigned n,
				int32_t *res, int64_t timeout_ns,
				struct canal_cond *cancel)
{
	return submit_chain(sqes, n, false, res, timeout_ns, cancel);
}

EXPORT int canal_io_submit_batch(const struct io_uring_sqe *sqes, unsigned n,
				 int32_t *res, int64_t timeout_ns,
				 struct canal_cond *cancel)
{
	return submit_chain(sqes, n, true, res, timeout_ns, cancel);
}

int canal__io_link_run(const struct io_uring_sqe *sqes, unsigned n,
		       bool as_given, int32_t *res,
		       struct canal_io_rstream *then, bool *taken,
		       int64_t timeout_ns, uint64_t deadline,
		       struct canal_cond *cancel)
{
	struct canal__task *t = canal__this_task();
	struct canal__loop *l = canal__this_loop();
	struct canal__runtime *rt = l->rt;
	if (!rt->backend->submit_link)
		return -EOPNOTSUPP;
	int r = rt->backend->link_check(sqes, n, as_given);
	if (r < 0)
		return r;
	if (timeout_ns == 0)
		return -ETIMEDOUT; /* nothing started, res untouched */
	struct canal__io_chain chain = {.task = t, .left = n, .n = n,
					.then = then};
	canal__task_arm(t);
	r = rt->backend->submit_link(l, &chain, sqes, n, as_given);
	if (r < 0) {
		canal__task_disarm(t);
		return r;
	}
	if (then)
		then->wchain = &chain;
	t->pinned++;
	l->inflight += n;
	/*
	 * Where input is waited for after the chain (canal_io_submit_link_recv
	 * whose stream's input does not come through this park: a receive per
	 * call, a starved stream, held bytes), the caller waits again,
	 * registered anew, once the chain is done. A plain registration whose
	 * wake the chain's last completion had won (the task queued, not run
	 * yet) was skipped by a signal then, which returned 0 and was lost:
	 * the receive after it waited on, to its timeout or for ever
	 * (test_revrs_link_recv_signal). A kept one (canal__io_park_kept) is
	 * taken by it: the caller learns it (*taken) and ends the call
	 * -ECANCELED unless it ends now anyway (a signal that meets a call
	 * finishing is used up on it, task.h).
	 */
	uint32_t why = taken ? canal__io_park_kept(t, deadline, cancel, taken)
			     : canal__io_park_cancellable(t, deadline, cancel);
	/* Whatever woke the task, its wait for input ends here: bytes that
	 * come from now on are kept by the stream, and the chain's last
	 * completion, if still to come, wakes the task itself. */
	chain.then = NULL;
	if (then) {
		then->waiting = false;
		then->wchain = NULL;
	}
	while (chain.left > 0) {
		for (unsigned i = 0; i < n; i++)
			if (!(chain.done & (1u << i)))
				rt->backend->cancel_member(l, &chain, i);
		if (chain.left == 0)
			break;
		canal__task_arm(t);
		canal__task_park(t, canal_now_ns() + 1000000);
	}
	t->pinned--;
	if (why != WAKE_WOKEN)
		for (unsigned i = 0; i < n; i++)
			if (interrupted(chain.res[i]))
				chain.res[i] = -ECANCELED;
	memcpy(res, chain.res, n * sizeof(*res));
	/* The timeout or the condvar came before the last completion (or,
	 * with then, before input). */
	if (why == WAKE_TIMEDOUT)
		return -ETIMEDOUT;
	if (why == WAKE_CANCELED)
		return -ECANCELED;
	return 0;
}

/* Kernels without IORING_OP_FUTEX_WAIT (before 6.7) answer -EINVAL once;
 * then shared words are polled (park.c). */
static _Atomic int futex_wait_unsupported;

int canal__io_futex_wait(_Atomic uint32_t *word, uint32_t key,
			 uint64_t deadline_ns)
{
	struct canal__loop *l = canal__this_loop();
	if (!l || l->rt->backend != &canal__backend_uring ||
	    atomic_load_explicit(&futex_wait_unsupported,
				 memory_order_relaxed))
		return -EOPNOTSUPP;
	uint64_t now = canal_now_ns();
	if (deadline_ns != CANAL_NO_DEADLINE && now >= deadline_ns)
		return -ETIMEDOUT;
	struct canal__io op = {.kind = IO_FUTEX_WAIT, .fd = -1,
			       .buf = (void *)word, .len = key};
	int r = io_run_until(&op, deadline_ns == CANAL_NO_DEADLINE ? -1 : 1,
			     deadline_ns, NULL);
	if (r == -EINVAL || r == -EOPNOTSUPP) {
		atomic_store_explicit(&futex_wait_unsupported, 1,
				      memory_order_relaxed);
		return -EOPNOTSUPP;
	}
	return r == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

static _Atomic int futex_waitv_unsupported;

/* futex2 flags (linux/futex.h of 6.7; the same values as futex_waitv(2)'s
 * FUTEX_32 and FUTEX_PRIVATE_FLAG). */
#define CANAL_FUTEX2_SIZE_U32 0x02u
#define CANAL_FUTEX2_PRIVATE 128u

int canal__io_futex_waitv(_Atomic uint32_t *const *words,
			  const uint32_t *keys, const bool *shared,
			  unsigned n, uint64_t deadline_ns)
{
	if (n == 1)
		return canal__io_futex_wait(words[0], keys[0], deadline_ns);
	struct canal__loop *l = canal__this_loop();
	if (!l || l->rt->backend != &canal__backend_uring || n == 0 ||
	    n > CANAL__WAIT_MANY_MAX ||
	    atomic_load_explicit(&futex_waitv_unsupported,
				 memory_order_relaxed))
		return -EOPNOTSUPP;
	if (deadline_ns != CANAL_NO_DEADLINE && canal_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	/* On this task's stack until the completion (io_run waits for it). */
	struct futex_waitv wv[n];
	for (unsigned i = 0; i < n; i++) {
		wv[i].val = keys[i];
		wv[i].uaddr = (uint64_t)(uintptr_t)words[i];
		/* A private word's waker calls FUTEX_WAKE with
		 * FUTEX_PRIVATE_FLAG (after the local waker, which finds no
		 * node of ours): FUTEX2_PRIVATE matches it. */
		wv[i].flags = CANAL_FUTEX2_SIZE_U32 |
			      (shared[i] ? 0 : CANAL_FUTEX2_PRIVATE);
		wv[i].__reserved = 0;
	}
	struct canal__io op = {.kind = IO_FUTEX_WAITV, .fd = -1, .buf = wv,
			       .len = n};
	int r = io_run_until(&op, deadline_ns == CANAL_NO_DEADLINE ? -1 : 1,
			     deadline_ns, NULL);
	if (r == -EINVAL || r == -EOPNOTSUPP) {
		atomic_store_explicit(&futex_waitv_unsupported, 1,
				      memory_order_relaxed);
		return -EOPNOTSUPP;
	}
	return r == -ETIMEDOUT ? -ETIMEDOUT : 0;
}
