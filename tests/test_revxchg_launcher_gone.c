/* test_revxchg_launcher_gone - (review) canal_engine_open through the
 * launcher's key-value service ($CANAL_LAUNCH_ADDR,
 * src/engine/transfer/exchange.c) when the launcher is gone: nothing
 * listens at its address any more (connections refused).
 *
 * A put (rank 0 of 2 publishes its TCP address) asked again until the
 * open's deadline, then said -ETIMEDOUT; a get (rank 1 of 2 publishes
 * nothing and reads rank 0's address) asked again as long, then said the
 * last attempt's error, -ECONNREFUSED: open's error depended on which of
 * the two was under way at the deadline. Expected (engine.h): -ETIMEDOUT
 * for both ranks; and canal__xchg_get itself says -ETIMEDOUT at its
 * deadline. Bounded: each open runs in a child killed after 10 s; no
 * assertion on time. */
#define _GNU_SOURCE
#include "check.h"
#include "hang_guard.h"
#include "engine/transfer/exchange.h"

#include <canal/engine.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* An address where nothing listens: a port bound (not listened on) for
 * the test's whole run, so no one else can take it; a connection to it
 * is refused. */
static int gone_launcher(char *addr, size_t cap)
{
	return loopback_socket(NULL, addr, cap, false);
}

int main(void)
{
	char addr[64];
	int hold = gone_launcher(addr, sizeof addr);

	/* The exchange itself: a get at its deadline. */
	struct canal__xchg x = { .rank = 1, .size = 2, .launch_addr = addr };
	char buf[128];
	int gerr = canal__xchg_get(&x, 0, "tcp", buf, sizeof buf,
				   canal__now_ms() + 200);
	printf("canal__xchg_get from a launcher gone: %d (%s)\n", gerr,
	       strerror(-gerr));

	/* open, rank 0 (a put under way at the deadline) and rank 1 (a
	 * get). */
	pid_t p[2];
	fflush(NULL);
	for (int rank = 0; rank < 2; rank++) {
		p[rank] = test_fork();
		CHECK(p[rank] >= 0);
		if (p[rank] == 0) {
			alarm(10);
			setenv("CANAL_LAUNCH_ADDR", addr, 1);
			unsetenv("CANAL_LAUNCH_DIR");
			struct canal_engine_options o;
			canal_engine_options_init(&o);
			o.rank = rank;
			o.size = 2;
			o.driver = "tcp";
			o.connect_timeout_ms = 500;
			struct canal_engine *e = NULL;
			int err = canal_engine_open(&o, &e);
			printf("rank %d: open returned %d (%s)\n", rank, err,
			       strerror(-err));
			fflush(stdout);
			_exit(err == -ETIMEDOUT ? 0 : 1);
		}
	}
	bool ok0 = child_exited_ok(p[0], "rank 0: open still waiting after 10 s");
	bool ok1 = child_exited_ok(p[1], "rank 1: open still waiting after 10 s");
	close(hold);
	CHECK_EQ(gerr, -ETIMEDOUT);
	CHECK(ok0);
	CHECK(ok1);
	TEST_DONE("test_revxchg_launcher_gone");
}
