/* overflow_child.h - what the stack overflow tests share: a task body
 * that recurses until its stack overflows, and a forked child whose
 * standard error (the overflow report) is captured, with its end. */
#ifndef CANAL_TEST_OVERFLOW_CHILD_H
#define CANAL_TEST_OVERFLOW_CHILD_H

#include "check.h"

#include <canal/task.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Under ASan or TSan (SANITIZED, check.h) the runtime installs no
 * overflow handler: the sanitizer reports overflows itself. */

static volatile int overflow_sink;

/* Frames of 1 KiB until the stack overflows (the bound, 10 GiB of
 * frames, is never reached). */
static __attribute__((unused)) int overflow_recurse(int depth)
{
	volatile char frame[1024];
	frame[0] = (char)depth;
	frame[1023] = (char)depth;
	if (depth > 10000000)
		return frame[0];
	return overflow_recurse(depth + 1) + frame[1023];
}

/* A task body that overflows its stack. */
static inline void overflow_task(void *arg)
{
	(void)arg;
	overflow_sink = overflow_recurse(0);
}

/* A first task that spawns one that overflows (task 2). */
static inline void overflow_spawn_main(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(overflow_task, NULL), 0);
}

/* A child's body (overflow_child_run): a runtime of one loop and 64 KiB
 * stacks whose first task is fn. */
struct overflow_main {
	void (*fn)(void *);
};

static inline void overflow_child_runtime(void *arg)
{
	const struct overflow_main *m = arg;
	struct canal_run_options o = {.loops = 1, .stack_size = 64 * 1024};
	canal_run(m->fn, NULL, &o); /* the overflow aborts */
}

/* Fork: the child sends its standard error to a pipe, sets
 * CANAL_STACK_GUARD to guard unless it is NULL, calls child(arg), then
 * _exit(0). The parent reads what the child wrote into buf (at most
 * cap - 1 bytes, then a NUL) and returns the child's wait status. */
static inline int overflow_child_run(const char *guard,
				     void (*child)(void *), void *arg,
				     char *buf, size_t cap)
{
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		if (guard)
			setenv("CANAL_STACK_GUARD", guard, 1);
		child(arg);
		_exit(0);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t r;
	while (len < cap - 1 &&
	       (r = read(pfd[0], buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	close(pfd[0]);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return st;
}

/* Say on stderr how a child of overflow_child_run ended (label, its
 * CANAL_STACK_GUARD, signal or exit status) and what it wrote. */
static inline void overflow_child_report(const char *label,
					 const char *guard, int st,
					 const char *buf)
{
	fprintf(stderr, "%s (%s): %s %d; stderr: %s\n", label,
		guard ? guard : "default", WIFSIGNALED(st) ? "signal" : "exit",
		WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), buf);
}

/* A child's body (overflow_child_run) that dumps no core:
 * overflow_child_runtime(arg). */
static inline void overflow_child_nocore(void *arg)
{
	struct rlimit rl = {0, 0};
	setrlimit(RLIMIT_CORE, &rl);
	overflow_child_runtime(arg);
}

/* A forked child (overflow_child_nocore, default guard) whose first task
 * is fn: 0 when it exited 0, 1 when it aborted with task 2's overflow
 * report, which names how. Else says so (label; step and its value:
 * which child of the test) and fails the test. */
static inline int overflow_child_task2(void (*fn)(void *), const char *how,
				       const char *label, const char *step,
				       size_t value)
{
	char buf[4096];
	struct overflow_main m = {fn};
	int st = overflow_child_run(NULL, overflow_child_nocore, &m, buf,
				    sizeof(buf));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
	      strstr(buf, "canal: task 2 overflowed its stack of") &&
	      strstr(buf, how))) {
		fprintf(stderr, "%s %zu: ", step, value);
		overflow_child_report(label, NULL, st, buf);
		CHECK(0);
	}
	return 1;
}

#endif
