/* test_xchg_launcher.c - the engine's "launcher" address exchange
 * (CANAL_LAUNCH_ADDR, src/engine/transfer/exchange.c) against a launcher
 * that does not answer: a listening socket that never accepts (the
 * connection waits in its backlog). canal__xchg_get must end with
 * -ETIMEDOUT (its contract, exchange.h; not -EAGAIN, the errno of a
 * socket timeout) and not be held past its deadline by one question.
 * Then against a service that answers garbage: -EPROTO at its first
 * answer (the deadline is far: on a loaded machine a near one could end
 * the wait first); and malformed addresses: -EINVAL. The time is bounded by the socket timeouts (5 s
 * each at most); pass/fail is the errors. */
#define _GNU_SOURCE
#include "check.h"
#include "hang_guard.h"
#include "engine/transfer/exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Answers every question with a line the protocol does not have, until
 * the listener is shut down. */
static void *garbage(void *arg)
{
	int lfd = *(int *)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		char b[256];
		(void)!recv(fd, b, sizeof b, 0);
		(void)!send(fd, "Z what\n", 7, MSG_NOSIGNAL);
		close(fd);
	}
	return NULL;
}

int main(void)
{
	char addr[64], buf[128];
	int lfd = loopback_listener(NULL, addr, sizeof addr);
	struct canal__xchg x = { .rank = 0, .size = 2, .launch_addr = addr };
	CHECK_EQ(canal__xchg_get(&x, 1, "tcp", buf, sizeof buf,
				 canal__now_ms() + 200),
		 -ETIMEDOUT);
	close(lfd);

	lfd = loopback_listener(NULL, addr, sizeof addr);
	pthread_t t = spawn(garbage, &lfd);
	uint64_t t0 = canal__now_ms();
	CHECK_EQ(canal__xchg_get(&x, 1, "tcp", buf, sizeof buf,
				 t0 + 60000),
		 -EPROTO);
	/* Not by the deadline (60 s): at the first answer. */
	CHECK(canal__now_ms() - t0 < 50000);
	shutdown(lfd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(lfd);

	const char *bad[] = { "127.0.0.1", "127.0.0.1:", "127.0.0.1:0",
			      "127.0.0.1:70000", "nohost:80", ":80" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		x.launch_addr = bad[i];
		CHECK_EQ(canal__xchg_get(&x, 1, "tcp", buf, sizeof buf,
					 canal__now_ms() + 200),
			 -EINVAL);
	}
	printf("test_xchg_launcher: ok\n");
	return 0;
}
