/* test_revstk_signal_frame.c - a task whose stack has no room left for
 * a signal's frame when a signal comes (its handler runs on the task's
 * stack) has overflowed its stack: reported (task id, stack size) and the
 * process aborts, in a forked child per depth.
 *
 * The kernel, unable to push the frame, forces a SIGSEGV (SI_KERNEL, no
 * address) on the alternate stack. The runtime's handler took it for
 * somebody else's fault, put the default action back and returned, as for
 * a fault that repeats: this one does not, so the task went on, the
 * program's signal lost and the overflow handler gone for the rest of the
 * run (the child ended with status 0). Each child leaves its task less
 * stack before raising SIGUSR1, 256 bytes at a time, from about 4 KiB to
 * a few hundred bytes: each must see its handler run once, or report
 * task 2's overflow and abort. */
#include "check.h"
#include "overflow_child.h"
#include "runtime/internal.h"

#include <canal/task.h>

#include <alloca.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static size_t room;
static volatile sig_atomic_t hits;

static void on_usr1(int sig)
{
	(void)sig;
	hits++;
}

static __attribute__((noinline)) void eat(size_t n)
{
	volatile char *p = alloca(n);
	p[0] = 1;
	raise(SIGUSR1);
	overflow_sink = p[0];
}

static void near_bottom(void *arg)
{
	(void)arg;
	struct canal__task *t = canal__this_loop()->current;
	char here;
	size_t left = (size_t)(&here - t->stack.lo);
	eat(left - room);
	CHECK_EQ(hits, 1); /* delivered, or the overflow was reported */
}

static void spawn_main(void *arg)
{
	(void)arg;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(canal_spawn(near_bottom, NULL), 0);
}

int main(void)
{
#ifdef SANITIZED
	printf("test_revstk_signal_frame: skipped under a sanitizer (the "
	       "runtime installs no overflow handler there)\n");
	return 0;
#endif
	int delivered = 0, reported = 0;
	for (room = 4352; room >= 256; room -= 256) {
		if (overflow_child_task2(spawn_main, "signal", "signal frame",
					 "room", room))
			reported++;
		else
			delivered++;
	}
	/* No frame fits in a few hundred bytes. */
	CHECK(reported > 0);
	printf("test_revstk_signal_frame: ok (%d reported, %d delivered)\n",
	       reported, delivered);
	return 0;
}
