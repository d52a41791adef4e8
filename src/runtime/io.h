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
#include <sys/socket.h>
#include <sys/uio.h>

struct canal__task;
struct canal__loop;

/*
 * A chain of linked operations (canal_io_submit_link), on its task's
 * stack until its last completion: one record for all its members, not an
 * operation structure each, so that reaping a chain's CQEs touches one
 * cache line of a task that has long gone cold (a server's connection
 * task; four CQEs per request) for chains of up to 12 members (80 bytes
 * in all: members 12-15's results are on the second line). Member i's CQEs carry the chain's address
 * with CANAL__IO_UD_CHAIN and i (io_uring's user_data): the record is
 * aligned to 64 so the low six bits are free. Its members complete one by
 * one; only the last completion (left reaches 0) wakes the task, which
 * thus parks once for the whole chain. Every field but task is written
 * by the loop's thread alone, between tasks (never while the task runs).
 */
#define CANAL__IO_UD_CHAIN 2u
struct canal__io_chain {
	struct canal__task *task;
	unsigned left;	     /* members not complete yet */
	uint16_t has_result; /* bit i: res[i] holds member i's first CQE's */
	uint16_t done;	     /* bit i: member i's last CQE came */
	int32_t res[16];     /* CANAL_IO_LINK_MAX */
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
};

struct canal__io {
	struct canal__task *task;
	int kind;
	int fd;
	void *buf;
	size_t len;
	const struct iovec *iov;
	int iovcnt;
	int flags;
	struct sockaddr *addr;
	socklen_t addrlen; /* connect: the address's length */
	socklen_t *addrlenp; /* accept: in/out */
	const void *sqe;   /* IO_SQE: a struct io_uring_sqe */
	int32_t result;
	bool has_result; /* io_uring: result holds the op's first CQE's */
	bool done;
	bool cancel_sent;
	uint32_t events; /* epoll: the readiness it waits for */
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

/* A completion (loop thread): store res, wake the task. */
void canal__io_complete(struct canal__io *op, int32_t res);
/* One CQE of member i of chain ch (loop l's thread): flags are the CQE's
 * (IORING_CQE_F_MORE: not its last; IORING_CQE_F_NOTIF: no result). */
void canal__io_chain_cqe(struct canal__loop *l, struct canal__io_chain *ch,
			 unsigned i, int32_t res, uint32_t flags);

/* Try op once without blocking: the result, or -EAGAIN if it would
 * block (the synchronous-completion shortcut, and epoll's way). ready:
 * the fd was just reported ready (a blocking listener may be accepted
 * from). */
int canal__io_try(struct canal__io *op, bool ready);

#endif /* CANAL_RUNTIME_IO_H */
