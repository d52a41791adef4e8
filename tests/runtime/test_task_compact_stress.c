/* test_task_compact_stress.c - stack compaction (CANAL_RUN_COMPACT_STACKS,
 * epoch 1 ms) against everything that can resume a task while the sweep
 * holds it or right after: timed receives (timers), 256 tasks parked at a
 * random call depth (0-11 frames, each frame's locals checked after the
 * wait), yields and detach/attach between waits, 8 ping-pong pairs on
 * capacity-0 channels (the direct park), 4 loops stealing, and a plain
 * thread waking tasks at random for 2 s, then closing every channel.
 * Checks: no local of any frame changed, every task ended, the runtime
 * compacted tasks meanwhile. Written by a hostile review of the change.
 */
#define _GNU_SOURCE
#include <canal/channel.h>
#include <canal/task.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"
#include "runtime/internal.h"

#define N 256
#define WORDS 48
static struct canal_chan *ch[N];
static struct canal_chan *pp[N / 2][2];
static _Atomic long bad, got, timeouts, done_tasks;
static _Atomic int stop;
static uint64_t now_ns(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec*1000000000ull+ts.tv_nsec;}
static uint64_t mix(uint64_t a, uint64_t b){uint64_t x=a*0x9e3779b97f4a7c15ull^(b+0x632be59bd9b4e019ull);x^=x>>29;return x*0xbf58476d1ce4e5b9ull;}
static uint64_t rnd(uint64_t *s){*s^=*s<<13;*s^=*s>>7;*s^=*s<<17;return *s;}

static __attribute__((noinline)) int deep_recv(struct canal_chan *c, long *v, int depth, int64_t to, uint64_t id)
{
	volatile uint64_t pad[8];
	for (int i = 0; i < 8; i++) pad[i] = mix(id, depth * 100 + i);
	int r;
	if (depth > 0) r = deep_recv(c, v, depth - 1, to, id);
	else r = to < 0 ? canal_recv(c, v) : canal_recv_timeout(c, v, to);
	for (int i = 0; i < 8; i++) if (pad[i] != mix(id, depth * 100 + i)) atomic_fetch_add(&bad, 1);
	return r;
}

static void worker(void *arg)
{
	uint64_t id = (uintptr_t)arg, s = id * 7919 + 1;
	volatile uint64_t a[WORDS];
	uint64_t round = 0;
	for (int i = 0; i < WORDS; i++) a[i] = mix(id, round * 1000 + i);
	for (;;) {
		long v;
		int depth = (int)(rnd(&s) % 12);
		int64_t to = (rnd(&s) % 3) ? (int64_t)(500000 + rnd(&s) % 3000000) : -1;
		int r = deep_recv(ch[id], &v, depth, to, id);
		for (int i = 0; i < WORDS; i++) if (a[i] != mix(id, round * 1000 + i)) { atomic_fetch_add(&bad, 1); break; }
		if (r == -EPIPE) break;
		if (r == -ETIMEDOUT) atomic_fetch_add(&timeouts, 1);
		else if (r == 0) atomic_fetch_add(&got, 1);
		else atomic_fetch_add(&bad, 1000);
		round++;
		for (int i = 0; i < WORDS; i++) a[i] = mix(id, round * 1000 + i);
		switch (rnd(&s) % 8) {
		case 0: canal_yield(); break;
		case 1: canal_detach(); canal_attach(); break;
		default: break;
		}
	}
	atomic_fetch_add(&done_tasks, 1);
}

/* ping-pong pairs: direct park path */
static void pinger(void *arg)
{
	uint64_t id = (uintptr_t)arg, s = id + 99;
	volatile uint64_t a[WORDS];
	for (int i = 0; i < WORDS; i++) a[i] = mix(id + 5000, i);
	int side = id & 1; int pair = id / 2;
	long v = 0;
	for (long k = 0;; k++) {
		if (side == 0 && k % 64 == 0) canal_sleep_ns(1000000 + rnd(&s) % 2000000); /* let it age */
		if (side == 0) { if (canal_send(pp[pair][0], &k) == -EPIPE) break; if (canal_recv(pp[pair][1], &v) == -EPIPE) break; if (v != k) atomic_fetch_add(&bad, 1);} 
		else { if (canal_recv(pp[pair][0], &v) == -EPIPE) break; if (canal_send(pp[pair][1], &v) == -EPIPE) break; }
		for (int i = 0; i < WORDS; i++) if (a[i] != mix(id + 5000, i)) { atomic_fetch_add(&bad, 1); break; }
		if (atomic_load(&stop)) break;
	}
}

static void *waker(void *arg)
{
	(void)arg; uint64_t s = 12345, t0 = now_ns();
	while (now_ns() - t0 < 2000000000ull) {
		long v = 1; int i = rnd(&s) % N;
		canal_try_send(ch[i], &v);
		struct timespec d = {0, (long)(rnd(&s) % 200000)};
		nanosleep(&d, NULL);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < N; i++) canal_close(ch[i]);
	for (int i = 0; i < N / 2; i++) { canal_close(pp[i][0]); canal_close(pp[i][1]); }
	return NULL;
}

static void main_task(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; i < N; i++) CHECK_EQ(canal_spawn(worker, (void *)i), 0);
	for (uintptr_t i = 0; i < 16; i++) CHECK_EQ(canal_spawn(pinger, (void *)i), 0);
}

int main(int argc, char **argv)
{
	setenv("CANAL_STACK_COMPACT_MS", "1", 0);
	for (int i = 0; i < N; i++) ch[i] = canal_chan_create(sizeof(long), 1, 0);
	for (int i = 0; i < N / 2; i++) { pp[i][0] = canal_chan_create(sizeof(long), 0, 0); pp[i][1] = canal_chan_create(sizeof(long), 0, 0); }
	pthread_t th; pthread_create(&th, NULL, waker, NULL);
	struct canal_run_options o = {.loops = argc > 1 ? atoi(argv[1]) : 4, .flags = CANAL_RUN_COMPACT_STACKS};
	int r = canal_run(main_task, NULL, &o);
	pthread_join(th, NULL);
	uint64_t c, nn;
	canal__compact_stats(&c, &nn);
	printf("compacted %llu, holds interrupted %llu; received %ld, timeouts "
	       "%ld, bad %ld, tasks ended %ld of %d\n",
	       (unsigned long long)c, (unsigned long long)nn, (long)got,
	       (long)timeouts, (long)bad, (long)done_tasks, N);
	CHECK_EQ(r, 0);
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK_EQ(atomic_load(&done_tasks), N);
	CHECK(c > 0);
	for (int i = 0; i < N; i++)
		canal_chan_destroy(ch[i]);
	for (int i = 0; i < N / 2; i++) {
		canal_chan_destroy(pp[i][0]);
		canal_chan_destroy(pp[i][1]);
	}
	return 0;
}
