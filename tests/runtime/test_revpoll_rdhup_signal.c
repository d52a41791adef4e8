/* test_revpoll_rdhup_signal.c - a canal_io_poll for POLLOUT on a socket
 * whose peer shut its side down (io_uring reports POLLRDHUP to every
 * poll: canal_io_poll looks again after pauses) must end -ECANCELED when
 * its condvar is signalled at any moment of its wait, also between two
 * of its looks.
 *
 * Each look and each pause registered on the condvar for itself: a
 * pause's timer (or a look's completion) that had won the task's wake
 * (the task queued, not yet run) left the waiter registered with its
 * wake taken, and a signal then skipped it (canal_cond_signal returned
 * 0): lost, the poll went on until its timeout. Here a task of the same
 * loop signals exactly then (white box: it yields until the polling task
 * is ready to run). On epoll the poll waits for POLLOUT alone (no
 * pauses), and the signal meets its wait. The poll's 10 s timeout is the
 * hang guard.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "ready_signal.h"

#include <canal/task.h>

#include <poll.h>
#include <sys/socket.h>

#define ROUNDS 5

static int sv[2];
static struct canal_cond *cond;
static int failures;

static void main_task(void *arg)
{
	(void)arg;
	static char chunk[4096];
	for (int round = 0; round < ROUNDS; round++) {
		CHECK_EQ(socketpair(AF_UNIX,
				    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0, sv),
			 0);
		while (send(sv[0], chunk, sizeof chunk, MSG_DONTWAIT) > 0)
			;
		CHECK_EQ(shutdown(sv[1], SHUT_WR), 0); /* sv[0]: RDHUP */
		struct ready_round rr;
		ready_round_start(&rr, cond, true);
		ready_round_call(&rr);
		int r = canal_io_poll(sv[0], POLLOUT, 10000000000, cond);
		ready_round_end(&rr);
		if (r != -ECANCELED || rr.signalled != 1) {
			fprintf(stderr,
				"round %d: poll %d (%s), signal woke %d; "
				"want -ECANCELED, 1\n",
				round, r, r < 0 ? strerror(-r) : "events",
				rr.signalled);
			failures++;
		}
		close(sv[0]);
		close(sv[1]);
		if (failures)
			break; /* (each failed round waits out its 10 s) */
	}
}

int main(void)
{
	return ready_signal_main(&cond, main_task, &failures, "test_revpoll_rdhup_signal");
}
