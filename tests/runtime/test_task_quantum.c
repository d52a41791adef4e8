/* test_task_quantum.c - a task that never waits does not hold its loop
 * (issue 13): the channel layer's operation quantum (channel/sendrecv.c)
 * and the parker's yield_to_ready under it (base/park.h, runtime/task.c).
 *
 *  - on one loop, a task sending N elements into a channel wide enough
 *    never to block (and then receiving them all back), one at a time, in
 *    batches, or with the timed forms, lets a task
 *    queued beside it run many times before it is done: that task sees
 *    the sender's (and the receiver's) count at many values below N
 *    (without the quantum it ran only once the other had finished);
 *    every element arrives exactly once, in order;
 *  - yield_to_ready from a task: true when another task of its loop is
 *    ready (that task ran meanwhile), false and nothing done when none
 *    is; from a plain thread, false (a thread's parker has none); a
 *    thread's fast-path sends and receives past the quantum change
 *    nothing.
 */
#include "check.h"
#include "base/park.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define N 100000

enum form { SINGLE, BATCH, TIMED };

struct solo {
	struct canal_chan *ch;
	enum form form;
	_Atomic long sent, received;
	_Atomic bool done;
	long seen_send, seen_recv; /* distinct counts the watcher saw < N */
};

#define CHUNK 100 /* elements per batch */

static void solo_sender(void *arg)
{
	struct solo *s = arg;
	long buf[CHUNK];
	for (long i = 0; i < N;) {
		if (s->form == BATCH) {
			for (long k = 0; k < CHUNK; k++)
				buf[k] = i + k;
			CHECK_EQ(canal_send_batch(s->ch, buf, CHUNK), CHUNK);
			i += CHUNK;
		} else {
			CHECK_EQ(s->form == TIMED
					 ? canal_send_timeout(s->ch, &i, 1000000000)
					 : canal_send(s->ch, &i),
				 0);
			i++;
		}
		atomic_store_explicit(&s->sent, i, memory_order_relaxed);
	}
	/* The receiving half, on the same loop: never waits either. */
	for (long i = 0; i < N;) {
		if (s->form == BATCH) {
			ssize_t got = canal_recv_batch(s->ch, buf, CHUNK);
			CHECK(got > 0);
			for (long k = 0; k < got; k++)
				CHECK_EQ(buf[k], i + k);
			i += got;
		} else {
			long v = -1;
			CHECK_EQ(s->form == TIMED
					 ? canal_recv_timeout(s->ch, &v, 1000000000)
					 : canal_recv(s->ch, &v),
				 0);
			CHECK_EQ(v, i);
			i++;
		}
		atomic_store_explicit(&s->received, i, memory_order_relaxed);
	}
	atomic_store(&s->done, true);
}

static void solo_watcher(void *arg)
{
	struct solo *s = arg;
	long last_s = -1, last_r = -1;
	while (!atomic_load(&s->done)) {
		long v = atomic_load_explicit(&s->sent, memory_order_relaxed);
		if (v != last_s && v < N)
			s->seen_send++;
		last_s = v;
		v = atomic_load_explicit(&s->received, memory_order_relaxed);
		if (v != last_r && v > 0 && v < N)
			s->seen_recv++;
		last_r = v;
		canal_yield();
	}
}

static void solo_main(void *arg)
{
	struct solo *s = arg;
	CHECK_EQ(canal_spawn(solo_sender, s), 0);
	CHECK_EQ(canal_spawn(solo_watcher, s), 0);
}

static void quantum(enum form form)
{
	struct solo s = { .ch = canal_chan_create(sizeof(long), N, 0),
			  .form = form };
	CHECK(s.ch);
	struct canal_run_options o = { .loops = 1 };
	CHECK_EQ(canal_run(solo_main, &s, &o), 0);
	CHECK_EQ(atomic_load(&s.received), N);
	/* About N / quantum each; a loop held to the end gives 0 (or 1). */
	CHECK(s.seen_send >= 10);
	CHECK(s.seen_recv >= 10);
	canal_chan_destroy(s.ch);
}

struct ready {
	_Atomic bool other_ran;
	bool with_other, got;
};

static void other(void *arg)
{
	struct ready *r = arg;
	atomic_store(&r->other_ran, true);
}

static void ready_main(void *arg)
{
	struct ready *r = arg;
	if (r->with_other)
		CHECK_EQ(canal_spawn(other, r), 0);
	r->got = canal__yield_to_ready();
	if (r->with_other)
		CHECK(atomic_load(&r->other_ran)); /* it ran meanwhile */
}

static void yield_to_ready(void)
{
	struct canal_run_options o = { .loops = 1 };
	struct ready r = { .with_other = true };
	CHECK_EQ(canal_run(ready_main, &r, &o), 0);
	CHECK(r.got);
	struct ready alone = { .with_other = false };
	CHECK_EQ(canal_run(ready_main, &alone, &o), 0);
	CHECK(!alone.got);
	CHECK(!canal__yield_to_ready()); /* a plain thread */
	/* A thread past the quantum, both ways: nothing changes. */
	struct canal_chan *ch = canal_chan_create(sizeof(long), 5000, 0);
	CHECK(ch);
	for (long i = 0; i < 5000; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	for (long i = 0; i < 5000; i++) {
		long v = -1;
		CHECK_EQ(canal_recv(ch, &v), 0);
		CHECK_EQ(v, i);
	}
	canal_chan_destroy(ch);
}

int main(void)
{
	quantum(SINGLE);
	quantum(BATCH);
	quantum(TIMED);
	yield_to_ready();
	TEST_DONE("test_task_quantum");
}
