/* test_task.c - the core of the task runtime: canal_run (options, errors,
 * run again), canal_spawn (-EPERM outside, from tasks and nested), yield
 * ping-pong order, sleep, many tasks over several loops, task ids. */
#include "check.h"

#include <canal/task.h>
#include <canal/channel.h>

#include <stdint.h>

static _Atomic int counter;

static void nothing(void *arg)
{
	(void)arg;
	atomic_fetch_add(&counter, 1);
}

static void test_errors(void)
{
	CHECK_EQ(canal_spawn(nothing, NULL), -EPERM);
	CHECK_EQ(canal_run(NULL, NULL, NULL), -EINVAL);
	struct canal_run_options o = {.flags = 1u << 30};
	CHECK_EQ(canal_run(nothing, NULL, &o), -EINVAL);
	o = (struct canal_run_options){.loops = 5000};
	CHECK_EQ(canal_run(nothing, NULL, &o), -EINVAL);
	o = (struct canal_run_options){.stack_size = 1024};
	CHECK_EQ(canal_run(nothing, NULL, &o), -EINVAL);
	o = (struct canal_run_options){.backend = 7};
	CHECK_EQ(canal_run(nothing, NULL, &o), -EINVAL);
	CHECK_EQ(canal_task_id(), 0);
	/* Outside a task, yield and sleep act on the thread. */
	canal_yield();
	CHECK_EQ(canal_sleep_ns(1000), 0);
}

/* Two tasks on one loop alternate strictly with canal_yield. */
struct pingpong {
	int turn_log[64];
	_Atomic int n;
};

static void yielder(void *arg)
{
	struct pingpong *p = arg;
	int me = (int)canal_task_id();
	for (int i = 0; i < 16; i++) {
		int k = atomic_fetch_add(&p->n, 1);
		p->turn_log[k] = me;
		canal_yield();
	}
}

static void yield_main(void *arg)
{
	CHECK_EQ(canal_spawn(yielder, arg), 0);
	CHECK_EQ(canal_spawn(yielder, arg), 0);
}

static void test_yield_order(void)
{
	struct pingpong p = {0};
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(yield_main, &p, &o), 0);
	CHECK_EQ(p.n, 32);
	for (int i = 2; i < 32; i++)
		CHECK(p.turn_log[i] == p.turn_log[i - 2]);
	CHECK(p.turn_log[0] != p.turn_log[1]);
}

static void nested(void *arg)
{
	uintptr_t depth = (uintptr_t)arg;
	atomic_fetch_add(&counter, 1);
	if (depth > 0) {
		CHECK_EQ(canal_spawn(nested, (void *)(depth - 1)), 0);
		CHECK_EQ(canal_spawn(nested, (void *)(depth - 1)), 0);
	}
}

static void test_many(unsigned loops)
{
	atomic_store(&counter, 0);
	struct canal_run_options o = {.loops = loops};
	CHECK_EQ(canal_run(nested, (void *)(uintptr_t)12, &o), 0);
	CHECK_EQ(atomic_load(&counter), (1 << 13) - 1);
}

static void sleeper(void *arg)
{
	(void)arg;
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_sleep_ns(2000000), 0);
	CHECK(canal_now_ns() - t0 >= 2000000);
	CHECK_EQ(canal_sleep_ns(0), 0);
	atomic_fetch_add(&counter, 1);
}

static void sleep_main(void *arg)
{
	(void)arg;
	CHECK(canal_task_id() == 1);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(canal_spawn(sleeper, NULL), 0);
	/* A second runtime cannot start inside this one. */
	CHECK_EQ(canal_run(nothing, NULL, NULL), -EBUSY);
}

static void test_sleep(void)
{
	atomic_store(&counter, 0);
	CHECK_EQ(canal_run(sleep_main, NULL, NULL), 0);
	CHECK_EQ(atomic_load(&counter), 100);
	/* And run again after it returned. */
	CHECK_EQ(canal_run(sleep_main, NULL, NULL), 0);
	CHECK_EQ(atomic_load(&counter), 200);
	CHECK_EQ(canal_spawn(nothing, NULL), -EPERM);
}

/* A CPU-bound task per loop plus many yielders: every loop gets work
 * (stealing or spreading), and everything finishes. */
static void spinner(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		canal_yield();
	atomic_fetch_add(&counter, 1);
}

static void spin_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 64; i++)
		CHECK_EQ(canal_spawn(spinner, NULL), 0);
}

static void test_spread(void)
{
	atomic_store(&counter, 0);
	struct canal_run_options o = {.loops = 3};
	CHECK_EQ(canal_run(spin_main, NULL, &o), 0);
	CHECK_EQ(atomic_load(&counter), 64);
}

int main(void)
{
	test_errors();
	test_yield_order();
	test_many(1);
	test_many(4);
	test_sleep();
	test_spread();
	printf("test_task: ok\n");
	return 0;
}
