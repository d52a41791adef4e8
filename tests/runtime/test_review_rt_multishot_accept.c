/* test_review_rt_multishot_accept.c - hostile review: canal_io_submit
 * takes a multishot accept (only chains refuse multishot forms) and
 * "returns at its last [completion], with the first one's res". Every
 * further CQE of a multishot accept is a new connected socket: canal
 * drops their res (reap_op keeps the first), so those descriptors are
 * open in the process and known to nobody: never closed, their peers
 * never see the end. Here 3 connections come before the timeout; the
 * call returns one fd and 2 more stay open, unreachable. */
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
	join(th);
	int after = open_fds();
	if (on_epoll()) {
		CHECK_EQ(r, -EOPNOTSUPP);
		return;
	}
	fprintf(stderr, "multishot accept: res %d; descriptors %d -> %d "
		"(+3 clients, +1 returned fd expected)\n", r, before, after);
	CHECK(r >= 0);
	close(r);
	after = open_fds();
	for (int i = 0; i < 3; i++)
		close(clients[i]);
	int leaked = after - before;
	fprintf(stderr, "after closing the returned fd: %d descriptors more "
		"than before, besides the 3 clients: %d leaked\n", leaked,
		leaked - 3);
	CHECK_EQ(leaked - 3, 0);
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
