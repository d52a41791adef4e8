/*
 * test_revlive_rawfork - a child made by _Fork() (or clone(), or any fork
 * that runs no pthread_atfork handler) must not claim with its parent's
 * attacher id.
 *
 * Defect (hostile review of branch live): liveness.c caches the process's
 * pid in reg.pid and forgets it only in its pthread_atfork child handler
 * (fork_child). glibc's _Fork() (the async-signal-safe fork, POSIX.1-2024)
 * and a raw clone() run no handler: the child keeps its parent's cached
 * pid, so every inherited handle looks "attached here" (attached_here,
 * canal__self_id) and is never re-attached: the child's claims carry its
 * parent's id. On main the child also inherited the parent's lock
 * descriptor (lock_fd), which kept that id locked while the child lived,
 * so the child was never taken for dead (this test passes on main). On
 * live the parent's lock is held by an MADV_DONTFORK mapping the child
 * does not have: once the parent dies, peers take the live child for dead
 * (canal__attacher_gone) and repair the slots it holds (its commit or
 * release fails: -EOWNERDEAD, or -EINVAL once the slot has moved on;
 * or the element it had taken is lost).
 * The child's canal_chan_destroy also munmaps the parent's lock_map
 * address in the child's memory.
 *
 * The child here is single-threaded (its parent too), so calling canal
 * after _Fork() is allowed.
 *
 * Bounded by alarm(); every wait has a deadline.
 */
#define _GNU_SOURCE 1
#include "liveness_check.h"

#include <fcntl.h>
#include <sys/wait.h>

pid_t _Fork(void);

int main(void)
{
	struct canal_chan *ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	int p[2], q[2];
	CHECK(pipe(p) == 0 && pipe(q) == 0);
	pid_t mid = test_fork();
	CHECK(mid >= 0);
	if (mid == 0) {
		alarm(20);
		struct canal_chan *h;
		CHECK_EQ(canal_chan_open_fd(canal_chan_fd(ch), 8, 4,
					    CANAL_SHARED, &h),
			 0);
		uint32_t id = self_id(h);
		write_all(p[1], &id, sizeof id);
		pid_t g = _Fork();
		CHECK(g >= 0);
		if (g == 0) {
			int null = open("/dev/null", O_RDWR);
			dup2(null, 2);
			alarm(15);
			uint32_t gid = self_id(h);
			pid_t me = getpid();
			/* a send in progress: the slot is reserved */
			struct canal_slot slot;
			CHECK_EQ(canal_send_reserve(h, &slot), 0);
			*(uint64_t *)slot.data = 7;
			write_all(p[1], &gid, sizeof gid);
			write_all(p[1], &me, sizeof me);
			char c;
			read_all(q[0], &c, 1);
			int r = canal_send_commit(h, &slot);
			write_all(p[1], &r, sizeof r);
			pause();
			_exit(0);
		}
		pause();
		_exit(0);
	}
	uint32_t id, gid;
	pid_t g;
	read_all(p[0], &id, sizeof id);
	read_all(p[0], &gid, sizeof gid);
	read_all(p[0], &g, sizeof g);
	/* the parent dies; its child lives */
	CHECK(kill(mid, SIGKILL) == 0);
	int st;
	CHECK(waitpid(mid, &st, 0) == mid);
	bool gone = false;
	for (int i = 0; i < 200 && !gone; i++) {
		gone = canal__attacher_gone(ch, gid);
		usleep(1000);
	}
	/* a receiver meets the child's reserved slot (held > 1 ms: asks
	 * about its claimer) */
	uint64_t x = 0;
	int rr = canal_recv_timeout(ch, &x, 300 * 1000 * 1000);
	write_all(q[1], "c", 1);
	int commit;
	read_all(p[0], &commit, sizeof commit);
	bool lives = kill(g, 0) == 0;
	kill(g, SIGKILL);
	if (gone)
		fprintf(stderr, "a live child made by _Fork() was taken for "
				"dead once its parent died: it claims with its "
				"parent's id (%u; parent's %u)\n",
			gid, id);
	if (commit != 0)
		fprintf(stderr, "its canal_send_commit failed: %s (the "
				"receiver got: %d, %llu)\n",
			strerror(-commit), rr, (unsigned long long)x);
	CHECK(lives);
	CHECK_EQ(commit, 0);
	CHECK(!gone);
	canal_chan_destroy(ch);
	TEST_DONE("test_revlive_rawfork");
}
