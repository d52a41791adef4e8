/* SPDX-License-Identifier: MIT */
/*
 * runtime/stack.h - task stacks: mmap'ed, committed on demand, reused.
 *
 * A block is [guard page][stack ... ][task area]: the task structure lives
 * at the top of its own stack block (one allocation per task), the stack
 * grows down from just below it. Pages are committed when first touched,
 * so a parked task costs the pages its stack used (one or two, usually);
 * but the top page, which every task touches, is committed ahead for 16
 * new blocks at a time, by the get that starts them or, for the next 16,
 * by a loop with nothing else to do (stack.c, COMMIT_AHEAD).
 *
 * Guard pages. Blocks are carved from slabs (one mapping for up to 64
 * blocks), each with a guard region on its first page (MADV_GUARD_INSTALL,
 * Linux 6.13: no mapping split, so no limit from vm.max_map_count and no
 * syscalls per stack). On older kernels a guard page needs a mapping of
 * its own (two VMAs per stack, max_map_count 65530 by default): stacks get
 * one while the count of such stacks stays within a budget derived from
 * max_map_count (and the kernel gives them one); beyond it, stacks come
 * from slabs without guard pages.
 * Those have a canary just below their lowest byte (the last word of the
 * block below, stack.c), checked whenever the task switches out: an
 * overflow of a guarded stack faults in the guard page (reported by the
 * SIGSEGV handler on the loop's alternate signal stack), one of a canary
 * stack by its canary at the next switch, or by the same handler if the
 * task faults first (its stack pointer below its stack). All print the
 * task id and the stack size, then abort. CANAL_STACK_GUARD=maps (or none) at
 * canal_run forces the older kinds, for their tests.
 *
 * Reuse: each loop keeps a cache of free blocks (no lock; at most 64, and
 * at most 16 MiB of stack: none for stacks over 16 MiB); beyond it they
 * go to the runtime's pool (a mutex), which keeps the pages of a budget of
 * them and gives the pages of the others back (MADV_DONTNEED) in batches
 * (canal__stack_pool_trim_batch), 10 ms after they ended, unless new
 * tasks took them meanwhile. Everything is unmapped when canal_run
 * returns.
 */
#ifndef CANAL_RUNTIME_STACK_H
#define CANAL_RUNTIME_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct canal__stack {
	char *lo;     /* lowest usable byte (holds the canary) */
	size_t size;  /* usable bytes, lo to the task area */
	char *guard;  /* its guard page, or NULL (canary stack) */
	size_t block; /* bytes of its own mapping, guard page included; 0 for
		       * a block carved from a slab */
};

struct canal__stack_block; /* a free block (its task area) */

struct canal__stack_cache {
	struct canal__stack_block *free;
	uint32_t n;
};

struct canal__stack_pool;

/* Bytes reserved at the top of every block for the task structure; its
 * last word is the canary of the block above (slab stacks). */
#define CANAL__TASK_AREA 512u

int canal__stack_pool_create(size_t stack_size,
			     struct canal__stack_pool **out);
/* New blocks' top pages are not committed ahead (stack.c, COMMIT_AHEAD):
 * for a compacting runtime, before the first get. */
void canal__stack_pool_no_commit_ahead(struct canal__stack_pool *pool);
/* From a loop with nothing to run: commit the window of new blocks' top
 * pages that the pool posted ahead of its gets (stack.c, COMMIT_AHEAD),
 * if nobody took it yet. True if it took it (one process_madvise: tens of
 * microseconds; a kernel that refuses turns committing ahead off), false
 * at once otherwise. Any thread, while the pool exists. */
bool canal__stack_pool_help(struct canal__stack_pool *pool);
/* Whether a window is posted (a hint: no lock, relaxed). */
bool canal__stack_pool_job_posted(struct canal__stack_pool *pool);
/* How many windows canal__stack_pool_help took (for the tests). */
size_t canal__stack_pool_helped(struct canal__stack_pool *pool);
/* Whether they are (false once the kernel refused: for the tests). */
bool canal__stack_pool_commits_ahead(struct canal__stack_pool *pool);
/* Every block must have been put back. */
void canal__stack_pool_destroy(struct canal__stack_pool *pool);

/* A block (from cache, if not NULL, then the pool, then new mappings).
 * Fills *st and returns the address of its task area (CANAL__TASK_AREA
 * bytes, 64-aligned), or NULL when memory or address space ran out. */
void *canal__stack_get(struct canal__stack_pool *pool,
		       struct canal__stack_cache *cache,
		       struct canal__stack *st);
/* Give a block back (its task area at task_area, described by st). */
void canal__stack_put(struct canal__stack_pool *pool,
		      struct canal__stack_cache *cache, void *task_area,
		      const struct canal__stack *st);
/* How many free blocks the pool keeps with their pages (beyond the loops'
 * caches) before it gives the pages of further blocks back to the kernel
 * (stack.c, DIRTY_BYTES_MAX). */
size_t canal__stack_pool_dirty_max(const struct canal__stack_pool *pool);
/* Blocks put back beyond that budget wait, with their pages, until this
 * many have come and the first of them has waited 10 ms
 * (CANAL_STACK_TRIM_MS); then the pages of this many are given back at
 * once, by the next put beyond the budget or by a loop with nothing to run
 * (canal__stack_pool_trim_idle), and they join the free blocks. A get
 * takes a waiting block first. */
unsigned canal__stack_pool_trim_batch(const struct canal__stack_pool *pool);
/* When a batch of waiting blocks may go (canal_now_ns() time), UINT64_MAX
 * while fewer than a batch wait: a loop about to sleep sleeps no longer.
 * A hint (no lock): canal__stack_pool_trim_idle checks again. */
uint64_t canal__stack_pool_trim_due(struct canal__stack_pool *pool);
/* From a loop with nothing to run, now = canal_now_ns(): give back the
 * pages of every batch that is due, for at most about 300 us (a
 * process_madvise per batch). True if it gave any back. Any thread, while
 * the pool exists. */
bool canal__stack_pool_trim_idle(struct canal__stack_pool *pool, uint64_t now);
/* From a thread that is no loop (a detach pool thread), after its put: a
 * full batch goes now, due or not. No loop would see its due time: a loop
 * asleep read it before the batch was full and sleeps on. */
void canal__stack_pool_trim_full(struct canal__stack_pool *pool);
/* Give the pages of n page-aligned ranges back to the kernel
 * (MADV_DONTNEED: they read as zeros next): one process_madvise where
 * the kernel has it and *vectored is true (set false when it has not),
 * else one madvise each. Each call flushes the TLB of every CPU running
 * the process: batch. */
struct iovec;
void canal__pages_drop(const struct iovec *v, unsigned n, bool *vectored);
/* Move a loop's cache to the pool (loop exit). */
void canal__stack_cache_flush(struct canal__stack_pool *pool,
			      struct canal__stack_cache *cache);

/* Write / check the canary at the bottom of a stack. */
void canal__stack_canary_set(const struct canal__stack *st);
/* Abort with the overflow report if the canary of a canary stack (no
 * guard page) is gone; guarded stacks have none to check. */
void canal__stack_canary_verify(const struct canal__stack *st, uint64_t id);
static inline void canal__stack_canary_check(const struct canal__stack *st,
					     uint64_t id)
{
	if (!st->guard)
		canal__stack_canary_verify(st, id);
}

/* Overflow reports through SIGSEGV: the handler is installed for the
 * runtime's life (not under sanitizers, which report overflows
 * themselves), each loop thread has an alternate signal stack. */
void canal__overflow_handler_install(void);
void canal__overflow_handler_remove(void);
int canal__altstack_setup(void **mem);
void canal__altstack_teardown(void *mem);

#endif /* CANAL_RUNTIME_STACK_H */
