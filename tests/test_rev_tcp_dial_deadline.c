/* test_rev_tcp_dial_deadline - (review) canal__tcp_dial() (how a rank
 * connects to each lower rank at open) against an address that takes no
 * connection: a listener whose accept queue is full (the kernel drops
 * the SYNs, as a host that went away or a firewall would). The dial's
 * deadline (connect_timeout_ms at open) is 1.5 s, but connect() runs on a
 * blocking socket with no timeout, so it waits for the kernel's SYN
 * retries (tcp_syn_retries: about 2 minutes by default) whatever the
 * deadline. Expected: the dial returns (-ETIMEDOUT) within about its
 * deadline. Bounded: the dial runs in a child killed after 10 s. */
#include "check.h"
#include "../src/engine/transfer/driver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int main(void)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(lfd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(lfd, 0) == 0); /* never accepted */
	CHECK(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
	/* fill the accept queue */
	int fill[4];
	for (int i = 0; i < 4; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		CHECK(fill[i] >= 0);
		(void)connect(fill[i], (struct sockaddr *)&sa, sizeof sa);
	}
	usleep(200000);
	pid_t p = test_fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(10);
		uint64_t t0 = mono_ms();
		static const unsigned char job[16]; /* any: nobody answers */
		int fd = canal__tcp_dial(&sa, 1, 0, NULL, job, t0 + 1500);
		fprintf(stderr, "dial returned %d after %llu ms (deadline 1500 ms)\n",
			fd, (unsigned long long)(mono_ms() - t0));
		_exit(fd == -ETIMEDOUT && mono_ms() - t0 < 3000 ? 0 : 1);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (WIFSIGNALED(st))
		fprintf(stderr, "dial still blocked after 10 s (killed by signal %d)\n",
			WTERMSIG(st));
	for (int i = 0; i < 4; i++)
		close(fill[i]);
	close(lfd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE("test_rev_tcp_dial_deadline");
}
