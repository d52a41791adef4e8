/* test_revdoc_task.c - task.h's I/O calls against their contract ("the
 * system calls of the same names, for a task: the task is suspended until
 * the operation completes"), where the backend cannot wait for the
 * readiness it would use:
 *  - canal_io_connect of a Unix socket in blocking mode to a listener
 *    whose backlog is full: connect(2) would wait for room, so the call
 *    waits (until its timeout: -ETIMEDOUT; until an accept makes room:
 *    0), on both backends; never -EAGAIN, which a blocking connect does
 *    not say.
 *
 * Failed before its fix with: on the epoll backend, -EAGAIN at once, with
 * a timeout and without (io_uring waited).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/task.h>

#include <sys/socket.h>
#include <sys/un.h>

static struct sockaddr_un addr;
static int listener;
static int filler[64];
static int nfill;
static _Atomic int connecting;
static int failures;

static void expect(const char *what, long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %ld (%s), want %ld (%s)\n", what, got,
		strerror((int)-got), want, strerror((int)-want));
	failures++;
}

/* Connections until the listener's backlog is full (connect says EAGAIN
 * to a non-blocking socket). */
static void fill_backlog(void)
{
	for (nfill = 0; nfill < 64; nfill++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			       0);
		CHECK(s >= 0);
		if (connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) {
			CHECK_EQ(errno, EAGAIN);
			close(s);
			return;
		}
		filler[nfill] = s;
	}
	CHECK(!"the backlog never filled");
}

/* Once the task is about to connect: accept one connection (room in the
 * backlog for the task's). */
static void *acceptor(void *arg)
{
	(void)arg;
	while (!atomic_load(&connecting))
		usleep(1000);
	usleep(20000); /* most likely waiting by now (either way: 0) */
	int c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	CHECK(c >= 0);
	close(c);
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	expect("connect, full backlog, 50 ms",
	       canal_io_connect(s, (struct sockaddr *)&addr, sizeof addr,
				50000000, NULL),
	       -ETIMEDOUT);
	close(s);

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	pthread_t th = spawn(acceptor, NULL);
	atomic_store(&connecting, 1);
	expect("connect, full backlog, then an accept",
	       canal_io_connect(s, (struct sockaddr *)&addr, sizeof addr, -1,
				NULL),
	       0);
	join(th);
	close(s);
}

int main(void)
{
	alarm(20); /* a hang is a failure */
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(listener >= 0);
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof addr.sun_path,
		 "/tmp/canal-revdoc-task-%d", (int)getpid());
	unlink(addr.sun_path);
	CHECK_EQ(bind(listener, (struct sockaddr *)&addr, sizeof addr), 0);
	CHECK_EQ(listen(listener, 0), 0);
	fill_backlog();
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	for (int i = 0; i < nfill; i++)
		close(filler[i]);
	close(listener);
	unlink(addr.sun_path);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revdoc_task");
}
