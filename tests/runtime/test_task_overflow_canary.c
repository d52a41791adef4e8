/* test_task_overflow_canary.c - a task that overflows a stack without a
 * guard page (the canary kind: CANAL_STACK_GUARD=none, or past the
 * budget of mappings on kernels without guard regions) and never switches
 * out, so that its canary is never checked, runs down through the blocks
 * below until it faults: that fault is reported as the task's overflow
 * (task id, stack size) and the process aborts, instead of dying by a
 * bare SIGSEGV (stack.c, segv_handler: the stack pointer is below the
 * task's stack). In a forked child. Under the sanitizers the runtime
 * installs no handler (they report): there only the child's death is
 * checked. */
#include "check.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

static volatile int sink;

static int recurse(int depth)
{
	volatile char frame[1024];
	frame[0] = (char)depth;
	frame[1023] = (char)depth;
	if (depth > 10000000)
		return frame[0];
	return recurse(depth + 1) + frame[1023];
}

static size_t stack_bytes = 64 * 1024;

static void overflowing(void *arg)
{
	(void)arg;
	sink = recurse(0);
}

static void overflow_main(void *arg)
{
	(void)arg;
	/* Task 2 overflows, through the blocks below its own. */
	CHECK_EQ(canal_spawn(overflowing, NULL), 0);
}

static void run_child(const char *guard, const char *how)
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
					      .stack_size = stack_bytes};
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
	fprintf(stderr, "overflow (%s): %s %d; stderr: %s\n",
		guard ? guard : "default",
		WIFSIGNALED(st) ? "signal" : "exit",
		WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), buf);
	CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
#ifndef SANITIZED
	CHECK(strstr(buf, "canal: task 2 overflowed its stack of") != NULL);
	CHECK(strstr(buf, how) != NULL);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#else
	(void)how;
#endif
}

int main(void)
{
	run_child("none", "stack pointer below its stack");
	printf("test_task_overflow_canary: ok\n");
	return 0;
}
