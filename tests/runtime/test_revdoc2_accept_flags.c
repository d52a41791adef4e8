/* test_revdoc2_accept_flags.c - canal_io_accept with flags accept4(2)
 * does not know (anything but SOCK_CLOEXEC and SOCK_NONBLOCK) says
 * -EINVAL at once, as accept4(2) does before it looks at the listener:
 * in a task on each backend and outside a task, with a timeout, without
 * and with 0, on a listener in blocking mode with no connection waiting.
 *
 * Failed before its fix with: on the epoll backend (in a task) and
 * outside a task, the call waited for a connection, and said -ETIMEDOUT
 * when the timeout came first (io_uring said -EINVAL at once).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/task.h>

#include <sys/socket.h>
#include <sys/un.h>

static int listener;
static int failures;
static const char *where;

static void expect(const char *what, long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %s: %ld (%s), want %ld (%s)\n", where, what, got,
		strerror((int)-got), want, strerror((int)-want));
	failures++;
}

static void checks(void)
{
	static const int bad[] = {1, SOCK_CLOEXEC | 1, SOCK_NONBLOCK | 0x4};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		expect("timeout 1 s",
		       canal_io_accept(listener, NULL, NULL, bad[i],
				       1000000000, NULL),
		       -EINVAL);
		expect("timeout 0",
		       canal_io_accept(listener, NULL, NULL, bad[i], 0, NULL),
		       -EINVAL);
	}
	/* Without a timeout (a hang here is the alarm's). */
	expect("no timeout",
	       canal_io_accept(listener, NULL, NULL, 1, -1, NULL), -EINVAL);
	/* Good flags still wait (and time out: nobody connects). */
	expect("good flags, timeout 10 ms",
	       canal_io_accept(listener, NULL, NULL,
			       SOCK_CLOEXEC | SOCK_NONBLOCK, 10000000, NULL),
	       -ETIMEDOUT);
}

static void main_task(void *arg)
{
	(void)arg;
	where = "in a task";
	checks();
}

int main(void)
{
	alarm(30); /* a hang is a failure */
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(listener >= 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	/* (abstract: nothing to unlink) */
	snprintf(a.sun_path + 1, sizeof a.sun_path - 1,
		 "canal-revdoc2-accept-%d", (int)getpid());
	CHECK_EQ(bind(listener, (struct sockaddr *)&a, sizeof a), 0);
	CHECK_EQ(listen(listener, 4), 0);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	where = "outside a task";
	checks();
	close(listener);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revdoc2_accept_flags");
}
