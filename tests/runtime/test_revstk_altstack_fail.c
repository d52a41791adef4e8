/* SPDX-License-Identifier: MIT */
/*
 * test_revstk_altstack_fail - canal_run fails with -ENOMEM, running
 * nothing, when a loop thread's alternate signal stack cannot be set up
 * (an audit of the task runtime, branch h9uring).
 *
 * task.h: each loop thread (and detach thread) has an alternate signal
 * stack, where the overflow report runs. canal__altstack_setup's error
 * was ignored: the runtime ran without one, and a task's stack overflow
 * was then a bare SIGSEGV (no stack for the handler). Now canal_run
 * returns the error (-ENOMEM) before any task runs.
 *
 * How: in a forked child, a seccomp filter makes sigaltstack(2) fail with
 * ENOMEM; canal_run with one loop, then with two, must return -ENOMEM
 * without running main_task; with the filter gone (the parent), it runs.
 * Under ASan or TSan the runtime sets up no alternate stack (theirs):
 * skipped. Both backends.
 */
#define _GNU_SOURCE
#include "check.h"
#include "seccomp_filter.h"

#include <canal/task.h>

static int ran;

static void main_task(void *arg)
{
	(void)arg;
	ran++;
}

static int child(int arg)
{
	(void)arg;
	struct sock_filter f[] = {
		SECCOMP_TEST_PROLOGUE,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sigaltstack, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOMEM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	if (!seccomp_test_install(f, sizeof f / sizeof f[0]))
		return 77;
	for (unsigned loops = 1; loops <= 2; loops++) {
		struct canal_run_options o = {.loops = loops};
		int r = canal_run(main_task, NULL, &o);
		printf("loops %u, no sigaltstack: canal_run %d, ran %d "
		       "(want %d, 0)\n", loops, r, ran, -ENOMEM);
		if (r != -ENOMEM || ran != 0)
			return 1;
	}
	return 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
#ifdef SANITIZED
	printf("test_revstk_altstack_fail: sanitizer build, no alternate "
	       "stack of canal's: skipped\n");
	return 0;
#endif
	if (!seccomp_test_child("test_revstk_altstack_fail", child, 0))
		return 0;
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	CHECK_EQ(ran, 1);
	TEST_DONE("test_revstk_altstack_fail");
}
