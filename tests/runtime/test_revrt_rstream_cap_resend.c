/* test_revrt_rstream_cap_resend.c - a receive stream's cancel at its cap
 * of kept buffers (CANAL__RS_HOLD_MAX) must be sent again while the
 * receive goes on.
 *
 * rstream.c sent the cap's ASYNC_CANCEL once (capped) and never again: a
 * cancel that found nothing (as io_run_until's can while the kernel moves
 * a request between its states, test_revrt_cancel_resend) left the
 * multishot receive armed, and the stream kept every later piece, past
 * its cap, taking the loop's shared buffers (for ever, for a task that
 * does not read). White box: the stream is marked capped as a cancel
 * that found nothing leaves it; pieces then come one by one while the
 * task does not read: the stream must stop near its cap (its receive
 * ended), not keep all of them. Then every piece once, in order. On the
 * epoll backend the stream takes a receive per call (nothing kept): the
 * pieces only.
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include "base/clock.h"
#include "runtime/io.h" /* CANAL__RS_HOLD_MAX, the stream (white box) */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#define PIECES 64

static int sv[2];
static _Atomic int go, written;

static void pair(void)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	CHECK_EQ(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(l, 1), 0);
	CHECK_EQ(getsockname(l, (struct sockaddr *)&a, &al), 0);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(c >= 0);
	CHECK_EQ(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(s >= 0);
	int one = 1;
	CHECK_EQ(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	close(l);
	sv[0] = s;
	sv[1] = c;
}

/* PIECES pieces of 10 bytes, 300 us apart (each its own arrival). */
static void *writer(void *arg)
{
	(void)arg;
	while (!atomic_load(&go))
		;
	for (int k = 0; k < PIECES; k++) {
		char b[10];
		for (int j = 0; j < 10; j++)
			b[j] = (char)(k * 10 + j);
		CHECK_EQ(write(sv[1], b, sizeof b), (ssize_t)sizeof b);
		struct timespec ts = {0, 300000};
		nanosleep(&ts, NULL);
	}
	atomic_store(&written, 1);
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	struct canal_io_rstream *s;
	CHECK_EQ(canal_io_rstream_open(sv[0], &s), 0);
	bool multishot = !s->fallback;
	/* A cap's cancel that found nothing: capped, the receive armed. */
	if (multishot)
		s->capped = true;
	atomic_store(&go, 1);
	while (!atomic_load(&written))
		canal_sleep_ns(1000000);
	/* Until the receive ended or the stream kept every piece (the last
	 * ones may land a moment late on loopback); 10 s hang guard. */
	for (int i = 0; multishot && s->armed && s->hcount < PIECES &&
			i < 10000;
	     i++)
		canal_sleep_ns(1000000);
	if (multishot && (s->armed || s->hcount > CANAL__RS_HOLD_MAX + 2)) {
		fprintf(stderr,
			"the stream kept %u pieces (cap %u), receive %s\n",
			s->hcount, CANAL__RS_HOLD_MAX,
			s->armed ? "still armed" : "ended");
		abort();
	}
	char b[10 * PIECES];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t r = canal_io_rstream_recv(s, b + got, sizeof b - got,
						  10000000000ll, NULL);
		CHECK(r > 0);
		got += (size_t)r;
	}
	for (size_t i = 0; i < sizeof b; i++)
		CHECK_EQ(b[i], (char)i);
	CHECK_EQ(canal_io_rstream_close(s), 0);
}

int main(void)
{
	pair();
	pthread_t w;
	CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	CHECK_EQ(pthread_join(w, NULL), 0);
	close(sv[0]);
	close(sv[1]);
	TEST_DONE("test_revrt_rstream_cap_resend");
}
