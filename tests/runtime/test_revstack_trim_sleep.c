/* SPDX-License-Identifier: MIT */
/*
 * test_revstack_trim_sleep - an idle loop that sleeps with a full batch
 * of free stacks waiting (stack.c, TRIM_DELAY_NS) wakes when it is due
 * and gives its pages back (loop.c loop_sleep: it sleeps no longer than
 * canal__stack_pool_trim_due). test_revstack_cache_budget's runtime part
 * wakes its loop every millisecond with a timer, which trims whether or
 * not loop_sleep bounds its sleep: this one lets the loop sleep with no
 * timer and nothing to run.
 *
 * 32 MiB stacks: the pool's budget is 2 blocks, a batch is 1 block, the
 * loop's cache holds none; CANAL_STACK_TRIM_MS=50 (the loop goes to sleep
 * before the first batch is due). W tasks touch their stacks, park on a
 * channel, get a value and end on the loop; the main task ends too. An
 * observer, detached (its pool thread's sleeps wake no loop), looks at
 * their pages every millisecond for at most 20 s (a hang guard: without
 * the bound they stay until canal_run returns). Residency: mincore(2).
 */
#define _GNU_SOURCE
#include "check.h"
#include "resident.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define W 6
#define STACK (32u << 20)
#define USED (64u << 10)

static struct canal_chan *ch;
static uintptr_t addr[W];
static _Atomic int ready, ended, fake;



static void worker(void *arg)
{
	int id = (int)(uintptr_t)arg;
	volatile char buf[USED];
	memset((char *)buf, 0x5a, sizeof(buf));
	addr[id] = (uintptr_t)buf;
	uintptr_t fa = (uintptr_t)__builtin_frame_address(0);
	if (addr[id] > fa || fa - addr[id] > STACK)
		atomic_fetch_add(&fake, 1);
	atomic_fetch_add(&ready, 1);
	uint32_t v;
	CHECK_EQ(canal_recv(ch, &v), 0);
	atomic_fetch_add(&ended, 1);
}

static void observer(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_detach(), 0);
	while (atomic_load(&ended) < W)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	if (atomic_load(&fake)) {
		printf("trim_sleep: %d arrays in ASan's fake stacks: not "
		       "counted\n",
		       atomic_load(&fake));
		return;
	}
	size_t allowed = 64u * 1024 * 1024 / STACK; /* the pool's budget */
	int kept = count_resident(addr, W);
	for (int ms = 0; (size_t)kept > allowed && ms < 20000; ms++) {
		nanosleep(&(struct timespec){0, 1000000}, NULL);
		kept = count_resident(addr, W);
	}
	printf("trim_sleep: %d of %d ended tasks' stacks kept their pages "
	       "(at most %zu)\n",
	       kept, W, allowed);
	CHECK((size_t)kept <= allowed);
}

static void runtime_main(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(observer, NULL), 0);
	for (uintptr_t i = 0; i < W; i++)
		CHECK_EQ(canal_spawn(worker, (void *)i), 0);
	while (atomic_load(&ready) < W)
		canal_sleep_ns(1000000);
	for (uint32_t i = 0; i < W; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	/* Ends: the loop runs the workers' ends, then has nothing to run. */
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(120); /* hang guard */
	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", "50", 1), 0);
	ch = canal_chan_create(sizeof(uint32_t), W, 0);
	CHECK(ch != NULL);
	struct canal_run_options o = {.loops = 1, .stack_size = STACK};
	CHECK_EQ(canal_run(runtime_main, NULL, &o), 0);
	canal_chan_destroy(ch);
	printf("test_revstack_trim_sleep: ok\n");
	return 0;
}
