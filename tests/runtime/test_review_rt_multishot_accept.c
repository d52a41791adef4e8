/* test_review_rt_multishot_accept.c - hostile review: canal_io_submit
 * took a multishot accept (only chains refused multishot forms) and
 * "returns at its last [completion], with the first one's res". Every
 * further CQE of a multishot accept is a new connected socket, whose res
 * canal dropped (reap_op keeps the first): 3 connections came before the
 * timeout, the call returned one fd and 2 more stayed open, unreachable.
 * Now refused: -EINVAL, nothing started, no descriptor made (and
 * -EOPNOTSUPP on epoll, which takes no SQE). A single-shot accept through
 * the same call still works. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <dirent.h>
#include <liburing.h>
#include <netinet/in.h>
#include <sys/socket.h>

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static int lfd;
static struct sockaddr_in addr;
static int clients[3];

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	CHECK(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void *connector(void *arg)
{
	(void)arg;
	usleep(50000);
	for (int i = 0; i < 3; i++) {
		clients[i] = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(clients[i] >= 0);
		CHECK_EQ(connect(clients[i], (struct sockaddr *)&addr,
				 sizeof addr), 0);
		usleep(10000);
	}
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_multishot_accept(&sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
	pthread_t th = spawn(connector, NULL);
	usleep(0);
	int before = open_fds();
	int r = canal_io_submit(&sqe, 300000000, NULL);
	CHECK_EQ(r, on_epoll() ? -EOPNOTSUPP : -EINVAL);
	/* The same refusal with a timeout of 0. */
	CHECK_EQ(canal_io_submit(&sqe, 0, NULL),
		 on_epoll() ? -EOPNOTSUPP : -EINVAL);
	join(th);
	int after = open_fds();
	fprintf(stderr, "multishot accept: res %d; descriptors %d -> %d "
		"(+3 clients)\n", r, before, after);
	CHECK_EQ(after - before, 3); /* the clients, nothing accepted */
	if (!on_epoll()) {
		/* A single-shot accept takes one queued connection. */
		io_uring_prep_accept(&sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
		int fd = canal_io_submit(&sqe, 300000000, NULL);
		CHECK(fd >= 0);
		close(fd);
	}
	for (int i = 0; i < 3; i++)
		close(clients[i]);
	CHECK_EQ(open_fds(), before);
}

int main(void)
{
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(lfd >= 0);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(lfd, (struct sockaddr *)&addr, sizeof addr), 0);
	socklen_t len = sizeof addr;
	CHECK_EQ(getsockname(lfd, (struct sockaddr *)&addr, &len), 0);
	CHECK_EQ(listen(lfd, 64), 0);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_review_rt_multishot_accept: ok\n");
	return 0;
}
