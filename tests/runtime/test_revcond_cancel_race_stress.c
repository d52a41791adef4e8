/* test_revcond_cancel_race_stress.c - an operation's completion against
 * its cancelling condvar's signal, both from plain threads at random
 * moments: a read (pipe), a recv (socketpair), an accept, and on io_uring
 * the generic primitive (canal_io_submit of a READ).
 *
 * Invariants, each trial (task.h: exactly one outcome): the operation
 * returns its result (the byte read, the connection accepted) or
 * -ECANCELED, and then nothing moved (the byte is still in the pipe, the
 * connection still in the backlog); a signal that says it woke a waiter
 * found this operation, and the signaller destroys the condvar as soon as
 * its signal returned 1 or the operation ended. The operation's timeout
 * is a hang guard only.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "full_backlog.h"
#include "trial_pace.h"

#include <canal/task.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#ifdef SANITIZED
#define TRIALS 400
#else
#define TRIALS 2000
#endif
#define GUARD_NS 30000000000LL

enum { K_READ, K_RECV, K_ACCEPT, K_SUBMIT, K_N };

static struct canal_cond *_Atomic trial_cond;
static _Atomic int trial_go, sig_done, put_done, op_ended, checked;
static int sig_count[TRIALS];
static _Atomic int n_done, n_cancelled; /* (the mix, printed) */
static int kind_of[TRIALS];
static int rfd, wfd;	   /* the trial's pair (K_ACCEPT: listener, -) */
static struct sockaddr_un laddr;
static int conn_fd = -1;   /* K_ACCEPT's connecting socket */
static bool uring;

static void *signaller(void *arg)
{
	uint64_t seed = 0x1234567ull;
	(void)arg;
	for (int trial = 0; trial < TRIALS; trial++) {
		trial_pace(&trial_go, trial, &seed, 400);
		struct canal_cond *c = atomic_load(&trial_cond);
		int n = 0;
		while (!atomic_load(&op_ended)) {
			n = trial & 1 ? canal_cond_broadcast(c)
				      : canal_cond_signal(c);
			CHECK(n == 0 || n == 1);
			if (n)
				break;
			spin_us((unsigned)(check_rand64(&seed) % 50));
		}
		sig_count[trial] = n;
		canal_cond_destroy(c); /* its waiter was ended, or is gone */
		atomic_store(&sig_done, trial + 1);
	}
	return NULL;
}

static void *putter(void *arg)
{
	uint64_t seed = 0x7654321ull;
	(void)arg;
	for (int trial = 0; trial < TRIALS; trial++) {
		trial_pace(&trial_go, trial, &seed, 400);
		if (kind_of[trial] == K_ACCEPT) {
			conn_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			CHECK(conn_fd >= 0);
			CHECK_EQ(connect(conn_fd, (struct sockaddr *)&laddr,
					 sizeof laddr),
				 0);
		} else {
			CHECK_EQ(write(wfd, "x", 1), 1);
		}
		atomic_store(&put_done, trial + 1);
	}
	return NULL;
}

static int run_op(int kind, struct canal_cond *c)
{
	char b = 0;
	int r;
	switch (kind) {
	case K_READ:
		r = (int)canal_io_read(rfd, &b, 1, GUARD_NS, c);
		break;
	case K_RECV:
		r = (int)canal_io_recv(rfd, &b, 1, 0, GUARD_NS, c);
		break;
	case K_ACCEPT:
		r = canal_io_accept(rfd, NULL, NULL, SOCK_CLOEXEC, GUARD_NS, c);
		if (r >= 0) {
			close(r);
			return 1;
		}
		return r;
	default: {
		struct io_uring_sqe sqe;
		memset(&sqe, 0, sizeof sqe);
		io_uring_prep_read(&sqe, rfd, &b, 1, (uint64_t)-1);
		r = canal_io_submit(&sqe, GUARD_NS, c);
		break;
	}
	}
	if (r == 1)
		CHECK_EQ(b, 'x');
	return r;
}

/* What is left for a non-blocking taker once the putter is done: 1 if
 * the byte (connection) is still there. */
static int left_over(int kind)
{
	/* (Blocking descriptors: look first; what is queued is seen at
	 * once.) */
	struct pollfd pf = {.fd = rfd, .events = POLLIN};
	if (poll(&pf, 1, 0) == 0)
		return 0;
	if (kind == K_ACCEPT) {
		int a = accept4(rfd, NULL, NULL, SOCK_CLOEXEC);
		CHECK(a >= 0);
		close(a);
		return 1;
	}
	char b;
	CHECK_EQ(read(rfd, &b, 1), 1);
	return 1;
}

static void op_task(void *arg)
{
	int trial = (int)(intptr_t)arg;
	int kind = kind_of[trial];
	struct canal_cond *c = atomic_load(&trial_cond);
	int r = run_op(kind, c);
	atomic_store(&op_ended, 1);
	while (atomic_load(&put_done) != trial + 1 ||
	       atomic_load(&sig_done) != trial + 1)
		canal_sleep_ns(100000);
	int left = left_over(kind);
	if (!((r == 1 && left == 0) || (r == -ECANCELED && left == 1)) ||
	    (sig_count[trial] == 1 && r != -ECANCELED && r != 1)) {
		fprintf(stderr,
			"trial %d kind %d: op %d, left %d, signal woke %d; "
			"want (1, 0) or (-ECANCELED, 1)\n",
			trial, kind, r, left, sig_count[trial]);
		abort();
	}
	/* A signal that woke nobody: the op must have completed. */
	if (sig_count[trial] == 0 && r != 1) {
		fprintf(stderr, "trial %d kind %d: op %d, no signal woke it\n",
			trial, kind, r);
		abort();
	}
	atomic_fetch_add(r == 1 ? &n_done : &n_cancelled, 1);
	atomic_store(&checked, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	uint64_t seed = 42;
	struct io_uring_sqe nop;
	memset(&nop, 0, sizeof nop);
	io_uring_prep_nop(&nop);
	uring = canal_io_submit(&nop, -1, NULL) != -EOPNOTSUPP;
	int listener = unix_listener(&laddr, "revcond-race", 16);
	for (int trial = 0; trial < TRIALS; trial++) {
		int kind = (int)(check_rand64(&seed) % (uring ? K_N : K_N - 1));
		kind_of[trial] = kind;
		int p[2];
		if (kind == K_READ || kind == K_SUBMIT) {
			CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
		} else if (kind == K_RECV) {
			CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
					    0, p),
				 0);
		} else {
			p[0] = listener;
			p[1] = -1;
		}
		rfd = p[0];
		wfd = p[1];
		struct canal_cond *c = canal_cond_create();
		CHECK(c);
		atomic_store(&trial_cond, c);
		atomic_store(&op_ended, 0);
		atomic_store(&checked, 0);
		CHECK_EQ(canal_spawn(op_task, (void *)(intptr_t)trial), 0);
		atomic_store(&trial_go, trial + 1);
		/* The op task ends after both threads are done. */
		while (!atomic_load(&checked))
			canal_sleep_ns(100000);
		if (kind == K_ACCEPT) {
			close(conn_fd);
		} else {
			close(p[0]);
			close(p[1]);
		}
	}
	close(listener);
	unlink(laddr.sun_path);
}

int main(void)
{
	pthread_t s = spawn(signaller, NULL), p = spawn(putter, NULL);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	join(s);
	join(p);
	printf("completed %d, cancelled %d\n", atomic_load(&n_done),
	       atomic_load(&n_cancelled));
	TEST_DONE("test_revcond_cancel_race_stress");
}
