/* test_revstk_altstack_guard.c - a signal handler that overflows a loop
 * thread's alternate signal stack (SA_ONSTACK: the stack the runtime's
 * overflow handler runs on, 64 KiB) must end the process with a report,
 * not write into the memory below that stack.
 *
 * The alternate stack had no guard page: a handler recursing on it went on
 * into whatever was mapped below (a page the test maps there when it is
 * free, else the stack slab mapped after it: other tasks' stacks) and the
 * process died later of something else, or not at all. In a forked child,
 * a task's SIGUSR1 handler (SA_ONSTACK) recurses in frames of 512 bytes,
 * noting the lowest byte it wrote in a page shared with the parent: the
 * child must abort with the runtime's report, and no byte below the
 * alternate stack may have been written. */
#include "check.h"
#include "overflow_child.h"

#include <canal/task.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

struct shared {
	uintptr_t alt_lo;  /* the alternate stack's lowest byte */
	uintptr_t lowest;  /* the lowest byte the handler wrote */
};

static struct shared *sh;

static __attribute__((noinline)) int deep(int depth)
{
	volatile char frame[512];
	frame[0] = (char)depth;
	if ((uintptr_t)&frame[0] < sh->lowest)
		sh->lowest = (uintptr_t)&frame[0];
	if (depth > 10000000)
		return frame[0];
	return deep(depth + 1) + frame[511];
}

static void on_usr1(int sig)
{
	(void)sig;
	overflow_sink = deep(0);
}

static void first(void *arg)
{
	(void)arg;
	stack_t ss;
	CHECK_EQ(sigaltstack(NULL, &ss), 0);
	CHECK(!(ss.ss_flags & SS_DISABLE));
	sh->alt_lo = (uintptr_t)ss.ss_sp;
	/* Memory right below the alternate stack, where that is free. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *below = mmap((char *)ss.ss_sp - page, page,
			   PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			   -1, 0);
	(void)below;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	raise(SIGUSR1);
	_exit(3); /* the handler never returns */
}

int main(void)
{
#ifdef SANITIZED
	printf("test_revstk_altstack_guard: skipped under a sanitizer (the "
	       "runtime sets up no alternate signal stack there)\n");
	return 0;
#endif
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	sh->lowest = UINTPTR_MAX;
	char buf[4096];
	struct overflow_main m = {first};
	int st = overflow_child_run(NULL, overflow_child_nocore, &m, buf,
				    sizeof(buf));
	overflow_child_report("alternate stack overflow", NULL, st, buf);
	CHECK(sh->alt_lo != 0);
	fprintf(stderr, "alternate stack from %#lx, lowest byte written %#lx\n",
		(unsigned long)sh->alt_lo, (unsigned long)sh->lowest);
	CHECK(sh->lowest >= sh->alt_lo);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(buf, "overflowed the alternate signal stack") != NULL);
	printf("test_revstk_altstack_guard: ok\n");
	return 0;
}
