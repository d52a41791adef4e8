/* SPDX-License-Identifier: MIT */
/*
 * syscall.h - the few system calls of canal's hot and first-use paths,
 * made inline instead of through libc's wrappers: futex(2) and
 * futex_waitv(2) (park.c), sched_yield(2) (park.c), fcntl(2) record locks
 * and getrandom(2) (the liveness of shared channels).
 *
 * Why not libc: a process forked by the thousand (fwd between processes,
 * a pre-forking server) starts with none of its parent's page-table
 * entries for libc's text, and faults in one page (a 64 KiB window) per
 * wrapper it calls first: syscall(), fcntl(), getrandom(), sched_yield(),
 * and __errno_location() for the errno it reads after them. Five faults a
 * child at about 2 us each on these VMs, where a pipe's child needs
 * read() and write() (AMD EPYC, 2026-12-01: fwd-canal-proc 1000/1000
 * took 8.6 page faults a child more than fwd-pipe-proc). Inline, the call
 * costs no page and sets no errno.
 *
 * canal__syscall returns the kernel's answer: >= 0 on success, -errno on
 * failure (errno is not touched). Other architectures than x86-64 and
 * aarch64 go through libc's syscall(), with the same convention.
 */
#ifndef CANAL_BASE_SYSCALL_H
#define CANAL_BASE_SYSCALL_H

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(__ILP32__) /* not x32: 32-bit longs */
static inline long canal__syscall6(long n, long a1, long a2, long a3,
				   long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	/* The kernel clobbers rcx (return address) and r11 (flags). */
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long canal__syscall6(long n, long a1, long a2, long a3,
				   long a4, long a5, long a6)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4),
			   "r"(x5)
			 : "memory", "cc");
	return x0;
}
#else
static inline long canal__syscall6(long n, long a1, long a2, long a3,
				   long a4, long a5, long a6)
{
	int saved = errno;
	long r = syscall(n, a1, a2, a3, a4, a5, a6);
	if (r == -1) {
		r = -errno;
		errno = saved;
	}
	return r;
}
#endif

/* Arguments as the kernel takes them: integers and pointers in longs. */
#define canal__syscall(n, a1, a2, a3, a4, a5, a6)                              \
	canal__syscall6((long)(n), (long)(a1), (long)(a2), (long)(a3),         \
			(long)(a4), (long)(a5), (long)(a6))

#endif /* CANAL_BASE_SYSCALL_H */
