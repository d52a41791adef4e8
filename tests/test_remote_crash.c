/* test_remote_crash - a peer of a remote channel killed by SIGKILL in the
 * middle of the stream, on shm, loopback TCP and UCX (when built with it):
 *  - the sender dies (rank 1, after 2000 sends returned 0, with elements
 *    in its local channel and in flight): the receivers of rank 0 get a
 *    prefix of the sequence, each element once and in order, at least
 *    2000 - C of them (elements accepted and not yet received never
 *    exceed the capacity C, so at most C are lost), then -EPIPE; no hang;
 *    canal_remote_error() and canal_remote_close() say -ECONNRESET and
 *    name the peer;
 *  - the receiver dies (rank 1, after 100 receives): the sender of rank 0,
 *    blocked in canal_send on a full channel, gets -EPIPE; same error.
 * The job's alarm bounds the time; how long detection took is printed,
 * not checked. */
#include "engine_job.h"

#include <canal/remote.h>
#include <stdint.h>

#define CAP 8
#define SENT_BEFORE_DEATH 2000

static int report(struct canal_remote *r, const char *what, uint64_t t0)
{
	char why[200];
	CHECK_EQ(canal_remote_error(r, why, sizeof why), -ECONNRESET);
	CHECK(strstr(why, "peer 1") != NULL);
	printf("  %s: channel closed %.1f ms after the kill: %s\n", what,
	       (double)(canal_now_ns() - t0) / 1e6, why);
	CHECK_EQ(canal_remote_close(r, 20000000000), -ECONNRESET);
	return 0;
}

static int sender_dies(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_remote_hub *hub;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	CHECK_EQ(canal_remote_open(hub, 1 - rank, 1,
				   rank == 1 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV,
				   sizeof(uint64_t), CAP, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	if (rank == 1) {
		for (uint64_t i = 0;; i++) {
			CHECK_EQ(canal_send(ch, &i), 0);
			if (i + 1 == SENT_BEFORE_DEATH)
				raise(SIGKILL);
		}
	}
	uint64_t got = 0, x, t0 = 0;
	int err;
	while ((err = canal_recv(ch, &x)) == 0) {
		CHECK_EQ(x, got); /* once each, in order: a prefix */
		got++;
		if (got == SENT_BEFORE_DEATH - CAP)
			t0 = canal_now_ns(); /* about when it dies */
	}
	CHECK_EQ(err, -EPIPE);
	CHECK(got >= SENT_BEFORE_DEATH - CAP);
	CHECK(got <= SENT_BEFORE_DEATH);
	printf("  received %llu of the %d sent before the kill\n",
	       (unsigned long long)got, SENT_BEFORE_DEATH);
	CHECK_EQ(report(r, "sender killed", t0), 0);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

static int receiver_dies(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	struct canal_remote_hub *hub;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	CHECK_EQ(canal_remote_open(hub, 1 - rank, 1,
				   rank == 0 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV,
				   sizeof(uint64_t), CAP, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	if (rank == 1) {
		for (uint64_t i = 0; i < 100; i++) {
			uint64_t x;
			CHECK_EQ(canal_recv(ch, &x), 0);
			CHECK_EQ(x, i);
		}
		raise(SIGKILL);
	}
	uint64_t i = 0, t0 = 0;
	int err;
	while ((err = canal_send(ch, &i)) == 0) {
		i++;
		if (i == 100)
			t0 = canal_now_ns();
	}
	CHECK_EQ(err, -EPIPE);
	/* it took 100, then could hold no more than the capacity */
	CHECK(i >= 100 && i <= 100 + CAP);
	CHECK_EQ(report(r, "receiver killed", t0), 0);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp", "ucx" };
	int ndrivers = job_have_ucx() ? 3 : 2;
	if (ndrivers == 2)
		printf("canal built without UCX: shm and tcp only\n");
	for (int d = 0; d < ndrivers; d++) {
		struct job j = { 2, drivers[d], "default", 60, 1, NULL };
		printf("%s:\n", drivers[d]);
		fflush(stdout);
		CHECK_EQ(job_run(&j, sender_dies, NULL), 0);
		CHECK_EQ(job_run(&j, receiver_dies, NULL), 0);
		printf("%s: ok\n", drivers[d]);
		fflush(stdout);
	}
	TEST_DONE("test_remote_crash");
}
