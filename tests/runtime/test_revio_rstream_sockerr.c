/* test_revio_rstream_sockerr.c - hostile review: a receive stream whose
 * connection fails with ETIMEDOUT (TCP_USER_TIMEOUT: the peer's window
 * stays shut while we have bytes to send) must report the error after
 * the bytes that came before it, at this call and every later one
 * (task.h: "-errno the receive's error ... again at every later call").
 * rstream.c counted -ETIMEDOUT among the errors of its own (a timeout of
 * the stream's receive) and kept the stream going: on io_uring the
 * multishot receive's last CQE (-ETIMEDOUT, the socket's error) was
 * dropped, the receive armed again, and the dead socket's next receive
 * said 0: a connection that timed out was reported as the peer's clean
 * end of input, the error never. On epoll (a receive per call) the error
 * came once, then 0. Failed before the fix with
 *   io_uring: CHECK_EQ failed: r == 0, -ETIMEDOUT == -110
 *   epoll:    CHECK_EQ failed: r == 0, -ETIMEDOUT == -110 (the 2nd call)
 * canal_io_submit_link_recv then returned -ETIMEDOUT ("the timeout came
 * first") with *got -EAGAIN for the stream's error: it now returns 0,
 * *got the error.
 * Every receive here has no timeout (-1): an -ETIMEDOUT can only be the
 * socket's. Bounded by alarm(). */
#define _GNU_SOURCE
#include "fds.h"

#include <canal/task.h>

#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

/* A TCP loopback pair: sv[0] gives up on unacknowledged bytes after
 * 200 ms (TCP_USER_TIMEOUT, which also bounds zero-window probing), both
 * with small buffers so that sv[0]'s sends stall soon. */
static void pair(int sv[2])
{
	struct sockaddr_in a;
	int l = test_loopback_listener(1, &a);
	int small = 4096;
	CHECK_EQ(setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)),
		 0);
	sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(sv[0] >= 0);
	unsigned ut = 200;
	CHECK_EQ(setsockopt(sv[0], IPPROTO_TCP, TCP_USER_TIMEOUT, &ut,
			    sizeof(ut)),
		 0);
	CHECK_EQ(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small,
			    sizeof(small)),
		 0);
	CHECK_EQ(connect(sv[0], (struct sockaddr *)&a, sizeof(a)), 0);
	sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(sv[1] >= 0);
	close(l);
}

static void main_task(void *arg)
{
	(void)arg;
	int sv[2];
	pair(sv);
	struct canal_io_rstream *s;
	CHECK_EQ(canal_io_rstream_open(sv[0], &s), 0);
	CHECK_EQ(write(sv[1], "hi", 2), 2);
	/* Fill sv[0]'s way out: sv[1] never reads, its window shuts, and
	 * sv[0]'s connection times out 200 ms later. */
	static char junk[65536];
	/* Until the first stall only: a send that met the error would take
	 * it (a socket reports its error once) from the receive. */
	for (;;) {
		ssize_t n = send(sv[0], junk, sizeof(junk),
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			CHECK_EQ(errno, EAGAIN);
			break;
		}
	}
	char buf[16];
	size_t got = 0;
	ssize_t r;
	while ((r = canal_io_rstream_recv(s, buf + got, sizeof(buf) - got, -1,
					  NULL)) > 0)
		got += (size_t)r;
	fprintf(stderr, "after %zu bytes: %zd\n", got, r);
	CHECK_EQ(got, 2);
	CHECK(memcmp(buf, "hi", 2) == 0);
	CHECK_EQ(r, -ETIMEDOUT);
	r = canal_io_rstream_recv(s, buf, sizeof(buf), -1, NULL);
	CHECK_EQ(r, -ETIMEDOUT);
	CHECK_EQ(canal_io_rstream_recv(s, buf, sizeof(buf), 0, NULL),
		 -ETIMEDOUT);
	/* The chained form: the chain (a NOP) ran, and *got is the
	 * stream's error (not the call's -ETIMEDOUT, "the timeout came
	 * first"). */
	struct io_uring_sqe q;
	memset(&q, 0, sizeof(q));
	io_uring_prep_nop(&q);
	int32_t res[1] = {-99};
	ssize_t in = -99;
	int rc = canal_io_submit_link_recv(&q, 1, res, s, buf, sizeof(buf),
					   &in, -1, NULL);
	const char *b = getenv("CANAL_BACKEND");
	if (b && strcmp(b, "epoll") == 0) {
		CHECK_EQ(rc, -EOPNOTSUPP);
	} else {
		CHECK_EQ(rc, 0);
		CHECK_EQ(res[0], 0);
		CHECK_EQ(in, -ETIMEDOUT);
	}
	CHECK_EQ(canal_io_rstream_close(s), 0);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	alarm(30);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_revio_rstream_sockerr: ok\n");
	return 0;
}
