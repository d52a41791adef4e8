/* SPDX-License-Identifier: MIT */
/*
 * engine/remote.c - remote channels (<canal/remote.h>): a local channel at
 * each end, and a hub thread per session that forwards elements between
 * the local channels and the engine, under credit flow control.
 *
 * Uses the public API of <canal/channel.h> (layers point one way: the
 * engine uses channels, never the reverse) and of <canal/engine.h>, plus
 * one internal read of the engine's own layer: a request's done flag
 * (req_test()).
 *
 * Wire (one engine flow per direction on the channel's (gate, tag);
 * little-endian):
 *   HELLO  32 B: u32 kind=1, u32 end (CANAL_REMOTE_SEND/RECV of the
 *          sender of the hello), u64 elt_size, u64 capacity, u64 credits
 *          (the receiving end's window r; 0 from the sending end).
 *   DATA   u32 kind=2, u32 n, then n elements (1 <= n <= batch).
 *   CREDIT 32 B: u32 kind=3, u32 0, u64 n (elements given back).
 *   FIN    32 B: u32 kind=4, u32 reason (0 normal, 1 this end stopped
 *          early, 2 protocol error).
 * Each end sends exactly one HELLO first and one FIN last. The sending
 * end (S) sends FIN when its local channel is closed and drained, when
 * the receiving end's FIN came, or when abandoned; the receiving end (R)
 * sends FIN once S's FIN came and every element is in the local channel
 * (the answer), or earlier when its users closed the local channel or it
 * is abandoned (then it keeps receiving, discarding, until S's FIN). An
 * end posts its one receive again only until the peer's FIN, so a normal
 * ending leaves no receive posted on the tag (the engine has no cancel).
 *
 * Incarnations of a (gate, tag): the engine delivers one (gate, tag)'s
 * messages in the order they were sent, and each end's FIN is its last
 * message, so the peer's FIN is the boundary between the channel that
 * ends and the next one opened on that (gate, tag). An end that ended
 * normally took everything of the peer's through its FIN: nothing is
 * left for the next channel. An end that found a protocol error stops
 * receiving at once (fail()) without the peer's FIN: a hostile peer may
 * never send one, and its close must not wait for it nor leave a receive
 * posted (no cancel). Then the peer's FIN is owed: a well-behaved peer
 * does send it (the FIN this end sends on the error makes it fail and
 * answer, or it had sent it already), but it, and whatever the peer sent
 * before it, stays in the engine's unexpected queue of the (gate, tag).
 * So when such an end leaves the hub (hub_forget_end()), the FINs owed
 * on (gate, tag) are recorded (struct canal__remote_owed, kept by the
 * session so that a later hub of the session knows them too); the next
 * end opened there takes that count (skip_fins) and takes and discards
 * the peer's messages through that many FINs before it takes any as its
 * own (skip_stale()). Without it the stale FIN (reason 2) was the first
 * thing the reopened channel received: it failed at once and left its
 * own FIN behind, and the tag was poisoned for good. Why not a generation
 * number in each message instead: the two processes would have to count
 * the opens of each (gate, tag) in lockstep (a restarted hub, or an open
 * that one side never made, desynchronises them for good), and the wire
 * would change; the FINs owed are this side's own knowledge and need
 * neither. What is not covered: a hostile peer that never sends its FIN
 * keeps the next channel of the tag skipping (it is then as a peer that
 * never opened).
 *
 * Invariants (S counts sent and returned, R granted, received, pushed,
 * returned; consumed = pushed - len(R's local channel), a lower bound of
 * what R's users took because only the hub sends into that channel):
 *  - S: credits + (sent - returned) == window (r): S takes an element from
 *    its local channel only against a credit;
 *  - R: returned <= consumed; granted = window + returned; received <=
 *    granted (checked: more is a protocol error);
 *  - so elements accepted and not yet taken by a receiver <=
 *    len(S local) + sent - consumed <= s + window = capacity; and the
 *    elements R holds but has not pushed (pend_n) always fit in its local
 *    channel (received - pushed <= r - len).
 *
 * Threading: the hub's mutex protects every struct canal_remote field and
 * the session's list of FINs owed (e->remote_owed: one hub per session at
 * a time, and the next one starts after the last one's thread was
 * joined) and serializes the engine session (one thread at a time,
 * engine.h); the session's list of unfinished ends (e->remote_zombies)
 * is touched only while no hub thread runs (hub_stop after the join,
 * hub_start before the thread is made, the session's close); whoever
 * runs a round (the hub thread, or a user thread by caller progress, with
 * a trylock) holds it for one round over all channels, then lets it go. A
 * thread that wants it (open, close, error, hub_lock) counts itself in
 * hub->waiters before locking; the hub thread yields while that count is
 * not zero and user threads do not try the lock, so rounds cannot starve
 * it. The local channels are used without the lock (they are
 * thread-safe), except that a closer takes a channel away (r->ch = NULL)
 * under the lock, after which no round touches it. Memory ordering: every
 * struct canal_remote field is read and written under the mutex (its
 * lock/unlock pairs order them); hub->waiters is a relaxed hint (a stale
 * read costs one yield or one round, never correctness); the caller
 * progress words (callers, caller_end_ns, caller_round_ns, state, stop)
 * are described with caller progress below.
 *
 * Who wakes whom: users blocked on a local channel are woken by the
 * channel itself when the hub pushes into it, takes from it or closes it.
 * Before they sleep, they run the hub's rounds themselves (caller
 * progress, below: the round is the same code under the same mutex, taken
 * with a trylock), while the hub thread stands aside. The hub thread is
 * woken only by a caller that gives up polling; otherwise it polls,
 * spinning (yielding the CPU each idle pass) for spin_ns after the last
 * event, then napping 16 us doubling to 1 ms. Closers and hub_stop poll
 * the same way for an end to finish.
 */
#define _GNU_SOURCE
#include "internal.h"

#include "base/wait.h"
#include "channel/hook.h"

#include <canal/remote.h>

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MSG_HELLO = 1, MSG_DATA = 2, MSG_CREDIT = 3, MSG_FIN = 4 };
enum { FIN_NORMAL = 0, FIN_STOPPED = 1, FIN_ERROR = 2 };

#define CTRL_LEN 32
#define DATA_HDR 8
/* DATA messages in flight per sending end, and control messages. */
#define DATA_SLOTS 4
#define CTRL_SLOTS 4
/* Elements per DATA message: up to this many bytes (half the TCP
 * driver's 64 KiB eager size: one copy, no rendezvous; on shm reading the
 * peer's memory, above its 8 KiB eager size, a batch goes by
 * process_vm_readv, one copy too, unless the peer does not read), at least
 * one. */
#define BATCH_BYTES 32768
/* Idle hub: spin this long after the last event, then sleep in steps
 * doubling from 16 us to 1 ms. */
#define SPIN_NS_DEFAULT 200000ull
#define SLEEP_MIN_US 16
#define SLEEP_MAX_US 1000
/* Caller progress (below): after a caller's wait ended with its element,
 * the hub thread stays aside this long (the caller is likely back, as in
 * a ping-pong); while callers poll, it looks up every STANDBY_STEP_NS. */
#define CALLER_GRACE_NS 50000ull
#define STANDBY_STEP_NS 200000ull

struct send_slot {
	struct canal_engine_req *req;
	unsigned char *buf;
};

struct canal_remote {
	struct canal__list link;
	struct canal_remote_hub *hub;
	struct canal_chan *ch; /* NULL once the closer took it away */
	int gate;
	unsigned tag;
	int end;
	size_t elt_size, capacity, window, batch;
	/* the one posted receive */
	struct canal_engine_req *rreq;
	unsigned char *rbuf;
	size_t rbuf_len;
	/* R: elements of the last DATA not yet in the local channel */
	size_t pend_off, pend_n;
	/* sends in flight, oldest first */
	struct send_slot data[DATA_SLOTS];
	unsigned data_head, data_count;
	/* S: elements in the next data slot (data_head + data_count), taken
	 * from the local channel and counted as sent, whose post failed
	 * locally (post_failed()): posted again before any more are taken;
	 * 0: none. */
	size_t data_unposted;
	struct send_slot ctrl[CTRL_SLOTS];
	unsigned ctrl_head, ctrl_count;
	unsigned char ctrl_buf[CTRL_SLOTS][CTRL_LEN];
	uint64_t credits, sent;			  /* S */
	uint64_t granted, received, pushed;	  /* R */
	uint64_t returned;			  /* both */
	bool hello_sent, hello_received, fin_sent, fin_received;
	/* A protocol error ended this end before the peer's FIN came: the
	 * FIN is still owed (see "Incarnations" above). */
	bool peer_fin_owed;
	/* FINs of earlier channels on (gate, tag) to take and discard,
	 * with what came before them, before the peer's first message. */
	unsigned skip_fins;
	/* Allocated at open so that recording owed FINs when the end
	 * leaves cannot fail; NULL once in the session's list. */
	struct canal__remote_owed *spare;
	bool drained;	/* S: local channel closed and empty */
	bool we_closed; /* the hub closed the local channel */
	bool detached;	/* the closer left: the hub frees it when finished */
	bool finished;
	int error;
	char why[192];
};

/* The peer's FINs owed on (gate, tag) by ends that left before they came
 * (see "Incarnations" above), in a list of the session (e->remote_owed,
 * touched under the hub's lock: only the hub uses the session while it
 * runs): at most one record per (gate, tag), none while an end is open
 * there (open takes it). */
struct canal__remote_owed {
	struct canal__remote_owed *next;
	int gate;
	unsigned tag;
	unsigned fins;
};

struct canal_remote_hub {
	struct canal_engine *e;
	pthread_mutex_t lock;
	atomic_int waiters;
	atomic_bool stop;
	pthread_t thread;
	struct canal__list chans;
	uint64_t spin_ns;
	/* Caller progress: threads in a hook phase on one of the hub's
	 * local channels, when the last one left satisfied (0: it gave
	 * up), where the hub thread stands aside, and the hook itself
	 * (installed on every local channel unless turned off). */
	atomic_uint callers; /* 0, or 1: a thread polls */
	_Atomic uint64_t caller_end_ns;
	_Atomic uint64_t caller_round_ns; /* the poller's last round */
	atomic_int state;		  /* HUB_RUNNING, ASIDE, NAPPING */
	atomic_bool kick; /* the first send after a satisfied caller pushes */
	struct canal_waitq standby;
	struct canal__wait_hook hook_send, hook_recv;
	bool caller_progress; /* CANAL_REMOTE_CALLER_PROGRESS, default 1 */
	struct canal__remote_rounds rounds; /* under the lock (tests) */
	/* Tests (canal__remote_hub_fail_posts): bit 0 set, the next
	 * isend (irecv) of the hub fails with -ENOMEM; shifted by each.
	 * Under the lock. */
	uint64_t fault_sends, fault_recvs;
};

/* ------------------------------------------------------------------ */
/* Little helpers                                                      */
/* ------------------------------------------------------------------ */

static void put32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}
static void put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}
static uint32_t get32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}
static uint64_t get64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static void hub_enter(struct canal_remote_hub *hub)
{
	atomic_fetch_add_explicit(&hub->waiters, 1, memory_order_relaxed);
	pthread_mutex_lock(&hub->lock);
	atomic_fetch_sub_explicit(&hub->waiters, 1, memory_order_relaxed);
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };
	nanosleep(&ts, NULL);
}

static void close_local(struct canal_remote *r)
{
	if (r->ch && !r->we_closed) {
		r->we_closed = true;
		canal_close(r->ch);
	}
}

static bool ctrl_send(struct canal_remote *r, uint32_t kind, uint32_t arg,
		      uint64_t a, uint64_t b, uint64_t c);
static void fail(struct canal_remote *r, int err, const char *why);

/* The hub's engine posts (the test hook's faults first). */
static int post_send(struct canal_remote *r, const void *buf, size_t len,
		     struct canal_engine_req **q)
{
	struct canal_remote_hub *hub = r->hub;
	bool fault = hub->fault_sends & 1;
	hub->fault_sends >>= 1;
	if (fault)
		return -ENOMEM;
	return canal_engine_isend(hub->e, r->gate, r->tag, buf, len, 0, q);
}

static int post_recv(struct canal_remote *r)
{
	struct canal_remote_hub *hub = r->hub;
	bool fault = hub->fault_recvs & 1;
	hub->fault_recvs >>= 1;
	if (fault)
		return -ENOMEM;
	return canal_engine_irecv(hub->e, r->gate, r->tag, r->rbuf,
				  r->rbuf_len, &r->rreq);
}

/* A post of r failed: true if its gate failed (r fails with the gate's
 * error, fail()); false if the failure was local (the gate is healthy:
 * -ENOMEM, no memory for the request): the engine took nothing and the
 * caller posts the same message again on a later step, so the channel
 * only stalls meanwhile (remote.h, "Memory"). Failing the end there, as a
 * failed gate, would leave its FIN unsent on a healthy gate (the peer's
 * close times out) and report an errno remote.h does not name. */
static bool post_failed(struct canal_remote *r)
{
	int ge = canal_engine_gate_error(r->hub->e, r->gate, NULL, 0);
	if (ge == 0)
		return false;
	fail(r, ge, NULL);
	return true;
}

/* Send this end's FIN, its last message, if not yet sent: reason as the
 * end's step says, FIN_ERROR once a protocol error was seen (an -EPROTO
 * with fin_sent still false is the channel's: a failed gate sets
 * fin_sent). Sets fin_sent when queued; when the control slots are full
 * or the post failed locally it is tried again by the next step (each
 * step sends its FIN once fin_received is set, as fail() does). */
static bool send_fin(struct canal_remote *r, uint32_t reason)
{
	if (r->fin_sent)
		return false;
	if (r->error == -EPROTO)
		reason = FIN_ERROR;
	if (!ctrl_send(r, MSG_FIN, reason, 0, 0, 0))
		return false;
	r->fin_sent = true;
	return true;
}

/* The channel failed: err is the gate's error (why NULL: the engine says
 * why; it may be -EPROTO too, for a malformed frame; never a local
 * failure to post, post_failed()) or a protocol error
 * of the channel, found here or told by the peer's FIN (-EPROTO, why
 * given). Both directions stop; R's users first get what had arrived. A
 * protocol error is told to the peer by a FIN, and this end stops
 * receiving at once: if the peer's FIN had not come, it is owed (see
 * "Incarnations" above). A failed gate carries nothing more: no FIN,
 * nothing owed; but a receiving end still takes the peer's last words
 * (engine.h: receives take the messages that had arrived whole before
 * the gate closed; GUARANTEES.md: elements that had reached this process
 * are still received): it keeps receiving, its local channel open, until
 * a receive fails too (recv_failed()), unless it was skipping an earlier
 * channel's messages (those are no one's). */
static void fail(struct canal_remote *r, int err, const char *why)
{
	bool gate_failed = why == NULL;
	bool skipping = r->skip_fins != 0;
	if (r->error == 0) {
		r->error = err;
		if (why)
			snprintf(r->why, sizeof r->why, "%s", why);
		else if (canal_engine_gate_error(r->hub->e, r->gate, r->why,
						 sizeof r->why) == 0)
			snprintf(r->why, sizeof r->why, "peer %d: %s", r->gate,
				 canal_strerror(err));
	}
	if (!gate_failed) {
		if (!r->fin_received)
			r->peer_fin_owed = true;
		r->fin_received = true;
		/* (ctrl_send() failing on the gate comes back here as a
		 * gate failure, which sets fin_sent: no loop.) */
		send_fin(r, FIN_ERROR);
	} else {
		r->fin_sent = true;
		r->peer_fin_owed = false;
		r->skip_fins = 0;
		if (r->end == CANAL_REMOTE_RECV && r->ch && !r->fin_received &&
		    !skipping)
			return; /* the last words first (recv_failed()) */
		r->fin_received = true;
	}
	if (r->ch && r->pend_n) {
		ssize_t k = canal_try_send_batch(
			r->ch, r->rbuf + DATA_HDR + r->pend_off * r->elt_size,
			r->pend_n);
		if (k > 0)
			r->pushed += (uint64_t)k;
	}
	r->pend_n = 0;
	close_local(r);
}

/* A receive of r failed with the gate's error (err): nothing more of the
 * peer's is there to take, so a receiving end that was taking the last
 * words (fail()) stops now. */
static void recv_failed(struct canal_remote *r, int err)
{
	r->fin_received = true;
	fail(r, err, NULL);
}

static void protocol_error(struct canal_remote *r, const char *what)
{
	char why[192];
	snprintf(why, sizeof why, "peer %d, tag %u: %s", r->gate, r->tag, what);
	fail(r, -EPROTO, why);
}

/* Queue a control message; false when no slot is free or the post failed
 * locally (try again later: nothing was queued), or the gate failed. */
static bool ctrl_send(struct canal_remote *r, uint32_t kind, uint32_t arg,
		      uint64_t a, uint64_t b, uint64_t c)
{
	if (r->ctrl_count == CTRL_SLOTS)
		return false;
	struct send_slot *s = &r->ctrl[(r->ctrl_head + r->ctrl_count) % CTRL_SLOTS];
	unsigned char *p = s->buf;
	put32(p, kind);
	put32(p + 4, arg);
	put64(p + 8, a);
	put64(p + 16, b);
	put64(p + 24, c);
	int err = post_send(r, p, CTRL_LEN, &s->req);
	if (err) {
		post_failed(r);
		return false;
	}
	r->ctrl_count++;
	return true;
}

/* Whether q completed, without another progress round: a hub round
 * makes one progress call (hub_round), and
 * canal_engine_test() of a request already done only collects it. On TCP
 * a progress round is a system call: one per pass instead of one per
 * request took the 8-byte round trip from about 20 to about 17 us here
 * (2 vCPUs shared with other jobs: noisy). */
static int req_test(struct canal_remote *r, struct canal_engine_req *q,
		    struct canal_engine_status *st)
{
	return q->done ? canal_engine_test(r->hub->e, q, st) : 0;
}

/* Free the sends that completed, oldest first. */
static int complete_sends(struct canal_remote *r)
{
	int act = 0;
	while (r->ctrl_count) {
		struct send_slot *s = &r->ctrl[r->ctrl_head];
		int t = req_test(r, s->req, NULL);
		if (t == 0)
			break;
		r->ctrl_head = (r->ctrl_head + 1) % CTRL_SLOTS;
		r->ctrl_count--;
		act++;
		if (t < 0)
			fail(r, t, NULL);
	}
	while (r->data_count) {
		struct send_slot *s = &r->data[r->data_head];
		int t = req_test(r, s->req, NULL);
		if (t == 0)
			break;
		r->data_head = (r->data_head + 1) % DATA_SLOTS;
		r->data_count--;
		act++;
		if (t < 0)
			fail(r, t, NULL);
	}
	return act;
}

/* ------------------------------------------------------------------ */
/* Receiving a message                                                 */
/* ------------------------------------------------------------------ */

static void handle_hello(struct canal_remote *r, size_t len)
{
	const unsigned char *p = r->rbuf;
	char what[160];
	if (len != CTRL_LEN || r->hello_received) {
		protocol_error(r, "malformed or second hello");
		return;
	}
	uint32_t end = get32(p + 4);
	uint64_t elt = get64(p + 8), cap = get64(p + 16), cr = get64(p + 24);
	if (end != CANAL_REMOTE_SEND && end != CANAL_REMOTE_RECV) {
		protocol_error(r, "hello of an unknown end");
		return;
	}
	if ((int)end == r->end) {
		protocol_error(r, r->end == CANAL_REMOTE_SEND
					  ? "both ends were opened to send"
					  : "both ends were opened to receive");
		return;
	}
	if (elt != r->elt_size || cap != r->capacity) {
		snprintf(what, sizeof what,
			 "the peer opened elt_size %llu and capacity %llu, this end %zu and %zu",
			 (unsigned long long)elt, (unsigned long long)cap,
			 r->elt_size, r->capacity);
		protocol_error(r, what);
		return;
	}
	if (r->end == CANAL_REMOTE_SEND) {
		if (cr != r->window) {
			protocol_error(r, "hello with a wrong credit window");
			return;
		}
		r->credits += cr;
	}
	r->hello_received = true;
}

static void handle_message(struct canal_remote *r, size_t len)
{
	const unsigned char *p = r->rbuf;
	if (len < DATA_HDR) {
		protocol_error(r, "message shorter than its header");
		return;
	}
	uint32_t kind = get32(p), arg = get32(p + 4);
	switch (kind) {
	case MSG_HELLO:
		handle_hello(r, len);
		return;
	case MSG_DATA:
		if (r->end != CANAL_REMOTE_RECV || !r->hello_received) {
			protocol_error(r, "data before hello, or to a sending end");
			return;
		}
		if (arg == 0 || arg > r->batch ||
		    len != DATA_HDR + (size_t)arg * r->elt_size) {
			protocol_error(r, "data message of a wrong length");
			return;
		}
		if (r->received + arg > r->granted) {
			protocol_error(r, "data beyond the credits granted");
			return;
		}
		r->received += arg;
		/* (fin_sent with an error: the gate failed and these are its
		 * last words, fail(); a protocol error receives no more.) */
		if (r->ch && (!r->fin_sent || r->error)) {
			r->pend_off = 0;
			r->pend_n = arg;
		} /* else: this end stopped early; discarded */
		return;
	case MSG_CREDIT:
		if (len != CTRL_LEN || r->end != CANAL_REMOTE_SEND ||
		    !r->hello_received) {
			protocol_error(r, "malformed credit");
			return;
		}
		uint64_t n = get64(p + 8);
		if (n == 0 || n > r->sent - r->returned) { /* no overflow */
			protocol_error(r, "credits for elements never sent");
			return;
		}
		r->returned += n;
		r->credits += n;
		return;
	case MSG_FIN:
		if (len != CTRL_LEN) {
			protocol_error(r, "malformed fin");
			return;
		}
		r->fin_received = true;
		if (arg == FIN_ERROR) {
			char why[192];
			snprintf(why, sizeof why,
				 "peer %d, tag %u: the peer found a protocol error (see its canal_remote_error)",
				 r->gate, r->tag);
			fail(r, -EPROTO, why);
			return;
		}
		/* R: a sending end stops early (FIN_STOPPED) for one of two
		 * reasons: this end had stopped first (its own FIN reached
		 * it: fin_sent here), or its canal_remote_close() ran out of
		 * time with elements still in its channel, which are lost.
		 * Not asked (!fin_sent), it is the second: the users of this
		 * end drain what arrived and then see the end, as on a
		 * normal close, so the error says that elements were lost
		 * (else a close of this end said 0 for a truncated stream). */
		if (r->end == CANAL_REMOTE_RECV && arg == FIN_STOPPED &&
		    !r->fin_sent && r->error == 0) {
			r->error = -ECONNABORTED;
			snprintf(r->why, sizeof r->why,
				 "peer %d, tag %u: the sending end stopped before "
				 "the end of its data (its canal_remote_close "
				 "ran out of time): elements it held were lost",
				 r->gate, r->tag);
		}
		/* S: the receivers stopped; R: the end of the data (nothing
		 * is pending: a receive is posted only when pend_n is 0). */
		close_local(r);
		return;
	default:
		protocol_error(r, "message of unknown kind");
	}
}

/* A message received while earlier channels' FINs are still to be taken
 * (skip_fins > 0): it belongs to an earlier channel on (gate, tag) and is
 * discarded; a FIN ends one of them. t is the receive's result: a message
 * longer than the buffer (-EMSGSIZE, consumed all the same) is no FIN,
 * which is CTRL_LEN bytes and fits every end's buffer. */
static void skip_stale(struct canal_remote *r, int t, size_t len)
{
	if (t < 0 && t != -EMSGSIZE) {
		recv_failed(r, t);
		return;
	}
	if (t > 0 && len == CTRL_LEN && get32(r->rbuf) == MSG_FIN)
		r->skip_fins--;
}

/* Test the posted receive, handle what came. */
static int receive_step(struct canal_remote *r)
{
	if (!r->rreq)
		return 0;
	struct canal_engine_status st;
	int t = req_test(r, r->rreq, &st);
	if (t == 0)
		return 0;
	r->rreq = NULL;
	if (r->skip_fins)
		skip_stale(r, t, st.len);
	else if (t == -EMSGSIZE)
		protocol_error(r, "message longer than any this end expects");
	else if (t < 0)
		recv_failed(r, t);
	else
		handle_message(r, st.len);
	return 1;
}

static void post_receive(struct canal_remote *r)
{
	if (r->rreq || r->fin_received || r->pend_n)
		return;
	int err = post_recv(r);
	if (err) { /* local: posted again by a later step */
		r->rreq = NULL;
		/* the gate's: no last words left (fail()) */
		if (canal_engine_gate_error(r->hub->e, r->gate, NULL, 0))
			r->fin_received = true;
		post_failed(r);
	}
}

/* ------------------------------------------------------------------ */
/* One round of each end                                               */
/* ------------------------------------------------------------------ */

static int send_end_step(struct canal_remote *r)
{
	int act = 0;
	if (!r->hello_sent && !r->fin_sent && !r->error &&
	    ctrl_send(r, MSG_HELLO, CANAL_REMOTE_SEND, r->elt_size, r->capacity, 0)) {
		r->hello_sent = true;
		act++;
	}
	post_receive(r);
	act += receive_step(r);
	post_receive(r);
	bool stop = r->fin_received || r->detached || !r->ch;
	/* hello_sent: the peer takes no DATA before this end's HELLO (a
	 * HELLO whose post failed locally is sent again first). */
	while (!r->fin_sent && !stop && r->hello_sent && r->hello_received &&
	       r->data_count < DATA_SLOTS) {
		struct send_slot *s = &r->data[(r->data_head + r->data_count) % DATA_SLOTS];
		size_t n = r->data_unposted;
		if (n == 0) {
			if (r->drained || r->credits == 0)
				break;
			size_t want = r->credits < r->batch ? (size_t)r->credits
							    : r->batch;
			ssize_t k = canal_try_recv_batch(r->ch, s->buf + DATA_HDR,
							 want);
			if (k == -EAGAIN)
				break;
			if (k < 0) { /* -EPIPE: closed and drained */
				r->drained = true;
				break;
			}
			n = (size_t)k;
			put32(s->buf, MSG_DATA);
			put32(s->buf + 4, (uint32_t)n);
			r->credits -= (uint64_t)n;
			r->sent += (uint64_t)n;
		}
		int err = post_send(r, s->buf, DATA_HDR + n * r->elt_size,
				    &s->req);
		if (err) {
			/* a local failure keeps the elements for the next
			 * step; with the gate they are lost */
			r->data_unposted = post_failed(r) ? 0 : n;
			break;
		}
		r->data_unposted = 0;
		r->data_count++;
		act++;
	}
	/* (r->error: a protocol error's FIN, which fail() tries even before
	 * the HELLO, is tried again here if its post failed locally.) */
	if ((r->hello_sent || r->error) && (stop || r->drained) &&
	    send_fin(r, r->drained ? FIN_NORMAL : FIN_STOPPED))
		act++;
	if (r->fin_received)
		close_local(r);
	act += complete_sends(r);
	return act;
}

static int recv_end_step(struct canal_remote *r)
{
	int act = 0;
	if (!r->hello_sent && !r->fin_sent && !r->error &&
	    ctrl_send(r, MSG_HELLO, CANAL_REMOTE_RECV, r->elt_size, r->capacity,
		      r->window)) {
		r->hello_sent = true;
		r->granted = r->window;
		act++;
	}
	post_receive(r);
	act += receive_step(r);
	if (r->pend_n && !r->ch)
		r->pend_n = 0; /* abandoned */
	if (r->pend_n) {
		ssize_t k = canal_try_send_batch(
			r->ch, r->rbuf + DATA_HDR + r->pend_off * r->elt_size,
			r->pend_n);
		if (k > 0) {
			r->pushed += (uint64_t)k;
			r->pend_off += (size_t)k;
			r->pend_n -= (size_t)k;
			act++;
		} else if (k == -EPIPE) {
			r->pend_n = 0; /* users closed the channel: discarded */
		}
	}
	post_receive(r);
	/* Users closed the local channel, or the closer left: stop early. */
	bool stopped = !r->ch || (!r->we_closed && canal_chan_is_closed(r->ch));
	if ((r->hello_sent || r->error) &&
	    ((r->fin_received && r->pend_n == 0) || stopped) &&
	    send_fin(r, r->fin_received ? FIN_NORMAL : FIN_STOPPED))
		act++;
	/* Give back the credits of the elements users took, once the
	 * sender holds at most half the window as far as this end knows
	 * (granted - received: what it has not used, or has in flight) -
	 * a credit message per half window instead of one per element,
	 * which in a ping-pong doubled the messages; and always when it has
	 * none. One credit message in flight at a time besides the hello
	 * (the next one carries all that accumulated meanwhile). */
	if (!r->fin_sent && !r->fin_received && r->hello_sent && r->ch &&
	    r->ctrl_count < 2 && 2 * (r->granted - r->received) <= r->window) {
		uint64_t len = canal_chan_len(r->ch);
		uint64_t consumed = r->pushed > len ? r->pushed - len : 0;
		if (consumed > r->returned) {
			uint64_t give = consumed - r->returned;
			if (ctrl_send(r, MSG_CREDIT, 0, give, 0, 0)) {
				r->returned += give;
				r->granted += give;
				act++;
			}
		}
	}
	act += complete_sends(r);
	return act;
}

static int remote_step(struct canal_remote *r)
{
	int act = r->end == CANAL_REMOTE_SEND ? send_end_step(r)
					      : recv_end_step(r);
	if (!r->finished && r->fin_sent && r->fin_received && !r->rreq &&
	    r->ctrl_count == 0 && r->data_count == 0) {
		r->finished = true;
		act++;
	}
	return act;
}

static void remote_free(struct canal_remote *r)
{
	for (int i = 0; i < DATA_SLOTS; i++)
		free(r->data[i].buf);
	free(r->rbuf);
	free(r->spare);
	free(r);
}

/* Where the session's record of the FINs owed on (gate, tag) is linked
 * (*result NULL: none). Under the lock. */
static struct canal__remote_owed **owed_find(struct canal_remote_hub *hub,
					     int gate, unsigned tag)
{
	struct canal__remote_owed **p = &hub->e->remote_owed;
	while (*p && ((*p)->gate != gate || (*p)->tag != tag))
		p = &(*p)->next;
	return p;
}

void canal__remote_owed_free(struct canal__remote_owed *list)
{
	while (list) {
		struct canal__remote_owed *next = list->next;
		free(list);
		list = next;
	}
}

/* Finished end r leaves the hub's list (under the lock; the caller frees
 * it): the peer's FINs it did not take are recorded for the next end on
 * its (gate, tag) (see "Incarnations" above). No receive of r is posted
 * (finished), so the next end's receives take the peer's messages from
 * where r stopped. */
static void hub_forget_end(struct canal_remote_hub *hub, struct canal_remote *r)
{
	canal__list_remove(&r->link);
	unsigned fins = r->skip_fins + (r->peer_fin_owed ? 1u : 0u);
	if (fins == 0)
		return;
	/* None while r was open (open took it), but merging costs nothing. */
	struct canal__remote_owed **p = owed_find(hub, r->gate, r->tag);
	if (!*p) {
		*p = r->spare;
		r->spare = NULL;
		**p = (struct canal__remote_owed){ NULL, r->gate, r->tag, 0 };
	}
	(*p)->fins += fins;
}

/* ------------------------------------------------------------------ */
/* The hub                                                             */
/* ------------------------------------------------------------------ */

/* Every channel's step, under the lock: how many things happened.
 * Channels whose closer left and whose exchange is over are freed here. */
static int hub_steps(struct canal_remote_hub *hub)
{
	int act = 0;
	struct canal__list *l, *next;
	for (l = hub->chans.next; l != &hub->chans; l = next) {
		next = l->next;
		struct canal_remote *r =
			canal__container_of(l, struct canal_remote, link);
		act += remote_step(r);
		if (r->finished && r->detached) {
			hub_forget_end(hub, r);
			remote_free(r);
		}
	}
	return act;
}

/* One round, under the lock: the channels' steps (elements sent since
 * the last round leave at once: an isend goes out when the window lets
 * it), the engine's progress, and the steps again if it brought
 * something, so that what arrived is handed over in this round (one
 * progress call, a system call on TCP, per round and no more). */
static int hub_round(struct canal_remote_hub *hub)
{
	int act = hub_steps(hub);
	if (canal_engine_progress(hub->e) > 0)
		act += 1 + hub_steps(hub);
	return act;
}

/*
 * Caller progress. A user thread blocked on a local channel of the hub
 * (a receive from an empty R end, a send into a full S end) runs the hub's
 * rounds itself (the channel's progress hook, channel/hook.h), so that a
 * ping-pong crosses no thread: the reply is taken from the engine and
 * pushed into the local channel by the thread that waits for it, and the
 * element it sent before is pushed to the engine by the same rounds. The
 * hub thread stands aside meanwhile (it would only take a CPU that a
 * caller or the peer process needs), and takes over at once when the
 * caller gives up polling to sleep, since then only the hub can wake it.
 *
 * One caller polls at a time (callers is 0 or 1: begin takes it by a CAS;
 * other waiters sleep on their channels as usual, and the poller's rounds
 * serve their channels too). A caller whose wait ended with its element
 * stores the time in caller_end_ns, and the hub stays aside
 * CALLER_GRACE_NS more (it is likely back). A caller that gives up
 * stores 0 there, then leaves (callers = 0), then notifies standby: the
 * notifier of wait.h's protocol (N1 = the seq_cst RMW of callers, N2 =
 * waitq_notify), the hub thread its waiter (prepare, then seq_cst loads
 * of callers and caller_end_ns, then sleep). A caller that left satisfied
 * wakes nobody: the hub's sleep is bounded by STANDBY_STEP_NS (while a
 * caller polls) or by the grace's end, so what arrives meanwhile for
 * other waiters, selects and tasks waits at most that long (less than the
 * hub's own idle naps, up to 1 ms); and an element sent meanwhile is
 * pushed by its sender (caller_published). A poller that did not poll
 * for a step (preempted) does not keep the hub aside: caller_round_ns,
 * a relaxed hint (a stale read costs one round or one step).
 *
 * The hub thread's state (hub->state) tells senders whether it will see
 * their element soon: RUNNING (it spins), ASIDE (standing aside), NAPPING
 * (idle, sleeping in steps up to 1 ms). A send into an S end whose hub is
 * NAPPING runs a round itself (trylock) and wakes the hub thread for what
 * follows (a stream: later sends find it RUNNING and leave the batching
 * to it). While it is ASIDE with no poller, only the first send after a
 * satisfied caller does (hub->kick: a server's reply, sent before it goes
 * to other work); the next ones wait for the next poller or the grace's
 * end, so that a stream's sends are not pushed one message each (that
 * halved a stream's messages/s). Relaxed hints: a stale read costs one
 * round or a wait of one step.
 *
 * Rounds in user threads run with cancellation disabled: the engine's
 * progress makes system calls that are cancellation points, and a thread
 * cancelled there would leave the hub's mutex locked.
 */
enum { HUB_RUNNING = 0, HUB_ASIDE, HUB_NAPPING };

/* A round in a user thread, if the lock is free: what it did (count:
 * the counter of such rounds). */
static int user_round(struct canal_remote_hub *hub, uint64_t *count)
{
	/* The hub thread, a closer or another thread has the round. */
	if (atomic_load_explicit(&hub->waiters, memory_order_relaxed) ||
	    pthread_mutex_trylock(&hub->lock) != 0)
		return 0;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	int act = hub_round(hub);
	(*count)++;
	pthread_mutex_unlock(&hub->lock);
	pthread_setcancelstate(old, NULL);
	return act;
}

static bool caller_begin(void *arg)
{
	struct canal_remote_hub *hub = arg;
	unsigned none = 0;
	if (atomic_load_explicit(&hub->callers, memory_order_relaxed))
		return false;
	atomic_store_explicit(&hub->caller_round_ns, canal_now_ns(),
			      memory_order_relaxed);
	return atomic_compare_exchange_strong_explicit(
		&hub->callers, &none, 1, memory_order_seq_cst,
		memory_order_relaxed);
}

static int caller_poll(void *arg)
{
	struct canal_remote_hub *hub = arg;
	int act = user_round(hub, &hub->rounds.waiting);
	atomic_store_explicit(&hub->caller_round_ns, canal_now_ns(),
			      memory_order_relaxed);
	return act;
}

static void caller_end(void *arg, bool satisfied)
{
	struct canal_remote_hub *hub = arg;
	atomic_store_explicit(&hub->caller_end_ns,
			      satisfied ? canal_now_ns() : 0,
			      memory_order_seq_cst);
	atomic_store_explicit(&hub->kick, satisfied, memory_order_relaxed);
	atomic_store_explicit(&hub->callers, 0, memory_order_seq_cst);
	if (!satisfied)
		waitq_notify(&hub->standby, 1, false);
}

/* An S end's local channel got elements (any send form). */
static void caller_published(void *arg)
{
	struct canal_remote_hub *hub = arg;
	int st = atomic_load_explicit(&hub->state, memory_order_relaxed);
	if (st == HUB_NAPPING) {
		user_round(hub, &hub->rounds.sending);
		waitq_notify(&hub->standby, 1, false);
	} else if (st == HUB_ASIDE &&
		   !atomic_load_explicit(&hub->callers, memory_order_relaxed) &&
		   atomic_exchange_explicit(&hub->kick, false,
					    memory_order_relaxed)) {
		user_round(hub, &hub->rounds.sending);
	}
}

/* Until when the hub thread stands aside (0: it does not). */
static uint64_t standby_until(struct canal_remote_hub *hub, uint64_t now)
{
	if (atomic_load_explicit(&hub->callers, memory_order_seq_cst)) {
		uint64_t last = atomic_load_explicit(&hub->caller_round_ns,
						     memory_order_relaxed);
		return now < last + STANDBY_STEP_NS ? now + STANDBY_STEP_NS
						    : 0;
	}
	uint64_t end = atomic_load_explicit(&hub->caller_end_ns,
					    memory_order_seq_cst);
	return end && now < end + CALLER_GRACE_NS ? end + CALLER_GRACE_NS : 0;
}

/* The hub thread sleeps on standby until deadline (canal_now_ns), in
 * state st, unless keep_sleeping() says otherwise after its prepare (the
 * W2 of the protocol above) or stop is set: woken by a caller that gives
 * up, a send to a napping hub, or hub_stop. */
static void hub_sleep(struct canal_remote_hub *hub, int st, uint64_t deadline,
		      bool aside)
{
	atomic_store_explicit(&hub->state, st, memory_order_relaxed);
	uint32_t key = waitq_prepare(&hub->standby);
	bool sleep = !atomic_load_explicit(&hub->stop, memory_order_seq_cst) &&
		     (!aside || standby_until(hub, canal_now_ns()) != 0);
	if (sleep)
		waitq_sleep(&hub->standby, key, false, deadline);
	waitq_finish(&hub->standby);
	atomic_store_explicit(&hub->state, HUB_RUNNING, memory_order_relaxed);
}

/* Stand aside while a caller polls: true if the hub slept. */
static bool stand_aside(struct canal_remote_hub *hub)
{
	uint64_t until = standby_until(hub, canal_now_ns());
	if (!until)
		return false;
	hub_sleep(hub, HUB_ASIDE, until, true);
	return true;
}

static void *hub_main(void *arg)
{
	struct canal_remote_hub *hub = arg;
	uint64_t last_event = canal_now_ns();
	unsigned nap = 0;
	while (!atomic_load_explicit(&hub->stop, memory_order_acquire)) {
		if (stand_aside(hub)) {
			/* Taking over: spin as after an event. */
			last_event = canal_now_ns();
			nap = 0;
			continue;
		}
		pthread_mutex_lock(&hub->lock);
		int act = hub_round(hub);
		hub->rounds.thread++;
		pthread_mutex_unlock(&hub->lock);
		while (atomic_load_explicit(&hub->waiters, memory_order_relaxed))
			sched_yield();
		uint64_t now = canal_now_ns();
		if (act) {
			last_event = now;
			nap = 0;
		} else if (now - last_event <= hub->spin_ns) {
			/* spinning: let a user thread of this CPU run first
			 * (one just woken by the element pushed) */
			sched_yield();
		} else {
			nap = nap ? (nap * 2 > SLEEP_MAX_US ? SLEEP_MAX_US : nap * 2)
				  : SLEEP_MIN_US;
			/* Woken early by a send (caller_published). */
			hub_sleep(hub, HUB_NAPPING,
				  canal_now_ns() + (uint64_t)nap * 1000, false);
		}
	}
	return NULL;
}

/* Move every end of list from to the end of list to (hub: their new
 * hub, or NULL in the session's list). Only with no hub thread running on
 * either list. */
static void move_ends(struct canal__list *from, struct canal__list *to,
		      struct canal_remote_hub *hub)
{
	while (!canal__list_empty(from)) {
		struct canal_remote *r = canal__container_of(
			from->next, struct canal_remote, link);
		canal__list_remove(&r->link);
		r->hub = hub;
		canal__list_append(to, &r->link);
	}
}

/* A request of an unfinished end still under way (not complete). */
static unsigned pending(const struct canal_engine_req *q)
{
	return q && !q->done ? 1u : 0u;
}

unsigned canal__remote_zombies_pending(const struct canal_engine *e)
{
	unsigned n = 0;
	const struct canal__list *l;
	for (l = e->remote_zombies.next; l && l != &e->remote_zombies;
	     l = l->next) {
		const struct canal_remote *r =
			canal__container_of(l, struct canal_remote, link);
		n += pending(r->rreq);
		for (unsigned i = 0; i < r->ctrl_count; i++)
			n += pending(r->ctrl[(r->ctrl_head + i) % CTRL_SLOTS].req);
		for (unsigned i = 0; i < r->data_count; i++)
			n += pending(r->data[(r->data_head + i) % DATA_SLOTS].req);
	}
	return n;
}

void canal__remote_zombies_free(struct canal_engine *e)
{
	struct canal__list *l = &e->remote_zombies;
	while (l->next && !canal__list_empty(l)) {
		struct canal_remote *r = canal__container_of(
			l->next, struct canal_remote, link);
		canal__list_remove(&r->link);
		if (r->data_count == 0)
			remote_free(r);
	}
}

EXPORT int canal_remote_hub_start(struct canal_engine *e,
				  struct canal_remote_hub **out)
{
	/* The hub is the session's one driver of progress (it reads the
	 * requests' state between its own calls): no progress thread. */
	if (!e || !out || e->pt)
		return -EINVAL;
	/* One hub per session: a second one's thread would drive the
	 * session beside the first's, under another mutex
	 * (test_revapi_hub_twice). */
	if (e->hub)
		return -EBUSY;
	struct canal_remote_hub *hub = calloc(1, sizeof *hub);
	if (!hub)
		return -ENOMEM;
	hub->e = e;
	canal__list_init(&hub->chans);
	pthread_mutex_init(&hub->lock, NULL);
	hub->spin_ns = SPIN_NS_DEFAULT;
	const char *spin = getenv("CANAL_REMOTE_SPIN_US");
	if (spin && *spin)
		hub->spin_ns = strtoull(spin, NULL, 10) * 1000ull;
	const char *cp = getenv("CANAL_REMOTE_CALLER_PROGRESS");
	hub->caller_progress = !(cp && strcmp(cp, "0") == 0);
	hub->hook_recv = (struct canal__wait_hook){
		.begin = caller_begin,
		.poll = caller_poll,
		.end = caller_end,
		.arg = hub,
		.budget_ns = hub->spin_ns ? hub->spin_ns : SPIN_NS_DEFAULT,
	};
	hub->hook_send = hub->hook_recv;
	hub->hook_send.published = caller_published;
	/* Ends an earlier hub of the session left unfinished (hub_stop) are
	 * this one's to finish: their (gate, tag) stays busy until then. */
	move_ends(&e->remote_zombies, &hub->chans, hub);
	e->hub = hub;
	int err = pthread_create(&hub->thread, NULL, hub_main, hub);
	if (err) {
		e->hub = NULL;
		move_ends(&hub->chans, &e->remote_zombies, NULL);
		pthread_mutex_destroy(&hub->lock);
		free(hub);
		return err == EAGAIN ? -EAGAIN : -err;
	}
	*out = hub;
	return 0;
}

EXPORT int canal_remote_hub_stop(struct canal_remote_hub *hub)
{
	if (!hub)
		return -EINVAL;
	/* Channels abandoned by a timed-out close finish their exchange in
	 * the background: give them up to 1 s. */
	uint64_t deadline = canal_now_ns() + 1000000000ull;
	for (;;) {
		hub_enter(hub);
		bool open = false, zombies = false;
		struct canal__list *l;
		for (l = hub->chans.next; l != &hub->chans; l = l->next) {
			struct canal_remote *r =
				canal__container_of(l, struct canal_remote, link);
			if (r->detached)
				zombies = true;
			else
				open = true;
		}
		pthread_mutex_unlock(&hub->lock);
		if (open)
			return -EBUSY;
		if (!zombies || canal_now_ns() > deadline)
			break;
		sleep_us(200);
	}
	/* Seq_cst: the N1 of the standby protocol (hub_sleep's W2 reads
	 * stop after its prepare). */
	atomic_store_explicit(&hub->stop, true, memory_order_seq_cst);
	waitq_notify(&hub->standby, 1, false);
	pthread_join(hub->thread, NULL);
	/* Zombies still there have a receive posted into their buffer: the
	 * session keeps them, for its next hub to finish their exchange
	 * (their (gate, tag) busy meanwhile) or for its close to free. */
	move_ends(&hub->chans, &hub->e->remote_zombies, NULL);
	hub->e->hub = NULL;
	pthread_mutex_destroy(&hub->lock);
	free(hub);
	return 0;
}

void canal__remote_hub_rounds(struct canal_remote_hub *hub,
			      struct canal__remote_rounds *out)
{
	hub_enter(hub);
	*out = hub->rounds;
	pthread_mutex_unlock(&hub->lock);
}

uint64_t canal__remote_hub_fail_posts(struct canal_remote_hub *hub,
				      uint64_t sends, uint64_t recvs)
{
	hub_enter(hub);
	uint64_t left = hub->fault_sends | hub->fault_recvs;
	hub->fault_sends = sends;
	hub->fault_recvs = recvs;
	pthread_mutex_unlock(&hub->lock);
	return left;
}

EXPORT void canal_remote_hub_lock(struct canal_remote_hub *hub)
{
	hub_enter(hub);
}

EXPORT void canal_remote_hub_unlock(struct canal_remote_hub *hub)
{
	pthread_mutex_unlock(&hub->lock);
}

/* ------------------------------------------------------------------ */
/* Channels                                                            */
/* ------------------------------------------------------------------ */

EXPORT int canal_remote_open(struct canal_remote_hub *hub, int gate,
			     unsigned tag, int end, size_t elt_size,
			     size_t capacity, struct canal_remote **out)
{
	if (!hub || !out ||
	    (end != CANAL_REMOTE_SEND && end != CANAL_REMOTE_RECV) ||
	    tag > CANAL_ENGINE_TAG_MAX || elt_size == 0 ||
	    elt_size > CANAL_REMOTE_ELT_SIZE_MAX || capacity == 0 ||
	    capacity > CANAL_CAPACITY_MAX)
		return -EINVAL;
	/* gate checks need the session: under the lock */
	size_t effective = capacity < 2 ? 2 : capacity;
	size_t share = effective / 2, window = effective - share;
	size_t batch = BATCH_BYTES / elt_size;
	if (batch == 0)
		batch = 1;
	if (batch > window)
		batch = window;
	size_t local_cap = end == CANAL_REMOTE_SEND ? share : window;

	struct canal_remote *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	canal__list_init(&r->link);
	r->gate = gate;
	r->tag = tag;
	r->end = end;
	r->elt_size = elt_size;
	/* The effective capacity, sent in the hello and compared with the
	 * peer's: 1 and 2 are the same channel (test_revapi_remote_cap1). */
	r->capacity = effective;
	r->window = window;
	r->batch = batch;
	r->hub = hub;
	for (int i = 0; i < CTRL_SLOTS; i++)
		r->ctrl[i].buf = r->ctrl_buf[i];
	size_t data_len = DATA_HDR + batch * elt_size;
	r->rbuf_len = end == CANAL_REMOTE_RECV && data_len > CTRL_LEN ? data_len
								       : CTRL_LEN;
	r->rbuf = malloc(r->rbuf_len);
	r->spare = malloc(sizeof *r->spare);
	int err = r->rbuf && r->spare ? 0 : -ENOMEM;
	for (int i = 0; !err && end == CANAL_REMOTE_SEND && i < DATA_SLOTS; i++)
		if (!(r->data[i].buf = malloc(data_len)))
			err = -ENOMEM;
	if (!err) {
		r->ch = canal_chan_create(elt_size, local_cap, 0);
		if (!r->ch)
			err = -errno;
		else if (hub->caller_progress)
			err = canal__chan_set_hook(r->ch,
						   end == CANAL_REMOTE_SEND
							   ? &hub->hook_send
							   : &hub->hook_recv);
	}
	if (err) {
		canal_chan_destroy(r->ch);
		remote_free(r);
		return err;
	}

	hub_enter(hub);
	int rank = canal_engine_rank(hub->e), size = canal_engine_size(hub->e);
	if (gate < 0 || gate >= size || gate == rank) {
		err = -EINVAL;
	} else {
		struct canal__list *l;
		for (l = hub->chans.next; l != &hub->chans; l = l->next) {
			struct canal_remote *o =
				canal__container_of(l, struct canal_remote, link);
			if (o->gate == gate && o->tag == tag)
				err = -EBUSY;
		}
		if (!err) {
			int ge = canal_engine_gate_error(hub->e, gate, NULL, 0);
			err = ge < 0 ? ge : 0;
		}
	}
	struct canal__remote_owed *owed = NULL;
	if (!err) {
		/* What an earlier channel on (gate, tag) left untaken is
		 * this end's to skip: its receives come first from now on. */
		struct canal__remote_owed **p = owed_find(hub, gate, tag);
		if ((owed = *p)) {
			r->skip_fins = owed->fins;
			*p = owed->next;
		}
		canal__list_append(&hub->chans, &r->link);
	}
	pthread_mutex_unlock(&hub->lock);
	free(owed);
	if (err) {
		canal_chan_destroy(r->ch);
		remote_free(r);
		return err;
	}
	*out = r;
	return 0;
}

EXPORT struct canal_chan *canal_remote_chan(const struct canal_remote *r)
{
	/* r->ch changes only in canal_remote_close(), which the caller
	 * must not overlap with this call. */
	return r ? r->ch : NULL;
}

EXPORT int canal_remote_error(const struct canal_remote *r, char *buf,
			      size_t buflen)
{
	if (!r)
		return -EINVAL;
	hub_enter(r->hub);
	int err = r->error;
	if (buf && buflen)
		snprintf(buf, buflen, "%s", err ? r->why : "");
	pthread_mutex_unlock(&r->hub->lock);
	return err;
}

EXPORT int canal_remote_close(struct canal_remote *r, int64_t timeout_ns)
{
	if (!r)
		return -EINVAL;
	struct canal_remote_hub *hub = r->hub;
	struct canal_chan *ch = r->ch;
	/* A sending end closes its channel (the flow ends once it is
	 * drained); a receiving end's close tells the sender to stop. */
	canal_close(ch);
	uint64_t deadline = timeout_ns < 0 ? UINT64_MAX
					   : canal_now_ns() + (uint64_t)timeout_ns;
	unsigned nap = SLEEP_MIN_US;
	for (;;) {
		hub_enter(hub);
		if (r->finished) {
			hub_forget_end(hub, r);
			int err = r->error;
			pthread_mutex_unlock(&hub->lock);
			canal_chan_destroy(ch);
			remote_free(r);
			return err;
		}
		if (canal_now_ns() >= deadline) {
			/* A sending end whose channel (closed above) is empty
			 * and holds no element taken but not posted loses
			 * nothing: its FIN says the normal end, not a stop
			 * that cut the stream short (the peer's -ECONNABORTED,
			 * handle_message). No user touches ch meanwhile. */
			if (r->end == CANAL_REMOTE_SEND && !r->data_unposted &&
			    canal_chan_len(ch) == 0)
				r->drained = true;
			r->detached = true;
			r->ch = NULL;
			r->pend_n = 0;
			int err = r->error ? r->error : -ETIMEDOUT;
			pthread_mutex_unlock(&hub->lock);
			canal_chan_destroy(ch);
			return err;
		}
		pthread_mutex_unlock(&hub->lock);
		sleep_us(nap);
		if (nap < SLEEP_MAX_US)
			nap *= 2;
	}
}
