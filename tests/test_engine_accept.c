/* test_engine_accept.c - the accepting side of the TCP set-up (accept.c,
 * and auth.h's opening): the openings of all accepted connections are
 * read at once, each under one deadline for the whole opening.
 *  - An opening whose hello comes a byte every 100 ms fails at its
 *    deadline (300 ms): the deadline is for the whole opening, not for
 *    each read (SO_RCVTIMEO was renewed by every byte).
 *  - canal__tcp_accept_peers with strangers connected first (one silent,
 *    one that sent half a hello, one garbage, and more silent ones than
 *    it keeps slots for: the oldest make room) takes the real ranks 1 and
 *    2 (keyed, dialed behind them) at once, each on its own connection,
 *    and closes every stranger; no descriptor is left behind.
 *  - A rank 1 of another job (same key, another job token) that dials
 *    first is refused for its job (-ESTALE, at once) and closed, never
 *    taken for rank 1; the job's own rank 1, dialing after it, is.
 *  - Alone with a silent stranger, it returns -ETIMEDOUT at its deadline.
 * Bounded by alarm(). */
#include "check.h"
#include "../src/engine/transfer/auth.h"
#include "../src/engine/transfer/driver.h"
#include "../src/engine/transfer/exchange.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <netinet/in.h>
#include <poll.h>
#include <sodium.h>
#include <sys/socket.h>
#include <sys/time.h>

#define FLOOD 70 /* silent strangers: more than the 64 slots beyond peers */

static unsigned char key[CANAL__KEY_BYTES];
static const unsigned char job[CANAL__JOB_BYTES] = { 'j', 'o', 'b' };

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	CHECK(d);
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

struct trickle {
	int fd, every_ms;
	const unsigned char *bytes;
	size_t n;
};

static void *trickle_fn(void *arg)
{
	struct trickle *t = arg;
	for (size_t i = 0; i < t->n; i++) {
		if (send(t->fd, t->bytes + i, 1, MSG_NOSIGNAL) != 1)
			break;
		usleep((useconds_t)t->every_ms * 1000);
	}
	return NULL;
}

/* The whole opening has one deadline. */
static void opening_deadline(void)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	uint32_t h[2] = { htole32(CANAL__HELLO_MAGIC), htole32(1) };
	struct trickle t = { .fd = sv[0], .every_ms = 100,
			     .bytes = (const unsigned char *)h, .n = 8 };
	pthread_t th = spawn(trickle_fn, &t);
	struct canal__auth_opening o;
	uint64_t t0 = canal__now_ms();
	canal__auth_opening_init(&o, sv[1], NULL, job, 0, 1, 4, t0 + 300);
	int err;
	while ((err = canal__auth_opening_step(&o)) == -EINPROGRESS) {
		struct pollfd p = { .fd = sv[1], .events = POLLIN };
		uint64_t now = canal__now_ms();
		poll(&p, 1, now < o.deadline ? (int)(o.deadline - now) : 0);
	}
	uint64_t took = canal__now_ms() - t0;
	CHECK_EQ(err, -ETIMEDOUT);
	CHECK_EQ(o.stage, CANAL__OPENING_FAILED);
	CHECK(strstr(o.why, "no hello") != NULL);
	CHECK(took >= 300 && took < 700);
	CHECK_EQ(canal__auth_opening_step(&o), -ETIMEDOUT); /* and stays so */
	join(th);
	close(sv[0]);
	close(sv[1]);
}

static int listener(struct sockaddr_in *sa)
{
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(lfd >= 0);
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof *sa;
	CHECK(bind(lfd, (struct sockaddr *)sa, sizeof *sa) == 0);
	CHECK(listen(lfd, 256) == 0);
	CHECK(getsockname(lfd, (struct sockaddr *)sa, &sl) == 0);
	return lfd;
}

static int stranger(const struct sockaddr_in *sa, const void *bytes,
		    size_t n)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0);
	if (n)
		CHECK(send(fd, bytes, n, MSG_NOSIGNAL) == (ssize_t)n);
	return fd;
}

/* The acceptor closed fd: end of stream or a reset, within 5 s. */
static void check_closed(int fd)
{
	struct timeval tv = { 5, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char buf[64];
	ssize_t k;
	while ((k = recv(fd, buf, sizeof buf, 0)) > 0)
		;
	CHECK(k == 0 || errno == ECONNRESET);
}

struct dialer {
	const struct sockaddr_in *sa;
	int rank, fd;
	const unsigned char *job;
};

static void *dial_fn(void *arg)
{
	struct dialer *d = arg;
	d->fd = canal__tcp_dial(d->sa, d->rank, 0, key, d->job,
				canal__now_ms() + 10000);
	return NULL;
}

static void strangers_first(void)
{
	int before = open_fds();
	struct sockaddr_in sa;
	int lfd = listener(&sa);
	int s[3 + FLOOD];
	s[0] = stranger(&sa, NULL, 0); /* silent */
	uint32_t h[2] = { htole32(CANAL__AUTH_MAGIC), htole32(1) };
	s[1] = stranger(&sa, h, 5);    /* half a hello */
	unsigned char g[8] = { 'G', 'E', 'T', ' ', '/', ' ', 'H', 'T' };
	s[2] = stranger(&sa, g, sizeof g); /* garbage */
	for (int i = 0; i < FLOOD; i++)
		s[3 + i] = stranger(&sa, NULL, 0);
	struct dialer d[2] = { { &sa, 1, -1, job }, { &sa, 2, -1, job } };
	pthread_t t[2] = { spawn(dial_fn, &d[0]), spawn(dial_fn, &d[1]) };
	usleep(100000); /* the real hellos wait behind the strangers */
	int fds[3] = { -1, -1, -1 };
	uint64_t t0 = canal__now_ms();
	CHECK_EQ(canal__tcp_accept_peers(lfd, key, job, 0, 1, 3, t0 + 8000,
					 fds), 0);
	uint64_t took = canal__now_ms() - t0;
	fprintf(stderr, "accepted ranks 1 and 2 behind %d strangers in %llu ms\n",
		3 + FLOOD, (unsigned long long)took);
	CHECK(took < 2000);
	join(t[0]);
	join(t[1]);
	for (int r = 1; r <= 2; r++) {
		CHECK(fds[r] >= 0);
		CHECK(d[r - 1].fd >= 0);
		/* fds[r] is rank r's own connection. */
		char c = (char)('0' + r), got = 0;
		CHECK(send(fds[r], &c, 1, MSG_NOSIGNAL) == 1);
		CHECK(recv(d[r - 1].fd, &got, 1, MSG_WAITALL) == 1);
		CHECK_EQ(got, c);
		close(fds[r]);
		close(d[r - 1].fd);
	}
	for (int i = 0; i < 3 + FLOOD; i++) {
		check_closed(s[i]);
		close(s[i]);
	}
	close(lfd);
	CHECK_EQ(open_fds(), before);
}

/* Another job's rank 1, then the job's own: the acceptor runs while the
 * first is refused, the second dials only once the first has its answer. */
struct two_dialers {
	struct dialer other, own;
};

static void *other_then_own(void *arg)
{
	struct two_dialers *t = arg;
	dial_fn(&t->other);
	dial_fn(&t->own);
	return NULL;
}

static void other_job(void)
{
	int before = open_fds();
	struct sockaddr_in sa;
	int lfd = listener(&sa);
	static const unsigned char other[CANAL__JOB_BYTES] = { 'b' };
	struct two_dialers t = { { &sa, 1, -1, other }, { &sa, 1, -1, job } };
	pthread_t th = spawn(other_then_own, &t);
	int fds[2] = { -1, -1 };
	CHECK_EQ(canal__tcp_accept_peers(lfd, key, job, 0, 1, 2,
					 canal__now_ms() + 8000, fds), 0);
	join(th);
	CHECK_EQ(t.other.fd, -ESTALE); /* refused for its job: final */
	CHECK(t.own.fd >= 0);
	/* fds[1] is the job's own rank 1. */
	char c = 'k', got = 0;
	CHECK(send(fds[1], &c, 1, MSG_NOSIGNAL) == 1);
	CHECK(recv(t.own.fd, &got, 1, MSG_WAITALL) == 1);
	CHECK_EQ(got, c);
	close(fds[1]);
	close(t.own.fd);
	close(lfd);
	CHECK_EQ(open_fds(), before);
}

static void silent_alone(void)
{
	int before = open_fds();
	struct sockaddr_in sa;
	int lfd = listener(&sa);
	int s = stranger(&sa, NULL, 0);
	int fds[2] = { -1, -1 };
	uint64_t t0 = canal__now_ms();
	CHECK_EQ(canal__tcp_accept_peers(lfd, NULL, job, 0, 1, 2, t0 + 400, fds),
		 -ETIMEDOUT);
	uint64_t took = canal__now_ms() - t0;
	CHECK(took >= 400 && took < 1500);
	CHECK_EQ(fds[1], -1);
	check_closed(s);
	close(s);
	close(lfd);
	CHECK_EQ(open_fds(), before);
}

int main(void)
{
	alarm(60);
	CHECK(sodium_init() >= 0);
	randombytes_buf(key, sizeof key);
	opening_deadline();
	strangers_first();
	other_job();
	silent_alone();
	TEST_DONE("test_engine_accept");
}
