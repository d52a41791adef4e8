/* test_engine_close_reset - a TCP sender closes its session while its
 * last messages are still in the kernel, unacknowledged, and while the
 * receiver is sending it messages it will never read (here: small ones
 * on a tag it never receives; in a real job, credits). A socket closed
 * with unread input is reset (RST), and the reset drops what the kernel
 * had not delivered: the receiver lost messages the sender had seen
 * complete (test_rev_express_flood failed this way under load in CI,
 * 2026-11-30). close must wait until the peer's kernel has acknowledged
 * every byte (driver.h delivered()). Every round, every message must
 * arrive. Bounded by the job's alarm and a round count. */
#include "engine_job.h"

#define M 48
#define SZ 32768
#define NOISE 40

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	static unsigned char buf[M][SZ];
	static struct canal_engine_req *q[M], *nq[NOISE];
	static unsigned char noise[NOISE][16];
	if (rank == 1) {
		for (int i = 0; i < M; i++) {
			memset(buf[i], (unsigned char)i, SZ);
			CHECK_EQ(canal_engine_isend(e, 0, 1, buf[i], SZ, 0, &q[i]), 0);
		}
		for (int i = 0; i < M; i++)
			CHECK_EQ(canal_engine_wait(e, q[i], NULL), 0);
		return 0; /* job_run closes the session: tag 2 left unread */
	}
	for (int i = 0; i < M; i++)
		CHECK_EQ(canal_engine_irecv(e, 1, 1, buf[i], SZ, &q[i]), 0);
	/* Unread input for the sender while it finishes and closes; the
	 * receiver reads nothing meanwhile, so the sender's last bytes wait
	 * in its kernel. */
	for (int i = 0; i < NOISE; i++) {
		CHECK_EQ(canal_engine_isend(e, 1, 2, noise[i], sizeof noise[i],
					    CANAL_ENGINE_EXPRESS, &nq[i]),
			 0);
		usleep(1000);
	}
	int got = 0, err = 0;
	for (int i = 0; i < M; i++) {
		int r = canal_engine_wait(e, q[i], NULL);
		if (r == 0 && buf[i][0] == (unsigned char)i &&
		    buf[i][SZ - 1] == (unsigned char)i)
			got++;
		else if (!err)
			err = r;
	}
	for (int i = 0; i < NOISE; i++)
		canal_engine_wait(e, nq[i], NULL); /* the peer may be gone */
	if (got != M) {
		char why[160];
		canal_engine_gate_error(e, 1, why, sizeof why);
		fprintf(stderr,
			"rank 0: %d of %d messages the peer saw sent arrived; "
			"first error %d (%s); gate: \"%s\"\n",
			got, M, err, strerror(-err), why);
		return 1;
	}
	return 0;
}

int main(void)
{
	int rounds = 30, bad = 0;
	for (int i = 0; i < rounds; i++) {
		struct job j = { 2, "tcp", "default", 30, -1, NULL };
		if (job_run(&j, body, NULL))
			bad++;
	}
	printf("%d of %d rounds lost messages\n", bad, rounds);
	fflush(stdout);
	CHECK_EQ(bad, 0);
	TEST_DONE("test_engine_close_reset");
}
