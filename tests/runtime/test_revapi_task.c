/* test_revapi_task.c - task.h's documented errors by calling context,
 * table-driven: each function from a task, from a plain thread while a
 * runtime runs, from a detached task and after canal_run returned, each
 * value checked exactly; and two edges of the I/O calls:
 *  - canal_io_accept on a descriptor that is not a listening socket
 *    (a pipe in blocking mode) returns what accept(2) says (-ENOTSOCK),
 *    on both backends;
 *  - canal_io_read/write on a negative fd return -EBADF at once, with a
 *    timeout too, in a task and outside one.
 *
 * Failed before its fix with: on the epoll backend, canal_io_accept of a
 * blocking pipe waited for the pipe to become readable, for ever (io_uring
 * answered -ENOTSOCK at once): with a 50 ms timeout, -ETIMEDOUT; outside a
 * task, canal_io_read(-1, ..., 50 ms) returned -ETIMEDOUT after 50 ms
 * (poll(2) skips negative fds) where the task and the call without a
 * timeout said -EBADF. */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <liburing.h>
#include <sys/socket.h>

static int expect_failures;

static void expect_value(const char *ctx, const char *what, long got,
			 long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %s: %ld (%s), want %ld (%s)\n", ctx, what, got,
		strerror((int)-got), want, strerror((int)-want));
	expect_failures++;
}

#define EXPECT(ctx, call, want)                                              \
	expect_value(ctx, #call, (long)(call), (long)(want))

/* 50 ms: long enough that a wrong -ETIMEDOUT is not a race, short enough
 * for the test's budget. */
#define WAIT_NS 50000000

static void nothing(void *arg)
{
	(void)arg;
}

static struct canal_cond *cond;
static struct canal_io_rstream *stream; /* main task's */
static int pipe_fds[2];

/* The calls that need a (non-detached) task, from somewhere else: ctx
 * says where. */
static void not_a_task(const char *ctx, bool detached)
{
	struct io_uring_sqe sqe;
	int32_t res[1];
	char buf[4];
	ssize_t got;
	io_uring_prep_nop(&sqe);
	EXPECT(ctx, canal_cond_wait(cond, 0), -EPERM);
	EXPECT(ctx, canal_cond_wait(cond, -1), -EPERM);
	EXPECT(ctx, canal_cond_wait(NULL, 0), -EINVAL);
	EXPECT(ctx, canal_io_submit(&sqe, -1, NULL), -EPERM);
	EXPECT(ctx, canal_io_submit(NULL, -1, NULL), -EINVAL);
	EXPECT(ctx, canal_io_submit_link(&sqe, 1, res, -1, NULL), -EPERM);
	EXPECT(ctx, canal_io_submit_batch(&sqe, 1, res, -1, NULL), -EPERM);
	EXPECT(ctx, canal_io_submit_link(&sqe, 0, res, -1, NULL), -EINVAL);
	struct canal_io_rstream *s = NULL;
	EXPECT(ctx, canal_io_rstream_open(pipe_fds[0], &s), -EPERM);
	EXPECT(ctx, canal_io_rstream_open(-1, &s), -EINVAL);
	if (stream) { /* the main task's, open (a detached task has none) */
		EXPECT(ctx, canal_io_rstream_recv(stream, buf, 4, 0, NULL),
		       -EPERM);
		EXPECT(ctx, canal_io_rstream_close(stream), -EPERM);
		EXPECT(ctx,
		       canal_io_submit_link_recv(&sqe, 1, res, stream, buf, 4,
						 &got, 0, NULL),
		       -EPERM);
	}
	/* Outside a task the I/O calls block the thread; the timeout
	 * applies to readiness. */
	EXPECT(ctx, canal_io_read(pipe_fds[0], buf, 4, 0, NULL), -ETIMEDOUT);
	EXPECT(ctx, canal_io_read(pipe_fds[0], buf, 4, 1000000, NULL),
	       -ETIMEDOUT);
	EXPECT(ctx, canal_io_read(-1, buf, 4, WAIT_NS, NULL), -EBADF);
	EXPECT(ctx, canal_io_write(-1, buf, 4, 0, NULL), -EBADF);
	EXPECT(ctx, canal_io_recv(-1, buf, 4, 0, WAIT_NS, NULL), -EBADF);
	EXPECT(ctx, canal_io_send(-1, buf, 4, 0, WAIT_NS, NULL), -EBADF);
	EXPECT(ctx, canal_io_accept(-1, NULL, NULL, 0, WAIT_NS, NULL), -EBADF);
	EXPECT(ctx, canal_io_close(-1), -EBADF);
	EXPECT(ctx, canal_sleep_ns(1000), 0);
	if (detached) {
		EXPECT(ctx, canal_task_id(), 1);
		EXPECT(ctx, canal_detach(), 0); /* already: nothing */
		EXPECT(ctx, canal_spawn(nothing, NULL), 0);
		EXPECT(ctx, canal_run(nothing, NULL, NULL), -EBUSY);
	} else {
		EXPECT(ctx, canal_task_id(), 0);
		EXPECT(ctx, canal_detach(), -EPERM);
		EXPECT(ctx, canal_attach(), -EPERM);
	}
	canal_yield(); /* never fails, in any context */
}

static void *plain_thread(void *arg)
{
	(void)arg;
	not_a_task("plain thread", false);
	EXPECT("plain thread", canal_spawn(nothing, NULL), -EPERM);
	EXPECT("plain thread", canal_run(nothing, NULL, NULL), -EBUSY);
	EXPECT("plain thread", canal_cond_signal(cond), 0);
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	const char *ctx = "task";
	char buf[4];
	cond = canal_cond_create();
	CHECK(cond);
	EXPECT(ctx, canal_task_id(), 1);
	EXPECT(ctx, canal_run(nothing, NULL, NULL), -EBUSY);
	EXPECT(ctx, canal_spawn(NULL, NULL), -EINVAL);
	EXPECT(ctx, canal_cond_wait(NULL, 0), -EINVAL);
	EXPECT(ctx, canal_cond_wait(cond, 0), -ETIMEDOUT);
	EXPECT(ctx, canal_cond_wait(cond, 1000), -ETIMEDOUT);
	EXPECT(ctx, canal_cond_signal(NULL), -EINVAL);
	EXPECT(ctx, canal_cond_broadcast(NULL), -EINVAL);
	EXPECT(ctx, canal_cond_signal(cond), 0);
	EXPECT(ctx, canal_cond_broadcast(cond), 0);
	EXPECT(ctx, canal_attach(), 0); /* attached: nothing */
	EXPECT(ctx, canal_sleep_ns(0), 0);
	EXPECT(ctx, canal_io_read(pipe_fds[0], buf, 4, 0, NULL), -ETIMEDOUT);
	EXPECT(ctx, canal_io_read(-1, buf, 4, WAIT_NS, NULL), -EBADF);
	EXPECT(ctx, canal_io_read(-1, buf, 4, -1, NULL), -EBADF);
	EXPECT(ctx, canal_io_close(-1), -EBADF);
	/* accept(2) of a pipe: -ENOTSOCK, whether the call waits or not. */
	EXPECT(ctx, canal_io_accept(pipe_fds[0], NULL, NULL, 0, 0, NULL),
	       -ENOTSOCK);
	EXPECT(ctx, canal_io_accept(pipe_fds[0], NULL, NULL, 0, WAIT_NS, NULL),
	       -ENOTSOCK);
	/* A socket that does not listen: -EINVAL, as accept(2). */
	int dg = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(dg >= 0);
	EXPECT(ctx, canal_io_accept(dg, NULL, NULL, 0, WAIT_NS, NULL),
	       -EOPNOTSUPP);
	close(dg);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	EXPECT(ctx, canal_io_accept(sv[0], NULL, NULL, 0, WAIT_NS, NULL),
	       -EINVAL);

	EXPECT(ctx, canal_io_rstream_open(-1, &stream), -EINVAL);
	EXPECT(ctx, canal_io_rstream_open(sv[0], NULL), -EINVAL);
	EXPECT(ctx, canal_io_rstream_open(sv[0], &stream), 0);
	EXPECT(ctx, canal_detach(), -EBUSY);
	EXPECT(ctx, canal_io_rstream_recv(NULL, buf, 4, 0, NULL), -EINVAL);
	EXPECT(ctx, canal_io_rstream_recv(stream, NULL, 4, 0, NULL), -EINVAL);
	EXPECT(ctx, canal_io_rstream_recv(stream, buf, 0, 0, NULL), -EINVAL);
	EXPECT(ctx, canal_io_rstream_recv(stream, buf, 4, 0, NULL),
	       -ETIMEDOUT);
	EXPECT(ctx, canal_io_rstream_close(NULL), -EINVAL);

	pthread_t th = spawn(plain_thread, NULL);
	join(th);

	EXPECT(ctx, canal_io_rstream_close(stream), 0);
	stream = NULL;
	close(sv[0]);
	close(sv[1]);

	EXPECT(ctx, canal_detach(), 0);
	not_a_task("detached task", true);
	EXPECT(ctx, canal_attach(), 0);
	EXPECT(ctx, canal_attach(), 0);
	EXPECT(ctx, canal_task_id(), 1);
	canal_cond_destroy(cond);
	canal_cond_destroy(NULL); /* accepted */
}

/* The same accepts where no try comes first: the backend alone. */
static void accept_no_try(void *arg)
{
	(void)arg;
	const char *ctx = "task, no sync shortcut";
	EXPECT(ctx, canal_io_accept(pipe_fds[0], NULL, NULL, 0, WAIT_NS, NULL),
	       -ENOTSOCK);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	EXPECT(ctx, canal_io_accept(sv[0], NULL, NULL, 0, WAIT_NS, NULL),
	       -EINVAL);
	close(sv[0]);
	close(sv[1]);
	EXPECT(ctx, canal_io_accept(-1, NULL, NULL, 0, WAIT_NS, NULL), -EBADF);
}

int main(void)
{
	alarm(30); /* a hang is a failure */
	CHECK_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	o.flags = CANAL_RUN_NO_SYNC_SHORTCUT;
	CHECK_EQ(canal_run(accept_no_try, NULL, &o), 0);
	o.flags = 0;
	/* After the runtime: */
	const char *ctx = "after canal_run";
	char buf[4];
	EXPECT(ctx, canal_spawn(nothing, NULL), -EPERM);
	EXPECT(ctx, canal_task_id(), 0);
	EXPECT(ctx, canal_detach(), -EPERM);
	EXPECT(ctx, canal_io_read(-1, buf, 4, WAIT_NS, NULL), -EBADF);
	EXPECT(ctx, canal_io_read(pipe_fds[0], buf, 4, 0, NULL), -ETIMEDOUT);
	struct canal_run_options bad[] = {
		{.flags = 1u << 7},
		{.backend = 3},
		{.backend = -1},
		{.loops = 1025},
		{.stack_size = 16 * 1024 - 1},
		{.stack_size = ((size_t)1 << 30) + 1},
		{.detach_threads = 1025},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		EXPECT(ctx, canal_run(nothing, NULL, &bad[i]), -EINVAL);
	EXPECT(ctx, canal_run(NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(expect_failures, 0);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	TEST_DONE("test_revapi_task");
}
