/* test_reveng2_unpack_rest - (review) after an unpack error, unpack_end
 * leaves nothing of that packed message in its flow: the next receive on
 * (gate, tag) gets the next message.
 *
 * engine.h: "after an error, call unpack_end to free the pack". Each
 * piece of a pack is a message of its own on the flow, so the pieces the
 * receiver had not unpacked when it gave up (typically: its express
 * header piece came truncated, -EMSGSIZE, and without it the receiver
 * cannot size the rest) stayed in the flow, and the next receive got the
 * first of them instead of the message sent after the pack: the flow was
 * out of step with the sender for good. Before the fix: "next receive
 * got 100 bytes ('A...') instead of NEXT".
 *
 * Rank 1 packs: an express header (4 bytes), 100 bytes of 'A', 200 KiB
 * of 'B' (a rendezvous on every driver), then sends "NEXT" on the same
 * tag. Rank 0, case by case (rank 1 repeats per case):
 *  0: unpack(header into 2 bytes, EXPRESS): -EMSGSIZE; unpack_end:
 *     -EMSGSIZE; then a receive gets "NEXT".
 *  1: the same, the unpack on CANAL_ENGINE_ANY_GATE.
 *  2: header whole, 'A' piece into 10 bytes with EXPRESS: -EMSGSIZE;
 *     unpack_end; a receive gets "NEXT".
 *  3: every piece unpacked (no error): unpack_end 0, then "NEXT" (the
 *     rule changes nothing for a full unpack).
 * shm and TCP, both strategies; UCX (its matching) where built. Bounded
 * by the job's alarm. */
#include "engine_job.h"

#define T 11
#define ACK 12
#define CASES 4
#define BIG (200 * 1024)

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	static unsigned char a[100], b[BIG], big_in[BIG];
	struct canal_engine_req *q;
	if (rank == 1) {
		memset(a, 'A', sizeof a);
		memset(b, 'B', sizeof b);
		uint32_t hdr = 3;
		for (int c = 0; c < CASES; c++) {
			struct canal_engine_pack *p;
			struct canal_engine_req *pq, *nq;
			CHECK_EQ(canal_engine_pack_begin(e, 0, T, &p), 0);
			CHECK_EQ(canal_engine_pack(p, &hdr, sizeof hdr,
						   CANAL_ENGINE_EXPRESS), 0);
			CHECK_EQ(canal_engine_pack(p, a, sizeof a, 0), 0);
			CHECK_EQ(canal_engine_pack(p, b, sizeof b, 0), 0);
			CHECK_EQ(canal_engine_pack_end(p, &pq), 0);
			CHECK_EQ(canal_engine_isend(e, 0, T, "NEXT", 5, 0, &nq), 0);
			CHECK_EQ(canal_engine_wait(e, pq, NULL), 0);
			CHECK_EQ(canal_engine_wait(e, nq, NULL), 0);
			int v;
			CHECK_EQ(canal_engine_irecv(e, 0, ACK, &v, sizeof v, &q), 0);
			CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		}
		return 0;
	}
	int bad = 0;
	for (int c = 0; c < CASES; c++) {
		struct canal_engine_pack *p;
		CHECK_EQ(canal_engine_unpack_begin(e, c == 1 ? CANAL_ENGINE_ANY_GATE
							     : 1,
						   T, &p), 0);
		uint32_t hdr = 0;
		unsigned char small[10];
		int want_end = -EMSGSIZE;
		if (c == 0 || c == 1) {
			CHECK_EQ(canal_engine_unpack(p, &hdr, 2, CANAL_ENGINE_EXPRESS),
				 -EMSGSIZE);
		} else if (c == 2) {
			CHECK_EQ(canal_engine_unpack(p, &hdr, sizeof hdr,
						     CANAL_ENGINE_EXPRESS), 0);
			CHECK_EQ(hdr, 3);
			CHECK_EQ(canal_engine_unpack(p, small, sizeof small,
						     CANAL_ENGINE_EXPRESS),
				 -EMSGSIZE);
		} else {
			CHECK_EQ(canal_engine_unpack(p, &hdr, sizeof hdr,
						     CANAL_ENGINE_EXPRESS), 0);
			CHECK_EQ(canal_engine_unpack(p, a, sizeof a, 0), 0);
			CHECK_EQ(canal_engine_unpack(p, big_in, sizeof big_in, 0), 0);
			want_end = 0;
		}
		struct canal_engine_status st = { 0 };
		CHECK_EQ(canal_engine_unpack_end(p, &st), want_end);
		CHECK_EQ(st.gate, 1);
		if (c == 3)
			CHECK(a[0] == 'A' && big_in[0] == 'B' &&
			      big_in[BIG - 1] == 'B');
		char next[BIG + 1];
		memset(next, 0, 8);
		CHECK_EQ(canal_engine_irecv(e, 1, T, next, sizeof next, &q), 0);
		int err = canal_engine_wait(e, q, &st);
		if (err || st.len != 5 || strcmp(next, "NEXT")) {
			fprintf(stderr, "case %d: next receive got %d, %zu bytes "
				"('%c...') instead of NEXT\n", c, err, st.len,
				next[0]);
			bad = 1;
		}
		int v = c;
		CHECK_EQ(canal_engine_isend(e, 1, ACK, &v, sizeof v, 0, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		if (bad)
			break; /* rank 1 waits for its acks in vain otherwise */
	}
	if (bad)
		_exit(1);
	return 0;
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp" };
	const char *strategies[] = { "default", "aggregate" };
	int bad = 0;
	for (int d = 0; d < 2; d++) {
		for (int s = 0; s < 2; s++) {
			struct job j = { 2, drivers[d], strategies[s], 30, -1, NULL };
			int b = job_run(&j, body, NULL);
			fprintf(stderr, "test_reveng2_unpack_rest: %s/%s: %s\n",
				drivers[d], strategies[s], b ? "FAILED" : "ok");
			bad |= b;
		}
	}
	/* UCX's matching: MORE is a bit of the UCP tag */
	if (job_have_ucx()) {
		struct job j = { 2, "ucx", "default", 60, -1, NULL };
		int b = job_run(&j, body, NULL);
		fprintf(stderr, "test_reveng2_unpack_rest: ucx: %s\n",
			b ? "FAILED" : "ok");
		bad |= b;
	}
	CHECK_EQ(bad, 0);
	TEST_DONE("test_reveng2_unpack_rest");
}
