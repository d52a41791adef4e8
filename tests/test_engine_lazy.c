/* test_engine_lazy - shm gates connected on first use (the default
 * connect mode, transfer/lazy.c):
 *  - a ring of 4 ranks, each sending only to the next and receiving from
 *    any gate: every message arrives once, and each rank ends with drivers
 *    for its two neighbours only (a session connected eagerly would have
 *    three: the check fails there);
 *  - two ranks sending to each other at the same moment (both build the
 *    pair's segment, one link wins): 20 jobs, exactly once both ways;
 *  - a peer that sends its last messages and dies before the receiver ever
 *    connected: the receiver still gets them all, then -ECONNRESET;
 *  - a peer that dies without sending: an any-gate receive fails with
 *    -ECONNRESET and the gate's error names the peer;
 *  - connect "eager" still works; a bad mode is -EINVAL. */
#include "engine_job.h"

#include "engine/internal.h"

static int drivers(struct canal_engine *e)
{
	int n = 0;
	for (int g = 0; g < e->size; g++)
		n += g != e->rank && e->gates[g].drv != NULL;
	return n;
}

#define RING_MSGS 300

static int ring_body(struct canal_engine *e, int rank, int size, void *arg)
{
	bool lazy = *(bool *)arg;
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	CHECK_EQ(drivers(e), lazy ? 0 : size - 1);
	struct canal_engine_req *s[RING_MSGS];
	uint32_t out[RING_MSGS];
	for (uint32_t i = 0; i < RING_MSGS; i++) {
		out[i] = (uint32_t)rank << 16 | i;
		CHECK_EQ(canal_engine_isend(e, next, 1, &out[i], sizeof out[i], 0,
					    &s[i]),
			 0);
	}
	for (uint32_t i = 0; i < RING_MSGS; i++) {
		uint32_t v;
		struct canal_engine_req *r;
		struct canal_engine_status st;
		CHECK_EQ(canal_engine_irecv(e, CANAL_ENGINE_ANY_GATE, 1, &v,
					    sizeof v, &r),
			 0);
		CHECK_EQ(canal_engine_wait(e, r, &st), 0);
		CHECK_EQ(st.gate, prev);
		CHECK_EQ(v, (uint32_t)prev << 16 | i); /* in order, once */
	}
	for (int i = 0; i < RING_MSGS; i++)
		CHECK_EQ(canal_engine_wait(e, s[i], NULL), 0);
	/* Nothing was ever sent between ranks two apart. */
	CHECK_EQ(drivers(e), lazy ? 2 : size - 1);
	/* closing: the ring the other way round, so nobody leaves while a
	 * neighbour still needs it */
	int one = 1;
	struct canal_engine_req *q[2];
	CHECK_EQ(canal_engine_isend(e, prev, 2, &one, sizeof one, 0, &q[0]), 0);
	CHECK_EQ(canal_engine_irecv(e, next, 2, &one, sizeof one, &q[1]), 0);
	CHECK_EQ(canal_engine_wait(e, q[0], NULL), 0);
	CHECK_EQ(canal_engine_wait(e, q[1], NULL), 0);
	return 0;
}

#define CROSS_MSGS 200

static int cross_body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	int peer = 1 - rank;
	uint32_t out[CROSS_MSGS], in[CROSS_MSGS];
	struct canal_engine_req *s[CROSS_MSGS], *r[CROSS_MSGS];
	for (uint32_t i = 0; i < CROSS_MSGS; i++) {
		out[i] = i * 2 + (uint32_t)rank;
		CHECK_EQ(canal_engine_isend(e, peer, 0, &out[i], sizeof out[i], 0,
					    &s[i]),
			 0);
	}
	for (int i = 0; i < CROSS_MSGS; i++)
		CHECK_EQ(canal_engine_irecv(e, peer, 0, &in[i], sizeof in[i],
					    &r[i]),
			 0);
	for (uint32_t i = 0; i < CROSS_MSGS; i++) {
		CHECK_EQ(canal_engine_wait(e, r[i], NULL), 0);
		CHECK_EQ(in[i], i * 2 + (uint32_t)peer);
	}
	for (int i = 0; i < CROSS_MSGS; i++)
		CHECK_EQ(canal_engine_wait(e, s[i], NULL), 0);
	CHECK_EQ(drivers(e), 1);
	/* closing handshake */
	int one = 1;
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_isend(e, peer, 1, &one, sizeof one, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	CHECK_EQ(canal_engine_irecv(e, peer, 1, &one, sizeof one, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	return 0;
}

static int last_words_body(struct canal_engine *e, int rank, int size,
			   void *arg)
{
	(void)size;
	(void)arg;
	if (rank == 1) {
		for (int i = 0; i < 3; i++) {
			struct canal_engine_req *s;
			int v = 100 + i;
			CHECK_EQ(canal_engine_isend(e, 0, 4, &v, sizeof v, 0, &s), 0);
			CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
		}
		_exit(0); /* dies without closing */
	}
	/* Rank 0 makes no call until rank 1 is surely gone. */
	usleep(300 * 1000);
	CHECK_EQ(drivers(e), 0);
	for (int i = 0; i < 3; i++) {
		int v = 0;
		struct canal_engine_req *r;
		CHECK_EQ(canal_engine_irecv(e, 1, 4, &v, sizeof v, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		CHECK_EQ(v, 100 + i);
	}
	int v;
	struct canal_engine_req *r;
	int err = canal_engine_irecv(e, 1, 4, &v, sizeof v, &r);
	if (err == 0)
		err = canal_engine_wait(e, r, NULL);
	CHECK_EQ(err, -ECONNRESET);
	return 0;
}

static int silent_death_body(struct canal_engine *e, int rank, int size,
			     void *arg)
{
	(void)size;
	(void)arg;
	if (rank == 1)
		_exit(0); /* opened, never sent anything */
	int v;
	struct canal_engine_req *r;
	CHECK_EQ(canal_engine_irecv(e, CANAL_ENGINE_ANY_GATE, 0, &v, sizeof v,
				    &r),
		 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), -ECONNRESET);
	char why[160];
	CHECK_EQ(canal_engine_gate_error(e, 1, why, sizeof why), -ECONNRESET);
	CHECK(strstr(why, "peer 1") && strstr(why, "died"));
	CHECK_EQ(drivers(e), 0);
	return 0;
}

int main(void)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 1;
	o.connect = "later";
	struct canal_engine *e;
	CHECK_EQ(canal_engine_open(&o, &e), -EINVAL);
	o.connect = "eager";
	CHECK_EQ(canal_engine_open(&o, &e), 0);
	CHECK_EQ(canal_engine_close(e), 0);

	unsetenv("CANAL_ENGINE_CONNECT");
	bool lazy = true;
	struct job j = { .n = 4, .driver = "shm", .strategy = "default",
			 .timeout_s = 60, .killed_rank = -1 };
	CHECK_EQ(job_run(&j, ring_body, &lazy), 0);
	j.strategy = "aggregate";
	CHECK_EQ(job_run(&j, ring_body, &lazy), 0);
	/* The control: eager gives every rank all its drivers at open. */
	setenv("CANAL_ENGINE_CONNECT", "eager", 1);
	lazy = false;
	j.strategy = "default";
	CHECK_EQ(job_run(&j, ring_body, &lazy), 0);
	unsetenv("CANAL_ENGINE_CONNECT");

	j.n = 2;
	for (int k = 0; k < 20; k++)
		CHECK_EQ(job_run(&j, cross_body, NULL), 0);
	CHECK_EQ(job_run(&j, last_words_body, NULL), 0);
	CHECK_EQ(job_run(&j, silent_death_body, NULL), 0);
	puts("test_engine_lazy: ok");
	return 0;
}
