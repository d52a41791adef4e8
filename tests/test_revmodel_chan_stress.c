/* SPDX-License-Identifier: MIT */
/*
 * test_revmodel_chan_stress.c - channels under randomized mixed workloads,
 * checked against the invariants <canal/channel.h> promises.
 *
 * What test_stress.c does not: there each thread keeps one way of sending
 * or receiving on one channel. Here every actor picks each operation at
 * random from the whole API, on 1-4 channels of random capacity (0, 1, 2,
 * 7, 64) and element size (16 or 24 bytes) at once:
 *   send: plain, try, timed (0 and tiny timeouts, deadlines in the past,
 *         at 0 and near), batch and try batch of random length (0..9),
 *         reserve and try reserve then commit or abort (and a stale copy
 *         of the slot refused), select of 1-4 cases mixing send and
 *         receive cases on any of the channels (duplicates and NULL
 *         channels included), biased or not, with a timeout of -1, 0 or
 *         a few microseconds;
 *   receive: the same forms, with borrow and try borrow then release;
 *   close: at random moments, by the main thread or by any actor.
 * Actors are plain threads, tasks on one or two loops (io_uring or epoll,
 * sometimes with compacted stacks, sometimes detached for a while), and,
 * on CANAL_SHARED channels, threads and tasks of a forked process.
 *
 * The run is cut into epochs (a new random configuration each, a few
 * tens to a few hundreds of milliseconds). Each element carries (producer,
 * channel, sequence number, check words). Invariants:
 *  - exactly once: every element whose send reported success (0, or
 *    within a batch's count, or a select's completed send case, or a
 *    committed reserve) is received exactly once, even when the channel
 *    was closed meanwhile (receivers drain after close);
 *  - a failed send (-EAGAIN, -ETIMEDOUT, -EPIPE, an aborted reserve, the
 *    send cases a select did not complete) never delivers its element;
 *  - per-producer FIFO on each channel, as each receiver sees it (an
 *    actor's sends are sequential, so their claims are in order);
 *  - an element comes out of the channel it was sent on, intact;
 *  - no send succeeds on a channel seen closed before it started
 *    (a commit of an earlier reserve excepted); a receive that returns
 *    -EPIPE finds the channel closed; exactly one close returns 0; the
 *    channels are empty once every receiver saw -EPIPE;
 *  - the results are the documented ones (a timed call never -EAGAIN, a
 *    try call never -ETIMEDOUT, a select -EAGAIN only with timeout 0);
 *  - no lost wake-up: every 10-60 ms, and when the run stops, the actors
 *    pause (those waiting for ever stay where they are) and every wait
 *    that its channel allows to go on must go on: a receiver on a channel
 *    that holds elements, a sender on one with room, a sender and another
 *    actor's receiver on a synchronous channel, any waiter on a closed
 *    channel (quiet_check); then, before the final close, a sender still
 *    stuck while receivers keep draining every channel (settle). Nothing
 *    moving for 10 s (40 s under sanitizers) there fails;
 *  - no hang: an alarm per epoch.
 * Between the checks the main thread nudges (a try send and a try receive
 * every millisecond), so that actors that all wait for ever, one on an
 * empty channel and another on a full one, do not idle for the rest of
 * the epoch.
 *
 * Reproduce: the seed is printed (CANAL_CHAN_STRESS_SEED=n sets it);
 * CANAL_CHAN_STRESS_EPOCH=e runs only epoch e's configuration, again and
 * again; CANAL_CHAN_STRESS_SECONDS=s sets the length (default 3 s, 30 s
 * with CANAL_STRESS=1; the epoch under way when it ends is finished);
 * CANAL_CHAN_STRESS_VERBOSE=1 prints each epoch. The interleavings are the scheduler's, so an
 * epoch's failure may need several runs of its configuration to recur.
 */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_CH 4
#define MAX_ACTORS 10
#define MAX_SEQ 8192
#define MAX_BATCH 9
#define MAX_CASES 4
#define ESZ_MAX 24

struct elt {
	uint32_t actor, chan, seq, check;
	uint64_t extra; /* in 24-byte channels only */
};

enum { ST_NONE, ST_PENDING, ST_SENT, ST_FAILED };
enum { K_THREAD, K_TASK, K_CHILD_THREAD, K_CHILD_TASK, K_NUDGER };

/* Operations, for the statistics and the hang report. */
enum {
	OP_IDLE,
	OP_SEND, OP_TRY_SEND, OP_SEND_TIMEOUT, OP_SEND_DEADLINE,
	OP_SEND_BATCH, OP_TRY_SEND_BATCH, OP_RESERVE, OP_TRY_RESERVE,
	OP_SELECT_MIXED,
	OP_RECV, OP_TRY_RECV, OP_RECV_TIMEOUT, OP_RECV_DEADLINE,
	OP_RECV_BATCH, OP_TRY_RECV_BATCH, OP_BORROW, OP_TRY_BORROW,
	OP_SELECT_RECV,
	OP_CLOSE, OP_DETACH,
	OP_N
};
static const char *const op_names[OP_N] = {
	"idle", "send", "try_send", "send_timeout", "send_deadline",
	"send_batch", "try_send_batch", "reserve", "try_reserve",
	"select_mixed", "recv", "try_recv", "recv_timeout", "recv_deadline",
	"recv_batch", "try_recv_batch", "borrow", "try_borrow", "select_recv",
	"close", "detach",
};

struct actor_pub {
	int kind;
	unsigned send_pct;     /* chance of a sending operation, % */
	_Atomic int op, ch;    /* the operation under way (hang report) */
	_Atomic int sending;   /* still in its sending phase */
	_Atomic int draining;  /* draining with bounded operations */
	char what[96];	       /* a select's cases (hang report) */
	/* The operation under way waits for ever to receive on these
	 * channels (bits), for the lost wake-up check (quiet_check). */
	_Atomic uint32_t recv_wait, send_wait;
};

/* Everything the actors and the checks share: in a shared mapping, so that
 * a forked process's actors write it too. */
struct world {
	uint64_t seed, eseed;
	long epoch;
	char desc[512];
	int nch, nactors, shared, loops, compact, child, epoll;
	size_t cap[MAX_CH];
	size_t esz[MAX_CH];
	unsigned forever_pct, close_per_mille, detach_pct;
	struct canal_chan *ch[MAX_CH];
	struct actor_pub act[MAX_ACTORS];
	_Atomic int stopping, closed_all, hold;
	_Atomic uint64_t progress;
	_Atomic uint32_t close_ok[MAX_CH];
	_Atomic uint64_t ops[OP_N], ok_ops[OP_N];
	_Atomic uint64_t elts_sent, elts_recv, elts_failed, stalls_resolved;
	_Atomic uint64_t quiet_checks, quiet_waits;
	uint32_t next_seq[MAX_ACTORS][MAX_CH];
	_Atomic uint8_t status[MAX_ACTORS][MAX_CH][MAX_SEQ];
	_Atomic uint8_t recvd[MAX_ACTORS][MAX_CH][MAX_SEQ];
};

static struct world *W;

static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "test_revmodel_chan_stress FAILED: seed %llu epoch %ld"
			" (CANAL_CHAN_STRESS_SEED=%llu CANAL_CHAN_STRESS_EPOCH=%ld)\n"
			"  config: %s\n  ",
		(unsigned long long)W->seed, W->epoch,
		(unsigned long long)W->seed, W->epoch, W->desc);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (int i = 0; i < W->nactors; i++)
		fprintf(stderr, "  actor %d kind %d send %u%%: op %s ch %d "
				"sending %d draining %d [%s]\n",
			i, W->act[i].kind, W->act[i].send_pct,
			op_names[atomic_load(&W->act[i].op)],
			atomic_load(&W->act[i].ch), atomic_load(&W->act[i].sending),
			atomic_load(&W->act[i].draining), W->act[i].what);
	for (int c = 0; c < W->nch; c++)
		fprintf(stderr, "  ch %d cap %zu: len %zu closed %d\n", c,
			W->cap[c], canal_chan_len(W->ch[c]),
			canal_chan_is_closed(W->ch[c]));
	fflush(stderr);
	abort();
}

#define EXPECT(cond, ...)                                                    \
	do {                                                                 \
		if (!(cond))                                                 \
			fail(__VA_ARGS__);                                   \
	} while (0)

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)((check_rand64(&r->s) >> 16) % n) : 0;
}

static bool chance(struct rng *r, unsigned pct)
{
	return rnd(r, 100) < pct;
}

static uint32_t elt_check(uint32_t a, uint32_t c, uint32_t s)
{
	return (a * 2654435761u) ^ (c * 40503u) ^ (s * 0x9e3779b9u) ^
	       0xa5a5a5a5u;
}

static uint64_t elt_extra(uint32_t a, uint32_t c, uint32_t s)
{
	return mix64(((uint64_t)a << 40) | ((uint64_t)c << 32) | s);
}

/* ------------------------------------------------------------------ */
/* One actor                                                           */
/* ------------------------------------------------------------------ */

struct actor {
	int id;
	struct rng r;
	struct actor_pub *pub;
	uint32_t last[MAX_ACTORS][MAX_CH]; /* FIFO: last seq seen per sender */
	bool drained[MAX_CH];		   /* saw -EPIPE */
	bool exhausted;			   /* out of sequence numbers */
	bool detached;
};

static void note_op(struct actor *a, int op, int c)
{
	atomic_store_explicit(&a->pub->op, op, memory_order_relaxed);
	atomic_store_explicit(&a->pub->ch, c, memory_order_relaxed);
	uint32_t wait = 0, swait = 0;
	if (op == OP_RECV || op == OP_RECV_BATCH || op == OP_BORROW)
		wait = 1u << c;
	if (op == OP_SEND || op == OP_SEND_BATCH || op == OP_RESERVE)
		swait = 1u << c;
	atomic_store_explicit(&a->pub->recv_wait, wait, memory_order_relaxed);
	atomic_store_explicit(&a->pub->send_wait, swait, memory_order_relaxed);
	atomic_fetch_add_explicit(&W->ops[op], 1, memory_order_relaxed);
}

static void op_ok(int op)
{
	atomic_fetch_add_explicit(&W->ok_ops[op], 1, memory_order_relaxed);
}

/* A new element of actor a for channel c, written at dst (esz bytes). */
static uint32_t new_elt(struct actor *a, int c, void *dst)
{
	uint32_t seq = W->next_seq[a->id][c]++;
	struct elt e = { (uint32_t)a->id, (uint32_t)c, seq,
			 elt_check((uint32_t)a->id, (uint32_t)c, seq),
			 elt_extra((uint32_t)a->id, (uint32_t)c, seq) };
	atomic_store(&W->status[a->id][c][seq], ST_PENDING);
	memcpy(dst, &e, W->esz[c]);
	return seq;
}

static void resolve(struct actor *a, int c, uint32_t seq, bool sent)
{
	uint8_t prev = atomic_exchange(&W->status[a->id][c][seq],
				       sent ? ST_SENT : ST_FAILED);
	EXPECT(prev == ST_PENDING, "actor %d ch %d seq %u resolved twice",
	       a->id, c, seq);
	if (sent) {
		atomic_fetch_add_explicit(&W->elts_sent, 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&W->progress, 1,
					  memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&W->elts_failed, 1,
					  memory_order_relaxed);
		EXPECT(atomic_load(&W->recvd[a->id][c][seq]) == 0,
		       "actor %d ch %d seq %u: its send failed, yet it was "
		       "received", a->id, c, seq);
	}
}

/* An element received by a from channel c (raw: esz bytes). */
static void got(struct actor *a, int c, const void *raw, const char *how)
{
	struct elt e = { 0 };
	memcpy(&e, raw, W->esz[c]);
	EXPECT(e.actor < (uint32_t)W->nactors && e.chan < (uint32_t)W->nch &&
		       e.seq < MAX_SEQ &&
		       e.check == elt_check(e.actor, e.chan, e.seq) &&
		       (W->esz[c] < 24 ||
			e.extra == elt_extra(e.actor, e.chan, e.seq)),
	       "actor %d %s ch %d: garbage element (%u, %u, %u, %#x)", a->id,
	       how, c, e.actor, e.chan, e.seq, e.check);
	EXPECT(e.chan == (uint32_t)c,
	       "actor %d %s ch %d: element of channel %u (actor %u seq %u)",
	       a->id, how, c, e.chan, e.actor, e.seq);
	uint32_t *last = &a->last[e.actor][c];
	EXPECT(*last == UINT32_MAX || e.seq > *last,
	       "actor %d %s ch %d: FIFO broken for sender %u: seq %u after %u",
	       a->id, how, c, e.actor, e.seq, *last);
	*last = e.seq;
	uint8_t st = atomic_load(&W->status[e.actor][c][e.seq]);
	EXPECT(st == ST_PENDING || st == ST_SENT,
	       "actor %d %s ch %d: element (sender %u seq %u) whose send %s",
	       a->id, how, c, e.actor, e.seq,
	       st == ST_FAILED ? "failed" : "was never made");
	uint8_t n = atomic_fetch_add(&W->recvd[e.actor][c][e.seq], 1);
	EXPECT(n == 0, "actor %d %s ch %d: element (sender %u seq %u) "
		       "received twice", a->id, how, c, e.actor, e.seq);
	atomic_fetch_add_explicit(&W->elts_recv, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&W->progress, 1, memory_order_relaxed);
}

static void got_epipe(struct actor *a, int c, const char *how)
{
	EXPECT(canal_chan_is_closed(W->ch[c]) == 1,
	       "actor %d %s ch %d: -EPIPE on an open channel", a->id, how, c);
	a->drained[c] = true;
}

/* Timeouts: 0, or a few microseconds, now and then 2 ms. */
static int64_t pick_timeout(struct actor *a)
{
	static const int64_t t[] = { 0, 0, 1000, 5000, 20000, 100000, 2000000 };
	return t[rnd(&a->r, sizeof(t) / sizeof(t[0]))];
}

static uint64_t pick_deadline(struct actor *a)
{
	switch (rnd(&a->r, 4)) {
	case 0:
		return 0;
	case 1:
		return canal_now_ns() - 1;
	default:
		return canal_now_ns() + (uint64_t)pick_timeout(a);
	}
}

/* A channel with sequence numbers left for one more operation. */
static int pick_send_ch(struct actor *a)
{
	int c = (int)rnd(&a->r, (uint32_t)W->nch);
	/* Mostly an open one: sends on a closed channel fail at once. */
	bool open_only = chance(&a->r, 90);
	for (int k = 0; k < 2 * W->nch; k++) {
		int d = (c + k) % W->nch;
		if (k < W->nch && open_only && canal_chan_is_closed(W->ch[d]))
			continue;
		if (W->next_seq[a->id][d] + MAX_BATCH + MAX_CASES <= MAX_SEQ)
			return d;
	}
	a->exhausted = true;
	return -1;
}

/* Results allowed by the header, per kind of call. */
static void expect_forever(struct actor *a, const char *how, long r)
{
	EXPECT(r == 0 || r == -EPIPE, "actor %d %s: unexpected %ld", a->id,
	       how, r);
}

static void expect_try(struct actor *a, const char *how, long r)
{
	EXPECT(r == 0 || r == -EAGAIN || r == -EPIPE,
	       "actor %d %s: unexpected %ld", a->id, how, r);
}

static void expect_timed(struct actor *a, const char *how, long r)
{
	EXPECT(r == 0 || r == -ETIMEDOUT || r == -EPIPE,
	       "actor %d %s: unexpected %ld", a->id, how, r);
}

/* A send reported success on a channel that was closed before it began. */
static void check_not_after_close(struct actor *a, const char *how, int c,
				  bool closed_before, long r)
{
	EXPECT(!(closed_before && r > 0) && !(closed_before && r == 0),
	       "actor %d %s ch %d: succeeded (%ld) on a channel closed "
	       "before the call", a->id, how, c, r);
}

static void do_send_single(struct actor *a, int op, int c)
{
	struct canal_chan *ch = W->ch[c];
	char buf[ESZ_MAX];
	uint32_t seq = new_elt(a, c, buf);
	bool closed = canal_chan_is_closed(ch);
	int r;
	note_op(a, op, c);
	switch (op) {
	case OP_SEND:
		r = canal_send(ch, buf);
		expect_forever(a, "send", r);
		break;
	case OP_TRY_SEND:
		r = canal_try_send(ch, buf);
		expect_try(a, "try_send", r);
		break;
	case OP_SEND_TIMEOUT:
		r = canal_send_timeout(ch, buf, pick_timeout(a));
		expect_timed(a, "send_timeout", r);
		break;
	default:
		r = canal_send_deadline(ch, buf, pick_deadline(a));
		expect_timed(a, "send_deadline", r);
		break;
	}
	check_not_after_close(a, op_names[op], c, closed, r);
	if (r == 0)
		op_ok(op);
	resolve(a, c, seq, r == 0);
}

static void do_send_batch(struct actor *a, int op, int c)
{
	struct canal_chan *ch = W->ch[c];
	char buf[MAX_BATCH * ESZ_MAX];
	uint32_t seqs[MAX_BATCH];
	size_t n = rnd(&a->r, MAX_BATCH + 1);
	for (size_t i = 0; i < n; i++)
		seqs[i] = new_elt(a, c, buf + i * W->esz[c]);
	bool closed = canal_chan_is_closed(ch);
	note_op(a, op, c);
	ssize_t r = op == OP_SEND_BATCH ? canal_send_batch(ch, buf, n)
					: canal_try_send_batch(ch, buf, n);
	if (n == 0)
		EXPECT(r == 0, "actor %d %s of 0: %zd", a->id, op_names[op], r);
	else if (op == OP_SEND_BATCH)
		EXPECT(r == -EPIPE || (r >= 1 && (size_t)r <= n),
		       "actor %d send_batch of %zu: %zd", a->id, n, r);
	else
		EXPECT(r == -EPIPE || r == -EAGAIN || (r >= 1 && (size_t)r <= n),
		       "actor %d try_send_batch of %zu: %zd", a->id, n, r);
	/* A blocking batch sends all n unless the channel was closed. */
	if (op == OP_SEND_BATCH && r > 0 && (size_t)r < n)
		EXPECT(canal_chan_is_closed(ch), "actor %d send_batch of %zu "
		       "sent %zd on an open channel", a->id, n, r);
	if (n)
		check_not_after_close(a, op_names[op], c, closed, r);
	size_t sent = r > 0 ? (size_t)r : 0;
	if (sent)
		op_ok(op);
	for (size_t i = 0; i < n; i++)
		resolve(a, c, seqs[i], i < sent);
}

static void do_reserve(struct actor *a, int op, int c)
{
	struct canal_chan *ch = W->ch[c];
	struct canal_slot s;
	bool closed = canal_chan_is_closed(ch);
	note_op(a, op, c);
	int r = op == OP_RESERVE ? canal_send_reserve(ch, &s)
				 : canal_try_send_reserve(ch, &s);
	if (op == OP_RESERVE)
		expect_forever(a, "reserve", r);
	else
		expect_try(a, "try_reserve", r);
	check_not_after_close(a, op_names[op], c, closed, r);
	if (r)
		return;
	op_ok(op);
	char buf[ESZ_MAX];
	uint32_t seq = new_elt(a, c, buf);
	memcpy(s.data, buf, W->esz[c]);
	if (chance(&a->r, 10))
		canal_yield(); /* hold the slot a little */
	struct canal_slot stale = s;
	bool commit = !chance(&a->r, 25);
	/* A commit on a synchronous channel waits for ever for a receiver
	 * to take the element. */
	if (commit && W->cap[c] == 0)
		atomic_store(&a->pub->send_wait, 1u << c);
	r = commit ? canal_send_commit(ch, &s) : canal_send_abort(ch, &s);
	EXPECT(r == 0, "actor %d %s ch %d: %d", a->id,
	       commit ? "commit" : "abort", c, r);
	resolve(a, c, seq, commit);
	if (chance(&a->r, 10)) {
		/* A stale copy of a slot already committed or aborted. */
		r = chance(&a->r, 50) ? canal_send_commit(ch, &stale)
				      : canal_send_abort(ch, &stale);
		EXPECT(r == -EINVAL, "actor %d stale slot ch %d: %d", a->id, c,
		       r);
	}
}

/* Receive-side operations that wait for ever are allowed (forever) in the
 * first phase and after the final close; in between, receivers drain with
 * bounded ones only, so that none waits on an empty channel while a
 * sender waits for room on another. */
static int pick_recv_ch(struct actor *a)
{
	int c = (int)rnd(&a->r, (uint32_t)W->nch);
	for (int k = 0; k < W->nch; k++) {
		int d = (c + k) % W->nch;
		if (!a->drained[d])
			return d;
	}
	return -1;
}

static void do_recv_single(struct actor *a, int op, int c)
{
	struct canal_chan *ch = W->ch[c];
	char buf[ESZ_MAX];
	int r;
	note_op(a, op, c);
	switch (op) {
	case OP_RECV:
		r = canal_recv(ch, buf);
		expect_forever(a, "recv", r);
		break;
	case OP_TRY_RECV:
		r = canal_try_recv(ch, buf);
		expect_try(a, "try_recv", r);
		break;
	case OP_RECV_TIMEOUT:
		r = canal_recv_timeout(ch, buf, pick_timeout(a));
		expect_timed(a, "recv_timeout", r);
		break;
	default:
		r = canal_recv_deadline(ch, buf, pick_deadline(a));
		expect_timed(a, "recv_deadline", r);
		break;
	}
	if (r == 0) {
		op_ok(op);
		got(a, c, buf, op_names[op]);
	} else if (r == -EPIPE) {
		got_epipe(a, c, op_names[op]);
	}
}

static void do_recv_batch(struct actor *a, int op, int c)
{
	struct canal_chan *ch = W->ch[c];
	char buf[MAX_BATCH * ESZ_MAX];
	size_t max = rnd(&a->r, MAX_BATCH + 1);
	note_op(a, op, c);
	ssize_t r = op == OP_RECV_BATCH ? canal_recv_batch(ch, buf, max)
					: canal_try_recv_batch(ch, buf, max);
	if (max == 0) {
		EXPECT(r == 0, "actor %d %s max 0: %zd", a->id, op_names[op], r);
		return;
	}
	EXPECT(r == -EPIPE || (op == OP_TRY_RECV_BATCH && r == -EAGAIN) ||
		       (r >= 1 && (size_t)r <= max),
	       "actor %d %s max %zu: %zd", a->id, op_names[op], max, r);
	if (r == -EPIPE)
		got_epipe(a, c, op_names[op]);
	if (r > 0)
		op_ok(op);
	for (ssize_t i = 0; i < r; i++)
		got(a, c, buf + (size_t)i * W->esz[c], op_names[op]);
}

static void do_borrow(struct actor *a, int op, int c)
{
	struct canal_chan *ch = W->ch[c];
	struct canal_slot s;
	note_op(a, op, c);
	int r = op == OP_BORROW ? canal_recv_borrow(ch, &s)
				: canal_try_recv_borrow(ch, &s);
	if (op == OP_BORROW)
		expect_forever(a, "borrow", r);
	else
		expect_try(a, "try_borrow", r);
	if (r == -EPIPE)
		got_epipe(a, c, op_names[op]);
	if (r)
		return;
	op_ok(op);
	char buf[ESZ_MAX];
	memcpy(buf, s.data, W->esz[c]);
	if (chance(&a->r, 10))
		canal_yield(); /* hold the slot a little */
	struct canal_slot stale = s;
	r = canal_recv_release(ch, &s);
	EXPECT(r == 0, "actor %d release ch %d: %d", a->id, c, r);
	got(a, c, buf, op_names[op]);
	if (chance(&a->r, 10)) {
		r = canal_recv_release(ch, &stale);
		EXPECT(r == -EINVAL, "actor %d stale release ch %d: %d", a->id,
		       c, r);
	}
}

/* A select of 1-4 cases: send cases (with_send) and receive cases on any
 * channel, now and then a NULL one. */
static void do_select(struct actor *a, bool with_send, bool forever_ok)
{
	struct canal_case cases[MAX_CASES];
	char bufs[MAX_CASES][ESZ_MAX];
	uint32_t seqs[MAX_CASES];
	bool closed[MAX_CASES];
	size_t n = 1 + rnd(&a->r, MAX_CASES);
	size_t live = 0;
	for (size_t i = 0; i < n; i++) {
		struct canal_case *k = &cases[i];
		k->result = 12345;
		k->elt = bufs[i];
		bool send = with_send && chance(&a->r, 60);
		int c = send ? pick_send_ch(a) : pick_recv_ch(a);
		if (c < 0 && !send)
			c = (int)rnd(&a->r, (uint32_t)W->nch);
		if (c < 0 || chance(&a->r, 8)) {
			k->ch = NULL;
			k->op = send ? CANAL_OP_SEND : CANAL_OP_RECV;
			continue;
		}
		k->ch = W->ch[c];
		k->op = send ? CANAL_OP_SEND : CANAL_OP_RECV;
		closed[i] = canal_chan_is_closed(k->ch);
		if (send)
			seqs[i] = new_elt(a, c, bufs[i]);
		live++;
	}
	int64_t timeout;
	unsigned t = rnd(&a->r, 100);
	if (forever_ok && live && t < W->forever_pct)
		timeout = -1;
	else if (t % 2)
		timeout = 0;
	else
		timeout = 1 + pick_timeout(a);
	unsigned flags = chance(&a->r, 30) ? CANAL_SELECT_BIASED : 0;
	bool any_send = false;
	int len = snprintf(a->pub->what, sizeof(a->pub->what), "t %lld f %u:",
			   (long long)timeout, flags);
	for (size_t i = 0; i < n; i++) {
		int c = -1;
		for (int d = 0; d < W->nch; d++)
			if (cases[i].ch == W->ch[d])
				c = d;
		any_send |= c >= 0 && cases[i].op == CANAL_OP_SEND;
		len += snprintf(a->pub->what + len,
				sizeof(a->pub->what) - (size_t)len, " %s%d",
				cases[i].op == CANAL_OP_SEND ? "s" : "r", c);
	}
	int op = any_send ? OP_SELECT_MIXED : OP_SELECT_RECV;
	note_op(a, op, -1);
	if (timeout < 0) {
		uint32_t wait = 0, swait = 0;
		for (size_t i = 0; i < n; i++)
			for (int d = 0; d < W->nch; d++)
				if (cases[i].ch == W->ch[d]) {
					if (cases[i].op == CANAL_OP_RECV)
						wait |= 1u << d;
					else
						swait |= 1u << d;
				}
		atomic_store(&a->pub->recv_wait, wait);
		atomic_store(&a->pub->send_wait, swait);
	}
	int r = canal_select(cases, n, timeout, flags);
	if (r >= 0) {
		EXPECT((size_t)r < n && cases[r].ch,
		       "actor %d select: index %d of %zu", a->id, r, n);
		EXPECT(cases[r].result == 0 || cases[r].result == -EPIPE,
		       "actor %d select: case %d result %d", a->id, r,
		       cases[r].result);
		op_ok(op);
	} else {
		EXPECT((r == -EAGAIN && timeout == 0) ||
			       (r == -ETIMEDOUT && timeout > 0),
		       "actor %d select timeout %lld: %d", a->id,
		       (long long)timeout, r);
	}
	for (size_t i = 0; i < n; i++) {
		struct canal_case *k = &cases[i];
		if (!k->ch)
			continue;
		int c = 0;
		while (W->ch[c] != k->ch)
			c++;
		bool done = (int)i == r;
		if (!done)
			EXPECT(k->result == 12345, "actor %d select: case %zu "
			       "not chosen has result %d", a->id, i, k->result);
		if (k->op == CANAL_OP_SEND) {
			bool ok = done && k->result == 0;
			if (done)
				check_not_after_close(a, "select send", c,
						      closed[i], ok ? 0 : -1);
			resolve(a, c, seqs[i], ok);
		} else if (done && k->result == 0) {
			got(a, c, bufs[i], "select");
		} else if (done) {
			got_epipe(a, c, "select");
		}
	}
}

static void do_close(struct actor *a)
{
	int c = (int)rnd(&a->r, (uint32_t)W->nch);
	note_op(a, OP_CLOSE, c);
	int r = canal_close(W->ch[c]);
	EXPECT(r == 0 || r == -EPIPE, "actor %d close ch %d: %d", a->id, c, r);
	if (r == 0)
		atomic_fetch_add(&W->close_ok[c], 1);
	EXPECT(canal_chan_is_closed(W->ch[c]) == 1, "closed ch %d is open", c);
}

/* One operation. phase 0: anything; 1: receive with bounded operations
 * only; 2: receive, anything. */
static void one_op(struct actor *a, int phase)
{
	bool forever = phase != 1 && chance(&a->r, W->forever_pct);
	if (phase == 0 && !a->exhausted && chance(&a->r, a->pub->send_pct)) {
		if (chance(&a->r, 12)) {
			do_select(a, true, true);
			return;
		}
		int c = pick_send_ch(a);
		if (c < 0)
			return;
		static const int bounded[] = {
			OP_TRY_SEND, OP_SEND_TIMEOUT, OP_SEND_DEADLINE,
			OP_TRY_SEND_BATCH, OP_TRY_RESERVE,
		};
		static const int blocking[] = { OP_SEND, OP_SEND_BATCH,
						OP_RESERVE };
		int op = forever ? blocking[rnd(&a->r, 3)]
				 : bounded[rnd(&a->r, 5)];
		switch (op) {
		case OP_SEND_BATCH:
		case OP_TRY_SEND_BATCH:
			do_send_batch(a, op, c);
			break;
		case OP_RESERVE:
		case OP_TRY_RESERVE:
			do_reserve(a, op, c);
			break;
		default:
			do_send_single(a, op, c);
		}
		return;
	}
	if (chance(&a->r, 12)) {
		do_select(a, false, phase != 1);
		return;
	}
	int c = pick_recv_ch(a);
	if (c < 0)
		return;
	static const int bounded[] = {
		OP_TRY_RECV, OP_RECV_TIMEOUT, OP_RECV_DEADLINE,
		OP_TRY_RECV_BATCH, OP_TRY_BORROW,
	};
	static const int blocking[] = { OP_RECV, OP_RECV_BATCH, OP_BORROW };
	int op = forever ? blocking[rnd(&a->r, 3)] : bounded[rnd(&a->r, 5)];
	switch (op) {
	case OP_RECV_BATCH:
	case OP_TRY_RECV_BATCH:
		do_recv_batch(a, op, c);
		break;
	case OP_BORROW:
	case OP_TRY_BORROW:
		do_borrow(a, op, c);
		break;
	default:
		do_recv_single(a, op, c);
	}
}

static bool all_drained(const struct actor *a)
{
	for (int c = 0; c < W->nch; c++)
		if (!a->drained[c])
			return false;
	return true;
}

/* Tasks: let the loop's other tasks run now and then (try operations
 * never do on a buffered channel); a task may also detach for a while. */
static void breathe(struct actor *a)
{
	if (chance(&a->r, 10))
		canal_yield();
	bool task = a->pub->kind == K_TASK || a->pub->kind == K_CHILD_TASK;
	if (task && W->detach_pct && !atomic_load(&W->stopping) &&
	    chance(&a->r, W->detach_pct)) {
		note_op(a, OP_DETACH, -1);
		CHECK_EQ(a->detached ? canal_attach() : canal_detach(), 0);
		a->detached = !a->detached;
	}
}

static struct actor *actor_new(int id)
{
	struct actor *a = calloc(1, sizeof(*a));
	CHECK(a);
	a->id = id;
	a->pub = &W->act[id];
	a->r.s = mix64(W->eseed ^ (0x1234567ull * (uint64_t)(id + 1))) | 1;
	memset(a->last, 0xff, sizeof(a->last));
	return a;
}

static void actor_run(int id)
{
	struct actor *a = actor_new(id);
	while (!atomic_load(&W->stopping)) {
		if (atomic_load(&W->hold)) {
			/* The main thread's check (quiet_check). */
			note_op(a, OP_IDLE, -1);
			canal_sleep_ns(100000);
			continue;
		}
		one_op(a, 0);
		if (W->close_per_mille && rnd(&a->r, 1000) < W->close_per_mille)
			do_close(a);
		breathe(a);
	}
	/* Back on a loop: a task that idles (below) while detached would
	 * hold one of the few detach threads, which other tasks may be
	 * waiting for in canal_detach. */
	if (a->detached) {
		CHECK_EQ(canal_attach(), 0);
		a->detached = false;
	}
	atomic_store(&a->pub->sending, 0);
	atomic_store(&a->pub->draining, 1);
	while (!atomic_load(&W->closed_all)) {
		if (all_drained(a) || atomic_load(&W->hold)) {
			note_op(a, OP_IDLE, -1);
			canal_sleep_ns(200000);
			continue;
		}
		one_op(a, 1);
		breathe(a);
	}
	while (!all_drained(a)) {
		one_op(a, 2);
		breathe(a);
	}
	if (a->detached)
		CHECK_EQ(canal_attach(), 0);
	note_op(a, OP_IDLE, -1);
	free(a);
}

/* ------------------------------------------------------------------ */
/* Threads, tasks, the forked process                                  */
/* ------------------------------------------------------------------ */

static void *actor_thread(void *p)
{
	actor_run((int)(intptr_t)p);
	return NULL;
}

static void actor_task(void *p)
{
	actor_run((int)(intptr_t)p);
}

struct task_set {
	int kind; /* K_TASK or K_CHILD_TASK */
};

static void tasks_main(void *p)
{
	struct task_set *ts = p;
	for (int i = 0; i < W->nactors; i++)
		if (W->act[i].kind == ts->kind)
			CHECK_EQ(canal_spawn(actor_task, (void *)(intptr_t)i), 0);
}

static void run_tasks(int kind)
{
	struct task_set ts = { kind };
	struct canal_run_options o = { 0 };
	o.loops = (unsigned)W->loops;
	o.backend = W->epoll ? CANAL_BACKEND_EPOLL : CANAL_BACKEND_AUTO;
	if (W->compact)
		o.flags |= CANAL_RUN_COMPACT_STACKS;
	CHECK_EQ(canal_run(tasks_main, &ts, &o), 0);
}

static void *runtime_thread(void *p)
{
	run_tasks((int)(intptr_t)p);
	return NULL;
}

/* Starts the actors of kinds kt (threads) and kk (tasks); joins them. */
static void run_actors(int kt, int kk)
{
	pthread_t t[MAX_ACTORS + 1];
	int nt = 0;
	bool tasks = false;
	for (int i = 0; i < W->nactors; i++) {
		if (W->act[i].kind == kt)
			t[nt++] = spawn(actor_thread, (void *)(intptr_t)i);
		tasks |= W->act[i].kind == kk;
	}
	if (tasks)
		t[nt++] = spawn(runtime_thread, (void *)(intptr_t)kk);
	for (int i = 0; i < nt; i++)
		join(t[i]);
}

/* ------------------------------------------------------------------ */
/* Epochs                                                              */
/* ------------------------------------------------------------------ */

static void *parent_actors(void *p)
{
	(void)p;
	run_actors(K_THREAD, K_TASK);
	return NULL;
}

static _Atomic int alarm_armed;

static void on_alarm(int sig)
{
	(void)sig;
	if (atomic_load(&alarm_armed))
		fail("hang: the epoch did not end in time");
}

static int sanitized_scale(void)
{
#ifdef CANAL_SANITIZED
	return 4;
#else
	return 1;
#endif
}

static void configure(struct rng *r, bool can_fork)
{
	static const size_t caps[] = { 0, 1, 2, 7, 64 };
	W->nch = 1 + (int)rnd(r, MAX_CH);
	W->shared = can_fork && chance(r, 30);
	W->child = W->shared && chance(r, 70);
	W->loops = 1 + (int)rnd(r, 2);
	W->compact = chance(r, 25);
	W->epoll = chance(r, 40);
	W->forever_pct = 5 + rnd(r, 40);
	W->close_per_mille = chance(r, 50) ? 0 : 1 + rnd(r, 4);
	W->detach_pct = chance(r, 70) ? 0 : 1 + rnd(r, 3);
	for (int c = 0; c < W->nch; c++) {
		W->cap[c] = caps[rnd(r, 5)];
		W->esz[c] = chance(r, 50) ? 16 : 24;
	}
	W->nactors = 2 + (int)rnd(r, MAX_ACTORS - 3);
	bool tasks = chance(r, 50);
	bool sender = false, receiver = false;
	for (int i = 0; i < W->nactors; i++) {
		struct actor_pub *p = &W->act[i];
		static const unsigned pcts[] = { 0, 20, 50, 80, 100 };
		p->send_pct = pcts[rnd(r, 5)];
		int k = K_THREAD;
		unsigned roll = rnd(r, 100);
		if (W->child && roll < 40)
			k = roll < 25 ? K_CHILD_THREAD : K_CHILD_TASK;
		else if (tasks && roll < 75)
			k = K_TASK;
		p->kind = k;
		sender |= p->send_pct > 0;
		receiver |= p->send_pct < 100;
	}
	if (!sender)
		W->act[0].send_pct = 50;
	if (!receiver)
		W->act[W->nactors - 1].send_pct = 50;
	/* The main thread is one more actor (the nudger, see nudge). */
	W->act[W->nactors].kind = K_NUDGER;
	W->act[W->nactors].send_pct = 50;
	W->nactors++;
	int n = snprintf(W->desc, sizeof(W->desc),
			 "%d ch%s%s loops %d%s%s forever %u%% close %u/1000 "
			 "detach %u%%; caps",
			 W->nch, W->shared ? " shared" : "",
			 W->child ? " +child" : "", W->loops,
			 W->compact ? " compact" : "",
			 W->epoll ? " epoll" : "", W->forever_pct,
			 W->close_per_mille, W->detach_pct);
	for (int c = 0; c < W->nch; c++)
		n += snprintf(W->desc + n, sizeof(W->desc) - (size_t)n,
			      " %zu/%zu", W->cap[c], W->esz[c]);
	n += snprintf(W->desc + n, sizeof(W->desc) - (size_t)n, "; actors");
	for (int i = 0; i < W->nactors; i++)
		n += snprintf(W->desc + n, sizeof(W->desc) - (size_t)n,
			      " %s:%u",
			      (const char *[]){ "thr", "task", "cthr",
						"ctask", "main" }[W->act[i].kind],
			      W->act[i].send_pct);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The main thread's part in the run: every millisecond, a try send and a
 * try receive on random channels. Operations that wait for ever (which
 * actors pick now and then) could otherwise leave every actor waiting,
 * one on an empty channel, another on a full one, for the rest of the
 * epoch; the nudges keep elements moving. The main thread is an actor
 * like the others (its elements are checked the same way).
 */
static void nudge(struct actor *a)
{
	int c = (int)rnd(&a->r, (uint32_t)W->nch);
	if (W->next_seq[a->id][c] + 1 <= MAX_SEQ && chance(&a->r, 50))
		do_send_single(a, OP_TRY_SEND, c);
	c = (int)rnd(&a->r, (uint32_t)W->nch);
	if (!a->drained[c])
		do_recv_single(a, OP_TRY_RECV, c);
	note_op(a, OP_IDLE, -1);
}

/* Before the final close: wait for every actor to leave its sending phase.
 * A sender may only stay stuck while no receiver drains (every one waits
 * on an empty channel: the final close frees them all); while receivers
 * drain every channel, a send must complete. Nothing moving for
 * stall_ns then is a lost wake-up (or a wedged slot). */
static void settle(uint64_t stall_ns)
{
	uint64_t prog = atomic_load(&W->progress);
	uint64_t since = canal_now_ns();
	for (;;) {
		bool sending = false, draining = false;
		for (int i = 0; i < W->nactors; i++) {
			/* An actor still in its first phase, unless it is
			 * in a receive (waiting for ever on an empty channel,
			 * perhaps: the final close frees it) or waiting for
			 * a detach thread (quiet_check). */
			int op = atomic_load(&W->act[i].op);
			sending |= atomic_load(&W->act[i].sending) != 0 &&
				   (op < OP_RECV || op > OP_SELECT_RECV) &&
				   op != OP_DETACH;
			draining |= atomic_load(&W->act[i].draining) != 0 &&
				    atomic_load(&W->act[i].op) != OP_IDLE;
		}
		if (!sending)
			return;
		uint64_t now = canal_now_ns();
		uint64_t p = atomic_load(&W->progress);
		if (p != prog) {
			prog = p;
			since = now;
		}
		if (!draining && now - since > 20000000u) {
			atomic_fetch_add(&W->stalls_resolved, 1);
			return;
		}
		if (draining && now - since > stall_ns)
			fail("stall: a sender stays stuck for %.1f s while "
			     "receivers drain every channel",
			     (double)stall_ns / 1e9);
		sleep_ns(1000000);
	}
}

/* The forever operations under way, by channel (bits), on a channel that
 * must let one of them go on: */
static const char *stuck_reason(void)
{
	for (int c = 0; c < W->nch; c++) {
		uint32_t bit = 1u << c;
		size_t len = canal_chan_len(W->ch[c]);
		bool closed = canal_chan_is_closed(W->ch[c]);
		for (int i = 0; i < W->nactors; i++) {
			uint32_t rw = atomic_load(&W->act[i].recv_wait);
			uint32_t sw = atomic_load(&W->act[i].send_wait);
			if (!((rw | sw) & bit))
				continue;
			/* Closed: every waiter is woken (-EPIPE, or the
			 * drain). */
			if (closed)
				return "a waiter on a closed channel";
			/* Elements there (or withdrawn ones to skip). */
			if ((rw & bit) && len > 0)
				return "a receiver on a channel that holds "
				       "elements";
			/* Room there. */
			if ((sw & bit) && W->cap[c] && len < W->cap[c])
				return "a sender on a channel with room";
			/* Capacity 0: a sender and a receiver meet. */
			for (int j = 0; j < W->nactors && (sw & bit); j++)
				if (j != i &&
				    (atomic_load(&W->act[j].recv_wait) & bit))
					return "a sender and a receiver of a "
					       "synchronous channel";
		}
	}
	return NULL;
}

/* When the run stops, the drainers pause at once (hold): every actor is
 * soon idle, or in an operation that waits for ever. Nobody holds a slot
 * then (reserves and borrows are committed and released before the next
 * operation). Any such operation that its channel lets go on (see
 * stuck_reason) must then complete: one that stays while nothing moves
 * lost its wake-up. */
static void quiet_check(uint64_t stall_ns)
{
	uint64_t since = canal_now_ns();
	uint64_t prog = atomic_load(&W->progress);
	bool awaited = false;
	for (;;) {
		bool busy = false;
		for (int i = 0; i < W->nactors; i++) {
			int op = atomic_load(&W->act[i].op);
			/* (canal_detach waits for one of the few detach
			 * threads: those may all run tasks that wait for
			 * ever.) */
			if (op != OP_IDLE && op != OP_DETACH &&
			    !atomic_load(&W->act[i].recv_wait) &&
			    !atomic_load(&W->act[i].send_wait))
				busy = true;
		}
		const char *why = busy ? NULL : stuck_reason();
		if (!busy && !why)
			break;
		if (why && !awaited) {
			awaited = true;
			atomic_fetch_add(&W->quiet_waits, 1);
		}
		uint64_t now = canal_now_ns();
		uint64_t p = atomic_load(&W->progress);
		if (p != prog) {
			prog = p;
			since = now;
		}
		if (now - since > stall_ns)
			fail("stall: %s", why ? why
					      : "an actor stays in a bounded "
						"operation");
		sleep_ns(200000);
	}
	atomic_store(&W->hold, 0);
}

static void verify(void)
{
	for (int c = 0; c < W->nch; c++) {
		EXPECT(canal_chan_len(W->ch[c]) == 0,
		       "ch %d: %zu elements left after every receiver saw "
		       "-EPIPE", c, canal_chan_len(W->ch[c]));
		EXPECT(atomic_load(&W->close_ok[c]) == 1,
		       "ch %d: %u closes returned 0", c,
		       atomic_load(&W->close_ok[c]));
	}
	for (int a = 0; a < W->nactors; a++)
		for (int c = 0; c < W->nch; c++)
			for (uint32_t s = 0; s < MAX_SEQ; s++) {
				uint8_t st = atomic_load(&W->status[a][c][s]);
				uint8_t n = atomic_load(&W->recvd[a][c][s]);
				if (s >= W->next_seq[a][c]) {
					EXPECT(st == ST_NONE && n == 0,
					       "actor %d ch %d seq %u: never "
					       "made, status %u received %u",
					       a, c, s, st, n);
					continue;
				}
				EXPECT(st == ST_SENT || st == ST_FAILED,
				       "actor %d ch %d seq %u unresolved", a,
				       c, s);
				EXPECT(n == (st == ST_SENT),
				       "actor %d ch %d seq %u: %s, received "
				       "%u times", a, c, s,
				       st == ST_SENT ? "sent" : "failed", n);
			}
}

static void epoch(long e, uint64_t stall_ns, bool can_fork)
{
	W->epoch = e;
	W->eseed = mix64(W->seed ^ mix64((uint64_t)e));
	struct rng r = { W->eseed | 1 };
	atomic_store(&W->stopping, 0);
	atomic_store(&W->closed_all, 0);
	memset(W->next_seq, 0, sizeof(W->next_seq));
	memset((void *)W->status, 0, sizeof(W->status));
	memset((void *)W->recvd, 0, sizeof(W->recvd));
	memset(W->act, 0, sizeof(W->act));
	for (int c = 0; c < MAX_CH; c++)
		atomic_store(&W->close_ok[c], 0);
	configure(&r, can_fork);
	for (int c = 0; c < W->nch; c++) {
		W->ch[c] = canal_chan_create(W->esz[c], W->cap[c],
					     W->shared ? CANAL_SHARED : 0);
		CHECK(W->ch[c]);
	}
	for (int i = 0; i < W->nactors; i++)
		atomic_store(&W->act[i].sending, 1);
	uint64_t dur = 20000000u + rnd(&r, 280) * 1000000u;
	if (chance(&r, 5))
		dur = 1000000000u;
	/* Planned closes during the run, by the main thread. */
	uint64_t close_at[MAX_CH];
	for (int c = 0; c < W->nch; c++)
		close_at[c] = chance(&r, 35) ? rnd(&r, (uint32_t)(dur / 1000)) *
						       1000u
					     : UINT64_MAX;

	uint64_t sent0 = atomic_load(&W->elts_sent);
	uint64_t failed0 = atomic_load(&W->elts_failed);
	atomic_store(&alarm_armed, 1);
	alarm((unsigned)(60 * sanitized_scale() + stall_ns / 1000000000u));

	pid_t child = -1;
	if (W->child) {
		fflush(NULL);
		child = test_fork();
		CHECK(child >= 0);
		if (child == 0) {
			atomic_store(&alarm_armed, 0);
			alarm(0);
			run_actors(K_CHILD_THREAD, K_CHILD_TASK);
			_exit(0);
		}
	}
	pthread_t runner = spawn(parent_actors, NULL);

	/* The run, with the planned closes. */
	struct actor *me = actor_new(W->nactors - 1);
	uint64_t t0 = canal_now_ns();
	uint64_t next_check = (10 + rnd(&r, 50)) * 1000000ull;
	for (;;) {
		uint64_t now = canal_now_ns() - t0;
		if (now >= dur)
			break;
		nudge(me);
		if (now >= next_check) {
			/* Pause the actors and check for lost wake-ups. */
			atomic_store(&W->hold, 1);
			quiet_check(stall_ns);
			atomic_fetch_add(&W->quiet_checks, 1);
			next_check = canal_now_ns() - t0 +
				     (10 + rnd(&r, 50)) * 1000000ull;
		}
		bool all_closed = true;
		for (int c = 0; c < W->nch; c++)
			all_closed &= canal_chan_is_closed(W->ch[c]) != 0;
		if (all_closed)
			break;
		uint64_t next = dur;
		for (int c = 0; c < W->nch; c++) {
			if (close_at[c] <= now) {
				int cr = canal_close(W->ch[c]);
				CHECK(cr == 0 || cr == -EPIPE);
				if (cr == 0)
					atomic_fetch_add(&W->close_ok[c], 1);
				close_at[c] = UINT64_MAX;
			} else if (close_at[c] < next) {
				next = close_at[c];
			}
		}
		sleep_ns(next - now < 1000000u ? next - now : 1000000u);
	}
	atomic_store(&W->hold, 1);
	atomic_store(&W->stopping, 1);
	atomic_store(&me->pub->sending, 0);
	quiet_check(stall_ns);
	settle(stall_ns);
	for (int c = 0; c < W->nch; c++) {
		int cr = canal_close(W->ch[c]);
		CHECK(cr == 0 || cr == -EPIPE);
		if (cr == 0)
			atomic_fetch_add(&W->close_ok[c], 1);
	}
	atomic_store(&W->closed_all, 1);
	while (!all_drained(me))
		one_op(me, 2);
	free(me);
	join(runner);
	if (child > 0) {
		int status;
		CHECK_EQ(waitpid(child, &status, 0), child);
		EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "the forked process ended with status %#x", status);
	}
	alarm(0);
	atomic_store(&alarm_armed, 0);
	verify();
	if (getenv("CANAL_CHAN_STRESS_VERBOSE")) {
		uint64_t sent = atomic_load(&W->elts_sent) - sent0;
		uint64_t failed = atomic_load(&W->elts_failed) - failed0;
		printf("epoch %ld: %llu sent %llu failed, %.0f ms: %s\n", e,
		       (unsigned long long)sent, (unsigned long long)failed,
		       (double)(canal_now_ns() - t0) / 1e6, W->desc);
	}
	for (int c = 0; c < W->nch; c++) {
		canal_chan_destroy(W->ch[c]);
		W->ch[c] = NULL;
	}
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

int main(void)
{
	W = mmap(NULL, sizeof(*W), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(W != MAP_FAILED);
	W->seed = env_u64("CANAL_CHAN_STRESS_SEED", 0);
	if (W->seed == 0)
		W->seed = mix64(canal_now_ns() ^ ((uint64_t)getpid() << 32));
	long only = getenv("CANAL_CHAN_STRESS_EPOCH")
			    ? (long)env_u64("CANAL_CHAN_STRESS_EPOCH", 0)
			    : -1;
	uint64_t secs = env_u64("CANAL_CHAN_STRESS_SECONDS",
				3u * (uint64_t)stress_scale());
	uint64_t stall_ns = 10000000000ull * (uint64_t)sanitized_scale();
	printf("seed %llu (CANAL_CHAN_STRESS_SEED), %llu s\n",
	       (unsigned long long)W->seed, (unsigned long long)secs);
	fflush(stdout);
	signal(SIGALRM, on_alarm);
	uint64_t end = canal_now_ns() + secs * 1000000000ull;
	long e = 0;
	do {
		epoch(only >= 0 ? only : e, stall_ns, true);
		e++;
	} while (canal_now_ns() < end);

	printf("%ld epochs; elements sent %llu, received %llu, failed sends "
	       "%llu; stuck senders freed by close %llu; quiet checks %llu (%llu "
	       "waited for a wake-up)\n",
	       e, (unsigned long long)W->elts_sent,
	       (unsigned long long)W->elts_recv,
	       (unsigned long long)W->elts_failed,
	       (unsigned long long)W->stalls_resolved,
	       (unsigned long long)W->quiet_checks,
	       (unsigned long long)W->quiet_waits);
	for (int op = 1; op < OP_N; op++)
		printf("  %-15s %10llu calls %10llu completed\n", op_names[op],
		       (unsigned long long)W->ops[op],
		       (unsigned long long)W->ok_ops[op]);
	TEST_DONE("test_revmodel_chan_stress");
}
