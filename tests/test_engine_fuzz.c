/* test_engine_fuzz - malformed input on each driver's receive path. A
 * session (rank 0) is connected to a fake peer (rank 1, a session of the
 * same process whose driver is used raw): the fake sends random packets
 * and mutated valid ones (bytes flipped, truncated, lengths and cookies
 * changed) while rank 0 has receives posted. Whatever arrives, rank 0 must
 * not crash or touch memory out of bounds (run under ASan in CI), and once
 * the input is invalid the gate is closed with -EPROTO and a message naming
 * peer 1; its receives complete with that error. Deterministic (seeded). */
#include "engine_job.h"

#include <canal/channel.h>

#include "../src/engine/internal.h"
#include "../src/engine/transfer/driver.h"
#include "../src/engine/wire.h"

static uint64_t rng_state;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* A valid piece of a random kind into buf; its length. */
static size_t valid_piece(unsigned char *buf)
{
	struct canal__piece_hdr h = { 0 };
	h.kind = (uint8_t)(1 + rnd() % (PIECE_KIND_END - 1));
	h.tag = (uint16_t)(rnd() % 4);
	h.seq = (uint32_t)(rnd() % 4);
	h.len = canal__piece_has_payload(h.kind) ? (uint32_t)(rnd() % 64) : (uint32_t)rnd();
	if (h.kind == PIECE_RTS)
		h.len = 100000 + (uint32_t)(rnd() % 1000);
	h.a = rnd() % 3 == 0 ? rnd() : (rnd() % 8) | (1ull << 32);
	h.b = rnd() % 2 ? rnd() % 70000 : rnd();
	size_t n = canal__piece_encode(&h, buf);
	if (canal__piece_has_payload(h.kind)) {
		memset(buf + n, 0x5a, h.len);
		n += h.len;
	}
	return n;
}

/* Write all n bytes, letting rank 0 read meanwhile; stop early if rank 0
 * has closed the gate (the socket may then refuse them). */
static void tcp_inject_all(struct canal_engine *e, struct canal__driver *d,
			   const unsigned char *b, size_t n)
{
	while (n && !e->gates[1].error) {
		int k = canal__tcp_inject(d, b, n);
		if (k < 0)
			return;
		b += k;
		n -= (size_t)k;
		canal_engine_progress(e);
	}
}

static void round_of(const char *driver, int round)
{
	rng_state = 0x9e3779b97f4a7c15ull ^ ((uint64_t)round * 0x100000001b3ull) ^
		    (driver[0] == 't');
	struct canal_engine *two[2];
	char dir[] = "/tmp/canal-test-fuzz.XXXXXX";
	CHECK(mkdtemp(dir));
	job_open_two(dir, driver, two);
	struct canal_engine *e = two[0];
	struct canal__driver *fake = two[1]->gates[0].drv;
	enum { NR = 6 };
	struct canal_engine_req *r[NR];
	static unsigned char rb[NR][256];
	for (int i = 0; i < NR; i++)
		CHECK_EQ(canal_engine_irecv(e, 1, (unsigned)(i % 4), rb[i], sizeof rb[i], &r[i]), 0);
	/* Below the framing, now and then: ring records or TCP length
	 * prefixes that are wrong (bad mark, length 0 or huge, a head moved
	 * past the data or backwards). */
	if (rnd() % 3 == 0) {
		unsigned char raw[64];
		for (size_t k = 0; k < sizeof raw; k++)
			raw[k] = (unsigned char)rnd();
		uint32_t len = rnd() % 2 ? (uint32_t)rnd() : (uint32_t)(rnd() % 64);
		memcpy(raw, &len, 4);
		if (!strcmp(driver, "shm")) {
			if (rnd() % 2) {
				uint32_t mark = 0x5041434bu; /* a packet record */
				memcpy(raw + 4, &mark, 4);
			}
			uint64_t adv = rnd() % 4 == 0 ? rnd() : 8 + 8 * (rnd() % 8);
			CHECK_EQ(canal__shm_inject(fake, raw, sizeof raw, adv), 0);
		} else {
			tcp_inject_all(e, fake, raw, 4 + rnd() % 60);
		}
		for (int k = 0; k < 8; k++)
			canal_engine_progress(e);
		/* A length that happened to fit may wait for more bytes: the
		 * unknown kind below then lands inside that packet. */
	}
	unsigned char pkt[4096];
	int frames = 1 + (int)(rnd() % 12);
	for (int f = 0; f < frames && !e->gates[1].error; f++) {
		size_t n = 0;
		switch (rnd() % 4) {
		case 0: /* random bytes */
			n = 1 + rnd() % 300;
			for (size_t k = 0; k < n; k++)
				pkt[k] = (unsigned char)rnd();
			break;
		case 1: /* valid pieces, then a few bytes flipped */
		case 2:
			for (int p = 1 + (int)(rnd() % 4); p > 0; p--)
				n += valid_piece(pkt + n);
			for (int m = (int)(rnd() % 4); m > 0; m--)
				pkt[rnd() % n] = (unsigned char)rnd();
			break;
		default: /* valid pieces, truncated */
			for (int p = 1 + (int)(rnd() % 3); p > 0; p--)
				n += valid_piece(pkt + n);
			n = 1 + rnd() % n;
			break;
		}
		struct iovec v = { pkt, n };
		int err;
		while ((err = fake->ops->send(fake, &v, 1, n)) == -EAGAIN)
			canal_engine_progress(e);
		CHECK_EQ(err, 0);
		for (int k = 0; k < 4; k++) {
			canal_engine_progress(e);
			canal_engine_progress(two[1]);
		}
	}
	/* Certainly invalid: an unknown kind. On TCP, first enough 0xee bytes
	 * to complete any packet a fitting injected length left open (its
	 * content is then of kind 0xee too). */
	if (!strcmp(driver, "tcp") && !e->gates[1].error) {
		static unsigned char fill[70000];
		memset(fill, 0xee, sizeof fill);
		tcp_inject_all(e, fake, fill, sizeof fill);
	}
	unsigned char bad[PIECE_HDR] = { 0xee };
	struct iovec v = { bad, sizeof bad };
	while (!e->gates[1].error &&
	       fake->ops->send(fake, &v, 1, sizeof bad) == -EAGAIN)
		canal_engine_progress(e);
	uint64_t deadline = canal_now_ns() + 10ull * 1000 * 1000 * 1000;
	while (!e->gates[1].error && canal_now_ns() < deadline)
		canal_engine_progress(e);
	char why[160];
	int gerr = canal_engine_gate_error(e, 1, why, sizeof why);
	if (gerr != -EPROTO || !strstr(why, "peer 1")) {
		fprintf(stderr, "%s round %d: gate error %d \"%s\"\n", driver, round, gerr, why);
		abort();
	}
	for (int i = 0; i < NR; i++) {
		int err = canal_engine_wait(e, r[i], NULL);
		CHECK(err == 0 || err == -EPROTO || err == -EMSGSIZE);
	}
	canal_engine_close(two[1]);
	canal_engine_close(e);
	job_rmdir(dir);
}

/* The shm reader polls record headers, not the peer's head: a head moved
 * without a record, or out of range, is found by the health check, and a
 * WRAP record at offset 0 (which would send the reader round the ring
 * forever) by the reader. Each case on a fresh pair: -EPROTO naming the
 * peer, with its own reason. */
static void shm_ring_case(const unsigned char *raw, size_t n, uint64_t advance,
			  const char *reason)
{
	struct canal_engine *two[2];
	char dir[] = "/tmp/canal-test-fuzz.XXXXXX";
	CHECK(mkdtemp(dir));
	job_open_two(dir, "shm", two);
	struct canal_engine *e = two[0];
	struct canal_engine_req *r;
	static unsigned char rb[64];
	CHECK_EQ(canal_engine_irecv(e, 1, 0, rb, sizeof rb, &r), 0);
	CHECK_EQ(canal__shm_inject(two[1]->gates[0].drv, raw, n, advance), 0);
	uint64_t deadline = canal_now_ns() + 10ull * 1000 * 1000 * 1000;
	while (!e->gates[1].error && canal_now_ns() < deadline)
		canal_engine_progress(e);
	char why[160];
	int gerr = canal_engine_gate_error(e, 1, why, sizeof why);
	if (gerr != -EPROTO || !strstr(why, "peer 1") || !strstr(why, reason)) {
		fprintf(stderr, "shm ring case \"%s\": gate error %d \"%s\"\n",
			reason, gerr, why);
		abort();
	}
	CHECK_EQ(canal_engine_wait(e, r, NULL), -EPROTO);
	canal_engine_close(two[1]);
	canal_engine_close(e);
	job_rmdir(dir);
}

static void shm_ring_cases(void)
{
	static const unsigned char zero[8];
	const uint32_t wrap[2] = { 0, 0x57524150u }; /* REC_WRAP */
	shm_ring_case(zero, sizeof zero, 64, "but no record at");
	shm_ring_case(zero, sizeof zero, (uint64_t)4 << 20, "out of range");
	/* backwards, further than the lag a head may have */
	shm_ring_case(zero, sizeof zero, (uint64_t)0 - (8u << 20), "out of range");
	shm_ring_case((const unsigned char *)wrap, sizeof wrap, 8, "bad record");
	printf("shm: ring cases ok\n");
}

int main(void)
{
	/* The fake peer writes through its own driver of gate 0 from the
	 * start: every gate connected at open (lazy shm would give rank 1 its
	 * driver only once it sends). */
	setenv("CANAL_ENGINE_CONNECT", "eager", 1);
	shm_ring_cases();
	int rounds = 150 * stress_scale();
	const char *drivers[] = { "shm", "tcp" };
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < rounds; i++)
			round_of(drivers[d], i);
		printf("%s: %d rounds ok\n", drivers[d], rounds);
		fflush(stdout);
	}
	TEST_DONE("test_engine_fuzz");
}
