/* test_engine_chunks - rendezvous DATA pieces against the receiver's
 * record of chunks (src/engine/schedule/chunks.h): the chunks of a
 * message in any order complete it, with every byte where it belongs,
 * the small map (up to 64 chunks) and the allocated one alike; a piece
 * that is not exactly one chunk (off a chunk boundary, of another length
 * than its chunk, past the message) or a chunk written before fails the
 * receive with -EPROTO and closes the gate, never a success with bytes
 * missing; a session closed in the middle of a message frees its map.
 *
 * As test_rev_data_replay: rank 0 is a real session on TCP; "rank 1" is
 * a session of the same process whose driver is used raw. Each case gets
 * a fresh pair (a protocol error closes the gate). Bounded: every loop
 * has a deadline. */
#include "engine_job.h"

#include "../src/engine/internal.h"
#include "../src/engine/transfer/driver.h"
#include "../src/engine/wire.h"

enum { CHUNK = 65536 };

struct pair {
	char dir[64];
	struct canal_engine *e;    /* rank 0, the receiver */
	struct canal_engine *peer; /* rank 1, its driver used raw */
	struct canal__driver *fake;
};

static void pair_open(struct pair *p)
{
	struct canal_engine *two[2];
	snprintf(p->dir, sizeof p->dir, "/tmp/canal-test-chunks.XXXXXX");
	CHECK(mkdtemp(p->dir));
	job_open_two(p->dir, "tcp", two);
	p->e = two[0];
	p->peer = two[1];
	p->fake = two[1]->gates[0].drv;
}

static void pair_close(struct pair *p)
{
	canal_engine_close(p->peer);
	canal_engine_close(p->e);
	job_rmdir(p->dir);
}

static void raw_send(struct pair *p, const struct canal__piece_hdr *h,
		     const void *payload)
{
	unsigned char hdr[32];
	unsigned hl = canal__piece_encode(h, hdr);
	struct iovec v[2] = { { hdr, hl },
			      { (void *)payload, payload ? h->len : 0 } };
	size_t total = hl + (payload ? h->len : 0);
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	int err;
	while ((err = p->fake->ops->send(p->fake, v, payload ? 2 : 1,
					 total)) == -EAGAIN &&
	       canal_now_ns() < deadline)
		canal_engine_progress(p->e);
	CHECK_EQ(err, 0);
	while (!p->fake->ops->idle(p->fake) && canal_now_ns() < deadline) {
		p->fake->ops->flush(p->fake);
		canal_engine_progress(p->e);
	}
}

/* Post a receive of len bytes into buf, send the RTS of a message of as
 * many bytes and read rank 0's RTR: the receive's cookie. */
static uint64_t start(struct pair *p, unsigned char *buf, size_t len,
		      struct canal_engine_req **r)
{
	CHECK_EQ(canal_engine_irecv(p->e, 1, 0, buf, len, r), 0);
	struct canal__piece_hdr rts = { .kind = PIECE_RTS, .len = (uint32_t)len,
					.a = 7 };
	raw_send(p, &rts, NULL);
	uint64_t cookie = 0;
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	while (!cookie && canal_now_ns() < deadline) {
		canal_engine_progress(p->e);
		const unsigned char *pkt;
		size_t plen;
		if (p->fake->ops->recv(p->fake, &pkt, &plen) != 1)
			continue;
		for (size_t off = 0; off < plen;) {
			struct canal__piece_hdr h;
			unsigned hl = canal__piece_decode(pkt + off, plen - off, &h);
			CHECK(hl);
			if (h.kind == PIECE_RTR && h.a == 7)
				cookie = h.b;
			off += hl + (canal__piece_has_payload(h.kind) ? h.len : 0);
		}
		p->fake->ops->release(p->fake);
	}
	CHECK(cookie != 0);
	return cookie;
}

static void data(struct pair *p, uint64_t cookie, uint64_t off, uint32_t len,
		 const unsigned char *payload)
{
	struct canal__piece_hdr h = { .kind = PIECE_DATA, .len = len,
				      .a = cookie, .b = off };
	raw_send(p, &h, payload);
}

/* The receive's result: 1 (success), its error, or 0 (still under way
 * after a second). */
static int result(struct pair *p, struct canal_engine_req *r)
{
	uint64_t deadline = canal_now_ns() + 1000000000ull;
	int res;
	while ((res = canal_engine_test(p->e, r, NULL)) == 0 &&
	       canal_now_ns() < deadline)
		;
	return res;
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 16) * 7 + 1);
}

static unsigned char src[70 * CHUNK], dst[70 * CHUNK];

/* Every chunk of a message of len bytes, in the order given by
 * order(i, n): success and every byte in place. */
static void in_order(size_t len, size_t (*order)(size_t i, size_t n),
		     const char *what)
{
	struct pair p;
	pair_open(&p);
	struct canal_engine_req *r;
	memset(dst, 0, len);
	uint64_t cookie = start(&p, dst, len, &r);
	size_t n = (len + CHUNK - 1) / CHUNK;
	for (size_t k = 0; k < n; k++) {
		size_t i = order(k, n);
		size_t off = i * CHUNK;
		uint32_t l = (uint32_t)(len - off < CHUNK ? len - off : CHUNK);
		data(&p, cookie, off, l, src + off);
	}
	int res = result(&p, r);
	fprintf(stderr, "%s, %zu bytes in %zu chunks: %d\n", what, len, n, res);
	CHECK_EQ(res, 1);
	CHECK(memcmp(src, dst, len) == 0);
	pair_close(&p);
}

static size_t reversed(size_t i, size_t n)
{
	return n - 1 - i;
}

/* The last (short) chunk first, then the others in order: what a
 * strategy does when the earlier chunks do not fit its packet. */
static size_t tail_first(size_t i, size_t n)
{
	return i == 0 ? n - 1 : i - 1;
}

/* Some pieces of a message of len bytes (offsets and lengths in
 * pieces[], n of them), the last one bad: the receive fails with
 * -EPROTO, the gate is closed, and the bad piece's bytes (the
 * complement of the message's) are not written. */
struct piece {
	uint64_t off;
	uint32_t len;
};

static void refused(size_t len, const struct piece *pieces, int n,
		    const char *what)
{
	struct pair p;
	pair_open(&p);
	struct canal_engine_req *r;
	memset(dst, 0, len);
	uint64_t cookie = start(&p, dst, len, &r);
	for (int k = 0; k < n; k++) {
		static unsigned char junk[CHUNK];
		const struct piece *c = &pieces[k];
		bool bad = k == n - 1;
		CHECK(c->len <= CHUNK && c->off + c->len <= sizeof src);
		for (uint32_t j = 0; bad && j < c->len; j++)
			junk[j] = (unsigned char)~src[c->off + j];
		data(&p, cookie, c->off, c->len, bad ? junk : src + c->off);
	}
	int res = result(&p, r);
	char why[160];
	int gerr = canal_engine_gate_error(p.e, 1, why, sizeof why);
	fprintf(stderr, "%s: %d (%s), gate: %s\n", what, res,
		res < 0 ? strerror(-res) : "no error", gerr ? why : "open");
	CHECK_EQ(res, -EPROTO);
	CHECK_EQ(gerr, -EPROTO);
	const struct piece *last = &pieces[n - 1];
	for (uint64_t i = last->off; i < last->off + last->len && i < len; i++)
		CHECK(dst[i] == 0 || dst[i] == src[i]);
	pair_close(&p);
}

/* A receive of 70 chunks (an allocated map) given half of them, then
 * its session closed, the gate still open: the close reports the receive
 * still pending, and the map goes with the session (LeakSanitizer would
 * see it otherwise). */
static void closed_midway(void)
{
	struct pair p;
	pair_open(&p);
	struct canal_engine_req *r;
	size_t len = 70 * (size_t)CHUNK;
	uint64_t cookie = start(&p, dst, len, &r);
	for (size_t i = 0; i < 70; i += 2)
		data(&p, cookie, i * CHUNK, CHUNK, src + i * CHUNK);
	CHECK_EQ(canal_engine_test(p.e, r, NULL), 0);
	/* The receiver first: its peer still there, the gate open. */
	CHECK_EQ(canal_engine_close(p.e), -EBUSY);
	CHECK_EQ(canal_engine_close(p.peer), 0);
	job_rmdir(p.dir);
	fprintf(stderr, "closed with half of 70 chunks written: -EBUSY\n");
}

int main(void)
{
	for (size_t i = 0; i < sizeof src; i++)
		src[i] = pattern(i);

	/* Out of order: the small map (3 chunks, the last short) and the
	 * allocated one (70 chunks, above the small map's 64). */
	in_order(3 * CHUNK - 100, tail_first, "tail first");
	in_order(3 * CHUNK - 100, reversed, "reversed");
	in_order(70 * CHUNK - 7, reversed, "reversed, allocated map");
	in_order(64 * CHUNK, tail_first, "tail first, 64 chunks");

	/* Repeats: the first chunk twice (the review's case), a middle one,
	 * and one beyond the small map. */
	const struct piece first_twice[] = { { 0, CHUNK }, { 0, CHUNK } };
	refused(2 * CHUNK, first_twice, 2, "first chunk twice");
	const struct piece tail_twice[] = { { 2 * CHUNK, 100 }, { 0, CHUNK },
					    { 2 * CHUNK, 100 } };
	refused(2 * CHUNK + 100, tail_twice, 3, "tail twice");
	const struct piece big_twice[] = { { 65 * CHUNK, CHUNK },
					   { 3 * CHUNK, CHUNK },
					   { 65 * CHUNK, CHUNK } };
	refused(70 * CHUNK, big_twice, 3, "chunk 65 of 70 twice");

	/* Not a chunk of the message. */
	const struct piece unaligned[] = { { 1000, CHUNK } };
	refused(2 * CHUNK, unaligned, 1, "off a chunk boundary");
	const struct piece shorter[] = { { 0, 4096 } };
	refused(2 * CHUNK, shorter, 1, "shorter than its chunk");
	const struct piece longer_tail[] = { { CHUNK, CHUNK } };
	refused(CHUNK + 100, longer_tail, 1, "longer than the tail");
	const struct piece shorter_tail[] = { { CHUNK, 50 } };
	refused(CHUNK + 100, shorter_tail, 1, "shorter than the tail");
	const struct piece past[] = { { 2 * CHUNK, 100 } };
	refused(2 * CHUNK, past, 1, "past the message");
	/* two halves of one chunk, which add up to it */
	const struct piece halves[] = { { 0, CHUNK }, { CHUNK, CHUNK / 2 } };
	refused(2 * CHUNK, halves, 2, "half a chunk");

	closed_midway();

	TEST_DONE("test_engine_chunks");
}
