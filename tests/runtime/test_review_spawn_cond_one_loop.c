/* test_review_spawn_cond_one_loop.c - hostile review (56f1434: a spawn
 * counts in the operation quantum).
 * task.h: tasks are cooperative (a task runs until it blocks or yields),
 * canal_spawn "never blocks", and a condvar signal may come before the
 * wait it was meant for only "with several loops". So on one loop the
 * CPC idiom "spawn a child that signals c, then wait on c" cannot lose
 * the signal: the child runs only once the spawner waits. Since
 * canal_spawn calls canal__ops_done(1), once every 1024 spawns (and
 * blocking channel operations: a per-thread budget) the spawner yields
 * inside canal_spawn: the child runs first, signals nobody, and the
 * spawner then waits for a signal that already came (here 200 ms, then
 * -ETIMEDOUT; with no timeout, for ever). Bounded: at most one timeout
 * is waited for. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <stdio.h>

#define ROUNDS 2048

static struct canal_cond *cond;
static int lost = -1;

static void child(void *arg)
{
	(void)arg;
	canal_cond_signal(cond);
}

static void main_task(void *arg)
{
	(void)arg;
	cond = canal_cond_create();
	CHECK(cond != NULL);
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_EQ(canal_spawn(child, NULL), 0);
		if (canal_cond_wait(cond, 200000000) != 0) {
			lost = i;
			break;
		}
	}
	canal_cond_destroy(cond);
}

int main(void)
{
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	if (lost >= 0)
		printf("spawn then wait on one loop: the child's signal came "
		       "before the wait at round %d\n", lost);
	CHECK_EQ(lost, -1);
	TEST_DONE("test_review_spawn_cond_one_loop");
}
