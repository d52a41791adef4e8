/* SPDX-License-Identifier: MIT */
/*
 * test_revlife_timer_enomem - a task's timed wait never ends before its
 * time, even when its loop's timer heap cannot grow (hostile review of the
 * runtime's lifecycle, branch rev-life, 2026-11-30).
 *
 * task.h: canal_sleep_ns suspends the task "for ns nanoseconds";
 * canal_cond_wait waits "for at most timeout_ns" and returns -ETIMEDOUT
 * when that time has passed. A timer that does not join the loop's FIFO
 * of timers (a deadline before its tail: sleeps of decreasing lengths)
 * goes to the loop's heap (timer.c), whose array grows by realloc; when
 * that failed (ENOMEM), canal__task_park woke the task at once with
 * WAKE_TIMEDOUT ("poll instead; the caller re-checks"), but
 * canal_sleep_ns and canal_cond_wait do not re-check: the sleep returned
 * 0 and the wait -ETIMEDOUT at once. Before the fix, on both backends:
 * "128 timed waits ended early (the shortest after 18918 ns)", the
 * condvar wait and every sleep below but the first (which joined the
 * empty FIFO), after about 20 us instead of 73-200 ms. Now a timer that finds no room in the heap goes to
 * the FIFO at its place in deadline order (no allocation), and timed
 * waits always last their time.
 *
 * How: in a forked child whose address space is capped (RLIMIT_AS), the
 * main task takes every byte malloc can give, then 128 tasks sleep
 * 200 ms, 199 ms, ... (each deadline earlier than the one before), and
 * one waits on a condvar nobody signals for 100 ms. Each checks that the
 * clock moved by at least its time (a lower bound only: no timing
 * tolerance). Both backends.
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLEEPERS 128
#define LONGEST_NS 200000000ull
#define STEP_NS 1000000ull
#define COND_NS 100000000ll

static _Atomic int ready, go, done, early;
static _Atomic uint64_t worst_ns; /* the shortest time slept, in ns */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note(uint64_t asked, uint64_t slept)
{
	if (slept < asked) {
		atomic_fetch_add(&early, 1);
		uint64_t w = atomic_load(&worst_ns);
		while (slept < w &&
		       !atomic_compare_exchange_weak(&worst_ns, &w, slept))
			;
	}
}

static void sleeper(void *arg)
{
	uint64_t ns = LONGEST_NS - (uintptr_t)arg * STEP_NS;
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&go))
		canal_yield();
	uint64_t t0 = now_ns();
	CHECK_EQ(canal_sleep_ns(ns), 0);
	note(ns, now_ns() - t0);
	atomic_fetch_add(&done, 1);
}

static void cond_waiter(void *arg)
{
	struct canal_cond *c = arg;
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&go))
		canal_yield();
	uint64_t t0 = now_ns();
	CHECK_EQ(canal_cond_wait(c, COND_NS), -ETIMEDOUT);
	note((uint64_t)COND_NS, now_ns() - t0);
	atomic_fetch_add(&done, 1);
}

static long vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f != NULL);
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmSize:", 7) == 0)
			kib = atol(line + 7);
	fclose(f);
	CHECK(kib > 0);
	return kib * 1024;
}

/* Every block malloc will give, largest first, chained through their
 * first word. */
static void *hoard(void)
{
	void *head = NULL;
	static const size_t sizes[] = {1 << 20, 1 << 16, 4096, 256, 32};
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p;
		while ((p = malloc(sizes[i])) != NULL) {
			*(void **)p = head;
			head = p;
		}
	}
	return head;
}

static void unhoard(void *head)
{
	while (head) {
		void *next = *(void **)head;
		free(head);
		head = next;
	}
}

static void main_task(void *arg)
{
	(void)arg;
	struct canal_cond *c = canal_cond_create();
	CHECK(c != NULL);
	for (uintptr_t i = 0; i < SLEEPERS; i++)
		CHECK_EQ(canal_spawn(sleeper, (void *)i), 0);
	CHECK_EQ(canal_spawn(cond_waiter, c), 0);
	while (atomic_load(&ready) < SLEEPERS + 1)
		canal_yield();
	/* From here on no allocation succeeds: the heap's first array, or
	 * its growth past 64 entries, fails. */
	struct rlimit old, rl;
	CHECK_EQ(getrlimit(RLIMIT_AS, &old), 0);
	rl = old;
	rl.rlim_cur = (rlim_t)vm_size() + (64u << 20);
	CHECK_EQ(setrlimit(RLIMIT_AS, &rl), 0);
	void *h = hoard();
	atomic_store(&go, 1);
	while (atomic_load(&done) < SLEEPERS + 1)
		canal_yield();
	unhoard(h);
	CHECK_EQ(setrlimit(RLIMIT_AS, &old), 0);
	canal_cond_destroy(c);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
#ifndef SANITIZED
	alarm(60); /* hang guard */
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		atomic_store(&worst_ns, UINT64_MAX);
		struct canal_run_options o = {.loops = 1, .detach_threads = 1};
		CHECK_EQ(canal_run(main_task, NULL, &o), 0);
		if (atomic_load(&early))
			printf("%d timed waits ended early (the shortest "
			       "after %llu ns)\n",
			       atomic_load(&early),
			       (unsigned long long)atomic_load(&worst_ns));
		_exit(atomic_load(&early) ? 1 : 0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
#else
	(void)main_task;
	printf("test_revlife_timer_enomem: RLIMIT_AS not tried under a "
	       "sanitizer (its shadow memory needs the address space)\n");
#endif
	TEST_DONE("test_revlife_timer_enomem");
}
