/* test_reveng2_isend_reorder - (review) canal_engine_isend() refuses
 * CANAL_ENGINE_REORDER, as engine.h says (flags: 0 or
 * CANAL_ENGINE_EXPRESS; -EINVAL for bad flags).
 *
 * CANAL_ENGINE_REORDER is a piece's place among the pieces of one packed
 * message (ENGINE.md: "a piece may be express or reorderable"; pack.c
 * queues reorderable pieces after the others): a message of its own has
 * no such place, and the flag did nothing there. isend took it all the
 * same (match.c's check let both piece flags through), so a caller who
 * meant it got no error and no effect. Before the fix: "isend with
 * CANAL_ENGINE_REORDER: 0" (and the message sent). Expected: -EINVAL and
 * nothing sent: the flow's next message is the one sent after. Runs on
 * shm and TCP, two ranks in this process (threads). */
#include "engine_job.h"

static void run(const char *driver)
{
	char dir[] = "/tmp/canal-test-reveng2-reorder.XXXXXX";
	CHECK(mkdtemp(dir));
	struct canal_engine *e[2];
	job_open_two(dir, driver, e);
	struct canal_engine_req *q = NULL, *s;
	int err = canal_engine_isend(e[0], 1, 4, "bad", 4, CANAL_ENGINE_REORDER,
				     &q);
	if (err != -EINVAL)
		fprintf(stderr, "%s: isend with CANAL_ENGINE_REORDER: %d\n",
			driver, err);
	CHECK_EQ(err, -EINVAL);
	CHECK_EQ(canal_engine_isend(e[0], 1, 4, "good", 5,
				    CANAL_ENGINE_EXPRESS, &s), 0);
	char buf[8] = { 0 };
	struct canal_engine_req *r;
	CHECK_EQ(canal_engine_irecv(e[1], 0, 4, buf, sizeof buf, &r), 0);
	int a = 0, b = 0;
	uint64_t deadline = canal_now_ns() + 10000000000ull;
	while ((!a || !b) && canal_now_ns() < deadline) {
		if (!a)
			a = canal_engine_test(e[0], s, NULL);
		if (!b)
			b = canal_engine_test(e[1], r, NULL);
	}
	CHECK_EQ(a, 1);
	CHECK_EQ(b, 1);
	CHECK(strcmp(buf, "good") == 0);
	CHECK_EQ(canal_engine_close(e[0]), 0);
	CHECK_EQ(canal_engine_close(e[1]), 0);
	job_rmdir(dir);
}

int main(void)
{
	alarm(60);
	run("shm");
	run("tcp");
	TEST_DONE("test_reveng2_isend_reorder");
}
