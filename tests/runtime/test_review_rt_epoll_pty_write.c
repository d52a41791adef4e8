/* test_review_rt_epoll_pty_write.c - on the epoll backend a file that
 * refuses RWF_NOWAIT (a pty) is written once poll(2) says POLLOUT
 * (canal__io_try, try_plain). A tty says POLLOUT from 256 bytes of room,
 * and a write(2) of more to a blocking tty waits until all has gone: a
 * task writing 64 KiB to a pty nobody reads would hold its loop's thread
 * for ever. The write asks for at most 256 bytes there: a short count,
 * the loop free. An alarm ends the test if the loop's thread blocks.
 * io_uring writes such files itself (io-wq): run on epoll only. */
#define _GNU_SOURCE
#include "fds.h"

#include <canal/task.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>

static void main_task(void *arg)
{
	(void)arg;
	int m, s; /* blocking */
	test_pty_pair(&m, &s);
	static char buf[65536];
	memset(buf, 'x', sizeof buf);
	size_t total = 0;
	/* Until the pty is full (nobody reads the other side): each call
	 * returns a count or times out, never blocks the loop. */
	for (int i = 0; i < 2000; i++) {
		ssize_t r = canal_io_write(m, buf, sizeof buf, 50000000, NULL);
		if (r == -ETIMEDOUT)
			break;
		CHECK(r > 0 && r <= (ssize_t)sizeof buf);
		total += (size_t)r;
	}
	CHECK(total > 0);
	fprintf(stderr, "wrote %zu bytes to the pty before it was full\n",
		total);
	close(s);
	close(m);
}

int main(void)
{
	const char *b = getenv("CANAL_BACKEND");
	if (!b || strcmp(b, "epoll") != 0) {
		printf("test_review_rt_epoll_pty_write: epoll only, ok\n");
		return 0;
	}
	alarm(60);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_review_rt_epoll_pty_write: ok\n");
	return 0;
}
