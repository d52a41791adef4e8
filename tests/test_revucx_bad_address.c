/* test_revucx_bad_address - (review) the UCX worker address a peer
 * publishes ("ucx.<rank>" in the launch directory, or PMIx) was decoded
 * from hex and handed to ucp_ep_create unchecked: a corrupted or hostile
 * value aborted the process inside UCX (ucp_address_unpack's assertion)
 * instead of failing open. Expected (engine.h): open fails with -EPROTO,
 * the process lives on. Rank 0 opens a 2-rank ucx session in a child
 * process against a fake rank 1 whose value the test wrote: garbage
 * bytes (well-formed hex), then rank 0's own value (as a real rank
 * publishes it) with one address digit changed, then cut short; each
 * with UCX's matching and with the engine's packets. Bounded by the
 * connect timeout (20 s) and the test's alarm. */
#define _GNU_SOURCE
#include "engine_job.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>

static void put_value(const char *dir, const char *value)
{
	char path[600];
	snprintf(path, sizeof path, "%s/ucx.1", dir);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	CHECK(fprintf(f, "%s\n", value) > 0);
	CHECK_EQ(fclose(f), 0);
}

/* Rank 0 opens against dir's ucx.1 in a child: its open's result, or a
 * line saying how the child died (and 1). */
static int open_rank0(const char *dir, const char *what)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(60);
		struct canal_engine *e = NULL;
		int err = job_open(dir, 0, 2, "ucx", "default", &e);
		if (err == 0)
			canal_engine_close(e);
		_exit(err == -EPROTO ? 0 : err == 0 ? 2 : 3);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "%s: rank 0 died of signal %d (%s)\n", what,
			WTERMSIG(st), strsignal(WTERMSIG(st)));
		return 1;
	}
	if (WEXITSTATUS(st) != 0)
		fprintf(stderr, "%s: rank 0's open: %s, expected -EPROTO\n",
			what, WEXITSTATUS(st) == 2 ? "success" : "another error");
	return WEXITSTATUS(st) != 0;
}

static char *mkdir_job(void)
{
	char *dir = strdup("/tmp/canal_badaddr_XXXXXX");
	CHECK(dir && mkdtemp(dir));
	return dir;
}

static int run(bool native)
{
	setenv("CANAL_ENGINE_UCX_NATIVE", native ? "1" : "0", 1);
	char mode = native ? 'n' : 'p';
	int bad = 0;
	/* Garbage: 96 bytes of 0xff, as hex, after a well-formed prefix. */
	char *dir = mkdir_job();
	char v[4096];
	int n = snprintf(v, sizeof v, "%d otherhost|x|1 %c ", (int)getpid(),
			 mode);
	for (int i = 0; i < 96; i++)
		n += snprintf(v + n, sizeof v - (size_t)n, "ff");
	put_value(dir, v);
	bad |= open_rank0(dir, native ? "native, garbage" : "packets, garbage");
	/* Rank 0's own value, as published: one address digit changed. */
	char path[600], real[4096] = "";
	snprintf(path, sizeof path, "%s/ucx.0", dir);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	CHECK(fgets(real, sizeof real, f) != NULL);
	fclose(f);
	job_rmdir(dir);
	free(dir);
	real[strcspn(real, "\n")] = '\0';
	size_t len = strlen(real);
	CHECK(len > 40);
	dir = mkdir_job();
	snprintf(v, sizeof v, "%s", real);
	v[len - 1] = v[len - 1] == '0' ? '1' : '0';
	put_value(dir, v);
	bad |= open_rank0(dir, native ? "native, a digit changed"
				      : "packets, a digit changed");
	job_rmdir(dir);
	free(dir);
	/* Cut short by one byte. */
	dir = mkdir_job();
	snprintf(v, sizeof v, "%.*s", (int)(len - 2), real);
	put_value(dir, v);
	bad |= open_rank0(dir, native ? "native, cut short" : "packets, cut short");
	job_rmdir(dir);
	free(dir);
	return bad;
}

int main(void)
{
	if (!job_have_ucx()) {
		printf("test_revucx_bad_address: SKIP: no UCX\n");
		return 0;
	}
	int bad = run(true);
	bad |= run(false);
	CHECK_EQ(bad, 0);
	TEST_DONE("test_revucx_bad_address");
}
