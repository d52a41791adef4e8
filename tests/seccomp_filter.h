/* seccomp_filter.h - the part of a test's seccomp filter that every one
 * repeats: the architecture check and the load of the syscall number, the
 * install, and the forked child that installs it and runs the checks. */
#ifndef CANAL_TEST_SECCOMP_FILTER_H
#define CANAL_TEST_SECCOMP_FILTER_H

#include "check.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* This build's architecture for seccomp_data.arch; 0: one these tests do
 * not know (no filter is installed). */
#if defined(__x86_64__)
#define SECCOMP_TEST_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_TEST_ARCH AUDIT_ARCH_AARCH64
#else
#define SECCOMP_TEST_ARCH 0
#endif

/* A filter's first statements: a syscall of another architecture is
 * allowed; then the accumulator holds the syscall number. */
#define SECCOMP_TEST_PROLOGUE                                                  \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_TEST_ARCH, 1, 0),          \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                          \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))

/* Install the filter f of n statements on this thread (and the threads it
 * creates afterwards): 1, or 0 where it cannot be done (an architecture
 * this header does not know, a kernel without seccomp filters). */
static inline int seccomp_test_install(struct sock_filter *f, size_t n)
{
	struct sock_fprog prog = { (unsigned short)n, f };
	return SECCOMP_TEST_ARCH && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* Install a filter under which epoll_ctl(_, EPOLL_CTL_ADD, fd, _) fails with
 * ENOSPC for every fd >= fd_min (a loop that cannot watch one more
 * descriptor, as at max_user_watches) and every other call is allowed:
 * seccomp_test_install's result. */
static inline int seccomp_test_epoll_add_limit(unsigned fd_min)
{
	struct sock_filter f[] = {
		SECCOMP_TEST_PROLOGUE,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_epoll_ctl, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, EPOLL_CTL_ADD, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, fd_min, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSPC),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	return seccomp_test_install(f, sizeof f / sizeof f[0]);
}

/* Run child(arg) in a forked child (the filter stays there), which exits
 * with what it returns: 0 when its checks passed, 77 when it could not
 * install its filter, anything else when a check failed. 1: the child
 * passed; 0: it had no filter, and "<name>: no seccomp filter here:
 * skipped" is printed (the test is skipped). Any other end of the child
 * fails the test (CHECK). */
static inline int seccomp_test_child(const char *name, int (*child)(int),
				     int arg)
{
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child(arg));
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		printf("%s: no seccomp filter here: skipped\n", name);
		return 0;
	}
	CHECK_EQ(WEXITSTATUS(st), 0);
	return 1;
}

#endif
