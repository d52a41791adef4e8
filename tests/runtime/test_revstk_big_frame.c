/* test_revstk_big_frame.c - a function frame larger than a page, entered
 * near the bottom of a task's stack, must fault in the task's guard page
 * (reported as its overflow), not step over it into the stack block
 * below (another task's stack, written silently).
 *
 * There is one guard page between stack blocks. Code built without
 * -fstack-clash-protection moves the stack pointer by the whole frame at
 * once and writes only where the frame's variables are: a 32 KiB frame
 * from 2 KiB above the bottom wrote 30 KiB below it, inside the block
 * below (the stack of task 1, whose block is carved below task 2's), and
 * the child ended cleanly. The library, its tests and examples are now
 * built with -fstack-clash-protection where the compiler has it
 * (CANAL_STACK_CLASH_PROTECTION): the frame probes each page it takes. */
#include "check.h"
#include "overflow_child.h"
#include "runtime/internal.h"

#include <canal/task.h>

#include <alloca.h>
#include <string.h>
#include <sys/wait.h>

#define BIG (32 * 1024)

static __attribute__((noinline)) void big_frame(void)
{
	volatile char frame[BIG];
	frame[0] = 1;
	overflow_sink = frame[0];
}

static __attribute__((noinline)) void eat(size_t n)
{
	volatile char *p = alloca(n);
	p[0] = 1;
	big_frame();
	overflow_sink = p[0];
}

static void near_bottom(void *arg)
{
	(void)arg;
	struct canal__task *t = canal__this_loop()->current;
	char here;
	eat((size_t)(&here - t->stack.lo) - 2048);
}

static void spawn_main(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(near_bottom, NULL), 0);
}

int main(void)
{
#ifdef SANITIZED
	printf("test_revstk_big_frame: skipped under a sanitizer (the "
	       "runtime installs no overflow handler there)\n");
	return 0;
#endif
#ifndef CANAL_STACK_CLASH_PROTECTION
	printf("test_revstk_big_frame: skipped (the compiler has no "
	       "-fstack-clash-protection)\n");
	return 0;
#endif
	CHECK(overflow_child_task2(spawn_main, "guard page", "big frame",
				   "frame", BIG) == 1);
	printf("test_revstk_big_frame: ok\n");
	return 0;
}
