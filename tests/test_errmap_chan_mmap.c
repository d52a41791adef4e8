/* SPDX-License-Identifier: MIT */
/*
 * test_errmap_chan_mmap - canal_chan_create reports its ring's mmap failure
 * with mmap's own errno (channel.h: "other errors of memfd_create/mmap as
 * their errno"), not ENOMEM whatever the cause.
 *
 * Before its fix every MAP_FAILED became ENOMEM: a ring refused for a
 * reason other than memory (EAGAIN: mlockall(MCL_FUTURE) in force and
 * RLIMIT_MEMLOCK reached; EPERM: a security module's refusal) read as
 * "out of memory".
 *
 * How: in a forked child a seccomp filter makes the two mmaps of
 * canal_chan_create fail, each with its own errno: a CANAL_SHARED
 * channel's mmap(MAP_SHARED) of its memory file with EPERM, a large
 * thread channel's mmap(MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE) with
 * EAGAIN (no other mmap of the process uses exactly these flags with
 * PROT_READ | PROT_WRITE before the channel is made). A small thread
 * channel (heap) is still made under the filter: the control.
 */
#define _GNU_SOURCE
#include "check.h"
#include "seccomp_filter.h"

#include <canal/channel.h>

#include <sys/mman.h>

#define PRIVATE_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE)

/* 0: both failures carry the forced errno; 1: one does not; 77: no
 * seccomp filter here. */
static int child(int unused)
{
	(void)unused;
	/* mmap(_, _, PROT_READ | PROT_WRITE, MAP_SHARED, _, _): EPERM;
	 * mmap(_, _, PROT_READ | PROT_WRITE, PRIVATE_FLAGS, _, _): EAGAIN. */
	struct sock_filter f[] = {
		SECCOMP_TEST_PROLOGUE,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_READ | PROT_WRITE, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[3])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MAP_SHARED, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PRIVATE_FLAGS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	if (!seccomp_test_install(f, sizeof f / sizeof f[0]))
		return 77;
	int bad = 0;

	errno = 0;
	struct canal_chan *ch = canal_chan_create(8, 16, CANAL_SHARED);
	int e = errno;
	printf("shared channel: %s, errno %d (%s), want EPERM\n",
	       ch ? "made" : "NULL", e, strerror(e));
	if (ch || e != EPERM)
		bad = 1;
	canal_chan_destroy(ch);

	/* 1 MiB of ring: past the heap's 256 KiB, mapped (create.c). */
	errno = 0;
	ch = canal_chan_create(8, (size_t)1 << 16, 0);
	e = errno;
	printf("large thread channel: %s, errno %d (%s), want EAGAIN\n",
	       ch ? "made" : "NULL", e, strerror(e));
	if (ch || e != EAGAIN)
		bad = 1;
	canal_chan_destroy(ch);

	/* Control: the filter spares the heap's channels. */
	ch = canal_chan_create(8, 16, 0);
	printf("small thread channel: %s\n", ch ? "made" : "NULL");
	if (!ch)
		bad = 1;
	canal_chan_destroy(ch);
	return bad;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	if (!seccomp_test_child("test_errmap_chan_mmap", child, 0))
		return 77;
	TEST_DONE("test_errmap_chan_mmap");
}
