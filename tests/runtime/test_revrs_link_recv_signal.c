/* test_revrs_link_recv_signal.c - hostile review: canal_io_submit_link_recv
 * must end -ECANCELED when its condvar is signalled at any moment before
 * input came, also at the moment its chain's last completion has made the
 * task ready and the wait for input has not begun (task.h: "-ECANCELED
 * when ... the condvar came first").
 *
 * Where the stream's receive is not armed (a Unix-domain socket: a
 * receive per call; or a stream starved of the loop's buffers) the call
 * waits twice: for the chain (canal__io_link_run, registered on the
 * condvar), then for the input (a receive, registered anew). The chain's
 * completion won the task's wake; a signal then found the first waiter
 * with its wake taken and skipped it (canal_cond_signal returned 0), and
 * the receive that followed waited on, until its timeout or for ever: a
 * lost cancel, as test_revpoll_rdhup_signal's. Here a task of the same
 * loop signals exactly then (ready_signal.h, white box). The call's 10 s
 * timeout is the hang guard. On epoll the call is -EOPNOTSUPP.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "ready_signal.h"

#include <canal/task.h>

#include <liburing.h>
#include <string.h>
#include <sys/socket.h>

#define ROUNDS 3

static struct canal_cond *cond;
static int failures;

static void main_task(void *arg)
{
	(void)arg;
	const char *b = getenv("CANAL_BACKEND");
	bool epoll = b && strcmp(b, "epoll") == 0;
	for (int round = 0; round < ROUNDS; round++) {
		int sv[2];
		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
		struct canal_io_rstream *s;
		CHECK_EQ(canal_io_rstream_open(sv[0], &s), 0);
		/* (On epoll the call returns at once: no signaller, which
		 * would wait for a call that never parks.) */
		struct ready_round rr;
		ready_round_start(&rr, cond, !epoll);
		struct io_uring_sqe q;
		memset(&q, 0, sizeof(q));
		io_uring_prep_nop(&q);
		int32_t res[1] = {-99};
		char buf[16];
		ssize_t got = -99;
		ready_round_call(&rr);
		int r = canal_io_submit_link_recv(&q, 1, res, s, buf,
						  sizeof(buf), &got,
						  10000000000, cond);
		ready_round_end(&rr);
		if (epoll) {
			CHECK_EQ(r, -EOPNOTSUPP);
		} else if (r != -ECANCELED || got != -EAGAIN ||
			   res[0] != 0 || rr.signalled != 1) {
			fprintf(stderr,
				"round %d: link_recv %d, got %zd, res %d, "
				"signal woke %d; want -ECANCELED, -EAGAIN, 0, "
				"1\n",
				round, r, got, res[0], rr.signalled);
			failures++;
		}
		CHECK_EQ(canal_io_rstream_close(s), 0);
		close(sv[0]);
		close(sv[1]);
		if (failures)
			break; /* (each failed round waits out its 10 s) */
	}
}

int main(void)
{
	return ready_signal_main(&cond, main_task, &failures, "test_revrs_link_recv_signal");
}
