/* test_revapi_hub_twice - (review of remote.h against the code) a second
 * hub on a session that has one is refused.
 *
 * remote.h: "One hub per session": a hub's thread drives the session,
 * which engine.h lets one thread use at a time. canal_remote_hub_start()
 * refused a session with a progress thread (-EINVAL: "the hub is its
 * progress") but not one that already had a hub: it returned 0, and the
 * two hubs' threads then made progress on the same session at once,
 * without a common lock (each holds its own hub's mutex): requests,
 * queues and the FINs owed corrupted. Expected: -EBUSY, the first hub
 * untouched; once it is stopped, a new hub may start. */
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
	struct canal_remote_hub *hub, *second = NULL;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	int err = canal_remote_hub_start(e, &second);
	if (err == 0) {
		fprintf(stderr, "a second hub on the session: 0, not -EBUSY\n");
		CHECK_EQ(canal_remote_hub_stop(second), 0);
	}
	CHECK_EQ(err, -EBUSY);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	/* the session is the caller's again: a new hub may drive it */
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	CHECK_EQ(canal_engine_close(e), 0);
	TEST_DONE("test_revapi_hub_twice");
}
