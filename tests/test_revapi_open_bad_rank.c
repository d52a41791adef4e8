/* test_revapi_open_bad_rank - (review of engine.h against the code) a
 * negative rank other than -1, or a negative size, is a bad rank/size.
 *
 * engine.h: canal_engine_options.rank is this process's rank, -1 meaning
 * $CANAL_RANK; size the number of processes, 0 meaning $CANAL_SIZE; open
 * fails with -EINVAL on a bad rank/size. canal_engine_open() took any
 * negative rank as -1 and any negative size as 0: a garbage rank or size
 * (an uninitialised field, a failed parse stored as -2) opened a session
 * under the environment's rank and size, or under PMIx's, joining a job
 * as some other process. Expected: -EINVAL for rank -7 and for size -3,
 * with $CANAL_RANK and $CANAL_SIZE set to values that would open; the
 * documented defaults (-1, 0) still take them. */
#include "check.h"
#include "expect.h"

#include <canal/engine.h>

static int open_with(int rank, int size)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = rank;
	o.size = size;
	o.driver = "shm";
	struct canal_engine *e = NULL;
	int err = canal_engine_open(&o, &e);
	if (err == 0)
		CHECK_EQ(canal_engine_close(e), 0);
	return err;
}

int main(void)
{
	setenv("CANAL_RANK", "0", 1);
	setenv("CANAL_SIZE", "1", 1);
	EXPECT(open_with(-7, 1), -EINVAL);
	EXPECT(open_with(-7, 0), -EINVAL);
	EXPECT(open_with(0, -3), -EINVAL);
	EXPECT(open_with(-1, -3), -EINVAL);
	EXPECT(open_with(INT32_MIN, 1), -EINVAL);
	/* the documented defaults */
	EXPECT(open_with(-1, 0), 0);
	EXPECT(open_with(0, 1), 0);
	CHECK_EQ(expect_failures, 0);
	TEST_DONE("test_revapi_open_bad_rank");
}
