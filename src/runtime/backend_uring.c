/* SPDX-License-Identifier: MIT */
/*
 * backend_uring.c - the io_uring backend (liburing).
 *
 * One ring per loop, made on the loop's own thread with SINGLE_ISSUER and
 * DEFER_TASKRUN where the kernel has them (completions are then processed
 * only when this thread enters the kernel to get events, which is when
 * the loop polls anyway); without them, a plain ring.
 *
 * user_data: 0 is the loop's eventfd read (always one in flight: another
 * thread's wake writes the eventfd, the read completes, the loop wakes and
 * re-arms it), 1 is an ASYNC_CANCEL (its own CQE is ignored: what matters
 * is the CQE of the op it cancels), a value with CANAL__IO_UD_CHAIN (bit 1)
 * a member of a chain (io.h: the chain's 64-aligned address, the member's
 * index in bits 2-5), any other odd value a receive stream's multishot
 * receive (its 8-aligned address with CANAL__IO_UD_RSTREAM, bit 0),
 * anything else a struct canal__io (8-aligned: bits 0-1 clear).
 *
 * Receive streams draw from one ring of provided buffers per loop (group
 * RS_BGID), made at the first stream's arm: RS_NBUF buffers of
 * RS_BUF_SIZE bytes (4 MiB, committed as the kernel fills them). The
 * kernel takes a buffer per CQE; rstream.c gives it back (buf_put) once
 * its bytes are read. rs_free counts the buffers in the ring (loop thread
 * only): a stream's receive is armed only while more than RS_LOW are
 * free, so a few streams whose tasks do not read cannot starve the
 * others' receives for long (those fall back to a receive per call).
 *
 * Exactly one outcome per op: its last CQE comes exactly once, whether it
 * completed, failed or was cancelled; the task waits for that CQE before
 * the op (on its stack) goes away (io.c). An op may post several CQEs (a
 * caller's SQE: a zero-copy send's result then its notification, a
 * multishot op's one per event): all but the last carry IORING_CQE_F_MORE,
 * so the op completes only at the CQE without it, with the first result
 * (notifications, IORING_CQE_F_NOTIF, carry none). A caller's SQE that
 * links to the next SQE in the ring (another task's), drains the ring (it
 * would wait for the wake-up read, always in flight) or asks for no CQE is
 * refused; chains are made here (ur_submit_link), all in one submission.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/backend.h"
#include "runtime/io.h"
#include "base/clock.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define RING_ENTRIES 256u
/* Completion queue entries: the kernel (Linux 6.x, io_ring_ctx_alloc)
 * sizes its table of cancellable requests (armed polls, hence every
 * multishot receive of a receive stream) from the CQ, at cq_entries / 32
 * buckets with at most 256, and an ASYNC_CANCEL by user_data walks one
 * bucket. With the default CQ of
 * 2 * RING_ENTRIES (16 buckets), 10 000 open streams put 600 requests in
 * each bucket and a stream's close spent most of a server's CPU walking
 * them (perf: io_poll_find 24 % under ab at 10 000 connections); 8192
 * gives the 256 buckets. 128 KiB per loop. */
#define CQ_ENTRIES 8192u
#define URING_OP_FUTEX_WAIT 51	  /* IORING_OP_FUTEX_WAIT, linux 6.7 */
#define URING_OP_FUTEX_WAITV 53	  /* IORING_OP_FUTEX_WAITV, linux 6.7 */
#define URING_FUTEX2_SIZE_U32 0x02 /* FUTEX2_SIZE_U32 */
#define UD_WAKE 0u
#define UD_CANCEL 1u

#define RS_NBUF CANAL__RS_BUFS /* provided buffers per loop (io.h) */
#define RS_BUF_SIZE 4096u
#define RS_BGID 0
#define RS_LOW (RS_NBUF / 8u)

struct uring_backend {
	struct io_uring ring;
	int evfd;
	uint64_t evbuf;
	bool read_armed;
	/* Receive streams' buffers (top of this file): rs_state 0 not made
	 * yet, 1 made, 2 refused by this kernel (for good). */
	int rs_state;
	struct io_uring_buf_ring *br;
	char *bufs;
	unsigned rs_free;
	/* IORING_SQ_TASKRUN seen set by a poll that then found nothing: the
	 * flag is stale (ur_pending), until it is seen clear or a poll
	 * reaps a CQE. */
	bool taskrun_stale;
};

/* backend.h. Keeping every failure made one canal_run run while the
 * process had no free descriptor take io_uring away for good: -ENOSYS
 * for every later run that asked for it, epoll for the automatic ones
 * (test_revlife_uring_probe). */
static _Atomic int known; /* canal__uring_probe: 0 unknown, 1 yes, 2 no */

void canal__uring_refused(void)
{
	atomic_store_explicit(&known, 2, memory_order_relaxed);
}

int canal__uring_probe(void)
{
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (k)
		return k == 1 ? 0 : -ENOSYS;
	struct io_uring ring;
	int r = io_uring_queue_init(4, &ring, 0);
	if (r == 0)
		io_uring_queue_exit(&ring);
	else if (r == -EMFILE || r == -ENFILE || r == -ENOMEM || r == -EAGAIN)
		return r; /* resources short now: not kept */
	k = r == 0 ? 1 : 2;
	atomic_store_explicit(&known, k, memory_order_relaxed);
	return k == 1 ? 0 : -ENOSYS;
}

static struct io_uring_sqe *get_sqe(struct uring_backend *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	if (!sqe) {
		io_uring_submit(&b->ring);
		sqe = io_uring_get_sqe(&b->ring);
	}
	return sqe;
}

static void arm_wake_read(struct uring_backend *b)
{
	struct io_uring_sqe *sqe = get_sqe(b);
	if (!sqe)
		return; /* retried at the next poll */
	io_uring_prep_read(sqe, b->evfd, &b->evbuf, sizeof(b->evbuf), 0);
	io_uring_sqe_set_data64(sqe, UD_WAKE);
	b->read_armed = true;
}

static int ur_init(struct canal__loop *l)
{
	struct uring_backend *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->evfd = eventfd(0, EFD_CLOEXEC);
	if (b->evfd < 0) {
		int e = -errno;
		free(b);
		return e;
	}
	/* TASKRUN_FLAG: the kernel raises IORING_SQ_TASKRUN in the shared
	 * SQ flags when completions wait as deferred task work (ur_pending
	 * reads it). Each set of flags is tried with the larger CQ, then
	 * without it (refused: locked memory before linux 5.12, a memory
	 * cgroup's limit), on any error; the flags need linux 6.1. */
	static const unsigned flag_sets[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			IORING_SETUP_TASKRUN_FLAG,
		0,
	};
	int r = -EINVAL;
	for (unsigned i = 0; i < 2 * 2 && r < 0; i++) {
		struct io_uring_params p = {.flags = flag_sets[i / 2]};
		if (i % 2 == 0) {
			p.flags |= IORING_SETUP_CQSIZE;
			p.cq_entries = CQ_ENTRIES;
		}
		r = io_uring_queue_init_params(RING_ENTRIES, &b->ring, &p);
	}
	if (r < 0) {
		close(b->evfd);
		free(b);
		return r;
	}
	l->backend = b;
	arm_wake_read(b);
	io_uring_submit(&b->ring);
	return 0;
}

static void ur_fini(struct canal__loop *l)
{
	struct uring_backend *b = l->backend;
	if (!b)
		return;
	io_uring_queue_exit(&b->ring); /* (unregisters the buffer ring) */
	close(b->evfd);
	free(b->br);
	free(b->bufs);
	free(b);
	l->backend = NULL;
}

/* A poll's pauses while the kernel reports only POLLRDHUP, not asked:
 * 1 ms, doubling to 32 ms (canal_io_poll's, io.c). */
#define POLL_PAUSE_MIN_NS 1000000u
#define POLL_PAUSE_MAX_NS 32000000u

/*
 * A poll's CQE (IO_POLL) that is not its answer: true if the op goes on.
 * The kernel adds POLLRDHUP to every poll (as ERR and HUP) and reports
 * it: once the peer has shut its side down, a poll for what is not there
 * (POLLOUT, POLLPRI) completes with POLLRDHUP alone, which poll(2) would
 * not report, and a poll armed again completes at once again. The op
 * then waits out a pause (an IORING_OP_TIMEOUT with the op's user_data,
 * so that the task's ASYNC_CANCEL finds whichever of the two is in
 * flight) and is armed again when it expires. Invariant: the op stays
 * one wait for io.c until its answer, its cancellation or its timeout
 * (one park, one registration on the condvar, its deadline): a look
 * again after pauses made by the task registered on the condvar anew
 * each time, and a signal that came while a look's completion or a
 * pause's timer had already won the task's wake found no waiter (it
 * returned 0) and was lost (test_revpoll_rdhup_signal). Without an SQE
 * (never in practice) the CQE completes the op: io.c looks again.
 */
static bool poll_again(struct uring_backend *b, struct canal__io *op,
		       int32_t res)
{
	if (op->pausing) {
		op->pausing = false;
		if (res != -ETIME)
			return false; /* cancelled: the op's outcome */
		struct io_uring_sqe *sqe = get_sqe(b);
		if (!sqe) {
			op->result = POLLRDHUP; /* (io.c looks again) */
			return false;
		}
		io_uring_prep_poll_add(sqe, op->fd, (unsigned)op->flags);
		io_uring_sqe_set_data(sqe, op);
		return true;
	}
	if (res != POLLRDHUP || (op->flags & POLLRDHUP))
		return false; /* an answer (ERR, HUP, NVAL: too) */
	struct io_uring_sqe *sqe = get_sqe(b);
	if (!sqe)
		return false;
	uint32_t ns = op->pause_ns ? op->pause_ns : POLL_PAUSE_MIN_NS;
	op->pause_ts.tv_sec = ns / 1000000000u;
	op->pause_ts.tv_nsec = ns % 1000000000u;
	io_uring_prep_timeout(sqe, &op->pause_ts, 0, 0);
	io_uring_sqe_set_data(sqe, op);
	op->pausing = true;
	op->pause_ns = ns < POLL_PAUSE_MAX_NS ? ns * 2 : ns;
	return true;
}

/* One CQE of op: complete it at its last (see the top of this file). */
static void reap_op(struct uring_backend *b, struct canal__io *op,
		    const struct io_uring_cqe *cqe)
{
	if (op->kind == IO_POLL) {
		if (poll_again(b, op, cqe->res))
			return;
		/* (A pause's CQE without an SQE left: op->result.) */
		canal__io_complete(op, cqe->res == -ETIME ? op->result
							  : cqe->res);
		return;
	}
	if (!(cqe->flags & IORING_CQE_F_NOTIF) && !op->has_result) {
		op->result = cqe->res;
		op->has_result = true;
	}
	if (cqe->flags & IORING_CQE_F_MORE)
		return;
	canal__io_complete(op, op->has_result ? op->result : cqe->res);
}

/* One CQE of a receive stream: its provided buffer, if it took one,
 * goes with it (the buffer is out of the ring until buf_put). */
static void reap_rstream(struct canal__loop *l, struct uring_backend *b,
			 uint64_t ud, const struct io_uring_cqe *cqe)
{
	char *data = NULL;
	unsigned bid = 0;
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		data = b->bufs + (size_t)bid * RS_BUF_SIZE;
		b->rs_free--;
	}
	canal__io_rstream_cqe(
		l,
		(struct canal_io_rstream *)(uintptr_t)(ud &
						       ~(uint64_t)CANAL__IO_UD_RSTREAM),
		cqe->res, cqe->flags, data, bid);
}

static unsigned ur_reap(struct canal__loop *l, struct uring_backend *b)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	io_uring_for_each_cqe(&b->ring, head, cqe)
	{
		uint64_t ud = io_uring_cqe_get_data64(cqe);
		seen++;
		/* liburing's own: on a kernel without IORING_FEAT_EXT_ARG
		 * (before 5.11), io_uring_submit_and_wait_timeout (ur_poll)
		 * queues a timeout of its own with this user_data, whose
		 * completion may come in a later batch; read as a chain's
		 * (bit 1), it would be dispatched to an address 0xff..c0. */
		if (ud == LIBURING_UDATA_TIMEOUT)
			continue;
		if (ud == UD_WAKE)
			b->read_armed = false;
		else if (ud & CANAL__IO_UD_CHAIN)
			canal__io_chain_cqe(l, (struct canal__io_chain *)(uintptr_t)(ud & ~(uint64_t)63),
					    (unsigned)(ud >> 2) & 15u, cqe->res,
					    cqe->flags);
		else if ((ud & CANAL__IO_UD_RSTREAM) && ud != UD_CANCEL)
			reap_rstream(l, b, ud, cqe);
		else if (ud != UD_CANCEL)
			reap_op(b, (struct canal__io *)(uintptr_t)ud, cqe);
	}
	io_uring_cq_advance(&b->ring, seen);
	return seen;
}

static bool taskrun_flagged(const struct uring_backend *b)
{
	return __atomic_load_n(b->ring.sq.kflags, __ATOMIC_RELAXED) &
	       IORING_SQ_TASKRUN;
}

static void ur_poll(struct canal__loop *l, uint64_t deadline_ns)
{
	struct uring_backend *b = l->backend;
	bool flagged = taskrun_flagged(b);
	if (!b->read_armed)
		arm_wake_read(b);
	if (deadline_ns == 0) {
		io_uring_submit_and_get_events(&b->ring);
	} else {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts, *tsp = NULL;
		if (deadline_ns != CANAL_NO_DEADLINE) {
			uint64_t now = canal_now_ns();
			uint64_t d = deadline_ns > now ? deadline_ns - now : 0;
			ts.tv_sec = (long long)(d / 1000000000u);
			ts.tv_nsec = (long long)(d % 1000000000u);
			tsp = &ts;
		}
		io_uring_submit_and_wait_timeout(&b->ring, &cqe, 1, tsp,
						 NULL);
	}
	if (ur_reap(l, b))
		b->taskrun_stale = false;
	else if (flagged && taskrun_flagged(b))
		b->taskrun_stale = true; /* ur_pending says why */
	if (!b->read_armed)
		arm_wake_read(b);
	/* What the reaping queued (the wake read; a receive stream's cancel
	 * at its cap, rstream.c) goes in now, not at the next poll. */
	if (io_uring_sq_ready(&b->ring))
		io_uring_submit(&b->ring);
}

/* Deferred task work (DEFER_TASKRUN) is what becomes CQEs at the next
 * io_uring_enter; posted CQEs (an inline completion, an overflow) are the
 * rest. Without DEFER_TASKRUN (an old kernel) completions are posted as
 * they come, and the first test sees them. Relaxed loads: a hint, and
 * poll() enters the kernel, which orders what it reaps.
 *
 * The kernel raises IORING_SQ_TASKRUN after it queues the work, and the
 * loop's io_uring_enter clears it before it takes the queue: when the
 * loop runs the work between the two, the flag stays set with nothing
 * queued, and no later io_uring_enter clears it until more work comes. A
 * loop that believed it would spin and poll for nothing, at full CPU, for
 * as long (a hostile review). So a flag that a poll found with nothing to
 * reap is stale until it is seen clear or a poll reaps something; the
 * loop then sleeps in the kernel's wait, which is right either way. */
static bool ur_pending(struct canal__loop *l)
{
	struct uring_backend *b = l->backend;
	unsigned f = __atomic_load_n(b->ring.sq.kflags, __ATOMIC_RELAXED);
	if (!(f & IORING_SQ_TASKRUN))
		b->taskrun_stale = false;
	return io_uring_cq_ready(&b->ring) || (f & IORING_SQ_CQ_OVERFLOW) ||
	       ((f & IORING_SQ_TASKRUN) && !b->taskrun_stale);
}

static void ur_wake(struct canal__loop *l)
{
	struct uring_backend *b = l->backend;
	uint64_t one = 1;
	if (write(b->evfd, &one, sizeof(one)) < 0)
		return;
}

/* A caller's SQE may not tie itself to others or drop its CQE (top of
 * this file); in a chain, canal links them. Nor may it select a provided
 * buffer: the loop's are its receive streams' (a buffer taken by another
 * operation would never go back to the ring). */
#define REFUSED_FLAGS                                                        \
	(IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_IO_DRAIN |                \
	 IOSQE_CQE_SKIP_SUCCESS | IOSQE_BUFFER_SELECT)

/* Opcodes that act on other requests of the ring or on another ring:
 * ASYNC_CANCEL (by user_data, by fd, ANY, ALL), POLL_REMOVE and
 * TIMEOUT_REMOVE (by user_data; also their updates) would cancel or
 * change other tasks' operations (which then end -ECANCELED with no
 * condvar of theirs signalled), a receive stream's receive or the loop's
 * wake-up read; the caller cannot name an operation of its own (its
 * user_data is canal's, and it has none in flight). MSG_RING posts a CQE
 * with the caller's user_data into a ring, possibly a loop's, whose
 * reaping would take it for a canal__io (test_revuring_foreign_cancel). */
static bool targets_others(const struct io_uring_sqe *sqe)
{
	switch (sqe->opcode) {
	case IORING_OP_ASYNC_CANCEL:
	case IORING_OP_POLL_REMOVE:
	case IORING_OP_TIMEOUT_REMOVE:
	case IORING_OP_MSG_RING:
		return true;
	default:
		return false;
	}
}

/* A multishot accept is refused too: each completion after the first
 * is a connection nobody would ever see, its descriptor open for good (a
 * hostile review: 2 of 3 connections leaked). Other multishot forms own
 * nothing (poll, timeout) or need a provided buffer (refused above). */
static int ur_sqe_check(const void *sqe_)
{
	const struct io_uring_sqe *sqe = sqe_;
	if ((sqe->flags & REFUSED_FLAGS) || targets_others(sqe))
		return -EINVAL;
	if (sqe->opcode == IORING_OP_ACCEPT &&
	    (sqe->ioprio & IORING_ACCEPT_MULTISHOT))
		return -EINVAL;
	return 0;
}

/* The largest read or write the kernel does in one call (MAX_RW_COUNT:
 * INT_MAX rounded down to a page): an SQE's length is 32 bits, and a
 * length of 4 GiB or more, cut to its low bits, read 0 bytes (taken for
 * the end of input) or wrote nothing for ever (a hostile review). read(2)
 * and write(2) clamp the same way: a short count, as they return. */
#define URING_RW_MAX 0x7ffff000u

static unsigned rw_len(size_t len)
{
	return len > URING_RW_MAX ? URING_RW_MAX : (unsigned)len;
}

static int ur_submit(struct canal__loop *l, struct canal__io *op)
{
	struct uring_backend *b = l->backend;
	if (op->kind == IO_SQE && ur_sqe_check(op->sqe))
		return -EINVAL;
	struct io_uring_sqe *sqe = get_sqe(b);
	if (!sqe)
		return -EBUSY;
	op->has_result = false;
	switch (op->kind) {
	case IO_READ:
		io_uring_prep_read(sqe, op->fd, op->buf, rw_len(op->len),
				   (uint64_t)-1);
		break;
	case IO_WRITE:
		io_uring_prep_write(sqe, op->fd, op->buf, rw_len(op->len),
				    (uint64_t)-1);
		break;
	case IO_READV:
		io_uring_prep_readv(sqe, op->fd, op->iov,
				    (unsigned)op->iovcnt, (uint64_t)-1);
		break;
	case IO_WRITEV:
		io_uring_prep_writev(sqe, op->fd, op->iov,
				     (unsigned)op->iovcnt, (uint64_t)-1);
		break;
	case IO_RECV:
		io_uring_prep_recv(sqe, op->fd, op->buf, rw_len(op->len),
				   op->flags);
		break;
	case IO_SEND:
		io_uring_prep_send(sqe, op->fd, op->buf, rw_len(op->len),
				   op->flags);
		break;
	case IO_ACCEPT:
		io_uring_prep_accept(sqe, op->fd, op->addr, op->addrlenp,
				     op->flags);
		break;
	case IO_CONNECT:
		io_uring_prep_connect(sqe, op->fd, op->addr, op->addrlen);
		break;
	case IO_CLOSE:
		io_uring_prep_close(sqe, op->fd);
		break;
	case IO_POLL:
		/* One-shot: its CQE's result is the ready events (or
		 * POLLRDHUP alone, not asked: poll_again). */
		op->pausing = false;
		op->pause_ns = 0;
		io_uring_prep_poll_add(sqe, op->fd, (unsigned)op->flags);
		break;
	case IO_SQE:
		memcpy(sqe, op->sqe, sizeof(*sqe));
		break;
	case IO_FUTEX_WAIT:
		/* IORING_OP_FUTEX_WAIT (kernel >= 6.7; liburing 2.3 has no
		 * helper): fd = futex2 flags (32-bit, shared: no
		 * FUTEX2_PRIVATE), addr = the word, addr2 = the value it
		 * must hold, addr3 = the bitset mask. */
		io_uring_prep_rw(URING_OP_FUTEX_WAIT, sqe, URING_FUTEX2_SIZE_U32,
				 op->buf, 0, op->len);
		sqe->addr3 = 0xffffffffu;
		break;
	case IO_FUTEX_WAITV:
		/* IORING_OP_FUTEX_WAITV: addr = struct futex_waitv[len]. */
		io_uring_prep_rw(URING_OP_FUTEX_WAITV, sqe, 0, op->buf,
				 (unsigned)op->len, 0);
		break;
	default:
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, UD_CANCEL);
		return -EINVAL;
	}
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op);
	/* Submitted at the loop's next poll, right after the task parks:
	 * one io_uring_enter for every op started meanwhile. */
	return 0;
}

/* Kernel constants newer than the liburing this builds with. */
#define URING_TIMEOUT_MULTISHOT (1u << 6) /* IORING_TIMEOUT_MULTISHOT, 6.4 */

/*
 * May sqe be part of a chain? Every operation of a chain must post exactly
 * one CQE, its last: the task stops waiting once each has completed, and
 * the chain's operations live on its stack. Refused: what links, drains
 * or drops its CQE (as for one SQE); a zero-copy send (a cut chain ends it
 * with -ECANCELED and a notification after that); the multishot forms (a
 * CQE with IORING_CQE_F_MORE does not let the chain go on: the next
 * operation would wait until the multishot ends); and opcodes newer than
 * this build knows (IORING_OP_LAST of its liburing), whose CQEs it cannot
 * vouch for.
 */
static bool link_refused(const struct io_uring_sqe *sqe, bool links_ok)
{
	unsigned refused = REFUSED_FLAGS;
	if (links_ok)
		refused &= ~(unsigned)(IOSQE_IO_LINK | IOSQE_IO_HARDLINK);
	if ((sqe->flags & refused) || targets_others(sqe))
		return true;
	switch (sqe->opcode) {
	case IORING_OP_SEND_ZC:
	case IORING_OP_SENDMSG_ZC:
		return true;
	case IORING_OP_POLL_ADD:
		return sqe->len & IORING_POLL_ADD_MULTI;
	case IORING_OP_RECV:
	case IORING_OP_RECVMSG:
		return sqe->ioprio & IORING_RECV_MULTISHOT;
	case IORING_OP_ACCEPT:
		return sqe->ioprio & IORING_ACCEPT_MULTISHOT;
	case IORING_OP_TIMEOUT:
		return sqe->timeout_flags & URING_TIMEOUT_MULTISHOT;
	default:
		return sqe->opcode >= IORING_OP_LAST;
	}
}

/* as_given (canal_io_submit_batch): the caller's links stand, but not on
 * the last SQE, which would tie it to whatever SQE comes next. */
static int ur_link_check(const void *sqes_, unsigned n, bool as_given)
{
	const struct io_uring_sqe *sqes = sqes_;
	for (unsigned i = 0; i < n; i++)
		if (link_refused(&sqes[i], as_given && i + 1 < n))
			return -EINVAL;
	return 0;
}

/*
 * A chain (its SQEs passed ur_link_check): the n SQEs must reach the
 * kernel in one submission (a link ends at the end of a submission batch),
 * so they are taken from the ring together: room for all n, after one flush of what is queued if needed,
 * or nothing is started. IOSQE_IO_LINK on each but the last, unless
 * as_given (a batch: the caller's links, checked by ur_link_check).
 */
static uint64_t member_ud(struct canal__io_chain *ch, unsigned i)
{
	return (uint64_t)(uintptr_t)ch | CANAL__IO_UD_CHAIN | (uint64_t)i << 2;
}

static int ur_submit_link(struct canal__loop *l, struct canal__io_chain *ch,
			  const void *sqes_, unsigned n, bool as_given)
{
	struct uring_backend *b = l->backend;
	const struct io_uring_sqe *sqes = sqes_;
	if (io_uring_sq_space_left(&b->ring) < n) {
		io_uring_submit(&b->ring);
		if (io_uring_sq_space_left(&b->ring) < n)
			return -EBUSY;
	}
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
		memcpy(sqe, &sqes[i], sizeof(*sqe));
		if (i + 1 < n && !as_given)
			sqe->flags |= IOSQE_IO_LINK;
		io_uring_sqe_set_data64(sqe, member_ud(ch, i));
	}
	return 0;
}

static bool send_cancel(struct uring_backend *b, uint64_t ud)
{
	struct io_uring_sqe *sqe = get_sqe(b);
	if (!sqe)
		return false; /* the task retries (io.c) */
	io_uring_prep_cancel64(sqe, ud, 0);
	io_uring_sqe_set_data64(sqe, UD_CANCEL);
	return true;
}

static void ur_cancel(struct canal__loop *l, struct canal__io *op)
{
	send_cancel(l->backend, (uint64_t)(uintptr_t)op); /* else retried */
}

static void ur_cancel_member(struct canal__loop *l, struct canal__io_chain *ch,
			     unsigned i)
{
	send_cancel(l->backend, member_ud(ch, i)); /* else retried (io.c) */
}

/* The loop's provided buffers (top of this file): 0, or -EOPNOTSUPP when
 * this kernel refuses buffer rings (then for good), -ENOMEM. */
static int rs_setup(struct uring_backend *b)
{
	if (b->rs_state)
		return b->rs_state == 1 ? 0 : -EOPNOTSUPP;
	size_t ring_size = RS_NBUF * sizeof(struct io_uring_buf);
	if (posix_memalign((void **)&b->br, 4096, ring_size))
		return -ENOMEM;
	if (posix_memalign((void **)&b->bufs, 4096,
			   (size_t)RS_NBUF * RS_BUF_SIZE)) {
		free(b->br);
		b->br = NULL;
		return -ENOMEM;
	}
	io_uring_buf_ring_init(b->br);
	struct io_uring_buf_reg reg = {
		.ring_addr = (uint64_t)(uintptr_t)b->br,
		.ring_entries = RS_NBUF,
		.bgid = RS_BGID,
	};
	int r = io_uring_register_buf_ring(&b->ring, &reg, 0);
	if (r < 0) {
		free(b->br);
		free(b->bufs);
		b->br = NULL;
		b->bufs = NULL;
		if (r == -ENOMEM)
			return r;
		b->rs_state = 2;
		return -EOPNOTSUPP;
	}
	for (unsigned i = 0; i < RS_NBUF; i++)
		io_uring_buf_ring_add(b->br, b->bufs + (size_t)i * RS_BUF_SIZE,
				      RS_BUF_SIZE, (unsigned short)i,
				      io_uring_buf_ring_mask(RS_NBUF), (int)i);
	io_uring_buf_ring_advance(b->br, RS_NBUF);
	b->rs_free = RS_NBUF;
	b->rs_state = 1;
	return 0;
}

static uint64_t rstream_ud(struct canal_io_rstream *s)
{
	return (uint64_t)(uintptr_t)s | CANAL__IO_UD_RSTREAM;
}

static int ur_rstream_arm(struct canal__loop *l, struct canal_io_rstream *s)
{
	struct uring_backend *b = l->backend;
	int r = rs_setup(b);
	if (r < 0)
		return r;
	if (b->rs_free <= RS_LOW)
		return -ENOBUFS;
	struct io_uring_sqe *sqe = get_sqe(b);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_recv_multishot(sqe, s->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = RS_BGID;
	io_uring_sqe_set_data64(sqe, rstream_ud(s));
	return 0;
}

static bool ur_rstream_cancel(struct canal__loop *l, struct canal_io_rstream *s)
{
	return send_cancel(l->backend, rstream_ud(s)); /* else retried */
}

static void ur_buf_put(struct canal__loop *l, unsigned bid)
{
	struct uring_backend *b = l->backend;
	io_uring_buf_ring_add(b->br, b->bufs + (size_t)bid * RS_BUF_SIZE,
			      RS_BUF_SIZE, (unsigned short)bid,
			      io_uring_buf_ring_mask(RS_NBUF), 0);
	io_uring_buf_ring_advance(b->br, 1);
	b->rs_free++;
}

const struct canal__backend_ops canal__backend_uring = {
	.name = "io_uring",
	.init = ur_init,
	.fini = ur_fini,
	.poll = ur_poll,
	.wake = ur_wake,
	.submit = ur_submit,
	.sqe_check = ur_sqe_check,
	.link_check = ur_link_check,
	.submit_link = ur_submit_link,
	.cancel_member = ur_cancel_member,
	.cancel = ur_cancel,
	.rstream_arm = ur_rstream_arm,
	.rstream_cancel = ur_rstream_cancel,
	.buf_put = ur_buf_put,
	.pending = ur_pending,
};
