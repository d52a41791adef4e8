/* test_task_io_pending.c - the backend's pending hint, which the loop's
 * spin before sleeping watches (loop.c, io_spin; backend.h, pending), white
 * box, on one loop:
 *  - a task waits in canal_io_read on an empty pipe (the read in flight);
 *    another task of the loop sees pending false (nothing completed), then
 *    writes to the pipe, and, without leaving the CPU (no yield: the loop
 *    cannot reap meanwhile), sees pending turn true within 5 s: the
 *    kernel's completion is visible without a system call (io_uring: the
 *    deferred task work flag or a posted CQE); the reader then gets the
 *    byte. ROUNDS times.
 *  - a backend without the hint (epoll: pending NULL) never reports it,
 *    and the read still completes.
 *  - the same rounds with $CANAL_IO_SPIN_NS=0 (no spin) and 100 us: the
 *    spin changes when the loop sleeps, not what completes (a smoke run:
 *    when the loop sleeps is a matter for the benchmarks).
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include "runtime/backend.h"
#include "runtime/internal.h"

#include <time.h>
#include <unistd.h>

#define ROUNDS 50

struct pair {
	int fds[2];
	_Atomic int got;     /* bytes the reader received */
	_Atomic bool armed;  /* the reader is about to wait */
	int seen_pending;    /* rounds where pending turned true */
	bool has_hint;       /* the backend has pending */
};

static void reader(void *arg)
{
	struct pair *p = arg;
	char c;
	atomic_store(&p->armed, true);
	ssize_t n = canal_io_read(p->fds[0], &c, 1, -1, NULL);
	CHECK_EQ(n, 1);
	CHECK_EQ(c, 'x');
	atomic_fetch_add(&p->got, 1);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void writer(void *arg)
{
	struct pair *p = arg;
	struct canal__loop *l = canal__this_loop();
	const struct canal__backend_ops *be = l->rt->backend;
	p->has_hint = be->pending != NULL;
	const char *b = getenv("CANAL_BACKEND");
	if (b && strcmp(b, "epoll") == 0)
		CHECK(!p->has_hint);
	for (int r = 0; r < ROUNDS; r++) {
		atomic_store(&p->armed, false);
		CHECK_EQ(canal_spawn(reader, p), 0);
		/* Let the reader run until it waits in its read (one loop: it
		 * runs only when this task yields). */
		while (!atomic_load(&p->armed) || l->inflight == 0)
			canal_yield();
		/* And until the loop has given the read to the kernel: it
		 * submits when it polls, which it does before it sleeps (this
		 * task's sleep leaves it nothing to run). */
		canal_sleep_ns(1000000);
		if (be->pending) {
			CHECK(!be->pending(l)); /* the pipe is empty */
		}
		CHECK_EQ(write(p->fds[1], "x", 1), 1);
		if (be->pending) {
			uint64_t until = mono_ns() + 5000000000u;
			bool seen = false;
			while (!seen && mono_ns() < until)
				seen = be->pending(l);
			CHECK(seen);
			p->seen_pending += seen;
		}
		while (atomic_load(&p->got) != r + 1)
			canal_yield();
	}
}

static void run_once(const char *spin)
{
	if (spin)
		setenv("CANAL_IO_SPIN_NS", spin, 1);
	else
		unsetenv("CANAL_IO_SPIN_NS");
	struct pair p = {0};
	CHECK_EQ(pipe(p.fds), 0);
	struct canal_run_options o = {0};
	o.loops = 1;
	CHECK_EQ(canal_run(writer, &p, &o), 0);
	CHECK_EQ(atomic_load(&p.got), ROUNDS);
	CHECK_EQ(p.seen_pending, p.has_hint ? ROUNDS : 0);
	close(p.fds[0]);
	close(p.fds[1]);
}

int main(void)
{
	run_once(NULL);
	run_once("0");
	run_once("100000");
	printf("test_task_io_pending: ok\n");
	return 0;
}
