/* SPDX-License-Identifier: MIT */
/*
 * backend_epoll.c - the readiness backend, for kernels or containers
 * without io_uring (or CANAL_BACKEND=epoll).
 *
 * Waking: an eventfd in the epoll set (level-triggered: drained after each
 * wake). I/O: an operation registers its fd once (EPOLLONESHOT, the event
 * it needs, data = the op); when ready, the loop tries the call without
 * blocking and completes the op, or re-arms on EAGAIN. One waiting
 * operation per fd at a time on this backend (a second gets -EBUSY).
 * The generic primitive (a prepared SQE) is not expressible as readiness:
 * -EOPNOTSUPP.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/backend.h"
#include "runtime/io.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct epoll_backend {
	int epfd;
	int evfd;
};

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
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
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
	free(b);
	l->backend = NULL;
}

static void ep_ready(struct canal__loop *l, struct canal__io *op)
{
	struct epoll_backend *b = l->backend;
	int r = canal__io_try(op, true);
	if (r == -EAGAIN) {
		struct epoll_event ev = {.events = op->events | EPOLLONESHOT,
					 .data.ptr = op};
		if (epoll_ctl(b->epfd, EPOLL_CTL_MOD, op->fd, &ev) == 0)
			return;
		r = -errno;
	}
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, op->fd, NULL);
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
		struct canal__io *op = evs[i].data.ptr;
		if (!op) {
			uint64_t v;
			if (read(b->evfd, &v, sizeof(v)) < 0)
				continue;
			continue;
		}
		ep_ready(l, op);
	}
}

static void ep_wake(struct canal__loop *l)
{
	struct epoll_backend *b = l->backend;
	uint64_t one = 1;
	if (write(b->evfd, &one, sizeof(one)) < 0)
		return; /* EAGAIN: the counter is full, a wake is pending */
}

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
	default:
		return 0;
	}
}

static int ep_submit(struct canal__loop *l, struct canal__io *op)
{
	struct epoll_backend *b = l->backend;
	if (op->kind == IO_SQE)
		return -EOPNOTSUPP;
	if (op->kind == IO_CLOSE) {
		canal__io_complete(op, close(op->fd) == 0 ? 0 : -errno);
		return 0;
	}
	if (op->kind == IO_CONNECT) {
		/* Start it without blocking (the fd's own mode is put back
		 * at once), then wait for writability; SO_ERROR says how it
		 * ended (canal__io_try). */
		int fl = fcntl(op->fd, F_GETFL);
		if (fl < 0)
			return -errno;
		if (!(fl & O_NONBLOCK))
			fcntl(op->fd, F_SETFL, fl | O_NONBLOCK);
		int r = connect(op->fd, op->addr, op->addrlen) == 0 ? 0
								    : -errno;
		if (!(fl & O_NONBLOCK))
			fcntl(op->fd, F_SETFL, fl);
		if (r != -EINPROGRESS) {
			canal__io_complete(op, r);
			return 0;
		}
	}
	op->events = events_of(op);
	struct epoll_event ev = {.events = op->events | EPOLLONESHOT,
				 .data.ptr = op};
	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, op->fd, &ev) != 0)
		return errno == EEXIST ? -EBUSY : -errno;
	return 0;
}

static void ep_cancel(struct canal__loop *l, struct canal__io *op)
{
	struct epoll_backend *b = l->backend;
	if (op->done)
		return;
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, op->fd, NULL);
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
