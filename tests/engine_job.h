/* engine_job.h - run an engine job of n processes inside a test: fork n
 * children, each opening a session with explicit options (rank, size, a
 * fresh rendezvous directory, driver, strategy) and running fn. The job
 * passes when every child exits 0; a child that does not finish within
 * the time limit is killed and the job fails. */
#ifndef CANAL_TEST_ENGINE_JOB_H
#define CANAL_TEST_ENGINE_JOB_H

#include "check.h"
#include "seccomp_filter.h"

#include <canal/engine.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*job_fn)(struct canal_engine *e, int rank, int size, void *arg);

struct job {
	int n;
	const char *driver, *strategy;
	int timeout_s;
	/* set: this rank is expected to die (SIGKILL), not exit 0 */
	int killed_rank;
	/* optional: run in each rank's process before it opens its session
	 * (per-rank environment, sandboxing) */
	void (*before_open)(int rank);
};

/* The TCP listener a rank publishes in the job's directory (file, e.g.
 * "tcp.0" or "tcp0.0": "<address> <port>"), waited for up to 10 s, into
 * *sa. */
static inline void job_tcp_listener(const char *dir, const char *file,
				    struct sockaddr_in *sa)
{
	char path[600], v[96], addr[64];
	int port = 0;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	for (int i = 0; i < 5000 && !port; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(v, sizeof v, f) ||
			    sscanf(v, "%63s %d", addr, &port) != 2)
				port = 0;
			fclose(f);
		}
		if (!port)
			usleep(2000);
	}
	CHECK(port > 0);
	*sa = (struct sockaddr_in){ .sin_family = AF_INET,
				    .sin_port = htons((uint16_t)port) };
	CHECK(inet_pton(AF_INET, addr, &sa->sin_addr) == 1);
}

/* The job token (src/engine/transfer/auth.h, 16 bytes) that rank 0
 * publishes after its address (file "tcp.0" or "tcp<i>.0": "<address>
 * <port> <32 hex digits>"), waited for up to 10 s, into job: what a test
 * that plays a rank of the job must carry in its opening. */
static inline void job_tcp_token(const char *dir, const char *file,
				 unsigned char job[16])
{
	char path[600], v[160], addr[64], hex[40] = "";
	int port = 0, n = 0;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	for (int i = 0; i < 5000 && n != 3; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(v, sizeof v, f) ||
			    (n = sscanf(v, "%63s %d %39s", addr, &port, hex)) != 3)
				n = 0;
			fclose(f);
		}
		if (n != 3)
			usleep(2000);
	}
	CHECK_EQ(n, 3);
	CHECK_EQ(strlen(hex), 32u);
	for (int i = 0; i < 16; i++)
		CHECK(sscanf(hex + 2 * i, "%2hhx", &job[i]) == 1);
}

static inline void job_rmdir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char p[1024];
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(dir);
}

/* UCX's memory hooks (libucm: mmap, madvise, brk) crash under
 * ThreadSanitizer (docs/ENGINE.md): every rank of a TSan build turns them
 * off before its session can load libucp. A test that sets the variable
 * itself keeps its value. */
static inline void job_ucx_env(void)
{
#ifdef __SANITIZE_THREAD__
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
}

static inline int job_open(const char *dir, int rank, int n,
			   const char *driver, const char *strategy,
			   struct canal_engine **e)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = rank;
	o.size = n;
	o.dir = dir;
	o.driver = driver;
	o.strategy = strategy;
	o.connect_timeout_ms = 20000;
	job_ucx_env();
	return canal_engine_open(&o, e);
}

/* Both ranks of a 2-rank job in this process: rank 1 opens on a thread
 * while rank 0 opens here (each waits for the other), in dir, with
 * driver and the default strategy. e[0], e[1]: the two engines. */
struct job_opener {
	const char *dir;
	int rank;
	const char *driver;
	struct canal_engine *e;
};

static inline void *job_open_thread(void *arg)
{
	struct job_opener *o = arg;
	CHECK_EQ(job_open(o->dir, o->rank, 2, o->driver, "default", &o->e), 0);
	return NULL;
}

static inline void job_open_two(const char *dir, const char *driver,
				struct canal_engine *e[2])
{
	struct job_opener o[2] = { { dir, 0, driver, NULL },
				   { dir, 1, driver, NULL } };
	pthread_t t = spawn(job_open_thread, &o[1]);
	job_open_thread(&o[0]);
	join(t);
	e[0] = o[0].e;
	e[1] = o[1].e;
}

/* Whether this build has the UCX driver (asked in a child, so that this
 * process does not load libucp before forking the ranks). */
static inline int job_have_ucx(void)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		struct canal_engine_options o;
		canal_engine_options_init(&o);
		o.rank = 0;
		o.size = 1;
		o.driver = "ucx";
		job_ucx_env();
		struct canal_engine *e;
		_exit(canal_engine_open(&o, &e) == 0 ? 0 : 1);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Make this process's process_vm_readv fail with EPERM (a seccomp
 * filter): 1 when it does, 0 where it cannot be done (an architecture
 * this filter does not know, a kernel without seccomp filters). */
static inline int job_refuse_reads(void)
{
	struct sock_filter f[] = {
		SECCOMP_TEST_PROLOGUE,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	if (!seccomp_test_install(f, sizeof f / sizeof f[0]))
		return 0;
	char b;
	struct iovec l = { &b, 1 }, r = { &b, 1 };
	return syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0) == -1 &&
	       errno == EPERM;
}

/* Returns 0 when every rank exited 0 (and killed_rank, if >= 0, died of
 * SIGKILL). */
static inline int job_run(const struct job *j, job_fn fn, void *arg)
{
	char dir[] = "/tmp/canal-test-engine.XXXXXX";
	CHECK(mkdtemp(dir));
	pid_t pids[16];
	CHECK(j->n <= 16);
	fflush(NULL);
	for (int r = 0; r < j->n; r++) {
		pid_t p = test_fork();
		CHECK(p >= 0);
		if (p == 0) {
			alarm((unsigned)j->timeout_s);
			struct canal_engine *e;
			if (j->before_open)
				j->before_open(r);
			int err = job_open(dir, r, j->n, j->driver, j->strategy, &e);
			if (err) {
				fprintf(stderr, "rank %d: open: %s\n", r, strerror(-err));
				_exit(3);
			}
			int rc = fn(e, r, j->n, arg);
			canal_engine_close(e);
			fflush(NULL);
			_exit(rc);
		}
		pids[r] = p;
	}
	int bad = 0;
	for (int r = 0; r < j->n; r++) {
		int st;
		CHECK(waitpid(pids[r], &st, 0) == pids[r]);
		bool ok = r == j->killed_rank
				  ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
				  : WIFEXITED(st) && WEXITSTATUS(st) == 0;
		if (!ok) {
			fprintf(stderr, "%s/%s n=%d: rank %d: %s %d\n", j->driver,
				j->strategy, j->n, r,
				WIFSIGNALED(st) ? "signal" : "exit",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			bad = 1;
		}
	}
	job_rmdir(dir);
	return bad;
}

/* Run fn in a job of n ranks (strategy "default", each rank's alarm at
 * timeout_s, none expected to die) on the shm driver, then on TCP; a job
 * that does not succeed fails the test (CHECK), one that does prints
 * "<driver>: ok". */
static inline void job_run_shm_tcp(int n, int timeout_s, job_fn fn, void *arg)
{
	const char *drivers[] = { "shm", "tcp" };
	for (int d = 0; d < 2; d++) {
		struct job j = { n, drivers[d], "default", timeout_s, -1, NULL };
		CHECK_EQ(job_run(&j, fn, arg), 0);
		printf("%s: ok\n", drivers[d]);
		fflush(stdout);
	}
}

#endif
