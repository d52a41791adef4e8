/* test_engine_bulk - requests to send and bulk transfers (the UCX
 * driver's: the engine's RTS,
 * the data by UCX's rendezvous between the users' buffers) against a peer
 * that breaks the protocol. As in test_engine_fuzz, rank 0 is a real
 * session and rank 1 a session of the same process whose driver is used
 * raw (it never progresses as an engine). Each case of a broken protocol
 * must end with rank 0's gate to 1 closed with -EPROTO naming peer 1, its
 * requests failed with that error, and no crash (ASan in CI); the shm
 * modes' case (last below) keeps the gate open:
 *  - a FIN, or an RTR, for a send that goes by bulk transfer (it would
 *    complete the send while UCX still reads its buffer);
 *  - a bulk transfer longer, or shorter, than its RTS said;
 *  - an RTS with the bulk flag on shm and on TCP (drivers without bulk),
 *    the receive posted after it arrived (it used to wait for ever);
 *  - the driver refusing a bulk send (a plain send and a pack's piece:
 *    completed once, with the gate's error; -ECONNRESET, not -EPROTO);
 *  - (shm) a flood of RTS pieces for messages nobody receives: cut off
 *    at twice the credit window, as unexpected eager data is;
 *  - (shm) rendezvous modes meeting: a ring receiver answers an RTS that
 *    carries an address with RTR + NOREAD (one without, plainly), a
 *    reading receiver whose read is refused (seccomp, in a child) too, and
 *    a reading sender that gets NOREAD goes eager to 64 KiB, without its
 *    address, on that gate (a plain RTR changes nothing; on TCP NOREAD
 *    is ignored). Caller-mode sessions: the caps are read without the
 *    session lock because no progress thread runs.
 * And: with UCX_RNDV_THRESH set by the user the UCX driver has no bulk
 * (its tags would not be safe: a transfer could go eager) and takes
 * messages up to 1 MiB in packets; without it, bulk from 8448 bytes.
 * The UCX cases skip when canal was built without UCX. */
#include "engine_job.h"

#include <canal/channel.h>

#include "../src/engine/internal.h"
#include "../src/engine/transfer/driver.h"
#include "../src/engine/wire.h"

struct pair {
	char dir[64];
	struct canal_engine *e;      /* rank 0: the real one */
	struct canal_engine *fake_e; /* rank 1 */
	struct canal__driver *fake;  /* rank 1's driver to rank 0 */
};

static void pair_open(struct pair *p, const char *driver)
{
	struct canal_engine *two[2];
	snprintf(p->dir, sizeof p->dir, "/tmp/canal-test-bulk.XXXXXX");
	CHECK(mkdtemp(p->dir));
	job_open_two(p->dir, driver, two);
	p->e = two[0];
	p->fake_e = two[1];
	p->fake = two[1]->gates[0].drv;
	CHECK(p->fake != NULL);
}

static void pair_close(struct pair *p)
{
	canal_engine_close(p->fake_e);
	canal_engine_close(p->e);
	job_rmdir(p->dir);
}

static void fake_send(struct pair *p, const unsigned char *pkt, size_t n)
{
	struct iovec v = { (void *)pkt, n };
	int err;
	while ((err = p->fake->ops->send(p->fake, &v, 1, n)) == -EAGAIN)
		canal_engine_progress(p->e);
	CHECK_EQ(err, 0);
}

/* Progress rank 0 until its gate to 1 fails (10 s at most): the gate's
 * error must be -EPROTO naming peer 1. */
static void expect_proto(struct pair *p, const char *what)
{
	uint64_t deadline = canal_now_ns() + 10ull * 1000 * 1000 * 1000;
	while (!p->e->gates[1].error && canal_now_ns() < deadline) {
		canal_engine_progress(p->e);
		/* the fake's side moves too (UCX's rendezvous needs both
		 * workers); what rank 0 sends it is dropped */
		const unsigned char *pkt;
		size_t len;
		if (p->fake->ops->recv(p->fake, &pkt, &len) > 0)
			p->fake->ops->release(p->fake);
	}
	char why[160] = "";
	int gerr = canal_engine_gate_error(p->e, 1, why, sizeof why);
	if (gerr != -EPROTO || !strstr(why, "peer 1")) {
		fprintf(stderr, "%s: gate error %d \"%s\"\n", what, gerr, why);
		abort();
	}
	printf("%s: -EPROTO (%s)\n", what, why);
}

/* The first piece of kind `kind` rank 0 sends the fake (10 s at most),
 * progressing rank 0 meanwhile; other pieces are dropped. */
static struct canal__piece_hdr fake_wait_piece(struct pair *p, unsigned kind)
{
	uint64_t deadline = canal_now_ns() + 10ull * 1000 * 1000 * 1000;
	while (canal_now_ns() < deadline) {
		canal_engine_progress(p->e);
		const unsigned char *pkt;
		size_t len;
		int r = p->fake->ops->recv(p->fake, &pkt, &len);
		CHECK(r >= 0);
		if (r == 0)
			continue;
		struct canal__piece_hdr found = { 0 };
		for (size_t off = 0; off < len;) {
			struct canal__piece_hdr h;
			unsigned hl = canal__piece_decode(pkt + off, len - off, &h);
			CHECK(hl > 0);
			if (h.kind == kind && !found.kind)
				found = h;
			off += hl + (canal__piece_has_payload(h.kind) ? h.len : 0);
		}
		p->fake->ops->release(p->fake);
		if (found.kind)
			return found;
	}
	fprintf(stderr, "no piece of kind %u from rank 0\n", kind);
	abort();
}

/* The RTS of rank 0's bulk send, read raw by the fake: its cookie. */
static uint64_t fake_read_rts(struct pair *p)
{
	struct canal__piece_hdr h = fake_wait_piece(p, PIECE_RTS);
	CHECK(h.flags & PIECE_FLAG_BULK);
	return h.a;
}

#define BIG ((size_t)100000)

/* A FIN (or an RTR) for a send whose data goes by bulk transfer. */
static void control_for_bulk_send(unsigned kind)
{
	struct pair p;
	pair_open(&p, "ucx");
	static unsigned char buf[BIG];
	struct canal_engine_req *s;
	CHECK_EQ(canal_engine_isend(p.e, 1, 2, buf, BIG, 0, &s), 0);
	uint64_t cookie = fake_read_rts(&p);
	struct canal__piece_hdr h = { .kind = (uint8_t)kind, .a = cookie,
				      .b = 1ull << 32 };
	unsigned char pkt[64];
	size_t n = canal__piece_encode(&h, pkt);
	fake_send(&p, pkt, n);
	expect_proto(&p, kind == PIECE_FIN ? "FIN for a bulk send"
					   : "RTR for a bulk send");
	CHECK_EQ(canal_engine_wait(p.e, s, NULL), -EPROTO);
	pair_close(&p);
}

/* The fake announces len bytes (RTS, bulk flag) and sends sent bytes by
 * bulk transfer; rank 0 receives into a buffer of cap bytes. */
static void bulk_of_length(size_t len, size_t sent, size_t cap)
{
	struct pair p;
	pair_open(&p, "ucx");
	static unsigned char out[4 * BIG], in[4 * BIG];
	CHECK(sent <= sizeof out && cap <= sizeof in);
	memset(out, 'q', sent);
	const uint64_t id = 7;
	struct canal__piece_hdr h = { .kind = PIECE_RTS,
				      .flags = PIECE_FLAG_BULK,
				      .tag = 3, .seq = 0,
				      .len = (uint32_t)len, .a = id };
	unsigned char pkt[64];
	size_t n = canal__piece_encode(&h, pkt);
	fake_send(&p, pkt, n);
	void *bh;
	CHECK_EQ(p.fake->ops->bulk_send(p.fake, id, out, sent, &bh), 0);
	struct canal_engine_req *r;
	int err = canal_engine_irecv(p.e, 1, 3, in, cap, &r);
	char what[96];
	snprintf(what, sizeof what, "bulk of %zu bytes for an RTS of %zu", sent,
		 len);
	expect_proto(&p, what);
	if (err == 0)
		CHECK_EQ(canal_engine_wait(p.e, r, NULL), -EPROTO);
	else
		CHECK_EQ(err, -EPROTO);
	p.fake->ops->bulk_cancel(p.fake, bh);
	pair_close(&p);
}

/* shm and TCP have no bulk: an RTS with the flag is refused on arrival,
 * and a receive posted after it fails instead of waiting for ever. */
static void bulk_rts_without_bulk(const char *driver)
{
	struct pair p;
	pair_open(&p, driver);
	struct canal__piece_hdr h = { .kind = PIECE_RTS,
				      .flags = PIECE_FLAG_BULK,
				      .tag = 1, .seq = 0,
				      .len = (uint32_t)BIG, .a = 1ull << 32 };
	unsigned char pkt[64];
	size_t n = canal__piece_encode(&h, pkt);
	fake_send(&p, pkt, n);
	char what[64];
	snprintf(what, sizeof what, "%s: RTS with the bulk flag", driver);
	expect_proto(&p, what);
	static unsigned char in[BIG];
	struct canal_engine_req *r;
	int err = canal_engine_irecv(p.e, 1, 1, in, sizeof in, &r);
	if (err == 0)
		err = canal_engine_wait(p.e, r, NULL);
	CHECK_EQ(err, -EPROTO);
	pair_close(&p);
}

/* The driver refuses a bulk send (its link broke under it): the gate
 * fails, and the send's request completes with that error, once: a plain
 * isend reports it (at once or from its wait); a pack with a bulk
 * piece ends and its wait reports it (the piece, completed by the gate's
 * failure, used to be freed and counted out of its pack a second time:
 * the pack never completed). */
static int refuse_bulk(struct canal__driver *d, uint64_t id, const void *buf,
		       size_t len, void **h)
{
	(void)id, (void)buf, (void)len, (void)h;
	snprintf(d->why, sizeof d->why, "bulk send refused (test)");
	return -ECONNRESET;
}

static void bulk_send_fails(bool pack)
{
	struct pair p;
	pair_open(&p, "ucx");
	struct canal__driver *d = p.e->gates[1].drv;
	static struct canal__driver_ops ops;
	const struct canal__driver_ops *real = d->ops;
	ops = *real;
	ops.bulk_send = refuse_bulk;
	d->ops = &ops;
	static unsigned char buf[BIG];
	struct canal_engine_req *r;
	if (pack) {
		struct canal_engine_pack *k;
		CHECK_EQ(canal_engine_pack_begin(p.e, 1, 9, &k), 0);
		CHECK_EQ(canal_engine_pack(k, "hdr", 3, 0), 0);
		CHECK_EQ(canal_engine_pack(k, buf, BIG, 0), 0);
		int err = canal_engine_pack_end(k, &r);
		if (err == 0)
			CHECK_EQ(canal_engine_wait(p.e, r, NULL), -ECONNRESET);
		else
			CHECK_EQ(err, -ECONNRESET);
	} else {
		int err = canal_engine_isend(p.e, 1, 9, buf, BIG, 0, &r);
		if (err == 0)
			err = canal_engine_wait(p.e, r, NULL);
		CHECK_EQ(err, -ECONNRESET);
	}
	char why[160] = "";
	CHECK_EQ(canal_engine_gate_error(p.e, 1, why, sizeof why), -ECONNRESET);
	CHECK(strstr(why, "refused") != NULL);
	/* the session goes on: a request table and cache still whole */
	for (int i = 0; i < 64; i++) {
		struct canal_engine_req *q;
		CHECK_EQ(canal_engine_isend(p.e, 1, 9, buf, 8, 0, &q), -ECONNRESET);
	}
	printf("bulk send refused by the driver (%s): %s\n",
	       pack ? "pack" : "isend", why);
	d->ops = real;
	pair_close(&p);
}

/* A peer that ignores credits and floods requests to send (RTS pieces,
 * no data) for messages nobody receives yet: each costs the receiver an
 * allocation, so they count against the same cut-off as unexpected eager
 * data (twice the credit window): the gate fails with -EPROTO instead of
 * the receiver's memory growing without end. Over shm, packets of as
 * many RTS pieces as fit. */
static void rts_flood(void)
{
	struct pair p;
	pair_open(&p, "shm");
	enum { PER_PACKET = 2000 };
	static unsigned char pkt[PER_PACKET * 32];
	uint32_t seq = 0;
	/* a well-behaved sender's credits allow 2 MiB / 256 B = 8192 of
	 * them: send up to 4x that */
	for (int k = 0; k < 4 * 5 && !p.e->gates[1].error; k++) {
		size_t n = 0;
		for (int i = 0; i < PER_PACKET; i++) {
			struct canal__piece_hdr h = { .kind = PIECE_RTS,
						      .tag = 5, .seq = seq++,
						      .len = 1u << 20,
						      .a = 1ull << 32 };
			n += canal__piece_encode(&h, pkt + n);
		}
		fake_send(&p, pkt, n);
		canal_engine_progress(p.e);
	}
	expect_proto(&p, "a flood of requests to send");
	char why[160];
	canal_engine_gate_error(p.e, 1, why, sizeof why);
	CHECK(strstr(why, "beyond the credit window") != NULL);
	pair_close(&p);
}

static void thresh_case(bool user_thresh)
{
	if (user_thresh)
		setenv("UCX_RNDV_THRESH", "65536", 1);
	else
		unsetenv("UCX_RNDV_THRESH");
	struct pair p;
	pair_open(&p, "ucx");
	const struct canal__driver_caps *c = &p.e->gates[1].drv->caps;
	if (user_thresh) {
		CHECK(!c->bulk);
		CHECK(c->eager_max > 512 * 1024);
	} else {
		CHECK(c->bulk);
		CHECK_EQ(c->bulk_min, 8448u);
		CHECK(c->eager_max < c->bulk_min);
	}
	printf("UCX_RNDV_THRESH %s: bulk %s, eager up to %zu B\n",
	       user_thresh ? "set" : "unset", c->bulk ? "on" : "off",
	       c->eager_max);
	pair_close(&p);
	unsetenv("UCX_RNDV_THRESH");
}

/* shm's rendezvous modes meet (CANAL_ENGINE_SHM_RNDV): a receiver that
 * will not read answers an RTS carrying an address with RTR + NOREAD; a
 * reading sender that gets it stops sending its address and goes eager up
 * to the ring's 64 KiB on that gate. */
static void shm_noread(void)
{
	enum { N = 20000 }; /* above the read's 8 KiB eager size, below 64 KiB */
	static unsigned char buf[N];
	struct pair p;
	/* A ring receiver, an RTS with an address. */
	setenv("CANAL_ENGINE_SHM_RNDV", "ring", 1);
	pair_open(&p, "shm");
	CHECK_EQ(p.e->gates[1].drv->caps.eager_max, (size_t)65536);
	struct canal__piece_hdr h = { .kind = PIECE_RTS, .tag = 1, .seq = 0,
				      .len = N, .a = 5, .b = (uintptr_t)buf };
	unsigned char pkt[64];
	fake_send(&p, pkt, canal__piece_encode(&h, pkt));
	struct canal_engine_req *r;
	CHECK_EQ(canal_engine_irecv(p.e, 1, 1, buf, N, &r), 0);
	struct canal__piece_hdr rtr = fake_wait_piece(&p, PIECE_RTR);
	CHECK_EQ(rtr.a, (uint64_t)5);
	CHECK(rtr.flags & PIECE_FLAG_NOREAD);
	pair_close(&p);
	printf("shm: a ring receiver answers an address with NOREAD\n");

	/* A reading sender told NOREAD. */
	setenv("CANAL_ENGINE_SHM_RNDV", "read", 1);
	pair_open(&p, "shm");
	struct canal__driver_caps *c = &p.e->gates[1].drv->caps;
	CHECK_EQ(c->eager_max, (size_t)8192);
	CHECK(c->rts_address);
	CHECK_EQ(canal_engine_isend(p.e, 1, 1, buf, N, 0, &r), 0);
	struct canal__piece_hdr rts = fake_wait_piece(&p, PIECE_RTS);
	CHECK_EQ(rts.len, (uint32_t)N);
	CHECK_EQ(rts.b, (uint64_t)(uintptr_t)buf);
	struct canal__piece_hdr no = { .kind = PIECE_RTR, .flags = PIECE_FLAG_NOREAD,
				       .a = rts.a, .b = 7 };
	fake_send(&p, pkt, canal__piece_encode(&no, pkt));
	(void)fake_wait_piece(&p, PIECE_DATA);
	CHECK_EQ(c->eager_max, (size_t)65536);
	CHECK(!c->rts_address);
	struct canal_engine_req *r2;
	CHECK_EQ(canal_engine_isend(p.e, 1, 1, buf, N, 0, &r2), 0);
	struct canal__piece_hdr eager = fake_wait_piece(&p, PIECE_EAGER);
	CHECK_EQ(eager.len, (uint32_t)N);
	CHECK(!p.e->gates[1].error);
	pair_close(&p);
	printf("shm: a reading sender told NOREAD goes eager to 64 KiB\n");

	/* A read that fails for another reason (here EFAULT: an address the
	 * peer does not map) also answers NOREAD, and reading goes on. */
	pair_open(&p, "shm");
	struct canal__piece_hdr bad = { .kind = PIECE_RTS, .tag = 1, .seq = 0,
					.len = N, .a = 13, .b = 8 };
	fake_send(&p, pkt, canal__piece_encode(&bad, pkt));
	CHECK_EQ(canal_engine_irecv(p.e, 1, 1, buf, N, &r), 0);
	rtr = fake_wait_piece(&p, PIECE_RTR);
	CHECK_EQ(rtr.a, (uint64_t)13);
	CHECK(rtr.flags & PIECE_FLAG_NOREAD);
	CHECK(p.e->gates[1].drv->caps.read_peer_memory);
	pair_close(&p);
	printf("shm: a read that faults answers NOREAD\n");

	/* A plain RTR (the peer read nothing, but did not say NOREAD: an
	 * older peer) changes nothing; nor does an RTS without an address
	 * get NOREAD from a ring receiver. */
	pair_open(&p, "shm");
	c = &p.e->gates[1].drv->caps;
	CHECK_EQ(canal_engine_isend(p.e, 1, 1, buf, N, 0, &r), 0);
	rts = fake_wait_piece(&p, PIECE_RTS);
	struct canal__piece_hdr plain = { .kind = PIECE_RTR, .a = rts.a, .b = 7 };
	fake_send(&p, pkt, canal__piece_encode(&plain, pkt));
	(void)fake_wait_piece(&p, PIECE_DATA);
	CHECK_EQ(c->eager_max, (size_t)8192);
	CHECK(c->rts_address);
	pair_close(&p);
	setenv("CANAL_ENGINE_SHM_RNDV", "ring", 1);
	pair_open(&p, "shm");
	struct canal__piece_hdr bare = { .kind = PIECE_RTS, .tag = 1, .seq = 0,
					 .len = 100000, .a = 9, .b = 0 };
	fake_send(&p, pkt, canal__piece_encode(&bare, pkt));
	static unsigned char big[100000];
	CHECK_EQ(canal_engine_irecv(p.e, 1, 1, big, sizeof big, &r), 0);
	rtr = fake_wait_piece(&p, PIECE_RTR);
	CHECK_EQ(rtr.a, (uint64_t)9);
	CHECK(!(rtr.flags & PIECE_FLAG_NOREAD));
	pair_close(&p);
	unsetenv("CANAL_ENGINE_SHM_RNDV");
	printf("shm: a plain RTR changes nothing; an RTS without address gets no NOREAD\n");

	/* A reading receiver whose read the kernel refuses (seccomp, in a
	 * child) answers NOREAD and stops reading that peer. */
	fflush(NULL);
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		if (!job_refuse_reads())
			_exit(77);
		setenv("CANAL_ENGINE_SHM_RNDV", "read", 1);
		pair_open(&p, "shm");
		CHECK(p.e->gates[1].drv->caps.read_peer_memory);
		struct canal__piece_hdr a = { .kind = PIECE_RTS, .tag = 1, .seq = 0,
					      .len = N, .a = 11,
					      .b = (uintptr_t)buf };
		fake_send(&p, pkt, canal__piece_encode(&a, pkt));
		CHECK_EQ(canal_engine_irecv(p.e, 1, 1, buf, N, &r), 0);
		rtr = fake_wait_piece(&p, PIECE_RTR);
		CHECK_EQ(rtr.a, (uint64_t)11);
		CHECK(rtr.flags & PIECE_FLAG_NOREAD);
		CHECK(!p.e->gates[1].drv->caps.read_peer_memory);
		pair_close(&p);
		fflush(NULL);
		_exit(0);
	}
	int st;
	CHECK(waitpid(child, &st, 0) == child);
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		printf("shm: refused read SKIPPED (no seccomp filter here)\n");
	else
		CHECK_EQ(WEXITSTATUS(st), 0);
	if (WEXITSTATUS(st) == 0)
		printf("shm: a refused read answers NOREAD and stops reading\n");

	/* NOREAD means nothing on TCP (no reads, no address): ignored. */
	pair_open(&p, "tcp");
	c = &p.e->gates[1].drv->caps;
	size_t tcp_eager = c->eager_max;
	CHECK_EQ(canal_engine_isend(p.e, 1, 1, big, sizeof big, 0, &r), 0);
	rts = fake_wait_piece(&p, PIECE_RTS);
	CHECK_EQ(rts.b, (uint64_t)0);
	struct canal__piece_hdr no2 = { .kind = PIECE_RTR, .flags = PIECE_FLAG_NOREAD,
					.a = rts.a, .b = 7 };
	fake_send(&p, pkt, canal__piece_encode(&no2, pkt));
	(void)fake_wait_piece(&p, PIECE_DATA);
	CHECK_EQ(c->eager_max, tcp_eager);
	CHECK(!p.e->gates[1].error);
	pair_close(&p);
	printf("tcp: NOREAD ignored\n");
}

int main(void)
{
	/* Every gate connected at open: the fake writes through its driver
	 * from the start (lazy shm would give it one only once it sends). */
	setenv("CANAL_ENGINE_CONNECT", "eager", 1);
	/* The engine's own packets and bulk transfers over UCX, not UCX's
	 * matching (test_engine_ucx runs both). */
	setenv("CANAL_ENGINE_UCX_NATIVE", "0", 1);
	rts_flood();
	shm_noread();
	bulk_rts_without_bulk("shm");
	bulk_rts_without_bulk("tcp");
	if (!job_have_ucx()) {
		printf("test_engine_bulk: UCX cases SKIPPED: canal built without UCX\n");
		TEST_DONE("test_engine_bulk");
	}
	thresh_case(false);
	thresh_case(true);
	bulk_send_fails(true);
	bulk_send_fails(false);
	control_for_bulk_send(PIECE_FIN);
	control_for_bulk_send(PIECE_RTR);
	bulk_of_length(BIG, 2 * BIG, 3 * BIG); /* longer, buffer big enough */
	bulk_of_length(BIG, 2 * BIG, BIG / 2); /* longer, buffer smaller */
	bulk_of_length(2 * BIG, BIG, 3 * BIG); /* shorter */
	TEST_DONE("test_engine_bulk");
}
