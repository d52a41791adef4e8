/*
 * test_revlive_pid_reuse - a forked process whose pid is that of a dead
 * ancestor must not use the ancestor's attacher id, nor unmap the
 * ancestor's lock mapping address in its own memory.
 *
 * Defect (hostile review of branch live): a handle's attach state is
 * taken for this process's when ch->attach_pid == getpid()
 * (attached_here, canal__self_id in liveness.c). attach_pid is a copy in
 * the process's memory of the pid of the process that attached. P opens a
 * handle, forks C (which never uses it) and dies; pids wrap, and C forks
 * G, which gets P's pid. In G the handle looks attached here:
 *  - canal__self_id returns P's id without re-attaching: G's claims carry
 *    the id of a dead process, and G holds no lock on it. Every peer takes
 *    G for dead (canal__attacher_gone) and repairs the slots it holds: its
 *    commit or release fails with -EOWNERDEAD, or the element it had
 *    taken is lost. main compared pids the same way, but there C and G
 *    inherited P's lock descriptor (lock_fd), which kept P's id locked:
 *    this test passes on main. On live the lock is held by an
 *    MADV_DONTFORK mapping that C and G do not have.
 *  - new on live: canal_chan_destroy -> canal__detach munmaps lock_map,
 *    P's mapping address, which in G is a hole (MADV_DONTFORK) or, by
 *    then, any mapping of G's own: G's memory is unmapped under it.
 *
 * Pid reuse is made deterministic in a PID namespace of the test's own
 * (root: unshare(CLONE_NEWPID), and /proc/sys/kernel/ns_last_pid of that
 * namespace); without the privilege the test is skipped (77). P has pid 2
 * there, and G gets pid 2 once P is reaped.
 *
 * Every process is bounded by alarm(); all die with the namespace's init,
 * which dies with the test.
 */
#define _GNU_SOURCE 1
#include "liveness_check.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>

struct report {
	pid_t p_pid, g_pid;
	uint32_t p_id, g_id;
};

static struct canal_chan *ch;
static int up[2], down[2];

/* G: the reused pid. */
static void g_main(struct canal_chan *h)
{
	struct report r = { 0 };
	r.g_pid = getpid();
	r.g_id = self_id(h);
	write_all(up[1], &r, sizeof r);
	char c;
	read_all(down[0], &c, 1); /* the test has asked about us */
	/* A mapping of G's own where P's lock page was (a hole here). */
	long pg = sysconf(_SC_PAGESIZE);
	void *want = h->lock_map;
	int mine = 0;
	if (want) {
		void *m = mmap(want, (size_t)pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0);
		if (m == want) {
			*(volatile int *)m = 42;
			canal_chan_destroy(h);
			/* still mapped? msync fails with ENOMEM if not */
			mine = msync(m, (size_t)pg, MS_ASYNC) == 0 ? 1 : 2;
		}
	}
	write_all(up[1], &mine, sizeof mine);
	pause();
	_exit(0);
}

/* Init of the namespace (pid 1). */
static void init_main(void)
{
	alarm(20);
	int reaped[2];
	CHECK(pipe(reaped) == 0);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		/* P: a handle of its own, used; then a child C that never
		 * uses it; then P dies. */
		struct canal_chan *h;
		CHECK_EQ(canal_chan_open_fd(canal_chan_fd(ch), 8, 4,
					    CANAL_SHARED, &h),
			 0);
		struct report r = { 0 };
		r.p_pid = getpid();
		r.p_id = self_id(h);
		pid_t c = fork();
		CHECK(c >= 0);
		if (c == 0) {
			/* C: wait for P to be reaped, then fork G with P's
			 * pid. */
			char x;
			read_all(reaped[0], &x, 1);
			int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
			CHECK(fd >= 0);
			char buf[16];
			int n = snprintf(buf, sizeof buf, "%d", (int)r.p_pid - 1);
			CHECK(write(fd, buf, (size_t)n) == n);
			close(fd);
			pid_t g = fork();
			CHECK(g >= 0);
			if (g == 0)
				g_main(h);
			pause();
			_exit(0);
		}
		write_all(up[1], &r, sizeof r);
		_exit(0);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	write_all(reaped[1], "r", 1);
	for (;;)
		if (wait(&st) < 0 && errno == ECHILD)
			pause();
}

/* Run in a child of the test (the "host"): a process that called
 * unshare(CLONE_NEWPID) cannot make processes once that namespace's init
 * is gone, and the sanitizers' leak check at exit makes one. */
static int host_main(void)
{
	if (unshare(CLONE_NEWPID) < 0) {
		printf("test_revlive_pid_reuse: skipped (unshare: %s)\n",
		       strerror(errno));
		return 77;
	}
	CHECK(pipe(up) == 0 && pipe(down) == 0);
	/* not test_fork(): getppid() is 0 across the namespace border */
	pid_t init = fork();
	CHECK(init >= 0);
	if (init == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		init_main();
		_exit(0);
	}
	struct report rp, rg;
	read_all(up[0], &rp, sizeof rp);
	read_all(up[0], &rg, sizeof rg);
	CHECK_EQ(rg.g_pid, rp.p_pid); /* the setup: G has P's pid */
	bool gone = canal__attacher_gone(ch, rg.g_id);
	write_all(down[1], "c", 1);
	int mine;
	read_all(up[0], &mine, sizeof mine);
	kill(init, SIGKILL);
	waitpid(init, NULL, 0);
	if (gone)
		fprintf(stderr, "a live process (pid %d, the pid of a dead "
				"ancestor) was taken for dead: its claims carry "
				"id %u, the dead process's (%u), not an id of "
				"its own\n",
			(int)rg.g_pid, rg.g_id, rp.p_id);
	if (mine == 2)
		fprintf(stderr, "canal_chan_destroy in that process unmapped "
				"a page of its own (the dead process's "
				"lock_map address)\n");
	CHECK(!gone);
	CHECK(mine != 2);
	return 0;
}

int main(void)
{
	ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	fflush(stdout);
	pid_t host = test_fork();
	CHECK(host >= 0);
	if (host == 0) {
		int r = host_main();
		fflush(stdout);
		_exit(r);
	}
	int st;
	CHECK(waitpid(host, &st, 0) == host);
	canal_chan_destroy(ch);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		return 77;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_DONE("test_revlive_pid_reuse");
}
