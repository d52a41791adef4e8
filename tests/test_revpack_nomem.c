/* test_revpack_nomem - (review) a pack whose middle piece gets no request
 * (no memory) reserved a sequence number for every piece (pack.c:
 * send_next += n), queued the pieces before the failure and never sent
 * the failed one nor those after it. The flow (gate, tag) then had a
 * hole: every later message of the flow waited behind it for ever, and
 * the receiver got a stray first piece as if it were a message.
 * Expected: pack_end fails with -ENOMEM and sends nothing (engine.h),
 * the receiver's next receive gets the message sent after the failed
 * pack. The fault comes from pack.c's test hook
 * (canal__engine_pack_fail_pieces). Bounded: the receiver gives up after
 * 20 s per receive. */
#include "engine_job.h"

#include "engine/internal.h"

#define TAG 3

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	if (rank == 1) {
		struct canal_engine_pack *p;
		struct canal_engine_req *q = NULL;
		/* piece 1 (of 3) finds no memory for its request */
		CHECK_EQ(canal__engine_pack_fail_pieces(e, 1u << 1), 0u);
		CHECK_EQ(canal_engine_pack_begin(e, 0, TAG, &p), 0);
		CHECK_EQ(canal_engine_pack(p, "a", 2, 0), 0);
		CHECK_EQ(canal_engine_pack(p, "b", 2, 0), 0);
		CHECK_EQ(canal_engine_pack(p, "c", 2, 0), 0);
		int perr = canal_engine_pack_end(p, &q);
		if (perr == 0)
			perr = canal_engine_wait(e, q, NULL);
		fprintf(stderr, "rank 1: the pack: %d (%s)\n", perr,
			strerror(-perr));
		CHECK_EQ(perr, -ENOMEM);
		CHECK_EQ(canal__engine_pack_fail_pieces(e, 0), 0u);
		/* the application goes on with an ordinary message, then a
		 * pack that works */
		CHECK_EQ(canal_engine_isend(e, 0, TAG, "next", 5, 0, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		CHECK_EQ(canal_engine_pack_begin(e, 0, TAG, &p), 0);
		CHECK_EQ(canal_engine_pack(p, "x", 2, 0), 0);
		CHECK_EQ(canal_engine_pack(p, "y", 2, 0), 0);
		CHECK_EQ(canal_engine_pack_end(p, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		/* stay until rank 0 is done */
		char c;
		CHECK_EQ(canal_engine_irecv(e, 0, 99, &c, 1, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		return 0;
	}
	static const char *const want[] = { "next", "x", "y" };
	int good = 0;
	for (int i = 0; i < 3; i++) {
		char buf[16] = "";
		struct canal_engine_req *q;
		CHECK_EQ(canal_engine_irecv(e, 1, TAG, buf, sizeof buf, &q), 0);
		uint64_t deadline = canal_now_ns() + 20000000000ull;
		int t = 0;
		while ((t = canal_engine_test(e, q, NULL)) == 0 &&
		       canal_now_ns() < deadline)
			;
		if (t == 0) {
			fprintf(stderr, "rank 0: receive %d on tag %d never "
					"completes\n", i, TAG);
			break;
		}
		fprintf(stderr, "rank 0: receive %d: \"%s\"\n", i, buf);
		if (t != 1 || strcmp(buf, want[i]))
			break;
		good++;
	}
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_isend(e, 1, 99, "x", 1, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	return good == 3 ? 0 : 1;
}

int main(void)
{
	struct job j = { 2, "tcp", "default", 90, -1, NULL };
	CHECK_EQ(job_run(&j, body, NULL), 0);
	TEST_DONE("test_revpack_nomem");
}
