/* SPDX-License-Identifier: MIT */
/*
 * engine/internal.h - the objects every layer of the engine shares: the
 * session, its gates, requests and the outgoing pieces. Layer code lives in
 * collect/ (matching, per-flow sequence numbers, pack/unpack), schedule/
 * (window, strategies, credits, rendezvous, wire parsing) and transfer/
 * (drivers). Calls go one way: session.c -> collect -> schedule -> transfer;
 * the receive path goes back up through the upcalls of schedule.h, never by
 * a schedule file including a collect header.
 *
 * Threading: a session is used by one thread at a time (engine.h), so none
 * of these structures is concurrent - except with a progress thread
 * (progress.c): then every public call and every round of the thread
 * holds the session lock (canal__engine_lock()) while it touches them,
 * and the lock's acquire/release orders everything behind it. In caller
 * mode the lock functions do nothing (e->pt is NULL and never changes
 * while the session is open). The only memory shared with another
 * process is the shm driver's segment (see transfer/shm.c for its
 * invariants and memory-ordering pairs).
 *
 * Requests: every live request has an id in the session's table
 * (canal__req_*), used as the rendezvous cookie on the wire: a cookie read
 * from a peer is looked up (index and generation, gate and kind checked),
 * never dereferenced.
 */
#ifndef CANAL_ENGINE_INTERNAL_H
#define CANAL_ENGINE_INTERNAL_H

#include <canal/engine.h>

#include "transfer/driver.h" /* struct canal__native_op */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define EXPORT __attribute__((visibility("default")))

/* An intrusive doubly linked list; an empty list points to itself. */
struct canal__list {
	struct canal__list *next, *prev;
};

/* A hash table of lists keyed by (tag, seq): collect/table.h. */
struct canal__table {
	struct canal__list *bucket;
	uint32_t mask; /* buckets - 1 (a power of two, minus one) */
	uint32_t n;    /* entries */
};

static inline void canal__list_init(struct canal__list *l)
{
	l->next = l->prev = l;
}
static inline bool canal__list_empty(const struct canal__list *l)
{
	return l->next == l;
}
static inline void canal__list_append(struct canal__list *l,
				      struct canal__list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}
static inline void canal__list_remove(struct canal__list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}
#define canal__container_of(p, type, member)                                 \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

enum canal__req_kind { REQ_SEND = 1, REQ_RECV, REQ_PACK };

struct canal_engine_req;

/* An outgoing piece: its wire header, built at enqueue time, and the bytes
 * that follow it (referenced, not copied). */
struct canal__piece {
	struct canal__list link;
	unsigned char hdr[32];
	uint8_t hdr_len;
	bool express;               /* control pieces and EXPRESS data */
	bool embedded;              /* the one inside its request: not freed */
	uint32_t order;             /* the gate's enq_order when queued
				     * (express and data: walked merged) */
	const unsigned char *payload;
	uint32_t payload_len;
	uint32_t credit_cost;       /* eager bytes the receiver may hold */
	struct canal_engine_req *req; /* pieces_left-- when handed over */
};

/* The DATA chunks of a receive's rendezvous, from its RTR to its last
 * chunk (schedule/chunks.c): which of them have been written. */
struct canal__chunks {
	struct canal__list link;    /* on its gate's rndv_recv list */
	uint64_t *map;              /* bit i: chunk i written; &small for
				     * up to 64 chunks, else allocated */
	uint64_t small;
	uint32_t left;              /* chunks not written yet */
};

/* canal__req_new() sets every field one by one: add new ones there too
 * (all but the union at the end, set up whole where it is used). */
/* An internal bit of a request's flags, beside the public ones: send, a
 * piece of a pack followed by others in packing order; receive, the
 * message it took said so (wire.h, PIECE_FLAG_MORE; with UCX's matching,
 * a bit of the UCP tag). */
#define CANAL__FLAG_MORE (1u << 31)

struct canal_engine_req {
	struct canal__list link;    /* gate's posted list, or any-gate list */
	struct canal_engine *e;
	uint8_t kind;               /* enum canal__req_kind */
	bool done;
	bool posted;                /* on a posted list (receives) */
	bool internal;              /* a piece of a pack: freed with it */
	bool rndv_wait;             /* send: RTS out, RTR/FIN not yet in;
				     * receive: RTR out, DATA expected */
	int error;
	int gate;                   /* CANAL_ENGINE_ANY_GATE until matched */
	unsigned tag;
	uint32_t seq;
	unsigned flags;
	unsigned char *buf;         /* user buffer */
	size_t len;                 /* send: length; receive: capacity */
	size_t msg_len;             /* receive: length of the message */
	uint32_t pieces_left;       /* send: pieces not yet handed over */
	uint64_t cookie;            /* id in the table: (generation << 32) | index */
	struct canal_engine_req *parent; /* pack this piece belongs to */
	uint32_t children_left;     /* pack: pieces not yet complete */
	/* A bulk transfer under way (driver's handle), on its gate's bulk
	 * list through bulk_link; NULL otherwise. */
	void *bulk;
	struct canal__list bulk_link;
	/* A session with UCX's matching (e->native): the message's UCP
	 * operation, live from its start to its end (its done callback,
	 * collect/match.c, completes the request): a request is never
	 * completed otherwise while nat.live, nor freed. */
	struct canal__native_op nat;
	/* Not set at init (the path of every message): each is set up whole
	 * before its first use, and a request uses one of them only. */
	union {
		/* A send's EAGER or RTS piece, set up by canal__sched_send():
		 * no allocation per message. */
		struct canal__piece piece;
		/* A receive's rendezvous DATA (RTR sent), set up by
		 * canal__sched_accept_rts(). */
		struct canal__chunks chunks;
	};
};

struct canal__driver;
struct canal__strategy;
struct canal__lazy;

struct canal__gate {
	int rank;
	int error;                  /* 0, or the negative errno that closed it */
	char errmsg[160];
	struct canal__driver *drv;
	/* schedule: the window. control holds the control pieces (RTR, FIN,
	 * CREDIT), looked at first, always; express the EXPRESS messages'
	 * pieces, then data the rendezvous DATA pieces, then normal the
	 * others, each in order. Control apart: behind more than a
	 * strategy's scan of express pieces waiting for credit, a CREDIT was
	 * never seen, and two peers flooding each other with EXPRESS
	 * messages both waited for credit for ever (a hostile review). None
	 * of them is ordered with this side's sends: they answer the peer's.
	 * Data apart for the same reason: DATA spends no credit and its
	 * receive is posted, and behind more than a scan of EXPRESS pieces
	 * waiting for credit it was never seen, while the receiver waited
	 * for it before taking (and crediting) those messages
	 * (test_reveng4_data_behind_express). The strategies walk express
	 * and data merged in the order pieces were queued (enq_order, each
	 * queue scanned to its own limit), so DATA keeps its place among
	 * the EXPRESS pieces, as when they shared a queue: an EXPRESS stream
	 * with credit never starves a rendezvous behind it. */
	struct canal__list control, express, data, normal;
	uint32_t enq_order;         /* next piece's order (wraps) */
	struct canal__list bulk;     /* requests with a bulk transfer */
	struct canal__list rndv_recv; /* receives waiting for DATA (their
				       * RTR sent): schedule/chunks.h */
	size_t queued_bytes;        /* payload bytes in the four queues */
	int64_t credits;            /* eager bytes we may still send */
	uint64_t credit_owed;       /* eager bytes freed here, not yet returned */
	/* collect: per-tag sequence numbers (65536 each, calloc'ed: pages are
	 * touched only for the tags used) and matching lists. */
	uint32_t *send_next, *recv_next;
	struct canal__table posted;     /* receives with an assigned seq */
	struct canal__table unexpected; /* struct canal__unexpected */
	uint64_t unexpected_bytes;      /* credit of what is held for no
					 * receive yet (match.c) */
};

/* Pieces wait in the gate's window (any of its four queues). */
static inline bool canal__gate_queued(const struct canal__gate *g)
{
	return !canal__list_empty(&g->control) ||
	       !canal__list_empty(&g->express) ||
	       !canal__list_empty(&g->data) ||
	       !canal__list_empty(&g->normal);
}

struct canal_engine {
	int rank, size;
	char driver_name[16]; /* "shm", ..., or kinds joined: "shm+ucx+tcp" */
	const struct canal__strategy *strategy;
	struct canal__gate *gates;       /* size entries; gates[rank] unused */
	uint32_t *seq;                   /* every gate's sequence numbers, one
					  * mapping (collect.h); NULL if none */
	size_t seq_bytes;
	struct canal__list any_posted;   /* any-gate receives, posting order */
	struct canal__list packs;        /* packs begun, not ended (pack.c) */
	int any_next;                    /* round robin start for any-gate */
	/* Live requests not yet complete. Kept away from the table's other
	 * counters: GCC's vectorizer turned reqlive++ and undone++, side by
	 * side, into one 8-byte load, add and store, and that load cannot be
	 * forwarded from the two 4-byte stores of the message before (the
	 * callback's undone--, the free's reqlive--): a store-forwarding
	 * stall on every request (perf: two thirds of irecv's samples). */
	uint32_t undone;
	/* request table (cookies) */
	struct canal_engine_req **reqtab;
	uint32_t *reqgen;
	uint32_t reqcap, reqlive;
	uint32_t *reqfree;
	uint32_t nfree;
	/* freed requests kept for reuse (linked by link.next) */
	struct canal_engine_req *req_cache;
	unsigned req_cached;
	uint64_t urgent[(CANAL_ENGINE_TAG_MAX + 1) / 64]; /* tag bitmap */
	uint64_t last_health_ns;
	unsigned health_round;
	char dir[512];
	/* Launched by a PMIx server (mpirun, srun): the exchange's handle,
	 * finalized at close; pmix_dir: this rank created dir (shm under
	 * PMIx) and removes it at close. */
	void *pmix;
	bool pmix_dir;
	/* Progress thread (progress.c), NULL in caller mode; set before the
	 * thread starts and cleared after it is joined. lock: 0 free, 1
	 * held; taken only when pt is set. */
	struct canal__progress *pt;
	/* Gates connected on first use (transfer/lazy.c), NULL when every
	 * gate was connected at open. */
	struct canal__lazy *lazy;
	/* The ucx driver alone, with UCX's own matching (driver.h,
	 * "ucx_native.c"): messages bypass collect's matching and the
	 * schedule layer; NULL otherwise. native_abort_err: while a failing
	 * gate's operations are aborted, the error they end with. */
	struct canal__native *native;
	int native_abort_err;
	_Atomic uint32_t lock;
	/* Callers inside canal_engine_wait(): the progress thread sleeps
	 * while there are any (seq_cst, paired in progress.c). */
	_Atomic uint32_t waiters;
	/* remote.c's: the FINs its remote channels' peers still owe on
	 * their (gate, tag) (remote.c, "Incarnations"), kept here so that
	 * every hub of the session knows them; NULL when none. */
	struct canal__remote_owed *remote_owed;
	/* remote.c's: ends whose close timed out and whose exchange was
	 * still unfinished when their hub stopped (their receive is still
	 * posted): the next hub of the session takes them over (their
	 * (gate, tag) stays busy), free_session() frees them. Linked by
	 * their link; initialised at open. */
	struct canal__list remote_zombies;
	/* remote.c's: the hub that drives the session, NULL when none (one
	 * hub per session: a second one is refused). Set by
	 * canal_remote_hub_start() before its thread is made, cleared by
	 * canal_remote_hub_stop() after the join: only the session's owner
	 * touches it, between its own calls (engine.h, one thread at a
	 * time). */
	struct canal_remote_hub *hub;
	/* pack.c's test hook (canal__engine_pack_fail_pieces): bit i set,
	 * piece i of the next pack_end gets no request. */
	uint64_t pack_faults;
};

/* The session lock (progress.c), taken by every public call that touches
 * the session when a progress thread runs; nothing in caller mode.
 * canal__engine_unlock() wakes the thread, before releasing, if it
 * sleeps and the call left work for it. */
void canal__engine_lock_slow(struct canal_engine *e);
void canal__engine_unlock_slow(struct canal_engine *e);
static inline void canal__engine_lock(struct canal_engine *e)
{
	if (e->pt)
		canal__engine_lock_slow(e);
}
static inline void canal__engine_unlock(struct canal_engine *e)
{
	if (e->pt)
		canal__engine_unlock_slow(e);
}
/* Start the progress thread of e (after its gates are connected), stop
 * and join it (before anything is freed): 0 or a negative errno. */
int canal__progress_start(struct canal_engine *e);
void canal__progress_stop(struct canal_engine *e);
/* One round of progress on every gate (session.c): the number of events
 * handled. The caller holds the session lock. */
int canal__engine_progress_once(struct canal_engine *e);

/* Core (req.c): request table and completion.
 *
 * canal__req_new(): a request of kind, incomplete, with a fresh cookie in
 * the table, every field set; NULL if memory runs out. canal__req_free():
 * its index back to the table (the generation moves on: its cookie is
 * stale from then on), off its posted list, the request to the cache.
 * Both are on the path of every message, twice: their common case
 * (a cached request and a free index; a request on no list and room in
 * the cache) is inline, the rest in req.c.
 *
 * Freed requests are kept for reuse (a malloc/free pair less per
 * message), at most CANAL__REQ_CACHE_MAX of them (about 3.6 MB held after
 * a peak; the rest are freed). 256 left the seed's parallel ping-pongs at
 * 1 000 packs (4 000 live requests) paying malloc and free for most of
 * them: 23 % of the instructions (callgrind). */
#define CANAL__REQ_CACHE_MAX 16384u
struct canal_engine_req *canal__req_take_slow(struct canal_engine *e);
void canal__req_free_slow(struct canal_engine_req *r);

/* Memory for a request, not set up yet, with a free index in the table
 * for it; NULL if memory runs out. canal__req_new() is this and then
 * canal__req_init(); memory taken and not used goes back by
 * canal__req_cache_put(). */
static inline struct canal_engine_req *canal__req_take(struct canal_engine *e)
{
	struct canal_engine_req *r = e->req_cache;
	if (__builtin_expect(!r || e->nfree == 0, 0))
		return canal__req_take_slow(e);
	e->req_cache = (struct canal_engine_req *)(void *)r->link.next;
	e->req_cached--;
	return r;
}

/* Every field of r but its UCP operation (nat), and r in the table:
 * canal__req_init() without nat, for a send that hands nat to UCX before
 * the rest is set up (collect/match.c, native_isend). */
static inline void canal__req_init_but_nat(struct canal_engine *e,
					   struct canal_engine_req *r,
					   int kind)
{
	/* Every field before nat, one by one (a memset here compiled to rep
	 * stos: a fifth of the engine's CPU per message, by perf on
	 * engine_overhead). The union after nat (a send's piece, a
	 * receive's chunks) is set up whole before any use. Keep in step
	 * with the struct. */
	r->done = r->posted = r->internal = r->rndv_wait = false;
	r->error = 0;
	r->tag = 0;
	r->seq = 0;
	r->flags = 0;
	r->buf = NULL;
	r->len = r->msg_len = 0;
	r->pieces_left = 0;
	r->parent = NULL;
	r->children_left = 0;
	r->bulk = NULL;
	uint32_t idx = e->reqfree[--e->nfree];
	canal__list_init(&r->link);
	r->e = e;
	r->kind = (uint8_t)kind;
	r->gate = CANAL_ENGINE_ANY_GATE;
	r->cookie = ((uint64_t)e->reqgen[idx] << 32) | idx;
	e->reqtab[idx] = r;
	e->reqlive++;
	e->undone++;
}

static inline void canal__req_init(struct canal_engine *e,
				   struct canal_engine_req *r, int kind)
{
	r->nat.h = NULL;
	r->nat.live = false;
	canal__req_init_but_nat(e, r, kind);
}

static inline struct canal_engine_req *canal__req_new(struct canal_engine *e,
						      int kind)
{
	struct canal_engine_req *r = canal__req_take(e);
	if (r)
		canal__req_init(e, r, kind);
	return r;
}

static inline void canal__req_cache_put(struct canal_engine *e,
					struct canal_engine_req *r)
{
	r->link.next = (struct canal__list *)(void *)e->req_cache;
	e->req_cache = r;
	e->req_cached++;
}

/* r's index back to the table, its cookie made stale. */
static inline void canal__req_release(struct canal_engine_req *r)
{
	struct canal_engine *e = r->e;
	uint32_t idx = (uint32_t)r->cookie;
	e->reqtab[idx] = NULL;
	if (!r->done)
		e->undone--;
	if (++e->reqgen[idx] == 0)
		e->reqgen[idx] = 1;
	e->reqfree[e->nfree++] = idx;
	e->reqlive--;
}

static inline void canal__req_free(struct canal_engine_req *r)
{
	struct canal_engine *e = r->e;
	if (__builtin_expect(r->posted || e->req_cached >= CANAL__REQ_CACHE_MAX,
			     0)) {
		canal__req_free_slow(r);
		return;
	}
	canal__req_release(r);
	canal__req_cache_put(e, r);
}

struct canal_engine_req *canal__req_lookup(struct canal_engine *e,
					   uint64_t cookie, int gate, int kind);
/* Complete r with error (0 or a negative errno), once: take it off its
 * posted list, count it in its pack, free it if internal. The common case
 * (a request on no list, in no pack) is inline: it is on the path of
 * every message, twice. */
void canal__req_complete_slow(struct canal_engine_req *r, int error);
static inline void canal__req_complete(struct canal_engine_req *r, int error)
{
	if (r->posted || r->parent || r->internal) {
		canal__req_complete_slow(r, error);
	} else if (!r->done) {
		r->done = true;
		r->error = error;
		r->e->undone--;
	}
}
/* UCX's matching: end r's live UCP operation now; r completes with
 * error (a negative errno) unless UCX ended it otherwise. */
void canal__req_native_abort(struct canal_engine_req *r, int error);
/* Close gate g with error (negative errno) and a reason: every request
 * tied to it completes with error. Returns error. */
int canal__gate_fail(struct canal_engine *e, int g, int error,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The health check of gate g (session.c), at once: if its driver says
 * the peer is dead or the link broken, what the peer delivered is taken
 * first, then the gate fails (canal__gate_fail) with the driver's error.
 * Used by the periodic check, and by a send that UCX's matching refused
 * because the endpoint failed (so that the caller's -ECONNRESET and
 * canal_engine_gate_error() agree). Not from inside a request's own
 * processing: failing a gate completes and may free requests. */
void canal__gate_check(struct canal_engine *e, int g);

/* canal_engine_wait(), and *flags gets the request's flags (a receive's
 * CANAL__FLAG_MORE: collect/pack.c). */
int canal__engine_wait_flags(struct canal_engine *e,
			     struct canal_engine_req *r,
			     struct canal_engine_status *st, unsigned *flags);

static inline bool canal__gate_valid(const struct canal_engine *e, int g)
{
	return g >= 0 && g < e->size && g != e->rank;
}

/* remote.c: the rounds run so far by threads waiting on the hub's local
 * channels (caller progress), by senders (a send to a hub standing aside
 * or napping), and by the hub's own thread; for tests. */
struct canal_remote_hub;
struct canal__remote_rounds {
	uint64_t waiting, sending, thread;
};
void canal__remote_hub_rounds(struct canal_remote_hub *hub,
			      struct canal__remote_rounds *out);
/* remote.c, for tests: from now on, the hub's i-th canal_engine_isend
 * (irecv) of any of its ends, counted from 0, fails with -ENOMEM before
 * reaching the engine if bit i of sends (recvs) is set, as when memory
 * runs out. Returns the faults of the previous masks not yet met (0: all
 * were). */
uint64_t canal__remote_hub_fail_posts(struct canal_remote_hub *hub,
				      uint64_t sends, uint64_t recvs);
/* pack.c, for tests: from now on, piece i (counted from 0, in packing
 * order) of a pack_end finds no memory for its request if bit i of
 * pieces is set; each fault is met once. Returns the faults of the
 * previous mask not yet met (0: all were). */
uint64_t canal__engine_pack_fail_pieces(struct canal_engine *e,
					uint64_t pieces);
/* remote.c: free the session's list of FINs owed (free_session()). */
struct canal__remote_owed;
void canal__remote_owed_free(struct canal__remote_owed *list);
/* remote.c: free the ends left in e->remote_zombies, once no request of
 * the session is left (free_session()): those with a DATA send under way
 * (a peer may still read its buffer by rendezvous) are left allocated. */
void canal__remote_zombies_free(struct canal_engine *e);
/* remote.c: how many requests of the ends in e->remote_zombies are not
 * complete (the hub's, not the application's: canal_engine_close() does
 * not count them as pending). */
unsigned canal__remote_zombies_pending(const struct canal_engine *e);

#endif /* CANAL_ENGINE_INTERNAL_H */
