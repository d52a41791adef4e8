/* engine_mpirun_exit_job.c - one rank of a job started by Open MPI's
 * mpirun (PMIx) in which rank 1 exits (status 0) without opening its
 * session (its open fails after meeting PMIx): rank 0's open meets a fence that can never complete and
 * must fail with an error engine.h lists for a peer that is gone
 * (-ECONNRESET), not an undocumented one, nor wait past its connect
 * timeout (-ETIMEDOUT is also accepted when the launcher does not tell
 * PMIx of the exit). Run by test_revpmix_exit_peer.sh; exits 0 when rank
 * 0 got -ECONNRESET or -ETIMEDOUT. */
#define _GNU_SOURCE
#include <canal/engine.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
#ifdef __SANITIZE_THREAD__
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
	const char *r = getenv("PMIX_RANK");
	if (!r || getenv("CANAL_RANK")) {
		fprintf(stderr, "engine_mpirun_exit_job: not a PMIx launch\n");
		return 2;
	}
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	struct canal_engine *e = NULL;
	if (atoi(r) != 0) {
		/* Gone before the fence: an open that fails after it has met
		 * PMIx (a progress mode it refuses: PMIx init, finalize), a
		 * second late so that rank 0 waits in its fence by then
		 * (earlier, its fence may only time out: accepted). */
		o.progress = "neither";
		sleep(1);
		if (canal_engine_open(&o, &e) == 0)
			canal_engine_close(e);
		return 0;
	}
	o.connect_timeout_ms = 20000;
	int err = canal_engine_open(&o, &e);
	if (err != -ECONNRESET && err != -ETIMEDOUT) {
		fprintf(stderr, "engine_mpirun_exit_job: driver %s: open: %d "
				"(%s), expected -ECONNRESET\n",
			getenv("CANAL_ENGINE_DRIVER"), err,
			err ? strerror(-err) : "success");
		if (!err)
			canal_engine_close(e);
		return 1;
	}
	printf("engine_mpirun_exit_job: driver %s: %s: ok\n",
	       getenv("CANAL_ENGINE_DRIVER"), strerror(-err));
	return 0;
}
