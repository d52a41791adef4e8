/* test_engine_launch - canal-launch (build/bin/, found beside this test's
 * directory): every rank gets CANAL_RANK/CANAL_SIZE/CANAL_LAUNCH_DIR; the
 * exit status is the first non-zero one and the other ranks are stopped
 * at once; a job running past -t is killed with status 124; the rendezvous
 * directory is removed; a missing program is status 127; SIGTERM to the
 * launcher stops the ranks (status 143); a launcher whose ranks run does
 * not wake up on its own (it sleeps until a rank ends: pidfds). */
#include "check.h"

#include <canal/channel.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static char launcher[PATH_MAX + 32];

/* The launcher's voluntary context switches so far (/proc/PID/status). */
static long wakeups(pid_t p)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)p);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	long v = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	CHECK(v >= 0);
	return v;
}

/* Start canal-launch -n n -t t sh -c script, without waiting. */
static pid_t launch_bg(const char *n, const char *t, const char *script)
{
	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		execl(launcher, "canal-launch", "-n", n, "-t", t, "/bin/sh", "-c",
		      script, (char *)NULL);
		_exit(99);
	}
	return p;
}

/* Wait until file exists (a rank wrote it), within 20 s. */
static void await_file(const char *file)
{
	for (int i = 0; i < 20000 && access(file, F_OK) != 0; i++)
		usleep(1000);
	CHECK(access(file, F_OK) == 0);
}

/* Run canal-launch -n n -t t sh -c script: its exit status. */
static int launch(const char *n, const char *t, const char *script)
{
	pid_t p = launch_bg(n, t, script);
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

	/* SIGTERM to the launcher: the ranks are stopped, status 143. */
	char ready[160];
	snprintf(ready, sizeof ready, "%s.up1", prefix);
	pid_t lp = launch_bg("2", "60",
			     "test $CANAL_RANK = 1 && touch $TEST_PREFIX.up1; sleep 30");
	await_file(ready);
	t0 = canal_now_ns();
	CHECK_EQ(kill(lp, SIGTERM), 0);
	int lst;
	CHECK(waitpid(lp, &lst, 0) == lp);
	CHECK(WIFEXITED(lst) && WEXITSTATUS(lst) == 143);
	CHECK(canal_now_ns() - t0 < 20ull * 1000 * 1000 * 1000);
	CHECK_EQ(unlink(ready), 0);

	/* While its ranks run, the launcher sleeps: it is woken by a rank's
	 * end, a signal or its deadline, not every few milliseconds (which
	 * took a CPU from polling ranks: ~500 wake-ups a second before). */
	snprintf(ready, sizeof ready, "%s.up0", prefix);
	lp = launch_bg("2", "60",
		       "test $CANAL_RANK = 0 && touch $TEST_PREFIX.up0; sleep 2");
	await_file(ready);
	long w0 = wakeups(lp);
	usleep(1000 * 1000);
	long w1 = wakeups(lp);
	/* Only where this kernel gives pidfds (Linux 5.3; a seccomp profile
	 * may refuse them): without, the launcher looks every 2 ms. */
	int self_fd = -1;
#ifdef SYS_pidfd_open
	self_fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
#endif
	if (self_fd >= 0) {
		close(self_fd);
		CHECK(w1 - w0 < 50);
	} else {
		printf("test_engine_launch: no pidfd_open here: the idle "
		       "launcher's wake-ups not checked\n");
	}
	CHECK(waitpid(lp, &lst, 0) == lp);
	CHECK(WIFEXITED(lst) && WEXITSTATUS(lst) == 0);
	CHECK_EQ(unlink(ready), 0);

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
