/* SPDX-License-Identifier: MIT */
/*
 * runtime/backend.h - what a loop needs from its I/O backend, kept narrow
 * so that another one (Windows IOCP, seed 004's platform) fits: sleep
 * until an event or a deadline, be woken from another thread, and start
 * and cancel one asynchronous operation whose completion wakes its task.
 *
 * Every operation except wake() is called on the loop's own thread.
 */
#ifndef CANAL_RUNTIME_BACKEND_H
#define CANAL_RUNTIME_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

struct canal__loop;
struct canal__io;
struct canal__io_chain;
struct canal_io_rstream;

struct canal__backend_ops {
	const char *name;
	/* Set up l->backend on the loop's thread: 0 or -errno. */
	int (*init)(struct canal__loop *l);
	void (*fini)(struct canal__loop *l);
	/* Dispatch completions (canal__io_complete) and sleep until one
	 * comes, a wake(), or deadline_ns (0: do not sleep; CANAL_NO_DEADLINE:
	 * no deadline). */
	void (*poll)(struct canal__loop *l, uint64_t deadline_ns);
	/* Make a sleeping poll() of l return (any thread). */
	void (*wake)(struct canal__loop *l);
	/* Start op: 0 (its completion will come through poll), or -errno
	 * (nothing started; -EOPNOTSUPP for what the backend cannot do). */
	int (*submit)(struct canal__loop *l, struct canal__io *op);
	/* May the caller's SQE (struct io_uring_sqe, canal_io_submit) be
	 * submitted alone? 0 or -EINVAL; NULL: the backend takes no SQEs
	 * (-EOPNOTSUPP). Asked before anything else, whatever the timeout. */
	int (*sqe_check)(const void *sqe);
	/* Chains (canal_io_submit_link, canal_io_submit_batch); all three
	 * NULL: the backend has none (-EOPNOTSUPP). link_check: may the n
	 * SQEs (struct io_uring_sqe) form a chain (as_given: a batch whose
	 * links, IOSQE_IO_LINK or IOSQE_IO_HARDLINK, are the caller's, never
	 * on the last)? 0 or -EINVAL. submit_link: start the n SQEs (which
	 * passed link_check) together, linked one to the next (as_given: as
	 * the caller linked them), whose CQEs go to ch
	 * (canal__io_chain_cqe): 0, or -errno (nothing started).
	 * cancel_member: ask for member i's early end; its completion still
	 * comes. */
	int (*link_check)(const void *sqes, unsigned n, bool as_given);
	int (*submit_link)(struct canal__loop *l, struct canal__io_chain *ch,
			   const void *sqes, unsigned n, bool as_given);
	void (*cancel_member)(struct canal__loop *l,
			      struct canal__io_chain *ch, unsigned i);
	/* Ask for op's early end; its completion still comes through poll
	 * (with -ECANCELED, or its result if it won the race). */
	void (*cancel)(struct canal__loop *l, struct canal__io *op);
	/* Receive streams (io.h, rstream.c); all three NULL: the backend
	 * has none (each receive is one canal_io_recv). rstream_arm: start
	 * s's multishot receive into the loop's provided buffers (made at
	 * the first call), its CQEs going to canal__io_rstream_cqe: 0, or
	 * -errno, nothing started (-EOPNOTSUPP: no buffer rings or
	 * multishot receive in this kernel, for good; -ENOBUFS: too few
	 * buffers free now; -EBUSY: no SQE now). rstream_cancel: ask for
	 * its end (its last CQE still comes): false if no SQE was free. buf_put: give provided buffer
	 * bid back to the loop's ring. */
	int (*rstream_arm)(struct canal__loop *l, struct canal_io_rstream *s);
	bool (*rstream_cancel)(struct canal__loop *l,
			       struct canal_io_rstream *s);
	void (*buf_put)(struct canal__loop *l, unsigned bid);
	/* Whether a poll() would find completions now, read without a
	 * system call (a hint: it may say false a moment before a completion
	 * comes, never true when poll() would find nothing forever); NULL:
	 * the backend cannot tell (the loop does not spin on its I/O). */
	bool (*pending)(struct canal__loop *l);
};

extern const struct canal__backend_ops canal__backend_uring;
extern const struct canal__backend_ops canal__backend_epoll;

/* Probe: can this process set up an io_uring? 0 yes; -ENOSYS no (the
 * kernel has none or refuses it: ENOSYS, EPERM, ...), kept for the
 * process's life; or the -errno of a probe that failed for want of
 * resources (EMFILE, ENFILE, ENOMEM, EAGAIN), which says nothing of
 * io_uring and is not kept: the next call probes again. */
int canal__uring_probe(void);
/* A loop's ring was refused (EPERM, ...) after the probe said yes: the
 * probe says -ENOSYS from now on, as it would have. */
void canal__uring_refused(void);

#endif /* CANAL_RUNTIME_BACKEND_H */
