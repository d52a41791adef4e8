/* test_rev_remote_reopen - (review) a remote channel whose two ends were
 * opened with different element sizes fails on both sides with -EPROTO
 * (remote.h: "A peer that opened differently closes the channel on both
 * sides with -EPROTO"). Both ends are closed (canal_remote_close returns
 * the error, so the closing exchange is over and the tag is free again:
 * open's -EBUSY is only for an exchange not finished), then reopened on
 * the same (gate, tag) with matching parameters, and ten elements are
 * sent. Expected: the new channel works.
 *
 * What happens: on the protocol error each end marks the peer's FIN as
 * received (fail()) and stops receiving on the tag, but each also sends a
 * FIN (reason "protocol error") that the other never takes. That message
 * stays in the engine's unexpected queue of the flow and is the first
 * thing the reopened end receives: the new channel fails at once with
 * "the peer found a protocol error", and leaves its own stale FIN for the
 * next attempt (the tag is poisoned for good). Bounded by the job's alarm
 * and by the timeouts below. */
#include "engine_job.h"
#include "remote_error.h"

#include <canal/remote.h>

#define TAG 1
#define N 10

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	int end = rank == 0 ? CANAL_REMOTE_RECV : CANAL_REMOTE_SEND;
	struct canal_remote *r;
	/* 1: mismatched element sizes (8 here, 16 at rank 1) */
	CHECK_EQ(canal_remote_open(hub, 1 - rank, TAG, end, rank == 0 ? 8 : 16,
				   4, &r),
		 0);
	CHECK_EQ(remote_wait_error(r), -EPROTO);
	CHECK_EQ(canal_remote_close(r, 5000000000ll), -EPROTO);
	/* 2: the same channel, opened alike on both sides */
	CHECK_EQ(canal_remote_open(hub, 1 - rank, TAG, end, 8, 4, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	int bad = 0;
	for (uint64_t i = 0; i < N && !bad; i++) {
		uint64_t x = i;
		int err = rank == 0 ? canal_recv_timeout(ch, &x, 5000000000ll)
				    : canal_send_timeout(ch, &x, 5000000000ll);
		if (err || x != i) {
			char why[200] = "";
			canal_remote_error(r, why, sizeof why);
			fprintf(stderr,
				"rank %d: element %llu of the reopened channel: %d "
				"(%s); channel error: \"%s\"\n",
				rank, (unsigned long long)i, err,
				strerror(-err), why);
			bad = 1;
		}
	}
	int cerr = canal_remote_close(r, 5000000000ll);
	if (!bad && cerr) {
		fprintf(stderr, "rank %d: close of the reopened channel: %d\n",
			rank, cerr);
		bad = 1;
	}
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return bad;
}

int main(void)
{
	struct job j = { 2, "tcp", "default", 60, -1, NULL };
	CHECK_EQ(job_run(&j, body, NULL), 0);
	TEST_DONE("test_rev_remote_reopen");
}
