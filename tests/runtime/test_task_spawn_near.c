/* test_task_spawn_near.c - CANAL_RUN_SPAWN_NEAR (task.h): with two loops,
 * tasks spawned one at a time (the spawner waits for each) run on the
 * spawner's loop, every one of them (spread in turn, every other one would
 * run on the other loop); a burst of spawns still reaches the other loop;
 * a detached task's spawns go to the loops, never to its pool thread; the
 * default (no flag) still spreads tasks spawned one at a time. A task's
 * loop is seen as the thread it first runs on (it records thread_id()
 * before any wait: a task moves only while queued, or when woken). */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TRICKLE 200
#define BURST 64

/* The calling thread's id: not thread_id(), which glibc declares
 * const, so that the compiler may reuse one call's result across a
 * task's move to another thread (canal_detach). */
static pid_t thread_id(void)
{
	return (pid_t)syscall(SYS_gettid);
}

struct report {
	pid_t thread;
};

static struct canal_chan *reports;

/* Records its thread, then (burst: arg != NULL) sleeps so that it is
 * pinned by its timer rather than finished, and reports. */
static void child(void *arg)
{
	struct report r = {thread_id()};
	if (arg)
		canal_sleep_ns(1000000);
	CHECK_EQ(canal_send(reports, &r), 0);
}

static void trickle(bool *all_here, bool *any_here)
{
	*all_here = true;
	*any_here = false;
	for (int i = 0; i < TRICKLE; i++) {
		pid_t here = thread_id();
		CHECK_EQ(canal_spawn(child, NULL), 0);
		struct report r;
		CHECK_EQ(canal_recv(reports, &r), 0);
		if (r.thread == here)
			*any_here = true;
		else
			*all_here = false;
	}
}

static void near_main(void *arg)
{
	(void)arg;
	bool all_here, any_here;
	trickle(&all_here, &any_here);
	CHECK(all_here);

	/* A burst: the first spawns stay, the others are spread, and the
	 * other loop keeps at least one of those (a steal takes half of a
	 * queue of two or more, never the last one). */
	pid_t here = thread_id();
	for (int i = 0; i < BURST; i++)
		CHECK_EQ(canal_spawn(child, (void *)1), 0);
	int elsewhere = 0;
	for (int i = 0; i < BURST; i++) {
		struct report r;
		CHECK_EQ(canal_recv(reports, &r), 0);
		elsewhere += r.thread != here;
	}
	CHECK(elsewhere > 0);

	/* From a detached task: spread to the loops. */
	CHECK_EQ(canal_detach(), 0);
	pid_t pool = thread_id();
	for (int i = 0; i < 8; i++) {
		CHECK_EQ(canal_spawn(child, NULL), 0);
		struct report r;
		CHECK_EQ(canal_recv(reports, &r), 0);
		CHECK(r.thread != pool);
	}
	CHECK_EQ(canal_attach(), 0);
}

static void spread_main(void *arg)
{
	(void)arg;
	bool all_here, any_here;
	trickle(&all_here, &any_here);
	CHECK(!all_here);
	(void)any_here;
}

int main(void)
{
	reports = canal_chan_create(sizeof(struct report), BURST, 0);
	CHECK(reports != NULL);
	struct canal_run_options o = {.loops = 2,
				      .flags = CANAL_RUN_SPAWN_NEAR};
	CHECK_EQ(canal_run(near_main, NULL, &o), 0);
	o.flags = 0;
	CHECK_EQ(canal_run(spread_main, NULL, &o), 0);
	o.flags = 1u << 30;
	CHECK_EQ(canal_run(near_main, NULL, &o), -EINVAL);
	canal_chan_destroy(reports);
	printf("test_task_spawn_near: ok\n");
	return 0;
}
