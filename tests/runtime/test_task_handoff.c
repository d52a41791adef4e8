/* test_task_handoff.c - the direct hand-off of woken tasks (the runnext
 * slot of loop.c) and the wake path of the parker (park.c: the winner
 * unlinks the wait node, the woken task skips the bucket lock).
 *
 *  - fairness: two tasks that wake each other forever on one loop (each
 *    hand-off through the runnext slot) do not starve a third task queued
 *    on that loop, nor one sleeping on the loop's timers (1 ms), nor one
 *    waiting for an I/O completion (a pipe written by a thread after
 *    1 ms): the loop still gets its turn to poll (a 20 s hang limit fails
 *    the test if not; before loop.c's direct_turn the sleeper never woke);
 *  - pipelines of stages (tasks, one stage an OS thread in some), on one
 *    loop and on three loops with spinning tasks that make the loops steal
 *    from each other: every stage sees exactly 0, 1, ..., N-1 (exactly
 *    once, FIFO), at capacities 0 and 1;
 *  - fan-out: one task wakes many parked tasks in a row (each wake after
 *    the first moves the slot's task to the queue): each receives exactly
 *    its elements; a condvar broadcast wakes every waiter of it;
 *  - select and timed receives from tasks fed by tasks on the same loop:
 *    wait nodes left linked by a timeout or by another word's wake are
 *    unlinked by their task, exactly once per element.
 */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ---- fairness ---- */
enum fair_stop { STOP_QUEUED, STOP_TIMER, STOP_IO };

struct fair {
	struct canal_chan *ping, *pong;
	enum fair_stop how;
	int pipe[2];
	_Atomic int stop;
	_Atomic long rounds;
};

static void fair_ponger(void *arg)
{
	struct fair *f = arg;
	long v;
	for (;;) {
		CHECK_EQ(canal_recv(f->ping, &v), 0);
		if (v < 0)
			return;
		CHECK_EQ(canal_send(f->pong, &v), 0);
	}
}

/* Sets stop: at once (queued), after a 1 ms sleep (a timer of the loop),
 * or once a byte can be read from the pipe (an I/O completion). */
static void fair_stopper(void *arg)
{
	struct fair *f = arg;
	char c;
	if (f->how == STOP_TIMER)
		CHECK_EQ(canal_sleep_ns(1000000), 0);
	if (f->how == STOP_IO)
		CHECK_EQ(canal_io_read(f->pipe[0], &c, 1, -1, NULL), 1);
	atomic_store(&f->stop, 1);
}

static void *fair_writer(void *arg)
{
	struct fair *f = arg;
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
	CHECK_EQ(write(f->pipe[1], "x", 1), 1);
	return NULL;
}

static void fair_main(void *arg)
{
	struct fair *f = arg;
	CHECK_EQ(canal_spawn(fair_ponger, f), 0);
	CHECK_EQ(canal_spawn(fair_stopper, f), 0);
	uint64_t hang = canal_now_ns() + 20000000000ull;
	long i = 0;
	while (!atomic_load(&f->stop)) {
		long v = i;
		CHECK_EQ(canal_send(f->ping, &v), 0);
		CHECK_EQ(canal_recv(f->pong, &v), 0);
		CHECK_EQ(v, i);
		i++;
		if ((i & 1023) == 0 && canal_now_ns() > hang) {
			fprintf(stderr, "fairness (stop %d): the stopper task "
					"did not run within 20 s (%ld rounds)\n",
				(int)f->how, i);
			abort();
		}
	}
	long end = -1;
	CHECK_EQ(canal_send(f->ping, &end), 0);
	atomic_store(&f->rounds, i);
}

static void test_fairness(size_t cap, enum fair_stop how)
{
	struct fair f = {
		.ping = canal_chan_create(sizeof(long), cap, 0),
		.pong = canal_chan_create(sizeof(long), cap, 0),
		.how = how,
	};
	CHECK(f.ping && f.pong);
	pthread_t w;
	if (how == STOP_IO) {
		CHECK_EQ(pipe(f.pipe), 0);
		w = spawn(fair_writer, &f);
	}
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(fair_main, &f, &o), 0);
	CHECK_EQ(atomic_load(&f.stop), 1);
	if (how == STOP_IO) {
		join(w);
		close(f.pipe[0]);
		close(f.pipe[1]);
	}
	canal_chan_destroy(f.ping);
	canal_chan_destroy(f.pong);
}

/* ---- pipelines ---- */
#define PIPES 4
#define STAGES 4 /* channels per pipeline: source, STAGES-1 relays, sink */

struct pipe {
	struct canal_chan *ch[STAGES];
	uint32_t n;
	_Atomic uint32_t relayed[STAGES]; /* elements each relay passed on */
	uint32_t sunk;
	bool thread_stage; /* relay 1 is an OS thread */
	pthread_t thread;
};

struct relay_arg {
	struct pipe *p;
	int stage; /* receives from ch[stage - 1], sends to ch[stage] */
};

static struct relay_arg relay_args[PIPES][STAGES];

static void relay(struct pipe *p, int stage)
{
	uint32_t v, expect = 0;
	for (;;) {
		int r = canal_recv(p->ch[stage - 1], &v);
		if (r == -EPIPE)
			break;
		CHECK_EQ(r, 0);
		CHECK_EQ(v, expect); /* exactly once, in order */
		expect++;
		CHECK_EQ(canal_send(p->ch[stage], &v), 0);
		atomic_fetch_add(&p->relayed[stage], 1);
	}
	CHECK_EQ(expect, p->n);
	CHECK_EQ(canal_close(p->ch[stage]), 0);
}

static void relay_task(void *arg)
{
	struct relay_arg *a = arg;
	relay(a->p, a->stage);
}

static void *relay_thread(void *arg)
{
	struct relay_arg *a = arg;
	relay(a->p, a->stage);
	return NULL;
}

static void source_task(void *arg)
{
	struct pipe *p = arg;
	for (uint32_t i = 0; i < p->n; i++)
		CHECK_EQ(canal_send(p->ch[0], &i), 0);
	CHECK_EQ(canal_close(p->ch[0]), 0);
}

struct pipes {
	struct pipe p[PIPES];
	_Atomic int spinners_stop;
	_Atomic uint32_t sinks_done;
};

static struct pipes *the_pipes;

static void sink_task(void *arg)
{
	struct pipe *p = arg;
	uint32_t v;
	for (;;) {
		int r = canal_recv(p->ch[STAGES - 1], &v);
		if (r == -EPIPE)
			break;
		CHECK_EQ(r, 0);
		CHECK_EQ(v, p->sunk);
		p->sunk++;
	}
	if (atomic_fetch_add(&the_pipes->sinks_done, 1) + 1 == PIPES)
		atomic_store(&the_pipes->spinners_stop, 1);
}

/* Busy tasks that yield for a while: they keep queues long, so that idle
 * loops steal (the relays among them move between loops). Bounded: a
 * loop kept busy by them delays the OS threads' wake-ups (on a loaded
 * 2-vCPU host, to milliseconds each). */
#define SPINNER_YIELDS 20000

static void spinner_task(void *arg)
{
	struct pipes *ps = arg;
	for (int i = 0; i < SPINNER_YIELDS && !atomic_load(&ps->spinners_stop);
	     i++)
		canal_yield();
}

static void pipes_main(void *arg)
{
	struct pipes *ps = arg;
	for (int k = 0; k < 4; k++)
		CHECK_EQ(canal_spawn(spinner_task, ps), 0);
	for (int i = 0; i < PIPES; i++) {
		struct pipe *p = &ps->p[i];
		CHECK_EQ(canal_spawn(sink_task, p), 0);
		for (int s = 1; s < STAGES; s++) {
			relay_args[i][s] = (struct relay_arg){p, s};
			if (s == 1 && p->thread_stage)
				p->thread = spawn(relay_thread,
						  &relay_args[i][s]);
			else
				CHECK_EQ(canal_spawn(relay_task,
						     &relay_args[i][s]),
					 0);
		}
		CHECK_EQ(canal_spawn(source_task, p), 0);
	}
	/* The thread stages are joined after canal_run (a join here would
	 * block this loop's thread). */
}

static void test_pipes(size_t cap, unsigned loops, uint32_t n)
{
	struct pipes *ps = calloc(1, sizeof(*ps));
	CHECK(ps);
	the_pipes = ps;
	for (int i = 0; i < PIPES; i++) {
		struct pipe *p = &ps->p[i];
		p->n = n;
		p->thread_stage = i % 2 == 1;
		for (int s = 0; s < STAGES; s++)
			CHECK((p->ch[s] = canal_chan_create(sizeof(uint32_t),
							    cap, 0)) != NULL);
	}
	struct canal_run_options o = {.loops = loops};
	CHECK_EQ(canal_run(pipes_main, ps, &o), 0);
	for (int i = 0; i < PIPES; i++) {
		struct pipe *p = &ps->p[i];
		if (p->thread_stage)
			join(p->thread);
		CHECK_EQ(p->sunk, n);
		for (int s = 1; s < STAGES; s++)
			CHECK_EQ(atomic_load(&p->relayed[s]), n);
		for (int s = 0; s < STAGES; s++)
			canal_chan_destroy(p->ch[s]);
	}
	free(ps);
}

/* ---- fan-out ---- */
#define FANS 8

struct fan {
	struct canal_chan *ch[FANS];
	uint32_t n;
	uint32_t got[FANS];
	struct canal_cond *cv;
	_Atomic uint32_t generation;
	_Atomic uint32_t seen[FANS]; /* generations each waiter saw */
};

struct fan_arg {
	struct fan *f;
	int i;
};

static struct fan_arg fan_args[FANS];

static void fan_receiver(void *arg)
{
	struct fan_arg *a = arg;
	uint32_t v;
	for (;;) {
		int r = canal_recv(a->f->ch[a->i], &v);
		if (r == -EPIPE)
			break;
		CHECK_EQ(r, 0);
		CHECK_EQ(v, a->f->got[a->i]);
		a->f->got[a->i]++;
	}
}

static void fan_main(void *arg)
{
	struct fan *f = arg;
	for (int i = 0; i < FANS; i++) {
		fan_args[i] = (struct fan_arg){f, i};
		CHECK_EQ(canal_spawn(fan_receiver, &fan_args[i]), 0);
	}
	canal_yield(); /* let them park */
	for (uint32_t k = 0; k < f->n; k++)
		for (int i = 0; i < FANS; i++)
			CHECK_EQ(canal_send(f->ch[i], &k), 0);
	for (int i = 0; i < FANS; i++)
		CHECK_EQ(canal_close(f->ch[i]), 0);
}

/* Condvar broadcast: every waiter parked on it is woken by one call. */
static void cond_waiter(void *arg)
{
	struct fan_arg *a = arg;
	struct fan *f = a->f;
	uint32_t g = 0;
	while (g < f->n) {
		uint32_t now = atomic_load(&f->generation);
		if (now == g) {
			canal_cond_wait(f->cv, -1);
			continue;
		}
		CHECK(now > g);
		g = now;
		atomic_fetch_add(&f->seen[a->i], 1);
	}
}

static void cond_main(void *arg)
{
	struct fan *f = arg;
	for (int i = 0; i < FANS; i++) {
		fan_args[i] = (struct fan_arg){f, i};
		CHECK_EQ(canal_spawn(cond_waiter, &fan_args[i]), 0);
	}
	for (uint32_t k = 1; k <= f->n; k++) {
		atomic_store(&f->generation, k);
		canal_cond_broadcast(f->cv);
		canal_yield();
	}
}

static void test_fan(size_t cap, unsigned loops, uint32_t n)
{
	struct fan *f = calloc(1, sizeof(*f));
	CHECK(f);
	f->n = n;
	for (int i = 0; i < FANS; i++)
		CHECK((f->ch[i] = canal_chan_create(sizeof(uint32_t), cap,
						    0)) != NULL);
	struct canal_run_options o = {.loops = loops};
	CHECK_EQ(canal_run(fan_main, f, &o), 0);
	for (int i = 0; i < FANS; i++) {
		CHECK_EQ(f->got[i], n);
		canal_chan_destroy(f->ch[i]);
	}
	/* One loop: a waiter's check and its wait are one step (no other
	 * task runs between them), so no broadcast falls in between. */
	struct canal_run_options one = {.loops = 1};
	CHECK((f->cv = canal_cond_create()) != NULL);
	CHECK_EQ(canal_run(cond_main, f, &one), 0);
	for (int i = 0; i < FANS; i++)
		CHECK(atomic_load(&f->seen[i]) >= 1); /* every one woke */
	canal_cond_destroy(f->cv);
	free(f);
}

/* ---- select and timed receives, task to task ---- */
struct sel {
	struct canal_chan *a, *b;
	uint32_t n;
	uint32_t got[2];
	uint32_t timeouts;
};

static void sel_feeder(void *arg)
{
	struct canal_chan *ch = arg;
	/* n is in the channel's owner; the feeders send until closed out. */
	for (uint32_t i = 0;; i++) {
		if (i % 64 == 63)
			canal_sleep_ns(200000); /* let timed receives expire */
		int r = canal_send(ch, &i);
		if (r == -EPIPE)
			return;
		CHECK_EQ(r, 0);
	}
}

static void sel_main(void *arg)
{
	struct sel *s = arg;
	CHECK_EQ(canal_spawn(sel_feeder, s->a), 0);
	CHECK_EQ(canal_spawn(sel_feeder, s->b), 0);
	uint32_t va, vb;
	struct canal_case cases[2] = {
		{.ch = s->a, .op = CANAL_OP_RECV, .elt = &va},
		{.ch = s->b, .op = CANAL_OP_RECV, .elt = &vb},
	};
	while (s->got[0] + s->got[1] < s->n) {
		if ((s->got[0] + s->got[1]) % 3 == 0) {
			/* A short timed receive: it may time out with its
			 * wait node still linked. */
			int r = canal_recv_timeout(s->a, &va, 50000);
			if (r == -ETIMEDOUT) {
				s->timeouts++;
				continue;
			}
			CHECK_EQ(r, 0);
			CHECK_EQ(va, s->got[0]);
			s->got[0]++;
			continue;
		}
		int i = canal_select(cases, 2, -1, 0);
		CHECK(i == 0 || i == 1);
		CHECK_EQ(cases[i].result, 0);
		CHECK_EQ(i == 0 ? va : vb, s->got[i]); /* FIFO per feeder */
		s->got[i]++;
	}
	CHECK_EQ(canal_close(s->a), 0);
	CHECK_EQ(canal_close(s->b), 0);
}

static void test_select(size_t cap, unsigned loops, uint32_t n)
{
	struct sel s = {.n = n};
	s.a = canal_chan_create(sizeof(uint32_t), cap, 0);
	s.b = canal_chan_create(sizeof(uint32_t), cap, 0);
	CHECK(s.a && s.b);
	struct canal_run_options o = {.loops = loops};
	CHECK_EQ(canal_run(sel_main, &s, &o), 0);
	CHECK_EQ(s.got[0] + s.got[1], n);
	canal_chan_destroy(s.a);
	canal_chan_destroy(s.b);
}

int main(void)
{
	alarm(200); /* a starved task or a lost wake-up hangs: fail */
	for (size_t cap = 0; cap <= 1; cap++) {
		test_fairness(cap, STOP_QUEUED);
		test_fairness(cap, STOP_TIMER);
		test_fairness(cap, STOP_IO);
		test_pipes(cap, 1, 5000);
		test_pipes(cap, 3, 5000);
		test_fan(cap, 1, 2000);
		test_fan(cap, 3, 2000);
		test_select(cap, 1, 6000);
		test_select(cap, 2, 6000);
	}
	printf("test_task_handoff: ok\n");
	return 0;
}
