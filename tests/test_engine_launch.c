/* test_engine_launch - canal-launch (build/bin/, found beside this test's
 * directory): every rank gets CANAL_RANK/CANAL_SIZE/CANAL_LAUNCH_DIR; the
 * exit status is the first non-zero one and the other ranks are stopped
 * at once; a job running past -t is killed with status 124; the rendezvous
 * directory is removed; a missing program is status 127. */
#include "check.h"

#include <canal/channel.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char launcher[PATH_MAX + 32];

static int launch(const char *n, const char *t, const char *script)
{
	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		execl(launcher, "canal-launch", "-n", n, "-t", t, "/bin/sh", "-c",
		      script, (char *)NULL);
		_exit(99);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

int main(void)
{
	char self[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(k > 0);
	self[k] = '\0';
	*strrchr(self, '/') = '\0'; /* build/tests */
	*strrchr(self, '/') = '\0'; /* build */
	snprintf(launcher, sizeof launcher, "%s/bin/canal-launch", self);
	CHECK(access(launcher, X_OK) == 0);
	char prefix[64];
	snprintf(prefix, sizeof prefix, "/tmp/canal-launch-test.%d", (int)getpid());
	setenv("TEST_PREFIX", prefix, 1);

	/* Environment of every rank; the directory exists while they run. */
	CHECK_EQ(launch("3", "30",
			"test \"$CANAL_SIZE\" = 3 && test -d \"$CANAL_LAUNCH_DIR\" && "
			"test \"$CANAL_RANK\" -ge 0 && test \"$CANAL_RANK\" -lt 3 && "
			"echo $CANAL_LAUNCH_DIR > $TEST_PREFIX.$CANAL_RANK"), 0);
	char dir[PATH_MAX] = "", path[128];
	snprintf(path, sizeof path, "%s.0", prefix);
	FILE *f = fopen(path, "r");
	CHECK(f && fscanf(f, "%s", dir) == 1);
	fclose(f);
	for (int r = 0; r < 3; r++) {
		snprintf(path, sizeof path, "%s.%d", prefix, r);
		CHECK_EQ(unlink(path), 0); /* each rank ran, with its own rank */
	}
	struct stat sb;
	CHECK(stat(dir, &sb) < 0 && errno == ENOENT); /* removed after */

	/* The failing rank's status, the others stopped (not 30 s later). */
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(launch("4", "60", "if [ $CANAL_RANK = 2 ]; then exit 7; fi; sleep 30"), 7);
	CHECK(canal_now_ns() - t0 < 20ull * 1000 * 1000 * 1000);

	/* Timeout. */
	CHECK_EQ(launch("2", "0.5", "sleep 30"), 124);
	/* A program that cannot be run. */
	pid_t p = test_fork();
	if (p == 0) {
		execl(launcher, "canal-launch", "-n", "2", "/nonexistent/prog", (char *)NULL);
		_exit(99);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 127);
	/* Usage errors. */
	CHECK_EQ(launch("0", "1", "true"), 2);
	TEST_DONE("test_engine_launch");
}
