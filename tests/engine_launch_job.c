/* engine_launch_job.c - one rank of a job started by canal-launch -H (ranks
 * on several hosts, addresses through the launcher's key-value service):
 * checks that the launcher's exchange is the one in use (CANAL_LAUNCH_ADDR
 * set, no launch directory), then runs the exchange of remote_traffic.h.
 * Run by test_launch_hosts.sh; exits 0 when the exchange was exactly once
 * and in order. Prints its rank and its TCP bind address. */
#include "remote_traffic.h"

#include <stdlib.h>

int main(void)
{
#ifdef __SANITIZE_THREAD__
	/* UCX's memory hooks (libucm) crash under ThreadSanitizer. */
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
	const char *addr = getenv("CANAL_LAUNCH_ADDR");
	if (!addr || getenv("CANAL_LAUNCH_DIR")) {
		fprintf(stderr, "engine_launch_job: not started by canal-launch -H\n");
		return 2;
	}
	struct canal_engine *e;
	int err = canal_engine_open(NULL, &e);
	if (err) {
		fprintf(stderr, "engine_launch_job: open: %s\n", strerror(-err));
		return 1;
	}
	const char *rank = getenv("CANAL_RANK"), *size = getenv("CANAL_SIZE");
	if (!rank || !size || canal_engine_rank(e) != atoi(rank) ||
	    canal_engine_size(e) != atoi(size)) {
		fprintf(stderr, "engine_launch_job: rank/size mismatch\n");
		return 2;
	}
	int bad = remote_traffic(e, 20, 1);
	err = canal_engine_close(e);
	if (bad || err) {
		fprintf(stderr, "engine_launch_job: rank %s: exchange %s, close %d\n",
			rank, bad ? "FAILED" : "ok", err);
		return 1;
	}
	printf("rank %s of %s bound to %s: ok\n", rank, size,
	       getenv("CANAL_ENGINE_BIND"));
	return 0;
}
