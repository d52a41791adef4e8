/* engine_mpirun_absent_job.c - one rank of a job started by Open MPI's
 * mpirun (PMIx) in which rank 1 is alive but never opens its session:
 * rank 0's open must fail with -ETIMEDOUT about its connect timeout
 * (1 s) after it began (engine.h), not wait in PMIx's fence for rank 1.
 * Rank 0 then creates $MPIRUN_ABSENT_MARK, for which rank 1 waits
 * (a hang guard of 20 s) before it opens, too late (mpirun wants every
 * rank to start and end PMIx; its result is not checked). Run by
 * test_revpmix_absent_peer.sh; exits 0 when rank 0 got -ETIMEDOUT. */
#define _GNU_SOURCE
#include <canal/engine.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
#ifdef __SANITIZE_THREAD__
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
	const char *r = getenv("PMIX_RANK"), *mark = getenv("MPIRUN_ABSENT_MARK");
	if (!r || !mark || getenv("CANAL_RANK")) {
		fprintf(stderr, "engine_mpirun_absent_job: not a PMIx launch, or "
				"no MPIRUN_ABSENT_MARK\n");
		return 2;
	}
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.connect_timeout_ms = 1000;
	struct canal_engine *e = NULL;
	if (atoi(r) != 0) {
		/* Alive, not opening: wait for rank 0's verdict. */
		for (int i = 0; i < 20000 && access(mark, F_OK) != 0; i++) {
			struct timespec ts = { 0, 1000000L };
			nanosleep(&ts, NULL);
		}
		if (canal_engine_open(&o, &e) == 0)
			canal_engine_close(e);
		return 0;
	}
	int err = canal_engine_open(&o, &e);
	int fd = open(mark, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	if (err != -ETIMEDOUT) {
		fprintf(stderr, "engine_mpirun_absent_job: driver %s: open: %s, "
				"expected %s\n",
			getenv("CANAL_ENGINE_DRIVER"),
			err ? strerror(-err) : "success", strerror(ETIMEDOUT));
		if (!err)
			canal_engine_close(e);
		return 1;
	}
	printf("engine_mpirun_absent_job: driver %s: -ETIMEDOUT: ok\n",
	       getenv("CANAL_ENGINE_DRIVER"));
	return 0;
}
