/* test_revauth_kv_trickle - (review) the launcher's key-value exchange
 * (CANAL_LAUNCH_ADDR, src/engine/transfer/exchange.c, launcher_ask)
 * against a service that accepts the question and then trickles its
 * answer one byte every 100 ms, never ending the line.
 *
 * launcher_ask bounded each recv() (SO_RCVTIMEO, at most 5 s or until the
 * deadline), not the reply as a whole: every byte that came in time
 * renewed the limit, so a get with a deadline 1 s away waited for the
 * whole 4 KiB answer buffer to fill (about 7 minutes at this pace).
 * Expected: canal__xchg_get returns -ETIMEDOUT about its deadline (1 s).
 * Bounded: the get runs in a child killed after 10 s. */
#define _GNU_SOURCE
#include "check.h"
#include "hang_guard.h"
#include "engine/transfer/exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* Each question answered "V " and then one 'a' every 100 ms, no newline,
 * until the asker closes. */
static void trickler(int lfd)
{
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			_exit(0);
		char b[256];
		(void)!recv(fd, b, sizeof b, 0);
		const char *p = "V ";
		for (int i = 0;; i++) {
			if (send(fd, i < 2 ? p + i : "a", 1, MSG_NOSIGNAL) != 1)
				break;
			usleep(100000);
		}
		close(fd);
	}
}

int main(void)
{
	char addr[64];
	int lfd = loopback_listener(NULL, addr, sizeof addr);
	pid_t server = test_fork();
	CHECK(server >= 0);
	if (server == 0) {
		alarm(30);
		trickler(lfd);
	}
	close(lfd);

	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(10);
		struct canal__xchg x = { .rank = 0, .size = 2,
					 .launch_addr = addr };
		char buf[CANAL__XCHG_MAX];
		uint64_t t0 = canal__now_ms();
		int err = canal__xchg_get(&x, 1, "tcp", buf, sizeof buf,
					  t0 + 1000);
		uint64_t took = canal__now_ms() - t0;
		printf("get returned %d after %llu ms (deadline 1000 ms)\n",
		       err, (unsigned long long)took);
		fflush(stdout);
		_exit(err == -ETIMEDOUT && took < 4000 ? 0 : 1);
	}
	bool ok = child_exited_ok(p, "get still waiting after 10 s");
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	CHECK(ok);
	TEST_DONE("test_revauth_kv_trickle");
}
