/* close_loss.h - the shared parts of the tests where a TCP sender closes
 * its session right after its last sends complete (test_rev_tcp_close_loss,
 * test_engine_close_reset): rank 1 sends m messages of sz bytes (message
 * i filled with the byte i) to rank 0 on tag 1 and waits for them; rank 0
 * must get every one. Messages are the rows of bufs (m rows of sz). */
#ifndef CANAL_TEST_CLOSE_LOSS_H
#define CANAL_TEST_CLOSE_LOSS_H

#include "engine_job.h"

/* Rank 1: send the m messages, wait until each is reported sent. */
static inline void close_loss_send(struct canal_engine *e, unsigned char *bufs,
				   struct canal_engine_req **q, int m,
				   size_t sz)
{
	for (int i = 0; i < m; i++) {
		memset(bufs + (size_t)i * sz, (unsigned char)i, sz);
		CHECK_EQ(canal_engine_isend(e, 0, 1, bufs + (size_t)i * sz, sz,
					    0, &q[i]),
			 0);
	}
	for (int i = 0; i < m; i++)
		CHECK_EQ(canal_engine_wait(e, q[i], NULL), 0);
}

/* Rank 0: post the m receives. */
static inline void close_loss_post(struct canal_engine *e, unsigned char *bufs,
				   struct canal_engine_req **q, int m,
				   size_t sz)
{
	for (int i = 0; i < m; i++)
		CHECK_EQ(canal_engine_irecv(e, 1, 1, bufs + (size_t)i * sz, sz,
					    &q[i]),
			 0);
}

/* Rank 0: wait for the m receives; 0 when every message arrived whole,
 * else 1 after saying what arrived and why the rest did not. */
static inline int close_loss_check(struct canal_engine *e, unsigned char *bufs,
				   struct canal_engine_req **q, int m,
				   size_t sz)
{
	int got = 0, err = 0;
	for (int i = 0; i < m; i++) {
		const unsigned char *b = bufs + (size_t)i * sz;
		int r = canal_engine_wait(e, q[i], NULL);
		if (r == 0 && b[0] == (unsigned char)i &&
		    b[sz - 1] == (unsigned char)i)
			got++;
		else if (!err)
			err = r;
	}
	if (got == m)
		return 0;
	char why[160];
	canal_engine_gate_error(e, 1, why, sizeof why);
	fprintf(stderr,
		"rank 0: %d of %d messages the peer saw sent arrived; "
		"first error %d (%s); gate: \"%s\"\n",
		got, m, err, strerror(-err), why);
	return 1;
}

/* Run rounds two-rank TCP jobs of body; every one must lose nothing. */
static inline void close_loss_rounds(int rounds, job_fn body)
{
	int bad = 0;
	for (int i = 0; i < rounds; i++) {
		struct job j = { 2, "tcp", "default", 30, -1, NULL };
		if (job_run(&j, body, NULL))
			bad++;
	}
	printf("%d of %d rounds lost messages\n", bad, rounds);
	fflush(stdout);
	CHECK_EQ(bad, 0);
}

#endif
