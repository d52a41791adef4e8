/* SPDX-License-Identifier: MIT */
/*
 * test_revstack_trim_detached - stacks of tasks that end detached (on a
 * detach pool thread, which puts their blocks straight to the pool) beyond
 * the pool's budget give their pages back, while the only loop sleeps.
 *
 * A full batch waits CANAL_STACK_TRIM_MS (stack.c, TRIM_DELAY_NS) and then
 * goes at the next put beyond the budget or from a loop with nothing to
 * run, which sleeps no longer than canal__stack_pool_trim_due. A loop that
 * went to sleep before the batch was full read UINT64_MAX there and sleeps
 * on; a pool thread never looks at the due time: the batch waits until
 * something else wakes the loop (here: nothing; in a program, maybe never).
 *
 * 32 MiB stacks: the pool's budget is 2 blocks, a batch is 1 block, the
 * loop's cache holds none. W tasks detach, touch their stacks and wait;
 * the main task detaches, waits for the loop to sleep (l->sleeping), lets
 * them end, then looks at their pages every millisecond for at most 20 s
 * (a hang guard: with the bug they stay forever). Residency: mincore(2).
 */
#define _GNU_SOURCE
#include "check.h"
#include "resident.h"
#include "runtime/internal.h"
#include "runtime/stack.h"

#include <canal/task.h>

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

static uintptr_t addr[W];
static _Atomic int ready, go, ended, fake;
static struct canal__loop *loop;

static void ms_sleep(void)
{
	nanosleep(&(struct timespec){0, 1000000}, NULL);
}



static void worker(void *arg)
{
	int id = (int)(uintptr_t)arg;
	CHECK_EQ(canal_detach(), 0);
	volatile char buf[USED];
	memset((char *)buf, 0x5a, sizeof(buf));
	addr[id] = (uintptr_t)buf;
	uintptr_t fa = (uintptr_t)__builtin_frame_address(0);
	if (addr[id] > fa || fa - addr[id] > STACK)
		atomic_fetch_add(&fake, 1);
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&go))
		ms_sleep(); /* on its pool thread: the loop sleeps on */
	atomic_fetch_add(&ended, 1);
	/* Ends detached: its pool thread puts its block to the pool. */
}

static void runtime_main(void *arg)
{
	(void)arg;
	loop = canal__this_loop();
	CHECK(loop != NULL);
	for (uintptr_t i = 0; i < W; i++)
		CHECK_EQ(canal_spawn(worker, (void *)i), 0);
	while (atomic_load(&ready) < W)
		canal_sleep_ns(1000000);
	CHECK_EQ(canal_detach(), 0);
	/* The loop has nothing left to run (every task detached, no
	 * timer): it sleeps; once it says so, it has read the due time. */
	while (!atomic_load(&loop->sleeping))
		ms_sleep();
	atomic_store(&go, 1);
	while (atomic_load(&ended) < W)
		ms_sleep();
	if (atomic_load(&fake)) {
		printf("trim_detached: %d arrays in ASan's fake stacks: not "
		       "counted\n",
		       atomic_load(&fake));
		return;
	}
	size_t allowed = 64u * 1024 * 1024 / STACK; /* the pool's budget */
	int kept = count_resident(addr, W);
	for (int ms = 0; (size_t)kept > allowed && ms < 20000; ms++) {
		ms_sleep();
		kept = count_resident(addr, W);
	}
	printf("trim_detached: %d of %d detached ended tasks' stacks kept "
	       "their pages (at most %zu), loop sleeping %u\n",
	       kept, W, allowed, (unsigned)atomic_load(&loop->sleeping));
	CHECK((size_t)kept <= allowed);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(120); /* hang guard */
	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", "1", 1), 0);
	struct canal_run_options o = {
		.loops = 1, .stack_size = STACK, .detach_threads = W + 2};
	CHECK_EQ(canal_run(runtime_main, NULL, &o), 0);
	printf("test_revstack_trim_detached: ok\n");
	return 0;
}
