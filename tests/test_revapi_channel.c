/* test_revapi_channel.c - channel.h's documented errors, table-driven, on
 * the cases test_api.c and test_holes.c leave out, each checked for the
 * exact value.
 *
 * Failed before its fix with:
 *  - canal_chan_recv_handle with bad flags: -EINVAL, but only after it had
 *    taken the handle from the socket and closed it: the channel was lost
 *    (the next, correct call got -EAGAIN).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/* The table's rows, in order: each call is made, its value compared with
 * the one documented; every mismatch is reported (not only the first),
 * then the test fails. */
static int expect_failures;

static void expect_value(const char *what, long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %ld (%s), want %ld (%s)\n", what, got,
		strerror((int)-got), want, strerror((int)-want));
	expect_failures++;
}

#define EXPECT(call, want) expect_value(#call, (long)(call), (long)(want))
#define EXPECT_V(what, got, want) expect_value(what, (long)(got), (long)(want))

/* Hand-over: argument errors leave the socket's message in place. */
static void test_handles(void)
{
	struct canal_chan *s = canal_chan_create(8, 4, CANAL_SHARED);
	struct canal_chan *t = canal_chan_create(8, 4, 0);
	struct canal_chan *o = (struct canal_chan *)1;
	int sv[2];
	CHECK(s && t);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(canal_chan_send_handle(sv[0], s), 0);
	/* Never blocks below: the socket is non-blocking. */
	CHECK_EQ(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY, 0, &o),
		  -EINVAL);
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY, 3, &o),
		  -EINVAL);
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					 CANAL_SHARED, NULL),
		  -EINVAL);
	/* The handle is still there for a correct call. */
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					 CANAL_SHARED, &o),
		  0);
	CHECK_EQ(expect_failures, 0);
	CHECK(o != NULL && o != (struct canal_chan *)1);
	uint64_t v = 7;
	CHECK_EQ(canal_send(o, &v), 0);
	v = 0;
	CHECK_EQ(canal_recv(s, &v), 0);
	CHECK_EQ(v, 7);
	canal_chan_destroy(o);
	o = NULL;
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					 CANAL_SHARED, &o),
		  -EAGAIN);
	EXPECT(canal_chan_send_handle(sv[0], t), -EINVAL);
	EXPECT(canal_chan_send_handle(sv[0], NULL), -EINVAL);
	EXPECT(canal_chan_send_handle(-1, s), -EBADF);
	EXPECT(canal_chan_recv_handle(-1, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
					 &o),
		  -EBADF);
	EXPECT(canal_chan_fd(t), -EINVAL);
	EXPECT(canal_chan_fd(NULL), -EINVAL);
	CHECK_EQ(expect_failures, 0);
	/* A peer that closed: -ECONNRESET. */
	close(sv[0]);
	CHECK_EQ(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					CANAL_SHARED, &o),
		 -ECONNRESET);
	close(sv[1]);
	canal_chan_destroy(s);
	canal_chan_destroy(t);
}

int main(void)
{
	alarm(20); /* a hang is a failure */
	test_handles();
	TEST_DONE("test_revapi_channel");
}
