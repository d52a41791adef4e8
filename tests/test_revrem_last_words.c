/* test_revrem_last_words - (review) elements that reached the receiving
 * process before its peer's gate closed are still received
 * (docs/GUARANTEES.md, Remote channels: "Elements that had reached the
 * receiving process are still received"; remote.h: "receivers first
 * drain the elements that had arrived"; engine.h: receives still take a
 * closed gate's messages that had arrived whole, its last words).
 *
 * Rank 1 plays the sending end with the engine alone (it follows the
 * protocol): hello, one element (100), then, once rank 0 says so, three
 * more (101, 102, 103) in three DATA messages, and closes its session.
 * Rank 0's receiving end (capacity 8: window 4) takes 100; then rank 0
 * holds the hub (canal_remote_hub_lock) and drives the engine until the
 * gate has failed, so that the three messages are all in the engine
 * (the hub's posted receive holds one, two are queued) when the hub sees
 * the failure. Expected: rank 0's receiver gets 101, 102, 103, then
 * -EPIPE; canal_remote_error says -ECONNRESET.
 * What happened: after 101 the hub gave a credit back; its send failed on
 * the closed gate, fail() stopped receiving at once (and marked the
 * end stopped), so 102 was taken and discarded and 103 never taken: the
 * receiver got 101 and -EPIPE. On shm and TCP; the job's alarm bounds
 * the time. */
#include "engine_job.h"

#include <canal/remote.h>
#include <endian.h>
#include <stdint.h>

#define TAG 5
#define SYNC 300

static void put(struct canal_engine *e, int gate, unsigned tag, const void *b,
		size_t len)
{
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_isend(e, gate, tag, b, len, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
}

static void hello(struct canal_engine *e)
{
	unsigned char b[32] = { 0 };
	uint32_t k = htole32(1), end = htole32(CANAL_REMOTE_SEND);
	uint64_t elt = htole64(8), cap = htole64(8);
	memcpy(b, &k, 4);
	memcpy(b + 4, &end, 4);
	memcpy(b + 8, &elt, 8);
	memcpy(b + 16, &cap, 8);
	put(e, 0, TAG, b, sizeof b);
}

/* A DATA message of one 8-byte element. */
static void data(struct canal_engine *e, uint64_t v)
{
	unsigned char b[16];
	uint32_t k = htole32(2), n = htole32(1);
	memcpy(b, &k, 4);
	memcpy(b + 4, &n, 4);
	memcpy(b + 8, &v, 8);
	put(e, 0, TAG, b, sizeof b);
}

static int sender(struct canal_engine *e)
{
	hello(e);
	unsigned char b[32];
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_irecv(e, 0, TAG, b, sizeof b, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0); /* the receiver's hello */
	data(e, 100);
	uint32_t go;
	CHECK_EQ(canal_engine_irecv(e, 0, SYNC, &go, sizeof go, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	for (uint64_t v = 101; v <= 103; v++)
		data(e, v);
	return 0; /* the session closes: the gate fails at rank 0 */
}

static int receiver(struct canal_engine *e)
{
	struct canal_remote_hub *hub;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	CHECK_EQ(canal_remote_open(hub, 1, TAG, CANAL_REMOTE_RECV, 8, 8, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	uint64_t x;
	CHECK_EQ(canal_recv(ch, &x), 0);
	CHECK_EQ(x, 100);
	canal_remote_hub_lock(hub);
	uint32_t go = 1;
	put(e, 1, SYNC, &go, sizeof go);
	while (canal_engine_gate_error(e, 1, NULL, 0) == 0) {
		canal_engine_progress(e);
		usleep(1000);
	}
	canal_remote_hub_unlock(hub);
	uint64_t want = 101;
	int err;
	while ((err = canal_recv(ch, &x)) == 0) {
		CHECK_EQ(x, want);
		want++;
	}
	CHECK_EQ(err, -EPIPE);
	if (want != 104) {
		fprintf(stderr,
			"rank 0: received up to %llu then -EPIPE; 101..103 had "
			"reached this process before the gate closed\n",
			(unsigned long long)want - 1);
		return 1;
	}
	CHECK_EQ(canal_remote_error(r, NULL, 0), -ECONNRESET);
	CHECK_EQ(canal_remote_close(r, 20000000000ll), -ECONNRESET);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	return rank == 0 ? receiver(e) : sender(e);
}

int main(void)
{
	job_run_shm_tcp(2, 60, body, NULL);
	TEST_DONE("test_revrem_last_words");
}
