/* test_task_chain_stall.c - a chain wake-up (base/wait.h, waitq_chain)
 * that woke a task must not hold back the next chain while that task's
 * loop is busy: thread receivers asleep beside elements left in the ring
 * must be woken by the chains of a thread that receives.
 *
 * One loop. Two tasks park in receive; two threads sleep in receive. The
 * main task sends 6 elements (its first send wakes one task, which cannot
 * run: the main task keeps the loop) and then runs without yielding until
 * both sleeping threads got an element. A third thread receives two
 * elements: its first chain wakes the other parked task (through the
 * runtime's table), its second must reach a sleeping thread, which
 * chains to the last one. A chain that counted the task as a wake-up in
 * flight skipped the second chain, and the threads slept while the main
 * task waited for them: it gives up after LONG_NS and the check fails
 * (the review's reproduction, stop 31: on the unfixed branch, a hang).
 * Twice: the parked tasks in a plain receive (the runtime's table), then
 * in a select over the channel and a shared one (on io_uring, a kernel
 * futex wait on both words, which FUTEX_WAKE counts: a second review's
 * case). */
#include "check.h"

#include <canal/base.h>
#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>

#define LONG_NS 10000000000ull /* a stall ends here, as a failed check */
#define SLEEPER_NS 60000000000ll /* past LONG_NS: their own deadline must
				  * not end the stall (a timed-out waiter
				  * passes a miss on, wait.h) */
#define NAP_NS 100000000l      /* long enough for a receiver to sleep */

static struct canal_chan *ch;
static struct canal_chan *other; /* shared, never written: the select's */
static bool use_select;
static _Atomic int threads_done; /* sleeping threads that got an element */
static _Atomic int parked_tasks;
static bool stalled;

static void nap(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

static void *sleeping_thread(void *arg)
{
	(void)arg;
	uint32_t v;
	CHECK_EQ(canal_recv_timeout(ch, &v, SLEEPER_NS), 0);
	atomic_fetch_add(&threads_done, 1);
	return NULL;
}

static void *chaining_thread(void *arg)
{
	(void)arg;
	uint32_t v;
	nap(2 * NAP_NS); /* the main task has sent by then */
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(canal_recv(ch, &v), 0);
	return NULL;
}

static void parked_task(void *arg)
{
	(void)arg;
	uint32_t v, w;
	atomic_fetch_add(&parked_tasks, 1);
	if (!use_select) {
		CHECK_EQ(canal_recv(ch, &v), 0);
		return;
	}
	struct canal_case cases[2] = {
		{.ch = other, .op = CANAL_OP_RECV, .elt = &w},
		{.ch = ch, .op = CANAL_OP_RECV, .elt = &v},
	};
	CHECK_EQ(canal_select(cases, 2, -1, 0), 1);
	CHECK_EQ(cases[1].result, 0);
}

static pthread_t threads[3];

static void main_task(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(parked_task, NULL), 0);
	CHECK_EQ(canal_spawn(parked_task, NULL), 0);
	while (atomic_load(&parked_tasks) < 2)
		canal_yield();
	canal_yield(); /* both in their receive, parked */
	/* The threads sleep after the tasks: in the select case the tasks
	 * are then what FUTEX_WAKE finds first (the futex's queue is in
	 * order of arrival). */
	threads[0] = spawn(sleeping_thread, NULL);
	threads[1] = spawn(sleeping_thread, NULL);
	threads[2] = spawn(chaining_thread, NULL);
	CHECK_EQ(canal_sleep_ns(NAP_NS), 0);
	for (uint32_t i = 0; i < 6; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	/* CPU-bound: the loop runs nothing else meanwhile. */
	uint64_t give_up = canal_now_ns() + LONG_NS;
	while (atomic_load(&threads_done) < 2)
		if (canal_now_ns() > give_up) {
			stalled = true;
			break;
		}
}

static void run_case(bool select)
{
	use_select = select;
	atomic_store(&threads_done, 0);
	atomic_store(&parked_tasks, 0);
	stalled = false;
	ch = canal_chan_create(sizeof(uint32_t), 16, 0);
	CHECK(ch != NULL);
	struct canal_run_options o = {0};
	o.loops = 1;
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	CHECK(!stalled);
	for (int i = 0; i < 3; i++)
		join(threads[i]);
	CHECK_EQ(canal_chan_len(ch), 0);
	canal_chan_destroy(ch);
}

int main(void)
{
	alarm(120);
	other = canal_chan_create(sizeof(uint32_t), 1, CANAL_SHARED);
	CHECK(other != NULL);
	run_case(false);
	run_case(true);
	canal_chan_destroy(other);
	printf("test_task_chain_stall: all checks passed\n");
	return 0;
}
