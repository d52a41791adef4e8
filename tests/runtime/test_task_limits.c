/* test_task_limits.c - what happens at the limits: a task that overflows
 * its stack is reported (task id, stack size) and the process aborts (in a
 * forked child); running out of memory makes canal_spawn return -ENOMEM,
 * never crash, and the runtime still ends. */
#include "check.h"
#include "overflow_child.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* guard: CANAL_STACK_GUARD for the child (NULL: the default, guard
 * regions where the kernel has them; "maps": a mapping per stack). */
static void test_overflow(const char *guard)
{
	char buf[4096];
	struct overflow_main m = {overflow_spawn_main};
	int st = overflow_child_run(guard, overflow_child_runtime, &m, buf,
				    sizeof(buf));
	CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
#ifndef SANITIZED
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(buf, "canal: task 2 overflowed its stack of") != NULL);
	CHECK(strstr(buf, "fault in its guard page") != NULL);
	CHECK(strstr(buf, "stack_size") != NULL);
#else
	/* The sanitizer reports the overflow itself. */
	CHECK(strstr(buf, "overflow") != NULL ||
	      strstr(buf, "SEGV") != NULL);
#endif
}

static _Atomic int spawned, enomem, ran;

static void small(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ran, 1);
}

static __attribute__((unused)) void enomem_main(void *arg)
{
	(void)arg;
	for (;;) {
		int r = canal_spawn(small, NULL);
		if (r == -ENOMEM) {
			atomic_store(&enomem, 1);
			break;
		}
		CHECK_EQ(r, 0);
		atomic_fetch_add(&spawned, 1);
	}
}

static void test_enomem(void)
{
#ifndef SANITIZED
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* 1 GiB stacks, 64 GiB of address space: the spawns fail
		 * long before anything else does. */
		struct rlimit rl = {.rlim_cur = 64ull << 30,
				    .rlim_max = 64ull << 30};
		CHECK_EQ(setrlimit(RLIMIT_AS, &rl), 0);
		struct canal_run_options o = {.loops = 1,
					      .stack_size = (size_t)1 << 30};
		CHECK_EQ(canal_run(enomem_main, NULL, &o), 0);
		CHECK_EQ(atomic_load(&enomem), 1);
		CHECK(atomic_load(&spawned) > 0);
		CHECK_EQ(atomic_load(&ran), atomic_load(&spawned));
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#else
	printf("test_task_limits: -ENOMEM by RLIMIT_AS not tried under a "
	       "sanitizer (its shadow memory needs the address space)\n");
#endif
}

int main(void)
{
	test_overflow(NULL);
	test_overflow("maps");
	test_enomem();
	printf("test_task_limits: ok\n");
	return 0;
}
