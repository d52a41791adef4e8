/* test_remote_channel - remote channels (<canal/remote.h>) between two
 * processes over the engine, on shm, on loopback TCP and over UCX (when
 * built with it):
 *  - bad input: NULL, unknown end, bad gate and tag, elt_size 0 or too
 *    big, capacity 0 or too big -> -EINVAL; a second open of one (gate,
 *    tag) -> -EBUSY; stopping a hub with channels open -> -EBUSY; the
 *    session used directly under canal_remote_hub_lock() meanwhile;
 *  - stress both ways at once: 4 producer threads per process send on the
 *    remote channel, 2 consumer threads of the other process receive, with
 *    a small capacity (credits run out all the time); closed midway
 *    through the consumers' work by the sending side once the producers
 *    are done: every element received exactly once, each producer's
 *    elements in order for every consumer, then -EPIPE;
 *  - capacity is a bound end to end: a receiver that does not receive
 *    lets exactly C try_sends succeed (the C-th may need the hub to move
 *    elements first), then -EAGAIN (checked 300 times over a while) and a
 *    timed send times out; once the receiver receives, everything comes in
 *    order and the flow goes on;
 *  - timed receive on an empty remote channel: -ETIMEDOUT;
 *  - canal_select mixing a remote and a local channel, sending and
 *    receiving;
 *  - the receiving end closes early: the sender's blocked sends end with
 *    -EPIPE, both closes return 0;
 *  - a sending end closed with a timeout that runs out: -ETIMEDOUT, the
 *    elements that had crossed are still received, then -EPIPE, and the
 *    receiving end says -ECONNABORTED;
 *  - ends opened differently (element size; both ends sending): -EPROTO on
 *    both sides, users woken with -EPIPE, a message saying what differs;
 *  - a ping-pong of PINGS round trips (one remote channel each way, one
 *    thread per process, each value echoed + 1): every reply right; with
 *    caller progress on, waiting threads ran hub rounds themselves, with
 *    it off (CANAL_REMOTE_CALLER_PROGRESS=0) none did;
 *  - a sender whose hub thread naps (CANAL_REMOTE_SPIN_US=0) pushes its
 *    elements itself: rounds run by sends, every element in order.
 * Everything but the last runs twice per driver, caller progress on and
 * off.
 * Pass/fail never depends on timing (the job's alarm bounds the time). */
#include "engine_job.h"
#include "remote_stress.h"

#include "engine/internal.h" /* canal__remote_hub_rounds */

#include <canal/remote.h>
#include <stdint.h>

static int per_producer(void)
{
	return getenv("CANAL_STRESS") ? 50000 : 3000;
}

static int stress(struct canal_remote_hub *hub, int rank)
{
	return remote_stress(hub, rank, per_producer(), 16);
}

/* ---- capacity bound, timed operations ---- */

#define C_BOUND 6

static int bound(struct canal_remote_hub *hub, int rank)
{
	int peer = 1 - rank;
	struct canal_remote *data, *go, *ready;
	int dir = rank == 0 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV;
	int rdir = rank == 0 ? CANAL_REMOTE_RECV : CANAL_REMOTE_SEND;
	CHECK_EQ(canal_remote_open(hub, peer, 3, dir, sizeof(uint64_t), C_BOUND, &data), 0);
	CHECK_EQ(canal_remote_open(hub, peer, 4, dir, sizeof(int), 2, &go), 0);
	CHECK_EQ(canal_remote_open(hub, peer, 5, rdir, sizeof(int), 2, &ready), 0);
	struct canal_chan *ch = canal_remote_chan(data);
	int v = 1;
	if (rank == 0) {
		uint64_t i = 0;
		/* fill: C successes, waiting for the hub as needed */
		uint64_t give_up = canal_now_ns() + 30000000000ull;
		while (i < C_BOUND) {
			int err = canal_try_send(ch, &i);
			if (err == 0) {
				i++;
				continue;
			}
			CHECK_EQ(err, -EAGAIN);
			if (canal_now_ns() > give_up) {
				fprintf(stderr, "bound: only %llu of %d sends went through\n",
					(unsigned long long)i, C_BOUND);
				return 1;
			}
			usleep(1000);
		}
		/* and not one more, however long the hub has */
		for (int k = 0; k < 300; k++) {
			CHECK_EQ(canal_try_send(ch, &i), -EAGAIN);
			if (k % 50 == 0)
				usleep(2000);
		}
		CHECK_EQ(canal_send_timeout(ch, &i, 20000000), -ETIMEDOUT);
		CHECK_EQ(canal_recv(canal_remote_chan(ready), &v), 0);
		CHECK_EQ(canal_try_send(ch, &i), -EAGAIN);
		CHECK_EQ(canal_send(canal_remote_chan(go), &v), 0);
		/* the flow goes on once the receiver receives */
		for (; i < C_BOUND + 500; i++)
			CHECK_EQ(canal_send(ch, &i), 0);
		CHECK_EQ(canal_close(ch), 0);
		CHECK_EQ(canal_close(canal_remote_chan(go)), 0);
	} else {
		/* nothing can come on go before we say ready */
		CHECK_EQ(canal_recv_timeout(canal_remote_chan(go), &v, 5000000), -ETIMEDOUT);
		CHECK_EQ(canal_send(canal_remote_chan(ready), &v), 0);
		CHECK_EQ(canal_recv(canal_remote_chan(go), &v), 0);
		CHECK(canal_chan_len(ch) <= C_BOUND - C_BOUND / 2);
		for (uint64_t i = 0; i < C_BOUND + 500; i++) {
			uint64_t x;
			CHECK_EQ(canal_recv(ch, &x), 0);
			CHECK_EQ(x, i);
		}
		uint64_t x;
		CHECK_EQ(canal_recv(ch, &x), -EPIPE);
		CHECK_EQ(canal_recv_timeout(ch, &x, 1000000), -EPIPE);
		CHECK_EQ(canal_recv(canal_remote_chan(go), &v), -EPIPE);
		/* Rank 0, the receiving end of ready, may have closed it
		 * already (its canal_remote_close tells this side to stop):
		 * then this close finds it closed. */
		int cr = canal_close(canal_remote_chan(ready));
		CHECK(cr == 0 || cr == -EPIPE);
	}
	CHECK_EQ(canal_remote_close(data, 20000000000), 0);
	CHECK_EQ(canal_remote_close(go, 20000000000), 0);
	CHECK_EQ(canal_remote_close(ready, 20000000000), 0);
	return 0;
}

/* ---- select mixing remote and local channels ---- */

#define SEL_N 500

struct local_feed {
	struct canal_chan *ch;
};

static void *feed_local(void *arg)
{
	struct local_feed *f = arg;
	for (uint32_t i = 0; i < SEL_N; i++)
		CHECK_EQ(canal_send(f->ch, &i), 0);
	CHECK_EQ(canal_close(f->ch), 0);
	return NULL;
}

static int select_mix(struct canal_remote_hub *hub, int rank)
{
	int peer = 1 - rank;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_open(hub, peer, 6,
				   rank == 0 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV,
				   sizeof(uint32_t), 4, &r), 0);
	if (rank == 0) {
		/* a send case on the remote channel beside a local receive
		 * case that is never ready */
		struct canal_chan *idle = canal_chan_create(sizeof(uint32_t), 1, 0);
		CHECK(idle);
		for (uint32_t i = 0; i < SEL_N; i++) {
			uint32_t in = 0, out = i;
			struct canal_case cs[2] = {
				{ idle, CANAL_OP_RECV, &in, 0 },
				{ canal_remote_chan(r), CANAL_OP_SEND, &out, 0 },
			};
			CHECK_EQ(canal_select(cs, 2, -1, 0), 1);
			CHECK_EQ(cs[1].result, 0);
		}
		CHECK_EQ(canal_close(canal_remote_chan(r)), 0);
		canal_chan_destroy(idle);
	} else {
		struct canal_chan *local = canal_chan_create(sizeof(uint32_t), 3, 0);
		CHECK(local);
		struct local_feed f = { local };
		pthread_t t = spawn(feed_local, &f);
		uint32_t next[2] = { 0, 0 }, buf[2];
		struct canal_case cs[2] = {
			{ local, CANAL_OP_RECV, &buf[0], 0 },
			{ canal_remote_chan(r), CANAL_OP_RECV, &buf[1], 0 },
		};
		for (;;) {
			int k = canal_select(cs, 2, -1, 0);
			if (k == -ENOENT)
				break;
			CHECK(k == 0 || k == 1);
			if (cs[k].result == -EPIPE) {
				cs[k].ch = NULL;
				continue;
			}
			CHECK_EQ(cs[k].result, 0);
			CHECK_EQ(buf[k], next[k]);
			next[k]++;
		}
		CHECK_EQ(next[0], SEL_N);
		CHECK_EQ(next[1], SEL_N);
		join(t);
		canal_chan_destroy(local);
	}
	CHECK_EQ(canal_remote_close(r, 20000000000), 0);
	return 0;
}

/* ---- the receiving end closes early ---- */

static int receiver_closes(struct canal_remote_hub *hub, int rank)
{
	int peer = 1 - rank;
	struct canal_remote *r;
	CHECK_EQ(canal_remote_open(hub, peer, 7,
				   rank == 0 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV,
				   sizeof(uint64_t), 4, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	if (rank == 0) {
		uint64_t i = 0;
		int err;
		while ((err = canal_send(ch, &i)) == 0)
			i++;
		CHECK_EQ(err, -EPIPE);
		CHECK(i >= 10);
	} else {
		for (uint64_t i = 0; i < 10; i++) {
			uint64_t x;
			CHECK_EQ(canal_recv(ch, &x), 0);
			CHECK_EQ(x, i);
		}
	}
	CHECK_EQ(canal_remote_close(r, 20000000000), 0);
	return 0;
}

/* ---- ends opened differently ---- */

static int mismatch(struct canal_remote_hub *hub, int rank)
{
	int peer = 1 - rank;
	struct canal_remote *a, *b;
	/* tag 8: element sizes differ; tag 9: both ends send */
	CHECK_EQ(canal_remote_open(hub, peer, 8,
				   rank == 0 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV,
				   rank == 0 ? 8 : 16, 4, &a), 0);
	CHECK_EQ(canal_remote_open(hub, peer, 9, CANAL_REMOTE_SEND, 8, 4, &b), 0);
	unsigned char x[16] = { 0 };
	int err;
	if (rank == 0)
		while ((err = canal_send(canal_remote_chan(a), x)) == 0)
			;
	else
		err = canal_recv(canal_remote_chan(a), x);
	CHECK_EQ(err, -EPIPE);
	while ((err = canal_send(canal_remote_chan(b), x)) == 0)
		;
	CHECK_EQ(err, -EPIPE);
	char why[200];
	CHECK_EQ(canal_remote_error(a, why, sizeof why), -EPROTO);
	CHECK(strstr(why, "elt_size") || strstr(why, "protocol error"));
	CHECK_EQ(canal_remote_error(b, why, sizeof why), -EPROTO);
	CHECK(strstr(why, "both ends") || strstr(why, "protocol error"));
	CHECK_EQ(canal_remote_close(a, 20000000000), -EPROTO);
	CHECK_EQ(canal_remote_close(b, 20000000000), -EPROTO);
	return 0;
}

/* ---- a sending end closed with a timeout that runs out ---- */

/* Rank 0 fills the channel (2 elements at the receiving end, 2 in its own
 * local channel, no credit left), then closes with timeout 0: -ETIMEDOUT,
 * its 2 local elements are lost; the hub finishes the exchange in the
 * background. Rank 1 then gets the 2 that had crossed, then -EPIPE, and
 * its close says -ECONNABORTED: its stream was cut short (remote.h;
 * test_revrem_close_gave_up). */
static int abandon(struct canal_remote_hub *hub, int rank)
{
	int peer = 1 - rank;
	struct canal_remote *r, *go;
	int dir = rank == 0 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV;
	CHECK_EQ(canal_remote_open(hub, peer, 10, dir, sizeof(uint64_t), 4, &r), 0);
	CHECK_EQ(canal_remote_open(hub, peer, 11, dir, sizeof(int), 2, &go), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	int v = 0;
	if (rank == 0) {
		for (uint64_t i = 0; i < 4; i++)
			CHECK_EQ(canal_send(ch, &i), 0);
		CHECK_EQ(canal_remote_close(r, 0), -ETIMEDOUT);
		CHECK_EQ(canal_send(canal_remote_chan(go), &v), 0);
		CHECK_EQ(canal_close(canal_remote_chan(go)), 0);
	} else {
		CHECK_EQ(canal_recv(canal_remote_chan(go), &v), 0);
		for (uint64_t i = 0; i < 2; i++) {
			uint64_t x;
			CHECK_EQ(canal_recv(ch, &x), 0);
			CHECK_EQ(x, i);
		}
		uint64_t x;
		CHECK_EQ(canal_recv(ch, &x), -EPIPE);
		CHECK_EQ(canal_recv(canal_remote_chan(go), &v), -EPIPE);
		CHECK_EQ(canal_remote_error(r, NULL, 0), -ECONNABORTED);
		CHECK_EQ(canal_remote_close(r, 20000000000), -ECONNABORTED);
	}
	CHECK_EQ(canal_remote_close(go, 20000000000), 0);
	return 0;
}

/* ---- bad input ---- */

static int bad_input(struct canal_engine *e, struct canal_remote_hub *hub,
		     int rank)
{
	struct canal_remote *r = NULL, *r2;
	struct canal_remote_hub *h2;
	int peer = 1 - rank;
	CHECK_EQ(canal_remote_hub_start(NULL, &h2), -EINVAL);
	CHECK_EQ(canal_remote_hub_start(e, NULL), -EINVAL);
	CHECK_EQ(canal_remote_hub_stop(NULL), -EINVAL);
	CHECK_EQ(canal_remote_open(NULL, peer, 1, CANAL_REMOTE_SEND, 8, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, CANAL_REMOTE_SEND, 8, 4, NULL), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, 0, 8, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, 3, 8, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, rank, 1, CANAL_REMOTE_SEND, 8, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, -1, 1, CANAL_REMOTE_SEND, 8, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, 2, 1, CANAL_REMOTE_SEND, 8, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, CANAL_ENGINE_TAG_MAX + 1, CANAL_REMOTE_SEND, 8, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, CANAL_REMOTE_SEND, 0, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, CANAL_REMOTE_SEND, CANAL_REMOTE_ELT_SIZE_MAX + 1, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, CANAL_REMOTE_SEND, SIZE_MAX, 4, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, CANAL_REMOTE_SEND, 8, 0, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, CANAL_REMOTE_SEND, 8, CANAL_CAPACITY_MAX + 1, &r), -EINVAL);
	CHECK_EQ(canal_remote_open(hub, peer, 1, CANAL_REMOTE_SEND, 8, SIZE_MAX, &r), -EINVAL);
	CHECK(r == NULL);
	CHECK(canal_remote_chan(NULL) == NULL);
	CHECK_EQ(canal_remote_error(NULL, NULL, 0), -EINVAL);
	CHECK_EQ(canal_remote_close(NULL, 0), -EINVAL);
	/* a busy (gate, tag); a hub with channels open cannot stop. Tag
	 * 100 is opened on both sides (the peer runs the same code), so the
	 * close below ends normally. */
	int dir = rank == 0 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV;
	CHECK_EQ(canal_remote_open(hub, peer, 100, dir, 8, 1, &r), 0);
	CHECK_EQ(canal_remote_open(hub, peer, 100, dir, 8, 1, &r2), -EBUSY);
	CHECK_EQ(canal_chan_capacity(canal_remote_chan(r)), 1); /* 1 acts as 2 */
	CHECK_EQ(canal_remote_hub_stop(hub), -EBUSY);
	/* the session can be used meanwhile, under the hub's lock: a message
	 * on another tag, while tag 100's hello crosses */
	canal_remote_hub_lock(hub);
	CHECK_EQ(canal_engine_gate_error(e, peer, NULL, 0), 0);
	struct canal_engine_req *q;
	uint64_t v = rank == 0 ? 0xfeedu : 0;
	if (rank == 0)
		CHECK_EQ(canal_engine_isend(e, peer, 200, &v, sizeof v, 0, &q), 0);
	else
		CHECK_EQ(canal_engine_irecv(e, peer, 200, &v, sizeof v, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	CHECK_EQ(v, 0xfeedu);
	canal_remote_hub_unlock(hub);
	CHECK_EQ(canal_remote_close(r, 20000000000), 0);
	return 0;
}

/* ---- ping-pong, and who ran the rounds ---- */

#define PINGS 2000

static int ping_pong(struct canal_remote_hub *hub, int rank, bool callers)
{
	int peer = 1 - rank;
	struct canal_remote *out, *in;
	CHECK_EQ(canal_remote_open(hub, peer, rank ? 21 : 20, CANAL_REMOTE_SEND,
				   sizeof(uint64_t), 16, &out), 0);
	CHECK_EQ(canal_remote_open(hub, peer, rank ? 20 : 21, CANAL_REMOTE_RECV,
				   sizeof(uint64_t), 16, &in), 0);
	struct canal__remote_rounds r0, r1;
	canal__remote_hub_rounds(hub, &r0);
	struct canal_chan *o = canal_remote_chan(out), *i = canal_remote_chan(in);
	uint64_t v = 0;
	for (uint64_t k = 0; k < PINGS; k++) {
		if (rank == 0) {
			v = 2 * k;
			CHECK_EQ(canal_send(o, &v), 0);
			CHECK_EQ(canal_recv(i, &v), 0);
			CHECK_EQ(v, 2 * k + 1);
		} else {
			CHECK_EQ(canal_recv(i, &v), 0);
			CHECK_EQ(v, 2 * k);
			v++;
			CHECK_EQ(canal_send(o, &v), 0);
		}
	}
	canal__remote_hub_rounds(hub, &r1);
	if (callers) {
		CHECK(r1.waiting > r0.waiting);
	} else {
		CHECK_EQ(r1.waiting, r0.waiting);
		CHECK_EQ(r1.sending, r0.sending);
	}
	CHECK_EQ(canal_close(o), 0);
	CHECK_EQ(canal_recv(i, &v), -EPIPE);
	CHECK_EQ(canal_remote_close(out, 20000000000), 0);
	CHECK_EQ(canal_remote_close(in, 20000000000), 0);
	return 0;
}

/* ---- a send to a napping hub pushes its element itself ---- */

#define KICKS 200

/* The hub thread naps as soon as it is idle (CANAL_REMOTE_SPIN_US=0):
 * rank 0 sends KICKS elements one at a time, pausing 300 us after each
 * (the hub naps meanwhile), on a channel whose credits never run out
 * (capacity 2 x KICKS: rank 0 never waits); rank 1 receives them all in
 * order. Rank 0's sends ran rounds themselves (most find the hub
 * napping; a send that finds it awake leaves the element to it). */
static int kick_body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	setenv("CANAL_REMOTE_CALLER_PROGRESS", "1", 1);
	setenv("CANAL_REMOTE_SPIN_US", "0", 1);
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	struct canal_remote *r;
	CHECK_EQ(canal_remote_open(hub, 1 - rank, 30,
				   rank ? CANAL_REMOTE_RECV : CANAL_REMOTE_SEND,
				   sizeof(uint64_t), 2 * KICKS, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	uint64_t v;
	if (rank == 0) {
		struct canal__remote_rounds r0, r1;
		canal__remote_hub_rounds(hub, &r0);
		for (uint64_t k = 0; k < KICKS; k++) {
			CHECK_EQ(canal_send(ch, &k), 0);
			usleep(300);
		}
		canal__remote_hub_rounds(hub, &r1);
		CHECK(r1.sending > r0.sending);
		CHECK_EQ(r1.waiting, r0.waiting); /* it never waited */
		CHECK_EQ(canal_close(ch), 0);
	} else {
		for (uint64_t k = 0; k < KICKS; k++) {
			CHECK_EQ(canal_recv(ch, &v), 0);
			CHECK_EQ(v, k);
		}
		CHECK_EQ(canal_recv(ch, &v), -EPIPE);
	}
	CHECK_EQ(canal_remote_close(r, 20000000000), 0);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	bool callers = *(const bool *)arg;
	setenv("CANAL_REMOTE_CALLER_PROGRESS", callers ? "1" : "0", 1);
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	CHECK_EQ(ping_pong(hub, rank, callers), 0);
	CHECK_EQ(bad_input(e, hub, rank), 0);
	CHECK_EQ(stress(hub, rank), 0);
	CHECK_EQ(bound(hub, rank), 0);
	CHECK_EQ(select_mix(hub, rank), 0);
	CHECK_EQ(receiver_closes(hub, rank), 0);
	CHECK_EQ(mismatch(hub, rank), 0);
	CHECK_EQ(abandon(hub, rank), 0);
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
		for (int c = 1; c >= 0; c--) {
			bool callers = c;
			struct job j = { 2, drivers[d], "default", 100, -1, NULL };
			CHECK_EQ(job_run(&j, body, &callers), 0);
			printf("%s, caller progress %s: ok\n", drivers[d],
			       callers ? "on" : "off");
			fflush(stdout);
		}
		struct job k = { 2, drivers[d], "default", 100, -1, NULL };
		CHECK_EQ(job_run(&k, kick_body, NULL), 0);
		printf("%s, sends to a napping hub: ok\n", drivers[d]);
		fflush(stdout);
	}
	TEST_DONE("test_remote_channel");
}
