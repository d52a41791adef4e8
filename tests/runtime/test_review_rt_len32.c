/* test_review_rt_len32.c - hostile review: the io_uring backend puts
 * op->len (size_t) into the SQE's 32-bit len (backend_uring.c, ur_submit:
 * (unsigned)op->len for read/write, io_uring_prep_recv/send's __u32). A
 * read of 4 GiB (len = 2^32) that has to wait becomes a read of 0 bytes
 * and returns 0, which the caller takes for the end of input, while the
 * pipe is open and its data comes 50 ms later. read(2) (and the epoll
 * backend) caps such a length at MAX_RW_COUNT instead. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <sys/socket.h>

static int fds[2];

static void *late_writer(void *arg)
{
	(void)arg;
	usleep(50000);
	CHECK_EQ(write(fds[1], "hello", 5), 5);
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	char buf[16] = {0};
	/* A pipe read of 4 GiB into a 16-byte buffer is fine for the
	 * kernel as long as fewer than 16 bytes come. */
	CHECK_EQ(pipe(fds), 0);
	pthread_t w = spawn(late_writer, NULL);
	ssize_t r = canal_io_read(fds[0], buf, (size_t)1 << 32, 2000000000,
				  NULL);
	fprintf(stderr, "canal_io_read(len 2^32) = %zd (data \"%s\")\n", r, buf);
	join(w);
	CHECK_EQ(r, 5);
	close(fds[0]);
	close(fds[1]);

	/* The same for recv on a socket pair. */
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	memset(buf, 0, sizeof buf);
	w = spawn(late_writer, NULL);
	r = canal_io_recv(fds[0], buf, (size_t)1 << 32, 0, 2000000000, NULL);
	fprintf(stderr, "canal_io_recv(len 2^32) = %zd (data \"%s\")\n", r, buf);
	join(w);
	CHECK_EQ(r, 5);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	printf("test_review_rt_len32: ok\n");
	return 0;
}
