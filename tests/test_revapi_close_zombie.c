/* test_revapi_close_zombie - (review of engine.h and remote.h against the
 * code) a session closed after its hub left an unfinished end behind
 * says 0, not -EBUSY.
 *
 * remote.h: ends whose close timed out and are still unfinished when the
 * hub stops "stay with the session ... canal_engine_close() frees them";
 * engine.h: close returns -EBUSY when requests were still pending, the
 * application's (it is told that those it did not wait for are freed).
 * The hub's own receive, still posted for such an end, counted as one of
 * the application's: an application that did everything the headers ask
 * (close each end, stop the hub, close the session) got -EBUSY, for
 * requests it never made. Expected: 0.
 *
 * Rank 0 opens a sending end toward rank 1, which never opens the other
 * end; closes it with timeout 0 (-ETIMEDOUT), stops the hub (the end
 * stays unfinished), closes the session. Rank 1 stays alive meanwhile
 * (a pipe), so that the end's receive is still pending. Bounded by the
 * job's alarm. */
#include "engine_job.h"

#include <canal/remote.h>

#define TAG 3

static int done_pipe[2];

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	if (rank == 1) {
		char c;
		CHECK_EQ(read(done_pipe[0], &c, 1), 1);
		return 0;
	}
	struct canal_remote_hub *hub;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	CHECK_EQ(canal_remote_open(hub, 1, TAG, CANAL_REMOTE_SEND,
				   sizeof(uint64_t), 4, &r),
		 0);
	CHECK_EQ(canal_remote_close(r, 0), -ETIMEDOUT);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	int err = canal_engine_close(e);
	CHECK_EQ(write(done_pipe[1], "x", 1), 1);
	if (err) {
		fprintf(stderr, "rank 0: close after the hub stopped: %d (%s), "
				"want 0\n", err, strerror(-err));
		_exit(1);
	}
	_exit(0); /* closed here: job_run would close it again */
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp" };
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(pipe(done_pipe), 0);
		struct job j = { 2, drivers[i], "default", 60, -1, NULL };
		CHECK_EQ(job_run(&j, body, NULL), 0);
		close(done_pipe[0]);
		close(done_pipe[1]);
	}
	TEST_DONE("test_revapi_close_zombie");
}
