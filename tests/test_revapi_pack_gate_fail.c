/* test_revapi_pack_gate_fail - (review of engine.h against the code) a
 * gate that fails while pack_end hands the pieces over fails the pack's
 * request; the request does not stay pending for ever.
 *
 * engine.h: when a peer's gate closes, "its pending requests complete
 * with -ECONNRESET"; canal_engine_wait() blocks until completion. A piece
 * whose data goes by a bulk transfer (UCX's packet path) starts that
 * transfer inside pack_end, and a start that fails closes the gate at
 * once (schedule/window.c, bulk_start). The gate's failure completes
 * every request tied to the gate, but the pieces not yet handed over had
 * no gate yet: pack_end then queued them on the closed gate, where
 * nothing sends or fails them, and the pack's request, counting them,
 * never completed: its wait hung. Here the bulk start's failure is made
 * on a TCP gate (its driver given a bulk_send that fails, as UCX's does
 * on a broken endpoint). Expected: the pack's request fails with
 * -ECONNRESET. A pending test is only reported after 5 s. */
#include "engine_job.h"

#include <canal/base.h>

#include "../src/engine/internal.h"
#include "../src/engine/transfer/driver.h"

static struct canal__driver_ops failing_ops;

static int failing_bulk_send(struct canal__driver *d, uint64_t id,
			     const void *buf, size_t len, void **h)
{
	(void)id, (void)buf, (void)len, (void)h;
	snprintf(d->why, sizeof d->why, "bulk send refused (test)");
	return -ECONNRESET;
}

int main(void)
{
	char dir[] = "/tmp/canal-test-packfail.XXXXXX";
	CHECK(mkdtemp(dir));
	struct canal_engine *two[2];
	job_open_two(dir, "tcp", two);
	struct canal_engine *e = two[0];
	struct canal__driver *d = e->gates[1].drv;
	CHECK(d);
	failing_ops = *d->ops;
	failing_ops.bulk_send = failing_bulk_send;
	d->ops = &failing_ops;
	d->caps.bulk = true;
	d->caps.bulk_min = 1;
	size_t big_len = d->caps.eager_max + 1;
	char *big = calloc(1, big_len);
	CHECK(big);

	struct canal_engine_pack *p;
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_pack_begin(e, 1, 5, &p), 0);
	CHECK_EQ(canal_engine_pack(p, big, big_len, 0), 0);
	CHECK_EQ(canal_engine_pack(p, "x", 1, 0), 0);
	CHECK_EQ(canal_engine_pack_end(p, &q), 0);
	uint64_t deadline = canal_now_ns() + 5000000000ull;
	int t;
	while ((t = canal_engine_test(e, q, NULL)) == 0 &&
	       canal_now_ns() < deadline)
		;
	if (t == 0)
		fprintf(stderr, "the pack's request still pending after 5 s, "
				"its gate closed: %d\n",
			canal_engine_gate_error(e, 1, NULL, 0));
	CHECK_EQ(t, -ECONNRESET);
	CHECK_EQ(canal_engine_gate_error(e, 1, NULL, 0), -ECONNRESET);
	canal_engine_close(e);
	canal_engine_close(two[1]);
	free(big);
	job_rmdir(dir);
	TEST_DONE("test_revapi_pack_gate_fail");
}
