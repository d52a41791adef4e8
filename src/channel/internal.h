/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the inside of the channel layer: the layout of a channel,
 * the encodings of its words (behind named helpers), its invariants and
 * memory-ordering pairs, and the functions its files share (canal__*).
 * Files: ring.c (the ring), wake.h (who wakes whom), rendezvous.c
 * (capacity 0), sendrecv.c (send/recv/try/timed/close), batch.c,
 * single_copy.c, select.c, create.c (geometry, thread channels), segment.c
 * (memory files, validation, open), names.c (named channels, hand-over),
 * repair.c (crash repair).
 *
 * THE RING (a bounded MPMC queue with one sequence stamp per slot, after
 * D. Vyukov). Positions are 64-bit counters that never wrap in practice
 * (2^62 operations). Position p lives in slot p % ring.
 *
 *   tail = (next send position << 1) | CLOSED   (one word: a send's claim
 *          and close are ordered by the same atomic, so no send can succeed
 *          after close has returned)
 *   head = next receive position
 *
 * Slot stamps are stored relative to the slot index i, so that a zero-filled
 * buffer is an empty ring (memory can be mapped lazily, and a shared segment
 * made by ftruncate() is valid as is):
 *   stamp = ((p - i) << 2) | state,  state: 0 free for position p,
 *                                           1 holds p's element,
 *                                           2 p was withdrawn (skip it),
 *                                           3 (capacity 0) a receiver is
 *                                             taking p's element.
 *
 * Invariants:
 *  I1 head <= tail position; tail position - head <= ring.
 *  I2 A sender owns position p from its CAS of tail (p -> p+1) until it
 *     stores stamp (p,1|2); a receiver owns p from its CAS of head until it
 *     stores stamp (p+ring, 0). Only the owner writes the slot's data.
 *  I3 A slot's stamp only moves forward: (p,0) -> (p,1|2) -> (p+ring,0);
 *     on a synchronous channel (p,1) -> (p,3) -> (p+ring,0) when a
 *     receiver takes the element, or (p,1) -> (p,2) when a timed sender
 *     withdraws it at its deadline (both CASes: exactly one wins).
 *  I4 A claim's retries are bounded by its deadline (ring.c, claim_retry):
 *     a try (deadline 0) retries at most CLAIM_TRY_RETRIES times, then
 *     returns -EAGAIN having claimed nothing; a timed one ends by its
 *     deadline; only a blocking one retries for as long as it takes. A
 *     peer rewriting a shared ring's indices cannot keep a try or timed
 *     call inside a claim loop.
 *
 * Memory ordering:
 *  - Sender: CAS tail (seq_cst) ... write data ... store stamp (p,1)
 *    (release). Receiver: load stamp (acquire) sees (p,1), then reads data:
 *    the release/acquire pair on the stamp publishes the data.
 *  - Receiver: CAS head (seq_cst) ... read data ... store stamp (p+ring,0)
 *    (release). Sender: load stamp (acquire) sees it free, then writes data.
 *  - Blocking: a thread parks only after reading the *indices* (seq_cst) in
 *    its wait condition, never the stamp: "empty" is tail == head, "full" is
 *    tail - head == ring. The other side's CAS of that index is the seq_cst
 *    RMW of the wait protocol in wait.h, and it notifies after its stamp
 *    store. When the indices say "ready" but the stamp is not stored yet, the
 *    other side is between its CAS and its store: we spin (backoff) instead
 *    of parking.
 *
 * SYNCHRONOUS CHANNELS (capacity 0) use a small internal ring and demand
 * counters: a receiver first announces itself (demand++), and a sender may
 * only push after taking one unit of demand (CAS d -> d-1, d > 0). So an
 * element is pushed only for a receiver that is committed to take one.
 *   demand        = plain receivers (recv, timed, try, borrow) announced
 *                   and not yet matched. A matched plain receiver always
 *                   takes an element, so its sender returns once it has
 *                   published: the hand-off is done (as Go's and
 *                   crossbeam's senders return once the value is in a
 *                   waiting receiver's hands), one wake-up per message;
 *   select_demand = receiving selects announced and not yet matched. A
 *                   select may complete another case instead, so a sender
 *                   that took such a unit waits for the ack (head past its
 *                   position) before it returns;
 *   orphans       = elements pushed for a select that went elsewhere; a
 *                   plain receiver announcing itself takes an orphan first
 *                   instead of adding demand.
 * A receiver that gives up (timeout) retracts its unit (CAS d -> d-1,
 * d > 0, on its own counter); if that fails a sender has matched it, an
 * element is coming, and the receiver takes it.
 */
#ifndef CANAL_INTERNAL_H
#define CANAL_INTERNAL_H

#include "base/compiler.h"
#include "base/wait.h"

#include <canal/channel.h>

#include <assert.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define CANAL_MAGIC 0x4c414e4143ull /* "CANAL" */
#define CANAL_LAYOUT_VERSION 3u

#define TAIL_CLOSED 1ull

#define STAMP_FREE 0u
#define STAMP_FULL 1u
#define STAMP_SKIP 2u
#define STAMP_TAKEN 3u

/* Internal ring size of synchronous channels. */
#define CANAL_SYNC_RING 16u

/* Cells of waiting senders by process (chan_state.sender_cells). */
#define CANAL_SENDER_CELLS 6

struct canal_slot_hdr {
	_Atomic uint64_t stamp;
	/* Shared channels only: who claimed the slot last, for crash repair
	 * (owner_word() below). */
	_Atomic uint64_t owner[];
	/* data follows at ch->slot_hdr bytes, elt_size bytes, 8-byte aligned */
};

/*
 * The channel's state: everything processes or threads share. It holds no
 * pointer (offsets only), so it can live in a shared mapping at a different
 * address in each process. Slots start at slots_offset from its start.
 */
struct chan_state {
	/* Written once at creation, validated by whoever opens it. */
	uint64_t magic;
	uint32_t version;
	uint32_t flags;	     /* CANAL_SHARED, ... */
	uint64_t elt_size;
	uint64_t capacity;   /* as created; 0 for synchronous */
	uint64_t ring;	     /* slots */
	uint64_t stride;     /* bytes per slot */
	uint64_t slot_hdr;   /* bytes of slot header before the data */
	uint64_t slots_offset;
	uint64_t map_size;   /* bytes of the whole segment */
	/* Set by close after it sets CLOSED in tail; on this read-mostly line
	 * so that polling receivers need not read tail (ring_claim_recv). */
	_Atomic uint32_t closed_hint;
	/* Shared channels: the last attacher id handed out (liveness.c). */
	_Atomic uint32_t next_attacher;
	/* Synchronous shared channels: the senders waiting for demand, by
	 * process (rendezvous.c): cells of (attacher id << 32) | count, 0
	 * free, so that the count of a process that died waiting can be
	 * told and dropped. Those that find no cell count in
	 * senders_waiting, as every sender of a thread channel does. In the
	 * padding before tail (the layout is unchanged, written only by
	 * senders about to sleep). */
	_Atomic uint64_t sender_cells[CANAL_SENDER_CELLS];

	alignas(CANAL_CACHELINE) _Atomic uint64_t tail;
	alignas(CANAL_CACHELINE) _Atomic uint64_t head;
	alignas(CANAL_CACHELINE) struct canal_waitq recv_wq; /* want element */
	alignas(CANAL_CACHELINE) struct canal_waitq send_wq; /* want slot */
	/* Thread channels: senders parked with their element in the
	 * handle's hand-off list (handoff.h), a hint for receivers that
	 * find the ring empty (the list is the truth, under its lock). In
	 * the padding (the layout is unchanged); never read for a shared
	 * channel. */
	_Atomic uint32_t handoffs;

	/* Synchronous channels only. */
	alignas(CANAL_CACHELINE) _Atomic int64_t demand;
	_Atomic int64_t select_demand;
	_Atomic int64_t orphans;
	_Atomic uint32_t senders_waiting; /* senders wanting demand, not in
					     sender_cells */
	struct canal_waitq demand_wq;	  /* senders waiting for demand */
	struct canal_waitq ack_wq;	  /* senders waiting for the ack */
};
/* The cells fill the header's second line: the layout is version 3's. */
static_assert(offsetof(struct chan_state, tail) == 2 * CANAL_CACHELINE &&
		      sizeof(struct chan_state) == 7 * CANAL_CACHELINE,
	      "chan_state layout changed: bump CANAL_LAYOUT_VERSION");

/* Shared channels: which held slot this process saw first, and when (ring.c,
 * held_since), so that the waits of successive calls on one holder add up.
 * Under lock (a try-lock: a thread that finds it taken counts from now). */
struct canal__held_seen {
	_Atomic uint32_t lock;
	uint64_t pos, stamp; /* the slot's position and its holder's stamp */
	uint64_t since;	     /* canal_now_ns() of the first sighting; 0: none */
};

/*
 * The handle: local to a process. Copies of the geometry are taken once
 * (validated when a segment is opened), so that a peer scribbling on the
 * shared header cannot make this process index outside its mapping.
 */
struct canal_chan {
	struct chan_state *st;
	char *slots;
	/* Thread channels: the progress hook of the party that feeds the
	 * channel (hook.h), or NULL. Written once before the channel is
	 * handed to its users, read-only after; on the first line, with st
	 * and slots, since every send looks at it (wake.h). */
	const struct canal__wait_hook *hook;
	uint64_t elt_size;
	uint64_t capacity;
	uint64_t ring;
	uint64_t ring_mask;  /* ring - 1 when ring is a power of two, else 0 */
	/* ceil(2^128 / ring) when ring is not a power of two (ring_index). */
	unsigned __int128 ring_magic;
	uint64_t stride;
	uint64_t slot_hdr;
	uint32_t pow2;	     /* ring is a power of two */
	uint32_t sync;	     /* capacity 0 */
	uint32_t shared;     /* in shared memory: futex words process-shared,
				CAS on stamps, crash repair */
	uint32_t mmapped;    /* the state was mmap()ed (else heap) */
	size_t map_size;
	int fd;		     /* shared: the memory file, else -1 */
	/* Shared channels, liveness.c's (under its registry lock): what
	 * holds this handle's liveness lock (lock_kind, LIVE_*) and, for an
	 * OFD lock, the one-page mapping of a description of the memory
	 * file of the handle's own that holds it (lock_map, else NULL); the
	 * memory file (dev, ino); the attacher id (owner words name it) and
	 * the token of the process that attached (a forked child
	 * re-attaches). */
	void *lock_map;
	int lock_kind;
	dev_t dev;
	ino_t ino;
	/* Shared channels: a peer cut the memory file short and this
	 * process's mapping was replaced by zeros (sigbus.c). */
	_Atomic uint32_t damaged;
	_Atomic uint32_t attach_id;
	_Atomic uint64_t attach_token;
	/* Shared channels: the held slots this process waits on, [0] by
	 * receivers (a sender's claim), [1] by senders (a receiver's), and
	 * the try receives that found the slot at head unpublished (every
	 * HELD_POLL_EVERY-th looks at its holder). Written only on slow
	 * paths, apart from the hot fields above. A wait on a holder is
	 * counted from this process's first sighting of it, by any thread
	 * and any call: a consumer that polls (try operations, timed ones
	 * shorter than the repair's grace periods, a select's rounds) is
	 * that slot's waiter as much as a blocking one
	 * (test_revshm_poll_dead). */
	char pad_[CANAL_CACHELINE];
	struct canal__held_seen held_seen[2];
	_Atomic uint32_t poll_misses;
	/* Thread channels: the senders parked with their element, oldest
	 * first, under ho_lock (handoff.c); chan_state.handoffs counts
	 * them. */
	_Atomic uint32_t ho_lock;
	struct canal__handoff *ho_first, *ho_last;
};

/* ------------------------------------------------------------------ */
/* Encodings of the shared words                                        */
/* ------------------------------------------------------------------ */

/* tail = (next send position << 1) | TAIL_CLOSED. */
static inline uint64_t tail_position(uint64_t tail)
{
	return tail >> 1;
}

/* What adding k positions adds to tail. */
static inline uint64_t tail_advance(uint64_t k)
{
	return k << 1;
}

/* A slot stamp = ((position - slot index) << 2) | state. */
#define STAMP_STATE_BITS 2u
#define STAMP_STATE_MASK 3u

static inline unsigned stamp_state(uint64_t stamp)
{
	return (unsigned)(stamp & STAMP_STATE_MASK);
}

/*
 * The owner word of a shared slot, for crash repair: who claimed it last,
 * for which position and in which role:
 *   (attacher id << 32) | ((position & OWNER_POS_MASK) << 1) | role.
 * 31 bits of position tell a claim of this lap from older ones (shared
 * rings have at most 2^30 slots).
 */
#define OWNER_SENDER 0u
#define OWNER_RECEIVER 1u
#define OWNER_POS_MASK 0x7fffffffull

static inline uint64_t owner_word(uint32_t id, uint64_t pos, unsigned role)
{
	return ((uint64_t)id << 32) | ((pos & OWNER_POS_MASK) << 1) | role;
}

static inline uint32_t owner_id(uint64_t owner)
{
	return (uint32_t)(owner >> 32);
}

/* The owner word names this claim (position pos, role). */
static inline bool owner_names(uint64_t owner, uint64_t pos, unsigned role)
{
	return (owner & 1u) == role &&
	       ((owner >> 1) & OWNER_POS_MASK) == (pos & OWNER_POS_MASK);
}

/*
 * pos % ring. For a ring that is not a power of two, without a division
 * (12 cycles of latency here, on every operation): Lemire, Kaser and Kurz,
 * "Faster remainder by direct computation" (2019): with M = ceil(2^128 / d),
 * a % d = ((M * a mod 2^128) * d) >> 128, exact for every 64-bit a and d.
 * The 128 x 64 bit product is formed from two 64 x 64 -> 128 products.
 */
static inline uint64_t ring_index(const struct canal_chan *ch, uint64_t pos)
{
	if (likely(ch->pow2))
		return pos & ch->ring_mask;
	unsigned __int128 frac = ch->ring_magic * pos; /* mod 2^128 */
	unsigned __int128 lo = (unsigned __int128)(uint64_t)frac * ch->ring;
	unsigned __int128 hi = (unsigned __int128)(uint64_t)(frac >> 64) *
			       ch->ring;
	return (uint64_t)((hi + (lo >> 64)) >> 64);
}

static inline struct canal_slot_hdr *slot_at(const struct canal_chan *ch,
					     uint64_t pos)
{
	return (struct canal_slot_hdr *)(ch->slots +
					 ring_index(ch, pos) * ch->stride);
}

static inline void *slot_data(const struct canal_chan *ch,
			      struct canal_slot_hdr *s)
{
	return (char *)s + ch->slot_hdr;
}

/* The stamp value meaning `state` for position pos in its slot. */
static inline uint64_t stamp_for(const struct canal_chan *ch, uint64_t pos,
				 unsigned state)
{
	return ((pos - ring_index(ch, pos)) << STAMP_STATE_BITS) | state;
}

/* The position a stamp read in pos's slot speaks of. */
static inline uint64_t stamp_position(const struct canal_chan *ch,
				      uint64_t pos, uint64_t stamp)
{
	return (stamp >> STAMP_STATE_BITS) + ring_index(ch, pos);
}

/* The stamp says pos holds an element (or a withdrawn one to skip). */
static inline bool stamp_is_published(const struct canal_chan *ch,
				      uint64_t pos, uint64_t stamp)
{
	return stamp == stamp_for(ch, pos, STAMP_FULL) ||
	       stamp == stamp_for(ch, pos, STAMP_SKIP);
}

/* stamp_for(ch, pos + ring, state), the same slot one lap later. */
static inline uint64_t stamp_next_lap(const struct canal_chan *ch,
				      uint64_t pos, unsigned state)
{
	return stamp_for(ch, pos, state) + (ch->ring << STAMP_STATE_BITS);
}

static inline bool chan_closed(const struct canal_chan *ch)
{
	return atomic_load_explicit(&ch->st->tail, memory_order_seq_cst) &
	       TAIL_CLOSED;
}

/* The mapping of a shared channel was lost to a truncation (sigbus.c):
 * every operation fails with -EBADMSG. */
static inline bool chan_damaged(const struct canal_chan *ch)
{
	return unlikely(ch->shared) &&
	       unlikely(atomic_load_explicit(&ch->damaged,
					     memory_order_relaxed));
}

static inline void copy_elt(void *dst, const void *src, size_t n)
{
	switch (n) {
	case 0:
		return;
	case 8:
		memcpy(dst, src, 8);
		return;
	case 4:
		memcpy(dst, src, 4);
		return;
	case 16:
		memcpy(dst, src, 16);
		return;
	default:
		memcpy(dst, src, n);
	}
}

/* ------------------------------------------------------------------ */
/* Shared between the files of the channel layer                        */
/* ------------------------------------------------------------------ */

/* Geometry of a channel, computed from what the user asks (create.c). */
struct chan_geometry {
	uint64_t ring, slot_hdr, stride, slots_offset, map_size;
};
int canal__chan_geometry(size_t elt_size, size_t capacity, bool shared,
			 struct chan_geometry *g);
/* Fill a handle's local copies from a (validated) state. */
void canal__chan_handle_init(struct canal_chan *ch, struct chan_state *st,
			     int fd, bool shared, bool mmapped);
/* Write a fresh state header (every index, stamp and futex word is 0). */
void canal__chan_state_init(struct chan_state *st, size_t elt_size,
			    size_t capacity, unsigned flags,
			    const struct chan_geometry *g);

/* Memory files (segment.c): a sealed memfd of map_size bytes, its pages
 * allocated, or -errno. */
int canal__segment_create_fd(size_t map_size, const char *name);
/* Allocate the pages of fd's first map_size bytes (a memory file made by
 * ftruncate), so that no write into its mapping faults for want of one:
 * 0, or -ENOSPC, -ENOMEM, -errno. */
int canal__segment_back(int fd, size_t map_size);

/* Liveness of the processes attached to a shared channel (liveness.c). */
int canal__attach(struct canal_chan *ch);
/* This handle's attacher id, for owner words (re-attaches after fork). */
uint32_t canal__self_id(struct canal_chan *ch);
/* The attacher id's process is gone (its liveness lock was released). */
bool canal__attacher_gone(struct canal_chan *ch, uint32_t id);
/* A file description of the memory file fd of one's own (lock holder). */
int canal__reopen_fd(int fd);
/* Closes a shared handle's descriptors (canal_chan_destroy). */
void canal__detach(struct canal_chan *ch);
/* Closes fd, a descriptor that may name a shared channel's memory file,
 * without dropping this process's liveness locks on that file (canal's
 * every close of such a descriptor goes through here). */
void canal__segment_close(int fd);
/* A descriptor of the file (dev, ino) for a new handle, given fd, one of
 * its descriptors: a descriptor canal had parked for it, or a dup of fd;
 * or -errno. */
int canal__segment_dup(int fd, dev_t dev, ino_t ino);
/* A descriptor of the memory file at path for a new handle, if this
 * process holds record locks on it (one parked, or a dup of one it has:
 * opening it again and closing that would drop the locks); -ENOENT if it
 * holds none, or if path is not a regular file (a symbolic link is never
 * followed, as shm_open does not), or -errno. */
int canal__segment_reuse(const char *path);
/* A shared handle over fd, a memory file (segment.c). own: fd becomes
 * the handle's, or is closed if no handle is made; else the handle takes
 * a descriptor of its own. */
int canal__chan_open_segment(int fd, bool own, size_t elt_size,
			     size_t capacity, struct canal_chan **out);

/* Named segments are not sealed: a peer may truncate them. Map faults in
 * a registered mapping into zeros and mark the handle damaged instead of
 * dying of SIGBUS (sigbus.c). */
void canal__sigbus_guard(struct canal_chan *ch);
void canal__sigbus_unguard(struct canal_chan *ch);

/* Crash repair (repair.c). */
/* Repair the slot of pos if its holder died. seen: the slot's stamp when
 * the caller's wait on this holder began; held_ns: how long the caller has
 * seen that stamp. The held time speaks of one claim only: if the stamp is
 * no longer seen, the slot has a new holder (the sender the caller waited
 * for published, and a receiver has just claimed the slot, perhaps without
 * its owner word yet), and nothing is repaired. */
void canal__repair_slot(struct canal_chan *ch, uint64_t pos, uint64_t seen,
			uint64_t held_ns);

/* A wait on a slot held by the other side (ring.c): the position, the
 * holder (the stamp it holds the slot with) and how long that holder has
 * been waited on. A caller that claims again after giving up (a committed
 * receiver's slices, a synchronous sender that gave its unit back) passes
 * the same one, so that the time on one holder adds up to the repair's
 * grace periods; a new position or a new stamp starts afresh (the snooze's
 * phases go by position: a stamp that moves on at the same position, FULL
 * to TAKEN, is the same wait for the caller). */
struct canal__held_wait {
	struct canal__snooze snooze;
	uint64_t pos;   /* the held position (UINT64_MAX: none yet) */
	uint64_t stamp; /* the stamp the holder holds it with */
	uint64_t since; /* when that stamp was first seen (canal_now_ns) */
};
#define CANAL__HELD_WAIT_INIT { CANAL__SNOOZE_INIT, UINT64_MAX, 0, 0 }

/* Ring primitives (ring.c). Return counts > 0, or -EAGAIN (full, empty;
 * or, with deadline 0, a slot held by the other side, or indices that kept
 * moving under the claim: I4), -ETIMEDOUT (held, or retrying, past the
 * deadline), -EPIPE (closed), -EBADMSG (damaged ring). try_only
 * (receive): -EAGAIN for a position claimed but not yet published, without
 * reading tail. hw: the caller's held wait, or NULL (one of the call's
 * own). give_up_held (send): -EBUSY for a slot held by the other side
 * once the pause phase on it is over (hw not NULL: its position noted
 * there, for canal__ring_wait_slot). */
long canal__ring_claim_send(struct canal_chan *ch, size_t n, uint64_t *pos,
			    uint64_t deadline, struct canal__held_wait *hw,
			    bool give_up_held);
long canal__ring_claim_recv(struct canal_chan *ch, size_t max, uint64_t *pos,
			    bool try_only, uint64_t deadline,
			    struct canal__held_wait *hw);
/* A sender that gave up a held slot (give_up_held) sleeps until a claim of
 * hw->pos may succeed or has moved on (the slot free, tail elsewhere or
 * closed): on the senders' queue, in slices, asking the repair of a dead
 * holder between them (shared). 0, or -ETIMEDOUT past deadline. */
int canal__ring_wait_slot(struct canal_chan *ch, struct canal__held_wait *hw,
			  uint64_t deadline);
/* A shared slot's owner word, written right after the claim of pos (the
 * id taken before the claim: canal__self_id may re-attach after fork,
 * syscalls that must not widen the anonymous window between the CAS and
 * this store, repair.c). Unless the claim was withdrawn meanwhile (its
 * claimer stopped 0.9 s right after its CAS and taken for dead): its name
 * would land on the slot's next claim, which would then look unnamed and
 * could be withdrawn although alive. Only a second stop, between this
 * look and the store, for as long as the slot takes to be reused, lets
 * that happen (GUARANTEES.md, limits). Returns whether it named itself. */
static inline bool canal__claim_name(struct canal_chan *ch, uint32_t id,
				     uint64_t pos, unsigned role)
{
	struct canal_slot_hdr *s = slot_at(ch, pos);
	uint64_t st = atomic_load_explicit(&s->stamp, memory_order_relaxed);
	if (role == OWNER_SENDER ? st != stamp_for(ch, pos, STAMP_FREE)
				 : !stamp_is_published(ch, pos, st))
		return false;
	atomic_store_explicit(&s->owner[0], owner_word(id, pos, role),
			      memory_order_release);
	return true;
}

/* A sender's claimed slot is still its own: always on a thread channel;
 * on a shared one, unless a peer withdrew the claim (repair.c: a claimer
 * stopped for 0.9 s between its claim and its owner word is taken for
 * dead). Asked before writing the element in: the slot may have been
 * reused since, and the copy would overwrite another claim's element.
 * (A repair that read the owner word before ours was written and
 * withdraws the claim after this check leaves the copy in a withdrawn
 * slot, which is reused only after receivers skip it: the claimer would
 * have to stop again, right after this check, for that long.) */
bool canal__ring_still_claimed(struct canal_chan *ch, uint64_t pos);
/* A sender's claimed slot: if still its own, copy elt in and publish it
 * (true); false if a repair took it (nothing written). */
bool canal__ring_fill(struct canal_chan *ch, uint64_t pos, const void *elt);
/* publish/release return false when a shared channel's peer repaired the
 * slot meanwhile, believing this process dead (the operation is lost). */
bool canal__ring_publish(struct canal_chan *ch, uint64_t pos, unsigned state);
bool canal__ring_release(struct canal_chan *ch, uint64_t pos);
/* pos is claimed by a sender and not published (a live reserve), or taken
 * by a receiver and not released (a live borrow). */
bool canal__ring_holds_claimed(struct canal_chan *ch, uint64_t pos);
bool canal__ring_holds_taken(struct canal_chan *ch, uint64_t pos);

/* Wait conditions, read with seq_cst (see "Blocking" above), and the waits
 * on them (0: try again, -ETIMEDOUT). */
bool canal__ring_can_send(struct canal_chan *ch);  /* not full, or closed */
bool canal__ring_can_recv(struct canal_chan *ch);  /* not empty, or closed */
bool canal__ring_probe_recv(struct canal_chan *ch); /* head published */
/* A try receive would say -EAGAIN at its first look (relaxed loads; a
 * thread channel's, not a shared one's: select.c). */
bool canal__ring_recv_idle(struct canal_chan *ch);
/* elt: NULL, or the one element a send copies, which a thread parks with
 * where it may (handoff.h; CANAL__WAIT_DONE when a receiver took it: the
 * send is done). */
int canal__ring_wait_send(struct canal_chan *ch, const void *elt,
			  uint64_t deadline);
/* take_elt: NULL, or a receive of one element copied out that may take a
 * parked sender's element before it sleeps (handoff.h; CANAL__WAIT_DONE
 * when it did). */
int canal__ring_wait_recv(struct canal_chan *ch, void *take_elt,
			  uint64_t deadline);

/* Non-blocking single operations used by select (sendrecv.c). */
int canal__try_send_one(struct canal_chan *ch, const void *elt);
/* wait_sender: on a synchronous channel, wait briefly for a sender that is
 * waiting (as canal_try_recv does); else succeed only with an element that
 * is already there (select's poll before it blocks on every case). */
int canal__try_recv_one(struct canal_chan *ch, void *elt, bool wait_sender);
/* Send or receive, every flavour (sendrecv.c): lend a slot instead of
 * copying when reserve/lend is not NULL; deadline 0 with try_only. */
int canal__send(struct canal_chan *ch, const void *elt,
		struct canal_slot *reserve, uint64_t deadline, bool try_only);
int canal__recv(struct canal_chan *ch, void *elt, struct canal_slot *lend,
		uint64_t deadline, bool try_only);

/* Synchronous channels (rendezvous.c). A receiver is plain or a select
 * (its own demand counter, see above). */
bool canal__sync_can_send(struct canal_chan *ch);  /* demand > 0, or closed */
/* Announce a receiver: a plain one takes an orphan first. */
void canal__sync_announce(struct canal_chan *ch, bool select);
/* true: retracted; false: a sender matched us, an element is coming. */
bool canal__sync_retract(struct canal_chan *ch, bool select);
void canal__sync_make_orphan(struct canal_chan *ch);
/* Give back a unit of demand taken by a sender that did not push. */
void canal__sync_give_back(struct canal_chan *ch, bool select);
/* A sender about to wait for demand counts itself as waiting (a try
 * receive then waits briefly for its element: sync_try_recv): returns the
 * token to give to canal__sync_sender_done when it stops waiting. The
 * count is a seq_cst RMW, before the sender re-checks demand. */
int canal__sync_sender_waits(struct canal_chan *ch);
void canal__sync_sender_done(struct canal_chan *ch, int token);
/* A sender is counted as waiting (seq_cst reads). On a shared channel the
 * count of a process that died waiting is dropped first (liveness.c). */
bool canal__sync_senders_waiting(struct canal_chan *ch);
/* Take one unit of demand: 0, -EAGAIN (try_only), -EPIPE, -ETIMEDOUT;
 * *select says whether the unit was a select's (then wait for the ack). */
int canal__sync_take_demand(struct canal_chan *ch, uint64_t deadline,
			    bool try_only, bool *select);
/* After publishing pos: wait until a receiver has claimed it, or the
 * channel is closed (the element then stays for the draining receivers):
 * 0; at the deadline, the element is withdrawn if no receiver has taken it
 * yet (-ETIMEDOUT: it will never be received), else 0. */
int canal__sync_wait_ack(struct canal_chan *ch, uint64_t pos,
			 uint64_t deadline);
/* Blocking receive for a select that announced itself on ch. */
int canal__sync_recv_announced(struct canal_chan *ch, void *elt,
			       uint64_t deadline, bool committed);

#endif /* CANAL_INTERNAL_H */
