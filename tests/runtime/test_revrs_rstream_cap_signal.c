/* test_revrs_rstream_cap_signal.c - hostile review: canal_io_rstream_recv
 * must end -ECANCELED when its condvar is signalled while it waits for
 * input (task.h), also at the moment its stream's receive ended without
 * bytes (its last CQE: -ECANCELED of the cap's cancel, or -ENOBUFS) and
 * the call has not armed it again yet.
 *
 * Such an end wakes the waiting receive (wait_input) with nothing; the
 * call arms the receive again and waits anew, registered on the condvar
 * anew. A signal at the moment that wake had been won (the task queued,
 * not run) skipped the first registration (canal_cond_signal returned 0)
 * and the second wait went on to its timeout or for ever: a lost cancel,
 * as test_revpoll_rdhup_signal's. Made here, white box: 64 KiB wait in the
 * socket when the stream is opened, its receive keeps 16 buffers of
 * 4 KiB (CANAL__RS_HOLD_MAX: the cap's cancel is sent), the task takes
 * them all before the cancel's CQE came, then waits for more; a task of
 * the same loop signals once that CQE made it ready (ready_signal.h). The
 * receive's 10 s timeout is the hang guard. On epoll a stream makes a
 * receive per call (no cap): nothing to test.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "fds.h"
#include "ready_signal.h"
#include "runtime/io.h"

#include <canal/task.h>

#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#define ROUNDS 3
#define HELD (CANAL__RS_HOLD_MAX * 4096u)

static struct canal_cond *cond;
static int failures;

static void main_task(void *arg)
{
	(void)arg;
	static char big[HELD];
	for (int round = 0; round < ROUNDS; round++) {
		struct sockaddr_in addr;
		int l = test_loopback_listener(1, &addr);
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(c >= 0);
		CHECK_EQ(connect(c, (struct sockaddr *)&addr, sizeof(addr)), 0);
		int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		CHECK(a >= 0);
		close(l);
		/* The stream's receive finds exactly 16 buffers' worth. */
		memset(big, 'x', sizeof(big));
		CHECK_EQ(send(c, big, sizeof(big), 0), (ssize_t)sizeof(big));
		int queued = 0;
		for (int i = 0; i < 100000 && queued < (int)HELD; i++) {
			CHECK_EQ(ioctl(a, FIONREAD, &queued), 0);
			sched_yield();
		}
		CHECK_EQ(queued, (int)HELD);
		struct canal_io_rstream *s;
		CHECK_EQ(canal_io_rstream_open(a, &s), 0);
		struct ready_round rr;
		ready_round_start(&rr, cond, true);
		/* The loop polls between yields: its receive keeps the bytes
		 * and, at 16 buffers, is sent its cancel (capped), whose CQE
		 * comes at a later poll. */
		for (int i = 0; i < 100000 && !s->capped; i++)
			canal_yield();
		CHECK(s->capped);
		CHECK(s->armed);
		CHECK_EQ(canal_io_rstream_recv(s, big, sizeof(big), 0, NULL),
			 (ssize_t)sizeof(big));
		CHECK(s->armed); /* (the cancel's CQE still to come) */
		char buf[16];
		ready_round_call(&rr);
		ssize_t r = canal_io_rstream_recv(s, buf, sizeof(buf),
						  10000000000, cond);
		ready_round_end(&rr);
		if (r != -ECANCELED || rr.signalled != 1) {
			fprintf(stderr,
				"round %d: recv %zd, signal woke %d; want "
				"-ECANCELED, 1\n",
				round, r, rr.signalled);
			failures++;
		}
		CHECK_EQ(canal_io_rstream_close(s), 0);
		close(a);
		close(c);
		if (failures)
			break; /* (each failed round waits out its 10 s) */
	}
}

int main(void)
{
	const char *b = getenv("CANAL_BACKEND");
	if (b && strcmp(b, "epoll") == 0) {
		printf("test_revrs_rstream_cap_signal: epoll, no cap\n");
		return 0;
	}
	return ready_signal_main(&cond, main_task, &failures,
				 "test_revrs_rstream_cap_signal");
}
