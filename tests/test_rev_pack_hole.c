/* test_rev_pack_hole - (review) a pack whose middle piece is refused
 * (4 GiB or more: -EMSGSIZE, reported by the pack's request) reserves a
 * sequence number for every piece (pack.c: send_next += n) but never sends
 * the refused one. The flow (gate, tag) then has a hole: the receiver's
 * receive of that sequence number never completes, and every later
 * message of the flow (the pack's last piece, and an ordinary message
 * sent after the pack failed) waits behind it for ever. engine.h: messages
 * on one (gate, tag) are received in the order they were sent; an
 * isend that fails (canal__collect_send) gives its sequence number back,
 * pack_end does not. Expected: the receiver gets the message sent after
 * the failed pack. Bounded: the receiver gives up after 5 s per receive. */
#include "engine_job.h"

#include <sys/mman.h>

#define TAG 3

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	if (rank == 1) {
		size_t big = (size_t)5 << 30;
		void *huge = mmap(NULL, big, PROT_READ,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		CHECK(huge != MAP_FAILED);
		struct canal_engine_pack *p;
		struct canal_engine_req *q;
		CHECK_EQ(canal_engine_pack_begin(e, 0, TAG, &p), 0);
		CHECK_EQ(canal_engine_pack(p, "a", 1, 0), 0);
		CHECK_EQ(canal_engine_pack(p, huge, big, 0), 0);
		CHECK_EQ(canal_engine_pack(p, "c", 1, 0), 0);
		CHECK_EQ(canal_engine_pack_end(p, &q), 0);
		int perr = canal_engine_wait(e, q, NULL);
		fprintf(stderr, "rank 1: the pack's request: %d (%s)\n", perr,
			strerror(-perr));
		CHECK_EQ(perr, -EMSGSIZE);
		/* the application goes on with an ordinary message */
		CHECK_EQ(canal_engine_isend(e, 0, TAG, "next", 5, 0, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		/* stay until rank 0 is done */
		char c;
		CHECK_EQ(canal_engine_irecv(e, 0, 99, &c, 1, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		munmap(huge, big);
		return 0;
	}
	int found = 0;
	for (int i = 0; i < 4 && !found; i++) {
		char buf[16] = "";
		struct canal_engine_req *q;
		CHECK_EQ(canal_engine_irecv(e, 1, TAG, buf, sizeof buf, &q), 0);
		uint64_t deadline = canal_now_ns() + 5000000000ull;
		int t = 0;
		while ((t = canal_engine_test(e, q, NULL)) == 0 &&
		       canal_now_ns() < deadline)
			;
		if (t == 0) {
			struct canal_engine_status st;
			fprintf(stderr,
				"rank 0: receive %d on tag %d never completes "
				"(probe for what is waiting: %d)\n",
				i, TAG, canal_engine_probe(e, 1, TAG, &st));
			break;
		}
		fprintf(stderr, "rank 0: receive %d: \"%s\"\n", i, buf);
		found = t == 1 && !strcmp(buf, "next");
	}
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_isend(e, 1, 99, "x", 1, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	return found ? 0 : 1;
}

int main(void)
{
	struct job j = { 2, "tcp", "default", 40, -1, NULL };
	CHECK_EQ(job_run(&j, body, NULL), 0);
	TEST_DONE("test_rev_pack_hole");
}
