/* test_revrt_connect_mode.c - canal_io_connect must not switch a socket in
 * blocking mode to non-blocking where it need not: another thread using
 * the same socket (or a dup, a forked child: the mode is the open file
 * description's) would see its blocking call fail with EAGAIN in that
 * window, and an F_SETFL of its own made meanwhile would be undone.
 *
 * Deterministic, no timing: the test defines connect(2) (canal is linked
 * statically, so canal's calls come here) and reads the socket's file
 * status flags at the instant of each call, which is what any other
 * thread sees then. Checked where task.h says no window exists: in a task
 * on io_uring (IORING_OP_CONNECT needs no O_NONBLOCK), any timeout; and
 * outside a task with no timeout (connect(2) itself). The epoll backend,
 * and a thread's connect with a timeout, have the window (task.h).
 *
 * Failed before its fix with: io_uring, "timeout 0" saw O_NONBLOCK (the
 * one try was a connect(2) made non-blocking); outside a task, timeout
 * -1 saw O_NONBLOCK (the connect was started non-blocking first).
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "full_backlog.h"

#include <canal/task.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

static _Atomic int watched = -1;     /* the socket under test */
static _Atomic int calls, saw_nonblock;
static int failures;
static const char *where;

/* canal's connect(2): the socket's mode at the instant of the call. */
int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (fd == atomic_load(&watched)) {
		atomic_fetch_add(&calls, 1);
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0 && (fl & O_NONBLOCK))
			atomic_fetch_add(&saw_nonblock, 1);
	}
	return (int)syscall(SYS_connect, fd, addr, len);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "test_revrt_connect_mode: hung\n";
	ssize_t w = write(2, m, sizeof m - 1);
	(void)w;
	_exit(1);
}

static struct sockaddr_un room_addr;
static int room_listener;
static struct full_backlog full;
static struct sockaddr_in tcp_addr;
static int tcp_listener;

static void drain(int l)
{
	struct pollfd p = {.fd = l, .events = POLLIN};
	while (poll(&p, 1, 0) == 1) {
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c < 0)
			break;
		close(c);
	}
}

/* One connect of a fresh socket in blocking mode: the mode seen at each
 * connect(2) canal made must be blocking; the result is checked too. */
static void one(const char *what, int domain, const struct sockaddr *a,
		socklen_t alen, int64_t timeout_ns, int want, int want2)
{
	int s = socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	atomic_store(&calls, 0);
	atomic_store(&saw_nonblock, 0);
	atomic_store(&watched, s);
	int r = canal_io_connect(s, a, alen, timeout_ns, NULL);
	atomic_store(&watched, -1);
	if (atomic_load(&saw_nonblock)) {
		fprintf(stderr, "%s: %s: the socket was non-blocking during "
			"%d of %d connect(2) calls\n", where, what,
			atomic_load(&saw_nonblock), atomic_load(&calls));
		failures++;
	}
	int fl = fcntl(s, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK)) {
		fprintf(stderr, "%s: %s: left non-blocking\n", where, what);
		failures++;
	}
	if (r != want && r != want2) {
		fprintf(stderr, "%s: %s: %d (%s), want %d\n", where, what, r,
			strerror(-r), want);
		failures++;
	}
	close(s);
	drain(room_listener);
	drain(tcp_listener);
}

static void checks(bool all)
{
	const struct sockaddr *ra = (const struct sockaddr *)&room_addr;
	const struct sockaddr *fa = (const struct sockaddr *)&full.addr;
	const struct sockaddr *ta = (const struct sockaddr *)&tcp_addr;
	one("Unix, room, no timeout", AF_UNIX, ra, sizeof room_addr, -1, 0, 0);
	one("TCP, room, no timeout", AF_INET, ta, sizeof tcp_addr, -1, 0, 0);
	if (!all)
		return;
	one("Unix, room, timeout 0", AF_UNIX, ra, sizeof room_addr, 0, 0, 0);
	one("Unix, room, timeout 5 s", AF_UNIX, ra, sizeof room_addr,
	    5000000000, 0, 0);
	one("Unix, full backlog, timeout 0", AF_UNIX, fa, sizeof full.addr, 0,
	    -ETIMEDOUT, -ETIMEDOUT);
	one("Unix, full backlog, timeout 20 ms", AF_UNIX, fa,
	    sizeof full.addr, 20000000, -ETIMEDOUT, -ETIMEDOUT);
	/* Loopback TCP, timeout 0: connected at once or under way. */
	one("TCP, room, timeout 0", AF_INET, ta, sizeof tcp_addr, 0, 0,
	    -ETIMEDOUT);
}

static void main_task(void *arg)
{
	(void)arg;
	/* Which backend: a NOP through canal_io_submit is -EOPNOTSUPP on
	 * epoll, whose connects have the window (task.h). */
	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_nop(&sqe);
	int r = canal_io_submit(&sqe, -1, NULL);
	where = "in a task (io_uring)";
	if (r == -EOPNOTSUPP)
		return;
	CHECK_EQ(r, 0);
	checks(true);
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(60); /* a hang is a failure */
	room_listener = unix_listener(&room_addr, "revrt-room", 16);
	full_backlog_open(&full, "revrt-full");
	tcp_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(tcp_listener >= 0);
	tcp_addr.sin_family = AF_INET;
	tcp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(tcp_listener, (struct sockaddr *)&tcp_addr,
		      sizeof tcp_addr), 0);
	socklen_t len = sizeof tcp_addr;
	CHECK_EQ(getsockname(tcp_listener, (struct sockaddr *)&tcp_addr, &len),
		 0);
	CHECK_EQ(listen(tcp_listener, 64), 0);

	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	where = "outside a task";
	checks(false);

	full_backlog_close(&full);
	close(room_listener);
	close(tcp_listener);
	unlink(room_addr.sun_path);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revrt_connect_mode");
}
