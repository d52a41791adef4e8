/* test_revdoc_accept_outside.c - canal_io_accept outside a task (a plain
 * thread, a detached task) on a descriptor that is not a listening
 * socket returns what accept(2) says, at once, with a timeout too, as in
 * a task (test_revapi_task) and as without a timeout: -ENOTSOCK for a
 * pipe, -EINVAL for a connected socket, -EOPNOTSUPP for a datagram
 * socket. Each call has a timeout of 1 s (a wrong -ETIMEDOUT is a value,
 * not a race: the right answer comes without any wait).
 *
 * Failed before its fix with: outside a task and in a detached task, each
 * call waited out its timeout for a readiness that never comes (poll(2)
 * first, task.h: "timeout_ns applies to readiness"), then said
 * -ETIMEDOUT; without a timeout accept4(2) said its error at once.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "expect.h"

#include <canal/task.h>

#include <fcntl.h>
#include <sys/socket.h>

#define WAIT_NS 1000000000

static int pipe_fds[2], pair[2], dgram;

static void calls(const char *ctx)
{
	EXPECT_IN(ctx,
		  canal_io_accept(pipe_fds[0], NULL, NULL, 0, WAIT_NS, NULL),
		  -ENOTSOCK);
	EXPECT_IN(ctx, canal_io_accept(pair[0], NULL, NULL, 0, WAIT_NS, NULL),
		  -EINVAL);
	EXPECT_IN(ctx, canal_io_accept(dgram, NULL, NULL, 0, WAIT_NS, NULL),
		  -EOPNOTSUPP);
	/* No timeout: accept4(2) itself. */
	EXPECT_IN(ctx, canal_io_accept(pipe_fds[0], NULL, NULL, 0, -1, NULL),
		  -ENOTSOCK);
}

static void detached(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_detach(), 0);
	calls("detached task");
}

int main(void)
{
	alarm(60); /* a hang is a failure */
	CHECK_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
	dgram = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(dgram >= 0);
	calls("plain thread");
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(detached, NULL, &o), 0);
	CHECK_EQ(expect_failures, 0);
	TEST_DONE("test_revdoc_accept_outside");
}
