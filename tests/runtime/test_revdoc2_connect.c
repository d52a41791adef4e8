/* test_revdoc2_connect.c - canal_io_connect against task.h, in a task (on
 * each backend) and outside one:
 *  - timeout_ns 0 makes its one try, a non-blocking connect: 0 where it
 *    completes at once (a Unix socket to a listener with room in its
 *    backlog, blocking or not); -ETIMEDOUT at once where it cannot (a
 *    listener's full backlog, blocking socket: nothing started), outside
 *    a task too, where it blocked until the backlog had room;
 *  - a timeout outside a task limits the connect (it limited a poll(2) of
 *    the unconnected socket, which is writable at once, and the blocking
 *    connect after it waited without limit);
 *  - a TCP connect still under way when the call says -ETIMEDOUT (its
 *    timeout, or 0) or -ECANCELED goes on in the kernel, as task.h says:
 *    a second call says -EALREADY, and waiting for writability then
 *    reading SO_ERROR gives its outcome (here: connected, once the
 *    listener made room).
 *
 * Failed before its fix with: in a task, "Unix, room, timeout 0" said
 * -ETIMEDOUT (nothing was tried; on loopback TCP the advice then found a
 * socket never connected); outside a task, "Unix, full backlog,
 * timeout 0" hung (SIGALRM).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/task.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

static struct sockaddr_un room_addr, full_addr;
static int room_listener, full_listener;
static int filler[256];
static int nfill;
static int failures;
static const char *volatile current = "start";
static const char *where;

static void on_alarm(int sig)
{
	(void)sig;
	const char *m = "test_revdoc2_connect: hung in: ";
	ssize_t w = write(2, m, strlen(m));
	w = write(2, current, strlen(current));
	w = write(2, "\n", 1);
	(void)w;
	_exit(1);
}

static void expect(const char *what, long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %s: %ld (%s), want %ld (%s)\n", where, what, got,
		strerror((int)-got), want, strerror((int)-want));
	failures++;
}

static int unix_listener(struct sockaddr_un *a, const char *tag, int backlog)
{
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path,
		 "/tmp/canal-revdoc2-%s-%d", tag, (int)getpid());
	unlink(a->sun_path);
	CHECK_EQ(bind(l, (struct sockaddr *)a, sizeof *a), 0);
	CHECK_EQ(listen(l, backlog), 0);
	return l;
}

/* Connections to full_listener until its backlog is full. */
static void fill_backlog(void)
{
	for (nfill = 0; nfill < 256; nfill++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			       0);
		CHECK(s >= 0);
		if (connect(s, (struct sockaddr *)&full_addr, sizeof full_addr)) {
			CHECK_EQ(errno, EAGAIN);
			close(s);
			return;
		}
		filler[nfill] = s;
	}
	CHECK(!"the backlog never filled");
}

/* Accept one connection of l within 5 s (-1: none came). */
static int accept_within(int l)
{
	struct pollfd p = {.fd = l, .events = POLLIN};
	if (poll(&p, 1, 5000) != 1)
		return -1;
	return accept4(l, NULL, NULL, SOCK_CLOEXEC);
}

/* task.h's advice for a connect under way: wait for writability, then
 * SO_ERROR. Returns its outcome (0 connected, or -error). */
static int connect_outcome(int s)
{
	struct pollfd p = {.fd = s, .events = POLLOUT};
	if (poll(&p, 1, 8000) != 1)
		return -ETIME; /* (not an outcome: it is still under way) */
	int err = 0;
	socklen_t len = sizeof err;
	CHECK_EQ(getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	if (err)
		return -err;
	struct sockaddr_storage peer;
	len = sizeof peer;
	return getpeername(s, (struct sockaddr *)&peer, &len) == 0 ? 0 : -errno;
}

static int tcp_listener(struct sockaddr_in *a, int backlog)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(l, (struct sockaddr *)a, sizeof *a), 0);
	socklen_t len = sizeof *a;
	CHECK_EQ(getsockname(l, (struct sockaddr *)a, &len), 0);
	CHECK_EQ(listen(l, backlog), 0);
	return l;
}

static struct canal_cond *cancel_cond;

static void canceller(void *arg)
{
	(void)arg;
	canal_sleep_ns(100000000);
	canal_cond_broadcast(cancel_cond);
}

static void checks(bool in_task)
{
	int s;
	/* Unix, a listener with room: the one try connects. */
	for (int nb = 0; nb < 2; nb++) {
		current = nb ? "Unix, room, non-blocking, timeout 0"
			     : "Unix, room, timeout 0";
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
					    (nb ? SOCK_NONBLOCK : 0), 0);
		CHECK(s >= 0);
		expect(current,
		       canal_io_connect(s, (struct sockaddr *)&room_addr,
					sizeof room_addr, 0, NULL),
		       0);
		close(s);
		struct pollfd p = {.fd = room_listener, .events = POLLIN};
		if (poll(&p, 1, 0) == 1) {
			int c = accept4(room_listener, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				close(c);
		}
	}

	/* Unix, a full backlog, blocking socket: nothing can start now. */
	current = "Unix, full backlog, timeout 0";
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	expect(current,
	       canal_io_connect(s, (struct sockaddr *)&full_addr,
				sizeof full_addr, 0, NULL),
	       -ETIMEDOUT);
	current = "Unix, full backlog, timeout 50 ms";
	expect(current,
	       canal_io_connect(s, (struct sockaddr *)&full_addr,
				sizeof full_addr, 50000000, NULL),
	       -ETIMEDOUT);
	close(s);

	/* Loopback TCP with room, timeout 0: connected at once, or under
	 * way (-ETIMEDOUT), and then connected by the advice. */
	struct sockaddr_in ta;
	int tl = tcp_listener(&ta, 16);
	current = "TCP, room, timeout 0";
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	int r = canal_io_connect(s, (struct sockaddr *)&ta, sizeof ta, 0, NULL);
	if (r == -ETIMEDOUT)
		r = connect_outcome(s);
	expect(current, r, 0);
	int c = accept_within(tl);
	expect("TCP, room, timeout 0: the listener's connection", c >= 0, 1);
	if (c >= 0)
		close(c);
	close(s);
	close(tl);

	/* Loopback TCP, accept queue full: the SYN is dropped, the connect
	 * stays under way (SYN_SENT, retried by the kernel after 1 s). Cut
	 * by the timeout, or by the condvar, it goes on: a second call says
	 * -EALREADY; once the listener has room, the advice finds it
	 * connected. */
	for (int by_cond = 0; by_cond < 1 + in_task; by_cond++) {
		tl = tcp_listener(&ta, 0);
		int first = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK_EQ(connect(first, (struct sockaddr *)&ta, sizeof ta), 0);
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(s >= 0);
		if (by_cond) {
			current = "TCP, queue full, cancelled";
			CHECK_EQ(canal_spawn(canceller, NULL), 0);
			r = canal_io_connect(s, (struct sockaddr *)&ta,
					     sizeof ta, -1, cancel_cond);
			expect(current, r, -ECANCELED);
		} else {
			current = "TCP, queue full, timeout 100 ms";
			r = canal_io_connect(s, (struct sockaddr *)&ta,
					     sizeof ta, 100000000, NULL);
			expect(current, r, -ETIMEDOUT);
		}
		expect("TCP, under way, again with timeout 0",
		       canal_io_connect(s, (struct sockaddr *)&ta, sizeof ta,
					0, NULL),
		       -EALREADY);
		c = accept_within(tl); /* room for s's SYN, when it comes again */
		CHECK(c >= 0);
		close(c);
		current = "TCP, under way: its outcome";
		expect(current, connect_outcome(s), 0);
		c = accept_within(tl);
		expect("TCP, under way: the listener's connection", c >= 0, 1);
		if (c >= 0)
			close(c);
		close(s);
		close(first);
		close(tl);
	}
}

static void main_task(void *arg)
{
	(void)arg;
	where = "in a task";
	checks(true);
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(30); /* a hang is a failure */
	room_listener = unix_listener(&room_addr, "room", 16);
	full_listener = unix_listener(&full_addr, "full", 0);
	fill_backlog();
	cancel_cond = canal_cond_create();
	CHECK(cancel_cond);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	where = "outside a task";
	checks(false);
	canal_cond_destroy(cancel_cond);
	for (int i = 0; i < nfill; i++)
		close(filler[i]);
	close(room_listener);
	close(full_listener);
	unlink(room_addr.sun_path);
	unlink(full_addr.sun_path);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revdoc2_connect");
}
