/* SPDX-License-Identifier: MIT */
/*
 * rstream.c - receive streams (canal_io_rstream_*): one receive kept armed
 * on a socket for as long as its task keeps the stream open (io_uring's
 * multishot receive into the loop's provided buffers), where canal_io_recv
 * arms and disarms one receive per call.
 *
 * The structure and the invariants are in io.h (struct canal_io_rstream):
 * every field lives on the loop's thread, the task pinned there from open
 * to close; bytes go in arrival order to the waiting receive's buffer or
 * to the kept queue, and the end of input or an error is reported only
 * after every kept byte.
 *
 * The receive's life: armed at open (or at the first receive that finds
 * it not armed), it posts one CQE per arrival of bytes with
 * IORING_CQE_F_MORE, and a last CQE without it when it ends: end of input
 * (res 0), an error, -ENOBUFS (the loop's buffers ran out), -ECANCELED
 * (close). Only -ENOBUFS and a last CQE carrying bytes (the kernel may end
 * a multishot receive for its own reasons) leave the stream open for
 * more: the next receive arms it again, or, while the loop's buffers are
 * short, makes one plain receive (canal_io_recv). Close cancels the
 * receive and waits for that last CQE before the structure goes away: no
 * CQE ever names freed memory.
 *
 * Unix-domain sockets never get the multishot receive: on them Linux's
 * multishot receive can miss the end of input (a peer's shutdown or close
 * after its last bytes: the receive stays armed, no last CQE comes, the
 * task waits for ever; reported upstream as liburing issue 1549, a kernel
 * race, still here on 6.18.44: test_task_rstream's part G hung 2 times in
 * about 40 runs under load, every hung stream at the end of its input
 * with the socket saying so). They take a receive per call (fallback), as
 * on the epoll backend.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/backend.h"
#include "runtime/io.h"
#include "base/clock.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* The CQE side (loop thread, between tasks)                           */
/* ------------------------------------------------------------------ */

/* Keep n bytes of provided buffer bid at data: 0, or -ENOMEM (the bytes
 * are then lost: the stream ends with -ENOMEM, io.h). */
static int hold(struct canal_io_rstream *s, char *data, uint32_t n,
		unsigned bid)
{
	if (s->hcount == s->hcap) {
		uint32_t cap = s->hcap ? 2 * s->hcap : 4;
		struct canal__rs_held *h = malloc(cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		for (uint32_t i = 0; i < s->hcount; i++)
			h[i] = s->held[(s->hhead + i) % s->hcap];
		free(s->held);
		s->held = h;
		s->hhead = 0;
		s->hcap = cap;
	}
	s->held[(s->hhead + s->hcount) % s->hcap] =
		(struct canal__rs_held){.data = data, .len = n,
					.bid = (uint16_t)bid};
	s->hcount++;
	return 0;
}

/* Errors that end one receive but not the stream (the next receive
 * tries again): no SQE or buffer now, interrupted, cut by a timeout or
 * cancel of ours, another reader waiting on the fd (epoll). -ETIMEDOUT is
 * also a socket's own error (a TCP connection that timed out:
 * TCP_USER_TIMEOUT, keepalive), which a socket reports once, its next
 * receive then saying 0: taken for ours, it turned a connection that
 * failed into the peer's clean end (a hostile review). So it is transient
 * only where it is known to be ours: never in a CQE of the multishot
 * receive (nothing of ours times it out), and in recv_plain only when
 * canal_io_recv's timeout gave it. */
static bool transient(int32_t r)
{
	return r == -EAGAIN || r == -EINTR || r == -ETIMEDOUT ||
	       r == -ECANCELED || r == -EBUSY || r == -ENOBUFS || r == -ENOMEM;
}

/* Does the stream have news for a waiting receive: bytes, or an end? */
static bool has_news(const struct canal_io_rstream *s)
{
	return s->wgot > 0 || s->eof || s->err || !s->armed;
}

bool canal__io_rstream_quiet(const struct canal_io_rstream *s,
			     const struct canal__io_chain *ch)
{
	for (unsigned i = 0; i < ch->n; i++)
		if (ch->res[i] < 0)
			return false; /* a failed member: no input waited */
	return s->waiting && !has_news(s);
}

/* Bytes lost (no memory to keep them): the stream is over; its receive
 * is cancelled (its later bytes would be thrown away). */
static void lost(struct canal__loop *l, struct canal_io_rstream *s)
{
	if (!s->err)
		s->err = -ENOMEM;
	if (s->armed && !s->capped)
		s->capped = l->rt->backend->rstream_cancel(l, s);
}

/*
 * A CQE of the receive, not its last, after its cap (or lost bytes) asked
 * for its end: the cancel is sent again at each such CQE. The one sent
 * may not have reached the receive yet, or may have found nothing, as an
 * ASYNC_CANCEL can while the kernel moves a request between its states
 * (io.c, test_revrt_cancel_resend): sent once, the receive stayed armed
 * and the stream kept every later byte past its cap, holding the loop's
 * shared buffers (test_revrt_rstream_cap_resend). One not sent (no SQE
 * free) is tried at the next CQE as well. A cancel sent here goes in
 * right after the reap (backend_uring.c), before any later arming of the
 * stream: a stale one finds nothing.
 */
static void resend_cancel(struct canal__loop *l, struct canal_io_rstream *s)
{
	if (l->rt->backend->rstream_cancel(l, s))
		s->capped = true;
}

void canal__io_rstream_cqe(struct canal__loop *l, struct canal_io_rstream *s,
			   int32_t res, uint32_t flags, char *data,
			   unsigned bid)
{
	if (!(flags & IORING_CQE_F_MORE)) {
		s->armed = false;
		s->capped = false;
		l->inflight--;
		if (res == 0) {
			s->eof = true;
		} else if (res == -ENOBUFS) {
			s->starved = !s->fed;
		} else if (res == -EINVAL && !s->ever && !data) {
			/* A kernel with buffer rings but no multishot
			 * receive refuses it: a receive per call. */
			s->fallback = true;
		} else if (res < 0 && (res == -ETIMEDOUT || !transient(res)) &&
			   !s->err) {
			s->err = res; /* (-ETIMEDOUT: the socket's, transient) */
		}
	}
	if (data && (s->err || s->closing)) {
		/* After bytes were lost (-ENOMEM) nothing more may be given
		 * (it would skip them); in close, nothing is read any more. */
		l->rt->backend->buf_put(l, bid);
		data = NULL;
		if (s->err && s->armed)
			resend_cancel(l, s);
	}
	if (data) {
		uint32_t n = res > 0 ? (uint32_t)res : 0, off = 0;
		s->fed = s->ever = true;
		if (s->waiting && s->hcount == 0 && s->wgot < s->wlen) {
			off = n < s->wlen - s->wgot ? n : (uint32_t)(s->wlen - s->wgot);
			memcpy(s->wbuf + s->wgot, data, off);
			s->wgot += off;
		}
		if (off < n && hold(s, data + off, n - off, bid) == 0)
			data = NULL; /* kept: given back once read */
		else if (off < n)
			lost(l, s);
		if (data)
			l->rt->backend->buf_put(l, bid);
		if (s->hcount >= CANAL__RS_HOLD_MAX && s->armed)
			/* Enough kept: the rest waits in the socket. */
			resend_cancel(l, s);
	}
	if (s->closing ? !s->armed
		       : s->waiting && has_news(s) &&
				 (!s->wchain || s->wchain->left == 0))
		canal__task_wake(s->task, WAKE_WOKEN);
}

/* ------------------------------------------------------------------ */
/* The task's side                                                     */
/* ------------------------------------------------------------------ */

/* The caller is the stream's task, on its loop: 0, or -EINVAL / -EPERM. */
static int check_owner(const struct canal_io_rstream *s)
{
	if (!s)
		return -EINVAL;
	return canal__this_task() == s->task ? 0 : -EPERM;
}

/* Arm s's receive if it is not: true if it is armed now (false: this
 * receive goes without it). Never blocks; the SQE goes in at the loop's
 * next pass. */
static bool arm(struct canal_io_rstream *s)
{
	if (s->armed)
		return true;
	if (s->fallback || s->eof || s->err)
		return false;
	if (s->starved) {
		/* Its last receive ran out of buffers before giving any
		 * byte: this one goes without (progress, whatever the other
		 * streams of the loop hold). */
		s->starved = false;
		return false;
	}
	struct canal__loop *l = s->loop;
	int r = l->rt->backend->rstream_arm(l, s);
	if (r == -EOPNOTSUPP)
		s->fallback = true;
	if (r < 0)
		return false;
	s->armed = true;
	s->fed = false;
	l->inflight++;
	return true;
}

/* Move kept bytes into buf[0..len): how many. */
static size_t take_held(struct canal_io_rstream *s, char *buf, size_t len)
{
	size_t got = 0;
	while (s->hcount > 0 && got < len) {
		struct canal__rs_held *h = &s->held[s->hhead];
		size_t n = h->len < len - got ? h->len : len - got;
		memcpy(buf + got, h->data, n);
		got += n;
		h->data += n;
		h->len -= (uint32_t)n;
		if (h->len == 0) {
			s->loop->rt->backend->buf_put(s->loop, h->bid);
			s->hhead = (s->hhead + 1) % s->hcap;
			s->hcount--;
		}
	}
	return got;
}

/* What the stream has for a receive now, without waiting: bytes (> 0),
 * 0 at the end of input, its error, or -EAGAIN (nothing yet). */
static ssize_t take_now(struct canal_io_rstream *s, void *buf, size_t len)
{
	size_t got = take_held(s, buf, len);
	if (got > 0)
		return (ssize_t)got;
	if (s->hcount > 0)
		return -EAGAIN; /* (len 0 is refused before) */
	if (s->err)
		return s->err;
	if (s->eof)
		return 0;
	return -EAGAIN;
}

/* fd is a Unix-domain socket (the top of this file: no multishot). */
static bool unix_socket(int fd)
{
	int domain = 0;
	socklen_t len = sizeof(domain);
	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
	       domain == AF_UNIX;
}

EXPORT int canal_io_rstream_open(int fd, struct canal_io_rstream **out)
{
	if (!out || fd < 0)
		return -EINVAL;
	struct canal__task *t = canal__this_task();
	if (!t || t->detached)
		return -EPERM;
	struct canal_io_rstream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	struct canal__loop *l = canal__this_loop();
	s->task = t;
	s->loop = l;
	s->fd = fd;
	s->fallback = !l->rt->backend->rstream_arm || unix_socket(fd);
	t->pinned++; /* on this loop until close (io.h) */
	t->rstreams++;
	arm(s);
	*out = s;
	return 0;
}

/* Wait in s (armed, nothing kept) for bytes into buf, until deadline or
 * cancel: the bytes (> 0), 0, the stream's error, -EAGAIN (the receive
 * ended without bytes: -ENOBUFS, the cap's cancel), -ETIMEDOUT or
 * -ECANCELED. After -EAGAIN the caller waits again: a signal of cancel
 * that came once that end had won the task's wake was skipped, lost, and
 * the next wait went on to its timeout or for ever
 * (test_revrs_rstream_cap_signal); the kept registration takes it, and
 * it is -ECANCELED here. */
static ssize_t wait_input(struct canal_io_rstream *s, void *buf, size_t len,
			  uint64_t deadline, struct canal_cond *cancel)
{
	struct canal__task *t = s->task;
	s->wbuf = buf;
	s->wlen = len;
	s->wgot = 0;
	s->wchain = NULL;
	canal__task_arm(t);
	s->waiting = true;
	bool taken;
	uint32_t why = canal__io_park_kept(t, deadline, cancel, &taken);
	s->waiting = false;
	if (s->wgot > 0)
		return (ssize_t)s->wgot; /* bytes came: they win any race */
	ssize_t r = take_now(s, buf, len);
	if (r != -EAGAIN)
		return r;
	if (why == WAKE_TIMEDOUT)
		return -ETIMEDOUT;
	if (why == WAKE_CANCELED || taken)
		return -ECANCELED;
	return -EAGAIN;
}

/* No receive kept armed: one plain receive, with what is left of the
 * timeout (none left: one try of the socket), whose end of input or
 * error the stream keeps, as its own receive's (reported again at every
 * later call). */
static ssize_t recv_plain(struct canal_io_rstream *s, void *buf, size_t len,
			  int64_t timeout_ns, uint64_t deadline,
			  struct canal_cond *cancel)
{
	int64_t left = timeout_ns < 0 ? -1 : 0;
	if (deadline != CANAL_NO_DEADLINE) {
		uint64_t now = canal_now_ns();
		left = now < deadline ? (int64_t)(deadline - now) : 0;
	}
	ssize_t r;
	bool conn_timedout = false; /* r's -ETIMEDOUT is the socket's */
	if (left == 0) {
		r = recv(s->fd, buf, len, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			r = -ETIMEDOUT;
		} else if (r < 0) {
			r = -errno;
			conn_timedout = r == -ETIMEDOUT;
		}
	} else {
		r = canal__io_recv_stream(s->fd, buf, len, left, cancel,
					  &conn_timedout);
	}
	if (r == 0)
		s->eof = true;
	else if (r < 0 && (conn_timedout || !transient((int32_t)r)))
		s->err = (int32_t)r;
	return r;
}

static ssize_t recv_until(struct canal_io_rstream *s, void *buf, size_t len,
			  int64_t timeout_ns, uint64_t deadline,
			  struct canal_cond *cancel)
{
	for (;;) {
		ssize_t r = take_now(s, buf, len);
		if (r != -EAGAIN)
			return r;
		if (!arm(s)) {
			if (s->err || s->eof)
				continue; /* (ended meanwhile: report it) */
			return recv_plain(s, buf, len, timeout_ns, deadline,
					  cancel);
		}
		if (timeout_ns == 0)
			return -ETIMEDOUT;
		r = wait_input(s, buf, len, deadline, cancel);
		if (r != -EAGAIN)
			return r;
		/* The receive ended without bytes (-ENOBUFS): again. */
	}
}

EXPORT ssize_t canal_io_rstream_recv(struct canal_io_rstream *s, void *buf,
				     size_t len, int64_t timeout_ns,
				     struct canal_cond *cancel)
{
	int r = check_owner(s);
	if (r < 0)
		return r;
	if (!buf || len == 0)
		return -EINVAL;
	uint64_t deadline = canal__deadline_from_timeout(timeout_ns);
	return recv_until(s, buf, len, timeout_ns, deadline, cancel);
}

static int chain_recv(const struct io_uring_sqe *sqes, unsigned n,
		      bool as_given, int32_t *res, struct canal_io_rstream *s,
		      void *buf, size_t len, ssize_t *got, int64_t timeout_ns,
		      struct canal_cond *cancel);

EXPORT int canal_io_submit_link_recv(const struct io_uring_sqe *sqes,
				     unsigned n, int32_t *res,
				     struct canal_io_rstream *s, void *buf,
				     size_t len, ssize_t *got,
				     int64_t timeout_ns,
				     struct canal_cond *cancel)
{
	return chain_recv(sqes, n, false, res, s, buf, len, got, timeout_ns,
			  cancel);
}

EXPORT int canal_io_submit_batch_recv(const struct io_uring_sqe *sqes,
				      unsigned n, int32_t *res,
				      struct canal_io_rstream *s, void *buf,
				      size_t len, ssize_t *got,
				      int64_t timeout_ns,
				      struct canal_cond *cancel)
{
	return chain_recv(sqes, n, true, res, s, buf, len, got, timeout_ns,
			  cancel);
}

static int chain_recv(const struct io_uring_sqe *sqes, unsigned n,
		      bool as_given, int32_t *res, struct canal_io_rstream *s,
		      void *buf, size_t len, ssize_t *got, int64_t timeout_ns,
		      struct canal_cond *cancel)
{
	if (!sqes || !res || n == 0 || n > CANAL_IO_LINK_MAX || !s || !buf ||
	    len == 0 || !got)
		return -EINVAL;
	int r = check_owner(s);
	if (r < 0)
		return r;
	uint64_t deadline = canal__deadline_from_timeout(timeout_ns);
	/* One suspension for the chain and the input when the input can
	 * only come through the armed receive (nothing kept, no end). */
	bool together = timeout_ns != 0 && s->hcount == 0 && !s->eof &&
			!s->err && !s->starved && arm(s);
	if (together) {
		s->wbuf = buf;
		s->wlen = len;
		s->wgot = 0;
		s->waiting = true;
	}
	bool taken = false;
	r = canal__io_link_run(sqes, n, as_given, res, together ? s : NULL,
			       &taken, timeout_ns, deadline, cancel);
	s->waiting = false;
	s->wchain = NULL;
	*got = -EAGAIN;
	if (together && s->wgot > 0) {
		*got = (ssize_t)s->wgot;
		return r;
	}
	if (r == -EINVAL || r == -EBUSY || r == -EOPNOTSUPP)
		return r; /* nothing started */
	if (r < 0)
		return r; /* timeout or condvar: no input waited further */
	for (unsigned i = 0; i < n; i++)
		if (res[i] < 0)
			return 0; /* a failed member: no input waited */
	/* The chain is done; the input, if not here yet, is waited for
	 * apart (what is kept, or the receive's end, or no armed receive).
	 * A signal of cancel that came once the chain had won the wake
	 * (taken, io.c) ends the call here unless the stream has its answer
	 * now (then the signal is used up on a call finishing, task.h). */
	if (taken) {
		*got = take_now(s, buf, len);
		return *got == -EAGAIN ? -ECANCELED : 0;
	}
	ssize_t in = recv_until(s, buf, len, timeout_ns < 0 ? -1 : 1, deadline,
				cancel);
	/* (An -ETIMEDOUT that is the stream's error, its connection's,
	 * is *got's: the stream reports it at every call.) */
	if ((in == -ETIMEDOUT || in == -ECANCELED) && in != s->err) {
		*got = -EAGAIN;
		return (int)in;
	}
	*got = in;
	return 0;
}

EXPORT int canal_io_rstream_close(struct canal_io_rstream *s)
{
	int r = check_owner(s);
	if (r < 0)
		return r;
	struct canal__task *t = s->task;
	struct canal__loop *l = s->loop;
	/* Cancel the receive and wait for its last CQE, which wakes the task
	 * (the cancel is sent again every millisecond: one that found no
	 * SQE free now, or one the kernel answered before the receive was
	 * in its tables, leaves it armed). */
	s->closing = true;
	while (s->armed) {
		l->rt->backend->rstream_cancel(l, s);
		canal__task_arm(t);
		canal__task_park(t, canal_now_ns() + 1000000);
	}
	while (s->hcount > 0) {
		l->rt->backend->buf_put(l, s->held[s->hhead].bid);
		s->hhead = (s->hhead + 1) % s->hcap;
		s->hcount--;
	}
	free(s->held);
	t->pinned--;
	t->rstreams--;
	free(s);
	return 0;
}
