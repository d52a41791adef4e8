/* SPDX-License-Identifier: MIT */
/*
 * ucx_rbuf.c - the UCX driver's buffers that a peer may reach: mapped
 * one by one, so that one a peer may still read or write after this
 * process is done with it can be retired (its pages freed, its addresses
 * kept, inaccessible) rather than handed back to malloc.
 *
 * Why (ucx_priv.h, struct ucx_orphan): UCX's rendezvous on one host lets
 * the peer copy through the kernel (cma: process_vm_readv/writev) to and
 * from the addresses this process gave it; nothing this process can do
 * after the fact (cancel, endpoint close, worker destruction,
 * deregistration) revokes that for a peer that stalled with those
 * addresses in hand. Freed to malloc, such a buffer becomes another
 * object's memory, which the resuming peer then overwrites (a receive's
 * in[] or scratch) or ships as a message (a send's slot). Retired, the
 * peer's access fails with EFAULT, which its UCX reports as an error of
 * that transfer.
 *
 * A retired range costs address space only (PROT_NONE, MAP_NORESERVE:
 * no memory, no commit charge): at most a few MiB per driver closed
 * while a stalled peer held a transfer, for the process's life.
 */
#define _GNU_SOURCE
#include "ucx_priv.h"

#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

void *canal__ucx_rbuf_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *canal__ucx_rbuf_grow(void *p, size_t old, size_t size)
{
	if (!p)
		return canal__ucx_rbuf_alloc(size);
	void *q = mremap(p, old, size, MREMAP_MAYMOVE);
	return q == MAP_FAILED ? NULL : q;
}

void canal__ucx_rbuf_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

void canal__ucx_rbuf_retire(void *p, size_t size)
{
	/* MAP_FIXED replaces the pages in one step (no moment when the
	 * range is unmapped and another mmap could take it). On failure
	 * the buffer stays as it was: a leak, never a reuse. */
	(void)mmap(p, size, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}
