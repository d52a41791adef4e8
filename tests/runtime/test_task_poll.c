/* test_task_poll.c - canal_io_poll (CPC's cpc_io_wait), on both backends
 * (the epoll twin runs under CANAL_BACKEND=epoll) and with and without
 * the synchronous-completion shortcut: its argument errors; an fd ready
 * at once; waits for input, for room and for both, during which the only
 * other task of the loop runs (a poll that blocked the loop's one thread
 * would never see the byte that task sends: the alarm ends the test);
 * the timeout, 0 included; the cancelling condvar; the end of input; a
 * regular file; the epoll slot taken; a close by another task on epoll;
 * and the call outside a task. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static int sv[2]; /* a stream socket pair, both ends non-blocking */
static _Atomic int step;
static struct canal_cond *cv;

static void make_pair(void)
{
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0, sv),
		 0);
}

/* Fill sv[0]'s send buffer (and sv[1]'s receive buffer): bytes sent. */
static size_t fill(void)
{
	static char chunk[4096];
	size_t n = 0;
	for (;;) {
		ssize_t r = send(sv[0], chunk, sizeof chunk, MSG_DONTWAIT);
		if (r < 0) {
			CHECK(errno == EAGAIN);
			return n;
		}
		n += (size_t)r;
	}
}

/* Read everything sv[1] holds. */
static void drain(void)
{
	char buf[4096];
	while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
}

/* Runs while the poller waits (one loop: only if the poll parked). */
static void send_byte_later(void *arg)
{
	(void)arg;
	canal_sleep_ns(2000000);
	atomic_store(&step, 1);
	CHECK_EQ(send(sv[0], "x", 1, 0), 1);
}

static void drain_later(void *arg)
{
	(void)arg;
	canal_sleep_ns(2000000);
	atomic_store(&step, 1);
	drain();
}

static void signal_later(void *arg)
{
	(void)arg;
	canal_sleep_ns(2000000);
	atomic_store(&step, 1);
	CHECK_EQ(canal_cond_signal(cv), 1);
}

static void close_later(void *arg)
{
	(void)arg;
	canal_sleep_ns(2000000);
	atomic_store(&step, 1);
	CHECK_EQ(canal_io_close(sv[1]), 0);
}

static void second_poller(void *arg)
{
	int *res = arg;
	*res = canal_io_poll(sv[1], POLLIN, 5000000000, NULL);
}

static void poll_main(void *arg)
{
	(void)arg;
	/* Arguments. */
	CHECK_EQ(canal_io_poll(-1, POLLIN, -1, NULL), -EBADF);
	make_pair();
	CHECK_EQ(canal_io_poll(sv[1], 0, -1, NULL), -EINVAL);
	CHECK_EQ(canal_io_poll(sv[1], POLLERR | POLLHUP, -1, NULL), -EINVAL);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN | POLLNVAL, -1, NULL), -EINVAL);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN | POLLWRBAND, -1, NULL), -EINVAL);

	/* Ready at once: an empty socket has room, no input. */
	CHECK_EQ(canal_io_poll(sv[1], POLLOUT, -1, NULL), POLLOUT);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN | POLLOUT, 0, NULL), POLLOUT);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN | POLLERR, 0, NULL), -ETIMEDOUT);
	uint64_t t0 = canal_now_ns();
	int r;
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 2000000, NULL), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 2000000);

	/* Input: the poller parks, the other task sends. */
	atomic_store(&step, 0);
	CHECK_EQ(canal_spawn(send_byte_later, NULL), 0);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, -1, NULL), POLLIN);
	CHECK_EQ(atomic_load(&step), 1);
	/* Level: still readable until read. */
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 0, NULL), POLLIN);
	drain();

	/* Room: sv[0] full, the other task drains sv[1]. */
	fill();
	CHECK_EQ(canal_io_poll(sv[0], POLLOUT, 0, NULL), -ETIMEDOUT);
	CHECK_EQ(canal_io_poll(sv[0], POLLOUT, 1000000, NULL), -ETIMEDOUT);
	atomic_store(&step, 0);
	CHECK_EQ(canal_spawn(drain_later, NULL), 0);
	CHECK_EQ(canal_io_poll(sv[0], POLLOUT, -1, NULL), POLLOUT);
	CHECK_EQ(atomic_load(&step), 1);

	/* Room, with the peer's side shut down (io_uring reports
	 * POLLRDHUP to every poll: not an answer to POLLOUT, nor a reason
	 * to spin or to return 0). */
	drain();
	fill();
	CHECK_EQ(shutdown(sv[1], SHUT_WR), 0);
	t0 = canal_now_ns();
	CHECK_EQ(canal_io_poll(sv[0], POLLOUT, 20000000, NULL), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 20000000);
	atomic_store(&step, 0);
	CHECK_EQ(canal_spawn(signal_later, NULL), 0);
	CHECK_EQ(canal_io_poll(sv[0], POLLOUT, 5000000000, cv), -ECANCELED);
	CHECK_EQ(atomic_load(&step), 1);
	atomic_store(&step, 0);
	CHECK_EQ(canal_spawn(drain_later, NULL), 0);
	CHECK_EQ(canal_io_poll(sv[0], POLLOUT, -1, NULL), POLLOUT);
	CHECK_EQ(atomic_load(&step), 1);
	r = canal_io_poll(sv[0], POLLOUT | POLLRDHUP, 0, NULL);
	CHECK_EQ(r, POLLOUT | POLLRDHUP);
	close(sv[0]);
	close(sv[1]);
	make_pair();

	/* Both directions on one fd: sv[0] full, nothing to read there;
	 * the byte sent from sv[1] makes it readable (epoll: the poll holds
	 * both of the fd's slots). */
	drain();
	fill();
	atomic_store(&step, 0);
	int tmp = sv[0];
	sv[0] = sv[1];
	sv[1] = tmp; /* send_byte_later sends from sv[0]: now the far end */
	CHECK_EQ(canal_spawn(send_byte_later, NULL), 0);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN | POLLOUT, 5000000000, NULL),
		 POLLIN);
	CHECK_EQ(atomic_load(&step), 1);
	close(sv[0]);
	close(sv[1]);

	/* The cancelling condvar. */
	make_pair();
	atomic_store(&step, 0);
	CHECK_EQ(canal_spawn(signal_later, NULL), 0);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 5000000000, cv), -ECANCELED);
	CHECK_EQ(atomic_load(&step), 1);
	/* A signal with nobody waiting cancels nothing later. */
	CHECK_EQ(canal_cond_signal(cv), 0);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 1000000, cv), -ETIMEDOUT);

	/* The end of input: POLLIN, and POLLRDHUP when asked. */
	CHECK_EQ(shutdown(sv[0], SHUT_WR), 0);
	r = canal_io_poll(sv[1], POLLIN | POLLRDHUP, -1, NULL);
	CHECK(r > 0 && (r & POLLIN) && (r & POLLRDHUP));
	close(sv[0]);
	r = canal_io_poll(sv[1], POLLIN, -1, NULL);
	CHECK(r > 0 && (r & POLLIN) && (r & POLLHUP));
	CHECK_EQ(r & ~(POLLIN | POLLHUP | POLLERR), 0);
	close(sv[1]);

	/* A closed descriptor. */
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 1000000, NULL), -EBADF);

	/* A regular file is always ready (epoll cannot watch it). */
	char path[] = "test_task_poll.XXXXXX";
	int f = mkstemp(path);
	CHECK(f >= 0);
	unlink(path);
	CHECK_EQ(canal_io_poll(f, POLLIN | POLLOUT, 1000000, NULL),
		 POLLIN | POLLOUT);
	close(f);

	/* Two pollers of one fd's input: on epoll the loop holds one
	 * reader per fd (-EBUSY, task.h); io_uring takes both. */
	make_pair();
	int second = 1;
	CHECK_EQ(canal_spawn(second_poller, &second), 0);
	canal_sleep_ns(1000000); /* one loop: it waits now */
	if (on_epoll()) {
		CHECK_EQ(canal_io_poll(sv[1], POLLIN, 1000000, NULL), -EBUSY);
		CHECK_EQ(send(sv[0], "y", 1, 0), 1);
	} else {
		CHECK_EQ(send(sv[0], "y", 1, 0), 1);
		CHECK_EQ(canal_io_poll(sv[1], POLLIN, 5000000000, NULL), POLLIN);
	}
	canal_sleep_ns(1000000);
	CHECK_EQ(second, POLLIN);
	drain();

	/* Closed by another task of the loop while polled: on epoll the
	 * wait ends -EBADF (task.h: canal_io_close); on io_uring the
	 * kernel holds the file and the poll waits on (its timeout). */
	atomic_store(&step, 0);
	CHECK_EQ(canal_spawn(close_later, NULL), 0);
	r = canal_io_poll(sv[1], POLLIN, 200000000, NULL);
	CHECK_EQ(atomic_load(&step), 1);
#ifdef UNDER_TSAN
	/* (Under TSan canal_io_close is close(2) itself, io.c: the
	 * loop's table never hears of it, and the fd leaves the set.) */
	CHECK_EQ(r, -ETIMEDOUT);
#else
	CHECK_EQ(r, on_epoll() ? -EBADF : -ETIMEDOUT);
#endif
	close(sv[0]);
}

int main(void)
{
	alarm(60);
	cv = canal_cond_create();
	CHECK(cv != NULL);
	const unsigned flags[] = {0, CANAL_RUN_NO_SYNC_SHORTCUT};
	for (unsigned i = 0; i < 2; i++) {
		struct canal_run_options o = {.loops = 1, .flags = flags[i]};
		CHECK_EQ(canal_run(poll_main, NULL, &o), 0);
	}
	canal_cond_destroy(cv);

	/* Outside a task: poll(2) itself. */
	CHECK_EQ(canal_io_poll(-1, POLLIN, -1, NULL), -EBADF);
	make_pair();
	CHECK_EQ(canal_io_poll(sv[1], 0, 0, NULL), -EINVAL);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 0, NULL), -ETIMEDOUT);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 1000000, NULL), -ETIMEDOUT);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN | POLLOUT, -1, NULL), POLLOUT);
	CHECK_EQ(send(sv[0], "z", 1, 0), 1);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, -1, NULL), POLLIN);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ(canal_io_poll(sv[1], POLLIN, 0, NULL), -EBADF);
	printf("test_task_poll: ok\n");
	return 0;
}
