/* test_revauth_dial_verdict_deadline - (review) canal__tcp_dial (how a
 * rank connects to each lower rank at open) against a peer whose listener
 * takes the connection (the kernel completes it in the backlog) and never
 * answers the hello: no verdict ever comes.
 *
 * The dial waited for the verdict at least 1 s (a floor on the caller's
 * remaining time), so a dial with 100 ms left returned -ETIMEDOUT after
 * about 1000 ms. Expected: -ETIMEDOUT within the caller's deadline (the
 * check is coarse: well before 1 s), plain and keyed. Bounded: the dials
 * run in a child killed after 10 s. */
#include "check.h"
#include "hang_guard.h"
#include "../src/engine/transfer/driver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

int main(void)
{
	struct sockaddr_in sa;
	int lfd = loopback_listener(&sa, NULL, 0); /* never accepted, never answered */
	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(10);
		static const unsigned char key[32] = { 1, 2, 3 };
		static const unsigned char job[16]; /* any: nobody answers */
		int ok = 1;
		for (int keyed = 0; keyed < 2; keyed++) {
			uint64_t t0 = hang_guard_ms();
			int fd = canal__tcp_dial(&sa, 1, 0, keyed ? key : NULL,
						 job, t0 + 100);
			uint64_t took = hang_guard_ms() - t0;
			printf("%s dial returned %d after %llu ms "
			       "(deadline 100 ms)\n",
			       keyed ? "keyed" : "plain", fd,
			       (unsigned long long)took);
			fflush(stdout);
			if (fd >= 0)
				close(fd);
			ok &= fd == -ETIMEDOUT && took < 900;
		}
		_exit(ok ? 0 : 1);
	}
	bool ok = child_exited_ok(p, "dial still waiting after 10 s");
	close(lfd);
	CHECK(ok);
	TEST_DONE("test_revauth_dial_verdict_deadline");
}
