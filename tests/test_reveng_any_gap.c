/* test_reveng_any_gap - (review) an any-gate receive and a receive of one
 * gate on the same tag, with the flow's messages arriving out of order
 * (an EXPRESS message overtakes the one sent before it, which waits for
 * credit: legal, engine.h keeps the order of receives, not of arrivals).
 *
 *   rank 0: A = irecv(ANY_GATE, T)         rank 1: floods tag X until
 *           ... message 1 of (1, T)                1000 bytes of credit are
 *               arrives: unexpected                left; isend(T, 2000 B)
 *           B = irecv(1, T): takes number 0        waits for credit; then
 *           receives tag X: credit goes back       isend(T, 100 B, EXPRESS)
 *           message 0 arrives: B                   goes at once
 *
 * Message 1 is then the flow's next message (recv_next) and A waits for
 * exactly that, but nothing hands it over: arrivals go to an any-gate
 * receive only when the arrival itself is the next message (match.c,
 * canal__collect_arrive), and posting B, which moved the flow's next
 * number onto the waiting message 1, did not look at the any-gate
 * receives. A waited for ever (every later message of the flow too),
 * although every message had arrived. Before the fix: "A (any gate) still
 * pending after 3 s" on shm and on TCP. Expected: A gets message 1, B
 * message 0, each once. Bounded by deadlines and the job's alarm. */
#include "engine_job.h"

#include "../src/engine/internal.h"

#define T 5
#define X 6
#define FLOOD_BIG 65524 /* costs 65536 of credit (12-byte header) */
/* The flood: 31 messages of 65536 credit and one of 64536: 1000 bytes of
 * the 2 MiB credit window left. */
#define FLOOD_N 32
#define FLOOD_LAST 64524

static size_t flood_len(int i)
{
	return i < FLOOD_N - 1 ? FLOOD_BIG : FLOOD_LAST;
}

static void set_ring(int rank)
{
	(void)rank;
	/* shm's eager size is then 64 KiB, as TCP's */
	setenv("CANAL_ENGINE_SHM_RNDV", "ring", 1);
}

static int until_done(struct canal_engine *e, struct canal_engine_req *q,
		      struct canal_engine_status *st, const char *what)
{
	uint64_t deadline = canal_now_ns() + 3000000000ull;
	int t;
	while ((t = canal_engine_test(e, q, st)) == 0 &&
	       canal_now_ns() < deadline)
		;
	if (t == 0)
		fprintf(stderr, "%s still pending after 3 s\n", what);
	return t;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	static unsigned char flood[FLOOD_BIG];
	struct canal_engine_req *q;
	if (rank == 1) {
		struct canal_engine_req *fq[FLOOD_N], *m0, *m1;
		for (int i = 0; i < FLOOD_N; i++)
			CHECK_EQ(canal_engine_isend(e, 0, X, flood, flood_len(i),
						    0, &fq[i]),
				 0);
		static unsigned char zero[2000];
		memset(zero, '0', sizeof zero);
		CHECK_EQ(canal_engine_isend(e, 0, T, zero, sizeof zero, 0, &m0), 0);
		CHECK_EQ(canal_engine_isend(e, 0, T, "one", 4,
					    CANAL_ENGINE_EXPRESS, &m1),
			 0);
		CHECK_EQ(canal_engine_wait(e, m1, NULL), 0);
		for (int i = 0; i < FLOOD_N; i++)
			CHECK_EQ(canal_engine_wait(e, fq[i], NULL), 0);
		CHECK_EQ(canal_engine_wait(e, m0, NULL), 0);
		/* stay until rank 0 is done */
		int v;
		CHECK_EQ(canal_engine_irecv(e, 0, 9, &v, sizeof v, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		return 0;
	}
	static unsigned char a[4096], b[4096];
	struct canal_engine_req *ra, *rb;
	CHECK_EQ(canal_engine_irecv(e, CANAL_ENGINE_ANY_GATE, T, a, sizeof a, &ra), 0);
	/* Until the flood and message 1 are here (message 0 waits for
	 * credit at rank 1). */
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	while (e->gates[1].unexpected.n < FLOOD_N + 1 &&
	       canal_now_ns() < deadline)
		canal_engine_progress(e);
	CHECK_EQ(e->gates[1].unexpected.n, FLOOD_N + 1);
	CHECK_EQ(canal_engine_irecv(e, 1, T, b, sizeof b, &rb), 0);
	for (int i = 0; i < FLOOD_N; i++) {
		CHECK_EQ(canal_engine_irecv(e, 1, X, flood, sizeof flood, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	}
	struct canal_engine_status sa = { 0 }, sb = { 0 };
	int tb = until_done(e, rb, &sb, "B (gate 1)");
	int ta = until_done(e, ra, &sa, "A (any gate)");
	int bad = 0;
	if (tb != 1 || sb.len != 2000 || b[0] != '0' || b[1999] != '0') {
		fprintf(stderr, "B: %d, %zu bytes\n", tb, sb.len);
		bad = 1;
	}
	if (ta != 1 || sa.gate != 1 || sa.len != 4 || strcmp((char *)a, "one")) {
		fprintf(stderr, "A: %d, gate %d, %zu bytes\n", ta, sa.gate, sa.len);
		bad = 1;
	}
	int v = 0;
	CHECK_EQ(canal_engine_isend(e, 1, 9, &v, sizeof v, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	return bad;
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp" };
	int bad = 0;
	for (int d = 0; d < 2; d++) {
		struct job j = { 2, drivers[d], "default", 30, -1, set_ring };
		int b = job_run(&j, body, NULL);
		fprintf(stderr, "test_reveng_any_gap: %s: %s\n", drivers[d],
			b ? "FAILED" : "ok");
		bad |= b;
	}
	CHECK_EQ(bad, 0);
	TEST_DONE("test_reveng_any_gap");
}
