/* SPDX-License-Identifier: MIT */
/*
 * transfer/driver.h - the thin driver interface of the engine's transfer
 * layer. A driver instance connects this process to one peer and moves
 * packets (byte strings of at most caps.max_packet bytes) both ways, in
 * order, without loss. It knows nothing of pieces, tags or requests.
 *
 * The window of the schedule layer sits on top: "one packet in flight" is
 * whatever the driver has accepted but the peer has not taken yet
 * (idle() says whether that is nothing), "one ready ahead" is the packet
 * the strategy builds next. send() either takes a whole packet (copying it:
 * the caller's buffers are free when it returns 0) or returns -EAGAIN.
 */
#ifndef CANAL_ENGINE_DRIVER_H
#define CANAL_ENGINE_DRIVER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct canal__driver_caps {
	size_t max_packet;       /* largest packet send() takes */
	size_t eager_max;        /* messages above go by rendezvous */
	bool gather;             /* send() gathers an iovec without a copy of
				  * its own (writev) */
	bool read_peer_memory;   /* receiving: an RTS that carries the
				  * sender's address is read with
				  * process_vm_readv (off once refused) */
	bool rts_address;        /* sending: RTS carry this side's buffer
				  * address, for the peer to read (off once
				  * the peer answers RTR with NOREAD) */
	size_t read_max;         /* ... for messages up to this size (0: no
				  * limit); larger ones go by RTR + DATA */
	size_t eager_max_noread; /* eager_max once the peer does not read
				  * (0: unchanged) */
	/* What the peer may send, when it may choose another eager size than
	 * this side (shm: each process's CANAL_ENGINE_SHM_RNDV, a refused
	 * read): EAGER pieces up to eager_accept_max, RTS pieces above
	 * rts_min (0: eager_max, for both). */
	size_t eager_accept_max;
	size_t rts_min;
	bool flush_noop;         /* flush() never has bytes to push (shm):
				  * progress skips push() while the window
				  * is empty */
	bool bulk;               /* bulk_send/bulk_recv: the data of a
				  * message above eager_max goes between the
				  * users' buffers by the driver's own
				  * rendezvous (UCX), after the engine's RTS,
				  * when it has at least bulk_min bytes */
	size_t bulk_min;
	bool costly_packets;     /* each packet costs a system call (TCP):
				  * a strategy that joins a large piece to
				  * small ones saves one. Without it (shm)
				  * a packet costs little more than its
				  * copy, and the receiver sees none of it
				  * before the whole is there. */
};

struct canal__driver;

struct canal__driver_ops {
	const char *name;
	/* Take the packet iov[0..n) (total bytes) whole: 0, -EAGAIN (no room:
	 * retry after progress), or a negative errno (the link is broken). */
	int (*send)(struct canal__driver *d, const struct iovec *iov, int n,
		    size_t total);
	/* Push out what send() accepted and could not hand to the kernel yet:
	 * 0 or a negative errno. */
	int (*flush)(struct canal__driver *d);
	/* Next received packet: 1 with *pkt and *len (valid until release()), 0
	 * when none, or a negative errno (-ECONNRESET: the peer went away,
	 * -EPROTO: malformed framing; the reason in the driver's message).
	 * A dead peer's packets are not lost: once health() has reported it
	 * dead, or the link broke, recv() still hands out, in order, every
	 * packet the peer had delivered (without waiting for it), and only
	 * then returns its error, or 0 meaning that nothing more will come
	 * (the session drains a dead peer's gate up to its first poll
	 * without a packet). The gate fails on the first error any
	 * operation returns: a driver may hold a broken link's error back
	 * from its other operations until recv() reports it (ucx.c); rails.c
	 * reads a rail whose health() failed to its end before failing it. */
	int (*recv)(struct canal__driver *d, const unsigned char **pkt,
		    size_t *len);
	void (*release)(struct canal__driver *d);
	/* true when recv() would return a packet without a system call (one
	 * is already in the ring or in the input buffer): lets the poller stop
	 * without a last, empty read per packet. */
	bool (*buffered)(struct canal__driver *d);
	/* true when nothing sent is waiting to be taken by the peer. */
	bool (*idle)(struct canal__driver *d);
	/* true when everything sent is in the peer's hands, so that closing
	 * now loses nothing (TCP: the kernel's send queue is empty, every
	 * byte acknowledged: a socket closed with unread input resets the
	 * connection, and the reset drops what the kernel had not delivered;
	 * acknowledged bytes stay readable at the peer). Asked only by the
	 * session's close, so it may cost a system call. NULL: idle(). */
	bool (*delivered)(struct canal__driver *d);
	/* 0 while the peer is alive, -ECONNRESET once it is known dead or
	 * has closed its session (shm: its mark in the segment; then
	 * peer_closed is set), -EPROTO when the link's own state is
	 * inconsistent (shm: the peer's head and records disagree; the
	 * reason in why). */
	int (*health)(struct canal__driver *d);
	/* Read len bytes at the peer's address into buf (one copy), or a
	 * negative errno; NULL when !caps.read_peer_memory. */
	int (*read_peer)(struct canal__driver *d, void *buf, unsigned long addr,
			 size_t len);
	/* Bulk transfers (NULL when !caps.bulk). bulk_send starts moving len
	 * bytes of buf to the peer, where the bulk_recv of the same id takes
	 * them: buf is the driver's until bulk_test() has reported the end
	 * (after bulk_cancel(), the peer may still read it). bulk_recv posts
	 * the receive of the peer's bulk_send(id) of len bytes: the first
	 * cap of them into buf (the rest is dropped when cap < len); it may
	 * be posted before or after the data is sent. Both: 0 with *h, or a
	 * negative errno. bulk_test: 0 while under way; 1 done (*len: bytes
	 * received, for a receive); -EMSGSIZE (a receive: more than len was
	 * sent) or another negative errno (the link broke); h is gone once
	 * it returns non-zero. bulk_cancel ends h now (a receive the peer
	 * has started: after at most about a second). */
	int (*bulk_send)(struct canal__driver *d, uint64_t id, const void *buf,
			 size_t len, void **h);
	int (*bulk_recv)(struct canal__driver *d, uint64_t id, void *buf,
			 size_t cap, size_t len, void **h);
	int (*bulk_test)(struct canal__driver *d, void *h, size_t *len);
	void (*bulk_cancel)(struct canal__driver *d, void *h);
	void (*close)(struct canal__driver *d);
};

struct canal__driver {
	const struct canal__driver_ops *ops;
	struct canal__driver_caps caps;
	pid_t peer_pid;
	bool peer_closed;        /* health(): the peer closed its session
				  * (alive), rather than died */
	char why[96];            /* reason of the last error, for messages */
};

/* lazy.c: without a pidfd (pidfd_open() failed: a kernel before 5.3, a
 * seccomp profile that denies it, a process already gone), whether pid
 * has ended: kill(pid, 0) says ESRCH, or, since an exited process that
 * its parent has not reaped yet still takes signals, its state in /proc
 * is Z or X. */
bool canal__pid_gone(pid_t pid);

/* shm.c: how shm moves a message above its eager size
 * (CANAL_ENGINE_SHM_RNDV): 0 through the ring, 1 by process_vm_readv from
 * the sender's buffer, -EINVAL for a value other than auto, ring, read. */
int canal__shm_rndv_mode(void);

/* shm.c: connect to peer through a segment in dir (the lower rank creates
 * it). Blocks up to timeout_ms. read: messages above the eager size by
 * process_vm_readv (canal__shm_rndv_mode() == 1, worked out once at open),
 * else through the ring. */
int canal__shm_connect(const char *dir, int rank, int peer, int timeout_ms,
		       bool read, struct canal__driver **out);

/* shm.c: the lazy connection: create the pair's segment, or attach to the
 * one the peer created; never waits for the peer (lazy.c rings its inbox).
 * peer_pid (from the peer's inbox) is watched for death from now on; read
 * as for canal__shm_connect. 0, -EPROTO (a file there that is not a segment), or an errno. */
int canal__shm_attach(const char *dir, int rank, int peer, pid_t peer_pid,
		      bool read, struct canal__driver **out);

/* tcp.c: listen on bind_addr (port chosen by the kernel) and publish the
 * port in dir; connect to every lower rank, accept every higher one.
 * drivers[size] receives one driver per peer. Blocks up to timeout_ms.
 * dead_after_ms > 0 sets TCP_USER_TIMEOUT and keepalive probes. */
int canal__tcp_connect_all(const char *dir, const char *bind_addr, int rank,
			   int size, int timeout_ms, int dead_after_ms,
			   struct canal__driver **drivers);

struct canal__xchg;

/* The same with the address published through x (exchange.h: files,
 * PMIx or the launcher; drivers[x->size]) and key (32 bytes) or NULL: the
 * handshake of auth.h. The job token of the openings (auth.h) is drawn by
 * rank 0 and published with its address; the others read it there before
 * their first dial. -ESTALE: a peer's published address is answered by a
 * rank of another job (its publication is stale), logged on stderr;
 * -EPROTO: rank 0's publication has no job token (an older canal). */
int canal__tcp_connect_xchg(const struct canal__xchg *x, const char *bind_addr,
			   int timeout_ms, int dead_after_ms,
			   const unsigned char *key,
			   struct canal__driver **drivers);

struct sockaddr_in;

/* tcp.c: connect to peer at sa with the opening of auth.h (key NULL:
 * plain; job: this rank's job token, CANAL__JOB_BYTES), dialing again
 * while the peer is not listening yet or drops the connection before its
 * verdict, until deadline (CLOCK_MONOTONIC, ms). The connected blocking
 * socket, or a negative errno: -ETIMEDOUT at the deadline, -EACCES /
 * -ESTALE / -EPROTO the peer refused this rank for the key, the job (it
 * is a rank of another job) or the rank (final, logged on stderr with the
 * peer's reason), another errno from socket/connect. */
int canal__tcp_dial(const struct sockaddr_in *sa, int rank, int peer,
		    const unsigned char *key, const unsigned char *job,
		    uint64_t deadline);

/* accept.c: accept on lfd (a listening socket, non-blocking) the
 * connections of the ranks in [lo, hi) whose fds[] entry is -1, reading
 * their openings (auth.h; key NULL: plain; job: the job token they must
 * carry, CANAL__JOB_BYTES) all at once so that a slow or
 * silent connection holds up none of the others; each opening has
 * CANAL__OPENING_WAIT_MS from its accept. Connections refused, late or
 * unfinished when the call returns are closed and logged on stderr.
 * fds[r] receives rank r's connected socket once it has been answered
 * CANAL__V_OK; the caller owns those, also after a failure. Returns 0 once
 * every fds[lo, hi) is set; -ETIMEDOUT at deadline (canal__now_ms()
 * clock); -ENOMEM; or the errno of a failed poll or accept. */
int canal__tcp_accept_peers(int lfd, const unsigned char *key,
			    const unsigned char *job, int rank, int lo, int hi,
			    uint64_t deadline, int *fds);

/* ucx.c: a UCP worker for the session, its address published through x, an
 * endpoint per peer. native: the session's messages will go by UCX's own
 * matching (below), so no rendezvous threshold of the engine's is set;
 * every rank must say the same (-EPROTO otherwise). Built when UCX is
 * found (CANAL_HAVE_UCX). */
int canal__ucx_connect_all(const struct canal__xchg *x, int timeout_ms,
			   bool native, struct canal__driver **drivers);

/*
 * ucx_native.c: the engine's messages as UCP tagged messages, matched by
 * UCX itself (as Open MPI's pml ucx does) instead of going as packets
 * through the engine's schedule and collect layers. The UCP tag holds
 * the engine's tag and the sender's rank (exact receives, or any sender
 * by mask); UCX keeps the order of one endpoint's messages of one tag
 * and matches receives in the order they were posted; it chooses eager
 * or its own rendezvous by size.
 *
 * An operation (struct canal__native_op, inside the caller's request)
 * that was started (0 returned) ends exactly once through op->done,
 * from canal__ucx_native_progress(), from canal__ucx_native_abort(), or,
 * for a receive whose message had already arrived, before
 * canal__ucx_native_recv() returns. info is NULL when the operation was
 * cancelled; err: 0, -EMSGSIZE (a receive: the message, info->len
 * bytes, was longer than the buffer; what the buffer holds then is not
 * defined: UCX's rendezvous writes nothing into it),
 * -ECANCELED, -ENOMEM, or -ECONNRESET (the endpoint failed).
 * Threading: the session's (one thread at a time, or its lock).
 */
struct canal__native;
struct canal__native_info {
	int rank;      /* the sender */
	unsigned tag;
	size_t len;    /* the message's length as sent */
	bool more;     /* sent with CANAL__NATIVE_MORE */
};
/* Or'ed to the tag given to canal__ucx_native_send(): a piece of a pack
 * that is not its last (collect/pack.c); the receive reports it in
 * canal__native_info.more, and matching ignores it. */
#define CANAL__NATIVE_MORE 0x10000u
struct canal__native_op {
	void *h;       /* UCX's request while it is under way, else NULL */
	bool live;     /* started and not ended */
	bool send;
	size_t cap;    /* a receive's buffer length */
	void (*done)(struct canal__native_op *op, int err,
		     const struct canal__native_info *info);
};

#ifdef CANAL_HAVE_UCX
/* The native object over the drivers[size] that canal__ucx_connect_all
 * made with native set (drivers[rank] NULL): 0, -ENOMEM, or -ENODEV
 * when there is no peer. */
int canal__ucx_native_new(struct canal__driver **drivers, int size, int rank,
			  struct canal__native **out);
/* Free n (every operation must have ended: canal__ucx_native_abort). */
void canal__ucx_native_free(struct canal__native *n);
/* Send len bytes of buf to rank on tag (buf untouched until the end):
 * 1 when done already (op->done is not called), 0 when under way, or a
 * negative errno (nothing started: -ECONNRESET, -ENOMEM). */
int canal__ucx_native_send(struct canal__native *n, int rank, unsigned tag,
			   const void *buf, size_t len,
			   struct canal__native_op *op);
/* Receive the next message from rank (or -1: any) on tag into buf[cap]:
 * 0 (started; op->done may already have been called), or a negative
 * errno (nothing started). */
int canal__ucx_native_recv(struct canal__native *n, int rank, unsigned tag,
			   void *buf, size_t cap, struct canal__native_op *op);
/* A message from rank (or -1) on tag that no receive has taken yet:
 * 1 and *info (if info is not NULL), or 0. Makes no progress. */
int canal__ucx_native_probe(struct canal__native *n, int rank, unsigned tag,
			    struct canal__native_info *info);
/* Progress the worker once (callbacks run here): the number of events. */
unsigned canal__ucx_native_progress(struct canal__native *n);
/* Progress it until it has nothing left to do (bounded): what a dead
 * peer had already delivered is then matched or queued as unexpected.
 * The number of events. */
unsigned canal__ucx_native_drain(struct canal__native *n);
/* End op now: a receive not matched yet is cancelled; one under way gets
 * the worker's progress while it has work (bounded, no waiting for the
 * peer), a send none (UCX cannot cancel sends): then it is dropped, and
 * UCX may still read or write its buffer until the worker is destroyed
 * (engine.h). op->done is called (-ECANCELED, info NULL, if UCX did not
 * end it). No-op if op has ended. */
void canal__ucx_native_abort(struct canal__native *n,
			     struct canal__native_op *op);
#else
/* Without UCX no session has a native object: never called. */
static inline int canal__ucx_native_send(struct canal__native *n, int rank,
					 unsigned tag, const void *buf,
					 size_t len,
					 struct canal__native_op *op)
{
	(void)n, (void)rank, (void)tag, (void)buf, (void)len, (void)op;
	return -ENOTSUP;
}
static inline int canal__ucx_native_recv(struct canal__native *n, int rank,
					 unsigned tag, void *buf, size_t cap,
					 struct canal__native_op *op)
{
	(void)n, (void)rank, (void)tag, (void)buf, (void)cap, (void)op;
	return -ENOTSUP;
}
static inline int canal__ucx_native_probe(struct canal__native *n, int rank,
					  unsigned tag,
					  struct canal__native_info *info)
{
	(void)n, (void)rank, (void)tag, (void)info;
	return 0;
}
static inline unsigned canal__ucx_native_progress(struct canal__native *n)
{
	(void)n;
	return 0;
}
static inline unsigned canal__ucx_native_drain(struct canal__native *n)
{
	(void)n;
	return 0;
}
static inline void canal__ucx_native_abort(struct canal__native *n,
					   struct canal__native_op *op)
{
	(void)n, (void)op;
}
static inline void canal__ucx_native_free(struct canal__native *n)
{
	(void)n;
}
#endif

/* rails.c: one driver over subs[0..n) (n <= 4) to the same peer: packets
 * spread over them, acknowledged, sent again on the others when one fails
 * (it takes ownership of subs). canal__rails_info: bytes sent on a rail
 * and whether it failed; returns the number of rails, or -EINVAL when d is
 * not a rails driver. */
int canal__rails_new(struct canal__driver **subs, int n,
		     struct canal__driver **out);
int canal__rails_info(const struct canal__driver *d, int rail,
		      unsigned long long *bytes, bool *dead);
/* For the tests only: rail's own driver (to put malformed rails frames on
 * the wire), or NULL. */
struct canal__driver *canal__rails_sub(struct canal__driver *d, int rail);
/* For the fuzz test only: put raw bytes on the wire, below the framing.
 * shm: copy n bytes at the ring's head position (up to its end) and move
 * the published head by advance (any value, however wrong): 0; tcp: write
 * up to n bytes on the socket without blocking: the number written (0 when
 * the socket is full), or a negative errno. */
int canal__shm_inject(struct canal__driver *d, const void *bytes, size_t n,
		      uint64_t advance);
int canal__tcp_inject(struct canal__driver *d, const void *bytes, size_t n);

#endif /* CANAL_ENGINE_DRIVER_H */
