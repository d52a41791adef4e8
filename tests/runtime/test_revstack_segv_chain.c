/* test_revstack_segv_chain.c - a hostile review of task stacks (branch
 * revstack, 2026-11-30): the overflow reports' SIGSEGV handler and a
 * program's own, installed before canal_run.
 *
 * Programs handle some faults themselves (a collector's write barrier on
 * mprotect'ed pages, pages mapped on first touch): their handler makes
 * the page accessible and returns, and the access is made again. canal's
 * handler, installed over it at canal_run, passed a fault that is not a
 * task's overflow on by putting the program's handler back and
 * returning: the access faulted again in the program's handler, which
 * handled it, and canal's handler was gone for the rest of the run. A
 * task's stack overflow after that was not reported: the program's
 * handler got the fault in the guard page.
 *
 * In a forked child: a handler of the program's own maps a PROT_NONE page
 * on first touch (and for any other fault puts the default action back
 * and returns, so that the fault kills). Task 1 touches that page (the
 * program's handler must see the fault and the task go on), then task 2
 * overflows its stack: canal's report and SIGABRT must follow. Under
 * ASan/TSan canal installs no handler (the sanitizers report overflows):
 * only the first part and a non-zero end are checked. */
#define _GNU_SOURCE
#include "check.h"
#include "overflow_child.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

static char *volatile lazy;
static size_t page;
static volatile sig_atomic_t handled;

/* The program's handler. */
static void own_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr;
	if (a >= lazy && a < lazy + page) {
		mprotect(lazy, page, PROT_READ | PROT_WRITE);
		handled = handled + 1;
		return;
	}
	signal(sig, SIG_DFL);
}

static void first(void *arg)
{
	(void)arg;
	/* Task 1: a fault the program's handler takes care of. */
	*(volatile char *)lazy = 1;
	CHECK_EQ(handled, 1);
	CHECK_EQ(*(volatile char *)lazy, 1);
	/* Task 2 overflows. */
	CHECK_EQ(canal_spawn(overflow_task, NULL), 0);
}

/* The child: the program's handler, then the runtime. */
static void child(void *arg)
{
	(void)arg;
	lazy = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		    0);
	CHECK(lazy != MAP_FAILED);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = own_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
	struct canal_run_options o = {.loops = 1, .stack_size = 64 * 1024};
	canal_run(first, NULL, &o); /* the overflow aborts */
}

int main(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	char buf[4096];
	int st = overflow_child_run(NULL, child, NULL, buf, sizeof(buf));
	overflow_child_report("child", NULL, st, buf);
	CHECK(strstr(buf, "CHECK failed") == NULL);
	CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
#ifndef SANITIZED
	CHECK(strstr(buf, "canal: task 2 overflowed its stack of") != NULL);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#endif
	printf("test_revstack_segv_chain: ok\n");
	return 0;
}
