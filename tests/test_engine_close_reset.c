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
#include "close_loss.h"

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
		close_loss_send(e, &buf[0][0], q, M, SZ);
		return 0; /* job_run closes the session: tag 2 left unread */
	}
	close_loss_post(e, &buf[0][0], q, M, SZ);
	/* Unread input for the sender while it finishes and closes; the
	 * receiver reads nothing meanwhile, so the sender's last bytes wait
	 * in its kernel. */
	for (int i = 0; i < NOISE; i++) {
		CHECK_EQ(canal_engine_isend(e, 1, 2, noise[i], sizeof noise[i],
					    CANAL_ENGINE_EXPRESS, &nq[i]),
			 0);
		usleep(1000);
	}
	int r = close_loss_check(e, &buf[0][0], q, M, SZ);
	for (int i = 0; i < NOISE; i++)
		canal_engine_wait(e, nq[i], NULL); /* the peer may be gone */
	return r;
}

int main(void)
{
	close_loss_rounds(30, body);
	TEST_DONE("test_engine_close_reset");
}
