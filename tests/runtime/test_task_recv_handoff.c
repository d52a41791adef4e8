/* test_task_recv_handoff.c - tasks receive from a capacity-1 thread
 * channel on which thread senders park with their element (handoff.c):
 * the task receivers move the parked elements into the ring themselves
 * (their serve, its lock's snooze through the task parker, their wake of
 * a thread's stack word through the local waker and the kernel). A task
 * sender sends beside the threads (it sleeps on send_wq as before). Checks
 * exactly once and per-producer order, blocking and timed thread sends,
 * and that nothing hangs (alarm). */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include "channel/internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define THREADS 3
#define PRODUCERS (THREADS + 1) /* the last one: a task */
#define N 20000u
#define RECEIVERS 2

static struct canal_chan *ch;
static _Atomic uint64_t sent_ok[PRODUCERS], got_total;
static uint32_t last_seen[RECEIVERS][PRODUCERS];
static _Atomic int receivers_done;

static void *thread_send(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	for (uint32_t i = 1; i <= N; i++) {
		uint64_t v = id << 32 | i;
		int r = id == 0 ? canal_send_timeout(ch, &v, 20000)
				: canal_send(ch, &v);
		if (r == 0)
			atomic_fetch_add(&sent_ok[id], 1);
		else
			CHECK_EQ(r, -ETIMEDOUT);
	}
	return NULL;
}

static void task_send(void *arg)
{
	(void)arg;
	for (uint32_t i = 1; i <= N; i++) {
		uint64_t v = (uint64_t)THREADS << 32 | i;
		CHECK_EQ(canal_send(ch, &v), 0);
		atomic_fetch_add(&sent_ok[THREADS], 1);
	}
}

static void task_recv(void *arg)
{
	uint32_t *last = last_seen[(uintptr_t)arg];
	uint64_t v;
	while (canal_recv(ch, &v) == 0) {
		uint32_t id = (uint32_t)(v >> 32), seq = (uint32_t)v;
		CHECK(id < PRODUCERS);
		/* Per producer, increasing (each receiver sees a subsequence
		 * of each producer's order). */
		CHECK(seq > last[id]);
		last[id] = seq;
		atomic_fetch_add(&got_total, 1);
	}
	atomic_fetch_add(&receivers_done, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	for (uintptr_t r = 0; r < RECEIVERS; r++)
		CHECK_EQ(canal_spawn(task_recv, (void *)r), 0);
	CHECK_EQ(canal_spawn(task_send, NULL), 0);
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		th[i] = spawn(thread_send, (void *)i);
	for (int i = 0; i < THREADS; i++)
		join(th[i]);
	while (atomic_load(&sent_ok[THREADS]) < N)
		canal_sleep_ns(1000000);
	canal_close(ch);
	while (atomic_load(&receivers_done) < RECEIVERS)
		canal_sleep_ns(1000000);
}

int main(void)
{
	ch = canal_chan_create(sizeof(uint64_t), 1, 0);
	CHECK(ch);
	struct canal_run_options o = { .loops = 2 };
	alarm(100);
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	alarm(0);
	uint64_t sent = 0;
	for (int i = 0; i < PRODUCERS; i++)
		sent += atomic_load(&sent_ok[i]);
	printf("test_task_recv_handoff: %llu sent, %llu received "
	       "(timed thread: %llu of %u)\n",
	       (unsigned long long)sent,
	       (unsigned long long)atomic_load(&got_total),
	       (unsigned long long)atomic_load(&sent_ok[0]), N);
	CHECK_EQ(atomic_load(&got_total), sent);
	CHECK_EQ(atomic_load(&ch->st->handoffs), 0);
	canal_chan_destroy(ch);
	printf("test_task_recv_handoff: ok\n");
	return 0;
}
