/* test_revauth_kv_put_deadline - (review) publishing this rank's address
 * at open (canal__xchg_put, src/engine/transfer/exchange.c) through the
 * launcher's key-value service (CANAL_LAUNCH_ADDR) when the service takes
 * the connection and never answers: a listener that never accepts.
 *
 * The put took no deadline: it asked again and again for its own 30 s
 * (LAUNCHER_RETRY_MS), each question waiting up to 5 s, whatever the
 * open's connect_timeout_ms said; open returned after about 30 s. Expected:
 * canal_engine_open (rank 0 of 2, tcp, connect_timeout_ms 500) returns
 * -ETIMEDOUT about its connect timeout. Bounded: the open runs in a child
 * killed after 10 s. */
#define _GNU_SOURCE
#include "check.h"
#include "hang_guard.h"

#include <canal/engine.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

int main(void)
{
	char addr[64];
	int lfd = loopback_listener(NULL, addr, sizeof addr); /* never accepted */

	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(10);
		setenv("CANAL_LAUNCH_ADDR", addr, 1);
		unsetenv("CANAL_LAUNCH_DIR");
		struct canal_engine_options o;
		canal_engine_options_init(&o);
		o.rank = 0;
		o.size = 2;
		o.driver = "tcp";
		o.connect_timeout_ms = 500;
		struct canal_engine *e = NULL;
		uint64_t t0 = hang_guard_ms();
		int err = canal_engine_open(&o, &e);
		uint64_t took = hang_guard_ms() - t0;
		printf("open returned %d after %llu ms (connect timeout 500 ms)\n",
		       err, (unsigned long long)took);
		fflush(stdout);
		_exit(err == -ETIMEDOUT && took < 4000 ? 0 : 1);
	}
	bool ok = child_exited_ok(p, "open still publishing after 10 s");
	close(lfd);
	CHECK(ok);
	TEST_DONE("test_revauth_kv_put_deadline");
}
