/* fuzz_rails.c - libFuzzer target: hostile rails frames (rail headers,
 * acknowledgements, duplicates, reordering, truncation) into the rails
 * driver's receive path (src/engine/transfer/rails.c), next to legitimate
 * traffic whose delivery is checked.
 *
 * Two sessions of one process (ranks 0 and 1) joined by a rails gate of two
 * rails: two TCP links (bind "127.0.0.1,127.0.0.1") or shm + TCP. Rank 1
 * is a real session whose rails are hooked (their ops replaced by shims
 * that record what rank 1 sends and can hold it back); the fuzzer also
 * writes on rank 1's rails directly, below its rails driver, as a hostile
 * peer. Rank 0's rails driver is hooked too, to see what it hands to its
 * engine. An input is
 *   byte 0   bit 0: rails kind (0: tcp+tcp, 1: shm+tcp)
 *   then     operations, each a little-endian u16 length and that many
 *            bytes (a short last one takes what is left): an opcode byte
 *            (low 3 bits: the operation; bit 3: rail or variant; bit 5:
 *            larger), then its argument bytes:
 *     0 RAW      the bytes as one rails frame on a rail (header and all)
 *     1 ACK      an acknowledgement frame built from what rank 0 really
 *                sent (as rank 1 saw it) plus signed deltas, or from
 *                absolute values; optionally of a wrong length
 *     2 REPLAY   one of the last frames rank 1's rails sent, again, on a
 *                rail (a duplicate, maybe on the other rail)
 *     3 MSG      rank 1 sends a message (tag 4 or 5) by its engine
 *     4 SEND0    rank 0 sends a message to rank 1 (tag 6): acknowledgements
 *                of rank 0's packets then matter
 *     5 HOLD     rank 1's next frames are held back (reordering)
 *     6 RELEASE  the held frames go out, in order or reversed
 *     7 ENGINE   the bytes as an engine packet through rank 1's rails
 *                driver (valid rails header, hostile engine packet)
 *
 * Checks, besides ASan+UBSan and libFuzzer's leak and hang detection:
 *  - rank 0's rails hand each sequence number to the engine at most once,
 *    and only bytes that some frame of that number carried;
 *  - rank 0's gate closes only with -EPROTO and a message naming peer 1,
 *    and only after a hostile operation (RAW, ENGINE, or an ACK that may be
 *    invalid); every posted receive completes then;
 *  - while no hostile engine packet was sent (RAW data frames and ENGINE
 *    taint the pair), the messages of MSG arrive exactly once, in order
 *    per tag, intact, and all of them by the end of the input (unless the
 *    gate closed).
 * Acknowledgements rank 0 sends are adjusted on their way to rank 1's rails
 * driver for the bytes and sequence numbers the fuzzer injected, so that
 * rank 1 stays consistent and keeps sending. A pair survives across inputs
 * while its gate is open (state carries over).
 *
 * Built like fuzz_frames.c (tests/engine_fuzz/CMakeLists.txt); `make test`
 * runs it for a few seconds from corpus-rails/ beside this file.
 */
#define FUZZ_NAME "fuzz_rails"
#include "fuzz_pair.h"

#include <endian.h>
#include <stdint.h>

#include "engine/transfer/driver.h"

#define RAILS 2
#define ACK_SEQ UINT64_MAX
#define ACK_LEN ((size_t)(2 + RAILS) * 8)
#define SEQ_CAP (1u << 16)   /* sequence numbers checked */
#define SEQ_RECYCLE (SEQ_CAP / 2)
#define HASHES 3
#define RING 32              /* frames kept for REPLAY */
#define HELD_MAX 64
#define NSMALL 4             /* receives on tags 0-3, RB_LEN bytes */
#define RB_LEN 256
#define BIG (256u * 1024 + 64)
#define MSG_MAX 32           /* rank 1's messages in flight */
#define SEND0_MAX 8
#define SPINS 200000

static const char *const kinds[2] = { "tcp", "shm+tcp" };

struct frame {
	unsigned char *b;
	size_t len;
	int rail;
};

struct seqrec {
	uint64_t h[HASHES];
	uint8_t n;          /* hashes recorded; HASHES + 1: too many */
	bool delivered;
};

struct msg {
	uint32_t id;
	size_t len;
};

struct rpair {
	int kind;
	struct canal_engine *e[2];
	char dir[64];
	struct canal__driver *sub[RAILS]; /* rank 1's rails */
	struct canal__driver *d0;         /* rank 0's rails driver */
	struct canal__driver *d1;         /* rank 1's rails driver */
	/* what rank 1's rails saw of rank 0 (truth for ACK) */
	uint64_t r0_next, r0_bytes[RAILS];
	/* what went to rank 0 besides rank 1's rails driver */
	uint64_t injected[RAILS];
	uint64_t legit_next; /* above every sequence number rank 1 sent */
	uint64_t max_delivered;
	struct seqrec *seqs;  /* SEQ_CAP */
	struct frame ring[RING];
	unsigned ring_next;
	struct frame held[HELD_MAX];
	int nheld, hold_left;
	bool hostile, tainted, recycle;
	/* rank 0's receives */
	struct canal_engine_req *small[NSMALL];
	unsigned char *small_buf[NSMALL];
	struct canal_engine_req *big[2];
	unsigned char *big_buf[2];
	struct msg expect[2][MSG_MAX];
	int exp_head[2], exp_n[2];
	/* rank 1's sends */
	struct canal_engine_req *msend[MSG_MAX];
	unsigned char *msend_buf[MSG_MAX];
	uint32_t next_id;
	/* rank 0's sends and rank 1's receive */
	struct canal_engine_req *s0[SEND0_MAX];
	unsigned char *s0_buf[SEND0_MAX];
	struct canal_engine_req *r1;
	unsigned char *r1_buf;
};

static struct rpair *pairs[2];

static void fail(const struct rpair *p, const char *what)
{
	fprintf(stderr, "fuzz_rails (%s): %s\n", p ? kinds[p->kind] : "-", what);
	abort();
}

static uint64_t hash(const unsigned char *b, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static uint64_t get64(const unsigned char *b)
{
	uint64_t v;
	memcpy(&v, b, 8);
	return le64toh(v);
}

static void put64(unsigned char *b, uint64_t v)
{
	v = htole64(v);
	memcpy(b, &v, 8);
}

/* A frame of sequence number seq carried body[0..n) towards rank 0. */
static void record_seq(struct rpair *p, uint64_t seq, const unsigned char *body,
		       size_t n)
{
	if (seq >= SEQ_CAP)
		return;
	struct seqrec *s = &p->seqs[seq];
	if (s->n > HASHES)
		return;
	uint64_t h = hash(body, n);
	for (int i = 0; i < s->n; i++)
		if (s->h[i] == h)
			return;
	if (s->n == HASHES)
		s->n = HASHES + 1;
	else
		s->h[s->n++] = h;
}

static void record_frame(struct rpair *p, const unsigned char *f, size_t n)
{
	if (n < 8)
		return;
	uint64_t seq = get64(f);
	if (seq == ACK_SEQ)
		return;
	record_seq(p, seq, f + 8, n - 8);
}

/* --- hooks: driver ops replaced by shims that know their pair --- */

struct hook {
	bool used;
	struct canal__driver *drv;
	const struct canal__driver_ops *orig;
	struct canal__driver_ops ops;
	struct rpair *p;
	int rail;                   /* rank 1's rail; -1: rank 0's rails */
	unsigned char ack[ACK_LEN]; /* an acknowledgement, adjusted */
};

static struct hook hooks[2 * (RAILS + 1)];

static struct hook *hook_of(struct canal__driver *d)
{
	for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++)
		if (hooks[i].used && hooks[i].drv == d)
			return &hooks[i];
	abort();
}

static unsigned char *gather(const struct iovec *iov, int n, size_t total)
{
	unsigned char *b = malloc(total ? total : 1);
	if (!b)
		abort();
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		memcpy(b + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return b;
}

/* Rank 1's rails driver sends on a rail. */
static int shim_send(struct canal__driver *d, const struct iovec *iov, int n,
		     size_t total)
{
	struct hook *h = hook_of(d);
	struct rpair *p = h->p;
	unsigned char *b = gather(iov, n, total);
	int err = 0;
	if (p->hold_left > 0 && p->nheld < HELD_MAX) {
		p->hold_left--;
		p->held[p->nheld++] = (struct frame){ b, total, h->rail };
		b = NULL;
	} else {
		err = h->orig->send(d, iov, n, total);
	}
	if (err) {
		free(b);
		return err;
	}
	const unsigned char *f = b ? b : p->held[p->nheld - 1].b;
	record_frame(p, f, total);
	if (total >= 8 && get64(f) != ACK_SEQ && get64(f) + 1 > p->legit_next)
		p->legit_next = get64(f) + 1;
	struct frame *r = &p->ring[p->ring_next++ % RING];
	free(r->b);
	r->b = malloc(total ? total : 1);
	if (!r->b)
		abort();
	memcpy(r->b, f, total);
	r->len = total;
	r->rail = h->rail;
	free(b);
	return 0;
}

/* Rank 1's rails driver reads a rail: note what rank 0 sent; adjust its
 * acknowledgements for what the fuzzer injected. */
static int shim_recv(struct canal__driver *d, const unsigned char **pkt,
		     size_t *len)
{
	struct hook *h = hook_of(d);
	struct rpair *p = h->p;
	int got = h->orig->recv(d, pkt, len);
	if (got != 1)
		return got;
	p->r0_bytes[h->rail] += *len;
	if (*len < 8)
		return got;
	uint64_t seq = get64(*pkt);
	if (seq != ACK_SEQ) {
		if (seq + 1 > p->r0_next)
			p->r0_next = seq + 1;
		return got;
	}
	if (*len != ACK_LEN)
		return got;
	memcpy(h->ack, *pkt, ACK_LEN);
	uint64_t upto = get64(h->ack + 8);
	put64(h->ack + 8, upto < p->legit_next ? upto : p->legit_next);
	for (int r = 0; r < RAILS; r++) {
		uint64_t rx = get64(h->ack + 16 + 8 * r);
		uint64_t inj = p->injected[r];
		put64(h->ack + 16 + 8 * r, rx - (inj < rx ? inj : rx));
	}
	*pkt = h->ack;
	return got;
}

/* Rank 0's rails driver hands a packet to its engine: once per sequence
 * number, and what a frame of that number carried. */
static int shim0_recv(struct canal__driver *d, const unsigned char **pkt,
		      size_t *len)
{
	struct hook *h = hook_of(d);
	struct rpair *p = h->p;
	int got = h->orig->recv(d, pkt, len);
	if (got != 1)
		return got;
	/* rails.c hands out the bytes after its 8-byte header, in place */
	uint64_t seq = get64(*pkt - 8);
	if (seq == ACK_SEQ)
		fail(p, "an acknowledgement handed to the engine");
	if (seq > p->max_delivered)
		p->max_delivered = seq;
	if (seq >= SEQ_CAP) {
		p->recycle = true;
		return got;
	}
	struct seqrec *s = &p->seqs[seq];
	if (s->delivered) {
		fprintf(stderr, "fuzz_rails: sequence %llu delivered twice\n",
			(unsigned long long)seq);
		fail(p, "a packet delivered twice");
	}
	s->delivered = true;
	if (s->n == 0)
		fail(p, "a packet delivered that no frame carried");
	if (s->n <= HASHES) {
		uint64_t hv = hash(*pkt, *len);
		bool ok = false;
		for (int i = 0; i < s->n; i++)
			ok = ok || s->h[i] == hv;
		if (!ok) {
			fprintf(stderr, "fuzz_rails: sequence %llu, %zu bytes\n",
				(unsigned long long)seq, *len);
			fail(p, "a packet delivered with bytes no frame carried");
		}
	}
	return got;
}

static void hook(struct rpair *p, struct canal__driver *d, int rail)
{
	for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
		struct hook *h = &hooks[i];
		if (h->used)
			continue;
		h->used = true;
		h->drv = d;
		h->orig = d->ops;
		h->ops = *d->ops;
		h->p = p;
		h->rail = rail;
		if (rail >= 0) {
			h->ops.send = shim_send;
			h->ops.recv = shim_recv;
		} else {
			h->ops.recv = shim0_recv;
		}
		d->ops = &h->ops;
		return;
	}
	abort();
}

static void unhook(struct rpair *p)
{
	for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++)
		if (hooks[i].used && hooks[i].p == p) {
			hooks[i].drv->ops = hooks[i].orig;
			hooks[i].used = false;
		}
}

/* --- the pair --- */

static void *close_rank(void *arg)
{
	canal_engine_close(arg);
	return NULL;
}

static void *xmalloc(size_t n)
{
	void *b = malloc(n);
	if (!b)
		abort();
	return b;
}

static void post_small(struct rpair *p, int i)
{
	int err = canal_engine_irecv(p->e[0], 1, (unsigned)i, p->small_buf[i],
				     RB_LEN, &p->small[i]);
	if (err)
		die("irecv", err);
}

static void post_big(struct rpair *p, int t)
{
	int err = canal_engine_irecv(p->e[0], 1, 4u + (unsigned)t, p->big_buf[t],
				     BIG, &p->big[t]);
	if (err)
		die("irecv", err);
}

static void post_r1(struct rpair *p)
{
	if (p->e[1]->gates[0].error)
		return;
	int err = canal_engine_irecv(p->e[1], 0, 6, p->r1_buf, BIG, &p->r1);
	if (err)
		die("irecv (rank 1)", err);
}

static struct rpair *pair_open(int kind)
{
	struct rpair *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	p->kind = kind;
	snprintf(p->dir, sizeof p->dir, "/tmp/canal-fuzz-rails.XXXXXX");
	fuzz_open_pair(p->dir, kinds[kind],
		       kind == 0 ? "127.0.0.1,127.0.0.1" : NULL, p->e);
	p->seqs = calloc(SEQ_CAP, sizeof *p->seqs);
	if (!p->seqs)
		abort();
	p->d0 = p->e[0]->gates[1].drv;
	p->d1 = p->e[1]->gates[0].drv;
	for (int r = 0; r < RAILS; r++) {
		p->sub[r] = canal__rails_sub(p->d1, r);
		if (!p->sub[r] || !canal__rails_sub(p->d0, r))
			fail(p, "not a gate of two rails");
		hook(p, p->sub[r], r);
	}
	hook(p, p->d0, -1);
	for (int i = 0; i < NSMALL; i++) {
		p->small_buf[i] = xmalloc(RB_LEN);
		post_small(p, i);
	}
	for (int t = 0; t < 2; t++) {
		p->big_buf[t] = xmalloc(BIG);
		post_big(p, t);
	}
	p->r1_buf = xmalloc(BIG);
	post_r1(p);
	return p;
}

static void pair_free(struct rpair *p)
{
	/* The drivers' own ops again (the shims are not meant for two
	 * threads); then both at once: each one's close waits for the
	 * other's acknowledgements. */
	unhook(p);
	pthread_t t;
	if (pthread_create(&t, NULL, close_rank, p->e[1]))
		abort();
	canal_engine_close(p->e[0]);
	pthread_join(t, NULL);
	fuzz_rmdir_all(p->dir);
	for (int i = 0; i < NSMALL; i++)
		free(p->small_buf[i]);
	for (int t2 = 0; t2 < 2; t2++)
		free(p->big_buf[t2]);
	for (int i = 0; i < MSG_MAX; i++)
		free(p->msend_buf[i]);
	for (int i = 0; i < SEND0_MAX; i++)
		free(p->s0_buf[i]);
	free(p->r1_buf);
	for (int i = 0; i < RING; i++)
		free(p->ring[i].b);
	for (int i = 0; i < p->nheld; i++)
		free(p->held[i].b);
	free(p->seqs);
	free(p);
}

static unsigned char pattern(uint32_t id, size_t i)
{
	return (unsigned char)(id * 151u + i * 13u + (i >> 8));
}

/* Completed requests: checked, posted again. */
static void reap(struct rpair *p)
{
	struct canal_engine_status st;
	for (int i = 0; i < NSMALL; i++) {
		if (!p->small[i])
			continue;
		int done = canal_engine_test(p->e[0], p->small[i], NULL);
		if (done == 0)
			continue;
		p->small[i] = NULL;
		if (done < 0 && done != -EMSGSIZE && done != -EPROTO)
			die("receive", done);
		if (!p->tainted && done != -EPROTO)
			fail(p, "a message on tags 0-3 from legitimate traffic");
		if (!fuzz_closed(p->e))
			post_small(p, i);
	}
	for (int t = 0; t < 2; t++) {
		if (!p->big[t])
			continue;
		int done = canal_engine_test(p->e[0], p->big[t], &st);
		if (done == 0)
			continue;
		p->big[t] = NULL;
		if (done < 0 && done != -EMSGSIZE && done != -EPROTO)
			die("receive (tag 4/5)", done);
		if (done == 1 && !p->tainted) {
			if (p->exp_n[t] == 0)
				fail(p, "a message received that was not sent");
			struct msg m = p->expect[t][p->exp_head[t]];
			p->exp_head[t] = (p->exp_head[t] + 1) % MSG_MAX;
			p->exp_n[t]--;
			if (st.len != m.len)
				fail(p, "a message of the wrong length (lost, "
					"duplicated or reordered)");
			for (size_t i = 0; i < m.len; i++)
				if (p->big_buf[t][i] != pattern(m.id, i))
					fail(p, "a message corrupted");
		} else if (done < 0 && !p->tainted && !fuzz_closed(p->e)) {
			fail(p, "a receive failed on an open gate");
		}
		if (!fuzz_closed(p->e))
			post_big(p, t);
	}
	for (int i = 0; i < MSG_MAX; i++) {
		if (!p->msend[i])
			continue;
		int done = canal_engine_test(p->e[1], p->msend[i], NULL);
		if (done == 0)
			continue;
		p->msend[i] = NULL;
		free(p->msend_buf[i]);
		p->msend_buf[i] = NULL;
		if (done < 0 && !p->tainted && !fuzz_closed(p->e))
			die("rank 1's send", done);
	}
	for (int i = 0; i < SEND0_MAX; i++) {
		if (!p->s0[i])
			continue;
		int done = canal_engine_test(p->e[0], p->s0[i], NULL);
		if (done == 0)
			continue;
		p->s0[i] = NULL;
		free(p->s0_buf[i]);
		p->s0_buf[i] = NULL;
		if (done < 0 && !fuzz_closed(p->e))
			die("rank 0's send", done);
	}
	if (p->r1) {
		int done = canal_engine_test(p->e[1], p->r1, NULL);
		if (done != 0) {
			p->r1 = NULL;
			post_r1(p);
		}
	}
}

/* A frame written on rank 1's rail below its rails driver. */
static void inject(struct rpair *p, int rail, const unsigned char *f, size_t n)
{
	struct canal__driver *s = p->sub[rail];
	const struct canal__driver_ops *orig = hook_of(s)->orig;
	struct iovec v = { (void *)f, n };
	int err;
	unsigned spins = 0;
	while ((err = orig->send(s, &v, 1, n)) == -EAGAIN && !fuzz_closed(p->e) &&
	       ++spins < SPINS)
		fuzz_progress(p->e, 1);
	if (err)
		return;
	p->injected[rail] += n;
	record_frame(p, f, n);
}

static void release_held(struct rpair *p, bool reversed)
{
	int n = p->nheld;
	p->hold_left = 0;
	p->nheld = 0;
	struct frame held[HELD_MAX];
	memcpy(held, p->held, (size_t)n * sizeof *held);
	for (int k = 0; k < n; k++) {
		struct frame *f = &held[reversed ? n - 1 - k : k];
		struct canal__driver *s = p->sub[f->rail];
		const struct canal__driver_ops *orig = hook_of(s)->orig;
		struct iovec v = { f->b, f->len };
		unsigned spins = 0;
		int err;
		while ((err = orig->send(s, &v, 1, f->len)) == -EAGAIN &&
		       !fuzz_closed(p->e) && ++spins < SPINS)
			fuzz_progress(p->e, 1);
		if (err == -EAGAIN && !fuzz_closed(p->e))
			fail(p, "a rail takes nothing (hang)");
		free(f->b);
	}
}

static void op_ack(struct rpair *p, int rail, const unsigned char *a, size_t n)
{
	unsigned char f[64];
	memset(f, 0, sizeof f);
	uint8_t flags = n > 0 ? a[0] : 0;
	uint64_t v[1 + RAILS];
	bool valid = true;
	if (flags & 1) { /* absolute values */
		for (int i = 0; i < 1 + RAILS; i++) {
			unsigned char b[8] = { 0 };
			size_t off = 1 + 8 * (size_t)i;
			if (off < n)
				memcpy(b, a + off, n - off < 8 ? n - off : 8);
			v[i] = get64(b);
		}
	} else { /* what rank 0 sent, plus small deltas */
		uint64_t base[1 + RAILS] = { p->r0_next, p->r0_bytes[0],
					     p->r0_bytes[1] };
		for (int i = 0; i < 1 + RAILS; i++) {
			int8_t dlt = 1 + (size_t)i < n ? (int8_t)a[1 + i] : 0;
			v[i] = base[i] + (uint64_t)(int64_t)dlt;
			if (dlt < 0 && (uint64_t)(-(int64_t)dlt) > base[i])
				v[i] = 0;
		}
	}
	valid = v[0] <= p->r0_next && v[1] <= p->r0_bytes[0] &&
		v[2] <= p->r0_bytes[1];
	put64(f, ACK_SEQ);
	for (int i = 0; i < 1 + RAILS; i++)
		put64(f + 8 + 8 * i, v[i]);
	size_t len = ACK_LEN;
	if (flags & 2) { /* a wrong length */
		int8_t dl = n > 4 ? (int8_t)a[4] : 1;
		long l = (long)ACK_LEN + dl % 33;
		len = l < 0 ? 0 : (size_t)l;
		valid = valid && len == ACK_LEN;
	}
	if (!valid)
		p->hostile = true;
	inject(p, rail, f, len);
}

static void op_msg(struct rpair *p, int t, const unsigned char *a, size_t n,
		   bool larger)
{
	size_t len = n >= 2 ? (size_t)a[0] | (size_t)a[1] << 8 : n ? a[0] : 0;
	if (larger)
		len *= 4;
	if (len > BIG - 64)
		len = BIG - 64;
	int slot = -1;
	for (int i = 0; i < MSG_MAX && slot < 0; i++)
		if (!p->msend[i])
			slot = i;
	if (slot < 0 || p->exp_n[t] == MSG_MAX || p->e[1]->gates[0].error)
		return;
	uint32_t id = p->next_id++;
	unsigned char *b = xmalloc(len ? len : 1);
	for (size_t i = 0; i < len; i++)
		b[i] = pattern(id, i);
	int err = canal_engine_isend(p->e[1], 0, 4u + (unsigned)t, b, len, 0,
				     &p->msend[slot]);
	if (err) {
		free(b);
		p->msend[slot] = NULL;
		if (!p->tainted && !fuzz_closed(p->e))
			die("rank 1's isend", err);
		return;
	}
	p->msend_buf[slot] = b;
	p->expect[t][(p->exp_head[t] + p->exp_n[t]) % MSG_MAX] =
		(struct msg){ id, len };
	p->exp_n[t]++;
}

static void op_send0(struct rpair *p, const unsigned char *a, size_t n,
		     bool larger)
{
	size_t len = n >= 2 ? (size_t)a[0] | (size_t)a[1] << 8 : n ? a[0] : 0;
	if (larger)
		len *= 4;
	if (len > BIG - 64)
		len = BIG - 64;
	int slot = -1;
	for (int i = 0; i < SEND0_MAX && slot < 0; i++)
		if (!p->s0[i])
			slot = i;
	if (slot < 0)
		return;
	unsigned char *b = xmalloc(len ? len : 1);
	memset(b, 0x5a, len);
	int err = canal_engine_isend(p->e[0], 1, 6, b, len, 0, &p->s0[slot]);
	if (err) {
		free(b);
		p->s0[slot] = NULL;
		if (!fuzz_closed(p->e))
			die("rank 0's isend", err);
		return;
	}
	p->s0_buf[slot] = b;
}

static void op_engine(struct rpair *p, const unsigned char *a, size_t n)
{
	p->hostile = p->tainted = true;
	if (n > p->d1->caps.max_packet)
		n = p->d1->caps.max_packet;
	struct iovec v = { (void *)a, n };
	int err;
	unsigned spins = 0;
	while ((err = p->d1->ops->send(p->d1, &v, 1, n)) == -EAGAIN &&
	       !fuzz_closed(p->e) && ++spins < SPINS)
		fuzz_progress(p->e, 1);
}

/* The end of an input: what is held goes out; untainted, every message of
 * rank 1 arrives (or the gate closes). */
static void drain(struct rpair *p)
{
	release_held(p, false);
	for (unsigned k = 0; k < SPINS && !fuzz_closed(p->e); k++) {
		fuzz_progress(p->e, 1);
		reap(p);
		bool busy = false;
		for (int i = 0; i < MSG_MAX; i++)
			busy = busy || p->msend[i];
		if (!p->tainted)
			busy = busy || p->exp_n[0] || p->exp_n[1];
		if (!busy)
			return;
	}
	if (!fuzz_closed(p->e) && !p->tainted)
		fail(p, "rank 1's messages not delivered (lost or hung)");
}

static void pair_check_closed(struct rpair *p)
{
	char why[160];
	fuzz_gate_check(p->e[0], kinds[p->kind], why, sizeof why);
	if (getenv("FUZZ_RAILS_VERBOSE")) /* which check refused the input */
		fprintf(stderr, "fuzz_rails (%s): gate closed: %s\n",
			kinds[p->kind], why);
	if (!p->hostile) {
		fprintf(stderr, "fuzz_rails (%s): \"%s\"\n", kinds[p->kind], why);
		fail(p, "the gate closed on legitimate traffic");
	}
	for (int i = 0; i < NSMALL; i++)
		if (p->small[i]) {
			int err = canal_engine_wait(p->e[0], p->small[i], NULL);
			p->small[i] = NULL;
			if (err != 0 && err != -EPROTO && err != -EMSGSIZE)
				die("receive on a closed gate", err);
		}
	for (int t = 0; t < 2; t++)
		if (p->big[t]) {
			int err = canal_engine_wait(p->e[0], p->big[t], NULL);
			p->big[t] = NULL;
			if (err != 0 && err != -EPROTO && err != -EMSGSIZE)
				die("receive on a closed gate", err);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int kind = data[0] & 1;
	data++;
	size--;
	if (!pairs[kind])
		pairs[kind] = pair_open(kind);
	struct rpair *p = pairs[kind];
	while (size > 0 && !fuzz_closed(p->e)) {
		size_t n = size >= 2 ? (size_t)data[0] | (size_t)data[1] << 8 : 0;
		size_t hdr = size >= 2 ? 2 : size;
		data += hdr;
		size -= hdr;
		if (n > size)
			n = size;
		if (n == 0) {
			if (size == 0)
				break;
			fuzz_progress(p->e, 4); /* an empty operation: time passes */
			reap(p);
			continue;
		}
		uint8_t op = data[0];
		const unsigned char *a = data + 1;
		size_t an = n - 1;
		int alt = (op >> 3) & 1;
		bool larger = op & 0x20;
		switch (op & 7) {
		case 0:
			if (an < 8 || get64(a) != ACK_SEQ)
				p->tainted = true;
			p->hostile = true;
			inject(p, alt, a, an);
			break;
		case 1:
			op_ack(p, alt, a, an);
			break;
		case 2: {
			unsigned k = an ? a[0] : 0;
			unsigned have = p->ring_next < RING ? p->ring_next : RING;
			if (have) {
				struct frame *f = &p->ring[(p->ring_next - 1 -
							     k % have) % RING];
				/* inject() may overwrite the ring's entry */
				unsigned char *c = xmalloc(f->len ? f->len : 1);
				memcpy(c, f->b, f->len);
				size_t l = f->len;
				inject(p, larger ? f->rail : alt, c, l);
				free(c);
			}
			break;
		}
		case 3:
			op_msg(p, alt, a, an, larger);
			break;
		case 4:
			op_send0(p, a, an, larger);
			break;
		case 5:
			p->hold_left = an ? a[0] % 17 : 1;
			break;
		case 6:
			release_held(p, alt);
			break;
		case 7:
			op_engine(p, a, an);
			break;
		}
		data += n;
		size -= n;
		fuzz_progress(p->e, 2);
		reap(p);
	}
	if (!fuzz_closed(p->e))
		drain(p);
	fuzz_progress(p->e, 8);
	reap(p);
	if (fuzz_closed(p->e)) {
		pair_check_closed(p);
		pair_free(p);
		pairs[kind] = NULL;
	} else if (p->recycle || p->legit_next > SEQ_RECYCLE ||
		   p->max_delivered > SEQ_RECYCLE) {
		pair_free(p);
		pairs[kind] = NULL;
	}
	return 0;
}
