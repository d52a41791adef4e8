/* test_review_rt_epoll_accept.c - hostile review: on the epoll backend a
 * listener in blocking mode, once reported readable, is accepted with a
 * blocking accept4 (canal__io_try(op, ready = true)). Two loops each with a
 * task accepting on the same listener both get the readiness of one
 * connection (two epoll sets, level-triggered); the loop that loses the
 * race blocks its whole thread in accept4 until the next connection: its
 * acceptor's 300 ms timeout does not end it, and every other task of that
 * loop stands still. (io_uring's accept is cancellable: no such stall.) */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <netinet/in.h>
#include <sys/socket.h>

static int lfd;
static struct sockaddr_in addr;
static _Atomic int stop;
static _Atomic uint64_t worst_ns; /* the longest canal_io_accept */
static _Atomic int live;

static void acceptor(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		uint64_t t0 = canal_now_ns();
		int r = canal_io_accept(lfd, NULL, NULL, SOCK_CLOEXEC,
					300000000, NULL);
		uint64_t d = canal_now_ns() - t0;
		if (d > atomic_load(&worst_ns))
			atomic_store(&worst_ns, d);
		if (r >= 0)
			close(r);
		else
			CHECK_EQ(r, -ETIMEDOUT);
	}
	atomic_fetch_sub(&live, 1);
}

static void *connector(void *arg)
{
	(void)arg;
	/* Connections 1.5 s apart: a loop stuck in accept4 stays stuck
	 * until the next one, far beyond its acceptor's 300 ms timeout. */
	for (int i = 0; i < 12; i++) {
		usleep(i ? 1500000 : 100000);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(c >= 0);
		CHECK_EQ(connect(c, (struct sockaddr *)&addr, sizeof addr), 0);
		close(c);
		if (atomic_load(&worst_ns) > 1000000000ull)
			break;
	}
	atomic_store(&stop, 1);
	/* Unstick a loop still blocked in accept4. */
	for (int i = 0; i < 2; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		connect(c, (struct sockaddr *)&addr, sizeof addr);
		close(c);
	}
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	atomic_store(&live, 2);
	CHECK_EQ(canal_spawn(acceptor, NULL), 0); /* loop 1 */
	CHECK_EQ(canal_spawn(acceptor, NULL), 0); /* loop 0 */
	pthread_t th = spawn(connector, NULL);
	while (atomic_load(&live) > 0)
		canal_sleep_ns(10000000);
	join(th);
}

int main(void)
{
	lfd = socket(AF_INET, SOCK_STREAM, 0); /* blocking */
	CHECK(lfd >= 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(lfd, (struct sockaddr *)&addr, sizeof addr), 0);
	socklen_t len = sizeof addr;
	CHECK_EQ(getsockname(lfd, (struct sockaddr *)&addr, &len), 0);
	CHECK_EQ(listen(lfd, 64), 0);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	fprintf(stderr, "longest canal_io_accept (timeout 300 ms): %llu ms\n",
		(unsigned long long)(atomic_load(&worst_ns) / 1000000));
	CHECK(atomic_load(&worst_ns) < 1000000000ull);
	printf("test_review_rt_epoll_accept: ok\n");
	return 0;
}
