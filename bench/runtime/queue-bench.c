/* SPDX-License-Identifier: MIT */
/*
 * canal-queue-bench - seed 004, appendix D, on Linux: what a queue costs
 * when it is used as a plain queue by one thread, the io_uring completion
 * queue beside user-space queues.
 *
 * Method (the seed's): a queue is filled with F packets, then M times a
 * packet is pushed and one popped, so the queue holds F (F + 1 between a
 * push and its pop) throughout; the result is the time of the M pairs
 * divided by M, in ns per push+pop (the fill and the final drain are not
 * timed). As in the seed, every queue carries the same data, the fields of
 * a completion (struct io_uring_cqe: user_data, res, flags), copied in and
 * out of the user-space queues.
 *
 * Variants (one line of the table `variants` below each):
 *   uring_nop   push: an IORING_OP_NOP carrying the value in its user_data,
 *               submitted at once (one io_uring_enter); pop: reap its CQE
 *               from the completion ring (user space, no system call).
 *               The queue lives in the CQ.
 *   uring_msg   push: an IORING_OP_MSG_RING to the ring itself carrying
 *               the value (user_data) and a second word (len -> res),
 *               IOSQE_CQE_SKIP_SUCCESS so that only the message posts a
 *               CQE; pop as uring_nop.
 *   ring        a plain array ring buffer, single-threaded, no lock and no
 *               atomics: the floor.
 *   vyukov      Dmitry Vyukov's bounded MPMC queue (a sequence number per
 *               cell, a CAS per operation), used here by one thread.
 *   mutex       the plain ring behind a pthread mutex (uncontended).
 *   canal_chan  a canal channel of capacity F + 1: canal_send, canal_recv.
 * A queue that cannot hold F + 1 packets here prints n/a for that cell and
 * says why on stderr: the io_uring CQ holds at most 65536 completions
 * (IORING_MAX_CQ_ENTRIES; the ring is asked for F + 1 with
 * IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP and the kernel's answer is
 * checked), and an io_uring that is missing or forbidden (ENOSYS, EPERM)
 * or a kernel without MSG_RING / CQE_SKIP makes the uring cells n/a too.
 *
 * Check: values are pushed in the order 0, 1, 2, ... and every pop must
 * give the next one (user_data, res and flags), and the queue must be empty
 * once the F packets left after the M pairs are drained: FIFO and exactly
 * once. A failure exits 1 with "FIFO check failed". The hidden option -X
 * corrupts one value (the push in the middle of the M pairs) so that the
 * check can be seen failing (CTest bench_queue_checker_*); with -X, a run
 * where no cell could be measured exits 77 (nothing was checked).
 *
 * Output, read by bench/harness/canal_bench/runtime.py, one line per cell:
 *   queue <variant> <fill> <ns per push+pop>
 *   queue <variant> <fill> n/a
 */
#define _GNU_SOURCE
#include <canal/channel.h>

#include "bench.h"

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Defaults: the seed's 10 000 000 operations, its fill levels 1 to 10^6. */
#define DEFAULT_PAIRS 10000000UL
static const size_t default_fills[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
/* Longest -f or -v list. */
#define MAX_LIST 64
/* 2^27 packets of 16 bytes: 2 GiB per queue, beyond any fill we plot. */
#define MAX_FILL ((size_t)1 << 27)
#define MAX_PAIRS ((size_t)1 << 40)

/* A variant's open() returns this (positive) when it cannot hold the
 * packets asked for here, or cannot run here at all (io_uring missing or
 * forbidden, an opcode the kernel lacks): the cell is n/a, not a failure. */
#define QUEUE_CANNOT_HOLD 1

/* What every queue carries: the fields of a struct io_uring_cqe. */
struct packet {
	uint64_t user_data;
	int32_t res;
	uint32_t flags;
};

/* ------------------------------------------------------------------ */
/* The FIFO / exactly-once check                                       */
/* ------------------------------------------------------------------ */

struct checker {
	const char *variant;
	size_t fill;
	uint64_t next_push;	/* value of the next push */
	uint64_t next_pop;	/* value the next pop must give */
	uint64_t corrupt_at;	/* -X: the push whose value is wrong; else UINT64_MAX */
	bool carries_res;	/* the queue carries res (uring_nop: res is the NOP's 0) */
};

/* The res field of value v: a second word that must arrive intact. */
static inline int32_t res_of(uint64_t v)
{
	return (int32_t)(v & INT32_MAX);
}

static inline struct packet checker_next(struct checker *c)
{
	uint64_t v = c->next_push++;
	struct packet p = { .user_data = v, .res = res_of(v), .flags = 0 };

	if (unlikely(v == c->corrupt_at))
		p.user_data ^= 1;
	return p;
}

static void __attribute__((noreturn, noinline))
check_failed(const struct checker *c, const struct packet *got)
{
	uint64_t want = c->next_pop;

	if (got->res < 0)
		bench_die("%s, fill %zu: pop %llu is a failed completion: %s (res %d)",
			  c->variant, c->fill, (unsigned long long)want,
			  strerror(-got->res), got->res);
	bench_die("%s, fill %zu: FIFO check failed at pop %llu: got value %llu "
		  "(res %d, flags %u), expected %llu (res %d, flags 0)",
		  c->variant, c->fill, (unsigned long long)want,
		  (unsigned long long)got->user_data, got->res, got->flags,
		  (unsigned long long)want, c->carries_res ? res_of(want) : 0);
}

static inline void checker_check(struct checker *c, const struct packet *got)
{
	uint64_t want = c->next_pop;

	if (unlikely(got->user_data != want || got->flags != 0 ||
		     got->res != (c->carries_res ? res_of(want) : 0)))
		check_failed(c, got);
	c->next_pop = want + 1;
}

static void __attribute__((noreturn, noinline))
op_failed(const struct checker *c, const char *op, int r)
{
	if (r == -EAGAIN)
		bench_die("%s, fill %zu: FIFO check failed: %s found the queue empty "
			  "after %llu pushes and %llu pops",
			  c->variant, c->fill, op, (unsigned long long)c->next_push,
			  (unsigned long long)c->next_pop);
	if (r == -ENOSPC)
		bench_die("%s, fill %zu: %s found the queue full after %llu pushes "
			  "and %llu pops", c->variant, c->fill, op,
			  (unsigned long long)c->next_push,
			  (unsigned long long)c->next_pop);
	bench_die("%s, fill %zu: %s: %s (%d)", c->variant, c->fill, op,
		  strerror(-r), r);
}

/* ------------------------------------------------------------------ */
/* ring: the plain array ring buffer (single thread, no lock)          */
/* ------------------------------------------------------------------ */

/*
 * Invariants: 0 <= tail - head <= mask + 1 (the count of packets held);
 * slots[head & mask] is the oldest packet, slots[(tail - 1) & mask] the
 * newest. head and tail only grow (size_t wraps far beyond any run).
 */
struct plain_ring {
	struct packet *slots;
	size_t mask;
	size_t head;
	size_t tail;
};

static size_t pow2_at_least(size_t n)
{
	size_t c = 1;

	while (c < n)
		c <<= 1;
	return c;
}

static int plain_ring_init(struct plain_ring *r, size_t need)
{
	size_t cap = pow2_at_least(need);

	r->slots = calloc(cap, sizeof(*r->slots)); /* zeroed: pages committed at fill */
	if (!r->slots)
		return -ENOMEM;
	r->mask = cap - 1;
	r->head = r->tail = 0;
	return 0;
}

static inline int plain_ring_push(struct plain_ring *r, const struct packet *p)
{
	if (unlikely(r->tail - r->head > r->mask))
		return -ENOSPC;
	r->slots[r->tail & r->mask] = *p;
	r->tail++;
	return 0;
}

static inline int plain_ring_pop(struct plain_ring *r, struct packet *p)
{
	if (unlikely(r->head == r->tail))
		return -EAGAIN;
	*p = r->slots[r->head & r->mask];
	r->head++;
	return 0;
}

static int ring_open(void **q, size_t need, const char **why)
{
	struct plain_ring *r = malloc(sizeof(*r));

	(void)why;
	if (!r)
		return -ENOMEM;
	int e = plain_ring_init(r, need);
	if (e) {
		free(r);
		return e;
	}
	*q = r;
	return 0;
}

static inline int ring_push(void *q, const struct packet *p)
{
	return plain_ring_push(q, p);
}

static inline int ring_pop(void *q, struct packet *p)
{
	return plain_ring_pop(q, p);
}

static void ring_close(void *q)
{
	struct plain_ring *r = q;

	free(r->slots);
	free(r);
}

/* ------------------------------------------------------------------ */
/* mutex: the plain ring behind a pthread mutex                        */
/* ------------------------------------------------------------------ */

/* The lock guards every field of ring; nothing else is shared. */
struct mutex_ring {
	pthread_mutex_t lock;
	struct plain_ring ring;
};

static int mutex_open(void **q, size_t need, const char **why)
{
	struct mutex_ring *m = malloc(sizeof(*m));

	(void)why;
	if (!m)
		return -ENOMEM;
	int e = plain_ring_init(&m->ring, need);
	if (e) {
		free(m);
		return e;
	}
	e = pthread_mutex_init(&m->lock, NULL);
	if (e) {
		free(m->ring.slots);
		free(m);
		return -e;
	}
	*q = m;
	return 0;
}

static inline int mutex_push(void *q, const struct packet *p)
{
	struct mutex_ring *m = q;

	pthread_mutex_lock(&m->lock);
	int r = plain_ring_push(&m->ring, p);
	pthread_mutex_unlock(&m->lock);
	return r;
}

static inline int mutex_pop(void *q, struct packet *p)
{
	struct mutex_ring *m = q;

	pthread_mutex_lock(&m->lock);
	int r = plain_ring_pop(&m->ring, p);
	pthread_mutex_unlock(&m->lock);
	return r;
}

static void mutex_close(void *q)
{
	struct mutex_ring *m = q;

	pthread_mutex_destroy(&m->lock);
	free(m->ring.slots);
	free(m);
}

/* ------------------------------------------------------------------ */
/* vyukov: bounded MPMC queue, a sequence number per cell              */
/* ------------------------------------------------------------------ */

/*
 * Invariants, for the cell c = cells[pos & mask] and the lap of pos:
 *   c.sequence == pos         c is free for the producer that claims pos;
 *   c.sequence == pos + 1     c holds the packet pushed at pos, for the
 *                             consumer that claims pos;
 *   c.sequence == pos + mask + 1 (the next lap's pos) once that consumer
 *                             has copied the packet out.
 * A producer claims pos by a CAS of enqueue_pos from pos to pos + 1 after
 * seeing sequence == pos, a consumer by a CAS of dequeue_pos after seeing
 * sequence == pos + 1: each position goes to exactly one producer and one
 * consumer. The CASes order nothing else (relaxed): the data is ordered by
 * the sequence alone. The producer's release store of pos + 1 pairs with
 * the consumer's acquire load (the packet is written before it is read);
 * the consumer's release store of the next lap's pos pairs with the
 * producer's acquire load (the packet is read before it is overwritten).
 * sequence - pos, as a signed difference, says which case holds: < 0 full
 * (for a producer) or empty (for a consumer), > 0 another thread got there
 * first (reload the position).
 */
struct vyukov_cell {
	_Atomic size_t sequence;
	struct packet data;
};

struct vyukov_queue {
	struct vyukov_cell *cells;
	size_t mask;
	alignas(64) _Atomic size_t enqueue_pos; /* producers' line */
	alignas(64) _Atomic size_t dequeue_pos; /* consumers' line */
};

static int vyukov_open(void **q, size_t need, const char **why)
{
	struct vyukov_queue *v = aligned_alloc(64, sizeof(*v));
	size_t cap = pow2_at_least(need < 2 ? 2 : need);

	(void)why;
	if (!v)
		return -ENOMEM;
	v->cells = malloc(cap * sizeof(*v->cells));
	if (!v->cells) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cap; i++)
		atomic_init(&v->cells[i].sequence, i);
	v->mask = cap - 1;
	atomic_init(&v->enqueue_pos, 0);
	atomic_init(&v->dequeue_pos, 0);
	*q = v;
	return 0;
}

static inline int vyukov_push(void *q, const struct packet *p)
{
	struct vyukov_queue *v = q;
	size_t pos = atomic_load_explicit(&v->enqueue_pos, memory_order_relaxed);
	struct vyukov_cell *cell;

	for (;;) {
		cell = &v->cells[pos & v->mask];
		/* Pairs with the consumer's release store in vyukov_pop. */
		size_t seq = atomic_load_explicit(&cell->sequence, memory_order_acquire);
		intptr_t diff = (intptr_t)seq - (intptr_t)pos;

		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &v->enqueue_pos, &pos, pos + 1,
				    memory_order_relaxed, memory_order_relaxed))
				break;
			/* pos now holds the position another producer left. */
		} else if (diff < 0) {
			return -ENOSPC;
		} else {
			pos = atomic_load_explicit(&v->enqueue_pos, memory_order_relaxed);
		}
	}
	cell->data = *p;
	/* Publishes data; pairs with the acquire load in vyukov_pop. */
	atomic_store_explicit(&cell->sequence, pos + 1, memory_order_release);
	return 0;
}

static inline int vyukov_pop(void *q, struct packet *p)
{
	struct vyukov_queue *v = q;
	size_t pos = atomic_load_explicit(&v->dequeue_pos, memory_order_relaxed);
	struct vyukov_cell *cell;

	for (;;) {
		cell = &v->cells[pos & v->mask];
		/* Pairs with the producer's release store in vyukov_push. */
		size_t seq = atomic_load_explicit(&cell->sequence, memory_order_acquire);
		intptr_t diff = (intptr_t)seq - (intptr_t)(pos + 1);

		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &v->dequeue_pos, &pos, pos + 1,
				    memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (diff < 0) {
			return -EAGAIN;
		} else {
			pos = atomic_load_explicit(&v->dequeue_pos, memory_order_relaxed);
		}
	}
	*p = cell->data;
	/* Frees the cell for the producer of the next lap; pairs with the
	 * acquire load in vyukov_push. */
	atomic_store_explicit(&cell->sequence, pos + v->mask + 1, memory_order_release);
	return 0;
}

static void vyukov_close(void *q)
{
	struct vyukov_queue *v = q;

	free(v->cells);
	free(v);
}

/* ------------------------------------------------------------------ */
/* canal_chan: a canal channel                                          */
/* ------------------------------------------------------------------ */

static int chan_open(void **q, size_t need, const char **why)
{
	struct canal_chan *ch = canal_chan_create(sizeof(struct packet), need, 0);

	(void)why;
	if (!ch)
		return -errno;
	*q = ch;
	return 0;
}

/* Timed path: the calls a program makes. The channel holds F + 1, so a
 * send never waits, and a recv always follows a send, so it never waits
 * either (a bug would hang here; the untimed fill and drain use the
 * non-blocking calls and report it). */
static inline int chan_send(void *q, const struct packet *p)
{
	return canal_send(q, p);
}

static inline int chan_recv(void *q, struct packet *p)
{
	return canal_recv(q, p);
}

static int chan_try_send(void *q, const struct packet *p)
{
	return canal_try_send(q, p);
}

static int chan_try_recv(void *q, struct packet *p)
{
	return canal_try_recv(q, p);
}

static void chan_close(void *q)
{
	canal_chan_destroy(q);
}

/* ------------------------------------------------------------------ */
/* uring_nop, uring_msg: the io_uring completion queue as the queue     */
/* ------------------------------------------------------------------ */

/* user_data of the MSG_RING SQE itself: its own CQE is skipped on success
 * (IOSQE_CQE_SKIP_SUCCESS), so a CQE with this tag is a failed push. Pushed
 * values stay far below it. */
#define MSG_RING_SQE_TAG UINT64_MAX

static int uring_open(void **q, size_t need, const char **why, bool msg)
{
	struct io_uring *ring = malloc(sizeof(*ring));
	struct io_uring_params p;
	static char reason[160];

	if (!ring)
		return -ENOMEM;
	/* One SQE at a time: each push is submitted at once. The CQ is asked
	 * for every packet the queue must hold; CLAMP makes the kernel cut an
	 * oversized request to its limit instead of failing, and the
	 * cq_entries it writes back say what it gave. */
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
	p.cq_entries = need > UINT32_MAX ? UINT32_MAX : (uint32_t)need;
	int r = io_uring_queue_init_params(1, ring, &p);
	if (r == -ENOSYS || r == -EPERM) {
		free(ring);
		snprintf(reason, sizeof(reason), "io_uring unavailable here: %s",
			 strerror(-r));
		*why = reason;
		return QUEUE_CANNOT_HOLD;
	}
	if (r < 0) {
		free(ring);
		return r;
	}
	if (p.cq_entries < need) {
		snprintf(reason, sizeof(reason),
			 "the completion queue holds at most %u completions here "
			 "(asked for %zu with IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP)",
			 p.cq_entries, need);
		*why = reason;
		io_uring_queue_exit(ring);
		free(ring);
		return QUEUE_CANNOT_HOLD;
	}
	if (msg) {
		struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
		bool has_msg = probe && io_uring_opcode_supported(probe, IORING_OP_MSG_RING);

		if (probe)
			io_uring_free_probe(probe);
		if (!has_msg || !(p.features & IORING_FEAT_CQE_SKIP)) {
			*why = !has_msg ? "the kernel has no IORING_OP_MSG_RING (5.18)"
					: "the kernel has no IOSQE_CQE_SKIP_SUCCESS (5.17)";
			io_uring_queue_exit(ring);
			free(ring);
			return QUEUE_CANNOT_HOLD;
		}
	}
	*q = ring;
	return 0;
}

static int uring_nop_open(void **q, size_t need, const char **why)
{
	return uring_open(q, need, why, false);
}

static int uring_msg_open(void **q, size_t need, const char **why)
{
	return uring_open(q, need, why, true);
}

static inline int uring_submit_one(struct io_uring *ring)
{
	int r = io_uring_submit(ring);

	if (likely(r == 1))
		return 0;
	return r < 0 ? r : -EIO;
}

static inline int uring_nop_push(void *q, const struct packet *p)
{
	struct io_uring *ring = q;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (unlikely(!sqe))
		return -EBUSY;
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, p->user_data);
	return uring_submit_one(ring);
}

static inline int uring_msg_push(void *q, const struct packet *p)
{
	struct io_uring *ring = q;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (unlikely(!sqe))
		return -EBUSY;
	/* The message's CQE: user_data = p->user_data, res = len. */
	io_uring_prep_msg_ring(sqe, ring->ring_fd, (unsigned)p->res, p->user_data, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	io_uring_sqe_set_data64(sqe, MSG_RING_SQE_TAG);
	return uring_submit_one(ring);
}

static inline int uring_pop(void *q, struct packet *p)
{
	struct io_uring *ring = q;
	struct io_uring_cqe *cqe;

	if (io_uring_peek_cqe(ring, &cqe)) {
		/* Empty. Completions the CQ had no room for would wait in the
		 * kernel's overflow list: the CQ is sized so that this never
		 * happens, and a run where it did is no measure of the CQ. */
		if (unlikely(IO_URING_READ_ONCE(*ring->cq.koverflow) ||
			     (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_CQ_OVERFLOW)))
			return -EOVERFLOW;
		return -EAGAIN;
	}
	p->user_data = cqe->user_data;
	p->res = cqe->res;
	p->flags = cqe->flags;
	io_uring_cqe_seen(ring, cqe);
	if (unlikely(p->user_data == MSG_RING_SQE_TAG && p->res < 0))
		return p->res;
	return 0;
}

static void uring_close(void *q)
{
	io_uring_queue_exit(q);
	free(q);
}

/* ------------------------------------------------------------------ */
/* The measurement                                                      */
/* ------------------------------------------------------------------ */

typedef int (*push_fn)(void *q, const struct packet *p);
typedef int (*pop_fn)(void *q, struct packet *p);

/*
 * The M timed pairs. Always inlined into one function per variant (below)
 * with constant push and pop, so that the compiler calls them directly
 * (and inlines them): the loop costs the same for every variant, and the
 * floor is the ring's own cost, not an indirect call's.
 */
static inline __attribute__((always_inline)) uint64_t
timed_pairs(void *q, push_fn push, pop_fn pop, struct checker *c, uint64_t pairs)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < pairs; i++) {
		struct packet in = checker_next(c), out;
		int r = push(q, &in);

		if (unlikely(r))
			op_failed(c, "push", r);
		r = pop(q, &out);
		if (unlikely(r))
			op_failed(c, "pop", r);
		checker_check(c, &out);
	}
	return bench_now_ns() - t0;
}

#define DEFINE_TIMED(name, push, pop)                                         \
	static uint64_t name##_timed(void *q, struct checker *c, uint64_t n)  \
	{                                                                     \
		return timed_pairs(q, push, pop, c, n);                       \
	}

DEFINE_TIMED(uring_nop, uring_nop_push, uring_pop)
DEFINE_TIMED(uring_msg, uring_msg_push, uring_pop)
DEFINE_TIMED(ring, ring_push, ring_pop)
DEFINE_TIMED(vyukov, vyukov_push, vyukov_pop)
DEFINE_TIMED(mutex, mutex_push, mutex_pop)
DEFINE_TIMED(canal_chan, chan_send, chan_recv)

struct variant {
	const char *name;
	/* Make a queue that holds `need` packets: 0, a negative errno, or
	 * QUEUE_CANNOT_HOLD with *why set (the cell is n/a). */
	int (*open)(void **q, size_t need, const char **why);
	/* Untimed fill and drain: never block (-ENOSPC full, -EAGAIN empty). */
	push_fn push;
	pop_fn pop;
	uint64_t (*timed)(void *q, struct checker *c, uint64_t pairs);
	void (*close)(void *q);
	bool carries_res;
};

static const struct variant variants[] = {
	{ "uring_nop", uring_nop_open, uring_nop_push, uring_pop, uring_nop_timed, uring_close, false },
	{ "uring_msg", uring_msg_open, uring_msg_push, uring_pop, uring_msg_timed, uring_close, true },
	{ "ring", ring_open, ring_push, ring_pop, ring_timed, ring_close, true },
	{ "vyukov", vyukov_open, vyukov_push, vyukov_pop, vyukov_timed, vyukov_close, true },
	{ "mutex", mutex_open, mutex_push, mutex_pop, mutex_timed, mutex_close, true },
	{ "canal_chan", chan_open, chan_try_send, chan_try_recv, canal_chan_timed, chan_close, true },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/*
 * One cell: fill, time the pairs, drain, check the queue is empty.
 * Returns true with *ns_per_pair set, or false when the cell is n/a; dies
 * on any failure.
 */
static bool run_cell(const struct variant *v, size_t fill, uint64_t pairs,
		     bool corrupt, double *ns_per_pair)
{
	struct checker c = {
		.variant = v->name, .fill = fill,
		.corrupt_at = corrupt ? fill + pairs / 2 : UINT64_MAX,
		.carries_res = v->carries_res,
	};
	const char *why = "";
	struct packet p;
	void *q = NULL;
	int r = v->open(&q, fill + 1, &why);

	if (r == QUEUE_CANNOT_HOLD) {
		bench_warn("%s, fill %zu: n/a: %s", v->name, fill, why);
		return false;
	}
	if (r)
		bench_die("%s, fill %zu: cannot make the queue: %s (%d)", v->name,
			  fill, strerror(-r), r);
	for (size_t i = 0; i < fill; i++) {
		p = checker_next(&c);
		r = v->push(q, &p);
		if (r)
			op_failed(&c, "push (fill)", r);
	}
	uint64_t ns = v->timed(q, &c, pairs);
	for (size_t i = 0; i < fill; i++) {
		r = v->pop(q, &p);
		if (r)
			op_failed(&c, "pop (drain)", r);
		checker_check(&c, &p);
	}
	r = v->pop(q, &p);
	if (r == 0)
		bench_die("%s, fill %zu: FIFO check failed: value %llu still in the "
			  "queue after all %llu were popped", v->name, fill,
			  (unsigned long long)p.user_data,
			  (unsigned long long)c.next_pop);
	if (r != -EAGAIN)
		op_failed(&c, "pop (empty check)", r);
	v->close(q);
	*ns_per_pair = (double)ns / (double)pairs;
	return true;
}

/* ------------------------------------------------------------------ */
/* Options                                                              */
/* ------------------------------------------------------------------ */

static void usage(FILE *f, int status)
{
	fprintf(f,
		"usage: canal-queue-bench [-m pairs] [-f fills] [-v variants]\n"
		"  Seed 004 appendix D: fill a queue with F packets, then time M\n"
		"  push+pop pairs; prints 'queue <variant> <fill> <ns per push+pop>'\n"
		"  or 'queue <variant> <fill> n/a' (the queue cannot hold F + 1 here).\n"
		"  -m pairs     M (default %lu)\n"
		"  -f fills     comma-separated fill levels (default 1,10,100,1000,\n"
		"               10000,100000,1000000)\n"
		"  -v variants  comma-separated, from: uring_nop uring_msg ring vyukov\n"
		"               mutex canal_chan (default: all)\n"
		"  -h           this help\n"
		"  Counts take a K or M suffix, powers of 2 (1M = 1048576).\n",
		DEFAULT_PAIRS);
	exit(status);
}

static size_t parse_list(char *list, const char *what, size_t max_items,
			 size_t (*item)(const char *s, const char *what), size_t *out)
{
	size_t n = 0;
	char *save = NULL;

	for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		if (n == max_items)
			bench_die("too many %ss (at most %zu)", what, max_items);
		out[n++] = item(s, what);
	}
	if (n == 0)
		bench_die("empty list of %ss", what);
	return n;
}

static size_t parse_fill(const char *s, const char *what)
{
	size_t v;

	if (bench_parse_size(s, 0, MAX_FILL, &v))
		bench_die("bad %s '%s' (0..%zu)", what, s, MAX_FILL);
	return v;
}

static size_t parse_variant(const char *s, const char *what)
{
	for (size_t i = 0; i < NVARIANTS; i++)
		if (strcmp(s, variants[i].name) == 0)
			return i;
	bench_die("unknown %s '%s' (uring_nop, uring_msg, ring, vyukov, mutex, "
		  "canal_chan)", what, s);
}

int main(int argc, char **argv)
{
	size_t pairs = DEFAULT_PAIRS;
	size_t fills[MAX_LIST], nfills = sizeof(default_fills) / sizeof(default_fills[0]);
	size_t chosen[MAX_LIST], nchosen = NVARIANTS;
	bool corrupt = false;
	int opt;

	memcpy(fills, default_fills, sizeof(default_fills));
	for (size_t i = 0; i < NVARIANTS; i++)
		chosen[i] = i;
	while ((opt = getopt(argc, argv, "m:f:v:hX")) != -1) {
		switch (opt) {
		case 'm':
			if (bench_parse_size(optarg, 1, MAX_PAIRS, &pairs))
				bench_die("bad pair count '%s' (1..%zu)", optarg, MAX_PAIRS);
			break;
		case 'f':
			nfills = parse_list(optarg, "fill level", MAX_LIST, parse_fill, fills);
			break;
		case 'v':
			nchosen = parse_list(optarg, "variant", MAX_LIST, parse_variant, chosen);
			break;
		case 'X':
			corrupt = true;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc)
		usage(stderr, 2);

	size_t measured = 0;
	for (size_t i = 0; i < nchosen; i++) {
		const struct variant *v = &variants[chosen[i]];

		for (size_t j = 0; j < nfills; j++) {
			double ns;

			if (run_cell(v, fills[j], pairs, corrupt, &ns)) {
				printf("queue %s %zu %.2f\n", v->name, fills[j], ns);
				measured++;
			} else {
				printf("queue %s %zu n/a\n", v->name, fills[j]);
			}
			fflush(stdout);
		}
	}
	if (corrupt && measured == 0)
		return bench_skipped("-X: no cell could be measured, nothing was checked");
	return 0;
}
