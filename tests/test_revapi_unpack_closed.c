/* test_revapi_unpack_closed - (review of engine.h against the code) a
 * message packed by a peer that then died is still there to unpack.
 *
 * engine.h and collect/match.c: a closed gate still hands out the eager
 * messages that arrived whole before it closed ("a peer may send its last
 * words and exit"): canal_engine_irecv() and canal_engine_probe() take
 * them. canal_engine_unpack_begin() refused the gate at once with its
 * error (-ECONNRESET) instead, so a message sent as a pack was lost to
 * its receiver although every piece had arrived, where the same bytes
 * sent by isend would have been received. Expected: unpack_begin
 * succeeds, both pieces are unpacked, unpack_end says 0 and the total
 * length; a later unpack_begin fails with the gate's error (nothing is
 * left). Bounded: 8 s to see the death, and the job's alarm. */
#include "engine_job.h"

#include <canal/base.h>

#define T 5

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_engine_req *q;
	struct canal_engine_pack *p;
	if (rank == 1) {
		CHECK_EQ(canal_engine_pack_begin(e, 0, T, &p), 0);
		CHECK_EQ(canal_engine_pack(p, "ab", 3, 0), 0);
		CHECK_EQ(canal_engine_pack(p, "cde", 4, 0), 0);
		CHECK_EQ(canal_engine_pack_end(p, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		_exit(0); /* dies with its session open: its last words sent */
	}
	uint64_t deadline = canal_now_ns() + 8000000000ull;
	while (canal_engine_gate_error(e, 1, NULL, 0) == 0 &&
	       canal_now_ns() < deadline)
		canal_engine_progress(e);
	CHECK_EQ(canal_engine_gate_error(e, 1, NULL, 0), -ECONNRESET);
	int err = canal_engine_unpack_begin(e, 1, T, &p);
	if (err) {
		fprintf(stderr, "unpack_begin on the closed gate: %d (%s), "
				"its pieces had arrived\n", err, strerror(-err));
		return 1;
	}
	char a[3] = "", b[4] = "";
	CHECK_EQ(canal_engine_unpack(p, a, sizeof a, 0), 0);
	CHECK_EQ(canal_engine_unpack(p, b, sizeof b, 0), 0);
	struct canal_engine_status st;
	CHECK_EQ(canal_engine_unpack_end(p, &st), 0);
	CHECK(!strcmp(a, "ab") && !strcmp(b, "cde"));
	CHECK_EQ(st.gate, 1);
	CHECK_EQ((int)st.len, 7);
	/* nothing left: the gate's error at once */
	CHECK_EQ(canal_engine_unpack_begin(e, 1, T, &p), -ECONNRESET);
	return 0;
}

int main(void)
{
	struct job j = { 2, "shm", "default", 60, -1, NULL };
	CHECK_EQ(job_run(&j, body, NULL), 0);
	TEST_DONE("test_revapi_unpack_closed");
}
