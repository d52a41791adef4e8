/* SPDX-License-Identifier: MIT */
/*
 * backend_epoll.c - the readiness backend, for kernels or containers
 * without io_uring (or CANAL_BACKEND=epoll).
 *
 * Waking: an eventfd in the epoll set (level-triggered: drained after each
 * wake). I/O: a table indexed by fd holds, per fd, the operation waiting
 * to read (accept, recv, read...) and the one waiting to write (send,
 * connect...); the fd is in the epoll set, level-triggered, with exactly
 * the events its waiting operations need (EPOLL_CTL_ADD/MOD/DEL as they
 * come and go). When ready, the loop tries the call without blocking and
 * completes the op, or keeps waiting on EAGAIN. So one reader and one
 * writer may wait on an fd at once per loop (a full-duplex socket); a
 * second reader (or writer) gets -EBUSY. The table and the set are
 * touched only by the loop's thread. The generic primitive (a prepared
 * SQE) is not expressible as readiness: -EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/backend.h"
#include "runtime/io.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct fd_waiters {
	struct canal__io *rd, *wr;
	uint32_t events; /* registered in the set (0: not in it) */
};

struct epoll_backend {
	int epfd;
	int evfd;
	struct fd_waiters *fds; /* indexed by fd */
	size_t nfds;
};

#define EVFD_TAG UINT64_MAX /* epoll data of the eventfd */

static int ep_init(struct canal__loop *l)
{
	struct epoll_backend *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (b->epfd < 0) {
		int e = -errno;
		free(b);
		return e;
	}
	b->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->evfd < 0) {
		int e = -errno;
		close(b->epfd);
		free(b);
		return e;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EVFD_TAG};
	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->evfd, &ev) != 0) {
		int e = -errno;
		close(b->evfd);
		close(b->epfd);
		free(b);
		return e;
	}
	l->backend = b;
	return 0;
}

static void ep_fini(struct canal__loop *l)
{
	struct epoll_backend *b = l->backend;
	if (!b)
		return;
	close(b->evfd);
	close(b->epfd);
	free(b->fds);
	free(b);
	l->backend = NULL;
}

/* Make the set's events for fd what its waiters need: 0 or -errno. */
static int fd_sync(struct epoll_backend *b, int fd)
{
	struct fd_waiters *w = &b->fds[fd];
	uint32_t want = (w->rd ? w->rd->events : 0) |
			(w->wr ? w->wr->events : 0);
	if (want == w->events)
		return 0;
	struct epoll_event ev = {.events = want, .data.u64 = (uint64_t)fd};
	int op = !w->events ? EPOLL_CTL_ADD
			    : (want ? EPOLL_CTL_MOD : EPOLL_CTL_DEL);
	if (epoll_ctl(b->epfd, op, fd, &ev) != 0)
		return -errno;
	w->events = want;
	return 0;
}

/* The slots op waits in: the reader's for input events, the writer's
 * for output; a poll for both (canal_io_poll) holds both. */
#define EP_READ_EVENTS (EPOLLIN | EPOLLPRI | EPOLLRDHUP)
static bool is_reader(const struct canal__io *op)
{
	return (op->events & EP_READ_EVENTS) != 0;
}

static bool is_writer(const struct canal__io *op)
{
	return (op->events & EPOLLOUT) != 0;
}

/* Take op out of its slots (the set is not touched). */
static void slots_clear(struct fd_waiters *w, const struct canal__io *op)
{
	if (w->rd == op)
		w->rd = NULL;
	if (w->wr == op)
		w->wr = NULL;
}

/* Take op off its fd's table entry (and the set). */
static void fd_remove(struct epoll_backend *b, struct canal__io *op)
{
	struct fd_waiters *w = &b->fds[op->fd];
	slots_clear(w, op);
	if (fd_sync(b, op->fd) != 0) {
		/* The fd was closed under us: it left the set by itself. */
		w->events = 0;
	}
}

/*
 * The waiters of fd's entry end with res, and the entry is emptied. A file
 * leaves every epoll set by itself when its last descriptor closes, and
 * the table would not know: the file that next gets the number inherited
 * the entry, and its operations failed (-EBUSY for the slot, -ENOENT from
 * EPOLL_CTL_MOD) while the old waiters waited on a file that was gone (a
 * hostile review). Called when canal_io_close closes fd on this loop (the
 * entry leaves the set first: a dup of fd would keep the registration),
 * and when the set says that the entry's registration is gone (ENOENT).
 * Waiters are tasks of this loop (pinned while they wait), woken from its
 * thread, as ep_ready does.
 */
static void fd_flush(struct epoll_backend *b, int fd, int32_t res)
{
	if (fd < 0 || (size_t)fd >= b->nfds)
		return;
	struct fd_waiters *w = &b->fds[fd];
	struct canal__io *rd = w->rd, *wr = w->wr;
	if (w->events)
		(void)epoll_ctl(b->epfd, EPOLL_CTL_DEL, fd, NULL);
	w->rd = w->wr = NULL;
	w->events = 0;
	if (rd)
		canal__io_complete(rd, res);
	if (wr && wr != rd) /* (a poll for both: one completion) */
		canal__io_complete(wr, res);
}

/* Is fd's entry still registered in the set (or did its file go)? One
 * system call: asked only when the entry is in the way. */
static bool fd_registered(struct epoll_backend *b, int fd)
{
	struct epoll_event ev = {.events = b->fds[fd].events,
				 .data.u64 = (uint64_t)fd};
	return epoll_ctl(b->epfd, EPOLL_CTL_MOD, fd, &ev) == 0 ||
	       errno != ENOENT;
}

/* op's fd was reported with events e (level-triggered: true now). */
static void ep_ready(struct canal__loop *l, struct canal__io *op, uint32_t e)
{
	if (op->kind == IO_POLL) {
		/* The report is the answer (no second look, poll(2)): the
		 * events asked for that are there, and the two always
		 * reported. (EPOLL* and POLL* have the same values.) */
		uint32_t got = e & (op->events | EPOLLERR | EPOLLHUP);
		if (!got)
			return; /* the other slot's events: not ours */
		fd_remove(l->backend, op);
		canal__io_complete(op, (int32_t)got);
		return;
	}
	int r = canal__io_try(op, true);
	if (r == -EAGAIN)
		return; /* spurious: level-triggered, we will hear again */
	fd_remove(l->backend, op);
	canal__io_complete(op, r);
}

static void ep_poll(struct canal__loop *l, uint64_t deadline_ns)
{
	struct epoll_backend *b = l->backend;
	struct epoll_event evs[64];
	struct timespec ts, *tsp = NULL;
	if (deadline_ns != CANAL_NO_DEADLINE) {
		uint64_t now = canal_now_ns();
		uint64_t d = deadline_ns > now ? deadline_ns - now : 0;
		ts.tv_sec = (time_t)(d / 1000000000u);
		ts.tv_nsec = (long)(d % 1000000000u);
		tsp = &ts;
	}
	int n = epoll_pwait2(b->epfd, evs, 64, tsp, NULL);
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == EVFD_TAG) {
			uint64_t v;
			if (read(b->evfd, &v, sizeof(v)) < 0)
				continue;
			continue;
		}
		int fd = (int)evs[i].data.u64;
		uint32_t e = evs[i].events;
		bool err = (e & (EPOLLERR | EPOLLHUP)) != 0;
		/* Each completion may change the entry: re-read it. */
		if ((e & EP_READ_EVENTS || err) && b->fds[fd].rd)
			ep_ready(l, b->fds[fd].rd, e);
		if ((e & EPOLLOUT || err) && b->fds[fd].wr)
			ep_ready(l, b->fds[fd].wr, e);
	}
}

static void ep_wake(struct canal__loop *l)
{
	struct epoll_backend *b = l->backend;
	uint64_t one = 1;
	if (write(b->evfd, &one, sizeof(one)) < 0)
		return; /* EAGAIN: the counter is full, a wake is pending */
}

_Static_assert(POLLIN == EPOLLIN && POLLPRI == EPOLLPRI &&
		       POLLOUT == EPOLLOUT && POLLRDHUP == EPOLLRDHUP &&
		       POLLERR == EPOLLERR && POLLHUP == EPOLLHUP,
	       "poll(2) and epoll events have the same values");

static uint32_t events_of(const struct canal__io *op)
{
	switch (op->kind) {
	case IO_READ:
	case IO_READV:
	case IO_RECV:
	case IO_ACCEPT:
		return EPOLLIN | EPOLLRDHUP;
	case IO_WRITE:
	case IO_WRITEV:
	case IO_SEND:
	case IO_CONNECT:
		return EPOLLOUT;
	case IO_POLL:
		return (uint32_t)op->flags; /* POLL* as EPOLL* (below) */
	default:
		return 0;
	}
}

/* fd is a listening socket. accept4 on anything else (no socket, a
 * socket that does not listen) fails at once without waiting, while the
 * readiness it would wait for may never come (a pipe nobody writes, a
 * quiet connected socket): the wait was for ever where accept(2) and
 * io_uring say -ENOTSOCK, -EINVAL or -EOPNOTSUPP at once. */
static bool listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);
	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 &&
	       on != 0;
}

/*
 * op's fd cannot be watched (no memory for the table below or the
 * kernel's registration, or the user's limit of watches): -ENOMEM, task.h
 * (test_revepoll_watch_limit), for an operation that must wait. One that
 * need not (its bytes, room or connection already there) is made now,
 * without blocking, as for an epoll file above: io.c's input operations
 * skip their own try after one that would have blocked (the adaptive
 * shortcut, whose "outcome is the same either way", task.h), and
 * CANAL_RUN_NO_SYNC_SHORTCUT makes none, so without this look a ready
 * operation said -ENOMEM, again at every later call: a receive stream
 * whose socket could not be watched never gave its bytes nor its end of
 * input (test_revrt2_rstream_enomem: -ENOMEM after "ab" came and after
 * the peer's shutdown). Not a connect: its try (SO_ERROR) tells how a
 * connect that ended went, and says 0 for one still under way.
 */
static int unwatchable(struct canal__io *op)
{
	if (op->kind != IO_CONNECT) {
		int res = canal__io_try(op, true);
		if (res != -EAGAIN) {
			canal__io_complete(op, res);
			return 0;
		}
	}
	return -ENOMEM;
}

static int ep_submit(struct canal__loop *l, struct canal__io *op)
{
	struct epoll_backend *b = l->backend;
	if (op->kind == IO_SQE)
		return -EOPNOTSUPP;
	if (op->kind == IO_CLOSE) {
		fd_flush(b, op->fd, -EBADF);
		canal__io_complete(op, close(op->fd) == 0 ? 0 : -errno);
		return 0;
	}
	if (op->kind == IO_CONNECT) {
		/* Start it without blocking (the fd's own mode is put back
		 * at once), then wait for writability; SO_ERROR says how it
		 * ended (canal__io_try). */
		bool blocking;
		int r = canal__io_connect_start(op, &blocking);
		/* A Unix socket's connect to a listener whose backlog is
		 * full: blocking, connect(2) would wait for room, which no
		 * readiness of the socket tells: io.c starts it again. */
		if (r == -EAGAIN && blocking)
			return -EAGAIN;
		if (r != -EINPROGRESS) {
			canal__io_complete(op, r);
			return 0;
		}
	}
	if (op->kind == IO_ACCEPT && !listening(op->fd)) {
		/* The call's own error, at once (made non-blocking for it,
		 * as for a listener reported ready: it cannot wait). */
		canal__io_complete(op, canal__io_try(op, true));
		return 0;
	}
	op->events = events_of(op);
	if (op->fd < 0)
		return -EBADF;
	if ((size_t)op->fd >= b->nfds) {
		size_t n = b->nfds ? b->nfds : 64;
		while (n <= (size_t)op->fd)
			n *= 2;
		struct fd_waiters *f = realloc(b->fds, n * sizeof(*f));
		if (!f)
			return unwatchable(op);
		memset(f + b->nfds, 0, (n - b->nfds) * sizeof(*f));
		b->fds = f;
		b->nfds = n;
	}
	struct fd_waiters *w = &b->fds[op->fd];
	bool rd = is_reader(op), wr = is_writer(op);
	bool taken = (rd && w->rd) || (wr && w->wr);
	if (taken && w->events && !fd_registered(b, op->fd))
		fd_flush(b, op->fd, -EBADF); /* its file is gone */
	if ((rd && w->rd) || (wr && w->wr))
		return -EBUSY;
	if (rd)
		w->rd = op;
	if (wr)
		w->wr = op;
	int r = fd_sync(b, op->fd);
	if (r == -ENOENT && w->events) {
		/* The other direction's waiter is on a file that is gone
		 * (EPOLL_CTL_MOD found no registration): it ends, ours is
		 * registered afresh. */
		slots_clear(w, op);
		fd_flush(b, op->fd, -EBADF);
		if (rd)
			w->rd = op;
		if (wr)
			w->wr = op;
		r = fd_sync(b, op->fd);
	}
	if (r) {
		slots_clear(w, op);
		if (fd_sync(b, op->fd) != 0)
			w->events = 0;
		/* An epoll file: ELOOP (its set holds this loop's, or nests
		 * too deep), EINVAL (this loop's set itself). Not the
		 * operation's errors: an epoll file has no read, write or
		 * socket side, so the call fails at once without waiting
		 * (read(2): EINVAL, recv(2): ENOTSOCK), and that is its
		 * answer, as io_uring's for recv and send
		 * (test_errmap_epoll_ctl). */
		if (r == -ELOOP || r == -EINVAL) {
			int res = canal__io_try(op, true);
			if (res != -EAGAIN) {
				canal__io_complete(op, res);
				return 0;
			}
		}
		/* The fd cannot be watched: no memory (the kernel's) or the
		 * user's limit of watches reached (max_user_watches: ENOSPC,
		 * which a write would pass for a full device): unwatchable().
		 * EPERM (not pollable) is io.c's to handle. */
		if (r == -ENOSPC || r == -ENOMEM)
			return unwatchable(op);
		return r;
	}
	return 0;
}

static void ep_cancel(struct canal__loop *l, struct canal__io *op)
{
	struct epoll_backend *b = l->backend;
	if (op->done)
		return;
	fd_remove(b, op);
	canal__io_complete(op, -ECANCELED);
}

const struct canal__backend_ops canal__backend_epoll = {
	.name = "epoll",
	.init = ep_init,
	.fini = ep_fini,
	.poll = ep_poll,
	.wake = ep_wake,
	.submit = ep_submit,
	.cancel = ep_cancel,
};
