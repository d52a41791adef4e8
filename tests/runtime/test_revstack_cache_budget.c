/* test_revstack_cache_budget.c - a hostile review of task stacks (branch
 * revstack, 2026-11-30): free stacks keep their pages within a budget
 * counted in bytes, the loops' caches included.
 *
 * The pool keeps the pages of free blocks up to 64 MiB of stack (counted
 * at full size) and gives the pages of the others back; but each loop's
 * cache took the first 64 blocks freed on it, of any size, with their
 * pages, and nothing gave those back before canal_run returned: with
 * 16 MiB stacks, 64 tasks that each used 1 MiB of stack left 64 MiB
 * resident after they ended (the pool's budget: 4 such blocks); with
 * 1 GiB stacks a loop could hold 64 GiB.
 *
 * 1. The pool alone (16 MiB stacks): 64 blocks, each with its lowest page
 *    touched, put back through a loop's cache; afterwards at most
 *    dirty_max + trim_batch - 1 of those pages may be resident, plus
 *    16 MiB of stack for the cache (one block).
 * 2. A runtime of one loop (16 MiB stacks): 64 tasks fill 1 MiB of their
 *    stacks, park on a channel, get a value and end; then at most as many
 *    of their stacks' pages may be resident.
 * Residency is read with mincore(2). The pool part gives pages back as
 * soon as a batch is full (CANAL_STACK_TRIM_MS=0); the runtime, by
 * default, once the batch has waited 10 ms (stack.c, TRIM_DELAY_NS): part
 * 2 looks again every millisecond until the count is within the bound,
 * for at most 30 s (a pool that keeps them fails). */
#define _GNU_SOURCE
#include "check.h"
#include "resident.h"
#include "runtime/stack.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define N 64
#define STACK (16u << 20)
#define USED (1u << 20)



/* The most blocks whose pages the pool and one cache may keep. */
static size_t allowed;

static void pool_part(void)
{
	struct canal__stack_pool *p = NULL;
	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", "0", 1), 0);
	CHECK_EQ(canal__stack_pool_create(STACK, &p), 0);
	/* The cache's share: 16 MiB of stack at most (the 64 blocks of
	 * 256 KiB of the default stacks). */
	unsigned cmax = (16u << 20) / STACK;
	allowed = canal__stack_pool_dirty_max(p) + cmax +
		  canal__stack_pool_trim_batch(p) - 1;
	struct canal__stack_cache c = {0};
	struct canal__stack st[N];
	void *area[N];
	for (int i = 0; i < N; i++) {
		area[i] = canal__stack_get(p, &c, &st[i]);
		CHECK(area[i] != NULL);
		st[i].lo[0] = 1; /* its lowest page */
	}
	for (int i = 0; i < N; i++)
		canal__stack_put(p, &c, area[i], &st[i]);
	int kept = 0;
	for (int i = 0; i < N; i++)
		kept += page_resident((uintptr_t)st[i].lo);
	printf("pool: %d of %d free blocks kept their pages (at most %zu: "
	       "%zu in the pool's budget, %u in the cache, %u awaiting a "
	       "trim); the cache holds %u\n",
	       kept, N, allowed, canal__stack_pool_dirty_max(p), cmax,
	       canal__stack_pool_trim_batch(p) - 1, c.n);
	CHECK((size_t)kept <= allowed);
	CHECK(c.n <= cmax);
	canal__stack_cache_flush(p, &c);
	canal__stack_pool_destroy(p);
	CHECK_EQ(unsetenv("CANAL_STACK_TRIM_MS"), 0);
}


static struct canal_chan *ch;
static uintptr_t addr[N];
static _Atomic int parked, ended, fake;


static void user(void *arg)
{
	int id = (int)(uintptr_t)arg;
	volatile char buf[USED];
	memset((char *)buf, 0x5a, sizeof(buf));
	addr[id] = (uintptr_t)buf;
	/* ASan with detect_stack_use_after_return puts the array in a fake
	 * stack frame on the heap, away from the task's stack. */
	uintptr_t fa = (uintptr_t)__builtin_frame_address(0);
	if (addr[id] > fa || fa - addr[id] > STACK)
		atomic_fetch_add(&fake, 1);
	atomic_fetch_add(&parked, 1);
	uint32_t v;
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK(buf[0] == 0x5a && buf[USED - 1] == 0x5a);
	atomic_fetch_add(&ended, 1);
}

static void runtime_main(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; i < N; i++)
		CHECK_EQ(canal_spawn(user, (void *)i), 0);
	while (atomic_load(&parked) < N)
		canal_sleep_ns(1000000);
	for (uint32_t i = 0; i < N; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	/* Every one has ended, and its block is back, once the counter is
	 * full and they have switched out: one loop, so a yield round after
	 * the last increment suffices; sleep a few times to be sure. */
	while (atomic_load(&ended) < N)
		canal_sleep_ns(1000000);
	for (int i = 0; i < 10; i++)
		canal_sleep_ns(1000000);
	if (atomic_load(&fake)) {
		printf("runtime: %d arrays in ASan's fake stacks: not "
		       "counted\n",
		       atomic_load(&fake));
		return;
	}
	int kept = count_resident(addr, N);
	for (int ms = 0; (size_t)kept > allowed && ms < 30000; ms++) {
		canal_sleep_ns(1000000);
		kept = count_resident(addr, N);
	}
	printf("runtime: %d of %d ended tasks' stacks kept their pages (at "
	       "most %zu)\n",
	       kept, N, allowed);
	CHECK((size_t)kept <= allowed);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	pool_part();
	ch = canal_chan_create(sizeof(uint32_t), 1, 0);
	CHECK(ch != NULL);
	struct canal_run_options o = {.loops = 1, .stack_size = STACK};
	CHECK_EQ(canal_run(runtime_main, NULL, &o), 0);
	canal_chan_destroy(ch);
	printf("test_revstack_cache_budget: ok\n");
	return 0;
}
