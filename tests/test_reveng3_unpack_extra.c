/* test_reveng3_unpack_extra - (review) an unpack past the last piece of a
 * packed message is reported: unpack_end returns -EPROTO, not 0.
 *
 * Each piece of a pack is a message of its own on its (gate, tag) flow,
 * so an unpack beyond the pieces packed takes the message sent after the
 * pack, and unpack_end said 0: the receiver never learnt that it had
 * consumed a message that was not part of the pack. Every piece but the
 * last says MORE (wire.h), so a piece taken after one without MORE is
 * the mark of such a misuse. Before the fix: "unpack_end: 0 (want -71)".
 *
 * Rank 1 packs an express header (4 bytes) and 100 bytes of 'A', then
 * sends "NEXT" and "LAST" on the same tag. Rank 0 unpacks the two pieces
 * and a third (deferred in case 0, express in case 1): unpack_end says
 * -EPROTO, the third buffer holds "NEXT" (what the extra unpack took),
 * and the next receive gets "LAST", intact. Case 2: the two pieces only,
 * unpack_end 0 and the next receive "NEXT" (nothing changes for a
 * correct unpack). shm and TCP, both strategies. Bounded by the job's
 * alarm. */
#include "engine_job.h"

#define T 21
#define ACK 22
#define CASES 3

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	static unsigned char a[100];
	struct canal_engine_req *q;
	if (rank == 1) {
		memset(a, 'A', sizeof a);
		uint32_t hdr = 7;
		for (int c = 0; c < CASES; c++) {
			struct canal_engine_pack *p;
			struct canal_engine_req *pq, *nq, *lq;
			CHECK_EQ(canal_engine_pack_begin(e, 0, T, &p), 0);
			CHECK_EQ(canal_engine_pack(p, &hdr, sizeof hdr,
						   CANAL_ENGINE_EXPRESS), 0);
			CHECK_EQ(canal_engine_pack(p, a, sizeof a, 0), 0);
			CHECK_EQ(canal_engine_pack_end(p, &pq), 0);
			CHECK_EQ(canal_engine_isend(e, 0, T, "NEXT", 5, 0, &nq), 0);
			CHECK_EQ(canal_engine_isend(e, 0, T, "LAST", 5, 0, &lq), 0);
			CHECK_EQ(canal_engine_wait(e, pq, NULL), 0);
			CHECK_EQ(canal_engine_wait(e, nq, NULL), 0);
			CHECK_EQ(canal_engine_wait(e, lq, NULL), 0);
			int v;
			CHECK_EQ(canal_engine_irecv(e, 0, ACK, &v, sizeof v, &q), 0);
			CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		}
		return 0;
	}
	int bad = 0;
	for (int c = 0; c < CASES; c++) {
		struct canal_engine_pack *p;
		CHECK_EQ(canal_engine_unpack_begin(e, 1, T, &p), 0);
		uint32_t hdr = 0;
		unsigned char in[100];
		char extra[16] = { 0 };
		CHECK_EQ(canal_engine_unpack(p, &hdr, sizeof hdr,
					     CANAL_ENGINE_EXPRESS), 0);
		CHECK_EQ(hdr, 7);
		CHECK_EQ(canal_engine_unpack(p, in, sizeof in, 0), 0);
		if (c < 2)
			CHECK_EQ(canal_engine_unpack(p, extra, sizeof extra,
						     c == 1 ? CANAL_ENGINE_EXPRESS
							    : 0),
				 0);
		struct canal_engine_status st = { 0 };
		int end = canal_engine_unpack_end(p, &st);
		int want = c < 2 ? -EPROTO : 0;
		if (end != want) {
			fprintf(stderr, "case %d: unpack_end: %d (want %d)\n", c,
				end, want);
			bad = 1;
		}
		CHECK(in[0] == 'A' && in[99] == 'A');
		if (c < 2)
			CHECK(strcmp(extra, "NEXT") == 0);
		/* The flow goes on after what the unpacks took. */
		char next[16] = { 0 };
		const char *want_next = c < 2 ? "LAST" : "NEXT";
		CHECK_EQ(canal_engine_irecv(e, 1, T, next, sizeof next, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, &st), 0);
		CHECK(strcmp(next, want_next) == 0);
		if (c == 2) { /* the correct unpack left LAST: take it */
			CHECK_EQ(canal_engine_irecv(e, 1, T, next, sizeof next,
						    &q), 0);
			CHECK_EQ(canal_engine_wait(e, q, &st), 0);
			CHECK(strcmp(next, "LAST") == 0);
		}
		int v = c;
		CHECK_EQ(canal_engine_isend(e, 1, ACK, &v, sizeof v, 0, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
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
			fprintf(stderr, "test_reveng3_unpack_extra: %s/%s: %s\n",
				drivers[d], strategies[s], b ? "FAILED" : "ok");
			bad |= b;
		}
	}
	if (job_have_ucx()) {
		struct job j = { 2, "ucx", "default", 60, -1, NULL };
		int b = job_run(&j, body, NULL);
		fprintf(stderr, "test_reveng3_unpack_extra: ucx: %s\n",
			b ? "FAILED" : "ok");
		bad |= b;
	}
	CHECK_EQ(bad, 0);
	TEST_DONE("test_reveng3_unpack_extra");
}
