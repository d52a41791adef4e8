/* test_remote_reopen - a (gate, tag) whose remote channel failed with
 * -EPROTO (ends opened differently) serves again, round after round, in
 * the races around the failure: both ends see the error at once; one
 * side closes and reopens at once while the other closes late (its old
 * end is still there when the new hello comes); a close that does not
 * wait (timeout 0: the hub ends the exchange in the background, open says
 * -EBUSY until then); a close right after open, before the error is seen;
 * a new hub of the session for the next channel.
 * Each failed round is followed by a channel opened alike on both sides
 * that must carry N elements in order, in one direction or the other,
 * and end normally. On shm and TCP; the job's alarm bounds the time. */
#include "engine_job.h"
#include "remote_error.h"

#include <canal/remote.h>

#define TAG 3
#define ROUNDS 24
#define N 50

/* Open, retrying while the previous exchange of (gate, tag) finishes in
 * the background (a close that timed out). */
static struct canal_remote *open_retry(struct canal_remote_hub *hub, int gate,
				       int end, size_t elt, size_t cap)
{
	struct canal_remote *r = NULL;
	int err;
	for (int i = 0; i < 5000; i++) {
		err = canal_remote_open(hub, gate, TAG, end, elt, cap, &r);
		if (err != -EBUSY)
			break;
		usleep(1000);
	}
	CHECK_EQ(err, 0);
	return r;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	int peer = 1 - rank;
	for (int round = 0; round < ROUNDS; round++) {
		/* the failing channel: another element size, another
		 * capacity, or both ends sending */
		int kind = round % 3;
		int end = rank == 0 ? CANAL_REMOTE_RECV : CANAL_REMOTE_SEND;
		size_t elt = 8, cap = 4;
		if (kind == 0)
			elt = rank == 0 ? 8 : 16;
		else if (kind == 1)
			cap = rank == 0 ? 4 : 6;
		else
			end = CANAL_REMOTE_SEND;
		struct canal_remote *r = open_retry(hub, peer, end, elt, cap);
		/* who closes late, and how */
		int late = round % 2;
		int style = (round / 2) % 4;
		if (style == 3) {
			/* close at once: the error may not be seen yet */
			int err = canal_remote_close(r, 5000000000ll);
			CHECK(err == -EPROTO);
		} else {
			CHECK_EQ(remote_wait_error(r), -EPROTO);
			if (rank == late)
				usleep(1000 * (unsigned)(5 + 10 * style));
			int err = canal_remote_close(r, style == 2 ? 0 : 5000000000ll);
			CHECK(err == -EPROTO);
		}
		/* now and then by a new hub of the session */
		if (round % 6 == 5) {
			CHECK_EQ(canal_remote_hub_stop(hub), 0);
			CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
		}
		/* the same (gate, tag), opened alike: must work */
		int dir = (round / 3) % 2; /* which rank sends */
		end = rank == dir ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV;
		r = open_retry(hub, peer, end, 8, 4);
		struct canal_chan *ch = canal_remote_chan(r);
		for (uint64_t i = 0; i < N; i++) {
			uint64_t x = i;
			int err = end == CANAL_REMOTE_RECV
					  ? canal_recv_timeout(ch, &x, 5000000000ll)
					  : canal_send_timeout(ch, &x, 5000000000ll);
			if (err || x != i) {
				char why[200] = "";
				canal_remote_error(r, why, sizeof why);
				fprintf(stderr,
					"rank %d round %d: element %llu: %d (%s); "
					"channel error: \"%s\"\n",
					rank, round, (unsigned long long)i, err,
					strerror(-err), why);
				fflush(stderr);
				_exit(1); /* the hub still runs: no cleanup */
			}
		}
		if (end == CANAL_REMOTE_SEND) {
			canal_close(ch);
		} else {
			uint64_t x;
			CHECK_EQ(canal_recv_timeout(ch, &x, 5000000000ll), -EPIPE);
		}
		CHECK_EQ(canal_remote_close(r, 5000000000ll), 0);
	}
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

int main(void)
{
	job_run_shm_tcp(2, 60, body, NULL);
	TEST_DONE("test_remote_reopen");
}
