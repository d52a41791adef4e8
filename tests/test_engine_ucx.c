/* test_engine_ucx.c - the engine over the UCX driver (issue 16): exactly
 * once and per-(gate, tag) order with 2 and 3 processes, both strategies,
 * sizes through UCX's eager, UCX's rendezvous and the engine's rendezvous
 * (above 1 MiB); a peer killed by SIGKILL fails its gate (named) instead
 * of hanging. Skips when
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
	TEST_DONE("test_engine_ucx");
}
