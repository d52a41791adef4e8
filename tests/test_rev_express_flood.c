/* test_rev_express_flood - (review) two ranks exchange many EXPRESS
 * messages both ways, every receive posted before any send. More express
 * messages than the credit window carries are queued on each side; the
 * CREDIT piece each side owes the other is queued behind them in the same
 * express queue. The strategies look at most SCAN_LIMIT (64) pieces deep
 * into a queue, so a CREDIT behind 64 credit-starved express pieces is
 * never sent: both sides wait for credit forever. Expected: every
 * message arrives (flow control must not deadlock when every receive is
 * posted). Bounded: each rank gives up after 20 s and reports. */
#include "engine_job.h"

#define N 4000
#define SZ 1024

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	int peer = 1 - rank;
	static unsigned char out[N][SZ], in[N][SZ];
	static struct canal_engine_req *rr[N], *sr[N];
	for (int i = 0; i < N; i++)
		CHECK_EQ(canal_engine_irecv(e, peer, 1, in[i], SZ, &rr[i]), 0);
	/* REV_NO_EXPRESS=1: the same exchange without EXPRESS (the control
	 * experiment: it passes) */
	unsigned flags = getenv("REV_NO_EXPRESS") ? 0 : CANAL_ENGINE_EXPRESS;
	for (int i = 0; i < N; i++) {
		memset(out[i], (unsigned char)i, SZ);
		CHECK_EQ(canal_engine_isend(e, peer, 1, out[i], SZ,
					    flags, &sr[i]),
			 0);
	}
	uint64_t deadline = canal_now_ns() + 20ull * 1000 * 1000 * 1000;
	int rdone = 0, sdone = 0;
	while ((rdone < N || sdone < N) && canal_now_ns() < deadline) {
		canal_engine_progress(e);
		while (rdone < N) {
			int t = canal_engine_test(e, rr[rdone], NULL);
			if (t == 0)
				break;
			CHECK_EQ(t, 1);
			CHECK_EQ(in[rdone][0], (unsigned char)rdone);
			rdone++;
		}
		while (sdone < N) {
			int t = canal_engine_test(e, sr[sdone], NULL);
			if (t == 0)
				break;
			CHECK_EQ(t, 1);
			sdone++;
		}
	}
	if (rdone < N || sdone < N) {
		fprintf(stderr,
			"rank %d: stuck after 20 s: %d/%d received, %d/%d sent\n",
			rank, rdone, N, sdone, N);
		_exit(1); /* requests left pending: close would report -EBUSY */
	}
	return 0;
}

int main(void)
{
	struct job j = { 2, "tcp", "default", 40, -1, NULL };
	CHECK_EQ(job_run(&j, body, NULL), 0);
	TEST_DONE("test_rev_express_flood");
}
