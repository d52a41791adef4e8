/* test_task_kernel_sleepers.c - wakes that must reach a sleeper in the
 * kernel (a thread's FUTEX_WAIT, a task's io_uring futex wait) across
 * threads and tasks: canal__wake first asks the runtime's local waker,
 * which finds no task of the table here, and must still wake the kernel
 * sleeper (a change that skips that FUTEX_WAKE when it believes nobody
 * sleeps in the kernel must keep these cases working).
 *
 * Each case puts a waiter to sleep for real (the waker waits 50 ms first,
 * far past the waiter's spin and yield phases, 20 us), then wakes it, and
 * checks that the waiter got the element and returned before its 5 s
 * deadline: a lost wake leaves it asleep until the deadline (its last
 * look then finds the element, so only the time tells), and no case can
 * hang:
 *  1. a plain thread in canal_recv_timeout, woken by a task's send
 *     (capacity 0 and 1);
 *  2. a plain thread in canal_send_timeout on a full channel, woken by a
 *     task's receive;
 *  3. two plain threads, no runtime running (the count is the process's,
 *     per bucket of words, not the runtime's);
 *  4. a task selecting over a shared and a private channel (a kernel futex
 *     wait through io_uring on both words where the kernel has it, else a
 *     poll), woken by a plain thread's send on the private one.
 * And the other way round for tasks that sleep in the runtime's table (a
 * thread's send wakes a parked task, with no kernel sleeper counted). */
#include "check.h"

#include <canal/base.h>
#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>

#define LONG_NS 5000000000ll /* a lost wake ends here, as -ETIMEDOUT */
#define NAP_NS 50000000ull   /* long enough for the waiter to sleep */

struct pair {
	struct canal_chan *ch;
	int result;
	uint32_t value;
	bool before_deadline; /* returned before its deadline: woken */
};

static uint64_t deadline_of_wait(void)
{
	return canal_now_ns() + (uint64_t)LONG_NS;
}

static void *thread_recv(void *arg)
{
	struct pair *p = arg;
	uint64_t dl = deadline_of_wait();
	p->result = canal_recv_timeout(p->ch, &p->value, LONG_NS);
	p->before_deadline = canal_now_ns() < dl;
	return NULL;
}

static void *thread_send(void *arg)
{
	struct pair *p = arg;
	uint32_t v = 77;
	uint64_t dl = deadline_of_wait();
	p->result = canal_send_timeout(p->ch, &v, LONG_NS);
	p->before_deadline = canal_now_ns() < dl;
	return NULL;
}

static void nap(void)
{
	struct timespec ts = {0, (long)NAP_NS};
	nanosleep(&ts, NULL);
}

/* A thread and a runtime (its main task) on p's channel: the side that
 * sleeps must be woken by the other before its deadline, with want (if
 * not 0) received. */
static void run_pair(struct pair *p, void *(*thread)(void *),
		     void (*task)(void *), uint32_t want)
{
	pthread_t th = spawn(thread, p);
	CHECK_EQ(canal_run(task, p, NULL), 0);
	join(th);
	CHECK_EQ(p->result, 0);
	CHECK(p->before_deadline);
	if (want)
		CHECK_EQ(p->value, want);
	canal_chan_destroy(p->ch);
}

/* 1: a task's send wakes a thread sleeping in receive. */
static void send_after_nap(void *arg)
{
	struct pair *p = arg;
	canal_sleep_ns(NAP_NS);
	uint32_t v = 42;
	CHECK_EQ(canal_send(p->ch, &v), 0);
}

static void case_task_wakes_receiver(size_t cap)
{
	struct pair p = {.ch = canal_chan_create(sizeof(uint32_t), cap, 0)};
	CHECK(p.ch != NULL);
	run_pair(&p, thread_recv, send_after_nap, 42);
}

/* 2: a task's receive wakes a thread sleeping in send (full channel). */
static void recv_after_nap(void *arg)
{
	struct pair *p = arg;
	canal_sleep_ns(NAP_NS);
	uint32_t v;
	CHECK_EQ(canal_recv(p->ch, &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(canal_recv(p->ch, &v), 0);
	CHECK_EQ(v, 77);
}

static void case_task_wakes_sender(void)
{
	struct pair p = {.ch = canal_chan_create(sizeof(uint32_t), 1, 0)};
	uint32_t one = 1;
	CHECK_EQ(canal_send(p.ch, &one), 0); /* full */
	run_pair(&p, thread_send, recv_after_nap, 0);
}

/* 3: threads only, no runtime running. */
static void case_threads_only(void)
{
	struct pair p = {.ch = canal_chan_create(sizeof(uint32_t), 0, 0)};
	pthread_t th = spawn(thread_recv, &p);
	nap();
	uint32_t v = 9;
	CHECK_EQ(canal_send(p.ch, &v), 0);
	join(th);
	CHECK_EQ(p.result, 0);
	CHECK(p.before_deadline);
	CHECK_EQ(p.value, 9);
	canal_chan_destroy(p.ch);
}

/* 4: a task's select over a shared and a private channel. */
struct sel {
	struct canal_chan *shared, *priv;
	int index, result;
	uint32_t value;
	bool before_deadline;
};

static void *send_private_after_nap(void *arg)
{
	struct sel *s = arg;
	nap();
	uint32_t v = 5;
	CHECK_EQ(canal_send(s->priv, &v), 0);
	return NULL;
}

static void select_task(void *arg)
{
	struct sel *s = arg;
	uint32_t a, b;
	struct canal_case cases[2] = {
		{.ch = s->shared, .op = CANAL_OP_RECV, .elt = &a},
		{.ch = s->priv, .op = CANAL_OP_RECV, .elt = &b},
	};
	pthread_t th = spawn(send_private_after_nap, s);
	uint64_t dl = deadline_of_wait();
	s->index = canal_select(cases, 2, LONG_NS, 0);
	s->before_deadline = canal_now_ns() < dl;
	s->result = s->index >= 0 ? cases[s->index].result : s->index;
	s->value = b;
	join(th);
}

static void case_task_select_mixed(void)
{
	struct sel s = {
		.shared = canal_chan_create(sizeof(uint32_t), 1, CANAL_SHARED),
		.priv = canal_chan_create(sizeof(uint32_t), 1, 0),
	};
	CHECK(s.shared != NULL && s.priv != NULL);
	CHECK_EQ(canal_run(select_task, &s, NULL), 0);
	CHECK_EQ(s.index, 1);
	CHECK_EQ(s.result, 0);
	CHECK(s.before_deadline);
	CHECK_EQ(s.value, 5);
	canal_chan_destroy(s.shared);
	canal_chan_destroy(s.priv);
}

/* The other way: a thread's send wakes a task parked in the table. */
static void parked_receiver(void *arg)
{
	struct pair *p = arg;
	uint64_t dl = deadline_of_wait();
	p->result = canal_recv_timeout(p->ch, &p->value, LONG_NS);
	p->before_deadline = canal_now_ns() < dl;
}

static void *send_from_thread_after_nap(void *arg)
{
	struct pair *p = arg;
	nap();
	uint32_t v = 11;
	CHECK_EQ(canal_send(p->ch, &v), 0);
	return NULL;
}

static void case_thread_wakes_task(void)
{
	struct pair p = {.ch = canal_chan_create(sizeof(uint32_t), 0, 0)};
	CHECK(p.ch != NULL);
	run_pair(&p, send_from_thread_after_nap, parked_receiver, 11);
}

int main(void)
{
	for (int round = 0; round < 3; round++) {
		case_task_wakes_receiver(0);
		case_task_wakes_receiver(1);
		case_task_wakes_sender();
		case_threads_only();
		case_task_select_mixed();
		case_thread_wakes_task();
	}
	printf("test_task_kernel_sleepers: all checks passed\n");
	return 0;
}
