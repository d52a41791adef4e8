/* test_revstack_fork_segv.c - a hostile review of task stacks (branch
 * revstack, 2026-11-30): fork() by a plain thread while a compacting
 * runtime sweeps, then a runtime of the child's own.
 *
 * The overflow reports' SIGSEGV handler (stack.c) is installed at
 * canal_run, saving the handler before it, and put back when canal_run
 * returns. A child forked while the parent's runtime ran inherits the
 * handler in place; its own canal_run saved that (canal's own handler) as
 * "the handler before", and put it back at its end: from then on the
 * child kept canal's handler outside any runtime, and that handler, on a
 * fault that is not a task's overflow, puts "the previous one" (itself)
 * back and returns: the faulting instruction ran again, for ever. A plain
 * NULL dereference hung the child instead of killing it.
 *
 * Checks, in the child, after its own compacting runtime (tasks parked
 * for many epochs, their stacks compacted and put back intact):
 *  1. SIGSEGV's disposition is the one the process had before the
 *     parent's canal_run (deterministic: it fails on the old code);
 *  2. a grandchild that dereferences NULL dies (by SIGSEGV; under ASan,
 *     by its report) (bounded: 60 s, the old code spun for ever).
 * The parent's runtime is not disturbed. Under TSan the child makes no
 * thread (TSan cannot start threads after a multi-threaded fork): the
 * child's part is skipped; under ASan/TSan canal installs no handler
 * (the sanitizer reports overflows), and the checks hold trivially. */
#define _GNU_SOURCE
#include "check.h"
#include "runtime/internal.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#ifdef UNDER_TSAN
static const bool under_tsan = true;
#else
static const bool under_tsan = false;
#endif

#define NPARKED 64
#define WORDS 32

static struct sigaction before;
static struct canal_chan *pch, *cch;
static _Atomic int parked, intact_n;

static void pause_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* Parks in a receive with a pattern on its stack; counts it intact. */
static void parker(void *arg)
{
	struct canal_chan *ch = arg;
	volatile uint64_t a[WORDS];
	uint64_t id = canal_task_id();
	for (int i = 0; i < WORDS; i++)
		a[i] = id * 1000003u + (uint64_t)i;
	atomic_fetch_add(&parked, 1);
	uint32_t v;
	CHECK_EQ(canal_recv(ch, &v), 0);
	bool ok = true;
	for (int i = 0; i < WORDS; i++)
		ok &= a[i] == id * 1000003u + (uint64_t)i;
	if (ok)
		atomic_fetch_add(&intact_n, 1);
}

static void parent_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < NPARKED; i++)
		CHECK_EQ(canal_spawn(parker, pch), 0);
}

static void *runtime_thread(void *arg)
{
	(void)arg;
	struct canal_run_options o = {.loops = 2,
				      .flags = CANAL_RUN_COMPACT_STACKS};
	CHECK_EQ(canal_run(parent_main, NULL, &o), 0);
	return NULL;
}

/* The child's runtime: NPARKED tasks park for 50 epochs (1 ms each),
 * then each gets a value and checks its stack. */
static void child_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < NPARKED; i++)
		CHECK_EQ(canal_spawn(parker, cch), 0);
	while (atomic_load(&parked) < NPARKED)
		canal_sleep_ns(1000000);
	canal_sleep_ns(50000000);
	for (uint32_t i = 0; i < NPARKED; i++)
		CHECK_EQ(canal_send(cch, &i), 0);
}

/* waitpid with a bound (a fail-safe: the child ends at once when right). */
static int wait_bounded(pid_t pid, unsigned seconds)
{
	int status = 0;
	pid_t w = 0;
	for (unsigned i = 0; i < seconds * 100 && w == 0; i++) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == 0)
			pause_ms(10);
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	CHECK_EQ(w, pid);
	return status;
}

static int child(void)
{
	if (under_tsan)
		return 0;
	atomic_store(&parked, 0);
	atomic_store(&intact_n, 0);
	cch = canal_chan_create(sizeof(uint32_t), 1, 0);
	CHECK(cch != NULL);
	struct canal_run_options o = {.loops = 2,
				      .detach_threads = 1,
				      .flags = CANAL_RUN_COMPACT_STACKS};
	int r = canal_run(child_main, NULL, &o);
	if (r != 0) {
		fprintf(stderr, "child: canal_run returned %d\n", r);
		return 1;
	}
	CHECK_EQ(atomic_load(&intact_n), NPARKED);
	canal_chan_destroy(cch);
	/* 1. The disposition from before any runtime. */
	struct sigaction now;
	CHECK_EQ(sigaction(SIGSEGV, NULL, &now), 0);
	if (now.sa_handler != before.sa_handler) {
		fprintf(stderr, "child: SIGSEGV's handler after its runtime is "
				"%p, not the one from before (%p)\n",
			(void *)now.sa_handler, (void *)before.sa_handler);
		return 2;
	}
	/* 2. A plain fault kills. */
	pid_t g = fork();
	CHECK(g >= 0);
	if (g == 0) {
		volatile int *p = NULL;
		*p = 1;
		_exit(0);
	}
	int st = wait_bounded(g, 60);
	if (st == -1) {
		fprintf(stderr, "child: a NULL dereference hung\n");
		return 3;
	}
	/* Killed by SIGSEGV; under ASan, whose handler reports the fault,
	 * an exit with its error code. */
	CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0));
	return 0;
}

int main(void)
{
	setenv("CANAL_STACK_COMPACT_MS", "1", 1);
	CHECK_EQ(sigaction(SIGSEGV, NULL, &before), 0);
	pch = canal_chan_create(sizeof(uint32_t), 1, 0);
	CHECK(pch != NULL);
	pthread_t rt = spawn(runtime_thread, NULL);
	while (atomic_load(&parked) < NPARKED)
		pause_ms(1);
	/* Let sweeps run (not needed for the checks: the fork comes while
	 * the runtime runs, sweeping or not). */
	uint64_t compacted = 0, notified = 0;
	for (int i = 0; i < 1000 && !compacted; i++) {
		pause_ms(5);
		canal__compact_stats(&compacted, &notified);
	}
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child());
	int status = wait_bounded(pid, 60);
	if (status == -1) {
		fprintf(stderr, "the child hung\n");
		abort();
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "child: %s %d\n",
			WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status)
					  : WTERMSIG(status));
		abort();
	}
	for (uint32_t i = 0; i < NPARKED; i++)
		CHECK_EQ(canal_send(pch, &i), 0);
	join(rt);
	CHECK_EQ(atomic_load(&intact_n), NPARKED);
	canal_chan_destroy(pch);
	printf("test_revstack_fork_segv: ok (%llu compacted before the "
	       "fork)\n", (unsigned long long)compacted);
	return 0;
}
