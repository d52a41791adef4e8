/* test_revremote_post_nomem - (review) a hub's engine post that fails
 * locally (-ENOMEM from canal_engine_isend or canal_engine_irecv while the
 * gate is healthy) must not fail the channel as if its gate had failed.
 * remote.h: canal_remote_error() says -ECONNRESET or -EPROTO only, and
 * "Memory": such a post is made again on a later round, the channel only
 * stalls meanwhile.
 *
 * The hub's test hook (canal__remote_hub_fail_posts) makes chosen posts
 * fail with -ENOMEM: on both ranks the first HELLO, then two DATA
 * (rank 1, sending) or two CREDIT (rank 0, receiving) messages, some
 * receives, later one more CREDIT or FIN (rank 0) and the FIN (rank 1).
 * Expected: N elements arrive in order, then -EPIPE (the sender's FIN),
 * both closes return 0, no channel error, every fault was met. What happened: the end failed
 * with -ENOMEM at its first fault, marked its FIN sent without sending it
 * and closed its local channel: the first element never came (or the
 * send said -EPIPE), the peer's close could only time out, and
 * canal_remote_error() said -ENOMEM. Bounded by the timeouts below and
 * the job's alarm. */
#include "engine_job.h"

#include "engine/internal.h"

#include <canal/remote.h>

#define TAG 1
#define N 200
#define WAIT_NS 10000000000ll

/* The previous faults all met: 0, or says which were not. */
static int faults_met(struct canal_remote_hub *hub, int rank, const char *when,
		      uint64_t sends, uint64_t recvs)
{
	uint64_t left = canal__remote_hub_fail_posts(hub, sends, recvs);
	if (left)
		fprintf(stderr, "rank %d: faults not met %s: %#llx\n", rank, when,
			(unsigned long long)left);
	return left != 0;
}

static int say(struct canal_remote *r, int rank, const char *what, int err)
{
	char why[200] = "";
	int cerr = canal_remote_error(r, why, sizeof why);
	fprintf(stderr, "rank %d: %s: %d (%s); channel error %d \"%s\"\n", rank,
		what, err, strerror(-err), cerr, why);
	return 1;
}

/* Rank 0: the receiving end. */
static int rank0(struct canal_remote_hub *hub, struct canal_remote *r)
{
	struct canal_chan *ch = canal_remote_chan(r);
	for (uint64_t i = 0; i < N; i++) {
		/* Before element N-3 is taken, so before this end's FIN:
		 * the sender's last element needs the credit for it. */
		if (i == N / 2 && faults_met(hub, 0, "mid-stream", 0x1, 0x1))
			return 1;
		uint64_t x = UINT64_MAX;
		int err = canal_recv_timeout(ch, &x, WAIT_NS);
		if (err || x != i) {
			fprintf(stderr, "rank 0: element %llu: got %llu\n",
				(unsigned long long)i, (unsigned long long)x);
			return say(r, 0, "receive", err);
		}
	}
	/* The end of the flow: the sender's FIN came. */
	uint64_t x;
	int err = canal_recv_timeout(ch, &x, WAIT_NS);
	if (err != -EPIPE)
		return say(r, 0, "receive after the last element (not -EPIPE)",
			   err);
	err = canal_remote_close(r, WAIT_NS);
	if (err)
		return say(r, 0, "close", err);
	return faults_met(hub, 0, "at the close", 0, 0);
}

/* Rank 1: the sending end. */
static int rank1(struct canal_remote_hub *hub, struct canal_remote *r)
{
	struct canal_chan *ch = canal_remote_chan(r);
	for (uint64_t i = 0; i < N; i++) {
		int err = canal_send_timeout(ch, &i, WAIT_NS);
		if (err) {
			fprintf(stderr, "rank 1: element %llu\n",
				(unsigned long long)i);
			return say(r, 1, "send", err);
		}
	}
	/* Every element handed to the engine (a step takes and posts under
	 * the hub's lock, which the hook takes): the next send of this end
	 * is its FIN, on the close (the receiver answers only that). */
	for (int k = 0; canal_chan_len(ch) != 0; k++) {
		if (k == 10000)
			return say(r, 1, "local channel never drained", 0);
		usleep(1000);
	}
	if (faults_met(hub, 1, "before the close", 0x1, 0))
		return 1;
	int err = canal_remote_close(r, WAIT_NS);
	if (err)
		return say(r, 1, "close", err);
	return faults_met(hub, 1, "at the close", 0, 0);
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	/* isends: the HELLO fails once, then the first DATA (rank 1) or
	 * CREDIT (rank 0) twice; irecvs: the first (and the third) fail. */
	CHECK_EQ(canal__remote_hub_fail_posts(hub, 0xd, rank == 0 ? 0x5 : 0x3),
		 0);
	int end = rank == 0 ? CANAL_REMOTE_RECV : CANAL_REMOTE_SEND;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_open(hub, 1 - rank, TAG, end, sizeof(uint64_t), 4,
				   &r),
		 0);
	int bad = rank == 0 ? rank0(hub, r) : rank1(hub, r);
	if (bad) { /* the hub cannot stop with the end open */
		fflush(NULL);
		_exit(1);
	}
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

int main(void)
{
	struct job j = { 2, "tcp", "default", 60, -1, NULL };
	CHECK_EQ(job_run(&j, body, NULL), 0);
	TEST_DONE("test_revremote_post_nomem");
}
