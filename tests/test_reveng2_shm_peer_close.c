/* test_reveng2_shm_peer_close - (review) a peer that closes its session
 * while its process lives on is gone for the other side, on shm as on TCP.
 *
 * engine.h: a peer that is gone closes its gate, its pending requests fail
 * with -ECONNRESET and later operations on it fail at once; messages that
 * arrived whole before still go to their receives. On TCP a peer's close
 * is seen as the connection's end ("connection closed by peer"). On shm
 * only the peer's death was watched (a pidfd): a peer that closed its
 * session and went on computing (or waited for something else) was never
 * seen as gone, and the other side's receives (and rendezvous sends) on
 * that gate waited for ever. Before the fix: "receive after close still
 * pending after 8 s" on shm (connect lazy and eager), ok on TCP.
 *
 * Cases (rank 1 closes its session, then waits, alive, until rank 0 says
 * it is done, through a pipe):
 *  A: rank 1 sends "last" and closes; rank 0 receives it (what arrived
 *     before the close is kept), then a second receive fails with
 *     -ECONNRESET, and a later isend fails at once.
 *  B: rank 1 closes without ever sending; rank 0's rendezvous send (no
 *     receive will ever take it) fails with -ECONNRESET.
 * Each wait is bounded (8 s, only to report a hang) and so is the job
 * (alarm). */
#include "engine_job.h"

#include <canal/base.h>

#define T 3

static int done_pipe[2];
static const char *connect_mode;

static void before_open(int rank)
{
	(void)rank;
	setenv("CANAL_ENGINE_CONNECT", connect_mode, 1);
}

/* Test q until it completes or 8 s pass: its result, or 0 (still
 * pending). */
static int until_done(struct canal_engine *e, struct canal_engine_req *q,
		      const char *what)
{
	uint64_t deadline = canal_now_ns() + 8000000000ull;
	int t;
	while ((t = canal_engine_test(e, q, NULL)) == 0 &&
	       canal_now_ns() < deadline)
		;
	if (t == 0)
		fprintf(stderr, "%s still pending after 8 s\n", what);
	return t;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	int which = *(int *)arg;
	struct canal_engine_req *q;
	if (rank == 1) {
		if (which == 0) {
			CHECK_EQ(canal_engine_isend(e, 0, T, "last", 5, 0, &q), 0);
			CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		}
		CHECK_EQ(canal_engine_close(e), 0);
		/* alive, without a session, until rank 0 is done */
		char c;
		CHECK_EQ(read(done_pipe[0], &c, 1), 1);
		_exit(0);
	}
	int bad = 0;
	if (which == 0) {
		char buf[16] = { 0 };
		CHECK_EQ(canal_engine_irecv(e, 1, T, buf, sizeof buf, &q), 0);
		int t = until_done(e, q, "receive of \"last\"");
		if (t != 1 || strcmp(buf, "last")) {
			fprintf(stderr, "receive of \"last\": %d (%s)\n", t, buf);
			bad = 1;
		}
		CHECK_EQ(canal_engine_irecv(e, 1, T, buf, sizeof buf, &q), 0);
		t = until_done(e, q, "receive after close");
		if (t != -ECONNRESET) {
			fprintf(stderr, "receive after close: %d\n", t);
			bad = 1;
		}
	} else {
		static unsigned char big[1 << 20];
		int err = canal_engine_isend(e, 1, T, big, sizeof big, 0, &q);
		int t = err ? err : until_done(e, q, "rendezvous send");
		if (t != -ECONNRESET) {
			fprintf(stderr, "rendezvous send to a closed peer: %d\n", t);
			bad = 1;
		}
	}
	if (!bad) {
		int err = canal_engine_isend(e, 1, T, "x", 1, 0, &q);
		if (err != -ECONNRESET) {
			fprintf(stderr, "isend after the gate closed: %d\n", err);
			bad = 1;
		}
		char why[128];
		CHECK_EQ(canal_engine_gate_error(e, 1, why, sizeof why), -ECONNRESET);
		/* shm: "peer 1 (pid N) closed its session" (TCP: the
		 * connection closed, or reset by a send after the close) */
		if (!strcmp(canal_engine_driver(e), "shm") &&
		    !strstr(why, "closed its session")) {
			fprintf(stderr, "gate error: \"%s\"\n", why);
			bad = 1;
		}
	}
	CHECK_EQ(write(done_pipe[1], "x", 1), 1);
	return bad;
}

int main(void)
{
	struct {
		const char *driver, *connect;
	} runs[] = { { "tcp", "lazy" }, { "shm", "lazy" }, { "shm", "eager" } };
	int bad = 0;
	for (int r = 0; r < 3; r++) {
		for (int which = 0; which < 2; which++) {
			connect_mode = runs[r].connect;
			CHECK_EQ(pipe(done_pipe), 0);
			struct job j = { 2, runs[r].driver, "default", 30, -1,
					 before_open };
			int b = job_run(&j, body, &which);
			close(done_pipe[0]);
			close(done_pipe[1]);
			fprintf(stderr, "test_reveng2_shm_peer_close: %s/%s %c: %s\n",
				runs[r].driver, runs[r].connect, "AB"[which],
				b ? "FAILED" : "ok");
			bad |= b;
		}
	}
	CHECK_EQ(bad, 0);
	TEST_DONE("test_reveng2_shm_peer_close");
}
