/* test_task_overflow_canary.c - a task that overflows a stack without a
 * guard page (the canary kind: CANAL_STACK_GUARD=none, or past the
 * budget of mappings on kernels without guard regions) and never switches
 * out, so that its canary is never checked, runs down through the blocks
 * below until it faults: that fault is reported as the task's overflow
 * (task id, stack size) and the process aborts, instead of dying by a
 * bare SIGSEGV (stack.c, segv_handler: the stack pointer is below the
 * task's stack). In a forked child. Not under the sanitizers: the
 * runtime installs no handler there (they report overflows), and with no
 * guard page the recursion may run on through their reserved memory
 * (a 300 s timeout under ASan). */
#include "check.h"
#include "overflow_child.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

static void run_child(const char *guard, const char *how)
{
	char buf[4096];
	struct overflow_main m = {overflow_spawn_main};
	int st = overflow_child_run(guard, overflow_child_runtime, &m, buf,
				    sizeof(buf));
	overflow_child_report("overflow", guard, st, buf);
	CHECK(strstr(buf, "canal: task 2 overflowed its stack of") != NULL);
	CHECK(strstr(buf, how) != NULL);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

int main(void)
{
#ifdef SANITIZED
	/* No handler to check, and without a guard page nothing stops the
	 * recursion where the sanitizer would see it: below the slab it may
	 * run on through the sanitizer's own reserved memory. */
	printf("test_task_overflow_canary: skipped under a sanitizer (the "
	       "runtime installs no overflow handler there)\n");
	return 0;
#endif
	run_child("none", "stack pointer below its stack");
	printf("test_task_overflow_canary: ok\n");
	return 0;
}
