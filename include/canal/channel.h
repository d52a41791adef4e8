/* SPDX-License-Identifier: MIT */
/*
 * canal/channel.h - Go-style bounded channels between threads.
 *
 * Conventions, stated once and kept everywhere:
 *  - Functions returning int return 0 (or a non-negative count) on success
 *    and a negative errno value on failure (as liburing does). errno is not
 *    touched, except by canal_chan_create(), which returns NULL and sets
 *    errno because it returns a pointer.
 *  - Every operation on a channel may be called from any number of threads
 *    at once (multi-producer, multi-consumer), except canal_chan_destroy(),
 *    which must be called once, when no other thread uses the channel.
 *  - "Blocks" means the caller is parked (a short spin, then a futex wait:
 *    no CPU is burnt while nothing can progress) until the operation can
 *    complete, the channel is closed, or a timeout expires.
 *  - Elements are copied by value: elt_size bytes per element, fixed at
 *    creation. elt_size may be 0 (signal-only channels); then element
 *    pointers may be NULL.
 *  - Every function taking a channel returns -EINVAL when ch is NULL, or
 *    when an element pointer is NULL while elt_size > 0 (the inspectors
 *    canal_chan_len() and friends require a valid channel).
 *  - Shared channels (CANAL_SHARED) may also return -EOWNERDEAD from an
 *    operation whose slot a peer repaired, believing this process dead,
 *    and -EBADMSG when the ring was found damaged (see the section on
 *    channels between processes).
 *  - Order: elements are received in the order their sends claimed a
 *    position in the channel. In particular, the elements of one sending
 *    thread are received in the order it sent them (per-producer FIFO).
 *
 * Closing: canal_close() forbids further sends. Everything whose send
 * returned 0 before (or concurrently with, but ordered before) the close is
 * still delivered: receivers drain the channel, then get -EPIPE. Close wakes
 * every blocked sender (they return -EPIPE) and every blocked receiver.
 *
 * Capacity 0 is a synchronous (rendezvous) channel: a blocking send returns
 * only once the element is in a receiver's hands (a receiver waiting in a
 * plain receive, committed to take it; or, for a receiving select, once it
 * has taken it); canal_try_send() succeeds only when a receiver is waiting.
 *
 * Waiting and timeouts: a try operation returns at once and a timed one by
 * its deadline, whatever another thread or process does (even one holding a
 * lent slot, or writing garbage into a shared segment). A try operation
 * whose claim of a position keeps failing because the channel's indices
 * move under it (a peer rewriting a shared segment's indices without
 * pause) gives up after a bounded number of attempts with -EAGAIN, as when
 * the channel is full (empty): nothing was sent or received; a timed one
 * then ends by its deadline with -ETIMEDOUT, and a blocking one keeps
 * trying. Between live parties each failed attempt is another party's
 * successful claim, and the bound is a thousand of them in one call.
 * Called from a task of canal's runtime, a blocking operation parks the
 * task, not its thread.
 */
#ifndef CANAL_CHANNEL_H
#define CANAL_CHANNEL_H

#include <canal/base.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct canal_chan;

/* ------------------------------------------------------------------ */
/* Creation                                                            */
/* ------------------------------------------------------------------ */

/* Flags for canal_chan_create(). */
enum {
	/* The channel lives in shared memory (a memory file): a channel
	 * created before fork() works between parent and children with the
	 * same API and semantics; see also the named channels below.
	 * Capacity is limited to 2^30 elements. */
	CANAL_SHARED = 1u << 0,
};

/* Largest capacity and element size accepted (elements, bytes). */
#define CANAL_CAPACITY_MAX ((size_t)1 << 32)
#define CANAL_ELT_SIZE_MAX ((size_t)1 << 30)

/*
 * canal_chan_create - create a channel of elements of elt_size bytes that
 * holds up to capacity elements (0: synchronous channel).
 *
 * Memory: the ring (capacity slots of elt_size rounded up to 8 bytes, plus
 * an 8-byte stamp; 16 bytes with CANAL_SHARED) is allocated at creation,
 * and committed: a thread channel's pages are touched, a CANAL_SHARED
 * channel's memory file has its pages allocated (fallocate), as Go's make
 * and crossbeam's bounded do: a channel costs its full size from the
 * start (charged to the creating process's memory cgroup), and no page
 * has to be found while messages flow (one refused then, under strict
 * overcommit, would kill the process by SIGBUS; here it is ENOMEM; under
 * a memory cgroup's limit, its OOM killer acts at creation, not at a
 * send). (Named channels have their memory reserved in /dev/shm at
 * creation: canal_chan_create_named below.)
 *
 * Returns the channel, or NULL with errno set:
 *   EINVAL  flags has unknown bits, capacity > CANAL_CAPACITY_MAX,
 *           elt_size > CANAL_ELT_SIZE_MAX, or the buffer size overflows;
 *   ENOMEM  the memory could not be allocated;
 *   EAGAIN  the ring is mapped (CANAL_SHARED, or a thread channel
 *           larger than 256 KiB) while mlockall(MCL_FUTURE) is in force,
 *           and it would pass RLIMIT_MEMLOCK;
 *   EMFILE, ENFILE  (CANAL_SHARED) no file descriptor left for its memory
 *           file; other errors of memfd_create/mmap as their errno (EPERM:
 *           a security module refused the mapping).
 * Never blocks. Thread-safe.
 */
struct canal_chan *canal_chan_create(size_t elt_size, size_t capacity,
				     unsigned flags);

/*
 * canal_chan_destroy - free a channel. No thread may use the channel during
 * or after this call (close it and join its users first). Elements still in
 * the channel are discarded. NULL is accepted and ignored. For a shared
 * channel this only unmaps it from the calling process: other processes
 * keep using it, and the memory goes when the last one lets go of it (and
 * its name, if any, is unlinked). Never blocks.
 */
void canal_chan_destroy(struct canal_chan *ch);

/* canal_chan_elt_size, canal_chan_capacity - the values given at creation.
 * ch must be a valid channel. Never block; thread-safe. */
size_t canal_chan_elt_size(const struct canal_chan *ch);
size_t canal_chan_capacity(const struct canal_chan *ch);

/*
 * canal_chan_len - number of elements in the channel now (a snapshot that
 * may be stale as soon as it is returned; 0 for a synchronous channel with
 * no element being handed over). Never blocks; thread-safe.
 */
size_t canal_chan_len(const struct canal_chan *ch);

/* canal_chan_is_closed - 1 once canal_close() has been called, else 0.
 * Never blocks; thread-safe. */
int canal_chan_is_closed(const struct canal_chan *ch);

/* ------------------------------------------------------------------ */
/* Sending and receiving one element                                   */
/* ------------------------------------------------------------------ */

/*
 * canal_send - copy *elt into the channel.
 * Blocks while the channel is full (capacity 0: until a receiver has the
 * element, see above). Returns 0, or -EPIPE if the channel is closed (before
 * or while waiting for room; then the element was not sent and will never
 * be received). Capacity 0: a send whose element was already handed over
 * when the channel is closed returns 0 (the element is in the channel and
 * receivers drain it). A thread blocked in canal_send (or a timed send)
 * on a full buffered thread channel sleeps with its element offered: a
 * receiver that finds the channel empty before that sender has run again
 * takes the element from it directly and wakes it, and its call returns 0
 * (so *elt must not change while the call blocks, as for any call that
 * reads it).
 */
int canal_send(struct canal_chan *ch, const void *elt);

/*
 * canal_recv - take the oldest element and copy it to *elt.
 * Blocks while the channel is empty and open. Returns 0, or -EPIPE when the
 * channel is closed and every element has been received.
 */
int canal_recv(struct canal_chan *ch, void *elt);

/*
 * canal_try_send - like canal_send() but never blocks: returns -EAGAIN when
 * the channel is full (capacity 0: when no receiver is waiting) or its
 * indices kept moving under the call (see "Waiting and timeouts" above),
 * -EPIPE when closed, 0 when sent. With capacity 0, a 0 return means the
 * element was handed to a waiting receiver; the call does not wait for it
 * to be copied.
 */
int canal_try_send(struct canal_chan *ch, const void *elt);

/*
 * canal_try_recv - like canal_recv() but never blocks: -EAGAIN when the
 * channel is empty and open (or its indices kept moving under the call, as
 * canal_try_send), -EPIPE when closed and drained, 0 when an element was
 * received. On a synchronous channel it succeeds only when a sender is
 * waiting or has an element ready; it may then wait up to 1 ms
 * for that sender to hand its element over, and 2 ms more when that
 * sender still holds its slot (a reserve not yet committed: its element
 * then goes to the next receiver). It never waits otherwise.
 */
int canal_try_recv(struct canal_chan *ch, void *elt);

/*
 * canal_close - close the channel: later sends fail with -EPIPE, receivers
 * drain what is left then get -EPIPE, and every blocked sender and receiver
 * is woken. Returns 0, -EPIPE if the channel was already closed, or, on a
 * shared channel whose segment was cut short, -EBADMSG (the close reaches
 * no peer). Never blocks; thread-safe (exactly one of concurrent closes
 * returns 0).
 */
int canal_close(struct canal_chan *ch);

/* ------------------------------------------------------------------ */
/* Timeouts                                                            */
/* ------------------------------------------------------------------ */

/* The clock of deadlines is canal_now_ns() (<canal/base.h>). */

/*
 * canal_send_timeout, canal_recv_timeout - like canal_send() and
 * canal_recv() but give up after timeout_ns nanoseconds with -ETIMEDOUT.
 * timeout_ns < 0 waits forever; timeout_ns == 0 does not wait at all (then
 * the result is -ETIMEDOUT, not -EAGAIN, when the operation could not
 * complete at once). On -ETIMEDOUT nothing was sent or received.
 * Capacity 0: a receive whose announced demand a sender took by the
 * deadline waits past it for that element, up to 2 ms (returning 0 with
 * it), then returns -ETIMEDOUT and leaves the element to the next
 * receiver; a timeout of 0 can so wait that long (docs/DESIGN.md,
 * "Timeouts").
 */
int canal_send_timeout(struct canal_chan *ch, const void *elt,
		       int64_t timeout_ns);
int canal_recv_timeout(struct canal_chan *ch, void *elt, int64_t timeout_ns);

/*
 * canal_send_deadline, canal_recv_deadline - the same with an absolute
 * deadline on canal_now_ns()'s clock. A deadline in the past makes one
 * attempt without waiting.
 */
int canal_send_deadline(struct canal_chan *ch, const void *elt,
			uint64_t deadline_ns);
int canal_recv_deadline(struct canal_chan *ch, void *elt,
			uint64_t deadline_ns);

/* ------------------------------------------------------------------ */
/* Batches ("par lots")                                                */
/* ------------------------------------------------------------------ */

/*
 * canal_send_batch - send the n elements of the array elts (n * elt_size
 * bytes, in order). Claims as many free slots as are available with one
 * atomic operation per group, and blocks while the channel is full until all
 * n are sent. The elements of one batch are received in order, but elements
 * of other senders may be interleaved between groups.
 * Returns the number of elements sent: n, or fewer if the channel was closed
 * meanwhile (the first elements were sent, the rest were not); -EPIPE if it
 * was closed before any was sent; -EINVAL if n > 0 and elts is NULL while
 * elt_size > 0, or if n * elt_size overflows or n > SSIZE_MAX (no array is
 * that long). n == 0 returns 0 at once.
 */
ssize_t canal_send_batch(struct canal_chan *ch, const void *elts, size_t n);

/*
 * canal_recv_batch - receive at least one and at most max elements into the
 * array elts. Blocks until at least one is available; returns as soon as one
 * is, taking every element available up to max. Returns the count (>= 1),
 * -EPIPE when closed and drained, -EINVAL as above (with max for n).
 * max == 0 returns 0.
 */
ssize_t canal_recv_batch(struct canal_chan *ch, void *elts, size_t max);

/* canal_try_send_batch, canal_try_recv_batch - as above but never block:
 * send or receive what can be done at once; -EAGAIN if nothing could. */
ssize_t canal_try_send_batch(struct canal_chan *ch, const void *elts,
			     size_t n);
ssize_t canal_try_recv_batch(struct canal_chan *ch, void *elts, size_t max);

/* ------------------------------------------------------------------ */
/* Single copy ("une seule copie")                                     */
/* ------------------------------------------------------------------ */

/*
 * A slot of the channel lent to the caller, so that an element is written or
 * read in place: one copy instead of two.
 *
 * Sending: canal_send_reserve() claims the next position and lends its slot;
 * the caller writes the element at slot->data, then canal_send_commit()
 * publishes it (or canal_send_abort() withdraws it: receivers skip it).
 * Receiving: canal_recv_borrow() takes the oldest element and lends its slot;
 * the caller reads slot->data, then canal_recv_release() gives the slot back.
 *
 * What stays valid when: slot->data is valid for writing from reserve until
 * commit/abort, and for reading from borrow until release, and not after.
 * Every reserve must be followed by exactly one commit or abort, and every
 * borrow by exactly one release, by the same or another thread, before the
 * channel is destroyed. While a slot is lent, later positions may be claimed
 * by others, but receivers of the reserved position (and senders that wrap
 * around onto a borrowed slot) wait for it: hold slots briefly.
 * On a synchronous channel (capacity 0), reserve waits for a receiver, and
 * commit blocks until that receiver has taken (borrowed or copied) the
 * element. Shared channels: a receiver that dies while it holds a borrowed
 * slot loses that element (docs/GUARANTEES.md).
 */
struct canal_slot {
	void *data;	  /* elt_size bytes, see above */
	uint64_t position; /* private to canal */
};

/* canal_send_reserve - block until a slot is free, claim it. Returns 0, or
 * -EPIPE if the channel is closed. canal_try_send_reserve: -EAGAIN instead of
 * blocking. */
int canal_send_reserve(struct canal_chan *ch, struct canal_slot *slot);
int canal_try_send_reserve(struct canal_chan *ch, struct canal_slot *slot);

/* canal_send_commit - publish a reserved slot. Returns 0 (the element will
 * be received even if the channel is closed after the reserve), -EINVAL if
 * slot is not a live reserved slot of ch (a copy of one already committed
 * or aborted included), or, on a shared channel, -EOWNERDEAD if
 * a peer repaired the slot meanwhile, believing this process dead (nothing
 * is sent; a repair long enough before the commit that the slot has moved
 * on reads as a stale copy: -EINVAL). Blocks only on a synchronous
 * channel, until a receiver has taken the element. */
int canal_send_commit(struct canal_chan *ch, struct canal_slot *slot);

/* canal_send_abort - withdraw a reserved slot: nobody receives it. Returns 0,
 * or -EINVAL if slot is not a live reserved slot of ch. Never blocks. */
int canal_send_abort(struct canal_chan *ch, struct canal_slot *slot);

/* canal_recv_borrow - block until an element is there, lend its slot.
 * Returns 0, or -EPIPE when closed and drained. canal_try_recv_borrow:
 * -EAGAIN instead of blocking. */
int canal_recv_borrow(struct canal_chan *ch, struct canal_slot *slot);
int canal_try_recv_borrow(struct canal_chan *ch, struct canal_slot *slot);

/* canal_recv_release - give a borrowed slot back. Returns 0, -EINVAL if slot
 * is not a live borrowed slot of ch (a copy of one already released
 * included), or, on a shared channel, -EOWNERDEAD if a
 * peer repaired the slot meanwhile (what was read may be torn; a repair
 * long enough before the release that the slot has moved on reads as a
 * stale copy: -EINVAL). Never blocks. */
int canal_recv_release(struct canal_chan *ch, struct canal_slot *slot);

/* ------------------------------------------------------------------ */
/* Channels between processes                                          */
/* ------------------------------------------------------------------ */
/*
 * A shared channel behaves as a thread channel, between any processes that
 * map it: created with CANAL_SHARED before fork(), created or opened by
 * name, or handed over a Unix socket. Guarantees when a process dies (even
 * by SIGKILL in the middle of an operation) are in docs/GUARANTEES.md: the
 * others go on within about a second; what was sent (send returned 0) is
 * delivered exactly once, except the element a dying receiver had taken.
 * Death is told by a lock the kernel releases with the process, not by
 * pid: processes may be in different PID namespaces.
 *
 * fork(): a child that uses a shared channel it inherited holds its lock
 * as a record lock (fcntl F_SETLK) on the channel's memory file, which
 * the kernel also releases when the process closes any descriptor of that
 * file. So a forked child must not close a descriptor of the memory file
 * of an inherited channel once it has used that channel (one it passed to
 * canal_chan_open_fd, received, or got from canal_chan_fd; closing it
 * before the first use, or exec, is fine): its peers would take it for
 * dead and its operations could then fail with -EOWNERDEAD. canal's own
 * closes (canal_chan_destroy, opens by name or descriptor) keep the lock.
 */

/* Accept whatever the segment says (element size or capacity), on open. */
#define CANAL_ANY ((size_t)-1)

/*
 * canal_chan_create_named - create a shared channel with a name that
 * unrelated processes can open (a POSIX shared-memory object "/<name>").
 * name: 1 to 200 characters, no '/'. flags must be CANAL_SHARED. mode:
 * permission bits, applied exactly (the umask does not reduce them; 0
 * means 0600). The name appears only once the channel is complete, so an
 * opener never sees a half-made channel and a creator killed half-way
 * leaves no name (where /dev/shm lacks O_TMPFILE, the object is made under
 * its name and filled in place: an opener meanwhile gets -EBADMSG, and a
 * creator killed there leaves the name, to remove with
 * canal_chan_unlink). Its memory is reserved in /dev/shm (a tmpfs of
 * bounded size: 64 MiB in a container by default) at creation, so that
 * a channel /dev/shm cannot hold is refused then, not damaged at its
 * first send past the space left. On success stores the channel in
 * *out. Returns 0, -EINVAL (bad name, flags, mode or sizes), -EEXIST
 * (the name is taken), -ENOSPC (/dev/shm has no room for the channel),
 * -EACCES, -ENOMEM, -EMFILE/-ENFILE (no descriptor left). Never blocks;
 * thread-safe.
 */
int canal_chan_create_named(const char *name, size_t elt_size,
			    size_t capacity, unsigned flags, unsigned mode,
			    struct canal_chan **out);

/*
 * canal_chan_open - open a named channel. elt_size and capacity must match
 * the channel's, or be CANAL_ANY to take them from it. flags: CANAL_SHARED.
 * The segment is validated before use: a foreign, truncated or corrupted
 * segment is refused, never trusted. Returns 0 and *out, or
 *   -ENOENT no such name;
 *   -EACCES permission denied (the file's mode; or, open_fd and
 *           recv_handle, a descriptor not open for both reading and
 *           writing, or a file sealed against writing);
 *   -EINVAL bad name or flags;
 *   -ERANGE the element size or capacity differs from the channel's;
 *   -EBADMSG not a canal channel (a zero header included; or not a
 *            regular file: a directory, symbolic link, socket, FIFO),
 *            truncated or corrupted;
 *   -EPROTONOSUPPORT made by an incompatible canal layout version;
 *   -EMFILE, -ENFILE no file descriptor left; -ENOMEM.
 * Never blocks; thread-safe.
 */
int canal_chan_open(const char *name, size_t elt_size, size_t capacity,
		    unsigned flags, struct canal_chan **out);

/* canal_chan_open_fd - open the channel whose memory file is fd (the fd is
 * not taken over: the caller still closes it). Same checks and errors
 * (-EINVAL: fd < 0 or bad flags), and -EBADF: fd is not open. Never
 * blocks; thread-safe. */
int canal_chan_open_fd(int fd, size_t elt_size, size_t capacity,
		       unsigned flags, struct canal_chan **out);

/* canal_chan_unlink - remove a channel's name. Processes that have it open
 * keep using it. Returns 0, -ENOENT, -EACCES, -EINVAL (bad name), -EBADMSG
 * (the name is a directory: no channel). Never blocks; thread-safe. */
int canal_chan_unlink(const char *name);

/* canal_chan_fd - the memory file descriptor of a shared channel (owned by
 * the channel: do not close it), or -EINVAL for a thread channel. Never
 * blocks; thread-safe. */
int canal_chan_fd(const struct canal_chan *ch);

/*
 * canal_chan_send_handle - hand a shared channel to the process at the
 * other end of the Unix socket sock (SCM_RIGHTS on its memory file).
 * canal_chan_recv_handle - receive one and open it (same checks as
 * canal_chan_open). Both block as the socket does. Return 0 or a negative
 * errno (-EINVAL for a thread channel, or recv_handle's flags or out
 * bad: then nothing is taken from the socket; -ECONNRESET if the peer
 * closed its end, either call (never -EPIPE, canal's "channel closed");
 * -EBADMSG if what came is not a channel, the socket's errors as -errno:
 * -EAGAIN on a non-blocking socket with nothing there). Thread-safe.
 */
int canal_chan_send_handle(int sock, const struct canal_chan *ch);
int canal_chan_recv_handle(int sock, size_t elt_size, size_t capacity,
			   unsigned flags, struct canal_chan **out);

/* ------------------------------------------------------------------ */
/* Select: a passive wait on a set of operations                       */
/* ------------------------------------------------------------------ */

enum canal_op {
	CANAL_OP_SEND = 1, /* send *elt on ch */
	CANAL_OP_RECV = 2, /* receive into *elt from ch */
};

/* One operation of a select. result is written by canal_select() for the
 * case it completes: 0, or -EPIPE if the channel was closed. */
struct canal_case {
	struct canal_chan *ch;
	int op;	   /* enum canal_op */
	void *elt; /* element to send, or buffer to receive into */
	int result;
};

/* Flags for canal_select(). */
enum {
	/* Choose the first ready case in array order instead of a uniformly
	 * random one among the ready cases. */
	CANAL_SELECT_BIASED = 1u << 0,
};

/* Largest number of cases in one blocking canal_select(). */
#define CANAL_SELECT_MAX 128

/*
 * canal_select - perform exactly one of the n operations in cases, the
 * first that can complete, waiting up to timeout_ns for one to be ready
 * (0: poll, do not wait; < 0: wait forever).
 *
 * Among cases ready at once, one is chosen uniformly at random (as Go
 * does), unless flags has CANAL_SELECT_BIASED. A case on a closed channel
 * is ready: a send case completes with result -EPIPE, a receive case once
 * drained with result -EPIPE. The wait is passive: the thread sleeps on the
 * futex words of all involved channels (futex_waitv) while nothing is ready.
 * A case whose ch is NULL is ignored (as a nil channel in Go).
 *
 * Returns the index of the completed case (its result field says how), or
 *   -EAGAIN     timeout_ns == 0 and no case was ready;
 *   -ETIMEDOUT  the timeout expired;
 *   -EINVAL     cases is NULL with n > 0, n > CANAL_SELECT_MAX, an op is
 *               not a canal_op, or flags has unknown bits;
 *   -ENOENT     every case has a NULL channel and timeout_ns < 0 (it would
 *               block forever).
 * Thread-safe. Operations on synchronous channels take part: a receive case
 * makes the thread count as a waiting receiver while it waits. Such a case
 * waits for a hand-over as the single receives do: with timeout_ns == 0,
 * as canal_try_recv (up to 3 ms for a sender it met); with a timeout, as
 * canal_recv_timeout (up to 2 ms past it for an element a sender took its
 * demand for). If the select then completes another case, an element that
 * a sender handed over in that instant stays in the channel for the next
 * receiver (the sender's blocking send still returns only once it is
 * taken).
 */
int canal_select(struct canal_case *cases, size_t n, int64_t timeout_ns,
		 unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* CANAL_CHANNEL_H */
