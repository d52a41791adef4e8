/* SPDX-License-Identifier: MIT */
/*
 * runtime/io.h - one asynchronous operation of a task, as the backends see
 * it. The task fills it, the backend starts it, its completion (on the
 * loop's thread) stores the result and wakes the task. While it is in
 * flight the task is pinned to the loop (internal.h) and op lives on the
 * task's stack.
 */
#ifndef CANAL_RUNTIME_IO_H
#define CANAL_RUNTIME_IO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/time_types.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct canal__task;
struct canal__loop;
struct canal_cond;
struct io_uring_sqe;

/*
 * A chain of linked operations (canal_io_submit_link), on its task's
 * stack until its last completion: one record for all its members, not an
 * operation structure each, so that reaping a chain's CQEs touches one
 * cache line of a task that has long gone cold (a server's connection
 * task; four CQEs per request) for chains of up to 10 members (88 bytes
 * in all: members 10-15's results are on the second line). Member i's CQEs carry the chain's address
 * with CANAL__IO_UD_CHAIN and i (io_uring's user_data): the record is
 * aligned to 64 so the low six bits are free. Its members complete one by
 * one; only the last completion (left reaches 0) wakes the task, which
 * thus parks once for the whole chain, unless the chain is followed by a
 * receive stream's input (then, canal_io_submit_link_recv: the wake is
 * the stream's when every member succeeded and no input has come yet).
 * Every field but task is written by the loop's thread alone, between
 * tasks (never while the task runs).
 */
#define CANAL__IO_UD_CHAIN 2u
struct canal_io_rstream;
struct canal__io_chain {
	struct canal__task *task;
	struct canal_io_rstream *then; /* NULL, or the stream waited on next */
	unsigned left;	     /* members not complete yet */
	uint16_t has_result; /* bit i: res[i] holds member i's first CQE's */
	uint16_t done;	     /* bit i: member i's last CQE came */
	int32_t res[16];     /* CANAL_IO_LINK_MAX */
	unsigned n;	     /* members */
} __attribute__((aligned(64)));
/* The member index has 4 bits in user_data, the masks 16. */
_Static_assert(sizeof(((struct canal__io_chain *)0)->res) ==
		       16 * sizeof(int32_t),
	       "a chain has at most 16 members");

enum canal__io_kind {
	IO_READ = 1,
	IO_WRITE,
	IO_READV,
	IO_WRITEV,
	IO_RECV,
	IO_SEND,
	IO_ACCEPT,
	IO_CONNECT,
	IO_CLOSE,
	IO_SQE, /* the generic primitive: a caller-prepared SQE */
	IO_FUTEX_WAIT, /* io_uring only: wait until *word != len (the key) */
	IO_FUTEX_WAITV, /* io_uring only: buf = struct futex_waitv[len] */
	IO_POLL, /* canal_io_poll: flags = the poll(2) events asked for */
};

struct canal__io {
	struct canal__task *task;
	int kind;
	int fd;
	void *buf;
	size_t len;
	const struct iovec *iov;
	int iovcnt;
	int flags; /* recv, send: MSG_*; accept: SOCK_*; poll: POLL* */
	struct sockaddr *addr;
	socklen_t addrlen; /* connect: the address's length */
	socklen_t *addrlenp; /* accept: in/out */
	const void *sqe;   /* IO_SQE: a struct io_uring_sqe */
	int32_t result;
	bool has_result; /* io_uring: result holds the op's first CQE's */
	bool done;
	bool no_try; /* the rest of a short count (io.c): no try first */
	bool go_on;  /* io.c: its count is short of what the call moves */
	uint32_t events; /* epoll: the readiness it waits for */
	/* io_uring, a poll (backend_uring.c, poll_again): its pause is in
	 * flight (not its poll), the next pause's length (0: the first),
	 * and the pause's time, which the kernel reads at submission. */
	bool pausing;
	uint32_t pause_ns;
	struct __kernel_timespec pause_ts;
};

/* Park the calling task (on a loop) in a kernel futex wait on word while
 * it holds key, until deadline_ns: 0 (woken, or the word differs),
 * -ETIMEDOUT, or -EOPNOTSUPP (not this backend or kernel: poll instead). */
int canal__io_futex_wait(_Atomic uint32_t *word, uint32_t key,
			 uint64_t deadline_ns);
/* The same on n words (1 <= n <= CANAL__WAIT_MANY_MAX) at once (any that
 * differs or is woken ends the wait); shared[i]: word i is in shared
 * memory (else it is waited on as a private futex). */
int canal__io_futex_waitv(_Atomic uint32_t *const *words,
			  const uint32_t *keys, const bool *shared,
			  unsigned n, uint64_t deadline_ns);

/*
 * A receive stream (canal_io_rstream_*, rstream.c): one multishot receive
 * of its loop's ring, into the loop's provided buffers, kept armed while
 * the stream is open. Its CQEs carry the stream's address with
 * CANAL__IO_UD_RSTREAM (bit 0; the structure is 8-aligned and user_data
 * 1 alone is the backend's ASYNC_CANCEL).
 *
 * Every field is read and written on the loop's thread only: the task's
 * side runs there (the task is pinned to its loop from open to close:
 * task->pinned counts the stream, and it cannot detach), and the CQE side
 * (canal__io_rstream_cqe) runs there between tasks, never while the task
 * runs. So the fields need no atomics; the task's park and wake order
 * them as for any completion (io.c).
 *
 * Bytes go, in arrival order: into the waiting receive's buffer (wbuf,
 * while waiting and nothing is kept), else to the kept queue (held: the
 * provided buffers themselves, given back to the ring once read). Kept
 * bytes always precede those in a later buffer, and the end (eof, err)
 * is reported only once every kept byte was read.
 */
#define CANAL__IO_UD_RSTREAM 1u
/* Buffers one stream keeps at most: at this many its receive is
 * cancelled, and armed again once the task has read them all (so a
 * client that sends while its task is busy is held back by TCP's flow
 * control, not by the loop's buffers, which the other streams share). */
#define CANAL__RS_HOLD_MAX 16u
/* Provided buffers per loop (backend_uring.c), a power of two. */
#define CANAL__RS_BUFS 1024u
struct canal__rs_held {
	char *data;   /* the provided buffer's unread part */
	uint32_t len; /* its unread bytes */
	uint16_t bid; /* its buffer id, given back once read */
};
struct canal_io_rstream {
	struct canal__task *task;
	struct canal__loop *loop;
	int fd;
	bool armed;	  /* its multishot receive's last CQE has not come */
	bool closing;	  /* in close: bytes are dropped, its end wakes */
	bool capped;	  /* its receive was cancelled: CANAL__RS_HOLD_MAX */
	bool fallback;	  /* no multishot on this loop: a receive per call */
	bool fed;	  /* bytes came since the receive was last armed */
	bool starved;	  /* it ended -ENOBUFS having given nothing: the
			   * next receive goes without it */
	bool ever;	  /* bytes ever came through the receive */
	bool eof;	  /* a CQE said end of input (res 0) */
	int32_t err;	  /* 0, or the error that ended the receive */
	/* The task's waiting receive (waiting: its buffer is wbuf[0..wlen),
	 * wgot bytes in it so far; wchain: a chain it also waits for). */
	bool waiting;
	char *wbuf;
	size_t wlen, wgot;
	struct canal__io_chain *wchain;
	/* Kept bytes: a ring of hcap entries, hcount from hhead. */
	struct canal__rs_held *held;
	uint32_t hhead, hcount, hcap;
};

/* One CQE of stream s's receive (loop l's thread): res and flags are the
 * CQE's; data is its provided buffer (IORING_CQE_F_BUFFER: buffer id bid),
 * or NULL. */
void canal__io_rstream_cqe(struct canal__loop *l, struct canal_io_rstream *s,
			   int32_t res, uint32_t flags, char *data,
			   unsigned bid);
/* link_recv (io.c): does chain ch, now complete, leave its task waiting
 * for the stream's input (every member succeeded, nothing came yet)? */
bool canal__io_rstream_quiet(const struct canal_io_rstream *s,
			     const struct canal__io_chain *ch);

/* The chain of canal_io_submit_link (as_given: the batch of
 * canal_io_submit_batch, whose links are the caller's), followed by then's
 * input when then is not NULL (canal_io_submit_link_recv sets then's wait
 * up first and ends it after: then->waiting is cleared here once the task
 * resumes). timeout_ns as the caller was given it (0: -ETIMEDOUT, nothing
 * started), deadline_ns the caller's from it
 * (canal__deadline_from_timeout: one clock read per call). taken: NULL,
 * or (canal_io_submit_link_recv, which may wait for input after the
 * chain) where to say that a signal of cancel came once the chain's
 * wake was won (0 returned): the caller's to end with -ECANCELED if it
 * would wait further (io.c). Arguments checked by the caller but for the
 * backend's link_check. */
int canal__io_link_run(const struct io_uring_sqe *sqes, unsigned n,
		       bool as_given, int32_t *res,
		       struct canal_io_rstream *then, bool *taken,
		       int64_t timeout_ns, uint64_t deadline_ns,
		       struct canal_cond *cancel);

/* Park the armed task t until its wake, deadline_ns or a signal of cancel
 * (when not NULL); the winning reason (enum task_wake). */
uint32_t canal__io_park_cancellable(struct canal__task *t,
				    uint64_t deadline_ns,
				    struct canal_cond *cancel);
/* canal__io_park_cancellable for a wait that its call may follow with
 * another (a receive stream's): registered on cancel as a kept waiter
 * (cond.h), so that a signal that comes once its wake was won (WAKE_WOKEN
 * returned, the task not run yet) is not skipped but taken: *taken then
 * says so, and the call ends -ECANCELED rather than wait again. */
uint32_t canal__io_park_kept(struct canal__task *t, uint64_t deadline_ns,
			     struct canal_cond *cancel, bool *taken);

/* A completion (loop thread): store res, wake the task. */
void canal__io_complete(struct canal__io *op, int32_t res);
/* One CQE of member i of chain ch (loop l's thread): flags are the CQE's
 * (IORING_CQE_F_MORE: not its last; IORING_CQE_F_NOTIF: no result). */
void canal__io_chain_cqe(struct canal__loop *l, struct canal__io_chain *ch,
			 unsigned i, int32_t res, uint32_t flags);

/* canal_io_recv (flags 0) for a receive stream's receive per call
 * (rstream.c): *conn_timedout tells an -ETIMEDOUT that is the socket's
 * error (its connection timed out) from timeout_ns's, which canal_io_recv
 * reports alike. */
ssize_t canal__io_recv_stream(int fd, void *buf, size_t len,
			      int64_t timeout_ns, struct canal_cond *cancel,
			      bool *conn_timedout);

/* Try op once without blocking: the result, or -EAGAIN if it would
 * block (the synchronous-completion shortcut, and epoll's way). ready:
 * the fd was just reported ready (a blocking listener may be accepted
 * from). */
int canal__io_try(struct canal__io *op, bool ready);

/* A poll's result from poll(2)'s revents: the events (> 0), or -EBADF
 * for POLLNVAL. */
int canal__io_poll_result(short revents);

/* Start op's connect without blocking (a socket in blocking mode is made
 * non-blocking for the call and put back at once): connect(2)'s 0 or
 * -errno, -EINPROGRESS when it goes on in the kernel, -EAGAIN when a Unix
 * listener's backlog is full (nothing started). *blocking: the socket was
 * in blocking mode. */
int canal__io_connect_start(const struct canal__io *op, bool *blocking);

#endif /* CANAL_RUNTIME_IO_H */
