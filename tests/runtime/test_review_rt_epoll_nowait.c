/* test_review_rt_epoll_nowait.c - hostile review: on the epoll backend a
 * ready fd is read with preadv2(RWF_NOWAIT) (canal__io_try), and
 * -EOPNOTSUPP (a file without FMODE_NOWAIT: inotify, a pty, ...) is
 * turned into -EAGAIN, which ep_ready takes for a spurious wake-up and
 * keeps waiting. Level-triggered, the fd is reported again at once: the
 * loop spins and the read never completes, although the data was there
 * before the call. io_uring reads such files (io-wq). */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>

static void main_task(void *arg)
{
	(void)arg;
	char dir[] = "/tmp/canal-review-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int in = inotify_init1(IN_CLOEXEC);
	CHECK(in >= 0);
	CHECK(inotify_add_watch(in, dir, IN_CREATE) >= 0);
	char path[64];
	snprintf(path, sizeof path, "%s/f", dir);
	int f = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(f >= 0);
	close(f);
	/* An event is pending now. */
	char buf[4096] __attribute__((aligned(8)));
	uint64_t t0 = canal_now_ns();
	ssize_t r = canal_io_read(in, buf, sizeof buf, 500000000, NULL);
	fprintf(stderr, "inotify: canal_io_read = %zd after %llu ms\n", r,
		(unsigned long long)((canal_now_ns() - t0) / 1000000));
	ssize_t r_inotify = r;
	close(in);
	unlink(path);
	rmdir(dir);

	/* A pty master with output from its slave waiting. */
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	CHECK(m >= 0);
	CHECK_EQ(grantpt(m), 0);
	CHECK_EQ(unlockpt(m), 0);
	int s = open(ptsname(m), O_RDWR | O_NOCTTY);
	CHECK(s >= 0);
	CHECK_EQ(write(s, "hi", 2), 2);
	usleep(20000);
	t0 = canal_now_ns();
	r = canal_io_read(m, buf, sizeof buf, 500000000, NULL);
	fprintf(stderr, "pty: canal_io_read = %zd after %llu ms\n", r,
		(unsigned long long)((canal_now_ns() - t0) / 1000000));
	close(s);
	close(m);
	CHECK(r_inotify > 0);
	CHECK(r > 0);
}

int main(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_review_rt_epoll_nowait: ok\n");
	return 0;
}
