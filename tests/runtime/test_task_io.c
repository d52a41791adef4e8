/* test_task_io.c - CPC's primitives: condition variables (wait, signal,
 * broadcast, timeout, errors), I/O that suspends the task (pipes, socket
 * pairs, TCP accept/connect, vectors, close, timeouts, cancellation by
 * condvar) with and without the synchronous-completion shortcut, the
 * generic primitive, 10 000 races between a completion and its
 * cancellation (exactly one outcome each), detach and attach under load. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

/* ---------------- condition variables ---------------- */

static struct canal_cond *cv;
static _Atomic int cv_woken, cv_turn;

static void cv_waiter(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_cond_wait(cv, -1), 0);
	atomic_fetch_add(&cv_woken, 1);
}

static void cv_pong(void *arg)
{
	int n = (int)(intptr_t)arg;
	for (int i = 0; i < n; i++) {
		while (atomic_load(&cv_turn) != 1)
			CHECK_EQ(canal_cond_wait(cv, -1), 0);
		atomic_store(&cv_turn, 0);
		canal_cond_signal(cv);
	}
}

static void cv_main(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_cond_wait(NULL, -1), -EINVAL);
	CHECK_EQ(canal_cond_signal(NULL), -EINVAL);
	CHECK_EQ(canal_cond_broadcast(NULL), -EINVAL);
	CHECK_EQ(canal_cond_signal(cv), 0); /* nobody waits: no memory */
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_cond_wait(cv, 2000000), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 2000000);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(canal_spawn(cv_waiter, NULL), 0);
	canal_sleep_ns(2000000); /* one loop: they all wait now */
	CHECK_EQ(canal_cond_signal(cv), 1);
	canal_sleep_ns(1000000);
	CHECK_EQ(atomic_load(&cv_woken), 1);
	CHECK_EQ(canal_cond_broadcast(cv), 9);
	canal_sleep_ns(1000000);
	CHECK_EQ(atomic_load(&cv_woken), 10);
	/* Ping-pong through one condvar and a turn flag. */
	CHECK_EQ(canal_spawn(cv_pong, (void *)(intptr_t)1000), 0);
	for (int i = 0; i < 1000; i++) {
		atomic_store(&cv_turn, 1);
		canal_cond_signal(cv);
		while (atomic_load(&cv_turn) != 0)
			CHECK_EQ(canal_cond_wait(cv, -1), 0);
	}
	canal_cond_signal(cv);
}

static void test_cond(void)
{
	cv = canal_cond_create();
	CHECK(cv);
	CHECK_EQ(canal_cond_wait(cv, 0), -EPERM); /* not a task */
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(cv_main, NULL, &o), 0);
	canal_cond_destroy(cv);
	canal_cond_destroy(NULL);
}

/* ---------------- I/O ---------------- */

static int pfd[2];

static void pipe_writer(void *arg)
{
	(void)arg;
	canal_sleep_ns(1000000); /* the reader waits first */
	CHECK_EQ(canal_io_write(pfd[1], "hello", 5, -1, NULL), 5);
	struct iovec v[2] = {{"ab", 2}, {"cde", 3}};
	CHECK_EQ(canal_io_writev(pfd[1], v, 2, -1, NULL), 5);
}

static int tcp_listener(uint16_t *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(s, 16), 0);
	socklen_t len = sizeof(a);
	CHECK_EQ(getsockname(s, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return s;
}

static uint16_t tcp_port;

static void tcp_client(void *arg)
{
	(void)arg;
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(c >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(tcp_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(canal_io_connect(c, (struct sockaddr *)&a, sizeof(a), -1,
				  NULL),
		 0);
	CHECK_EQ(canal_io_send(c, "ping", 4, 0, -1, NULL), 4);
	char buf[8];
	CHECK_EQ(canal_io_recv(c, buf, sizeof(buf), 0, -1, NULL), 4);
	CHECK(memcmp(buf, "pong", 4) == 0);
	CHECK_EQ(canal_io_close(c), 0);
}

static void io_main(void *arg)
{
	(void)arg;
	char buf[16];
	CHECK_EQ(pipe2(pfd, O_CLOEXEC), 0);
	/* Timeout on an empty pipe, then cancellation by a condvar. */
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_io_read(pfd[0], buf, 1, 2000000, NULL), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 2000000);
	CHECK_EQ(canal_io_read(pfd[0], buf, 1, 0, NULL), -ETIMEDOUT);
	/* Data moves after the reader parked. */
	CHECK_EQ(canal_spawn(pipe_writer, NULL), 0);
	CHECK_EQ(canal_io_read(pfd[0], buf, 5, -1, NULL), 5);
	CHECK(memcmp(buf, "hello", 5) == 0);
	char a[2], b[3];
	struct iovec v[2] = {{a, 2}, {b, 3}};
	CHECK_EQ(canal_io_readv(pfd[0], v, 2, -1, NULL), 5);
	CHECK(memcmp(a, "ab", 2) == 0 && memcmp(b, "cde", 3) == 0);
	CHECK_EQ(canal_io_close(pfd[0]), 0);
	CHECK_EQ(canal_io_close(pfd[1]), 0);
	CHECK_EQ(canal_io_close(pfd[1]), -EBADF);
	CHECK_EQ(canal_io_read(-1, buf, 1, -1, NULL), -EBADF);
	/* Socket pair: recv/send. */
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(canal_io_send(sv[0], "xyz", 3, 0, -1, NULL), 3);
	CHECK_EQ(canal_io_recv(sv[1], buf, sizeof(buf), 0, -1, NULL), 3);
	close(sv[0]);
	CHECK_EQ(canal_io_recv(sv[1], buf, sizeof(buf), 0, -1, NULL), 0);
	close(sv[1]);
	/* TCP: accept and connect between two tasks. */
	int ls = tcp_listener(&tcp_port);
	CHECK_EQ(canal_spawn(tcp_client, NULL), 0);
	int s = canal_io_accept(ls, NULL, NULL, SOCK_CLOEXEC, -1, NULL);
	CHECK(s >= 0);
	CHECK_EQ(canal_io_recv(s, buf, sizeof(buf), 0, -1, NULL), 4);
	CHECK(memcmp(buf, "ping", 4) == 0);
	CHECK_EQ(canal_io_send(s, "pong", 4, 0, -1, NULL), 4);
	CHECK_EQ(canal_io_accept(ls, NULL, NULL, 0, 1000000, NULL),
		 -ETIMEDOUT);
	close(s);
	close(ls);
	/* The generic primitive. */
	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_nop(&sqe);
	CHECK_EQ(canal_io_submit(NULL, -1, NULL), -EINVAL);
	if (on_epoll()) {
		CHECK_EQ(canal_io_submit(&sqe, -1, NULL), -EOPNOTSUPP);
	} else {
		CHECK_EQ(canal_io_submit(&sqe, -1, NULL), 0);
		struct __kernel_timespec ts = {.tv_sec = 0,
					       .tv_nsec = 1000000};
		io_uring_prep_timeout(&sqe, &ts, 0, 0);
		CHECK_EQ(canal_io_submit(&sqe, -1, NULL), -ETIME);
		/* A long timeout operation cut by ours. */
		ts.tv_sec = 100;
		io_uring_prep_timeout(&sqe, &ts, 0, 0);
		CHECK_EQ(canal_io_submit(&sqe, 1000000, NULL), -ETIMEDOUT);
	}
}

static void test_io(unsigned flags)
{
	struct canal_run_options o = {.loops = 2, .flags = flags};
	CHECK_EQ(canal_run(io_main, NULL, &o), 0);
	/* Outside a task: blocking calls. */
	char c;
	CHECK_EQ(pipe2(pfd, O_CLOEXEC), 0);
	CHECK_EQ(canal_io_write(pfd[1], "q", 1, -1, NULL), 1);
	CHECK_EQ(canal_io_read(pfd[0], &c, 1, 1000000, NULL), 1);
	CHECK_EQ(canal_io_read(pfd[0], &c, 1, 1000000, NULL), -ETIMEDOUT);
	CHECK_EQ(canal_io_close(pfd[0]), 0);
	CHECK_EQ(canal_io_close(pfd[1]), 0);
	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof(sqe));
	CHECK_EQ(canal_io_submit(&sqe, -1, NULL), -EPERM);
}

/* ---------------- full duplex: a reader and a writer on one fd ------- */

static int dsv[2];
static _Atomic int duplex_read, duplex_busy, duplex_second_done;
#define DUPLEX_BYTES (4 << 20)

static void duplex_reader(void *arg)
{
	(void)arg;
	char c;
	CHECK_EQ(canal_io_recv(dsv[0], &c, 1, 0, -1, NULL), 1);
	CHECK_EQ(c, 'r');
	atomic_store(&duplex_read, 1);
}

static void duplex_second_reader(void *arg)
{
	(void)arg;
	char c;
	ssize_t r = canal_io_recv(dsv[0], &c, 1, 0, 1000000, NULL);
	/* epoll: one reader per fd per loop; io_uring: any number. Nothing
	 * is sent towards dsv[0] until this reader is done (the main task
	 * waits for duplex_second_done), so with io_uring its receive
	 * times out: two receives pending on one socket are served in no
	 * promised order, and the byte must go to the first reader. */
	if (r == -EBUSY)
		atomic_store(&duplex_busy, 1);
	else
		CHECK_EQ(r, -ETIMEDOUT);
	atomic_store(&duplex_second_done, 1);
}

static void duplex_writer(void *arg)
{
	(void)arg;
	static char buf[DUPLEX_BYTES];
	memset(buf, 'w', sizeof(buf));
	size_t off = 0;
	while (off < sizeof(buf)) { /* blocks: nobody reads dsv[1] yet */
		ssize_t r = canal_io_send(dsv[0], buf + off, sizeof(buf) - off,
					  0, -1, NULL);
		CHECK(r > 0);
		off += (size_t)r;
	}
}

static void duplex_main(void *arg)
{
	(void)arg;
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, dsv), 0);
	CHECK_EQ(canal_spawn(duplex_reader, NULL), 0);
	CHECK_EQ(canal_spawn(duplex_writer, NULL), 0);
	CHECK_EQ(canal_spawn(duplex_second_reader, NULL), 0);
	/* Reader and writer both wait on dsv[0]; the second reader gave up
	 * (timeout) or was refused (epoll) meanwhile. */
	canal_sleep_ns(10000000);
	static char buf[65536];
	size_t got = 0;
	while (got < DUPLEX_BYTES) {
		ssize_t r = canal_io_recv(dsv[1], buf, sizeof(buf), 0, -1, NULL);
		CHECK(r > 0);
		got += (size_t)r;
	}
	CHECK_EQ(atomic_load(&duplex_read), 0);
	while (!atomic_load(&duplex_second_done))
		canal_sleep_ns(100000);
	CHECK_EQ(canal_io_send(dsv[1], "r", 1, 0, -1, NULL), 1);
	while (!atomic_load(&duplex_read))
		canal_sleep_ns(100000);
	CHECK_EQ(atomic_load(&duplex_busy), on_epoll() ? 1 : 0);
	close(dsv[0]);
	close(dsv[1]);
}

static void test_duplex(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(duplex_main, NULL, &o), 0);
}

/* ---------------- completion vs cancellation ---------------- */

struct race {
	int fd[2];
	struct canal_cond *cancel;
	_Atomic int reader_in; /* the reader is about to wait */
	_Atomic int poker_done;
	uint32_t trial;
	int result;
};

static void race_poker(void *arg)
{
	struct race *r = arg;
	while (!atomic_load(&r->reader_in))
		canal_yield();
	/* Write the byte and signal the cancel in both orders. */
	if (r->trial & 1) {
		CHECK_EQ(write(r->fd[1], "x", 1), 1);
		canal_cond_signal(r->cancel);
	} else {
		canal_cond_signal(r->cancel);
		CHECK_EQ(write(r->fd[1], "x", 1), 1);
	}
	atomic_store(&r->poker_done, 1);
}

static void race_main(void *arg)
{
	struct race *r = arg;
	uint32_t trials = 10000;
#if defined(__SANITIZE_THREAD__)
	trials = 2000; /* TSan: a fiber per task is slow to make */
#endif
	uint32_t done = 0, cancelled = 0;
	for (r->trial = 0; r->trial < trials; r->trial++) {
		atomic_store(&r->reader_in, 0);
		atomic_store(&r->poker_done, 0);
		CHECK_EQ(canal_spawn(race_poker, r), 0);
		char c;
		atomic_store(&r->reader_in, 1);
		int res = (int)canal_io_read(r->fd[0], &c, 1, -1, r->cancel);
		/* The signal may have come before the read waited: then it
		 * was lost and the read completes. Drain the poker. */
		char left;
		int more;
		if (res == 1) {
			done++;
			CHECK_EQ(c, 'x');
			/* Completed: the byte is gone from the pipe... after
			 * the poker wrote it, which it has (we read it). */
			more = (int)read(r->fd[0], &left, 1);
			CHECK(more == -1 && errno == EAGAIN);
		} else {
			CHECK_EQ(res, -ECANCELED);
			cancelled++;
			/* Cancelled: the byte is still there (wait for the
			 * poker to have written it). */
			struct pollfd p = {.fd = r->fd[0], .events = POLLIN};
			CHECK_EQ(poll(&p, 1, 10000), 1);
			CHECK_EQ(read(r->fd[0], &left, 1), 1);
		}
		/* Let the poker end before the next trial. */
		while (!atomic_load(&r->poker_done))
			canal_yield();
	}
	printf("test_task_io: %u races: %u completed, %u cancelled\n", trials,
	       done, cancelled);
	CHECK_EQ(done + cancelled, trials);
}

static void test_race(void)
{
	struct race r = {0};
	CHECK_EQ(pipe2(r.fd, O_CLOEXEC | O_NONBLOCK), 0);
	r.cancel = canal_cond_create();
	struct canal_run_options o = {.loops = 2,
				      .flags = CANAL_RUN_NO_SYNC_SHORTCUT};
	CHECK_EQ(canal_run(race_main, &r, &o), 0);
	canal_cond_destroy(r.cancel);
	close(r.fd[0]);
	close(r.fd[1]);
}

/* ---------------- detach / attach ---------------- */

static struct canal_chan *results;

static void detacher(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg;
	uint64_t id = canal_task_id();
	CHECK_EQ(canal_attach(), 0); /* not detached: nothing */
	CHECK_EQ(canal_detach(), 0);
	CHECK_EQ(canal_detach(), 0);
	CHECK_EQ(canal_task_id(), id);
	usleep(200); /* blocking: fine on a pool thread */
	uint32_t v = i;
	CHECK_EQ(canal_send(results, &v), 0); /* blocks the pool thread */
	CHECK_EQ(canal_attach(), 0);
	CHECK_EQ(canal_task_id(), id);
	v = i + 1000000;
	CHECK_EQ(canal_send(results, &v), 0);
	if (i % 2)
		CHECK_EQ(canal_detach(), 0); /* and end detached */
}

static void detach_main(void *arg)
{
	uint32_t n = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < n; i++)
		CHECK_EQ(canal_spawn(detacher, (void *)(uintptr_t)i), 0);
	uint8_t *seen = calloc(2 * n, 1);
	for (uint32_t k = 0; k < 2 * n; k++) {
		uint32_t v;
		CHECK_EQ(canal_recv(results, &v), 0);
		uint32_t idx = v >= 1000000 ? v - 1000000 + n : v;
		CHECK(idx < 2 * n);
		CHECK_EQ(seen[idx]++, 0);
	}
	free(seen);
}

static void test_detach(void)
{
	CHECK_EQ(canal_detach(), -EPERM);
	CHECK_EQ(canal_attach(), -EPERM);
	results = canal_chan_create(sizeof(uint32_t), 4, 0);
	struct canal_run_options o = {.loops = 2, .detach_threads = 3};
	CHECK_EQ(canal_run(detach_main, (void *)(uintptr_t)300, &o), 0);
	canal_chan_destroy(results);
}

int main(void)
{
	test_cond();
	test_io(0);
	test_io(CANAL_RUN_NO_SYNC_SHORTCUT);
	test_duplex();
	test_race();
	test_detach();
	printf("test_task_io: ok\n");
	return 0;
}
