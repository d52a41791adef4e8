/* test_rev_tcp_slow_hello - (review) a stray local process connects to
 * rank 0's TCP listener while the job opens and trickles the first bytes
 * of a hello, one every 3 s, then goes silent. The acceptor reads the
 * opening of one connection at a time with a 10 s limit per recv() call
 * (auth.c: SO_RCVTIMEO, not a deadline for the whole hello) and ignores
 * connect_timeout_ms meanwhile, so the stray holds the accept loop for
 * 7 x 3 s + 10 s. The real rank 1, connected in the backlog behind it,
 * hears no verdict and gives up; rank 0 gives up too, long after its
 * own connect_timeout_ms. Expected: both open (rank 1 was there within
 * the timeout), or at least each open returns within about its
 * connect_timeout_ms (engine.h: -ETIMEDOUT "a peer did not appear
 * within connect_timeout_ms"). Bounded by alarm(). */
#include "engine_job.h"
#include "../src/engine/transfer/auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define TIMEOUT_MS 10000

static int open_rank(const char *dir, int rank)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = rank;
	o.size = 2;
	o.dir = dir;
	o.driver = "tcp";
	o.connect_timeout_ms = TIMEOUT_MS;
	struct canal_engine *e;
	uint64_t t0 = canal_now_ns();
	int err = canal_engine_open(&o, &e);
	double s = (double)(canal_now_ns() - t0) / 1e9;
	fprintf(stderr, "rank %d: open returned %d (%s) after %.1f s "
		"(connect_timeout_ms %d)\n", rank, err, err ? strerror(-err) : "ok",
		s, TIMEOUT_MS);
	if (err)
		return 1;
	canal_engine_close(e);
	return s > TIMEOUT_MS / 1000.0 + 2 ? 2 : 0;
}

int main(void)
{
	char dir[] = "/tmp/canal-test-slowhello.XXXXXX";
	CHECK(mkdtemp(dir));
	pid_t p0 = test_fork();
	CHECK(p0 >= 0);
	if (p0 == 0) {
		alarm(60);
		_exit(open_rank(dir, 0));
	}
	/* rank 0's address */
	struct sockaddr_in sa;
	job_tcp_listener(dir, "tcp.0", &sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
	usleep(200000); /* let rank 0 accept the stray first */
	pid_t p1 = test_fork();
	CHECK(p1 >= 0);
	if (p1 == 0) {
		alarm(60);
		_exit(open_rank(dir, 1));
	}
	/* the first 7 bytes of a plain hello, slowly */
	uint32_t h[2] = { htole32(CANAL__HELLO_MAGIC), htole32(1) };
	const unsigned char *b = (const unsigned char *)h;
	for (int i = 0; i < 7; i++) {
		if (send(fd, b + i, 1, MSG_NOSIGNAL) != 1)
			break;
		sleep(3);
	}
	int st0, st1;
	CHECK(waitpid(p1, &st1, 0) == p1);
	CHECK(waitpid(p0, &st0, 0) == p0);
	close(fd);
	job_rmdir(dir);
	fprintf(stderr, "rank 0 status %d, rank 1 status %d\n",
		WIFEXITED(st0) ? WEXITSTATUS(st0) : -1,
		WIFEXITED(st1) ? WEXITSTATUS(st1) : -1);
	CHECK(WIFEXITED(st0) && WEXITSTATUS(st0) == 0);
	CHECK(WIFEXITED(st1) && WEXITSTATUS(st1) == 0);
	TEST_DONE("test_rev_tcp_slow_hello");
}
