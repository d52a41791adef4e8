/* test_engine_flow - flow control: more than 2000 sends pending to one
 * peer (together far beyond the credit window) while the receiver posts
 * nothing for a while, then receives them all: no deadlock, nothing lost,
 * in order. Both directions at once (each side floods the other), on both
 * drivers and both strategies; the same with 9000 rendezvous sends (more
 * than the RTS credit allows). */
#include "engine_job.h"

#define N 2500
#define SZ 4000 /* 2500 x 4 KB = 10 MB, five credit windows */

/* Neither side leaves while the other may still need it. */
static void closing_handshake(struct canal_engine *e, int peer)
{
	struct canal_engine_req *q;
	int one = 1;
	CHECK_EQ(canal_engine_isend(e, peer, 4, &one, sizeof one, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	CHECK_EQ(canal_engine_irecv(e, peer, 4, &one, sizeof one, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	int peer = 1 - rank;
	unsigned char *out = malloc((size_t)N * SZ), *in = malloc((size_t)N * SZ);
	struct canal_engine_req **s = calloc(N, sizeof *s), **r = calloc(N, sizeof *r);
	CHECK(out && in && s && r);
	for (int i = 0; i < N; i++) {
		memset(out + (size_t)i * SZ, (unsigned char)(i * 7 + rank), SZ);
		CHECK_EQ(canal_engine_isend(e, peer, 3, out + (size_t)i * SZ, SZ, 0, &s[i]), 0);
	}
	/* Let the peer's flood pile up against our credit window. */
	for (int k = 0; k < 2000; k++)
		canal_engine_progress(e);
	usleep(100 * 1000);
	for (int i = 0; i < N; i++)
		CHECK_EQ(canal_engine_irecv(e, peer, 3, in + (size_t)i * SZ, SZ, &r[i]), 0);
	for (int i = 0; i < N; i++) {
		struct canal_engine_status st;
		CHECK_EQ(canal_engine_wait(e, r[i], &st), 0);
		CHECK_EQ(st.len, SZ);
		unsigned char want = (unsigned char)(i * 7 + peer);
		for (int k = 0; k < SZ; k++)
			CHECK_EQ(in[(size_t)i * SZ + (size_t)k], want);
	}
	for (int i = 0; i < N; i++)
		CHECK_EQ(canal_engine_wait(e, s[i], NULL), 0);
	closing_handshake(e, peer);
	free(out);
	free(in);
	free(s);
	free(r);
	return 0;
}

/* More rendezvous sends pending than RTS credit allows (an RTS costs
 * CANAL__RTS_COST: 8192 per 2 MiB window): 9000 sends of 70 000+ bytes
 * (above both drivers' eager size) each way while the receiver posts
 * nothing for a while; then all arrive, in order (lengths differ by
 * message), without deadlock and without the receiver cutting the sender
 * off. One buffer serves every send (rendezvous sends are not copied) and
 * one every receive. */
static int rndv_flood(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	enum { M = 9000, B = 70000 };
	int peer = 1 - rank;
	unsigned char *out = malloc(B + 8), *in = malloc(B + 8);
	struct canal_engine_req **s = calloc(M, sizeof *s);
	CHECK(out && in && s);
	memset(out, 0x5a + rank, B + 8);
	for (int i = 0; i < M; i++)
		CHECK_EQ(canal_engine_isend(e, peer, 8, out, B + (size_t)(i % 7), 0,
					    &s[i]),
			 0);
	for (int k = 0; k < 2000; k++)
		canal_engine_progress(e);
	usleep(100 * 1000);
	for (int i = 0; i < M; i++) {
		struct canal_engine_req *r;
		struct canal_engine_status st;
		CHECK_EQ(canal_engine_irecv(e, peer, 8, in, B + 8, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, &st), 0);
		CHECK_EQ(st.len, B + (size_t)(i % 7));
		CHECK_EQ(in[B - 1], 0x5a + peer);
	}
	for (int i = 0; i < M; i++)
		CHECK_EQ(canal_engine_wait(e, s[i], NULL), 0);
	closing_handshake(e, peer);
	free(out);
	free(in);
	free(s);
	return 0;
}

/* An urgent tag overtakes a flow blocked on credit: rank 0 queues 600
 * messages of 4 KB on tag 5 (beyond the 2 MiB window: the last ones wait
 * for credit), then one on tag 6, marked urgent. Rank 1 receives tag 6
 * before it posts any receive on tag 5: it gets it only if the urgent
 * message went ahead of the blocked ones (else the job hangs and its
 * alarm fails the test). A bad tag is refused. */
static int urgent_body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	enum { M = 600, S = 4096 };
	int peer = 1 - rank;
	struct canal_engine_req *r;
	int v = 42;
	CHECK_EQ(canal_engine_set_urgent(e, CANAL_ENGINE_TAG_MAX + 1, 1), -EINVAL);
	CHECK_EQ(canal_engine_set_urgent(NULL, 6, 1), -EINVAL);
	if (rank == 0) {
		unsigned char *b = calloc(M, S);
		struct canal_engine_req **q = calloc(M, sizeof *q);
		CHECK(b && q);
		for (int i = 0; i < M; i++)
			CHECK_EQ(canal_engine_isend(e, peer, 5, b + (size_t)i * S, S, 0, &q[i]), 0);
		CHECK_EQ(canal_engine_set_urgent(e, 6, 1), 0);
		CHECK_EQ(canal_engine_isend(e, peer, 6, &v, sizeof v, 0, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		for (int i = 0; i < M; i++)
			CHECK_EQ(canal_engine_wait(e, q[i], NULL), 0);
		CHECK_EQ(canal_engine_irecv(e, peer, 7, &v, sizeof v, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		free(b);
		free(q);
		return 0;
	}
	int got = 0;
	CHECK_EQ(canal_engine_irecv(e, peer, 6, &got, sizeof got, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	CHECK_EQ(got, 42);
	unsigned char *b = malloc(S);
	for (int i = 0; i < M; i++) {
		CHECK_EQ(canal_engine_irecv(e, peer, 5, b, S, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	}
	free(b);
	CHECK_EQ(canal_engine_isend(e, peer, 7, &v, sizeof v, 0, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	return 0;
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp" };
	const char *strategies[] = { "default", "aggregate" };
	for (int d = 0; d < 2; d++)
		for (int k = 0; k < 2; k++) {
			struct job j = { 2, drivers[d], strategies[k], 60, -1, NULL };
			CHECK_EQ(job_run(&j, body, NULL), 0);
			printf("%s/%s: ok\n", drivers[d], strategies[k]);
			fflush(stdout);
		}
	for (int d = 0; d < 2; d++) {
		struct job j = { 2, drivers[d], "default", 120, -1, NULL };
		CHECK_EQ(job_run(&j, rndv_flood, NULL), 0);
		printf("%s: 9000 rendezvous sends pending: ok\n", drivers[d]);
		fflush(stdout);
	}
	for (int d = 0; d < 2; d++) {
		struct job j = { 2, drivers[d], "default", 20, -1, NULL };
		CHECK_EQ(job_run(&j, urgent_body, NULL), 0);
		printf("%s: urgent tag overtakes a blocked flow: ok\n", drivers[d]);
		fflush(stdout);
	}
	TEST_DONE("test_engine_flow");
}
