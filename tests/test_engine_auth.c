/* test_engine_auth.c - the TCP handshake with a shared key (issue 16).
 * Unit level (socket pairs): the right key passes both ways; a wrong key,
 * no key against a keyed rank (and the reverse), garbage, a short hello,
 * a recorded handshake replayed on a new connection, a rank of another
 * job (plain or keyed: -ESTALE), a version 1 hello (no job token), and a
 * keyed handshake whose clear job token was rewritten on the way (the
 * MACs bind the job: -EACCES) are refused; the connector hears the
 * acceptor's verdict (a refusal and its reason).
 * Dialing (canal__tcp_dial): a connection dropped before its verdict is
 * dialed again; a refusal (the job's too) is final at once; the deadline
 * holds.
 * Key files: wrong permissions, too short, missing are refused.
 * Engine level: a keyed rank 0 waiting for rank 1 is offered a wrong-key
 * connection, a plain one and garbage (each closed by rank 0 without
 * effect), then the real rank 1 connects and exactly the messages it sends
 * arrive, in order. */
#include "check.h"
#include "engine_job.h"
#include "../src/engine/transfer/auth.h"
#include "../src/engine/transfer/driver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

static unsigned char key_a[CANAL__KEY_BYTES], key_b[CANAL__KEY_BYTES];
static const unsigned char job_a[CANAL__JOB_BYTES] = "job A's token",
			   job_b[CANAL__JOB_BYTES] = "job B's token";

struct acc {
	int fd;
	const unsigned char *key;
	const unsigned char *job; /* NULL: job_a */
	int err, peer;
	char why[160];
};

static void *acceptor(void *arg)
{
	struct acc *a = arg;
	a->err = canal__auth_accept(a->fd, a->key, a->job ? a->job : job_a, 0,
				    1, 4, &a->peer, a->why, sizeof a->why);
	if (!a->err) /* as tcp.c does once it knows the rank is new */
		a->err = canal__auth_answer(a->fd, CANAL__V_OK);
	if (a->err)
		shutdown(a->fd, SHUT_RDWR); /* as the driver's close would */
	return NULL;
}

static char cwhy[160]; /* the connector's reason, from pair() */

/* Connect with ckey and cjob against an acceptor with akey and ajob: the
 * two results. */
static void pair_jobs(const unsigned char *ckey, const unsigned char *cjob,
		      const unsigned char *akey, const unsigned char *ajob,
		      int *cerr, int *aerr)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct acc a = { .fd = sv[1], .key = akey, .job = ajob, .peer = -1 };
	pthread_t t = spawn(acceptor, &a);
	*cerr = canal__auth_connect(sv[0], ckey, cjob, 2, 0, 10000, cwhy,
				    sizeof cwhy);
	if (*cerr)
		shutdown(sv[0], SHUT_RDWR);
	join(t);
	*aerr = a.err;
	if (!a.err)
		CHECK_EQ(a.peer, 2);
	close(sv[0]);
	close(sv[1]);
}

/* The same within one job. */
static void pair(const unsigned char *ckey, const unsigned char *akey,
		 int *cerr, int *aerr)
{
	pair_jobs(ckey, job_a, akey, job_a, cerr, aerr);
}

/* Feed raw bytes to an acceptor: its result. */
static int feed(const void *bytes, size_t n, bool half_close)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct acc a = { .fd = sv[1], .key = key_a };
	pthread_t t = spawn(acceptor, &a);
	CHECK(write(sv[0], bytes, n) == (ssize_t)n);
	if (half_close)
		shutdown(sv[0], SHUT_WR);
	join(t);
	close(sv[0]);
	close(sv[1]);
	return a.err;
}

struct relay {
	int c, a; /* connector side, acceptor side */
	unsigned char rec[56 + 32];
};

static void relay_n(int from, int to, unsigned char *rec, size_t n)
{
	unsigned char buf[128];
	CHECK(recv(from, buf, n, MSG_WAITALL) == (ssize_t)n);
	if (rec)
		memcpy(rec, buf, n);
	CHECK(write(to, buf, n) == (ssize_t)n);
}

static void *relay_fn(void *arg)
{
	struct relay *r = arg;
	relay_n(r->c, r->a, r->rec, 56);
	relay_n(r->a, r->c, NULL, 72); /* the hello's verdict, the challenge */
	relay_n(r->c, r->a, r->rec + 56, 32);
	relay_n(r->a, r->c, NULL, 8); /* the verdict */
	return NULL;
}

/* A connector that sends job_a in its hello (job_a's acceptor goes on),
 * ignores the acceptor's MAC and answers the challenge with mac_c made of
 * mkey and mjob (auth.h): the acceptor's result. key_a and job_a pass
 * (the MAC is built as auth.c builds it); another key, or another job
 * than the one the hello claims, fails. */
static int hand_answer(const unsigned char *mkey, const unsigned char *mjob)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct acc a = { .fd = sv[1], .key = key_a };
	pthread_t t = spawn(acceptor, &a);
	unsigned char hello[56], chal[72], m[1 + 16 + 64 + 8], mac[32];
	uint32_t h[2] = { htole32(CANAL__AUTH_MAGIC), htole32(2) };
	memcpy(hello, h, 8);
	memcpy(hello + 8, job_a, 16);
	randombytes_buf(hello + 24, 32);
	CHECK(write(sv[0], hello, 56) == 56);
	CHECK(recv(sv[0], chal, sizeof chal, MSG_WAITALL) == 72);
	m[0] = 'C';
	memcpy(m + 1, mjob, 16);
	memcpy(m + 17, hello + 24, 32);
	memcpy(m + 49, chal + 8, 32);
	uint32_t r[2] = { htole32(2), htole32(0) };
	memcpy(m + 81, r, 8);
	crypto_auth(mac, m, sizeof m, mkey);
	CHECK(write(sv[0], mac, 32) == 32);
	join(t);
	close(sv[0]);
	close(sv[1]);
	return a.err;
}

static void replay(void)
{
	/* Record a good handshake through a relay. */
	int cs[2], as[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, cs) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, as) == 0);
	struct relay r = { .c = cs[1], .a = as[0] };
	struct acc a = { .fd = as[1], .key = key_a };
	pthread_t ta = spawn(acceptor, &a), tr = spawn(relay_fn, &r);
	char why[160];
	CHECK_EQ(canal__auth_connect(cs[0], key_a, job_a, 2, 0, 10000, why,
				     sizeof why),
		 0);
	join(tr);
	join(ta);
	CHECK_EQ(a.err, 0);
	for (int i = 0; i < 2; i++) {
		close(cs[i]);
		close(as[i]);
	}
	/* Replay it on a new connection: the acceptor's nonce is new. */
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct acc b = { .fd = sv[1], .key = key_a };
	pthread_t tb = spawn(acceptor, &b);
	unsigned char chal[72];
	CHECK(write(sv[0], r.rec, 56) == 56);
	CHECK(recv(sv[0], chal, sizeof chal, MSG_WAITALL) == 72);
	CHECK(write(sv[0], r.rec + 56, 32) == 32);
	join(tb);
	CHECK_EQ(b.err, -EACCES);
	CHECK(strstr(b.why, "failed the handshake") != NULL);
	close(sv[0]);
	close(sv[1]);
}

/* A keyed handshake between a connector of job B and an acceptor of job
 * A (same key) through a relay that rewrites the hello's clear job token
 * to A's: the acceptor's clear check passes, but its mac_a is over job A
 * and the connector checks it over job B: refused (-EACCES), never a
 * gate on either side. */
struct spliced_conn {
	int fd, err;
	char why[160];
};

static void *spliced_connector(void *arg)
{
	struct spliced_conn *c = arg;
	c->err = canal__auth_connect(c->fd, key_a, job_b, 2, 0, 10000, c->why,
				     sizeof c->why);
	shutdown(c->fd, SHUT_RDWR); /* as the dialer's close would */
	return NULL;
}

static void spliced(void)
{
	int cs[2], as[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, cs) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, as) == 0);
	struct acc a = { .fd = as[1], .key = key_a };
	struct spliced_conn c = { .fd = cs[0] };
	pthread_t ta = spawn(acceptor, &a), tc = spawn(spliced_connector, &c);
	unsigned char buf[72];
	CHECK(recv(cs[1], buf, 56, MSG_WAITALL) == 56);
	CHECK(memcmp(buf + 8, job_b, 16) == 0);
	memcpy(buf + 8, job_a, 16); /* the rewrite */
	CHECK(write(as[0], buf, 56) == 56);
	CHECK(recv(as[0], buf, 72, MSG_WAITALL) == 72); /* go on, challenge */
	CHECK(write(cs[1], buf, 72) == 72);
	join(tc);
	CHECK_EQ(c.err, -EACCES);
	CHECK(strstr(c.why, "failed the handshake") != NULL);
	/* The connector sent no mac_c: the acceptor sees the end. */
	ssize_t k = recv(cs[1], buf, 32, MSG_WAITALL);
	CHECK(k >= 0 && k < 32);
	shutdown(as[0], SHUT_RDWR);
	join(ta);
	CHECK(a.err < 0);
	for (int i = 0; i < 2; i++) {
		close(cs[i]);
		close(as[i]);
	}
}

/* A version 1 hello ({"pctc", rank}, no job token): refused at once with
 * CANAL__V_VERSION, which a version 1 connector reads as a refusal. */
static void version_1(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct acc a = { .fd = sv[1], .key = NULL };
	pthread_t t = spawn(acceptor, &a);
	uint32_t h[2] = { htole32(CANAL__HELLO_MAGIC_V1), htole32(2) };
	CHECK(write(sv[0], h, 8) == 8);
	uint32_t v[2];
	CHECK(recv(sv[0], v, sizeof v, MSG_WAITALL) == 8);
	CHECK_EQ(le32toh(v[0]), CANAL__VERDICT_MAGIC);
	CHECK_EQ(le32toh(v[1]), (uint32_t)CANAL__V_VERSION);
	join(t);
	CHECK_EQ(a.err, -EPROTO);
	CHECK(strstr(a.why, "version 1") != NULL);
	close(sv[0]);
	close(sv[1]);
}

/* canal__tcp_dial against a listener that plays an acceptor: the first
 * `drops` connections are dropped after their hello with no verdict (as an
 * acceptor does when a hello comes after its limit), the next gets
 * canal__auth_accept with `key` and, when it passes, the verdict and one
 * byte 'Z' (so the dialer can tell which connection it kept). */
struct listener {
	int lfd, drops, accepted, err;
	const unsigned char *key;
};

static void *listen_fn(void *arg)
{
	struct listener *l = arg;
	for (;;) {
		int fd = accept(l->lfd, NULL, NULL);
		if (fd < 0)
			return NULL; /* the test shut the listener down */
		l->accepted++;
		if (l->accepted <= l->drops) {
			unsigned char hello[8];
			CHECK(recv(fd, hello, sizeof hello, MSG_WAITALL) == 8);
			close(fd);
			continue;
		}
		int peer = -1;
		char why[160];
		l->err = canal__auth_accept(fd, l->key, job_a, 0, 1, 4, &peer,
					    why, sizeof why);
		if (!l->err) {
			CHECK_EQ(peer, 2);
			CHECK_EQ(canal__auth_answer(fd, CANAL__V_OK), 0);
			CHECK(write(fd, "Z", 1) == 1);
		}
		/* Keep the connection until the dialer is done with it. */
		char c;
		while (recv(fd, &c, 1, 0) > 0)
			;
		close(fd);
	}
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The dialer's job token (the listener's is job_a). */
static const unsigned char *dial_job = job_a;

/* Dial a listener (drops, lkey) with dkey within limit_ms: the result
 * (checked to be the kept connection when >= 0) and the connections the
 * listener accepted. */
static int dial(int drops, const unsigned char *lkey,
		const unsigned char *dkey, int limit_ms, int *accepted)
{
	struct listener l = { .drops = drops, .key = lkey };
	l.lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l.lfd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	CHECK(bind(l.lfd, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(l.lfd, 8) == 0);
	CHECK(getsockname(l.lfd, (struct sockaddr *)&sa, &sl) == 0);
	pthread_t t = spawn(listen_fn, &l);
	int fd = canal__tcp_dial(&sa, 2, 0, dkey, dial_job,
				 mono_ms() + (uint64_t)limit_ms);
	if (fd >= 0) {
		char c = 0;
		CHECK(recv(fd, &c, 1, MSG_WAITALL) == 1);
		CHECK_EQ(c, 'Z');
		close(fd);
	}
	shutdown(l.lfd, SHUT_RDWR);
	join(t);
	close(l.lfd);
	*accepted = l.accepted;
	return fd;
}

static void dialing(void)
{
	int n;
	/* Dropped twice without a verdict: dialed again, the third kept. */
	CHECK(dial(2, NULL, NULL, 10000, &n) >= 0);
	CHECK_EQ(n, 3);
	CHECK(dial(1, key_a, key_a, 10000, &n) >= 0);
	CHECK_EQ(n, 2);
	/* Refused (no key against a keyed rank, and the reverse, a wrong
	 * key): final, at the first connection, long before the deadline. */
	uint64_t t0 = mono_ms();
	CHECK_EQ(dial(0, key_a, NULL, 10000, &n), -EACCES);
	CHECK_EQ(n, 1);
	CHECK_EQ(dial(0, NULL, key_a, 10000, &n), -EACCES);
	CHECK_EQ(n, 1);
	CHECK_EQ(dial(0, key_a, key_b, 10000, &n), -EACCES);
	CHECK_EQ(n, 1);
	/* A rank of another job, plain or keyed (same key): refused for
	 * its job, final too. */
	dial_job = job_b;
	CHECK_EQ(dial(0, NULL, NULL, 10000, &n), -ESTALE);
	CHECK_EQ(n, 1);
	CHECK_EQ(dial(0, key_a, key_a, 10000, &n), -ESTALE);
	CHECK_EQ(n, 1);
	dial_job = job_a;
	CHECK(mono_ms() - t0 < 9000);
	/* Always dropped: -ETIMEDOUT at the deadline, having dialed again. */
	CHECK_EQ(dial(1000000, NULL, NULL, 300, &n), -ETIMEDOUT);
	CHECK(n >= 2);
}

static void write_key(const char *path, const char *content, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, content, strlen(content)) == (ssize_t)strlen(content));
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

static void key_files(const char *dir)
{
	char p[600], why[200];
	unsigned char k[CANAL__KEY_BYTES];
	snprintf(p, sizeof p, "%s/k", dir);
	write_key(p, "0123456789abcdef0123456789abcdef", 0644);
	CHECK_EQ(canal__auth_load(p, k, why, sizeof why), -EACCES);
	CHECK(strstr(why, "chmod 600") != NULL);
	write_key(p, "short", 0600);
	CHECK_EQ(canal__auth_load(p, k, why, sizeof why), -EINVAL);
	snprintf(p, sizeof p, "%s/missing", dir);
	CHECK_EQ(canal__auth_load(p, k, why, sizeof why), -ENOENT);
	/* The session refuses to open with a bad key file. */
	snprintf(p, sizeof p, "%s/k", dir);
	write_key(p, "0123456789abcdef0123456789abcdef", 0640);
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 1;
	o.driver = "tcp";
	o.key_file = p;
	struct canal_engine *e;
	CHECK_EQ(canal_engine_open(&o, &e), -EACCES);
	write_key(p, "the secret of the two ranks, 32+", 0600);
	CHECK_EQ(canal__auth_load(p, k, why, sizeof why), 0);
	CHECK(memcmp(k, key_a, sizeof k) == 0);
}

/* Engine level. */
#define MSGS 3
static int rank0(const char *dir, const char *keyp)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 2;
	o.dir = dir;
	o.driver = "tcp";
	o.key_file = keyp;
	o.connect_timeout_ms = 30000;
	struct canal_engine *e;
	int err = canal_engine_open(&o, &e);
	if (err) {
		fprintf(stderr, "rank 0: open: %s\n", strerror(-err));
		return 3;
	}
	for (int i = 0; i < MSGS; i++) {
		char buf[64];
		struct canal_engine_req *r;
		struct canal_engine_status st;
		if (canal_engine_irecv(e, 1, 5, buf, sizeof buf, &r) ||
		    canal_engine_wait(e, r, &st) || st.len != 6 ||
		    memcmp(buf, "good", 4) || buf[4] != '0' + i)
			return 4;
	}
	struct canal_engine_req *r;
	char c;
	if (canal_engine_irecv(e, 1, 6, &c, 1, &r) || canal_engine_wait(e, r, NULL))
		return 5;
	struct canal_engine_status st;
	/* Nothing else got in: no message, and no gate closed for a bad
	 * frame (rank 1 may have left already: then, every gate closed,
	 * the probe says -ECONNRESET). */
	for (int t = 0; t < 8; t++) {
		int pr = canal_engine_probe(e, CANAL_ENGINE_ANY_GATE, (unsigned)t, &st);
		if (pr != 0 && pr != -ECONNRESET)
			return 6;
	}
	canal_engine_close(e);
	return 0;
}

static int rank1(const char *dir, const char *keyp)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 1;
	o.size = 2;
	o.dir = dir;
	o.driver = "tcp";
	o.key_file = keyp;
	struct canal_engine *e;
	if (canal_engine_open(&o, &e))
		return 3;
	for (int i = 0; i < MSGS; i++) {
		char m[6] = { 'g', 'o', 'o', 'd', (char)('0' + i), 0 };
		struct canal_engine_req *r;
		if (canal_engine_isend(e, 0, 5, m, 6, 0, &r) ||
		    canal_engine_wait(e, r, NULL))
			return 4;
	}
	struct canal_engine_req *r;
	if (canal_engine_isend(e, 0, 6, "x", 1, 0, &r) || canal_engine_wait(e, r, NULL))
		return 5;
	canal_engine_close(e);
	return 0;
}

/* Connect to rank 0 and play a bad opening with the job's own token
 * (job: read from the job's directory, as any local process can); rank 0
 * must close on us. */
static void attack(const struct sockaddr_in *sa, const unsigned char *job,
		   int how)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0);
	char why[160];
	if (how == 0) { /* wrong key */
		CHECK_EQ(canal__auth_connect(fd, key_b, job, 1, 0, 10000, why,
					     sizeof why),
			 -EACCES);
		shutdown(fd, SHUT_WR); /* as the engine's connector does */
	} else if (how == 1) { /* no key: plain hello, then an eager frame */
		CHECK_EQ(canal__auth_connect(fd, NULL, job, 1, 0, 10000, why,
					     sizeof why),
			 -EACCES);
		CHECK(strstr(why, "refused this rank") != NULL);
		unsigned char frame[32] = { 28, 0, 0, 0, 1, 0, 5, 0 };
		ssize_t k = write(fd, frame, sizeof frame);
		(void)k;
	} else { /* garbage */
		unsigned char g[64];
		for (size_t i = 0; i < sizeof g; i++)
			g[i] = (unsigned char)(i * 37 + 11);
		CHECK(write(fd, g, sizeof g) == (ssize_t)sizeof g);
	}
	/* Closed by rank 0: end of stream or a reset. Each opening above is
	 * refused at once; rank 0's own limit for a silent peer is 10 s. */
	struct timeval tv = { 20, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char buf[128];
	ssize_t k;
	while ((k = recv(fd, buf, sizeof buf, 0)) > 0)
		;
	CHECK(k == 0 || errno == ECONNRESET);
	close(fd);
}

static void engine_level(const char *dir, const char *keyp)
{
	pid_t p0 = test_fork();
	CHECK(p0 >= 0);
	if (p0 == 0) {
		alarm(60);
		_exit(rank0(dir, keyp));
	}
	struct sockaddr_in sa;
	job_tcp_listener(dir, "tcp.0", &sa);
	unsigned char job[CANAL__JOB_BYTES];
	job_tcp_token(dir, "tcp.0", job);
	for (int how = 0; how < 3; how++)
		attack(&sa, job, how);
	pid_t p1 = test_fork();
	CHECK(p1 >= 0);
	if (p1 == 0) {
		alarm(60);
		_exit(rank1(dir, keyp));
	}
	int st;
	CHECK(waitpid(p1, &st, 0) == p1);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(waitpid(p0, &st, 0) == p0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "rank 0 status %d\n", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	char dir[] = "/tmp/canal-test-auth.XXXXXX";
	CHECK(mkdtemp(dir));
	char keyp[600];
	snprintf(keyp, sizeof keyp, "%s/key", dir);
	write_key(keyp, "the secret of the two ranks, 32+", 0600);
	char why[200];
	CHECK_EQ(canal__auth_load(keyp, key_a, why, sizeof why), 0);
	char keyb[600];
	snprintf(keyb, sizeof keyb, "%s/keyb", dir);
	write_key(keyb, "another secret, of someone else", 0600);
	CHECK_EQ(canal__auth_load(keyb, key_b, why, sizeof why), 0);
	CHECK(memcmp(key_a, key_b, sizeof key_a) != 0);

	int c, a;
	pair(key_a, key_a, &c, &a); /* right key */
	CHECK_EQ(c, 0);
	CHECK_EQ(a, 0);
	pair(NULL, NULL, &c, &a); /* no key anywhere: plain hello */
	CHECK_EQ(c, 0);
	CHECK_EQ(a, 0);
	pair(key_b, key_a, &c, &a); /* wrong key: the connector sees the
				     * acceptor's MAC is wrong and leaves */
	CHECK_EQ(c, -EACCES);
	CHECK(a < 0);
	CHECK_EQ(hand_answer(key_a, job_a), 0); /* the MAC as auth.c makes it */
	CHECK_EQ(hand_answer(key_b, job_a), -EACCES); /* one that answers anyway */
	CHECK_EQ(hand_answer(key_a, job_b), -EACCES); /* the MAC binds the job */
	/* A rank of another job, plain and keyed (one key file): refused
	 * for its job, both sides say so. */
	pair_jobs(NULL, job_b, NULL, job_a, &c, &a);
	CHECK_EQ(c, -ESTALE);
	CHECK_EQ(a, -ESTALE);
	CHECK(strstr(cwhy, "another job") != NULL);
	pair_jobs(key_a, job_b, key_a, job_a, &c, &a);
	CHECK_EQ(c, -ESTALE);
	CHECK_EQ(a, -ESTALE);
	spliced();
	version_1();
	pair(NULL, key_a, &c, &a); /* no key against a keyed rank: the
				    * connector hears the refusal and why */
	CHECK_EQ(a, -EACCES);
	CHECK_EQ(c, -EACCES);
	CHECK(strstr(cwhy, "refused this rank: one side has a key") != NULL);
	pair(key_a, NULL, &c, &a); /* keyed against a rank without key */
	CHECK_EQ(c, -EACCES);
	CHECK(strstr(cwhy, "refused this rank: one side has a key") != NULL);
	CHECK_EQ(a, -EACCES);
	unsigned char garbage[40];
	for (size_t i = 0; i < sizeof garbage; i++)
		garbage[i] = (unsigned char)(i * 91 + 3);
	CHECK_EQ(feed(garbage, sizeof garbage, false), -EPROTO);
	CHECK(feed("pc", 2, true) < 0); /* short hello, then end of stream */
	unsigned char bad_rank[24];
	uint32_t br[2] = { htole32(CANAL__AUTH_MAGIC), htole32(9) };
	memcpy(bad_rank, br, 8);
	memcpy(bad_rank + 8, job_a, 16);
	CHECK_EQ(feed(bad_rank, sizeof bad_rank, true), -EPROTO);
	replay();
	dialing();

	key_files(dir);
	write_key(keyp, "the secret of the two ranks, 32+", 0600);
	engine_level(dir, keyp);
	job_rmdir(dir);
	TEST_DONE("test_engine_auth");
}
