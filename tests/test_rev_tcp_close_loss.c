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
#include "close_loss.h"

#define M 64
#define SZ 32768

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	static unsigned char buf[M][SZ];
	static struct canal_engine_req *q[M];
	if (rank == 1) {
		close_loss_send(e, &buf[0][0], q, M, SZ);
		return 0; /* job_run closes the session normally */
	}
	close_loss_post(e, &buf[0][0], q, M, SZ);
	usleep(100000); /* a receiver a little late: bytes in flight */
	return close_loss_check(e, &buf[0][0], q, M, SZ);
}

int main(void)
{
	close_loss_rounds(40, body);
	TEST_DONE("test_rev_tcp_close_loss");
}
