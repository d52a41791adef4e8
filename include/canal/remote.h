/* SPDX-License-Identifier: MIT */
/*
 * canal/remote.h - channels whose other end is in another process or on
 * another machine, carried by the message engine (<canal/engine.h>).
 *
 * What the user gets is an ordinary local channel (struct canal_chan *):
 * canal_send, canal_recv, the try, timed, batch and single-copy forms,
 * canal_close and canal_select (mixing remote and local channels) work on
 * it unchanged. A progress thread of the session (the hub) forwards
 * elements between that local channel and the network:
 *
 *     process A                                        process B
 *   users --send--> [local, cap s] --hub--> engine --hub--> [local, cap r] --recv--> users
 *                                      <--- credits ---
 *
 * A remote channel has two ends, opened with the same (gate, tag) pair as
 * seen from each side (A opens gate B, B opens gate A, same tag), the same
 * element size and capacity, and opposite directions: CANAL_REMOTE_SEND on
 * the side whose users send, CANAL_REMOTE_RECV on the side whose users
 * receive. For traffic both ways, open two remote channels (two tags).
 *
 * Conventions, as in <canal/channel.h>: 0 or a negative errno value; every
 * function here is thread-safe unless said otherwise.
 *
 * Capacity, end to end. A remote channel of capacity C (C >= 2) bounds the
 * elements whose send returned 0 and that no receiver has taken yet, all
 * places counted (the sending end's local channel, the hub, the network,
 * the receiving end's hub and local channel), by C: a sender can never get
 * more than C elements ahead of receivers that do not receive; its
 * canal_try_send() then fails with -EAGAIN, canal_send() blocks. How: the
 * sending end's local channel holds s = C / 2 elements, the receiving
 * end's r = C - s; the receiving hub grants the sending hub r credits and
 * gives back one for each element a local receiver has taken (seen from
 * the local channel's length; sent together once the sender holds at most
 * half of r, or none), and the sending hub takes an element from its
 * local channel only against a credit. So canal_chan_capacity() of
 * either local channel says its share (s or r), not C. Capacity 1 is
 * accepted and behaves as 2 (each side needs one slot); capacity 0
 * (synchronous, a rendezvous per element across the network) is refused.
 *
 * Closing. canal_close() on the sending end's channel closes the remote
 * channel as on a local one: everything whose send returned 0 is
 * delivered, receivers drain it, then get -EPIPE. canal_close() on the
 * receiving end's channel stops the flow: the sending end's channel is
 * closed too (its senders get -EPIPE) and elements not yet received are
 * discarded. Users of the receiving end must not send on it, nor users of
 * the sending end receive from it (the hub could not keep the bound).
 *
 * A peer that dies (SIGKILL included) or whose gate fails: the local
 * channel of each of its remote channels is closed, so blocked senders and
 * receivers wake up (-EPIPE) and nobody hangs; receivers first drain the
 * elements that had arrived. canal_remote_error() then says -ECONNRESET
 * (or -EPROTO for a malformed message) and names the peer, and
 * canal_remote_close() returns that error. How soon a death is seen is the
 * engine's (engine.h: within 1 s on shm, at once on a TCP reset).
 * Elements still in the sending end's local channel or in flight when the
 * peer died are lost; what a receiver got is a prefix of each producer's
 * sequence (per-producer FIFO), each element once.
 *
 * Memory. A message or receive that the hub cannot hand to the engine
 * for want of memory (canal_engine_isend or canal_engine_irecv says
 * -ENOMEM while the gate is healthy) is handed again on a later round
 * (the hub's naps: up to 1 ms apart): nothing is lost, duplicated or
 * reordered and the channel does not fail; it only stalls meanwhile
 * (senders fill their share and wait, receivers wait, a close's wait may
 * run out: -ETIMEDOUT).
 *
 * Reopening. A (gate, tag) whose end was closed by canal_remote_close()
 * may be opened again in the hub once the closing exchange is over: when
 * the close returns, unless its wait ran out (then the hub finishes the
 * exchange in the background, and open says -EBUSY until it has).
 * Nothing of the old channel reaches the new one: each end's
 * last message ends the old channel's flow, and an end takes the peer's
 * messages through that last one. A channel that failed with -EPROTO is
 * an exception made safe: an end that finds the fault stops receiving at
 * once (the peer may not follow the protocol, and the close does not
 * wait for it), so what its peer sent after the fault stays queued in the
 * engine; the session remembers it, and the next end opened on that
 * (gate, tag), by this hub or a later one of the session, first takes and
 * discards it, through the old peer end's last message (a peer that
 * follows the protocol sends it: the fault is told to it, and it fails in
 * turn), then works as any. A peer that never sends its last message (one
 * that does not follow the protocol) leaves the new channel waiting, as a
 * peer that never opened.
 *
 * The session. While a hub runs, its thread drives the engine session:
 * the application calls other canal_engine_* functions on that session
 * only between canal_remote_hub_lock() and canal_remote_hub_unlock(), and
 * must not use the tags of its remote channels itself. Latency: the hub
 * spins (polls the engine and the local channels) while traffic flows and
 * for 200 us after the last event (CANAL_REMOTE_SPIN_US changes it), then
 * sleeps in growing steps up to 1 ms: an element sent to an idle channel
 * may wait up to that long to leave or to be seen arriving.
 *
 * Caller progress. A plain thread blocked on a local channel of the hub
 * (canal_recv and its timed and batch forms on an empty receiving end,
 * canal_send into a full sending end) does the hub's work itself while it
 * waits, for up to the hub's spin time (200 us) after the last event, and
 * the hub thread stands aside meanwhile: the reply of a ping-pong is taken
 * from the network and handed over by the thread that waits for it, and
 * the element it sent just before leaves in the same rounds, with no
 * thread hand-off on the way. Then it sleeps as on any channel and the
 * hub thread takes over at once. Not for tasks of <canal/task.h> (they
 * park at once) nor for canal_select (both leave the work to the hub
 * thread). CANAL_REMOTE_CALLER_PROGRESS=0 in the environment when the hub
 * starts turns it off.
 */
#ifndef CANAL_REMOTE_H
#define CANAL_REMOTE_H

#include <canal/channel.h>
#include <canal/engine.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct canal_remote_hub;
struct canal_remote;

/* Direction of a remote channel's end (canal_remote_open()). */
enum {
	CANAL_REMOTE_SEND = 1, /* local users send, the peer's users receive */
	CANAL_REMOTE_RECV = 2, /* the peer's users send, local users receive */
};

/* Largest element size of a remote channel (bytes). */
#define CANAL_REMOTE_ELT_SIZE_MAX ((size_t)1 << 24)

/*
 * canal_remote_hub_start - start the progress thread that carries the
 * remote channels of session e. From now on the hub owns the session
 * (see "The session" above) until canal_remote_hub_stop();
 * canal_engine_close() refuses the session meanwhile (-EINVAL). One hub per
 * session. Returns 0 and *out, or -EINVAL (NULL argument, or a session
 * opened with a progress thread: the hub is its progress), -EBUSY (the
 * session has a hub already, not stopped), -ENOMEM, -EAGAIN (no thread
 * could be created). Never blocks.
 */
int canal_remote_hub_start(struct canal_engine *e,
			   struct canal_remote_hub **out);

/*
 * canal_remote_hub_stop - stop the hub's thread and free the hub; the
 * session is the caller's again (it may be closed). Every remote channel
 * of the hub must have been closed by canal_remote_close() first. Returns
 * 0, -EINVAL (NULL), or -EBUSY (remote channels still open: nothing is
 * stopped). Blocks until the thread has ended: a few ms, or up to 1 s
 * while ends whose close timed out finish their exchange. Ends still
 * unfinished after that stay with the session (a receive of the session
 * may still write into their buffers): the session's next hub finishes
 * their exchange (its canal_remote_open() says -EBUSY on their (gate,
 * tag) until then), canal_engine_close() frees them. Call it from one
 * thread, once.
 */
int canal_remote_hub_stop(struct canal_remote_hub *hub);

/*
 * canal_remote_hub_lock, canal_remote_hub_unlock - take and give back the
 * session from the hub's thread, to call canal_engine_* functions on it
 * meanwhile (other tags than the remote channels'). While it is held,
 * remote channels make no progress. lock blocks until the hub's thread is
 * between two rounds (microseconds). Not recursive.
 */
void canal_remote_hub_lock(struct canal_remote_hub *hub);
void canal_remote_hub_unlock(struct canal_remote_hub *hub);

/*
 * canal_remote_open - open this process's end of the remote channel on
 * (gate, tag) of the hub's session: direction end (CANAL_REMOTE_SEND or
 * CANAL_REMOTE_RECV), elements of elt_size bytes (1 to
 * CANAL_REMOTE_ELT_SIZE_MAX), end-to-end capacity (2 to
 * CANAL_CAPACITY_MAX; 1 behaves as 2; see "Capacity" above). The peer
 * opens the other end with the same tag, elt_size and capacity and the
 * other direction; until it does, senders fill the local share and wait.
 * A peer that opened differently closes the channel on both sides with
 * -EPROTO (canal_remote_error() says what differs).
 * Returns 0 and *out, or
 *   -EINVAL  NULL hub or out, end unknown, gate not a peer (this rank,
 *            out of range), tag above CANAL_ENGINE_TAG_MAX, elt_size 0 or
 *            above the maximum, capacity 0 or above CANAL_CAPACITY_MAX;
 *   -EBUSY   a remote channel of this hub is open on (gate, tag), or was
 *            and has not finished its closing exchange (its close's wait
 *            ran out; see "Reopening" above);
 *   -ENOMEM  (or the errno of canal_chan_create) no memory for the local
 *            channel or the buffers;
 *   the gate's error (-ECONNRESET, -EPROTO) if its peer already failed.
 * Never blocks (the handshake with the peer is the hub's).
 */
int canal_remote_open(struct canal_remote_hub *hub, int gate, unsigned tag,
		      int end, size_t elt_size, size_t capacity,
		      struct canal_remote **out);

/*
 * canal_remote_chan - the local channel of remote channel r, on which its
 * users send (CANAL_REMOTE_SEND) or receive (CANAL_REMOTE_RECV). It is
 * valid until canal_remote_close(r). NULL if r is NULL. Never blocks.
 */
struct canal_chan *canal_remote_chan(const struct canal_remote *r);

/*
 * canal_remote_error - 0 while the remote channel is healthy or after it
 * was closed normally; -ECONNRESET when its peer died or its gate failed,
 * -EPROTO when the peer sent something malformed or opened the other end
 * differently. If buf is not NULL, a sentence saying why ("peer 1 (pid
 * 4711) died") is written there (truncated to buflen, NUL-terminated when
 * buflen > 0; empty when healthy). -EINVAL if r is NULL. Never blocks.
 */
int canal_remote_error(const struct canal_remote *r, char *buf,
		       size_t buflen);

/*
 * canal_remote_close - close this end and free it, together with its local
 * channel: no thread may use that channel during or after the call (join
 * its users first, as for canal_chan_destroy()). A sending end first
 * closes its local channel (if no user did) and waits until everything in
 * it has been handed to the network and the peer has seen the end (which
 * needs the peer's receivers to make room); a receiving end tells the
 * sender to stop (if it had not closed) and waits for its answer. The
 * wait lasts at most timeout_ns (< 0: no limit; 0: do not wait). Returns
 * 0 when the channel ended normally; -ETIMEDOUT when the wait ran out:
 * the end is freed all the same, undelivered elements are lost, and the
 * hub finishes the exchange in the background (the tag stays busy until
 * then; the receiving end's users drain what had arrived, then get
 * -EPIPE, and that end's canal_remote_error() and canal_remote_close()
 * say -ECONNABORTED: the stream they got was cut short); the channel's
 * error (canal_remote_error()) if the peer failed;
 * -EINVAL if r is NULL. Blocks as said. Call it once per end.
 */
int canal_remote_close(struct canal_remote *r, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* CANAL_REMOTE_H */
