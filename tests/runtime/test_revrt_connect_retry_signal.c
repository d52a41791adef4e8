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
static _Atomic int in_connect, signaller_done;
static int signalled[ROUNDS];
static int failures;

static void signaller(void *arg)
{
	int round = (int)(intptr_t)arg;
	signalled[round] = signal_when_ready(&in_connect, cond);
	atomic_store(&signaller_done, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(s >= 0);
		atomic_store(&in_connect, 0);
		atomic_store(&signaller_done, 0);
		CHECK_EQ(canal_spawn(signaller, (void *)(intptr_t)round), 0);
		atomic_store(&in_connect, 1);
		int r = canal_io_connect(s, (struct sockaddr *)&full.addr,
					 sizeof full.addr, 10000000000, cond);
		atomic_store(&in_connect, 0);
		while (!atomic_load(&signaller_done))
			canal_yield();
		if (r != -ECANCELED || signalled[round] != 1) {
			fprintf(stderr,
				"round %d: connect %d (%s), signal woke %d; "
				"want -ECANCELED, 1\n",
				round, r, strerror(-r), signalled[round]);
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
	cond = canal_cond_create();
	CHECK(cond);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	canal_cond_destroy(cond);
	full_backlog_close(&full);
	CHECK_EQ(failures, 0);
	TEST_DONE("test_revrt_connect_retry_signal");
}
