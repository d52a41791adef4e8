/* SPDX-License-Identifier: MIT */
/*
 * test_revlife_uring_gone - io_uring refused after the process's probe
 * said yes: canal_run says -ENOSYS when io_uring was asked for, and falls
 * back to epoll when the choice was automatic (an audit of the task
 * runtime, branch h9uring).
 *
 * task.h, canal_run: -ENOSYS when "the backend asked for ... is not
 * available (io_uring_setup refused: ENOSYS, EPERM, ...)"; the automatic
 * choice takes io_uring "when io_uring_setup works, else epoll", and a
 * refusal is kept for the process's life. The probe's answer is kept,
 * so once it had said yes, an io_uring_setup refused later (the sysctl
 * kernel.io_uring_disabled set, a seccomp filter installed) failed the
 * loop's ring with -EPERM, which canal_run returned, asked for io_uring
 * or not. Now the loop's refusal is kept as the probe's would be: -ENOSYS
 * when asked for, epoll when automatic.
 *
 * How: the parent runs once on io_uring (the probe says yes); a forked
 * child installs a seccomp filter that makes io_uring_setup fail with
 * EPERM and runs, in one child automatic then asked, in another asked
 * then automatic. CANAL_BACKEND is unset (the _epoll run is the same
 * test). Skipped where io_uring or seccomp filters are unavailable.
 */
#define _GNU_SOURCE
#include "check.h"
#include "seccomp_filter.h"

#include <canal/task.h>

#include <liburing.h>

static int ran, submitted;

static void nop_task(void *arg)
{
	(void)arg;
	struct io_uring_sqe sqe;
	memset(&sqe, 0, sizeof sqe);
	io_uring_prep_nop(&sqe);
	submitted = canal_io_submit(&sqe, -1, NULL);
	ran++;
}

static int run_automatic(void)
{
	struct canal_run_options o = {.loops = 2};
	submitted = 1;
	int r = canal_run(nop_task, NULL, &o);
	printf("automatic, io_uring refused: canal_run %d, canal_io_submit "
	       "%d (want 0, %d)\n", r, submitted, -EOPNOTSUPP);
	return r == 0 && submitted == -EOPNOTSUPP;
}

static int run_asked(void)
{
	struct canal_run_options o = {.loops = 2,
				      .backend = CANAL_BACKEND_IO_URING};
	int before = ran;
	int r = canal_run(nop_task, NULL, &o);
	printf("io_uring asked, refused: canal_run %d (want %d)\n", r,
	       -ENOSYS);
	return r == -ENOSYS && ran == before;
}

static int child(int asked_first)
{
	struct sock_filter f[] = {
		SECCOMP_TEST_PROLOGUE,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	if (!seccomp_test_install(f, sizeof f / sizeof f[0]))
		return 77;
	if (asked_first)
		return run_asked() && run_automatic() ? 0 : 1;
	return run_automatic() && run_asked() ? 0 : 1;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	CHECK_EQ(unsetenv("CANAL_BACKEND"), 0);
	struct canal_run_options uring = {.loops = 1,
					  .backend = CANAL_BACKEND_IO_URING};
	int r = canal_run(nop_task, NULL, &uring);
	if (r == -ENOSYS) {
		printf("test_revlife_uring_gone: no io_uring here: skipped\n");
		return 0;
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(submitted, 0);
	for (int asked_first = 0; asked_first < 2; asked_first++)
		if (!seccomp_test_child("test_revlife_uring_gone", child,
					asked_first))
			return 0;
	TEST_DONE("test_revlife_uring_gone");
}
