/* test_revrt_connect_sndtimeo.c - a connect of a Unix socket to a listener
 * whose backlog is full, on both backends, in a task and outside one:
 *  - non-blocking socket: connect(2)'s -EAGAIN at once;
 *  - blocking socket with SO_SNDTIMEO: connect(2) waits for room at most
 *    that long, then says EAGAIN; so must canal_io_connect, whatever its
 *    own timeout_ns when that is longer (task.h).
 *
 * Failed before its fix with: epoll backend, in a task, timeout 20 s:
 * -ETIMEDOUT after 20 s where io_uring said -EAGAIN after SO_SNDTIMEO
 * (its worker's connect(2) keeps it); no timeout: waited for ever
 * (SIGALRM). Outside a task, timeout 20 s: -ETIMEDOUT after 20 s.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "full_backlog.h"

#include <canal/task.h>

#include <sys/socket.h>
#include <stdbool.h>
#include <sys/time.h>
#include <sys/un.h>

static struct full_backlog full;
static int failures;
static const char *where;

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "test_revrt_connect_sndtimeo: hung\n";
	ssize_t w = write(2, m, sizeof m - 1);
	(void)w;
	_exit(1);
}

static void one(const char *what, int nonblock, bool sndtimeo,
		int64_t timeout_ns, int want)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
				     (nonblock ? SOCK_NONBLOCK : 0), 0);
	CHECK(s >= 0);
	if (sndtimeo) {
		struct timeval tv = {.tv_sec = 0, .tv_usec = 50000};
		CHECK_EQ(setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv),
			 0);
	}
	int r = canal_io_connect(s, (struct sockaddr *)&full.addr,
				 sizeof full.addr, timeout_ns, NULL);
	if (r != want) {
		fprintf(stderr, "%s: %s: %d (%s), want %d (%s)\n", where, what,
			r, strerror(-r), want, strerror(-want));
		failures++;
	}
	close(s);
}

static void checks(void)
{
	one("non-blocking, timeout 20 s", 1, false, 20000000000, -EAGAIN);
	one("non-blocking, no timeout", 1, false, -1, -EAGAIN);
	/* timeout 0: the one try, -ETIMEDOUT whatever the mode (task.h) */
	one("non-blocking, timeout 0", 1, false, 0, -ETIMEDOUT);
	one("blocking, timeout 0", 0, false, 0, -ETIMEDOUT);
	one("SO_SNDTIMEO 50 ms, timeout 20 s", 0, true, 20000000000, -EAGAIN);
	one("SO_SNDTIMEO 50 ms, no timeout", 0, true, -1, -EAGAIN);
}

static void main_task(void *arg)
{
	(void)arg;
	where = "in a task";
	checks();
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(50); /* a hang is a failure */
	full_backlog_open(&full, "revrt-sndtimeo");
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	where = "outside a task";
	checks();
	full_backlog_close(&full);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revrt_connect_sndtimeo");
}
