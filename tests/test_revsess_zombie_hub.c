/* test_revsess_zombie_hub - (review) an end whose close timed out and
 * whose exchange is still unfinished when its hub stops (remote.h,
 * canal_remote_hub_stop: it gives such ends up to 1 s) must not be
 * forgotten by the session: remote.h says "Reopening ... open says
 * -EBUSY until it has [finished the exchange]", and the session is the
 * caller's again after the stop, so a second hub of the same session may
 * open the same (gate, tag).
 *
 * Rank 0 opens a sending end on (1, TAG) and closes it with timeout 0
 * (-ETIMEDOUT: rank 1 has not opened yet, nothing answers), stops the
 * hub (the end is still waiting for rank 1's FIN after the stop's 1 s:
 * rank 1 waits for a word from rank 0 first), starts a second hub on the
 * session and opens (1, TAG) again. Expected: -EBUSY while the old
 * exchange is unfinished. Then rank 1 opens its receiving end: it gets
 * the old channel (its sender had closed: -EPIPE at once) and answers
 * it, the old exchange ends, and rank 0's open succeeds; the new channel
 * carries N elements in order (rank 1 opens its second end once the
 * first is closed). What happened: the stopped hub dropped the end from
 * every list while its receive stayed posted in the engine; the second
 * hub's open said 0 at once, and the old end's receive, still posted,
 * would take the next message of rank 1's on (0, TAG), which no hub
 * handled any more; the end stayed allocated after the session closed.
 * Bounded by the job's alarm. */
#include "engine_job.h"

#include <canal/remote.h>

#define TAG 3
#define SYNC 200 /* engine tag of the word "go" (no hub on it) */
#define N 10

static void say_go(struct canal_engine *e, struct canal_remote_hub *hub)
{
	uint32_t go = 1;
	struct canal_engine_req *q;
	canal_remote_hub_lock(hub);
	CHECK_EQ(canal_engine_isend(e, 1, SYNC, &go, sizeof go, 0, &q), 0);
	canal_remote_hub_unlock(hub);
	for (int done = 0; !done;) {
		canal_remote_hub_lock(hub);
		done = canal_engine_test(e, q, NULL);
		canal_remote_hub_unlock(hub);
		CHECK(done >= 0);
		if (!done)
			usleep(1000);
	}
}

static int rank0(struct canal_engine *e)
{
	struct canal_remote_hub *hub;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	CHECK_EQ(canal_remote_open(hub, 1, TAG, CANAL_REMOTE_SEND,
				   sizeof(uint64_t), 4, &r),
		 0);
	CHECK_EQ(canal_remote_close(r, 0), -ETIMEDOUT);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);

	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	int err = canal_remote_open(hub, 1, TAG, CANAL_REMOTE_SEND,
				    sizeof(uint64_t), 4, &r);
	if (err != -EBUSY) {
		fprintf(stderr,
			"rank 0: open of (1, %d) on a new hub while the old "
			"end's exchange is unfinished: %d (%s), expected -EBUSY\n",
			TAG, err, strerror(-err));
		if (err == 0)
			canal_remote_close(r, 0);
		canal_remote_hub_stop(hub);
		return 1;
	}
	say_go(e, hub);
	/* The old exchange ends once rank 1 answered it. */
	while ((err = canal_remote_open(hub, 1, TAG, CANAL_REMOTE_SEND,
					sizeof(uint64_t), 4, &r)) == -EBUSY)
		usleep(1000);
	CHECK_EQ(err, 0);
	struct canal_chan *ch = canal_remote_chan(r);
	for (uint64_t i = 0; i < N; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	CHECK_EQ(canal_remote_close(r, -1), 0);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

static int rank1(struct canal_engine *e)
{
	uint32_t go = 0;
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_irecv(e, 0, SYNC, &go, sizeof go, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	CHECK_EQ(go, 1);
	struct canal_remote_hub *hub;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	/* The old channel: its sender closed before sending anything. */
	CHECK_EQ(canal_remote_open(hub, 0, TAG, CANAL_REMOTE_RECV,
				   sizeof(uint64_t), 4, &r),
		 0);
	uint64_t x;
	CHECK_EQ(canal_recv(canal_remote_chan(r), &x), -EPIPE);
	CHECK_EQ(canal_remote_close(r, -1), 0);
	/* The new one. */
	CHECK_EQ(canal_remote_open(hub, 0, TAG, CANAL_REMOTE_RECV,
				   sizeof(uint64_t), 4, &r),
		 0);
	struct canal_chan *ch = canal_remote_chan(r);
	for (uint64_t i = 0; i < N; i++) {
		CHECK_EQ(canal_recv(ch, &x), 0);
		CHECK_EQ(x, i);
	}
	CHECK_EQ(canal_recv(ch, &x), -EPIPE);
	CHECK_EQ(canal_remote_close(r, -1), 0);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	return rank == 0 ? rank0(e) : rank1(e);
}

int main(void)
{
	job_run_shm_tcp(2, 60, body, NULL);
	TEST_DONE("test_revsess_zombie_hub");
}
