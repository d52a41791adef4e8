/* test_task_chan.c - tasks and plain threads on the same channels: every
 * blocking channel operation from a task parks the task.
 *
 * Producers and consumers are a mix of tasks and threads, at capacities 0,
 * 1 and 16, with one loop and with three, and on a channel wide enough
 * never to fill (two and three loops); elements are (producer, seq):
 * every element is received exactly once, and each consumer sees each
 * producer's elements in increasing order (per-producer FIFO). Also:
 * select from a task over channels fed by threads, timed operations from
 * tasks, close waking parked tasks, batches and single-copy slots. */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#define PRODUCERS 6 /* even ids tasks, odd threads */
#define CONSUMERS 4 /* even ids tasks, odd threads */

struct elt {
	uint32_t producer;
	uint32_t seq;
};

struct mix {
	struct canal_chan *ch;
	struct canal_chan *done; /* one token per finished actor */
	uint32_t per_producer;
	_Atomic uint32_t ids;
	uint8_t *seen[PRODUCERS]; /* per element: times received */
	pthread_t threads[PRODUCERS + CONSUMERS];
	int nthreads;
};

static void produce(struct mix *m, uint32_t id)
{
	for (uint32_t s = 0; s < m->per_producer; s++) {
		struct elt e = {id, s};
		int r;
		/* Some timed sends, with a deadline that never fires: an hour,
		 * beyond ctest's limit, so that a lost wake-up shows as a hang
		 * ctest reports, and a slow machine (TSan, loaded) is no
		 * failure (10 s once was, maybe, on 2 loaded vCPUs). */
		if (s % 7 == 3)
			r = canal_send_timeout(m->ch, &e, 3600000000000ll);
		else
			r = canal_send(m->ch, &e);
		CHECK_EQ(r, 0);
	}
	CHECK_EQ(canal_send(m->done, NULL), 0);
}

static void consume(struct mix *m)
{
	uint32_t last[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++)
		last[i] = UINT32_MAX;
	for (;;) {
		struct elt e;
		int r = canal_recv(m->ch, &e);
		if (r == -EPIPE)
			break;
		CHECK_EQ(r, 0);
		CHECK(e.producer < PRODUCERS && e.seq < m->per_producer);
		/* per-producer FIFO, as this consumer sees it */
		CHECK(last[e.producer] == UINT32_MAX ||
		      e.seq > last[e.producer]);
		last[e.producer] = e.seq;
		CHECK_EQ(__atomic_fetch_add(&m->seen[e.producer][e.seq], 1,
					    __ATOMIC_RELAXED),
			 0);
	}
	CHECK_EQ(canal_send(m->done, NULL), 0);
}

static void producer_task(void *arg)
{
	struct mix *m = arg;
	produce(m, atomic_fetch_add(&m->ids, 1));
}

static void *producer_thread(void *arg)
{
	struct mix *m = arg;
	produce(m, atomic_fetch_add(&m->ids, 1));
	return NULL;
}

static void consumer_task(void *arg)
{
	consume(arg);
}

static void *consumer_thread(void *arg)
{
	consume(arg);
	return NULL;
}

static void mix_main(void *arg)
{
	struct mix *m = arg;
	for (int i = 0; i < CONSUMERS; i++) {
		if (i % 2 == 0)
			CHECK_EQ(canal_spawn(consumer_task, m), 0);
		else
			m->threads[m->nthreads++] = spawn(consumer_thread, m);
	}
	for (int i = 0; i < PRODUCERS; i++) {
		if (i % 2 == 0)
			CHECK_EQ(canal_spawn(producer_task, m), 0);
		else
			m->threads[m->nthreads++] = spawn(producer_thread, m);
	}
	/* Wait (parked) for the producers, close, wait for the consumers. */
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_EQ(canal_recv(m->done, NULL), 0);
	CHECK_EQ(canal_close(m->ch), 0);
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_EQ(canal_recv(m->done, NULL), 0);
	for (int i = 0; i < m->nthreads; i++)
		join(m->threads[i]);
}

static void test_mix(size_t cap, unsigned loops, uint32_t per_producer,
		     unsigned flags)
{
	struct mix m = {0};
	m.per_producer = per_producer;
	m.ch = canal_chan_create(sizeof(struct elt), cap, flags);
	m.done = canal_chan_create(0, PRODUCERS + CONSUMERS, 0);
	CHECK(m.ch && m.done);
	for (int i = 0; i < PRODUCERS; i++)
		CHECK((m.seen[i] = calloc(per_producer, 1)) != NULL);
	struct canal_run_options o = {.loops = loops};
	CHECK_EQ(canal_run(mix_main, &m, &o), 0);
	for (int i = 0; i < PRODUCERS; i++) {
		for (uint32_t s = 0; s < per_producer; s++)
			CHECK_EQ(m.seen[i][s], 1); /* exactly once */
		free(m.seen[i]);
	}
	canal_chan_destroy(m.ch);
	canal_chan_destroy(m.done);
}

/* Select from a task over two channels that threads feed; a timed select
 * on nothing ready times out; close wakes a select. */
struct sel {
	struct canal_chan *a, *b;
	uint32_t n;
};

static void *feed(void *arg)
{
	struct canal_chan *ch = arg;
	for (uint32_t i = 0; i < 2000; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	return NULL;
}

static void select_main(void *arg)
{
	struct sel *s = arg;
	pthread_t ta = spawn(feed, s->a), tb = spawn(feed, s->b);
	uint32_t next[2] = {0, 0}, va, vb;
	struct canal_case cases[2] = {
		{.ch = s->a, .op = CANAL_OP_RECV, .elt = &va},
		{.ch = s->b, .op = CANAL_OP_RECV, .elt = &vb},
	};
	for (uint32_t got = 0; got < 4000; got++) {
		int i = canal_select(cases, 2, -1, 0);
		CHECK(i == 0 || i == 1);
		CHECK_EQ(cases[i].result, 0);
		CHECK_EQ(i == 0 ? va : vb, next[i]); /* FIFO per feeder */
		next[i]++;
	}
	join(ta);
	join(tb);
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_select(cases, 2, 3000000, 0), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 3000000);
	s->n = next[0] + next[1];
}

static void test_select(size_t cap, unsigned flags)
{
	struct sel s = {0};
	s.a = canal_chan_create(sizeof(uint32_t), cap, flags);
	s.b = canal_chan_create(sizeof(uint32_t), cap, flags);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(select_main, &s, &o), 0);
	CHECK_EQ(s.n, 4000);
	canal_chan_destroy(s.a);
	canal_chan_destroy(s.b);
}

/* Timed operations from tasks, and close waking parked tasks. */
static struct canal_chan *closing;
static _Atomic int woken_by_close;

static void parked_recv(void *arg)
{
	(void)arg;
	uint32_t v;
	CHECK_EQ(canal_recv(closing, &v), -EPIPE);
	atomic_fetch_add(&woken_by_close, 1);
}

static void timed_main(void *arg)
{
	(void)arg;
	struct canal_chan *ch = canal_chan_create(sizeof(uint32_t), 1, 0);
	uint32_t v = 7;
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_recv_timeout(ch, &v, 2000000), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 2000000);
	CHECK_EQ(canal_send(ch, &v), 0);
	t0 = canal_now_ns();
	CHECK_EQ(canal_send_timeout(ch, &v, 2000000), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 >= 2000000);
	CHECK_EQ(canal_recv_timeout(ch, &v, 0), 0);
	CHECK_EQ(v, 7);
	/* Batches and slots from a task. */
	uint32_t arr[3] = {1, 2, 3}, out[3];
	struct canal_chan *big = canal_chan_create(sizeof(uint32_t), 2, 0);
	closing = canal_chan_create(sizeof(uint32_t), 0, 0);
	for (int i = 0; i < 50; i++)
		CHECK_EQ(canal_spawn(parked_recv, NULL), 0);
	CHECK_EQ(canal_send_batch(big, arr, 2), 2);
	CHECK_EQ(canal_recv_batch(big, out, 3), 2);
	CHECK(out[0] == 1 && out[1] == 2);
	struct canal_slot slot;
	CHECK_EQ(canal_send_reserve(big, &slot), 0);
	*(uint32_t *)slot.data = 42;
	CHECK_EQ(canal_send_commit(big, &slot), 0);
	CHECK_EQ(canal_recv_borrow(big, &slot), 0);
	CHECK_EQ(*(uint32_t *)slot.data, 42);
	CHECK_EQ(canal_recv_release(big, &slot), 0);
	canal_sleep_ns(1000000); /* let the receivers park */
	CHECK_EQ(canal_close(closing), 0);
	canal_chan_destroy(ch);
	canal_chan_destroy(big);
}

static void test_timed(void)
{
	atomic_store(&woken_by_close, 0);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(timed_main, NULL, &o), 0);
	CHECK_EQ(atomic_load(&woken_by_close), 50);
	canal_chan_destroy(closing);
}

/* A shared channel between a task of this process and another process:
 * the child sends, a parked task receives (woken through the kernel). */
static struct canal_chan *xproc, *xgo;

static void xproc_main(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < 2000; i++) {
		uint32_t v;
		CHECK_EQ(canal_recv(xproc, &v), 0);
		CHECK_EQ(v, i); /* one producer: FIFO */
	}
	uint32_t v;
	CHECK_EQ(canal_recv_timeout(xproc, &v, 2000000), -ETIMEDOUT);
	CHECK_EQ(canal_send(xgo, NULL), 0); /* now the child closes */
	CHECK_EQ(canal_recv(xproc, &v), -EPIPE);
}

static void test_shared_fork(void)
{
	xproc = canal_chan_create(sizeof(uint32_t), 0, CANAL_SHARED);
	xgo = canal_chan_create(0, 1, CANAL_SHARED);
	CHECK(xproc && xgo);
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		for (uint32_t i = 0; i < 2000; i++) {
			if (i % 500 == 0)
				usleep(2000); /* let the task park */
			if (canal_send(xproc, &i) != 0)
				_exit(1);
		}
		if (canal_recv(xgo, NULL) != 0) /* the parent timed out */
			_exit(2);
		canal_close(xproc);
		_exit(0);
	}
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(xproc_main, NULL, &o), 0);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	canal_chan_destroy(xproc);
	canal_chan_destroy(xgo);
}

int main(void)
{
	const size_t caps[] = {0, 1, 16};
	for (int c = 0; c < 3; c++) {
		test_mix(caps[c], 1, 3000, 0);
		test_mix(caps[c], 3, 3000, 0);
		/* Shared channels: tasks wait in the kernel (io_uring futex
		 * wait) or poll (epoll), and are woken through FUTEX_WAKE. */
		test_mix(caps[c], 2, 1000, CANAL_SHARED);
		test_select(caps[c], 0);
		test_select(caps[c], CANAL_SHARED);
	}
	/* Wide enough never to fill: producers that never wait, their
	 * tasks yielding on lost claims and at each operation quantum
	 * (channel/ring.c lost_race, channel/quantum.h) among consumers
	 * that do. */
	test_mix(PRODUCERS * 3000, 2, 3000, 0);
	test_mix(PRODUCERS * 3000, 3, 3000, 0);
	test_timed();
	test_shared_fork();
	printf("test_task_chan: ok\n");
	return 0;
}
