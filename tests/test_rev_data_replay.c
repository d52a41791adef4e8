/* test_rev_data_replay - (review) a rendezvous on TCP whose first DATA
 * piece the peer sends twice (a replayed frame). The receive counts the
 * bytes that arrived (window.c: r->arrived += h->len), not which ranges,
 * so two copies of the first half make it "complete": it succeeds with
 * the second half of the buffer never written. Only the real second
 * half, coming after, is then refused (and closes the gate) - after the
 * application was told its message had arrived whole. Expected: a DATA
 * piece for a range already written is a protocol error (-EPROTO), and
 * the receive never reports success with bytes missing.
 *
 * Rank 0 is a real session; "rank 1" is a session of the same process
 * whose TCP driver is used raw, as test_engine_fuzz does. Bounded: every
 * loop has a deadline. */
#include "engine_job.h"

#include "../src/engine/internal.h"
#include "../src/engine/transfer/driver.h"
#include "../src/engine/wire.h"

static void raw_send(struct canal_engine *e, struct canal__driver *d,
		     const struct canal__piece_hdr *h, const void *payload)
{
	unsigned char hdr[32];
	unsigned hl = canal__piece_encode(h, hdr);
	struct iovec v[2] = { { hdr, hl }, { (void *)payload, payload ? h->len : 0 } };
	size_t total = hl + (payload ? h->len : 0);
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	int err;
	while ((err = d->ops->send(d, v, payload ? 2 : 1, total)) == -EAGAIN &&
	       canal_now_ns() < deadline)
		canal_engine_progress(e);
	CHECK_EQ(err, 0);
	while (!d->ops->idle(d) && canal_now_ns() < deadline) {
		d->ops->flush(d);
		canal_engine_progress(e);
	}
}

int main(void)
{
	struct canal_engine *two[2];
	char dir[] = "/tmp/canal-test-replay.XXXXXX";
	CHECK(mkdtemp(dir));
	job_open_two(dir, "tcp", two);
	struct canal_engine *e = two[0];
	struct canal__driver *fake = two[1]->gates[0].drv;

	enum { LEN = 131072, HALF = 65536 };
	static unsigned char buf[LEN];
	memset(buf, 0xaa, sizeof buf);
	struct canal_engine_req *r;
	CHECK_EQ(canal_engine_irecv(e, 1, 0, buf, LEN, &r), 0);

	/* RTS for a 128 KiB message */
	struct canal__piece_hdr rts = { .kind = PIECE_RTS, .tag = 0, .seq = 0,
					.len = LEN, .a = 7, .b = 0 };
	raw_send(e, fake, &rts, NULL);
	/* rank 0 answers with an RTR: read it raw */
	uint64_t cookie_r = 0;
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	while (!cookie_r && canal_now_ns() < deadline) {
		canal_engine_progress(e);
		const unsigned char *pkt;
		size_t len;
		if (fake->ops->recv(fake, &pkt, &len) == 1) {
			for (size_t off = 0; off < len;) {
				struct canal__piece_hdr h;
				unsigned hl = canal__piece_decode(pkt + off, len - off, &h);
				CHECK(hl);
				if (h.kind == PIECE_RTR && h.a == 7)
					cookie_r = h.b;
				off += hl + (canal__piece_has_payload(h.kind) ? h.len : 0);
			}
			fake->ops->release(fake);
		}
	}
	CHECK(cookie_r != 0);
	/* the first half, twice */
	static unsigned char half[HALF];
	memset(half, 0x11, sizeof half);
	struct canal__piece_hdr data = { .kind = PIECE_DATA, .tag = 0,
					 .len = HALF, .a = cookie_r, .b = 0 };
	raw_send(e, fake, &data, half);
	raw_send(e, fake, &data, half);
	deadline = canal_now_ns() + 5000000000ull;
	int res = 0;
	while ((res = canal_engine_test(e, r, NULL)) == 0 &&
	       canal_now_ns() < deadline)
		;
	size_t unwritten = 0;
	for (size_t i = HALF; i < LEN; i++)
		unwritten += buf[i] == 0xaa;
	fprintf(stderr,
		"receive of %d bytes, first half sent twice, second half never: "
		"result %d (%s), %zu bytes of the buffer never written\n",
		LEN, res, res == 1 ? "success" : strerror(-res), unwritten);
	canal_engine_close(two[1]);
	canal_engine_close(e);
	job_rmdir(dir);
	CHECK(res != 1); /* success with half the message missing */
	TEST_DONE("test_rev_data_replay");
}
