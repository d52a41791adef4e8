/* test_reveng4_data_behind_express - (review) the DATA of a rendezvous
 * must leave even when more than a strategy's look-ahead of EXPRESS
 * messages wait for credit ahead of it in the express queue.
 *
 *   rank 1 (sender)                          rank 0 (receiver)
 *   isend(BIG, 256 KiB): its RTS leaves      irecv(BIG): matches the RTS,
 *   isend(X, 64 KiB - 12, EXPRESS) x 32:       sends the RTR
 *     the 2 MiB credit window is spent       waits for BIG
 *   isend(X, 16 B, EXPRESS) x 200: wait      only then receives tag X
 *     for credit (the receiver frees it
 *     only as it takes tag X)
 *   the RTR arrives: BIG's DATA pieces
 *     queue behind those 200
 *
 * DATA costs no credit and its receive is posted (schedule/window.c,
 * send_data: it must never wait behind pieces waiting for credit), so it
 * must go past them. The strategies looked at most SCAN_LIMIT (64) pieces
 * into each queue: DATA behind 200 blocked pieces was never seen, BIG
 * never arrived, and the receiver never freed the credit the pieces ahead
 * waited for: a deadlock (before the fix: "BIG still pending after 5 s",
 * shm in ring mode and TCP, both strategies). Expected: BIG arrives whole,
 * then every tag X message in order. Bounded by deadlines and the job's
 * alarm. */
#include "engine_job.h"

#include <canal/channel.h>

#define BIG 5
#define X 6
#define BIG_LEN ((size_t)256 << 10)
#define FLOOD_LEN 65524 /* costs 65536 of credit (12-byte header) */
#define FLOOD_N 32	/* the 2 MiB window */
#define SMALL_N 200	/* beyond the look-ahead of 64 */

static void set_ring(int rank)
{
	(void)rank;
	/* shm: data by RTR and DATA through the ring, as on TCP (the read
	 * mode fetches it without DATA pieces) */
	setenv("CANAL_ENGINE_SHM_RNDV", "ring", 1);
}

static int sender(struct canal_engine *e)
{
	static unsigned char big[BIG_LEN], flood[FLOOD_LEN];
	for (size_t i = 0; i < BIG_LEN; i++)
		big[i] = (unsigned char)(i * 7 + 1);
	struct canal_engine_req *rb, *fq[FLOOD_N], *sq[SMALL_N];
	static uint32_t small[SMALL_N][4]; /* 16 bytes each, i first */
	CHECK_EQ(canal_engine_isend(e, 0, BIG, big, BIG_LEN, 0, &rb), 0);
	for (int i = 0; i < FLOOD_N; i++)
		CHECK_EQ(canal_engine_isend(e, 0, X, flood, FLOOD_LEN,
					    CANAL_ENGINE_EXPRESS, &fq[i]),
			 0);
	for (int i = 0; i < SMALL_N; i++) {
		small[i][0] = (uint32_t)i;
		CHECK_EQ(canal_engine_isend(e, 0, X, small[i], sizeof small[i],
					    CANAL_ENGINE_EXPRESS, &sq[i]),
			 0);
	}
	CHECK_EQ(canal_engine_wait(e, rb, NULL), 0);
	for (int i = 0; i < FLOOD_N; i++)
		CHECK_EQ(canal_engine_wait(e, fq[i], NULL), 0);
	for (int i = 0; i < SMALL_N; i++)
		CHECK_EQ(canal_engine_wait(e, sq[i], NULL), 0);
	/* stay until the receiver is done */
	int v;
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_irecv(e, 0, 9, &v, sizeof v, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	return 0;
}

static int receiver(struct canal_engine *e)
{
	static unsigned char big[BIG_LEN], flood[FLOOD_LEN];
	struct canal_engine_req *q;
	struct canal_engine_status st = { 0 };
	CHECK_EQ(canal_engine_irecv(e, 1, BIG, big, BIG_LEN, &q), 0);
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	int t;
	while ((t = canal_engine_test(e, q, &st)) == 0 &&
	       canal_now_ns() < deadline)
		;
	if (t != 1) {
		fprintf(stderr, "BIG still pending after 5 s (%d)\n", t);
		return 1;
	}
	CHECK_EQ(st.len, BIG_LEN);
	for (size_t i = 0; i < BIG_LEN; i++)
		CHECK_EQ(big[i], (unsigned char)(i * 7 + 1));
	for (int i = 0; i < FLOOD_N; i++) {
		CHECK_EQ(canal_engine_irecv(e, 1, X, flood, FLOOD_LEN, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, &st), 0);
		CHECK_EQ(st.len, (size_t)FLOOD_LEN);
	}
	for (int i = 0; i < SMALL_N; i++) {
		uint32_t v[4] = { 0 };
		CHECK_EQ(canal_engine_irecv(e, 1, X, v, sizeof v, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, &st), 0);
		CHECK_EQ(st.len, (size_t)16);
		CHECK_EQ(v[0], (uint32_t)i);
	}
	int v = 0;
	CHECK_EQ(canal_engine_isend(e, 1, 9, &v, sizeof v, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	return 0;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	return rank == 0 ? receiver(e) : sender(e);
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp" };
	const char *strategies[] = { "default", "aggregate" };
	for (int d = 0; d < 2; d++)
		for (int s = 0; s < 2; s++) {
			struct job j = { 2, drivers[d], strategies[s], 30, -1,
					 set_ring };
			CHECK_EQ(job_run(&j, body, NULL), 0);
			printf("%s/%s: ok\n", drivers[d], strategies[s]);
			fflush(stdout);
		}
	TEST_DONE("test_reveng4_data_behind_express");
}
