/* test_review_rt_epoll_accept.c - hostile review: on the epoll backend a
 * listener in blocking mode, once reported readable, is accepted with a
 * blocking accept4 (canal__io_try(op, ready = true)). Two loops each with a
 * task accepting on the same listener both get the readiness of one
 * connection (two epoll sets, level-triggered); the loop that loses the
 * race blocks its whole thread in accept4 until the next connection: its
 * acceptor's timeout does not end it, and every other task of that loop
 * stands still (reproduced 4 runs in 5). Now the listener is made
 * non-blocking for the call. (io_uring's accept is cancellable: no such
 * stall.) */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <netinet/in.h>
#include <sys/socket.h>

static int lfd;
static struct sockaddr_in addr;
static _Atomic int stop;
static _Atomic unsigned returns[2]; /* canal_io_accept returns, per task */
static _Atomic int live;

static void acceptor(void *arg)
{
	int me = (int)(intptr_t)arg;
	while (!atomic_load(&stop)) {
		int r = canal_io_accept(lfd, NULL, NULL, SOCK_CLOEXEC,
					50000000, NULL);
		if (r >= 0)
			close(r);
		else
			CHECK_EQ(r, -ETIMEDOUT);
		atomic_fetch_add(&returns[me], 1);
	}
	atomic_fetch_sub(&live, 1);
}

/* After each connection, both acceptors must come back from a call (one
 * with the connection, the other at its timeout) before the next one is
 * made: a loop stuck in accept4 never does (the bound, 20 s, only ends
 * the test: the stuck call waits for a connection that is not coming). */
static void *connector(void *arg)
{
	(void)arg;
	usleep(100000);
	for (int i = 0; i < 30; i++) {
		unsigned seen[2] = {atomic_load(&returns[0]),
				    atomic_load(&returns[1])};
		int c = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(c >= 0);
		CHECK_EQ(connect(c, (struct sockaddr *)&addr, sizeof addr), 0);
		close(c);
		for (int w = 0; atomic_load(&returns[0]) == seen[0] ||
				atomic_load(&returns[1]) == seen[1];
		     w++) {
			if (w == 2000) {
				fprintf(stderr, "connection %d: an acceptor "
					"did not come back in 20 s (its loop "
					"is stuck in accept4): returns %u %u, seen %u %u\n", i, atomic_load(&returns[0]), atomic_load(&returns[1]), seen[0], seen[1]);
				CHECK(0);
			}
			usleep(10000);
		}
	}
	atomic_store(&stop, 1);
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	atomic_store(&live, 2);
	CHECK_EQ(canal_spawn(acceptor, (void *)(intptr_t)0), 0); /* loop 1 */
	CHECK_EQ(canal_spawn(acceptor, (void *)(intptr_t)1), 0); /* loop 0 */
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
	printf("test_review_rt_epoll_accept: ok\n");
	return 0;
}
