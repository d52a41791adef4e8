/* test_review_rt_blocking_timeout.c - hostile review: the blocking path of
 * the I/O calls (a plain thread, a detached task) converts timeout_ns to
 * poll(2)'s int milliseconds with a plain cast (io.c, io_blocking). A
 * timeout of 2^32 + 1 ms (about 49.7 days) becomes poll(..., 1): the call
 * returns -ETIMEDOUT after 1 ms although the data comes 200 ms later. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <stdint.h>

/* (2^32 + 1) ms in ns: fits an int64_t comfortably (4.3e15). */
#define BIG_TIMEOUT_NS ((int64_t)((1ull << 32) + 1) * 1000000)

static int fds[2];

static void *late_writer(void *arg)
{
	(void)arg;
	usleep(200000);
	CHECK_EQ(write(fds[1], "x", 1), 1);
	return NULL;
}

static void one_read(const char *where)
{
	CHECK_EQ(pipe(fds), 0);
	pthread_t w = spawn(late_writer, NULL);
	char c = 0;
	uint64_t t0 = canal_now_ns();
	ssize_t r = canal_io_read(fds[0], &c, 1, BIG_TIMEOUT_NS, NULL);
	uint64_t ms = (canal_now_ns() - t0) / 1000000;
	fprintf(stderr, "%s: canal_io_read(timeout 49.7 days) = %zd after %llu ms\n",
		where, r, (unsigned long long)ms);
	join(w);
	CHECK_EQ(r, 1);
	CHECK_EQ(c, 'x');
	close(fds[0]);
	close(fds[1]);
}

static void detached_main(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_detach(), 0);
	one_read("detached task");
	CHECK_EQ(canal_attach(), 0);
}

int main(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(detached_main, NULL, &o), 0);
	one_read("plain thread");
	printf("test_review_rt_blocking_timeout: ok\n");
	return 0;
}
