/* test_engine_crash - a peer killed with SIGKILL: the requests of its gate
 * complete with -ECONNRESET and gate_error names the peer; later sends to
 * it fail at once; the other gates go on unaffected. Three processes:
 * rank 2 sends one message and kills itself; rank 0 has a receive from 2
 * pending and keeps exchanging with rank 1. On shm the death is seen by
 * the pidfd watch (the issue asks for 1 s; the time is printed, and the
 * check allows 10 s so a loaded CI machine does not fail it), on TCP by
 * the connection reset. */
#include "engine_job.h"

#include <canal/channel.h>

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_engine_req *r, *s;
	uint64_t t;
	if (rank == 2) {
		t = canal_now_ns();
		CHECK_EQ(canal_engine_isend(e, 0, 1, &t, sizeof t, 0, &s), 0);
		CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
		raise(SIGKILL);
		return 1;
	}
	if (rank == 1) {
		/* ping-pong with 0 until it says stop */
		for (;;) {
			int v;
			CHECK_EQ(canal_engine_irecv(e, 0, 2, &v, sizeof v, &r), 0);
			CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
			CHECK_EQ(canal_engine_isend(e, 0, 2, &v, sizeof v, 0, &s), 0);
			CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
			if (v < 0)
				return 0;
		}
	}
	/* rank 0 */
	uint64_t sent_at = 0, x = 0;
	CHECK_EQ(canal_engine_irecv(e, 2, 1, &sent_at, sizeof sent_at, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	/* rank 2 is dying or dead: a receive from it must fail */
	struct canal_engine_req *dead;
	int rounds = 0, err = canal_engine_irecv(e, 2, 1, &x, sizeof x, &dead);
	/* 0 (pending), or the gate is already known closed */
	CHECK(err == 0 || err == -ECONNRESET);
	while (err == 0) {
		int v = rounds;
		CHECK_EQ(canal_engine_isend(e, 1, 2, &v, sizeof v, 0, &s), 0);
		CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
		CHECK_EQ(canal_engine_irecv(e, 1, 2, &v, sizeof v, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		CHECK_EQ(v, rounds);
		rounds++;
		err = canal_engine_test(e, dead, NULL);
		CHECK(err <= 0);
		CHECK(canal_now_ns() - sent_at < 10ull * 1000 * 1000 * 1000);
	}
	double ms = (double)(canal_now_ns() - sent_at) / 1e6;
	CHECK_EQ(err, -ECONNRESET);
	char why[160];
	CHECK_EQ(canal_engine_gate_error(e, 2, why, sizeof why), -ECONNRESET);
	CHECK(strstr(why, "peer 2") != NULL);
	printf("  %s: gate 2 closed %.1f ms after its last send (%d ping-pongs with rank 1 meanwhile): %s\n",
	       canal_engine_driver(e), ms, rounds, why);
	CHECK_EQ(canal_engine_isend(e, 2, 1, &x, sizeof x, 0, &s), -ECONNRESET);
	CHECK_EQ(canal_engine_irecv(e, 2, 1, &x, sizeof x, &s), -ECONNRESET);
	CHECK_EQ(canal_engine_gate_error(e, 1, NULL, 0), 0);
	/* An any-gate receive nobody will answer: pending while rank 1
	 * lives, failed once every gate is closed. */
	struct canal_engine_req *any;
	CHECK_EQ(canal_engine_irecv(e, CANAL_ENGINE_ANY_GATE, 7, &x, sizeof x, &any), 0);
	CHECK_EQ(canal_engine_test(e, any, NULL), 0);
	int stop = -1;
	CHECK_EQ(canal_engine_isend(e, 1, 2, &stop, sizeof stop, 0, &s), 0);
	CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
	CHECK_EQ(canal_engine_irecv(e, 1, 2, &stop, sizeof stop, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	/* rank 1 exits after its last send: both gates close */
	CHECK_EQ(canal_engine_wait(e, any, NULL), -ECONNRESET);
	return 0;
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp" };
	for (int d = 0; d < 2; d++) {
		struct job j = { 3, drivers[d], "default", 60, 2, NULL };
		CHECK_EQ(job_run(&j, body, NULL), 0);
		printf("%s: ok\n", drivers[d]);
		fflush(stdout);
	}
	TEST_DONE("test_engine_crash");
}
