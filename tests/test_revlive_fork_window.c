/*
 * test_revlive_fork_window - a fork() by another thread while a handle
 * takes its OFD liveness lock must not leave the child holding that lock.
 *
 * Defect (hostile review of branch live): lock_ofd (liveness.c) opens a
 * description of its own (canal__reopen_fd), takes the OFD lock through
 * it, maps it, marks the mapping MADV_DONTFORK and only then closes the
 * descriptor. fork() takes no lock of canal's (no prepare handler: "fork()
 * does not take it"), so a fork by another thread anywhere in that window
 * gives the child a copy of the descriptor (and, before the madvise, of
 * the mapping), both references to the lock's description. Nothing in the
 * child ever closes or unmaps them (the child's handler only resets the
 * registry; the handle is "not attached here", so canal__detach leaves
 * lock_map alone). The OFD lock then lives as long as the child: the
 * parent's death is never seen while the child lives, and peers wait for
 * ever on a slot the dead parent held. GUARANTEES.md says the opposite:
 * "a parent's death is seen while its children live".
 *
 * The window is a few system calls (open, fcntl, mmap, madvise, close);
 * to hit it deterministically, this test defines madvise(): when armed,
 * it lets a second thread fork at that instant (the fork a concurrent
 * thread of the application would make), then does the real system call.
 * Nothing else of canal is changed.
 *
 * Each process is bounded by alarm(); every wait has a deadline.
 */
#define _GNU_SOURCE 1
#include "liveness_check.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static _Atomic int armed;
static int go[2], done[2];

/* The interposed madvise: canal's lock_ofd calls it between taking the
 * OFD lock and closing its descriptor. It lets the other thread fork and
 * waits up to 1 s for that fork: a library that keeps fork() out of this
 * window makes the fork wait until the window is over instead (then the
 * test checks the child forked after it). */
int madvise(void *addr, size_t len, int advice)
{
	if (advice == MADV_DONTFORK && atomic_exchange(&armed, 0)) {
		char c = 'g';
		CHECK(write(go[1], &c, 1) == 1);
		struct pollfd pf = { .fd = done[0], .events = POLLIN };
		if (poll(&pf, 1, 1000) == 1)
			CHECK(read(done[0], &c, 1) == 1);
	}
	return (int)syscall(SYS_madvise, addr, len, advice);
}

static pid_t grandchild;

/* Another thread of the application, which forks (a worker, a helper). */
static void *forker(void *arg)
{
	(void)arg;
	char c;
	read_all(go[0], &c, 1);
	pid_t g = fork();
	CHECK(g >= 0);
	if (g == 0) {
		/* A child that never touches the channel; bounded, and
		 * holding none of the test's output pipes. */
		int null = open("/dev/null", O_RDWR);
		dup2(null, 1);
		dup2(null, 2);
		alarm(15);
		pause();
		_exit(0);
	}
	grandchild = g;
	write_all(done[1], "d", 1);
	return NULL;
}

int main(void)
{
	struct canal_chan *ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t mid = test_fork();
	CHECK(mid >= 0);
	if (mid == 0) {
		alarm(20);
		CHECK(pipe(go) == 0 && pipe(done) == 0);
		pthread_t t = spawn(forker, NULL);
		atomic_store(&armed, 1);
		/* a handle made here: an OFD lock of its own; the other
		 * thread forks while it is being taken */
		struct canal_chan *h;
		CHECK_EQ(canal_chan_open_fd(canal_chan_fd(ch), 8, 4,
					    CANAL_SHARED, &h),
			 0);
		join(t);
		CHECK(atomic_load(&armed) == 0); /* the fork did happen */
		uint32_t id = self_id(h);
		report_and_wait(p[1], id, grandchild);
	}
	uint32_t id;
	pid_t g;
	read_report(p[0], &id, &g);
	bool dead = kill_seen_dead(ch, id, mid, 3000);
	bool child_lives = kill(g, 0) == 0;
	kill(g, SIGKILL);
	if (!dead)
		fprintf(stderr, "a killed process (id %u) still looked alive "
				"after 3 s: a child forked by another of its "
				"threads while it took its lock holds the "
				"lock's description (child alive: %d)\n",
			id, child_lives);
	CHECK(dead);
	canal_chan_destroy(ch);
	TEST_DONE("test_revlive_fork_window");
}
