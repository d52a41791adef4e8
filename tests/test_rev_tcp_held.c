/* test_rev_tcp_held - (review, expected to pass: attacks that held) a raw
 * TCP peer (rank 1's driver used raw, as in test_engine_fuzz) sends a
 * valid eager packet one byte per write with progress in between (a frame
 * split over many segments): it must arrive whole. Then the same packet
 * again (a replay): the gate must close with -EPROTO ("duplicate"), and
 * a receive posted after fails with it. Then on a fresh pair: a frame
 * length of max_packet + 1, and a prefix that promises more bytes than
 * come before the peer closes (truncated then EOF). Bounded by deadlines. */
#include "engine_job.h"

#include "../src/engine/internal.h"
#include "../src/engine/transfer/driver.h"
#include "../src/engine/wire.h"

static void pair(char *dir, struct canal_engine **e0, struct canal_engine **e1)
{
	struct canal_engine *two[2];
	job_open_two(dir, "tcp", two);
	*e0 = two[0];
	*e1 = two[1];
}

static void inject(struct canal_engine *e, struct canal__driver *d,
		   const unsigned char *b, size_t n, size_t step)
{
	while (n) {
		size_t k = n < step ? n : step;
		int w = canal__tcp_inject(d, b, k);
		CHECK(w >= 0);
		b += w;
		n -= (size_t)w;
		for (int i = 0; i < 3; i++)
			canal_engine_progress(e);
	}
}

static int settle(struct canal_engine *e, struct canal_engine_req *r)
{
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	int t;
	while ((t = canal_engine_test(e, r, NULL)) == 0 && canal_now_ns() < deadline)
		;
	return t;
}

int main(void)
{
	char dir[] = "/tmp/canal-test-held.XXXXXX";
	CHECK(mkdtemp(dir));
	struct canal_engine *e, *f;
	pair(dir, &e, &f);
	struct canal__driver *fake = f->gates[0].drv;
	unsigned char pkt[4 + PIECE_HDR + 100];
	struct canal__piece_hdr h = { .kind = PIECE_EAGER, .tag = 2, .seq = 0, .len = 100 };
	uint32_t l = htole32(PIECE_HDR + 100);
	memcpy(pkt, &l, 4);
	canal__piece_encode(&h, pkt + 4);
	memset(pkt + 4 + PIECE_HDR, 0x42, 100);
	char buf[128];
	struct canal_engine_req *r;
	CHECK_EQ(canal_engine_irecv(e, 1, 2, buf, sizeof buf, &r), 0);
	inject(e, fake, pkt, sizeof pkt, 1); /* byte by byte */
	CHECK_EQ(settle(e, r), 1);
	CHECK_EQ(buf[99], 0x42);
	printf("held: a frame split byte by byte arrives whole\n");
	inject(e, fake, pkt, sizeof pkt, sizeof pkt); /* replay */
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	while (!e->gates[1].error && canal_now_ns() < deadline)
		canal_engine_progress(e);
	char why[160];
	CHECK_EQ(canal_engine_gate_error(e, 1, why, sizeof why), -EPROTO);
	CHECK(strstr(why, "duplicate"));
	CHECK_EQ(canal_engine_irecv(e, 1, 2, buf, sizeof buf, &r), -EPROTO);
	printf("held: the replayed frame closes the gate: \"%s\"\n", why);
	canal_engine_close(f);
	canal_engine_close(e);
	job_rmdir(dir);

	/* a length one above max_packet */
	char dir2[] = "/tmp/canal-test-held.XXXXXX";
	CHECK(mkdtemp(dir2));
	pair(dir2, &e, &f);
	fake = f->gates[0].drv;
	l = htole32((uint32_t)fake->caps.max_packet + 1);
	inject(e, fake, (unsigned char *)&l, 4, 4);
	deadline = canal_now_ns() + 5000000000ull;
	while (!e->gates[1].error && canal_now_ns() < deadline)
		canal_engine_progress(e);
	CHECK_EQ(canal_engine_gate_error(e, 1, why, sizeof why), -EPROTO);
	printf("held: length max_packet + 1: \"%s\"\n", why);
	canal_engine_close(f);
	canal_engine_close(e);
	job_rmdir(dir2);

	/* a prefix of 1000 bytes, 10 sent, then the peer closes */
	char dir3[] = "/tmp/canal-test-held.XXXXXX";
	CHECK(mkdtemp(dir3));
	pair(dir3, &e, &f);
	fake = f->gates[0].drv;
	CHECK_EQ(canal_engine_irecv(e, 1, 2, buf, sizeof buf, &r), 0);
	unsigned char trunc[14] = { 0xe8, 0x03, 0, 0, PIECE_EAGER };
	inject(e, fake, trunc, sizeof trunc, sizeof trunc);
	canal_engine_close(f); /* end of stream */
	int t = settle(e, r);
	CHECK_EQ(t, -ECONNRESET);
	CHECK_EQ(canal_engine_gate_error(e, 1, why, sizeof why), -ECONNRESET);
	printf("held: truncated frame then EOF: %d \"%s\"\n", t, why);
	canal_engine_close(e);
	job_rmdir(dir3);
	TEST_DONE("test_rev_tcp_held");
}
