/* test_revstk_switch_overflow.c - a task whose stack overflows in the
 * context switch itself (the registers pushed on its stack as it switches
 * straight to the next task: canal_yield's direct switch) is reported as
 * itself (its task id, its stack size), as any other overflow is
 * (test_task_limits), in a forked child per depth.
 *
 * The switch names the next task the loop's current one before it pushes
 * the outgoing task's registers: a fault there was blamed on the next
 * task, or on no task at all: a bare SIGSEGV (the next task's stack was
 * the block of the first task, which had ended: below the faulting one,
 * so not even its "stack pointer below its stack" matched). Each child
 * leaves its task less stack before the yield, 8 bytes at a time, from
 * room for the whole switch to none (the window of the switch's pushes,
 * 64 bytes, is among them in the default build, where the yield's other
 * calls are inlined): each child must end cleanly, or report task 2 with
 * a fault in its guard page. */
#include "check.h"
#include "overflow_child.h"
#include "runtime/internal.h"

#include <canal/task.h>

#include <alloca.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static size_t gap;

static void other(void *arg)
{
	(void)arg;
}

static __attribute__((noinline)) void yield_at_bottom(void)
{
	canal_yield();
}

static __attribute__((noinline)) void eat(size_t n)
{
	volatile char *p = alloca(n);
	p[0] = 1;
	yield_at_bottom();
	overflow_sink = p[0];
}

static void near_bottom(void *arg)
{
	(void)arg;
	/* Task 3, ready when task 2 yields: the yield switches to it
	 * directly. */
	CHECK_EQ(canal_spawn(other, NULL), 0);
	struct canal__task *t = canal__this_loop()->current;
	char here;
	size_t left = (size_t)(&here - t->stack.lo);
	/* eat leaves about 192 - gap bytes of stack below its frame for
	 * the yield (the frames below `here` are small): from room for the
	 * whole switch to none. */
	eat(left - 192 + gap);
}

static void spawn_main(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(near_bottom, NULL), 0);
}

int main(void)
{
#ifdef SANITIZED
	printf("test_revstk_switch_overflow: skipped under a sanitizer (the "
	       "runtime installs no overflow handler there)\n");
	return 0;
#endif
	int clean = 0, reported = 0;
	for (gap = 0; gap <= 1024; gap += 8) {
		if (overflow_child_task2(spawn_main, "fault in its guard page",
					 "switch overflow", "gap", gap))
			reported++;
		else
			clean++;
	}
	CHECK(reported > 0);
	printf("test_revstk_switch_overflow: ok (%d reported, %d clean)\n",
	       reported, clean);
	return 0;
}
