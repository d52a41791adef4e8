/* test_revio_timeout0_ready.c - hostile review: task.h promises that
 * "timeout_ns 0 always makes the one try ... then -ETIMEDOUT", and that
 * the outcome never depends on how the call gets there. Two kinds of file
 * need readiness before canal__io_try will touch them: a listener in
 * blocking mode (accept4 has no per-call "don't wait") and a file that
 * refuses RWF_NOWAIT (a pty). Their try, asked without readiness
 * (ready false), says -EAGAIN without looking, and a timeout of 0 then
 * returned -ETIMEDOUT although a connection was waiting in the backlog
 * or a byte in the pty: a task polling them with timeout 0 never got
 * anything. Failed before the fix, on both backends, with
 *   CHECK failed: a >= 0   (canal_io_accept = -ETIMEDOUT, -110)
 *   CHECK_EQ failed: r == -110, 1 == 1   (canal_io_read of the pty)
 * Bounded by alarm(). */
#define _GNU_SOURCE
#include "fds.h"

#include <canal/task.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

static void wait_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	CHECK_EQ(poll(&p, 1, 5000), 1);
}

static void accept_part(void)
{
	struct sockaddr_in a;
	int l = test_loopback_listener(4, &a); /* blocking */
	/* Nothing waits: one try, -ETIMEDOUT, the listener left blocking. */
	CHECK_EQ(canal_io_accept(l, NULL, NULL, SOCK_CLOEXEC, 0, NULL),
		 -ETIMEDOUT);
	CHECK_EQ(fcntl(l, F_GETFL) & O_NONBLOCK, 0);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(c >= 0);
	CHECK_EQ(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	wait_readable(l); /* the connection is in the backlog */
	int fd = canal_io_accept(l, NULL, NULL, SOCK_CLOEXEC, 0, NULL);
	fprintf(stderr, "canal_io_accept(blocking listener, timeout 0) with "
		"a connection waiting = %d\n", fd);
	CHECK(fd >= 0);
	CHECK_EQ(fcntl(l, F_GETFL) & O_NONBLOCK, 0); /* put back */
	close(fd);
	close(c);
	close(l);
}

static void pty_part(void)
{
	int m, s; /* blocking */
	test_pty_pair(&m, &s);
	char c = 0;
	CHECK_EQ(canal_io_read(m, &c, 1, 0, NULL), -ETIMEDOUT);
	CHECK_EQ(write(s, "x", 1), 1);
	wait_readable(m);
	ssize_t r = canal_io_read(m, &c, 1, 0, NULL);
	fprintf(stderr, "canal_io_read(pty, timeout 0) with a byte there = "
		"%zd\n", r);
	CHECK_EQ(r, 1);
	CHECK_EQ(c, 'x');
	close(s);
	close(m);
}

static void main_task(void *arg)
{
	(void)arg;
	pty_part();
	accept_part();
}

int main(void)
{
	alarm(30);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	/* The same, every operation through the backend but the one try. */
	o.flags = CANAL_RUN_NO_SYNC_SHORTCUT;
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_revio_timeout0_ready: ok\n");
	return 0;
}
