/* test_revstack_map_count.c - a hostile review of task stacks (branch
 * revstack, 2026-11-30): stacks with a mapping of their own
 * (CANAL_STACK_GUARD=maps, the kind of kernels without guard regions)
 * when the process runs out of mappings (vm.max_map_count) before the
 * pool's budget of such stacks is spent.
 *
 * The pool gives a stack its own mapping (two VMAs: the guard page and
 * the stack) while their count stays within a budget derived from
 * max_map_count, keeping 20 000 mappings for the rest of the process;
 * beyond it, stacks come from slabs without guard pages (a canary each),
 * one mapping per 64 stacks. A program that has more mappings of its own
 * than that reserve (shared memory, many files mapped) ran out of them
 * first: mmap or mprotect failed with ENOMEM and every spawn failed with
 * -ENOMEM from then on, while canary slabs (and memory) were there to be
 * had.
 *
 * In a forked child: take all but ~3 000 of the process's mappings (a
 * region whose every other page is PROT_NONE), then run a runtime whose
 * stacks are of the "maps" kind and spawn 4 000 tasks that park on a
 * channel (8 000 mappings if each had its own): every spawn must succeed,
 * then every task must run and end. Not under sanitizers (their shadow
 * and allocators need mappings of their own), nor where max_map_count is
 * too large to fill quickly (then skipped, with a message). */
#define _GNU_SOURCE
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static const bool sanitized = true;
#else
static const bool sanitized = false;
#endif

#define TASKS 4000
#define SLACK 3000

static struct canal_chan *ch;
static _Atomic int spawned, enomem, ended;

static void parked(void *arg)
{
	(void)arg;
	uint32_t v;
	CHECK_EQ(canal_recv(ch, &v), 0);
	atomic_fetch_add(&ended, 1);
}

static void spawner(void *arg)
{
	(void)arg;
	for (int i = 0; i < TASKS; i++) {
		int r = canal_spawn(parked, NULL);
		if (r == -ENOMEM) {
			atomic_store(&enomem, 1);
			break;
		}
		CHECK_EQ(r, 0);
		atomic_fetch_add(&spawned, 1);
	}
	for (int i = 0; i < atomic_load(&spawned); i++) {
		uint32_t v = (uint32_t)i;
		CHECK_EQ(canal_send(ch, &v), 0);
	}
}

static long read_long(const char *path)
{
	long v = -1;
	FILE *f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static long map_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	long n = 0;
	int c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static int child(long max)
{
	/* Every other page PROT_NONE: one mapping per page. */
	long page = sysconf(_SC_PAGESIZE);
	long want = max - map_count() - SLACK;
	if (want < 2)
		return 0;
	size_t pages = (size_t)want;
	char *m = mmap(NULL, pages * (size_t)page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(m != MAP_FAILED);
	for (size_t i = 1; i < pages; i += 2)
		CHECK_EQ(mprotect(m + i * (size_t)page, (size_t)page,
				  PROT_NONE),
			 0);
	long left = max - map_count();
	ch = canal_chan_create(sizeof(uint32_t), 1, 0);
	CHECK(ch != NULL);
	setenv("CANAL_STACK_GUARD", "maps", 1);
	struct canal_run_options o = {.loops = 2,
				      .stack_size = 64 * 1024,
				      .detach_threads = 1};
	int r = canal_run(spawner, NULL, &o);
	fprintf(stderr,
		"map count: %ld mappings left of %ld; canal_run %d, %d of %d "
		"spawns, %s, %d tasks ended\n",
		left, max, r, atomic_load(&spawned), TASKS,
		atomic_load(&enomem) ? "then -ENOMEM" : "no -ENOMEM",
		atomic_load(&ended));
	CHECK_EQ(r, 0);
	CHECK_EQ(atomic_load(&enomem), 0);
	CHECK_EQ(atomic_load(&spawned), TASKS);
	CHECK_EQ(atomic_load(&ended), TASKS);
	return 0;
}

int main(void)
{
	if (sanitized) {
		printf("test_revstack_map_count: not under a sanitizer (it "
		       "needs mappings of its own)\n");
		return 0;
	}
	long max = read_long("/proc/sys/vm/max_map_count");
	if (max < 20000 + SLACK || max > 1000000) {
		printf("test_revstack_map_count: vm.max_map_count %ld: not "
		       "tried\n",
		       max);
		return 0;
	}
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child(max));
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("test_revstack_map_count: ok\n");
	return 0;
}
