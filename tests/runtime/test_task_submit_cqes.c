/* test_task_submit_cqes.c - canal_io_submit with SQEs whose completions are
 * not "exactly one CQE for this SQE alone".
 *
 * The operation lives on the task's stack until its completion; a CQE
 * that comes after canal_io_submit returned lands on whatever the stack
 * holds then. Two SQEs are submitted in turn from one call site (so their
 * operations sit at the same stack address):
 *  A. a zero-copy send (IORING_OP_SEND_ZC: a result CQE flagged
 *     IORING_CQE_F_MORE, then a notification CQE when the kernel let go of
 *     the buffer) must return the bytes sent, after the notification;
 *  B. a multishot poll (IORING_POLL_ADD_MULTI: a CQE per wake-up, all but
 *     the last flagged F_MORE) on a readable pipe a plain thread keeps
 *     writing to, cut by our timeout, must return its first result
 *     (POLLIN);
 * and after each, a read of an empty pipe with a short timeout must time
 * out: a late CQE of the previous SQE must not complete it.
 *  C. flags that tie an SQE to others or drop its CQE (IOSQE_IO_LINK,
 *     IOSQE_IO_HARDLINK, IOSQE_IO_DRAIN, IOSQE_CQE_SKIP_SUCCESS), or take a
 *     provided buffer (IOSQE_BUFFER_SELECT: the receive streams') are refused
 *     with -EINVAL (linked to whatever SQE comes next, another task's;
 *     drained behind the loop's own wake-up read, which stays in flight;
 *     without a CQE the task would wait forever, even past its timeout).
 * On the epoll backend every submission is -EOPNOTSUPP. */
#define _GNU_SOURCE
#include "fds.h"

#include <canal/task.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#define ROUNDS 40

static int tx, rx;		/* a TCP connection over loopback */
static int busy_pipe[2];	/* written to by the ticker */
static int empty_pipe[2];	/* never written to */
static _Atomic int ticking = 1;
static int zc_unsupported;
static int no_uring;

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static void *ticker(void *arg)
{
	(void)arg;
	while (atomic_load(&ticking)) {
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
		/* A wake-up of the pipe's pollers (EAGAIN once full: a run
		 * is far shorter than 64 KiB of ticks). */
		char c = 't';
		CHECK(write(busy_pipe[1], &c, 1) == 1 || errno == EAGAIN);
	}
	return NULL;
}

/* One call site for every submission: each operation at one address. */
static __attribute__((noinline)) int submit(const struct io_uring_sqe *sqe,
					    int64_t timeout_ns)
{
	return canal_io_submit(sqe, timeout_ns, NULL);
}

static void empty_read_times_out(void)
{
	static char c;
	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_read(&sqe, empty_pipe[0], &c, 1, (uint64_t)-1);
	CHECK_EQ(submit(&sqe, 2000000), -ETIMEDOUT);
}

static void main_task(void *arg)
{
	(void)arg;
	struct io_uring_sqe sqe;
	static char buf[4096], in[4096];
	memset(buf, 'z', sizeof(buf));
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_nop(&sqe);
	int r0 = submit(&sqe, -1);
	if (on_epoll() || r0 == -EOPNOTSUPP) {
		/* Forced, or the automatic choice found no io_uring. */
		CHECK_EQ(r0, -EOPNOTSUPP);
		no_uring = 1;
		return;
	}
	CHECK_EQ(r0, 0);
	for (int i = 0; i < ROUNDS; i++) {
		/* A. */
		memset(&sqe, 0, sizeof(sqe));
		io_uring_prep_send_zc(&sqe, tx, buf, sizeof(buf), 0, 0);
		int r = submit(&sqe, -1);
		if (r == -EOPNOTSUPP || r == -EINVAL) {
			zc_unsupported = 1; /* this kernel: no SEND_ZC */
		} else {
			CHECK_EQ(r, (int)sizeof(buf));
			CHECK_EQ(recv(rx, in, sizeof(in), MSG_WAITALL),
				 (ssize_t)sizeof(in));
		}
		empty_read_times_out();
		/* B. */
		memset(&sqe, 0, sizeof(sqe));
		io_uring_prep_poll_multishot(&sqe, busy_pipe[0], POLLIN);
		r = submit(&sqe, 3000000);
		CHECK(r > 0 && (r & POLLIN));
		empty_read_times_out();
	}
	/* C. */
	unsigned bad[] = {IOSQE_IO_LINK, IOSQE_IO_HARDLINK, IOSQE_IO_DRAIN,
			  IOSQE_CQE_SKIP_SUCCESS, IOSQE_BUFFER_SELECT};
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		memset(&sqe, 0, sizeof(sqe));
		io_uring_prep_nop(&sqe);
		sqe.flags = (uint8_t)bad[k];
		CHECK_EQ(submit(&sqe, 10000000), -EINVAL);
	}
	/* Still usable, and a harmless flag still accepted. */
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_nop(&sqe);
	sqe.flags = IOSQE_ASYNC;
	CHECK_EQ(submit(&sqe, -1), 0);
}

int main(void)
{
	struct sockaddr_in a;
	int ls = test_loopback_listener(1, &a);
	tx = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(tx >= 0);
	CHECK_EQ(connect(tx, (struct sockaddr *)&a, sizeof(a)), 0);
	rx = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	CHECK(rx >= 0);
	close(ls);
	CHECK_EQ(pipe2(busy_pipe, O_CLOEXEC | O_NONBLOCK), 0);
	CHECK_EQ(pipe2(empty_pipe, O_CLOEXEC), 0);
	/* Readable from the start: each multishot poll's first CQE comes at
	 * once (POLLIN), later ones at the ticker's writes. */
	CHECK_EQ(write(busy_pipe[1], "t", 1), 1);
	pthread_t th = spawn(ticker, NULL);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	atomic_store(&ticking, 0);
	join(th);
	close(tx);
	close(rx);
	close(busy_pipe[0]);
	close(busy_pipe[1]);
	close(empty_pipe[0]);
	close(empty_pipe[1]);
	if (no_uring)
		printf("epoll: canal_io_submit is -EOPNOTSUPP, nothing more to "
		       "check\n");
	else
		printf("io_uring: %d rounds of a zero-copy send%s and a "
		       "multishot poll, no late completion; linking flags "
		       "refused\n",
		       ROUNDS, zc_unsupported ? " (unsupported here)" : "");
	return 0;
}
