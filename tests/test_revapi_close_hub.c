/* test_revapi_close_hub - (review of engine.h and remote.h against the
 * code) closing a session whose remote hub still runs is refused.
 *
 * remote.h: from canal_remote_hub_start() on, "the hub owns the session"
 * until canal_remote_hub_stop(): its thread makes progress in it. The
 * close did not look: it freed the session, its gates and its requests
 * while the hub's thread was inside them (a use after free, reported by
 * ASan; the hub then stopped on freed memory). Expected: -EINVAL and the
 * session untouched (a hub stopped afterwards, a close then 0), as a
 * mutex that is held is not destroyed.
 * Single rank, shm, no timing. */
#include "check.h"

#include <canal/remote.h>

int main(void)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 1;
	o.driver = "shm";
	struct canal_engine *e;
	CHECK_EQ(canal_engine_open(&o, &e), 0);
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	int err = canal_engine_close(e);
	if (err != -EINVAL) {
		fprintf(stderr, "close under a running hub: %d, not -EINVAL "
				"(the session was freed under the hub's thread)\n",
			err);
		CHECK_EQ(err, -EINVAL); /* hub_stop would touch freed memory */
	}
	/* the session is intact and still the hub's: stop it, then close */
	CHECK_EQ(canal_engine_rank(e), 0);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	CHECK_EQ(canal_engine_close(e), 0);
	TEST_DONE("test_revapi_close_hub");
}
