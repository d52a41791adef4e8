/* test_revtcp_sockopt - (review) the TCP driver's socket options: a
 * setsockopt the kernel refuses must fail the open with its errno, not
 * leave a connection without TCP_NODELAY (every small message waits for
 * the peer's delayed ACK) or, with tcp_timeout_ms, without its timeout
 * and keepalive (a peer whose host went away is never seen dead, against
 * engine.h). The refusal is a seccomp filter (ENOPROTOOPT) on one option,
 * in a child that opens both ranks of a 2-rank TCP job on threads.
 * Controls: with the keepalive options refused but no tcp_timeout_ms the
 * open succeeds (they are not asked for); a tcp_timeout_ms of 200 s
 * (keepalive probes beyond the kernel's 127 a connection) opens.
 * Then the address exchange through canal-launch's key-value service
 * (exchange.c): each request is bounded by SO_RCVTIMEO / SO_SNDTIMEO; with
 * them refused, a get from a launcher that never answers (a listener that
 * never accepts) must still end by its deadline, not block in recv() for
 * ever (the child's alarm is the hang guard). */
#include "engine_job.h"
#include "seccomp_filter.h"

#include <netinet/tcp.h>

#include "../src/engine/transfer/exchange.h"

/* Make setsockopt(level, opt) fail with ENOPROTOOPT in this thread: 1, or
 * 0 where it cannot be done. */
static int refuse_sockopt(int level, int opt)
{
	struct sock_filter f[] = {
		SECCOMP_TEST_PROLOGUE,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setsockopt, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* the low words of args[1] (level) and args[2] (optname) */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)level, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)opt, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOPROTOOPT),
	};
	if (!seccomp_test_install(f, sizeof f / sizeof f[0]))
		return 0;
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	CHECK(s >= 0);
	int r = setsockopt(s, level, opt, &one, sizeof one);
	int e = errno;
	close(s);
	return r == -1 && e == ENOPROTOOPT;
}

struct opener {
	const char *dir;
	int rank, timeout_ms;
	int err;
	struct canal_engine *e;
};

static void *open_rank(void *arg)
{
	struct opener *o = arg;
	struct canal_engine_options opt;
	canal_engine_options_init(&opt);
	opt.rank = o->rank;
	opt.size = 2;
	opt.dir = o->dir;
	opt.driver = "tcp";
	opt.connect_timeout_ms = 10000;
	opt.tcp_timeout_ms = o->timeout_ms;
	o->err = canal_engine_open(&opt, &o->e);
	return NULL;
}

/* In a child: refuse (level, opt) (level < 0: nothing), open both ranks
 * with tcp_timeout_ms, exit 0 when both opens returned want (and with 0,
 * a message went from rank 1 to rank 0), 2 when the filter cannot be
 * set, 1 otherwise. */
static int run(int level, int opt, int timeout_ms, int want)
{
	fflush(NULL);
	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(60);
		if (level >= 0 && !refuse_sockopt(level, opt))
			_exit(2);
		char dir[] = "/tmp/canal-test-sockopt.XXXXXX";
		CHECK(mkdtemp(dir));
		struct opener o[2] = { { dir, 0, timeout_ms, 0, NULL },
				       { dir, 1, timeout_ms, 0, NULL } };
		pthread_t t = spawn(open_rank, &o[1]); /* inherits the filter */
		open_rank(&o[0]);
		join(t);
		int bad = 0;
		for (int r = 0; r < 2; r++)
			if (o[r].err != want) {
				fprintf(stderr, "rank %d: open %d (%s), want %d\n",
					r, o[r].err, strerror(-o[r].err), want);
				bad = 1;
			}
		if (!bad && want == 0) {
			char b[8] = "";
			struct canal_engine_req *sr, *rr;
			CHECK_EQ(canal_engine_isend(o[1].e, 0, 1, "hello", 6, 0, &sr), 0);
			CHECK_EQ(canal_engine_irecv(o[0].e, 1, 1, b, sizeof b, &rr), 0);
			int done;
			while ((done = canal_engine_test(o[1].e, sr, NULL)) == 0)
				canal_engine_progress(o[0].e);
			CHECK_EQ(done, 1);
			CHECK_EQ(canal_engine_wait(o[0].e, rr, NULL), 0);
			CHECK(!strcmp(b, "hello"));
		}
		for (int r = 0; r < 2; r++)
			if (o[r].e)
				canal_engine_close(o[r].e);
		job_rmdir(dir);
		_exit(bad);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* In a child with SO_RCVTIMEO (then SO_SNDTIMEO) refused: a get from a
 * launcher that never answers returns an error within its 1 s deadline
 * (exit 0), else hangs until the alarm (the test fails). */
static int run_xchg(int opt)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof sa;
	CHECK(bind(l, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(l, 64) == 0); /* never accepts: nobody answers */
	CHECK(getsockname(l, (struct sockaddr *)&sa, &sl) == 0);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
	fflush(NULL);
	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(20);
		if (!refuse_sockopt(SOL_SOCKET, opt))
			_exit(2);
		struct canal__xchg x = { .rank = 0, .size = 2,
					 .launch_addr = addr };
		char v[64];
		int err = canal__xchg_get(&x, 1, "tcp", v, sizeof v,
					  canal__now_ms() + 1000);
		printf("launcher get, %s refused: %d (%s)\n",
		       opt == SO_RCVTIMEO ? "SO_RCVTIMEO" : "SO_SNDTIMEO", err,
		       strerror(-err));
		fflush(stdout);
		_exit(err < 0 ? 0 : 1);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	close(l);
	if (!WIFEXITED(st))
		fprintf(stderr, "launcher get: killed by signal %d (hung)\n",
			WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(void)
{
	int rc = run(IPPROTO_TCP, TCP_NODELAY, 0, -ENOPROTOOPT);
	if (rc == 2) {
		printf("test_revtcp_sockopt: no seccomp filter here, skipped\n");
		return 77;
	}
	CHECK_EQ(rc, 0);
	printf("TCP_NODELAY refused: open fails with -ENOPROTOOPT\n");
	CHECK_EQ(run(IPPROTO_TCP, TCP_USER_TIMEOUT, 3000, -ENOPROTOOPT), 0);
	CHECK_EQ(run(SOL_SOCKET, SO_KEEPALIVE, 3000, -ENOPROTOOPT), 0);
	CHECK_EQ(run(IPPROTO_TCP, TCP_KEEPIDLE, 3000, -ENOPROTOOPT), 0);
	printf("with tcp_timeout_ms: TCP_USER_TIMEOUT, SO_KEEPALIVE, "
	       "TCP_KEEPIDLE refused: open fails\n");
	CHECK_EQ(run(IPPROTO_TCP, TCP_KEEPIDLE, 0, 0), 0);
	printf("control: without tcp_timeout_ms keepalive is not asked for\n");
	CHECK_EQ(run(-1, 0, 200000, 0), 0);
	printf("control: tcp_timeout_ms 200 s opens\n");
	CHECK_EQ(run_xchg(SO_RCVTIMEO), 0);
	CHECK_EQ(run_xchg(SO_SNDTIMEO), 0);
	TEST_DONE("test_revtcp_sockopt");
}
