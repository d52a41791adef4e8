/* test_task_timer_stress.c - timers that fire while their task is already
 * woken, on loops that steal from each other.
 *
 * 32 pairs of tasks over two loops, each pair on a capacity-1 channel: the
 * consumer receives with a 30 us timeout and retries, the producer sleeps
 * 20-40 us between sends, so that sends land around the consumer's
 * deadline: the timer fires while the task is in its loop's run queue (woken
 * by the send), while other loops steal from that queue. Invariants:
 *  - exactly once and in order: the consumer receives 0, 1, 2, ... of its
 *    producer, nothing lost, nothing doubled;
 *  - no early timeout: -ETIMEDOUT only once 30 us have passed (a timer of
 *    an earlier wait winning a later one's wake would return early);
 *  - no deadlock: the run ends (ctest's timeout bounds it).
 * Under TSan it also checks that a thief reads a task's pin and timer state
 * only as the timer's loop left it (the race CI's TSan run found).
 * CANAL_STRESS=1 runs ten times as many messages. */
#include "check.h"

#include <canal/base.h>
#include <canal/channel.h>
#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>

#define PAIRS 32
#define TIMEOUT_NS 30000

struct pair {
	struct canal_chan *ch;
	uint32_t n;
	uint32_t got;
	uint32_t timeouts;
};

static struct pair pairs[PAIRS];

static void consumer(void *arg)
{
	struct pair *p = arg;
	while (p->got < p->n) {
		uint32_t v;
		uint64_t t0 = canal_now_ns();
		int r = canal_recv_timeout(p->ch, &v, TIMEOUT_NS);
		if (r == 0) {
			CHECK_EQ(v, p->got);
			p->got++;
			continue;
		}
		uint64_t waited = canal_now_ns() - t0;
		CHECK_EQ(r, -ETIMEDOUT);
		if (waited < TIMEOUT_NS) {
			fprintf(stderr, "timed out after %llu ns < %d ns\n",
				(unsigned long long)waited, TIMEOUT_NS);
			abort();
		}
		p->timeouts++;
	}
}

static void producer(void *arg)
{
	struct pair *p = arg;
	for (uint32_t i = 0; i < p->n; i++) {
		CHECK_EQ(canal_send(p->ch, &i), 0);
		if (i % 4 == 3)
			canal_yield();
		else
			canal_sleep_ns(20000 + (i * 7919u) % 20000);
	}
}

static void main_task(void *arg)
{
	(void)arg;
	for (int i = 0; i < PAIRS; i++) {
		CHECK_EQ(canal_spawn(consumer, &pairs[i]), 0);
		CHECK_EQ(canal_spawn(producer, &pairs[i]), 0);
	}
}

int main(void)
{
	const char *stress = getenv("CANAL_STRESS");
	uint32_t n = stress && *stress == '1' ? 20000 : 2000;
	for (int i = 0; i < PAIRS; i++) {
		pairs[i].ch = canal_chan_create(sizeof(uint32_t), 1, 0);
		CHECK(pairs[i].ch != NULL);
		pairs[i].n = n;
	}
	struct canal_run_options o = { .loops = 2 };
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	uint64_t timeouts = 0;
	for (int i = 0; i < PAIRS; i++) {
		CHECK_EQ(pairs[i].got, n);
		timeouts += pairs[i].timeouts;
		canal_chan_destroy(pairs[i].ch);
	}
	printf("%d pairs x %u messages: all in order, %llu timeouts, none "
	       "early\n",
	       PAIRS, n, (unsigned long long)timeouts);
	return 0;
}
