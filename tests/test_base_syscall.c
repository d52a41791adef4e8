/* SPDX-License-Identifier: MIT */
/*
 * test_base_syscall - canal__syscall (base/syscall.h): the kernel's answer
 * as >= 0 or -errno, errno never touched, and each of the six arguments
 * reaching the kernel in its place (futex operations that read the 4th,
 * 5th and 6th, answers that differ with each).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <time.h>

#include "base/syscall.h"
#include "check.h"
#include "expect.h"

#define ERRNO_MARK 4242

static long sys(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
	errno = ERRNO_MARK;
	long r = canal__syscall(n, a1, a2, a3, a4, a5, a6);
	CHECK_EQ(errno, ERRNO_MARK); /* never set, success or failure */
	return r;
}

int main(void)
{
	uint32_t word = 7, other = 0;
	uint64_t rnd[2] = { 0, 0 };

	/* Results >= 0 come back as they are. */
	EXPECT(sys(SYS_getrandom, (long)rnd, 8, 0, 0, 0, 0), 8);
	EXPECT(sys(SYS_getrandom, (long)rnd, 16, 0, 0, 0, 0), 16);
	CHECK(rnd[0] != 0 || rnd[1] != 0);
	EXPECT(sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0), 0);
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0), 0);

	/* Failures come back as -errno. */
	EXPECT(sys(SYS_fcntl, -1, F_GETFL, 0, 0, 0, 0), -EBADF);
	EXPECT(sys(100000, 0, 0, 0, 0, 0, 0), -ENOSYS);
	/* 3rd argument: a value other than the word's. */
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_WAIT_PRIVATE, 8, 0, 0, 0),
	       -EAGAIN);
	/* 4th: a timeout of 1 us (relative), where NULL would wait for ever. */
	struct timespec us = { 0, 1000 };
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_WAIT_PRIVATE, 7, (long)&us, 0,
		   0),
	       -ETIMEDOUT);
	/* 6th: the bitset; 0 is refused, and a wrong value with a bitset of
	 * all ones fails on the value. */
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_WAIT_BITSET_PRIVATE, 8, 0, 0,
		   0),
	       -EINVAL);
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_WAIT_BITSET_PRIVATE, 8, 0, 0,
		   (long)FUTEX_BITSET_MATCH_ANY),
	       -EAGAIN);
	/* 5th: the second word of a requeue (a misaligned one is refused),
	 * and the 6th its expected value (a wrong one is refused). */
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_CMP_REQUEUE_PRIVATE, 0, 0,
		   (long)&other + 1, 7),
	       -EINVAL);
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_CMP_REQUEUE_PRIVATE, 0, 0,
		   (long)&other, 6),
	       -EAGAIN);
	EXPECT(sys(SYS_futex, (long)&word, FUTEX_CMP_REQUEUE_PRIVATE, 0, 0,
		   (long)&other, 7),
	       0);

	CHECK_EQ(expect_failures, 0);
	return 0;
}
