/* engine_mpirun_job.c - one rank of a job started by Open MPI's mpirun
 * (PMIx): the session takes rank, size and the peers' addresses from PMIx
 * (no canal-launch, no CANAL_* variables), then runs the exchange of
 * remote_traffic.h. Run by test_engine_mpirun.sh; exits 0 when the
 * exchange was exactly once and in order, 2 when PMIx was not used. */
#include "remote_traffic.h"

#include <stdlib.h>

int main(void)
{
#ifdef __SANITIZE_THREAD__
	/* UCX's memory hooks (libucm) crash under ThreadSanitizer. */
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
	if (getenv("CANAL_RANK")) {
		fprintf(stderr, "engine_mpirun_job: CANAL_RANK is set: not a PMIx launch\n");
		return 2;
	}
	struct canal_engine *e;
	int err = canal_engine_open(NULL, &e);
	if (err) {
		fprintf(stderr, "engine_mpirun_job: open: %s\n", strerror(-err));
		return 1;
	}
	const char *want = getenv("MPIRUN_EXPECT_SIZE");
	if (want && canal_engine_size(e) != atoi(want)) {
		fprintf(stderr, "engine_mpirun_job: size %d, expected %s\n",
			canal_engine_size(e), want);
		return 2;
	}
	const char *r = getenv("PMIX_RANK");
	if (!r || canal_engine_rank(e) != atoi(r)) {
		fprintf(stderr, "engine_mpirun_job: rank %d, PMIX_RANK %s\n",
			canal_engine_rank(e), r ? r : "unset");
		return 2;
	}
	int bad = remote_traffic(e, 20, 1);
	err = canal_engine_close(e);
	if (bad || err)
		return 1;
	printf("engine_mpirun_job: rank %s: driver %s: ok\n", r,
	       getenv("CANAL_ENGINE_DRIVER") ? getenv("CANAL_ENGINE_DRIVER") : "shm");
	return 0;
}
