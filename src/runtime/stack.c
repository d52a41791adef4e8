/* SPDX-License-Identifier: MIT */
/*
 * stack.c - task stacks (stack.h) and the stack overflow report.
 *
 * The pool's invariants (pool->lock): `free` lists blocks nobody uses;
 * `ndirty` counts those of them whose pages were not given back to the
 * kernel (block->dirty), at most `dirty_max`; `trim` lists the `ntrim`
 * blocks put back beyond that budget whose pages are still to be given
 * back, trim_batch of them in one call once a batch is due (trim_since,
 * trim_due: TRIM_DELAY_NS; a batch being trimmed is on no list: only its
 * trimmer holds it); `guarded` counts live blocks
 * with a guard page of their own mapping against `guard_budget`; `slabs`
 * lists every slab mapping, unmapped at destroy once every block is back;
 * `commit_ahead` is set before the first get or under the lock (it only
 * goes from true to false); `job` and `job_top` are written under the
 * lock, `job_posted` too (read without it only as a hint, again under it
 * before the job is taken). The pages committed ahead (COMMIT_AHEAD),
 * by a get or by an idle loop, are those of blocks of a slab, which stays
 * mapped until the pool is destroyed (after every loop has stopped): the
 * call is made after the lock is dropped, and a page that a get has
 * handed out meanwhile is only committed sooner (MADV_POPULATE_WRITE
 * never changes a page that is there), or, if that block has meanwhile
 * ended and been trimmed, committed again for nothing (a page per block,
 * at most a window per call under way; its contents are zeros either
 * way). A loop's cache is touched by its own thread only.
 */
#define _GNU_SOURCE
#include "runtime/stack.h"
#include "runtime/internal.h"
#include "runtime/sanitizer.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Linux 6.13: guard regions (a guard page without a mapping of its own);
 * 6.15: process_madvise(2) on the caller's process without a pidfd. */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef PIDFD_SELF
#define PIDFD_SELF (-10000)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define STACK_CANARY 0x63616e616c535443ull /* "canalSTC" */
/* A loop's cache: up to CACHE_MAX free blocks, and up to CACHE_BYTES of
 * stack (counted at full size, as the pool's budget below): the cache
 * keeps its blocks' pages, and nothing gives them back before canal_run
 * returns; 64 blocks of 1 GiB could hold 64 GiB per loop after their
 * tasks ended (test_revstack_cache_budget). 64 blocks up to 256 KiB
 * stacks (the default), one of 16 MiB, none beyond. */
#define CACHE_MAX 64u
#define CACHE_BYTES (16u << 20)
/* Blocks per slab: up to SLAB_STACKS, in about SLAB_BYTES of address
 * space (at least one: big stacks get a slab each). */
#define SLAB_STACKS 64u
#define SLAB_BYTES (8u << 20)
/*
 * Free blocks beyond the loops' caches keep their pages, up to this many
 * bytes of stack (counted at their full size: an upper bound of what they
 * hold), before blocks go back to the kernel. Giving pages back is a
 * madvise(MADV_DONTNEED) per block, whose TLB shootdown interrupts every
 * other CPU running the process: on a VM the interrupt crosses the
 * hypervisor, and fwd on tasks (1000 writers, 1000 readers) spent a
 * quarter of its time there, as the tasks ended.
 */
#define DIRTY_BYTES_MAX (64u << 20)
/* Blocks beyond that budget give their pages back TRIM_BATCH at a time,
 * in one process_madvise(2) (one TLB shootdown for the batch) where the
 * kernel has it: fwd on tasks (10 000 writers, 10 000 readers) spent 28 %
 * of its CPU time in the shootdowns of one madvise per block. */
#define TRIM_BATCH 64u
/* ... and at most about this many bytes of stack wait for their trim
 * (counted at full size): big stacks are trimmed in smaller batches, 1 GiB
 * ones one at a time. */
#define TRIM_BYTES (4u << 20)
/*
 * A full batch waits this long, from the put of the first block waiting,
 * before its pages go. Meanwhile new tasks take the waiting blocks first
 * (canal__stack_get): those cost no trim and no fault. A runtime that ends
 * meanwhile (a job's tasks ending together at its end) gives their pages
 * back once, when it unmaps its slabs, instead of in a trim first: fwd on
 * tasks (10 000 writers, 10 000 readers) spent about a tenth of its CPU
 * time in the trims of its readers' ends. Due batches go at a put beyond
 * the budget (one batch per TRIM_PUT_GAP_NS at most), or from a loop with
 * nothing to run (canal__stack_pool_trim_idle: every due batch), which
 * sleeps no longer than the due time. The pages that wait are those the ended tasks
 * held: resident memory does not grow past what it was while they ran.
 * A put from a thread that is no loop (a detached task's end) gives a full
 * batch back at once (canal__stack_pool_trim_full): no loop would see its
 * due time. Known limit: a batch filled by a loop that then stays busy,
 * with no further put beyond the budget, waits until that loop goes idle
 * (other loops asleep are not woken for it).
 * CANAL_STACK_TRIM_MS=n at canal_run: n ms instead (0: a batch goes as soon
 * as it is full).
 */
#define TRIM_DELAY_NS 10000000ull
/* A put trims a due batch at most once per this long: a runtime whose
 * loops are never idle still gives pages back, trim_batch blocks per
 * 10 ms (64 of 64 KiB stacks: about 1 % of a CPU, Go's scavenger's
 * budget), while the many tasks that end together at a job's end leave
 * most of theirs to the unmapping, or to the loops once idle. fwd on
 * tasks, 100 000 writers and as many readers, trimmed at every put once
 * due: 10 % of the spawning loop's samples as its readers ended. With
 * CANAL_STACK_TRIM_MS=0 a full batch goes at once. */
#define TRIM_PUT_GAP_NS 10000000ull
/* A loop with nothing to run trims due batches for at most this long per
 * call (then looks at its queue again). */
#define TRIM_IDLE_NS 300000ull
/*
 * A new block's top page (its task area and the top of its stack) is the
 * page every task touches first. Carving blocks from a slab, the pool
 * commits the top pages of the next COMMIT_AHEAD blocks in one
 * process_madvise(MADV_POPULATE_WRITE) (any advice on one's own process:
 * Linux 6.13; PIDFD_SELF: 6.15) instead of a page fault each: fwd on
 * tasks (10 000 writers, 1 reader) took 5-8k faults, one per new block,
 * at about 1 us each on a VM. The window after the one being carved is
 * posted for a loop with nothing to run, which commits it meanwhile
 * (canal__stack_pool_help): a task spawning thousands (fwd on tasks, one
 * writer, 10 000 readers) spent most of its time in these calls, its
 * loop's partner idle. At most 2 * COMMIT_AHEAD - 1 pages are committed
 * for blocks not used yet. Not in a compacting runtime, whose tasks touch
 * their stacks only when they first run.
 */
#define COMMIT_AHEAD 16u

/* The top pages to commit ahead (COMMIT_AHEAD above): filled under the
 * lock by block_new, committed by canal__stack_get after it
 * or by an idle loop (canal__stack_pool_help). */
struct ahead {
	struct iovec v[COMMIT_AHEAD];
	unsigned n;
};

enum guard_how {
	GUARD_REGIONS, /* slabs whose blocks have guard regions (6.13) */
	GUARD_MAPS,    /* a mapping per block, its guard page mprotect'ed,
			* within guard_budget (lowered to the count made
			* when the kernel refuses one); then canary slabs */
	GUARD_NONE,    /* canary slabs only */
};

struct canal__stack_block {
	struct canal__stack_block *next;
	struct canal__stack st;
	bool dirty; /* in the pool's free list with its pages (ndirty) */
};

struct slab {
	struct slab *next;
	void *map;
	size_t len;
};

struct canal__stack_pool {
	pthread_mutex_t lock;
	size_t stack_bytes; /* block size without guard page */
	size_t page;
	struct canal__stack_block *free;
	size_t nfree;
	size_t ndirty, dirty_max;
	struct canal__stack_block *trim;
	unsigned ntrim, trim_batch; /* trim_batch: 1..TRIM_BATCH */
	/* trim_since: canal_now_ns() when the oldest block waiting for a
	 * trim came (or when the last batch went, for those left); trim_due:
	 * when a full batch may go (trim_since + trim_delay), UINT64_MAX
	 * while fewer than trim_batch wait. Both written under the lock;
	 * trim_due is peeked without it (a hint, checked again under it). */
	uint64_t trim_since, trim_delay;
	uint64_t trim_put_next; /* puts trim no sooner (TRIM_PUT_GAP_NS) */
	_Atomic uint64_t trim_due;
	unsigned cache_max; /* blocks per loop's cache (CACHE_BYTES) */
	/* Blocks whose pages were all given back: described here, not by a
	 * link in the block (which would keep its top page resident: 4 KiB
	 * per free block, 4 GiB after a million tasks ended). */
	struct canal__stack *clean;
	size_t nclean, cap_clean;
	size_t clean_reserved; /* slots held by trims under way */
	bool trim_vectored; /* process_madvise works (else one madvise each) */
	enum guard_how guard_how;
	bool vectored_guards; /* guard regions by process_madvise */
	size_t guarded, guard_budget;
	bool budget_known; /* guard_budget taken (map_count_budget) */
	struct slab *slabs;
	char *slab_cur; /* next uncarved block of the newest slab */
	unsigned slab_left;
	unsigned slab_stacks; /* blocks per slab */
	bool commit_ahead; /* COMMIT_AHEAD: on, until the kernel refuses */
	/* The window after the one being carved, posted for an idle loop
	 * (canal__stack_pool_help): job_top is its first top page (kept
	 * once taken), job_posted says nobody took it yet. */
	struct ahead job;
	char *job_top;
	_Atomic bool job_posted; /* written under lock; peeked without */
	_Atomic size_t helped;   /* windows taken by canal__stack_pool_help */
};

/* process_madvise(2) on this process: bytes advised, or -1 (errno). */
static long madvise_self(const struct iovec *v, unsigned n, int advice)
{
	return syscall(SYS_process_madvise, PIDFD_SELF, v, n, advice, 0u);
}

/* The process's mappings now (lines of /proc/self/maps; 0 if unread). */
static long map_count_now(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[16384];
	long n = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

/* How many stacks may have a mapping of their own (GUARD_MAPS), taken
 * when the pool first makes one (kernels without guard regions, or
 * CANAL_STACK_GUARD=maps): never on the default path. */
static size_t map_count_budget(void)
{
	long max = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 65530;
		fclose(f);
	}
	/* Keep 20000 mappings for the rest of the process (libraries,
	 * malloc arenas, a sanitizer's shadow) beyond those it has already
	 * (it counted none of them: a program with more than 20000 reached
	 * max_map_count within the budget, test_revstack_map_count); two
	 * per guarded stack. */
	long spare = max - map_count_now() - 20000;
	return spare > 0 ? (size_t)spare / 2 : 0;
}

int canal__stack_pool_create(size_t stack_size,
			     struct canal__stack_pool **out)
{
	struct canal__stack_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->page = (size_t)sysconf(_SC_PAGESIZE);
	p->stack_bytes = (stack_size + p->page - 1) & ~(p->page - 1);
	p->dirty_max = DIRTY_BYTES_MAX / p->stack_bytes;
	p->trim_vectored = true;
	p->trim_delay = TRIM_DELAY_NS;
	const char *td = getenv("CANAL_STACK_TRIM_MS");
	if (td && *td) {
		/* Saturating: "-1" or a huge n means never, not a wrap. */
		unsigned long long ms = strtoull(td, NULL, 10);
		p->trim_delay = ms > UINT64_MAX / 1000000ull ? UINT64_MAX
							     : ms * 1000000ull;
	}
	atomic_init(&p->trim_due, UINT64_MAX);
	size_t tb = TRIM_BYTES / p->stack_bytes;
	p->trim_batch = tb < 1 ? 1 : tb > TRIM_BATCH ? TRIM_BATCH
						     : (unsigned)tb;
	size_t cb = CACHE_BYTES / p->stack_bytes;
	p->cache_max = cb > CACHE_MAX ? CACHE_MAX : (unsigned)cb;
	size_t per = SLAB_BYTES / (p->stack_bytes + p->page);
	p->slab_stacks = per < 1 ? 1 : per > SLAB_STACKS ? SLAB_STACKS
							  : (unsigned)per;
	p->vectored_guards = true;
	p->commit_ahead = true;
	/* CANAL_STACK_GUARD=maps or none: the older kinds, for their tests. */
	const char *g = getenv("CANAL_STACK_GUARD");
	p->guard_how = g && !strcmp(g, "maps")	 ? GUARD_MAPS
		       : g && !strcmp(g, "none") ? GUARD_NONE
						 : GUARD_REGIONS;
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;
}

void canal__stack_pool_destroy(struct canal__stack_pool *p)
{
	if (!p)
		return;
	/* Blocks with a mapping of their own (p->guarded of them, never
	 * unmapped before): found on the lists. Without any, the walk is
	 * skipped: it touches a page per free block (fwd on tasks, 100 000
	 * writers and as many readers: 5 % of the spawning loop's samples,
	 * at canal_run's end). */
	if (p->guarded) {
		struct canal__stack_block *lists[2] = {p->free, p->trim};
		for (int i = 0; i < 2; i++)
			for (struct canal__stack_block *b = lists[i], *n; b;
			     b = n) {
				n = b->next;
				if (b->st.block) /* a mapping of its own */
					munmap(b->st.guard, b->st.block);
			}
		for (size_t i = 0; i < p->nclean; i++)
			if (p->clean[i].block)
				munmap(p->clean[i].guard, p->clean[i].block);
	}
	free(p->clean);
	for (struct slab *s = p->slabs, *n; s; s = n) {
		n = s->next;
		munmap(s->map, s->len);
		free(s);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void *block_task_area(const struct canal__stack *st)
{
	return st->lo + st->size;
}

/* Guard regions on the first page of each of a new slab's blocks (the
 * slab is not shared yet): one process_madvise, else one madvise each.
 * 0, -ENOMEM (page tables: the pool keeps its kind), or -EOPNOTSUPP when
 * the kernel has no guard regions. */
static int slab_guards(struct canal__stack_pool *p, char *map, size_t bsz)
{
	if (p->vectored_guards) {
		struct iovec v[SLAB_STACKS];
		for (unsigned i = 0; i < p->slab_stacks; i++)
			v[i] = (struct iovec){map + i * bsz, p->page};
		long r = madvise_self(v, p->slab_stacks, MADV_GUARD_INSTALL);
		if (r == (long)(p->slab_stacks * p->page))
			return 0;
		p->vectored_guards = false; /* (re-installing is harmless) */
	}
	for (unsigned i = 0; i < p->slab_stacks; i++)
		if (madvise(map + i * bsz, p->page, MADV_GUARD_INSTALL) != 0)
			return errno == ENOMEM || errno == EAGAIN ? -ENOMEM
								  : -EOPNOTSUPP;
	return 0;
}

/* Under pool->lock: a new slab of slab_stacks blocks, guarded (guard
 * regions: [guard page][stack] per block) or not (one page more, below
 * the first block: it holds the canary of that block, see
 * canal__stack_canary_set). 0, -ENOMEM, or -EOPNOTSUPP when guard regions
 * are not supported (nothing is left mapped). */
static int slab_new(struct canal__stack_pool *p, bool guarded)
{
	struct slab *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	size_t bsz = p->stack_bytes + (guarded ? p->page : 0);
	s->len = bsz * p->slab_stacks + (guarded ? 0 : p->page);
	s->map = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		      -1, 0);
	if (s->map == MAP_FAILED) {
		free(s);
		return -ENOMEM;
	}
	int g = guarded ? slab_guards(p, s->map, bsz) : 0;
	if (g) {
		munmap(s->map, s->len);
		free(s);
		return g;
	}
	s->next = p->slabs;
	p->slabs = s;
	p->slab_cur = (char *)s->map + (guarded ? 0 : p->page);
	p->slab_left = p->slab_stacks;
	return 0;
}

/* Under pool->lock: a block of its own mapping, its guard page made
 * inaccessible (two VMAs: counted against guard_budget). */
static int block_mapped(struct canal__stack_pool *p, struct canal__stack *st)
{
	size_t len = p->stack_bytes + p->page;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		       -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	if (mprotect(m, p->page, PROT_NONE) != 0) {
		munmap(m, len);
		return -ENOMEM;
	}
	p->guarded++;
	st->guard = m;
	st->block = len;
	st->lo = m + p->page;
	st->size = p->stack_bytes - CANAL__TASK_AREA;
	return 0;
}

void canal__stack_pool_no_commit_ahead(struct canal__stack_pool *p)
{
	p->commit_ahead = false;
}

bool canal__stack_pool_commits_ahead(struct canal__stack_pool *p)
{
	pthread_mutex_lock(&p->lock);
	bool on = p->commit_ahead;
	pthread_mutex_unlock(&p->lock);
	return on;
}

/* Under pool->lock: the window of up to COMMIT_AHEAD blocks from the one
 * whose top page is at top, at least two blocks (one page is a fault
 * either way); n = 0 when fewer are left in the slab. */
static void window(struct canal__stack_pool *p, char *top, size_t stride,
		   unsigned left, struct ahead *a)
{
	a->n = left < 2 ? 0 : left < COMMIT_AHEAD ? left : COMMIT_AHEAD;
	for (unsigned i = 0; i < a->n; i++)
		a->v[i] = (struct iovec){top + i * stride, p->page};
}

/* Under pool->lock, carving the block whose top page is at top: every
 * COMMIT_AHEAD blocks, the window it starts is to be committed (into a,
 * for the caller), unless it was posted at the previous window and an
 * idle loop took it; the next window of the slab is posted in its turn.
 * Without idle loops the caller takes each posted window back when it
 * gets there: one call per window either way. stride: from a block to the
 * next. */
static void plan_ahead(struct canal__stack_pool *p, char *top, size_t stride,
		       struct ahead *a)
{
	unsigned carved = p->slab_stacks - p->slab_left;
	if (!p->commit_ahead || carved % COMMIT_AHEAD)
		return;
	bool posted = atomic_load_explicit(&p->job_posted,
					   memory_order_relaxed);
	if (p->job_top != top)
		window(p, top, stride, p->slab_left, a);
	else if (posted)
		*a = p->job; /* nobody took it: ours now */
	/* else an idle loop took it (done, or under way: a page it has not
	 * reached yet costs the task a fault, no more) */
	atomic_store_explicit(&p->job_posted, false, memory_order_relaxed);
	p->job_top = NULL;
	if (p->slab_left <= COMMIT_AHEAD)
		return;
	char *next = top + COMMIT_AHEAD * stride;
	window(p, next, stride, p->slab_left - COMMIT_AHEAD, &p->job);
	if (p->job.n) {
		p->job_top = next;
		atomic_store_explicit(&p->job_posted, true,
				      memory_order_relaxed);
	}
}

/* Without the lock. A failure costs the faults it was to save, no more:
 * ENOMEM, EAGAIN or EINTR (no memory or a signal now) leave the faults to
 * come; any other error (EINVAL or EBADF from a kernel without the advice
 * on oneself or without PIDFD_SELF, EPERM or ENOSYS from a seccomp
 * filter, EFAULT, EHWPOISON) turns it off for the pool. */
static void commit_ahead(struct canal__stack_pool *p, const struct ahead *a)
{
	if (a->n == 0 || madvise_self(a->v, a->n, MADV_POPULATE_WRITE) >= 0 ||
	    errno == ENOMEM || errno == EAGAIN || errno == EINTR)
		return;
	pthread_mutex_lock(&p->lock);
	p->commit_ahead = false;
	atomic_store_explicit(&p->job_posted, false, memory_order_relaxed);
	p->job_top = NULL;
	pthread_mutex_unlock(&p->lock);
}

bool canal__stack_pool_job_posted(struct canal__stack_pool *p)
{
	return atomic_load_explicit(&p->job_posted, memory_order_relaxed);
}

bool canal__stack_pool_help(struct canal__stack_pool *p)
{
	if (!atomic_load_explicit(&p->job_posted, memory_order_relaxed))
		return false;
	struct ahead a = {.n = 0};
	pthread_mutex_lock(&p->lock);
	if (atomic_load_explicit(&p->job_posted, memory_order_relaxed)) {
		a = p->job;
		atomic_store_explicit(&p->job_posted, false,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&p->lock);
	if (!a.n)
		return false;
	commit_ahead(p, &a);
	atomic_fetch_add_explicit(&p->helped, 1, memory_order_relaxed);
	return true;
}

size_t canal__stack_pool_helped(struct canal__stack_pool *p)
{
	return atomic_load_explicit(&p->helped, memory_order_relaxed);
}

/* Under pool->lock. The kind of a pool's slabs never changes once it has
 * one (guard_how only moves from GUARD_REGIONS, at the first slab). */
static int block_new(struct canal__stack_pool *p, struct canal__stack *st,
		     struct ahead *a)
{
	bool guarded = p->guard_how == GUARD_REGIONS;
	if (p->slab_left == 0) {
		int r;
		if (!guarded && p->guard_how == GUARD_MAPS &&
		    !p->budget_known) {
			p->guard_budget = map_count_budget();
			p->budget_known = true;
		}
		if (!guarded && p->guard_how == GUARD_MAPS &&
		    p->guarded < p->guard_budget) {
			if (block_mapped(p, st) == 0)
				return 0;
			/* No mapping for it: the process reached
			 * vm.max_map_count within the budget (the rest of it
			 * holds more than the mappings the budget keeps for
			 * it), or no address space is left. A canary slab
			 * (one mapping for slab_stacks blocks); if there is
			 * one, the budget ends here. (Spawns used to fail
			 * with -ENOMEM from then on:
			 * test_revstack_map_count.) */
			if ((r = slab_new(p, false)) != 0)
				return r;
			p->guard_budget = p->guarded;
		} else if ((r = slab_new(p, guarded)) == -EOPNOTSUPP) {
			p->guard_how = GUARD_MAPS;
			return block_new(p, st, a);
		} else if (r) {
			return r;
		}
	}
	st->guard = guarded ? p->slab_cur : NULL;
	st->lo = p->slab_cur + (guarded ? p->page : 0);
	st->block = 0; /* part of a slab */
	st->size = p->stack_bytes - CANAL__TASK_AREA;
	size_t stride = p->stack_bytes + (guarded ? p->page : 0);
	plan_ahead(p, st->lo + p->stack_bytes - p->page, stride, a);
	p->slab_cur += stride;
	p->slab_left--;
	return 0;
}

/* Under pool->lock, after ntrim or trim_since changed: when a batch may
 * go (canal__stack_pool_trim_due). */
static void trim_plan(struct canal__stack_pool *p)
{
	uint64_t due = p->ntrim < p->trim_batch ||
			       p->trim_since > UINT64_MAX - p->trim_delay
			       ? UINT64_MAX /* never: no wrap into the past */
			       : p->trim_since + p->trim_delay;
	atomic_store_explicit(&p->trim_due, due, memory_order_relaxed);
}

/* Under pool->lock, with a full batch waiting: has it waited long enough? */
static bool trim_is_due(const struct canal__stack_pool *p, uint64_t now)
{
	return p->trim_delay == 0 ||
	       (now > p->trim_since && now - p->trim_since >= p->trim_delay);
}

/* Under pool->lock, with at least trim_batch blocks waiting: take
 * trim_batch of them (the last put back; walking to the oldest would
 * touch a page per block), for trim() once the lock is dropped. Those
 * left wait from now. */
static struct canal__stack_block *trim_take(struct canal__stack_pool *p)
{
	struct canal__stack_block *batch = p->trim, *last = batch;
	for (unsigned i = 1; i < p->trim_batch; i++)
		last = last->next;
	p->trim = last->next;
	last->next = NULL;
	p->ntrim -= p->trim_batch;
	if (p->ntrim < p->trim_batch)
		p->trim_since = canal_now_ns();
	trim_plan(p);
	return batch;
}

void *canal__stack_get(struct canal__stack_pool *p,
		       struct canal__stack_cache *c, struct canal__stack *st)
{
	struct canal__stack_block *b = NULL;
	struct ahead a = {.n = 0};
	if (c && c->free) {
		b = c->free;
		c->free = b->next;
		c->n--;
	} else {
		pthread_mutex_lock(&p->lock);
		if (p->trim) {
			/* Waiting to give its pages back: better used (a
			 * trim saved, the budget unchanged). */
			b = p->trim;
			p->trim = b->next;
			p->ntrim--;
			trim_plan(p);
		} else if (p->nclean) {
			*st = p->clean[--p->nclean];
		} else if (p->free) {
			b = p->free;
			p->free = b->next;
			p->nfree--;
			if (b->dirty)
				p->ndirty--;
		} else if (block_new(p, st, &a) != 0) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		pthread_mutex_unlock(&p->lock);
		commit_ahead(p, &a);
	}
	if (b)
		*st = b->st;
	canal__stack_canary_set(st);
	return block_task_area(st);
}

void canal__pages_drop(const struct iovec *v, unsigned n, bool *vectored)
{
	size_t bytes = 0;
	for (unsigned i = 0; i < n; i++)
		bytes += v[i].iov_len;
	if (*vectored && madvise_self(v, n, MADV_DONTNEED) == (long)bytes)
		return;
	for (unsigned i = 0; i < n; i++)
		if (v[i].iov_len)
			madvise(v[i].iov_base, v[i].iov_len, MADV_DONTNEED);
	*vectored = false;
}

/* Give back the pages of a batch of blocks taken off the trim list (no
 * other thread sees them meanwhile), in one process_madvise where the
 * kernel has it; then their descriptors join p->clean. Every page goes,
 * but the top one of a canary block (it holds the canary of the block
 * above) or of every block if there is no memory for the descriptors
 * (the block then joins the free list, whose link is in that page).
 * vectored: p->trim_vectored, read under the lock by the caller. */
static void trim(struct canal__stack_pool *p, struct canal__stack_block *batch,
		 bool vectored)
{
	struct iovec v[TRIM_BATCH];
	struct canal__stack d[TRIM_BATCH];
	struct canal__stack_block *last = NULL;
	unsigned n = 0;
	for (struct canal__stack_block *x = batch; x; x = x->next, n++) {
		d[n] = x->st;
		v[n] = (struct iovec){x->st.lo, x->st.size + CANAL__TASK_AREA};
		last = x;
	}
	/* Room for their descriptors first; without it, each keeps its top
	 * page, which holds its link in the free list. */
	pthread_mutex_lock(&p->lock);
	size_t need = p->nclean + p->clean_reserved + n;
	bool room = need <= p->cap_clean;
	if (!room) {
		size_t cap = p->cap_clean ? 2 * p->cap_clean : 1024;
		while (cap < need)
			cap *= 2;
		struct canal__stack *c =
			realloc(p->clean, cap * sizeof(*c));
		if (c) {
			p->clean = c;
			p->cap_clean = cap;
			room = true;
		}
	}
	if (room)
		p->clean_reserved += n;
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < n; i++)
		if (!room || !d[i].guard)
			v[i].iov_len = v[i].iov_len > p->page
					       ? v[i].iov_len - p->page
					       : 0;
	canal__pages_drop(v, n, &vectored);
	pthread_mutex_lock(&p->lock);
	if (!vectored)
		p->trim_vectored = false;
	if (room) {
		/* Reserved above (gets only take from clean). */
		p->clean_reserved -= n;
		memcpy(p->clean + p->nclean, d, n * sizeof(*d));
		p->nclean += n;
	} else {
		last->next = p->free;
		p->free = batch;
		p->nfree += n;
	}
	pthread_mutex_unlock(&p->lock);
}

/* Under pool->lock, with a full batch waiting: take it, drop the lock,
 * give its pages back. */
static void trim_batch_unlock(struct canal__stack_pool *p)
{
	struct canal__stack_block *batch = trim_take(p);
	bool vectored = p->trim_vectored;
	pthread_mutex_unlock(&p->lock);
	trim(p, batch, vectored);
}

void canal__stack_put(struct canal__stack_pool *p,
		      struct canal__stack_cache *c, void *task_area,
		      const struct canal__stack *st)
{
	struct canal__stack_block *b = task_area;
	struct canal__stack copy = *st;
	b->st = copy;
	if (c && c->n < p->cache_max) {
		b->dirty = false; /* caches are not counted in ndirty */
		b->next = c->free;
		c->free = b;
		c->n++;
		return;
	}
	/* Beyond the cache, the pool keeps the pages of up to dirty_max
	 * blocks; the pages of the others go back to the kernel (trim),
	 * trim_batch
	 * blocks at a time. */
	pthread_mutex_lock(&p->lock);
	b->dirty = p->ndirty < p->dirty_max;
	if (b->dirty) {
		p->ndirty++;
		b->next = p->free;
		p->free = b;
		p->nfree++;
		pthread_mutex_unlock(&p->lock);
		return;
	}
	b->next = p->trim;
	p->trim = b;
	if (p->ntrim++ == 0)
		p->trim_since = canal_now_ns();
	if (p->ntrim >= p->trim_batch) {
		uint64_t now = canal_now_ns();
		if (trim_is_due(p, now) &&
		    (p->trim_delay == 0 || now >= p->trim_put_next)) {
			p->trim_put_next = now + TRIM_PUT_GAP_NS;
			trim_batch_unlock(p);
			return;
		}
	}
	trim_plan(p);
	pthread_mutex_unlock(&p->lock);
}

uint64_t canal__stack_pool_trim_due(struct canal__stack_pool *p)
{
	return atomic_load_explicit(&p->trim_due, memory_order_relaxed);
}

bool canal__stack_pool_trim_idle(struct canal__stack_pool *p, uint64_t now)
{
	if (atomic_load_explicit(&p->trim_due, memory_order_relaxed) > now)
		return false;
	bool done = false;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		if (p->ntrim < p->trim_batch || !trim_is_due(p, now)) {
			pthread_mutex_unlock(&p->lock);
			return done;
		}
		trim_batch_unlock(p);
		done = true;
		if (canal_now_ns() - now >= TRIM_IDLE_NS)
			return true;
	}
}

void canal__stack_pool_trim_full(struct canal__stack_pool *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->ntrim < p->trim_batch) {
		pthread_mutex_unlock(&p->lock);
		return;
	}
	trim_batch_unlock(p);
}

unsigned canal__stack_pool_trim_batch(const struct canal__stack_pool *p)
{
	return p->trim_batch;
}

size_t canal__stack_pool_dirty_max(const struct canal__stack_pool *p)
{
	return p->dirty_max;
}

void canal__stack_cache_flush(struct canal__stack_pool *p,
			      struct canal__stack_cache *c)
{
	pthread_mutex_lock(&p->lock);
	while (c->free) {
		struct canal__stack_block *b = c->free;
		c->free = b->next;
		b->next = p->free;
		p->free = b;
		p->nfree++;
	}
	c->n = 0;
	pthread_mutex_unlock(&p->lock);
}

/*
 * Only slab stacks (no guard page) carry a canary, and it lives outside
 * the stack: in the last word of the block below (the top of that block's
 * task area, whose page is committed anyway), or of the slab's first page
 * for its first block. An overflow of this stack writes there first, and
 * no page is committed for the canary (a parked task costs the one page at
 * its top). The task structure never reaches that word (task.c).
 */
static uint64_t *canary_word(const struct canal__stack *st)
{
	return (uint64_t *)(void *)(st->lo - sizeof(uint64_t));
}

void canal__stack_canary_set(const struct canal__stack *st)
{
	if (st->guard)
		return;
	uint64_t v = STACK_CANARY;
	memcpy(canary_word(st), &v, sizeof(v));
}

static void overflow_report(uint64_t id, size_t size, const char *how)
{
	char msg[200];
	int n = snprintf(msg, sizeof(msg),
			 "canal: task %llu overflowed its stack of %zu bytes "
			 "(%s); raise canal_run_options.stack_size\n",
			 (unsigned long long)id, size, how);
	if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
		n = 0;
	abort();
}

void canal__stack_canary_verify(const struct canal__stack *st, uint64_t id)
{
	uint64_t v;
	memcpy(&v, canary_word(st), sizeof(v));
	if (__builtin_expect(v != STACK_CANARY, 0))
		overflow_report(id, st->size, "its canary was overwritten");
}

/* The SIGSEGV handler runs on the loop's alternate stack (the task's own
 * stack is the one that overflowed). A fault in the running task's guard
 * page is an overflow; anything else goes to the previous handler (below:
 * a function is called, on this stack, without its sa_mask). (Putting a
 * function back in our place lost the overflow reports for the
 * rest of the run after the first fault a program's handler took care
 * of, a page mapped on first touch: test_revstack_segv_chain.) */
static struct sigaction old_segv;
static _Atomic int handler_installed;

#ifndef CANAL_RUNTIME_SANITIZED
/* The stack pointer of the interrupted code (0 where unknown). */
static uintptr_t fault_sp(const void *uc)
{
#if defined(__x86_64__)
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.sp;
#else
	(void)uc;
	return 0;
#endif
}

/* A fault with the stack pointer this far below the running task's stack
 * at most, and the faulting address below the stack and at most
 * SP_NEAR_FAULT below the stack pointer (a push, a frame's store), is an
 * overflow that no guard page caught: a canary stack's (no guard page:
 * its canary is checked only when the task switches out, and a task that
 * recurses without switching runs down through the blocks below until it
 * reaches memory that faults), or a frame that jumped over a guard page
 * into unmapped memory. Farther, the task may have switched to a stack of
 * its own (a coroutine library, sigaltstack): not ours to report. */
#define SP_BELOW_MAX ((uintptr_t)1 << 30)
#define SP_NEAR_FAULT ((uintptr_t)64 * 1024)

/* Bytes below the stack pointer that a signal's frame may need (the
 * kernel's AT_MINSIGSTKSZ, its red zone and alignment): set at install. */
static uintptr_t sigframe_room = 8192;

/* This thread's alternate signal stack's guard page, [alt_guard,
 * alt_guard_end) (canal__altstack_setup), or NULL. */
static _Thread_local char *alt_guard, *alt_guard_end;

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	/* A handler that ran off the bottom of this thread's alternate
	 * stack (this one runs on it again: the kernel, the stack pointer
	 * being off the alternate stack, starts a new frame at its top). */
	char *fault = si->si_addr;
	if (alt_guard && fault >= alt_guard && fault < alt_guard_end) {
		static const char msg[] =
			"canal: a signal handler overflowed the alternate signal "
			"stack of its thread (64 KiB, fault in its guard page)\n";
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
			abort();
		abort();
	}
	/* The call, not canal__this_loop()'s inline asm: the asm names the
	 * loop's TLS variable where the linker's LTO pass does not see it,
	 * and a program that uses the stack pool alone (a test) then lacked
	 * loop.o (undefined canal__tls_loop in Debug builds). Cold path. */
	struct canal__loop *l = canal__this_loop_call();
	struct canal__task *t = l ? l->current : NULL;
	if (t) {
		char *a = si->si_addr;
		if (t->stack.guard) {
			size_t page = (size_t)(t->stack.lo - t->stack.guard);
			/* The guard page, or just below it (a big frame). */
			if (a >= t->stack.guard - page && a < t->stack.lo)
				overflow_report(t->id, t->stack.size,
						"fault in its guard page");
		}
		uintptr_t sp = fault_sp(uc), lo = (uintptr_t)t->stack.lo;
		uintptr_t fa = (uintptr_t)a;
		if (sp && sp < lo && lo - sp <= SP_BELOW_MAX && fa < lo &&
		    fa + SP_NEAR_FAULT >= sp)
			overflow_report(t->id, t->stack.size,
					"stack pointer below its stack");
		/* The kernel could not push a signal's frame on the task's
		 * stack (its handler runs there): it forces a SIGSEGV with
		 * SI_KERNEL and no address (test_revstk_signal_frame). */
		if (si->si_code == SI_KERNEL && sp >= lo &&
		    sp - lo < sigframe_room)
			overflow_report(t->id, t->stack.size,
					"no room for a signal's frame");
	}
	/* Anything else: the previous handler's. A function is called from
	 * here; a default action, or a one-shot handler (SA_RESETHAND:
	 * called from here, it would run again at each fault of an
	 * instruction it expected the reset to kill), is put back and we
	 * return, the instruction faulting again. */
	bool chain = !(old_segv.sa_flags & SA_RESETHAND);
	if (chain && (old_segv.sa_flags & SA_SIGINFO) &&
	    old_segv.sa_sigaction) {
		old_segv.sa_sigaction(sig, si, uc);
		return;
	}
	if (chain && !(old_segv.sa_flags & SA_SIGINFO) &&
	    old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN) {
		old_segv.sa_handler(sig);
		return;
	}
	sigaction(sig, &old_segv, NULL);
	/* A SIGSEGV that no instruction repeats (sent: si_code <= 0; forced
	 * by the kernel: SI_KERNEL) would be lost by the return: raised
	 * again, under the action put back (SA_NODEFER: not blocked). */
	if (si->si_code <= 0 || si->si_code == SI_KERNEL)
		raise(sig);
}
#endif

void canal__overflow_handler_install(void)
{
#ifndef CANAL_RUNTIME_SANITIZED
	/* Never save our own handler as the one before it: the handler, on
	 * a fault that is not an overflow, puts that one back and returns,
	 * and the instruction faulting again would come back here for ever.
	 * (A child forked while its parent's runtime ran inherits the
	 * handler; loop.c's atfork handler removes it there.) */
	if (atomic_load(&handler_installed))
		return;
	unsigned long minsig = getauxval(AT_MINSIGSTKSZ);
	if (minsig)
		sigframe_room = (uintptr_t)minsig + 256;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = segv_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &old_segv) == 0)
		atomic_store(&handler_installed, 1);
#endif
}

void canal__overflow_handler_remove(void)
{
	if (atomic_exchange(&handler_installed, 0))
		sigaction(SIGSEGV, &old_segv, NULL);
}

#define ALTSTACK_BYTES (64u * 1024u)

/* The thread's alternate stack before ours (loop 0 is the caller's thread,
 * which may have its own): put back at teardown. */
static _Thread_local stack_t old_altstack;

/* The mapping is [guard page][ALTSTACK_BYTES]: a handler that overflows
 * the stack faults in the guard page (reported by segv_handler) instead of
 * writing into the mapping below. *mem: the mapping's start. */
int canal__altstack_setup(void **mem)
{
	*mem = NULL;
#ifndef CANAL_RUNTIME_SANITIZED
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, page + ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	/* A guard region (Linux 6.13: no mapping split), else a page made
	 * inaccessible. */
	if (madvise(m, page, MADV_GUARD_INSTALL) != 0 &&
	    mprotect(m, page, PROT_NONE) != 0) {
		munmap(m, page + ALTSTACK_BYTES);
		return -ENOMEM;
	}
	stack_t ss = {.ss_sp = m + page, .ss_size = ALTSTACK_BYTES,
		      .ss_flags = 0};
	if (sigaltstack(&ss, &old_altstack) != 0) {
		int err = -errno;
		munmap(m, page + ALTSTACK_BYTES);
		return err;
	}
	alt_guard = m;
	alt_guard_end = m + page;
	*mem = m;
#endif
	return 0;
}

void canal__altstack_teardown(void *mem)
{
	if (!mem)
		return;
	if (old_altstack.ss_flags & SS_DISABLE || old_altstack.ss_sp == NULL) {
		stack_t ss = {.ss_sp = NULL, .ss_size = 0,
			      .ss_flags = SS_DISABLE};
		sigaltstack(&ss, NULL);
	} else {
		sigaltstack(&old_altstack, NULL);
	}
#ifndef CANAL_RUNTIME_SANITIZED
	alt_guard = NULL;
	munmap(mem, (size_t)sysconf(_SC_PAGESIZE) + ALTSTACK_BYTES);
#endif
}
