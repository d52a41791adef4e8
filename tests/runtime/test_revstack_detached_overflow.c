/* test_revstack_detached_overflow.c - a hostile review of task stacks
 * (branch revstack, 2026-11-30): a detached task that overflows its stack
 * is reported (task id, stack size) and the process aborts, as a task on a
 * loop is (test_task_limits), in a forked child.
 *
 * The SIGSEGV handler runs with SA_ONSTACK, on the thread's alternate
 * signal stack: loop threads had one, the detach pool's threads none, so a
 * detached task's overflow (its own stack gone, the guard page hit) could
 * not even push the signal frame, and the kernel killed the process with
 * SIGSEGV and no report. Checked in the default guard kind (guard regions
 * where the kernel has them) and in "maps" (a mapping per stack). */
#include "check.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#endif

static volatile int sink;

static int recurse(int depth)
{
	volatile char frame[1024];
	frame[0] = (char)depth;
	frame[1023] = (char)depth;
	if (depth > 1000000)
		return frame[0];
	return recurse(depth + 1) + frame[1023];
}

static void overflowing(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_detach(), 0);
	sink = recurse(0);
}

static void overflow_main(void *arg)
{
	(void)arg;
	/* Task 2 detaches, then overflows on a pool thread. */
	CHECK_EQ(canal_spawn(overflowing, NULL), 0);
}

static void test_detached_overflow(const char *guard)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		if (guard)
			setenv("CANAL_STACK_GUARD", guard, 1);
		struct canal_run_options o = {.loops = 1,
					      .stack_size = 64 * 1024};
		canal_run(overflow_main, NULL, &o);
		_exit(0); /* not reached: the overflow aborts */
	}
	close(pfd[1]);
	char buf[4096];
	size_t len = 0;
	ssize_t r;
	while (len < sizeof(buf) - 1 &&
	       (r = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	close(pfd[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	fprintf(stderr, "detached overflow (%s): %s %d; stderr: %s\n",
	       guard ? guard : "default",
	       WIFSIGNALED(st) ? "signal" : "exit",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), buf);
	CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
#ifndef SANITIZED
	CHECK(strstr(buf, "canal: task 2 overflowed its stack of") != NULL);
	CHECK(strstr(buf, "fault in its guard page") != NULL);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#endif
}

int main(void)
{
	test_detached_overflow(NULL);
	test_detached_overflow("maps");
	printf("test_revstack_detached_overflow: ok\n");
	return 0;
}
