/* test_revapi_remote_cap1 - (review of remote.h against the code) a
 * remote channel opened with capacity 1 on one side and 2 on the other
 * works: remote.h says "Capacity 1 is accepted and behaves as 2".
 *
 * Each end's hello carried the capacity as given, and the other end
 * compared it with its own: 1 against 2 was "the peer opened elt_size 8
 * and capacity 1, this end 8 and 2", -EPROTO on both sides, for two
 * channels that behave the same. Expected: both directions (capacity 1
 * at the sender, then at the receiver) carry ten elements in order, and
 * both ends close with 0. shm, two ranks, bounded by the job's alarm and
 * the timeouts below. */
#include "engine_job.h"

#include <canal/remote.h>

#define N 10
#define TIMEOUT 5000000000ll

static int run(struct canal_remote_hub *hub, int rank, int tag, size_t cap)
{
	int end = rank == 0 ? CANAL_REMOTE_RECV : CANAL_REMOTE_SEND;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_open(hub, 1 - rank, tag, end, 8, cap, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	int bad = 0;
	for (uint64_t i = 0; i < N && !bad; i++) {
		uint64_t x = i;
		int err = rank == 0 ? canal_recv_timeout(ch, &x, TIMEOUT)
				    : canal_send_timeout(ch, &x, TIMEOUT);
		if (err || x != i) {
			char why[200] = "";
			canal_remote_error(r, why, sizeof why);
			fprintf(stderr,
				"rank %d, tag %d, capacity %zu: element %llu: "
				"%d (%s); channel error: \"%s\"\n",
				rank, tag, cap, (unsigned long long)i, err,
				strerror(-err), why);
			bad = 1;
		}
	}
	int cerr = canal_remote_close(r, TIMEOUT);
	if (!bad && cerr) {
		fprintf(stderr, "rank %d, tag %d: close: %d\n", rank, tag, cerr);
		bad = 1;
	}
	return bad;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	/* tag 1: the sender (rank 1) says 1; tag 2: the receiver does */
	int bad = run(hub, rank, 1, rank == 1 ? 1 : 2);
	if (!bad)
		bad = run(hub, rank, 2, rank == 0 ? 1 : 2);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return bad;
}

int main(void)
{
	struct job j = { 2, "shm", "default", 60, -1, NULL };
	CHECK_EQ(job_run(&j, body, NULL), 0);
	TEST_DONE("test_revapi_remote_cap1");
}
