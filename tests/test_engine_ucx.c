/* test_engine_ucx.c - the engine over the UCX driver (issue 16): exactly
 * once and per-(gate, tag) order with 2 and 3 processes, both strategies,
 * sizes through UCX's eager, UCX's rendezvous and the engine's rendezvous
 * (above 1 MiB); a peer killed by SIGKILL fails its gate (named) instead
 * of hanging; bulk transfers (truncation, late receives, a sender that
 * dies mid-transfer). Skips when
 * canal was built without UCX. */
#include "engine_job.h"
#include "remote_traffic.h"

static int traffic(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)rank, (void)size, (void)arg;
	if (strcmp(canal_engine_driver(e), "ucx") != 0)
		return 5;
	return remote_traffic(e, 30, 1);
}

/* Rank 1 sends one message and dies (SIGKILL); rank 0's next receive
 * fails with -ECONNRESET (the peer's pid is gone: same host) and the
 * gate's message names the peer; then rank 0 can still close. */
static int crash(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size, (void)arg;
	char buf[16] = "";
	struct canal_engine_req *r;
	if (rank == 1) {
		if (canal_engine_isend(e, 0, 3, "last", 5, 0, &r) ||
		    canal_engine_wait(e, r, NULL))
			return 1;
		/* Let it leave before dying: a killed sender guarantees
		 * nothing about what it had not handed over. */
		for (int i = 0; i < 1000; i++)
			canal_engine_progress(e);
		usleep(200000);
		raise(SIGKILL);
	}
	if (canal_engine_irecv(e, 1, 3, buf, sizeof buf, &r) ||
	    canal_engine_wait(e, r, NULL) || strcmp(buf, "last") != 0)
		return 2;
	if (canal_engine_irecv(e, 1, 3, buf, sizeof buf, &r))
		return 3;
	int err = canal_engine_wait(e, r, NULL);
	char why[160];
	if (err != -ECONNRESET ||
	    canal_engine_gate_error(e, 1, why, sizeof why) != -ECONNRESET ||
	    !strstr(why, "peer 1")) {
		fprintf(stderr, "crash: wait %d, why '%s'\n", err, why);
		return 4;
	}
	return 0;
}

/* Bulk transfers (messages of 8448 B and more: the engine's RTS, the data
 * by UCX's rendezvous between the users' buffers): a receive buffer too
 * small fails with -EMSGSIZE and the message's length, and holds the
 * message's first bytes (UCX alone writes nothing into a rendezvous
 * receive that is too small), the next message
 * on the gate still arrives whole; a receive posted before the data and
 * one posted long after it both complete with the right bytes. */
#define BULK_LEN ((size_t)200000)
static int bulk_cases(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size, (void)arg;
	unsigned char *b = malloc(BULK_LEN);
	CHECK(b != NULL);
	struct canal_engine_req *r[3];
	struct canal_engine_status st;
	if (rank == 1) {
		for (int i = 0; i < 3; i++) {
			memset(b, 'a' + i, BULK_LEN);
			CHECK_EQ(canal_engine_isend(e, 0, 4, b, BULK_LEN, 0, &r[0]), 0);
			CHECK_EQ(canal_engine_wait(e, r[0], NULL), 0);
		}
		/* the go-ahead for the third, sent after rank 0 slept */
		CHECK_EQ(canal_engine_irecv(e, 0, 5, b, 1, &r[0]), 0);
		CHECK_EQ(canal_engine_wait(e, r[0], NULL), 0);
		free(b);
		return 0;
	}
	unsigned char small[1000];
	CHECK_EQ(canal_engine_irecv(e, 1, 4, small, sizeof small, &r[0]), 0);
	CHECK_EQ(canal_engine_wait(e, r[0], &st), -EMSGSIZE);
	CHECK_EQ(st.len, BULK_LEN);
	/* engine.h: only the buffer's length was written (the first part) */
	for (size_t k = 0; k < sizeof small; k++)
		if (small[k] != 'a')
			return 3;
	CHECK_EQ(canal_engine_irecv(e, 1, 4, b, BULK_LEN, &r[1]), 0);
	CHECK_EQ(canal_engine_wait(e, r[1], &st), 0);
	CHECK_EQ(st.len, BULK_LEN);
	for (size_t k = 0; k < BULK_LEN; k++)
		if (b[k] != 'b')
			return 1;
	/* the third was sent meanwhile: its RTS waits as unexpected */
	usleep(100000);
	for (int i = 0; i < 100; i++)
		canal_engine_progress(e);
	CHECK_EQ(canal_engine_irecv(e, 1, 4, b, BULK_LEN, &r[2]), 0);
	CHECK_EQ(canal_engine_wait(e, r[2], &st), 0);
	for (size_t k = 0; k < BULK_LEN; k++)
		if (b[k] != 'c')
			return 2;
	CHECK_EQ(canal_engine_isend(e, 1, 5, "g", 1, 0, &r[0]), 0);
	CHECK_EQ(canal_engine_wait(e, r[0], NULL), 0);
	free(b);
	return 0;
}

/* Rank 1 starts a bulk send and dies before rank 0 posts its receive:
 * the receive (posted after) fails with -ECONNRESET, within the health
 * check's time and the bulk's cancel (no hang on UCX's rendezvous). */
static int bulk_crash(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size, (void)arg;
	unsigned char *b = malloc(BULK_LEN);
	CHECK(b != NULL);
	memset(b, 'x', BULK_LEN);
	struct canal_engine_req *r;
	if (rank == 1) {
		CHECK_EQ(canal_engine_isend(e, 0, 6, b, BULK_LEN, 0, &r), 0);
		for (int i = 0; i < 1000; i++)
			canal_engine_progress(e);
		usleep(100000);
		raise(SIGKILL);
	}
	usleep(400000); /* rank 1 is gone */
	CHECK_EQ(canal_engine_irecv(e, 1, 6, b, BULK_LEN, &r), 0);
	int err = canal_engine_wait(e, r, NULL);
	free(b);
	if (err != -ECONNRESET) {
		fprintf(stderr, "bulk_crash: wait %d\n", err);
		return 4;
	}
	return 0;
}

int main(void)
{
#ifdef __SANITIZE_THREAD__
	/* UCX's memory hooks (libucm) crash under ThreadSanitizer. */
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 1;
	o.driver = "ucx";
	struct canal_engine *e;
	int err = canal_engine_open(&o, &e);
	if (err == -ENOTSUP) {
		printf("test_engine_ucx: SKIP: canal built without UCX (apt install libucx-dev)\n");
		return 0;
	}
	CHECK_EQ(err, 0);
	CHECK_EQ(strcmp(canal_engine_driver(e), "ucx"), 0);
	CHECK_EQ(canal_engine_close(e), 0);
	const char *strategies[] = { "default", "aggregate" };
	for (int s = 0; s < 2; s++)
		for (int n = 2; n <= 3; n++) {
			struct job j = { .n = n, .driver = "ucx",
					 .strategy = strategies[s],
					 .timeout_s = 60, .killed_rank = -1 };
			CHECK_EQ(job_run(&j, traffic, NULL), 0);
		}
	struct job k = { .n = 2, .driver = "ucx", .strategy = "default",
			 .timeout_s = 30, .killed_rank = 1 };
	CHECK_EQ(job_run(&k, crash, NULL), 0);
	struct job b = { .n = 2, .driver = "ucx", .strategy = "default",
			 .timeout_s = 30, .killed_rank = -1 };
	CHECK_EQ(job_run(&b, bulk_cases, NULL), 0);
	printf("test_engine_ucx: bulk transfers: truncation, late receive ok\n");
	CHECK_EQ(job_run(&k, bulk_crash, NULL), 0);
	printf("test_engine_ucx: bulk transfer from a peer that died: ok\n");
	TEST_DONE("test_engine_ucx");
}
