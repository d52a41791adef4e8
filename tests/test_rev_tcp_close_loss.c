/* test_rev_tcp_close_loss - (review) a TCP peer that sends its last
 * messages, sees every send complete (canal_engine_wait() == 0), closes
 * its session normally and exits. engine.h: close "flushes what was
 * queued for living peers", and a closed gate "still hands out the eager
 * messages that arrived before it closed (a peer may send its last words
 * and exit)". The receiver must get every message.
 *
 * On TCP a send completes once the kernel took its bytes, and close()
 * closes the socket at once. The receiver returns credits (CREDIT pieces)
 * while it takes the messages; one that reaches the sender's socket after
 * its last progress round is unread data at close(): the kernel then
 * resets the connection (RST) and drops the bytes still in its send
 * buffer. The receiver loses messages that were reported sent and gets
 * -ECONNRESET instead. Bounded by the job's alarm. */
#include "engine_job.h"

#define M 64
#define SZ 32768

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	static unsigned char buf[M][SZ];
	static struct canal_engine_req *q[M];
	if (rank == 1) {
		for (int i = 0; i < M; i++) {
			memset(buf[i], (unsigned char)i, SZ);
			CHECK_EQ(canal_engine_isend(e, 0, 1, buf[i], SZ, 0, &q[i]), 0);
		}
		for (int i = 0; i < M; i++)
			CHECK_EQ(canal_engine_wait(e, q[i], NULL), 0);
		return 0; /* job_run closes the session normally */
	}
	for (int i = 0; i < M; i++)
		CHECK_EQ(canal_engine_irecv(e, 1, 1, buf[i], SZ, &q[i]), 0);
	usleep(100000); /* a receiver a little late: bytes in flight */
	int got = 0, err = 0;
	for (int i = 0; i < M; i++) {
		int r = canal_engine_wait(e, q[i], NULL);
		if (r == 0 && buf[i][0] == (unsigned char)i && buf[i][SZ - 1] == (unsigned char)i)
			got++;
		else if (!err)
			err = r;
	}
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
	int rounds = 40, bad = 0;
	for (int i = 0; i < rounds; i++) {
		struct job j = { 2, "tcp", "default", 30, -1, NULL };
		if (job_run(&j, body, NULL))
			bad++;
	}
	printf("%d of %d rounds lost messages\n", bad, rounds);
	fflush(stdout);
	CHECK_EQ(bad, 0);
	TEST_DONE("test_rev_tcp_close_loss");
}
