/* test_revrt_cancel_resend.c - an operation whose timeout (or condvar)
 * comes while the kernel moves it between its states must still end.
 *
 * io_uring: a connect of a Unix socket in blocking mode to a listener
 * whose backlog is full is tried inline (EAGAIN), then after a poll that
 * says ready at once it is queued to be tried again, then handed to
 * io_uring's workers, where connect(2) waits for room. An ASYNC_CANCEL
 * that comes between finds nothing (-ENOENT); io_run_until sent only one
 * and then waited for the completion for ever. Short timeouts (0 to 19
 * us) put the cancel there: before its fix this hung within the first
 * few of 400 tries (SIGALRM). The result must be -ETIMEDOUT every time,
 * on both backends.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "full_backlog.h"

#include <canal/task.h>

#include <sys/socket.h>
#include <sys/un.h>

static struct full_backlog full;
static int failures;

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "test_revrt_cancel_resend: hung\n";
	ssize_t w = write(2, m, sizeof m - 1);
	(void)w;
	_exit(1);
}

static void main_task(void *arg)
{
	(void)arg;
	for (int i = 0; i < 400; i++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(s >= 0);
		int r = canal_io_connect(s, (struct sockaddr *)&full.addr,
					 sizeof full.addr, (i % 20) * 1000, NULL);
		if (r != -ETIMEDOUT) {
			fprintf(stderr, "try %d: %d (%s), want -ETIMEDOUT\n",
				i, r, strerror(-r));
			failures++;
		}
		close(s);
	}
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(30); /* a hang is a failure */
	full_backlog_open(&full, "revrt-resend");
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	full_backlog_close(&full);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revrt_cancel_resend");
}
