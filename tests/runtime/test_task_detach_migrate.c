/* test_task_detach_migrate.c - a task that comes back from the detach pool
 * onto another loop than the one it left, then waits there with a timer or
 * an I/O operation.
 *
 * canal_attach puts the task on a loop chosen in turn; every wake-up after
 * that pushes it to t->loop, and its timer and I/O belong to the loop it
 * waits on: the two must be the same loop (internal.h: a pinned task only
 * resumes on task->loop). Each round the task detaches, attaches (with two
 * loops, every other attach lands on the other loop), then:
 *  A. receives with a long timeout a value a plain thread sends a little
 *     later (a timer armed on the loop it runs on, a wake from outside);
 *  B. reads with a long timeout a byte a plain thread writes a little later
 *     (an I/O operation in flight on that loop, its completion's wake);
 *  C. sleeps 20 us (its timer fires on that loop);
 *  D. reads a pipe nobody writes with a 30 us timeout (the timer fires, the
 *     operation is cancelled through that loop's backend).
 * Invariants: every value and byte exactly once and in order, C returns,
 * D times out; no crash (a task resumed on the wrong loop disarms its timer
 * in that loop's heap, or cancels its operation on the other loop's ring or
 * epoll set from the wrong thread); under TSan, no race on the timer, pin
 * or in-flight state. Bounded: ROUNDS rounds of a few hundred microseconds. */
#include "check.h"

#include <canal/base.h>
#include <canal/channel.h>
#include <canal/task.h>

#include <stdint.h>
#include <time.h>

#define ROUNDS 200

static struct canal_chan *ch;
static int data_pipe[2], idle_pipe[2];

static void pause_us(unsigned us)
{
	struct timespec ts = {0, (long)us * 1000};
	nanosleep(&ts, NULL);
}

/* The plain thread: a value, then a byte, each a little after the task
 * began to wait for it (it usually has). */
static void *feeder(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < ROUNDS; i++) {
		pause_us(100 + (i * 37u) % 200);
		CHECK_EQ(canal_send(ch, &i), 0);
		pause_us(100 + (i * 53u) % 200);
		uint8_t b = (uint8_t)i;
		CHECK_EQ(write(data_pipe[1], &b, 1), 1);
	}
	return NULL;
}

static uint32_t rounds_done;

static void migrant(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < ROUNDS; i++) {
		CHECK_EQ(canal_detach(), 0);
		CHECK_EQ(canal_attach(), 0);
		uint32_t v;
		CHECK_EQ(canal_recv_timeout(ch, &v, 10000000000ll), 0);
		CHECK_EQ(v, i);

		CHECK_EQ(canal_detach(), 0);
		CHECK_EQ(canal_attach(), 0);
		uint8_t b;
		CHECK_EQ(canal_io_read(data_pipe[0], &b, 1, 10000000000ll, NULL),
			 1);
		CHECK_EQ(b, (uint8_t)i);

		CHECK_EQ(canal_detach(), 0);
		CHECK_EQ(canal_attach(), 0);
		CHECK_EQ(canal_sleep_ns(20000), 0);

		CHECK_EQ(canal_detach(), 0);
		CHECK_EQ(canal_attach(), 0);
		CHECK_EQ(canal_io_read(idle_pipe[0], &b, 1, 30000, NULL),
			 -ETIMEDOUT);
		rounds_done++;
	}
}

static void main_task(void *arg)
{
	(void)arg;
	CHECK_EQ(canal_spawn(migrant, NULL), 0);
}

int main(void)
{
	ch = canal_chan_create(sizeof(uint32_t), 1, 0);
	CHECK(ch != NULL);
	CHECK_EQ(pipe(data_pipe), 0);
	CHECK_EQ(pipe(idle_pipe), 0);
	pthread_t th = spawn(feeder, NULL);
	struct canal_run_options o = {.loops = 2, .detach_threads = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	join(th);
	CHECK_EQ(rounds_done, ROUNDS);
	canal_chan_destroy(ch);
	close(data_pipe[0]);
	close(data_pipe[1]);
	close(idle_pipe[0]);
	close(idle_pipe[1]);
	printf("%d rounds of detach, attach and a wait on the loop it came "
	       "back to: all in order\n",
	       ROUNDS);
	return 0;
}
