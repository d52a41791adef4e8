/* test_revjob_stale_port - (review) two TCP jobs on one host, sharing a
 * key file or both without one. Rank 0 of job B publishes its address and
 * dies before rank 1 of B reads it; the port is then another job's: rank
 * 0 of job A listens there (the test rewrites B's publication with A's
 * port, as a reuse of the freed port by A would, which the kernel does not
 * let a test force).
 *
 * The opening of a TCP connection (src/engine/transfer/auth.h) carried the
 * two ranks (and, keyed, the key) but nothing of the job: B's rank 1 dialed
 * A's rank 0, both passed the hello or the handshake (same key), and the
 * gates crossed: A's open took B's rank 1 as its own rank 1 and received
 * B's message, B's open succeeded with A's rank 0 as its rank 0, and A's
 * real rank 1 found no listener and timed out. Expected: B's rank 1 is
 * refused for the job (open -ESTALE, engine.h) and never becomes a gate;
 * A's rank 0 logs the refusal and goes on waiting; A's real rank 1
 * connects and its message is the one A's rank 0 receives.
 *
 * Loopback only; every process under an alarm, each open under its
 * connect_timeout_ms; no assertion on time. */
#define _GNU_SOURCE
#include "engine_job.h"
#include "hang_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#define TAG 7

static int open_rank(const char *dir, const char *keyp, int rank,
		     int timeout_ms, struct canal_engine **e)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = rank;
	o.size = 2;
	o.dir = dir;
	o.driver = "tcp";
	o.key_file = keyp;
	o.connect_timeout_ms = timeout_ms;
	return canal_engine_open(&o, e);
}

/* Rank 0 of job A: 0 when the message from its rank 1 is job A's, 2 when
 * it is job B's (the gates crossed), 3 when the open failed, 4 when the
 * receive failed. */
static int a0(const char *dir, const char *keyp)
{
	struct canal_engine *e;
	int err = open_rank(dir, keyp, 0, 20000, &e);
	if (err) {
		fprintf(stderr, "job A rank 0: open: %s\n", strerror(-err));
		return 3;
	}
	char buf[16] = "";
	struct canal_engine_req *r;
	struct canal_engine_status st;
	if (canal_engine_irecv(e, 1, TAG, buf, sizeof buf - 1, &r) ||
	    canal_engine_wait(e, r, &st)) {
		fprintf(stderr, "job A rank 0: no message from its rank 1\n");
		return 4;
	}
	fprintf(stderr, "job A rank 0: its rank 1 says \"%s\"\n", buf);
	canal_engine_close(e);
	return strcmp(buf, "job A") == 0 ? 0 : 2;
}

/* Rank 1 of job A or B: open, send "job <name>" to rank 0. The open's
 * error is the exit status's sign: 0 sent, else 100 + errno. */
static int r1(const char *dir, const char *keyp, const char *name,
	      int timeout_ms)
{
	struct canal_engine *e;
	int err = open_rank(dir, keyp, 1, timeout_ms, &e);
	fprintf(stderr, "job %s rank 1: open returned %d (%s)\n", name, err,
		err ? strerror(-err) : "connected to a rank 0");
	if (err)
		return 100 + (-err & 0x7f);
	char m[16];
	snprintf(m, sizeof m, "job %s", name);
	struct canal_engine_req *r;
	if (canal_engine_isend(e, 0, TAG, m, strlen(m) + 1, 0, &r) == 0)
		(void)canal_engine_wait(e, r, NULL);
	canal_engine_close(e);
	return 0;
}

static int status_of(pid_t p)
{
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "pid %d killed by signal %d\n", (int)p,
			WTERMSIG(st));
		return -1;
	}
	return WEXITSTATUS(st);
}

/* B's publication of rank 0, with its port replaced by port: what B's
 * rank 1 reads once B's rank 0 is gone and its port is A's. Written under
 * a temporary name then renamed, as the exchange writes (exchange.h). */
static void reuse_port(const char *dir, int port)
{
	char path[600], tmp[620], v[256], addr[64], rest[200] = "";
	int old = 0;
	snprintf(path, sizeof path, "%s/tcp.0", dir);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	CHECK(fgets(v, sizeof v, f) != NULL);
	fclose(f);
	int n = 0;
	CHECK(sscanf(v, "%63s %d%n", addr, &old, &n) == 2);
	snprintf(rest, sizeof rest, "%s", v + n); /* what follows, newline too */
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	f = fopen(tmp, "w");
	CHECK(f != NULL);
	fprintf(f, "%s %d%s", addr, port, rest);
	CHECK_EQ(fclose(f), 0);
	CHECK_EQ(rename(tmp, path), 0);
	fprintf(stderr, "job B's rank 0 published port %d and died; B's "
		"publication now names job A's rank 0, port %d\n", old, port);
}

/* One round; keyp NULL: no key. True when the jobs stayed apart. */
static bool round_(const char *keyp)
{
	char da[] = "/tmp/canal-test-revjob-a.XXXXXX";
	char db[] = "/tmp/canal-test-revjob-b.XXXXXX";
	CHECK(mkdtemp(da) && mkdtemp(db));
	fflush(NULL);
	pid_t pa0 = test_fork();
	CHECK(pa0 >= 0);
	if (pa0 == 0) {
		alarm(60);
		_exit(a0(da, keyp));
	}
	struct sockaddr_in sa_a, sa_b;
	job_tcp_listener(da, "tcp.0", &sa_a);
	/* Job B's rank 0: publishes, then dies. */
	pid_t pb0 = test_fork();
	CHECK(pb0 >= 0);
	if (pb0 == 0) {
		alarm(60);
		struct canal_engine *e;
		_exit(open_rank(db, keyp, 0, 20000, &e) ? 3 : 0);
	}
	job_tcp_listener(db, "tcp.0", &sa_b);
	CHECK_EQ(kill(pb0, SIGKILL), 0);
	CHECK_EQ(status_of(pb0), -1);
	reuse_port(db, ntohs(sa_a.sin_port));
	/* Job B's rank 1 dials what B's exchange says: A's rank 0. */
	pid_t pb1 = test_fork();
	CHECK(pb1 >= 0);
	if (pb1 == 0) {
		alarm(60);
		_exit(r1(db, keyp, "B", 10000));
	}
	int sb1 = status_of(pb1);
	/* Then job A's own rank 1. */
	pid_t pa1 = test_fork();
	CHECK(pa1 >= 0);
	if (pa1 == 0) {
		alarm(60);
		_exit(r1(da, keyp, "A", 10000));
	}
	int sa1 = status_of(pa1), sa0 = status_of(pa0);
	job_rmdir(da);
	job_rmdir(db);
	fprintf(stderr,
		"%s: job B rank 1 exit %d (want %d: refused, -ESTALE), job A "
		"rank 1 exit %d, job A rank 0 exit %d (2: it took job B's "
		"message)\n",
		keyp ? "keyed" : "plain", sb1, 100 + ESTALE, sa1, sa0);
	return sb1 == 100 + ESTALE && sa1 == 0 && sa0 == 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	char kd[] = "/tmp/canal-test-revjob-key.XXXXXX";
	CHECK(mkdtemp(kd));
	char keyp[600];
	snprintf(keyp, sizeof keyp, "%s/key", kd);
	int fd = open(keyp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	const char *k = "one key file, shared by two jobs";
	CHECK(write(fd, k, strlen(k)) == (ssize_t)strlen(k));
	close(fd);
	bool plain = round_(NULL), keyed = round_(keyp);
	unlink(keyp);
	rmdir(kd);
	CHECK(plain);
	CHECK(keyed);
	TEST_DONE("test_revjob_stale_port");
}
