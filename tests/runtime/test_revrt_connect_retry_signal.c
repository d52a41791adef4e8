/* test_revrt_connect_retry_signal.c - a connect that the epoll backend
 * starts again after pauses (a Unix socket in blocking mode, the
 * listener's backlog full) must end -ECANCELED when its condvar is
 * signalled at any moment of its wait, also between two of its pauses.
 *
 * The connect registered on the condvar for each pause only: a pause's
 * timer that had fired (the task queued, not yet run) left the waiter
 * registered with its wake already won, and a signal then skipped it
 * (canal_cond_signal returned 0): lost, the connect went on until its
 * timeout. Here a task of the same loop signals exactly then (white box:
 * it yields until the connecting task is ready to run). On io_uring the
 * connect waits in the kernel, and the signal meets its wait. The
 * connect's 10 s timeout is the hang guard.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "full_backlog.h"
#include "ready_signal.h"

#include <canal/task.h>

#include <sys/socket.h>
#include <sys/un.h>

#define ROUNDS 5

static struct full_backlog full;
static struct canal_cond *cond;
static int failures;

static void main_task(void *arg)
{
	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(s >= 0);
		struct ready_round rr;
		ready_round_start(&rr, cond, true);
		ready_round_call(&rr);
		int r = canal_io_connect(s, (struct sockaddr *)&full.addr,
					 sizeof full.addr, 10000000000, cond);
		ready_round_end(&rr);
		if (r != -ECANCELED || rr.signalled != 1) {
			fprintf(stderr,
				"round %d: connect %d (%s), signal woke %d; "
				"want -ECANCELED, 1\n",
				round, r, strerror(-r), rr.signalled);
			failures++;
		}
		close(s);
		if (failures)
			break; /* (each failed round waits out its 10 s) */
	}
}

int main(void)
{
	full_backlog_open(&full, "revrt-retry-signal");
	ready_signal_run(&cond, main_task);
	full_backlog_close(&full);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revrt_connect_retry_signal");
}
