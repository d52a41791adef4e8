/* test_revapi_unpack_none - (review of engine.h against the code) an
 * unpack_end after no unpack at all drops the whole packed message, and
 * an empty pack is still a message.
 *
 * engine.h: unpack_end "takes and drops the pieces of the message that
 * were not unpacked (... or when fewer unpacks were made than pieces
 * packed): the next receive of (gate, tag) gets the message sent after
 * the pack", and st gets the total length, dropped pieces included. The
 * code dropped the rest of a message only after a piece that said more
 * was to come: with no unpack made (a receiver that discards a message
 * it does not want) nothing was dropped, unpack_end said 0 and length 0,
 * and the next receive got the pack's first piece instead of the
 * message after it; the flow was out of step with its sender for good.
 * And a pack of no piece sent nothing at all, so a receiver's
 * unpack_begin/unpack_end for it (or an unpack) took the next message.
 *
 * Rank 1 sends, on tag T: a pack "ab" + "cd", "next", an empty pack,
 * "after". Rank 0: unpack_begin + unpack_end (no unpack): 0, length 6;
 * a receive: "next"; unpack_begin + unpack_end for the empty pack: 0,
 * length 0; a receive: "after". shm and TCP; UCX's matching where built;
 * each with caller progress and with a progress thread.
 * Bounded by the job's alarm. */
#include "engine_job.h"

#define T 4

static int recv_str(struct canal_engine *e, const char *want)
{
	char buf[16] = "";
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_irecv(e, 1, T, buf, sizeof buf - 1, &q), 0);
	int err = canal_engine_wait(e, q, NULL);
	if (err || strcmp(buf, want)) {
		fprintf(stderr, "receive: %d \"%s\", want \"%s\"\n", err, buf,
			want);
		return 1;
	}
	return 0;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_engine_req *q;
	struct canal_engine_pack *p;
	if (rank == 1) {
		CHECK_EQ(canal_engine_pack_begin(e, 0, T, &p), 0);
		CHECK_EQ(canal_engine_pack(p, "ab", 3, 0), 0);
		CHECK_EQ(canal_engine_pack(p, "cd", 3, 0), 0);
		CHECK_EQ(canal_engine_pack_end(p, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		CHECK_EQ(canal_engine_isend(e, 0, T, "next", 5, 0, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		CHECK_EQ(canal_engine_pack_begin(e, 0, T, &p), 0);
		CHECK_EQ(canal_engine_pack_end(p, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		CHECK_EQ(canal_engine_isend(e, 0, T, "after", 6, 0, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		/* stay until rank 0 is done */
		char c;
		CHECK_EQ(canal_engine_irecv(e, 0, T + 1, &c, 1, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		return 0;
	}
	int bad = 0;
	struct canal_engine_status st = { 0 };
	CHECK_EQ(canal_engine_unpack_begin(e, 1, T, &p), 0);
	int err = canal_engine_unpack_end(p, &st);
	if (err || st.len != 6) {
		fprintf(stderr, "unpack_end, no unpack: %d, length %zu, want 0, 6\n",
			err, st.len);
		bad = 1;
	}
	bad |= recv_str(e, "next");
	if (!bad) {
		st.len = 99;
		CHECK_EQ(canal_engine_unpack_begin(e, 1, T, &p), 0);
		err = canal_engine_unpack_end(p, &st);
		if (err || st.len != 0) {
			fprintf(stderr, "unpack_end of the empty pack: %d, "
					"length %zu, want 0, 0\n", err, st.len);
			bad = 1;
		}
		bad |= recv_str(e, "after");
	}
	CHECK_EQ(canal_engine_isend(e, 1, T + 1, "x", 1, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	return bad;
}

static void progress_thread(int rank)
{
	(void)rank;
	setenv("CANAL_ENGINE_PROGRESS", "thread", 1);
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp", "ucx" };
	int have_ucx = job_have_ucx();
	for (int i = 0; i < 3; i++) {
		if (i == 2 && !have_ucx)
			continue;
		/* caller progress, then a progress thread (the session lock) */
		for (int t = 0; t < 2; t++) {
			struct job j = { 2, drivers[i], "default", 60, -1,
					 t ? progress_thread : NULL };
			if (job_run(&j, body, NULL)) {
				fprintf(stderr, "driver %s, progress %s failed\n",
					drivers[i], t ? "thread" : "caller");
				CHECK(0);
			}
		}
	}
	TEST_DONE("test_revapi_unpack_none");
}
