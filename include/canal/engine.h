/* SPDX-License-Identifier: MIT */
/*
 * canal/engine.h - a message engine between processes (NewMadeleine's
 * collect / schedule / transfer design), over shared memory, TCP or UCX.
 *
 * Conventions, stated once and kept everywhere (as in canal/channel.h):
 *  - Functions returning int return 0 (or a non-negative count, or 1 for
 *    "yes") on success and a negative errno value on failure. errno is not
 *    touched.
 *  - A session (struct canal_engine) belongs to one process and is used by
 *    one thread at a time: calls on one session must not overlap (take a
 *    lock around them if several threads share it). Sessions of different
 *    processes are independent.
 *  - A gate is a peer, named by its rank (0 .. size-1, the rank given by
 *    canal-launch or in canal_engine_options). Its own rank is not a gate.
 *    CANAL_ENGINE_ANY_GATE stands for "any peer" in receives and probes.
 *  - A tag (0 .. 65535) names a logical flow. Messages on one (gate, tag)
 *    are received in the order they were sent. Nothing else is promised:
 *    messages of different tags or gates may overtake each other, and the
 *    strategies use that freedom.
 *  - Progress is made by the caller (the default): inside
 *    canal_engine_wait(), canal_engine_test(), canal_engine_probe() and
 *    canal_engine_progress(). A send is not guaranteed to leave the process
 *    until one of them runs. Blocking calls poll (spin, then yield the CPU)
 *    until they can complete. With the option progress = "thread" (or
 *    $CANAL_ENGINE_PROGRESS=thread), a thread of the session also makes
 *    progress while the caller is elsewhere (computing): rendezvous are
 *    answered, large messages copied, windows pushed; it polls while a
 *    request of the session is incomplete or something is queued, backing
 *    off to short sleeps (up to 0.5 ms) when nothing moves, and sleeps
 *    without polling when the session has no work. It costs a CPU while it
 *    polls: on a machine with no spare core it slows a ping-pong down.
 *    With the thread, calls on one session may also come from several
 *    threads at once (they are serialised by a lock), as long as each
 *    request and each pack is used by one thread at a time.
 *  - Buffers given to isend/irecv/pack/unpack must stay valid and untouched
 *    until their request completes.
 *  - Errors of a peer: when a peer dies (its process exits or is killed;
 *    seen within 1 s on shm; on TCP on connection reset, or after
 *    tcp_timeout_ms of silence from a machine that went away), closes its
 *    session (its process living on: on shm seen within 1 s too, "closed
 *    its session"; on TCP as the connection's end) or sends a
 *    malformed frame, its gate is closed: its pending requests complete with
 *    -ECONNRESET (peer gone) or -EPROTO (malformed input), later operations
 *    on it return the same error at once (but receives, probes and unpacks
 *    still take the messages up to the eager size that had arrived whole
 *    before it closed: a peer's last words), and canal_engine_gate_error()
 *    tells which peer failed and why. Other gates go on unaffected.
 *    Any-gate receives fail (with the last gate's error) only once every
 *    gate is closed.
 *
 * Messages up to the driver's eager size travel in one copy through the
 * driver's buffers (and may be held by the receiver until a receive is
 * posted, within a credit window: flow control); larger ones use a
 * rendezvous (request to send, ready to receive, then the data straight
 * into the receive buffer; on shm by process_vm_readv when the kernel
 * allows it).
 *
 * UCX's matching: a session whose driver is "ucx" alone hands its
 * messages to UCX as UCP tagged messages (the engine's tag and the
 * sender's rank in the UCP tag), which UCX matches, orders and carries
 * by its own protocols, as Open MPI's pml ucx does: a message costs a
 * UCP send and a UCP receive, between the users' buffers. Everything
 * above holds, with these differences: the strategy plays no part (no
 * aggregation); CANAL_ENGINE_EXPRESS and urgent tags change nothing (no
 * queue to jump: messages leave in the order of the calls, a pack's
 * pieces in packing order; an express unpack still returns once its
 * piece is there); flow control is UCX's (it holds what arrives before
 * its receive is posted, without the engine's credit limit); after
 * -EMSGSIZE what the receive buffer holds is not defined (UCX's
 * rendezvous writes nothing); a receive that UCX had matched to a large
 * message when its sender died fails when UCX fails that transfer, with
 * -ECONNRESET, an any-gate one too while other gates are open (UCX sees
 * a peer on another host die by its peer failure detection, asked for
 * toward other hosts only: on one host it would cost UCX's shared-memory
 * transports; another hostname, boot id or PID namespace is another
 * host, so a peer in a container of this machine is one; $CANAL_UCX_ERR_MODE=peer asks for it toward every peer,
 * none toward none, other values fail open with -EINVAL), and may still
 * be written by UCX until the session closes, after its request has
 * failed.
 * $CANAL_ENGINE_UCX_NATIVE=0 carries them as packets through the
 * engine's layers instead (1 or unset: UCX's matching; other values:
 * open fails with -EINVAL); every rank of a job must choose alike (open
 * fails with -EPROTO otherwise).
 *
 * Large messages on shm: up to the eager size a message is copied through
 * the pair's ring; above, by rendezvous, either through the ring again
 * (64 KiB chunks, both sides copying at once; eager size 64 KiB) or copied
 * once by the receiver straight from the sender's buffer with
 * process_vm_readv (eager size 8 KiB; above 1 MiB the ring again). $CANAL_ENGINE_SHM_RNDV chooses:
 * "ring", "read", or "auto" (unset: read on Intel processors, the ring on
 * others, after measurements on each: docs/ENGINE.md); other values: open
 * fails with -EINVAL; read once, at open. Ranks may differ. Where the
 * kernel refuses the read (EPERM: Yama's ptrace_scope, seccomp) the
 * receiver uses the ring, and its peer then sends to it as the ring does.
 * Above the eager size a send completes only once the receiver has
 * posted its receive and the data has left the sender: taken by the
 * receiver (shm, UCX), or, over TCP, handed to the kernel (the peer's
 * socket buffers may hold it: a receiver that dies before reading it
 * loses it, and a sender that dies before completion loses the message).
 * Two processes that each wait for their send before posting their
 * receive work only below the eager size, as with MPI's standard sends. The eager size is per gate and may grow during
 * the session (shm: 8 KiB while reading, 64 KiB once the peer says it
 * does not read; TCP 64 KiB; UCX 8 KiB): rely on 8 KiB at most.
 */
#ifndef CANAL_ENGINE_H
#define CANAL_ENGINE_H

#include <canal/base.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct canal_engine;
struct canal_engine_req;
struct canal_engine_pack;

/* Any peer, for receives and probes. */
#define CANAL_ENGINE_ANY_GATE (-1)
/* Largest tag. */
#define CANAL_ENGINE_TAG_MAX 65535u

/* Flags of a piece (canal_engine_pack(), canal_engine_unpack(); of a
 * message, canal_engine_isend(): CANAL_ENGINE_EXPRESS only). */
enum {
	/* Needed early: sent ahead of queued pieces of other flows and never
	 * held back for aggregation; canal_engine_unpack() of an express piece
	 * returns only once it has arrived, so its content can decide how the
	 * rest of the message is unpacked. */
	CANAL_ENGINE_EXPRESS = 1u << 0,
	/* Free to be reordered: the strategy may send it after pieces packed
	 * later (it is still received into the unpack call of its rank).
	 * A pack's pieces only: canal_engine_isend() refuses it (-EINVAL);
	 * canal_engine_unpack() accepts it and ignores it (the sender's
	 * flags may be given as they are). */
	CANAL_ENGINE_REORDER = 1u << 1,
};

/* The largest session (ranks); larger ones are refused (-EINVAL). A
 * session reserves half a MiB of address space per peer at open (the
 * next sequence number of each tag, each way: 32 GiB at this bound),
 * resident only for the tags in use: 58 MB for a session of 65 536
 * opened on x86-64, about 0.9 KB per peer. */
#define CANAL_ENGINE_SIZE_MAX 65536

/* Options of canal_engine_open(). Zeroed fields take the defaults named. */
struct canal_engine_options {
	int rank;             /* this process; -1: $CANAL_RANK (below -1:
			       * -EINVAL) */
	int size;             /* number of processes, at most
			       * CANAL_ENGINE_SIZE_MAX; 0: $CANAL_SIZE
			       * (negative or above it: -EINVAL) */
	const char *dir;      /* rendezvous directory shared by the processes
			       * (addresses, shm segments); NULL:
			       * $CANAL_LAUNCH_DIR */
	const char *driver;   /* "shm", "tcp" or "ucx", or several joined
			       * by '+' ("shm+tcp", "ucx+tcp"): one rail of
			       * each per peer, large messages split by
			       * their measured bandwidths, a failed rail
			       * dropped (bind then takes one address);
			       * NULL: $CANAL_ENGINE_DRIVER, else "shm" */
	const char *strategy; /* "default" (one packet per piece) or
			       * "aggregate" (small pieces of any flows packed
			       * together while the driver is busy); NULL:
			       * $CANAL_ENGINE_STRATEGY, else "default" */
	const char *bind;     /* TCP: address to listen on, or several
			       * comma-separated (up to 4): one rail each;
			       * each an IPv4 address, an interface name
			       * ("eth0": its address) or a subnet
			       * ("10.1.0.0/16": this host's address in it),
			       * so that one setting serves every host of a
			       * job; NULL: $CANAL_ENGINE_BIND, else
			       * 127.0.0.1. open fails with -EADDRNOTAVAIL
			       * (and says which) when an entry names no
			       * address of this host, -EINVAL when one is
			       * malformed or names no one host (0.0.0.0,
			       * multicast, broadcast: the address bound is
			       * the one peers dial; "0.0.0.0/0" means any
			       * of this host's) */
	int connect_timeout_ms; /* how long open waits for the peers, in
				 * all (every gate, rail and driver kind
				 * together): a peer missing that long
				 * fails it with -ETIMEDOUT. TCP:
				 * connections to this rank's listener
				 * that are not its peers' (a stray
				 * process, slow or silent) hold up neither
				 * the peers nor open: each is closed and
				 * logged when its opening fails, 10 s
				 * after it came, or when open returns.
				 * 0 (or negative): 30000 */
	int tcp_timeout_ms;   /* TCP: a peer that leaves data unacknowledged,
			       * or answers no keepalive probe, this long is
			       * declared dead (TCP_USER_TIMEOUT and keepalive
			       * every second); 0 (or negative):
			       * $CANAL_ENGINE_TCP_TIMEOUT_MS (a value other
			       * than 0 to 1048576 ms is ignored), else the
			       * kernel's defaults (minutes) */
	const char *key_file; /* TCP: a regular file of 16 to 4096 secret
			       * bytes that only this user can read (chmod
			       * 600; anything else, a FIFO say, fails open
			       * at once with -EACCES), the same on every
			       * rank: connections between ranks must pass
			       * an HMAC challenge-response keyed by it,
			       * others are refused, closed and logged; NULL:
			       * $CANAL_ENGINE_KEY_FILE, else no handshake */
	const char *connect;  /* "lazy": with the shm driver alone, a gate's
			       * segment is made the first time something is
			       * sent on it (either side may be first), so a
			       * job of n processes that talk to few peers
			       * does not build n^2 segments; "eager": every
			       * gate at open. Other drivers connect at open
			       * either way. NULL: $CANAL_ENGINE_CONNECT,
			       * else "lazy" */
	const char *progress; /* "caller" (progress only inside the calls)
			       * or "thread" (a progress thread as well; see
			       * the top of this file); NULL:
			       * $CANAL_ENGINE_PROGRESS, else "caller" */
};

/* What a completed receive (or a probe) found. */
struct canal_engine_status {
	int gate;      /* the sender */
	unsigned tag;
	size_t len;    /* length of the message as sent (may exceed the
			* receive buffer: then the request failed with
			* -EMSGSIZE and only the buffer's length was written;
			* with UCX's matching, see above, what the buffer
			* holds then is not defined) */
};

/*
 * canal_engine_options_init - fill *opt with the defaults (rank -1, size 0,
 * everything else from the environment). Never fails; thread-safe.
 */
void canal_engine_options_init(struct canal_engine_options *opt);

/*
 * canal_engine_open - open this process's session and connect it to every
 * peer of the job (shm with connect "lazy", the default: only learn that
 * every peer is there; gates connect on first use) (through the rendezvous directory: each process publishes
 * its address there, as canal-launch arranges; or, when the process was
 * started by a PMIx launcher such as mpirun or srun and no rank is given
 * nor $CANAL_RANK set, rank, size and addresses come from PMIx).
 * opt may be NULL (all defaults: the environment canal-launch sets).
 * Returns 0 and *out, or:
 *   -EINVAL     bad rank/size (a size above CANAL_ENGINE_SIZE_MAX,
 *               whether given, from the environment or from PMIx),
 *               unknown driver, strategy, connect or
 *               progress mode, no directory, a bad bind list, a bad
 *               $CANAL_ENGINE_UCX_NATIVE, (shm) $CANAL_ENGINE_SHM_RNDV
 *               or (ucx) $CANAL_UCX_ERR_MODE, (tcp) a key_file not
 *               of 16 to 4096 bytes;
 *   -ENOTSUP    driver "ucx" without UCX (not built, or libucp missing);
 *   -EPROTO     driver "ucx": ranks disagree on UCX's matching
 *               ($CANAL_ENGINE_UCX_NATIVE; the reason on stderr), or a
 *               peer's published UCX address is malformed or corrupted
 *               (refused before UCX sees it); (tcp) a peer refused this
 *               rank's opening for its rank (out of range, connected
 *               already) or its version (a canal older than job tokens),
 *               or rank 0 published no job token with its address;
 *   -EACCES     key_file readable by others, not this user's, or not a
 *               regular file (a FIFO or a device: refused at once, not
 *               waited on); (tcp) a peer refused this rank's handshake
 *               for the key (another key_file, or a key on one side
 *               only), or answered it with a wrong MAC;
 *   -ESTALE     (tcp) the address a peer published is answered by a
 *               rank of another job (the peer is gone and its port is
 *               another job's now). Every TCP connection's opening
 *               carries a token of its job, which the ranks agree on
 *               through the address exchange (rank 0 draws it), keyed
 *               or not: a connection between two jobs is refused on
 *               both sides (the reason on stderr), never a gate, and
 *               the rank that dialed fails its open at once; the rank
 *               that was dialed goes on waiting for its own peer;
 *   -ETIMEDOUT  a peer did not appear within connect_timeout_ms (open
 *               returns then, about connect_timeout_ms after it began:
 *               every step counts against it, publishing this rank's
 *               address through canal-launch's key-value service and the
 *               wait for a TCP peer's handshake verdict included); also
 *               when canal-launch's key-value service ($CANAL_LAUNCH_ADDR)
 *               could not be reached until then (gone: connections
 *               refused; or silent), for a put and a get alike: open asks
 *               it again until the deadline and says -ETIMEDOUT, never
 *               the last attempt's errno (the reason on stderr);
 *   -ECONNRESET (PMIx launch) a peer ended (exited, or its open failed)
 *               without joining the address exchange;
 *   -EIO        (PMIx launch) the PMIx server failed the exchange;
 *               (tcp, key_file) libsodium failed to initialise;
 *               (tcp) the key_file could not be read (or read's
 *               other errno);
 *   -E2BIG      driver "ucx": this process's UCX worker address is too
 *               long to publish (above about 1.9 KB: many transports;
 *               narrow them with UCX_TLS or UCX_NET_DEVICES);
 *   -ENOMEM, or the errno of a failed socket/mmap/open call.
 * Blocks until every peer is connected (lazy: has opened). Thread-safe
 * (different sessions). A gate connected lazily that cannot be (its
 * segment cannot be made) is closed with that error, named by
 * canal_engine_gate_error().
 */
int canal_engine_open(const struct canal_engine_options *opt,
		      struct canal_engine **out);

/*
 * canal_engine_close - close the session: stops its progress thread if it
 * has one, flushes what was queued for living peers (waiting up to 1 s in
 * all; over TCP until the peer's host has acknowledged every byte, so that
 * a send reported complete is not lost to the connection's reset when the
 * peer sent something this process never read; a peer that takes nothing
 * for that whole second may still lose what its host had not taken when
 * it sends again: a receiver that may stall that long waits for its
 * messages before its peer closes, e.g. with a reply), then frees
 * everything, including requests not waited for and packs not ended
 * (pack_begin, unpack_begin: their handles are then invalid). No other
 * call on the session may run or follow. NULL is accepted. Returns 0, or
 * -EBUSY when requests of the application were still pending (they are
 * freed all the same; those of remote channels a stopped hub left
 * unfinished, <canal/remote.h>, are not counted), or -EINVAL when a
 * remote hub still drives the session (canal_remote_hub_start(): nothing
 * is done, the session stays open; stop the hub, then close). A send still
 * pending then whose data goes by rendezvous (messages above the driver's
 * eager size: shm's process_vm_readv, UCX's bulk transfers) may still be
 * read by a living peer that receives it later: keep its buffer intact
 * until that peer is done or gone. Likewise a receive still pending then
 * whose data UCX moves into the application's buffer (UCX's bulk
 * transfers and its native matching, above its eager size) may still be
 * written by a living peer that sends it later, when UCX's rendezvous
 * has that peer write (a put: UCX_RNDV_SCHEME=put_zcopy, or UCX's own
 * choice of protocol; on one host through the kernel's
 * process_vm_writev, which needs no registration that close could
 * revoke): keep the buffer unused until that peer is done or gone, or
 * wait for such receives before closing. The engine's own buffers that
 * such a peer may still read or write (the UCX driver's copies of the
 * packets it sends, its input and scratch buffers) are never reused:
 * their memory is given back and their addresses stay reserved,
 * inaccessible, for the process's life (a few MiB of address space per
 * gate that had a transfer stalled at close), so that the peer's late
 * access fails instead of touching memory put to another use.
 */
int canal_engine_close(struct canal_engine *e);

/* canal_engine_rank, canal_engine_size - this process's rank, the number of
 * processes. Never block. */
int canal_engine_rank(const struct canal_engine *e);
int canal_engine_size(const struct canal_engine *e);

/* canal_engine_driver, canal_engine_strategy - names in use (the driver
 * as given: "shm", "tcp", "ucx" or kinds joined, "shm+tcp"; "default",
 * "aggregate"). Never block. */
const char *canal_engine_driver(const struct canal_engine *e);
const char *canal_engine_strategy(const struct canal_engine *e);

/*
 * canal_engine_isend - start sending len bytes of buf to gate on tag.
 * flags: 0 or CANAL_ENGINE_EXPRESS (CANAL_ENGINE_REORDER is -EINVAL).
 * *req receives the request, to be given to canal_engine_wait() or
 * canal_engine_test() exactly once.
 * Returns 0, or -EINVAL (bad gate, tag, flags, NULL req, or buf NULL with
 * len > 0), -EMSGSIZE (len >= 4 GiB), -ENOMEM, or the gate's error if it is
 * closed (-ECONNRESET, -EPROTO; a gate connected lazily whose segment
 * could not be made: that errno, see canal_engine_open()). Never blocks
 * (the message is queued).
 */
int canal_engine_isend(struct canal_engine *e, int gate, unsigned tag,
		       const void *buf, size_t len, unsigned flags,
		       struct canal_engine_req **req);

/*
 * canal_engine_irecv - post a receive of up to len bytes into buf from gate
 * (or CANAL_ENGINE_ANY_GATE) on tag. Receives posted on one (gate, tag)
 * take that flow's messages in order; an any-gate receive takes the next
 * message of whichever gate has one first.
 * Returns 0 and *req, or -EINVAL, -ENOMEM, or the gate's error (any
 * gate: once every gate is closed, the error of one of them, unless a
 * message that arrived before is still there to take).
 * Never blocks.
 */
int canal_engine_irecv(struct canal_engine *e, int gate, unsigned tag,
		       void *buf, size_t len, struct canal_engine_req **req);

/*
 * canal_engine_wait - make progress until req completes, then free it.
 * st (may be NULL) receives the gate, tag and length (receives).
 * Returns 0, or the request's error: -ECONNRESET / -EPROTO (its gate
 * failed; or the gate's error as canal_engine_isend() says),
 * -EMSGSIZE (message longer than the receive buffer; a pack's, see
 * canal_engine_pack_end()); or -EINVAL (NULL e or req, or req not of
 * session e: nothing is freed). Blocks (polling) until completion.
 */
int canal_engine_wait(struct canal_engine *e, struct canal_engine_req *req,
		      struct canal_engine_status *st);

/*
 * canal_engine_test - make progress once; if req has completed, free it and
 * return 1 (st filled as by canal_engine_wait()), or its error; 0 when
 * still pending (req stays valid); -EINVAL as canal_engine_wait(). Never
 * blocks.
 */
int canal_engine_test(struct canal_engine *e, struct canal_engine_req *req,
		      struct canal_engine_status *st);

/*
 * canal_engine_probe - make progress once and look for a message from gate
 * (or any gate) on tag that no receive has taken yet: 1 with *st filled,
 * 0 when there is none, or -EINVAL / the gate's error (any gate: once
 * every gate is closed, the error of one of them). Never blocks.
 */
int canal_engine_probe(struct canal_engine *e, int gate, unsigned tag,
		       struct canal_engine_status *st);

/*
 * canal_engine_progress - make progress once on every gate (send what the
 * window allows, take what arrived). Returns the number of events handled
 * (0: nothing happened), or -EINVAL for a NULL session. Never blocks.
 * This is the hook for an external progress loop.
 */
int canal_engine_progress(struct canal_engine *e);

/*
 * canal_engine_set_urgent - mark tag urgent (urgent != 0) or not: from now
 * on, its messages are sent as CANAL_ENGINE_EXPRESS ones are, ahead of
 * the queued messages of other tags, whatever the strategy (the seed's
 * "priority" tactic). Order within the tag is kept. Returns 0, or -EINVAL
 * (NULL session, tag above CANAL_ENGINE_TAG_MAX). Never blocks.
 */
int canal_engine_set_urgent(struct canal_engine *e, unsigned tag, int urgent);

/*
 * canal_engine_gate_error - the error of gate (0 if it is healthy) and, if
 * buf is not NULL, a sentence naming the peer and the cause ("peer 2 (pid
 * 4711) died", "peer 1: malformed frame: piece length beyond frame") in
 * buf (truncated to buflen, always NUL-terminated when buflen > 0).
 * Returns -EINVAL for a bad gate. Never blocks.
 */
int canal_engine_gate_error(const struct canal_engine *e, int gate,
			    char *buf, size_t buflen);

/*
 * canal_engine_pack_begin, canal_engine_pack, canal_engine_pack_end - send a
 * message built from several pieces to gate on tag. Each piece is
 * referenced, not copied (keep it untouched until the request completes).
 * Pieces are delivered to the receiver's unpack calls of the same rank, in
 * the same order; CANAL_ENGINE_EXPRESS and CANAL_ENGINE_REORDER say how the
 * strategy may schedule them. pack_end hands the whole message to the
 * scheduler (which may aggregate its pieces in one packet) and returns one
 * request for all of it (wait or test it once). A pack of no piece is sent
 * as one empty piece (the receiver's first unpack gets 0 bytes).
 * Returns 0, or -EINVAL (bad arguments, gate, tag or flags; more than 1024
 * pieces), -ENOMEM, or the gate's error (pack_end; the pack is freed).
 * When pack_end fails (-ENOMEM, the gate's error) nothing of the message
 * is sent and no request is made: later messages on (gate, tag) go as if
 * the pack had not been made.
 * A piece of 4 GiB or more fails the whole message before any of it is
 * sent: pack_end returns 0 and its request reports -EMSGSIZE; later
 * messages on (gate, tag) go as if the pack had not been made.
 * Never block.
 */
int canal_engine_pack_begin(struct canal_engine *e, int gate, unsigned tag,
			    struct canal_engine_pack **pack);
int canal_engine_pack(struct canal_engine_pack *pack, const void *buf,
		      size_t len, unsigned flags);
int canal_engine_pack_end(struct canal_engine_pack *pack,
			  struct canal_engine_req **req);

/*
 * canal_engine_unpack_begin, canal_engine_unpack, canal_engine_unpack_end -
 * receive a message packed by the peer, piece by piece, into buffers given
 * in the pieces' order. gate may be CANAL_ENGINE_ANY_GATE: then the first
 * unpack waits for its piece, which fixes the gate. canal_engine_unpack()
 * with CANAL_ENGINE_EXPRESS waits until that piece has arrived; otherwise it
 * only posts the receive. unpack_end waits for every piece, then takes and
 * drops the pieces of the message that were not unpacked (after an error,
 * or when fewer unpacks were made than pieces packed, none included: then
 * it waits for the message and drops it whole): the next receive of
 * (gate, tag) gets the message sent after the pack. It frees the pack; st
 * (may be NULL) gets the gate, tag and total length (of the whole message,
 * dropped pieces included).
 * Returns 0, or -EINVAL, -ENOMEM, the piece's error (-EMSGSIZE when a piece
 * is longer than its buffer: only that piece is cut, the next unpack gets
 * the next piece) or the gate's error; after an error, either go on
 * unpacking or call unpack_end, which frees the pack. unpack_end returns
 * the first error met (a dropped piece is none), or -EPROTO when more
 * unpacks were made than the message had pieces: the extra unpacks took
 * the messages sent after it on (gate, tag) (they cannot be given back;
 * the next receive gets the message after those).
 * Blocks: express unpacks and unpack_end (polling).
 */
int canal_engine_unpack_begin(struct canal_engine *e, int gate, unsigned tag,
			      struct canal_engine_pack **pack);
int canal_engine_unpack(struct canal_engine_pack *pack, void *buf, size_t len,
			unsigned flags);
int canal_engine_unpack_end(struct canal_engine_pack *pack,
			    struct canal_engine_status *st);

#ifdef __cplusplus
}
#endif

#endif /* CANAL_ENGINE_H */
