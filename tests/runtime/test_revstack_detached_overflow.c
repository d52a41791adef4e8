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
#include "overflow_child.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

static void overflowing(void *arg)
{
	CHECK_EQ(canal_detach(), 0);
	overflow_task(arg);
}

static void overflow_main(void *arg)
{
	(void)arg;
	/* Task 2 detaches, then overflows on a pool thread. */
	CHECK_EQ(canal_spawn(overflowing, NULL), 0);
}

static void test_detached_overflow(const char *guard)
{
	char buf[4096];
	struct overflow_main m = {overflow_main};
	int st = overflow_child_run(guard, overflow_child_runtime, &m, buf,
				    sizeof(buf));
	overflow_child_report("detached overflow", guard, st, buf);
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
