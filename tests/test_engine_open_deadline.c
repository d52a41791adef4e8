/* test_engine_open_deadline.c - connect_timeout_ms bounds canal_engine_open
 * as a whole (engine.h), not each step of connecting in turn. Rank 0 of 2
 * opens with two TCP rails (bind "127.0.0.1,127.0.0.1") and a 1.5 s
 * timeout; rank 1 is played by this test: it connects rail 0 late (after
 * 1.2 s) and never rail 1. Each rail was given the whole timeout, so the
 * open gave up after 1.2 + 1.5 s; now it returns -ETIMEDOUT about 1.5 s
 * after it began. Bounded by alarm(). */
#include "engine_job.h"
#include "../src/engine/transfer/driver.h"
#include "../src/engine/transfer/exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define TIMEOUT_MS 1500
#define LATE_MS 1200

int main(void)
{
	alarm(30);
	char dir[] = "/tmp/canal-test-opendl.XXXXXX";
	CHECK(mkdtemp(dir));
	uint64_t t0 = canal__now_ms();
	pid_t p0 = test_fork();
	CHECK(p0 >= 0);
	if (p0 == 0) {
		struct canal_engine_options o;
		canal_engine_options_init(&o);
		o.rank = 0;
		o.size = 2;
		o.dir = dir;
		o.driver = "tcp";
		o.bind = "127.0.0.1,127.0.0.1";
		o.connect_timeout_ms = TIMEOUT_MS;
		struct canal_engine *e;
		uint64_t t = canal__now_ms();
		int err = canal_engine_open(&o, &e);
		t = canal__now_ms() - t;
		fprintf(stderr, "rank 0: open returned %d after %llu ms "
			"(connect_timeout_ms %d)\n", err, (unsigned long long)t,
			TIMEOUT_MS);
		_exit(err == -ETIMEDOUT && t < TIMEOUT_MS + 600 ? 0 : 1);
	}
	/* rank 0's rail 0 */
	struct sockaddr_in sa;
	job_tcp_listener(dir, "tcp0.0", &sa);
	unsigned char job[16]; /* rail 0's job token, which rank 1 would hold */
	job_tcp_token(dir, "tcp0.0", job);
	uint64_t now = canal__now_ms();
	if (now < t0 + LATE_MS)
		usleep((useconds_t)(t0 + LATE_MS - now) * 1000);
	int fd = canal__tcp_dial(&sa, 1, 0, NULL, job, canal__now_ms() + 1000);
	CHECK(fd >= 0); /* rail 0 connected, late; rail 1 never */
	int st;
	CHECK(waitpid(p0, &st, 0) == p0);
	close(fd);
	job_rmdir(dir);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE("test_engine_open_deadline");
}
