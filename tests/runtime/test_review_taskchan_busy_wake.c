/* test_review_taskchan_busy_wake.c - a plain thread asleep in canal_recv
 * beside a parked task receiver must not sleep on while elements sit in
 * the channel because the one wake-up went to the task, whose loop is
 * busy (a task computing: task.h allows it, "a task that computes for
 * long without blocking holds its loop").
 *
 * Interleaving (one loop):
 *  1. task R parks in canal_recv(ch) (its node in the parked table);
 *  2. thread T sleeps in canal_recv(ch) (FUTEX_WAIT): recv_wq.waiters 2;
 *  3. task M sends 4 elements into ch (capacity 4): the first send finds
 *     head == its position and wakes one receiver (wake.h,
 *     wake_receivers); canal__wake (base/park.c) asks the local waker
 *     first, which wins R's wake: count satisfied, no FUTEX_WAKE. The
 *     other three sends find head behind their position: no wake;
 *  4. M computes (here: until T got an element, at most 3 s). R cannot
 *     run before M stops (one loop), so nobody takes an element and
 *     chains (wake.h) to T: T sleeps with 4 elements in the channel.
 * Between threads, the woken thread runs at once and chains. The check is
 * the invariant "T takes an element while M computes"; 3 s is only the
 * bound that turns the hang into a failure (expected: microseconds).
 * Also on a shared channel (T woken only by the kernel: the wake-up goes
 * to whichever waiter the kernel finds, R's io_uring futex wait first). */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include "channel/internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static struct canal_chan *ch;
static _Atomic int t_got, r_got;

static void *thread_recv(void *arg)
{
	(void)arg;
	uint32_t v;
	while (canal_recv(ch, &v) == 0)
		atomic_fetch_add(&t_got, 1);
	return NULL;
}

static void task_recv(void *arg)
{
	(void)arg;
	uint32_t v;
	while (canal_recv(ch, &v) == 0)
		atomic_fetch_add(&r_got, 1);
}

static double waited_s;

static void main_task(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(task_recv, NULL), 0);
	canal_sleep_ns(2000000); /* R parks */
	CHECK_EQ(atomic_load(&ch->st->recv_wq.waiters), 1);
	pthread_t th = spawn(thread_recv, NULL);
	while (atomic_load(&ch->st->recv_wq.waiters) < 2)
		canal_sleep_ns(100000);
	canal_sleep_ns(20000000); /* T is past its spin and yield phases */
	for (uint32_t i = 0; i < 4; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	/* Compute, without blocking, until T got an element. */
	uint64_t t0 = canal_now_ns();
	while (atomic_load(&t_got) == 0 && canal_now_ns() - t0 < 3000000000ull)
		;
	waited_s = (double)(canal_now_ns() - t0) / 1e9;
	canal_close(ch);
	join(th);
}

static int run(unsigned flags)
{
	atomic_store(&t_got, 0);
	atomic_store(&r_got, 0);
	ch = canal_chan_create(sizeof(uint32_t), 4, flags);
	CHECK(ch);
	struct canal_run_options o = {.loops = 1};
	alarm(60);
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	alarm(0);
	printf("%s: thread took its first element %.6f s after the sends "
	       "(thread %d, task %d elements)\n",
	       flags ? "shared" : "private", waited_s, atomic_load(&t_got),
	       atomic_load(&r_got));
	fflush(stdout);
	CHECK_EQ(atomic_load(&t_got) + atomic_load(&r_got), 4);
	canal_chan_destroy(ch);
	return waited_s < 3.0 ? 0 : 1;
}

int main(void)
{
	int bad = run(0);
	bad += run(CANAL_SHARED);
	if (bad) {
		fprintf(stderr, "test_review_taskchan_busy_wake: a thread slept "
			"beside 4 elements while the task woken in its place "
			"could not run\n");
		return 1;
	}
	printf("test_review_taskchan_busy_wake: ok\n");
	return 0;
}
