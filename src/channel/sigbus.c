/* SPDX-License-Identifier: MIT */
/*
 * sigbus.c - a shared segment cut short by a peer: faults become -EBADMSG,
 * not a SIGBUS that kills the process.
 *
 * The memory file of an anonymous shared channel is a sealed memfd (no
 * holder can shrink it: segment.c). A named channel's file (in /dev/shm)
 * cannot be sealed, and any process allowed to write it can truncate it;
 * every access past the new end then raises SIGBUS in every process that
 * maps it. So the mappings of unsealed segments are registered here, and a
 * SIGBUS handler (installed once, chained to the previous one for faults
 * elsewhere) replaces a registered mapping that faulted with zero-filled
 * private memory at the same address and marks its handle damaged: the
 * faulting access completes (it reads zeros), and the operation, like every
 * later one on that handle, returns -EBADMSG (chan_damaged in internal.h).
 * Elements in flight in the cut segment are lost with it; the process lives.
 *
 * The registry is a fixed table of GUARD_MAX entries, read by the handler
 * without locks: an entry is published by a release store of its start
 * address after its length and handle are written, and withdrawn by
 * storing 0. A process with more unsealed mappings than that has the extra
 * ones unguarded (counted in docs/GUARANTEES.md).
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#define GUARD_MAX 1024

struct guard {
	_Atomic uintptr_t start; /* 0: free */
	size_t len;
	struct canal_chan *ch;
};

static struct guard guards[GUARD_MAX];
static struct sigaction previous;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	for (unsigned i = 0; i < GUARD_MAX; i++) {
		uintptr_t s = atomic_load_explicit(&guards[i].start,
						   memory_order_acquire);
		if (s && a >= s && a - s < guards[i].len) {
			/* mmap is a plain system call: safe here. */
			mmap((void *)s, guards[i].len, PROT_READ | PROT_WRITE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			atomic_store_explicit(&guards[i].ch->damaged, 1,
					      memory_order_relaxed);
			return;
		}
	}
	/* Not ours: as if we were not there. */
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, uc);
	} else if (previous.sa_handler != SIG_DFL &&
		   previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
	} else {
		/* Default action: restore it; the access faults again. */
		signal(SIGBUS, SIG_DFL);
	}
}

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &previous);
}

void canal__sigbus_guard(struct canal_chan *ch)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install);
	for (unsigned i = 0; i < GUARD_MAX; i++) {
		if (atomic_load_explicit(&guards[i].start,
					 memory_order_relaxed))
			continue;
		uintptr_t expect = 0;
		/* Claim the entry with a value no fault address matches, fill
		 * it, then publish its start. */
		if (!atomic_compare_exchange_strong_explicit(
			    &guards[i].start, &expect, UINTPTR_MAX,
			    memory_order_acquire, memory_order_relaxed))
			continue;
		guards[i].ch = ch;
		guards[i].len = ch->map_size;
		atomic_store_explicit(&guards[i].start, (uintptr_t)ch->st,
				      memory_order_release);
		return;
	}
}

void canal__sigbus_unguard(struct canal_chan *ch)
{
	for (unsigned i = 0; i < GUARD_MAX; i++)
		if (atomic_load_explicit(&guards[i].start,
					 memory_order_acquire) ==
		    (uintptr_t)ch->st) {
			atomic_store_explicit(&guards[i].start, 0,
					      memory_order_release);
			return;
		}
}
