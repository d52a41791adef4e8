/* SPDX-License-Identifier: MIT */
/*
 * workloads.c - the channel workloads shared by chanbench-canal and
 * canal-micro (see workloads.h), on canal's public API only.
 */
#define _GNU_SOURCE
#include "workloads.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kind_names[WL_NKINDS] = {
	[WL_SEQ] = "seq",
	[WL_SPSC] = "spsc",
	[WL_MPSC] = "mpsc",
	[WL_MPMC] = "mpmc",
	[WL_SELECT_RX] = "select_rx",
	[WL_SELECT_BOTH] = "select_both",
	[WL_PING_PONG] = "ping_pong",
};

const char *wl_kind_name(enum wl_kind kind)
{
	return (unsigned)kind < WL_NKINDS ? kind_names[kind] : "?";
}

int wl_kind_parse(const char *name)
{
	for (int k = 0; k < WL_NKINDS; k++)
		if (strcmp(name, kind_names[k]) == 0)
			return k;
	return -1;
}

size_t wl_parse_count(const char *s, const char *what)
{
	size_t v;

	if (bench_parse_size(s, 0, SIZE_MAX, &v))
		bench_die("bad %s: %s", what, s);
	return v;
}

size_t wl_messages(enum wl_kind kind, const struct wl_params *p)
{
	switch (kind) {
	case WL_SEQ:
	case WL_SPSC:
		return p->n;
	case WL_PING_PONG:
		return p->n / 2 * 2;
	default:
		return p->n / p->threads * p->threads;
	}
}

int wl_possible(enum wl_kind kind, const struct wl_params *p)
{
	return !(kind == WL_SEQ && p->capacity == 0);
}

/* A message: its sequence number in each of its 8-byte words. */
struct msg {
	uint64_t w[WL_MSG_MAX / 8];
};

static inline void msg_fill(struct msg *m, size_t size, size_t i)
{
	for (size_t k = 0; k < size / 8; k++)
		m->w[k] = i;
}

static void check(int rc, const char *what)
{
	if (rc < 0)
		bench_die("%s: %s", what, canal_strerror(rc));
}

static struct canal_chan *chan_new(const struct wl_params *p)
{
	struct canal_chan *ch = canal_chan_create(p->msg_size, p->capacity, 0);

	if (!ch)
		bench_die("canal_chan_create(%zu, %zu): %s", p->msg_size, p->capacity,
		    strerror(errno));
	return ch;
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

enum role { R_SEND, R_RECV, R_SELECT_SEND, R_SELECT_RECV, R_PONG };

struct worker {
	pthread_t tid;
	struct canal_chan *done; /* tasks: worker_task sends here when done */
	enum role role;
	struct canal_chan **chs; /* 1 channel, T for selects, 2 for pong */
	size_t nch;
	size_t count; /* messages (R_PONG: round trips) */
	size_t size;
	int cpu; /* -1: not pinned */
};

static void do_send(struct canal_chan *ch, size_t count, size_t size)
{
	struct msg m;

	for (size_t i = 0; i < count; i++) {
		msg_fill(&m, size, i);
		check(canal_send(ch, &m), "canal_send");
	}
}

static void do_recv(struct canal_chan *ch, size_t count)
{
	struct msg m;

	for (size_t i = 0; i < count; i++)
		check(canal_recv(ch, &m), "canal_recv");
}

static void do_select(struct canal_chan **chs, size_t nch, size_t count,
		      size_t size, int op)
{
	struct canal_case cases[WL_THREADS_MAX];
	struct msg m;

	for (size_t k = 0; k < nch; k++)
		cases[k] = (struct canal_case){ .ch = chs[k], .op = op, .elt = &m };
	for (size_t i = 0; i < count; i++) {
		if (op == CANAL_OP_SEND)
			msg_fill(&m, size, i);
		int idx = canal_select(cases, nch, -1, 0);
		check(idx, "canal_select");
		check(cases[idx].result, "canal_select case");
	}
}

static void do_pong(struct canal_chan *ping, struct canal_chan *pong,
		    size_t rounds)
{
	struct msg m;

	for (size_t i = 0; i < rounds; i++) {
		check(canal_recv(ping, &m), "canal_recv");
		check(canal_send(pong, &m), "canal_send");
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	(void)bench_pin_self(w->cpu);
	switch (w->role) {
	case R_SEND:
		do_send(w->chs[0], w->count, w->size);
		break;
	case R_RECV:
		do_recv(w->chs[0], w->count);
		break;
	case R_SELECT_SEND:
		do_select(w->chs, w->nch, w->count, w->size, CANAL_OP_SEND);
		break;
	case R_SELECT_RECV:
		do_select(w->chs, w->nch, w->count, w->size, CANAL_OP_RECV);
		break;
	case R_PONG:
		do_pong(w->chs[0], w->chs[1], w->count);
		break;
	}
	return NULL;
}

/* Task mode: the channel on which every worker task says it has ended
 * (capacity 2 * WL_THREADS_MAX, so a send never waits); NULL with
 * threads. Created before canal_run and destroyed after it returned: a
 * worker's last send may still be inside canal_send (waking the main task)
 * when the main task has its message, and canal_run returns only once
 * every task has ended. */
static struct canal_chan *task_done;

static void worker_task(void *arg)
{
	struct worker *w = arg;

	worker_main(w);
	check(canal_send(w->done, NULL), "canal_send (done)");
}

static void start(struct worker *w, enum role role, struct canal_chan **chs,
		  size_t nch, size_t count, size_t size, int cpu)
{
	int rc;

	*w = (struct worker){ .role = role, .chs = chs, .nch = nch,
			      .count = count, .size = size, .cpu = cpu,
			      .done = task_done };
	if (task_done) {
		w->cpu = -1;
		check(canal_spawn(worker_task, w), "canal_spawn");
		return;
	}
	rc = pthread_create(&w->tid, NULL, worker_main, w);
	if (rc)
		bench_die("pthread_create: %s", strerror(rc));
}

static void join_all(struct worker *ws, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (task_done)
			check(canal_recv(task_done, NULL), "canal_recv (done)");
		else
			pthread_join(ws[i].tid, NULL);
	}
}

/* ------------------------------------------------------------------ */
/* Workloads                                                           */
/* ------------------------------------------------------------------ */

static void run_seq(const struct wl_params *p)
{
	struct canal_chan *ch = chan_new(p);
	size_t chunk = p->capacity < p->n ? p->capacity : p->n;
	struct msg m;

	for (size_t done = 0; done < p->n;) {
		size_t k = p->n - done < chunk ? p->n - done : chunk;

		for (size_t i = 0; i < k; i++) {
			msg_fill(&m, p->msg_size, done + i);
			check(canal_send(ch, &m), "canal_send");
		}
		do_recv(ch, k);
		done += k;
	}
	canal_chan_destroy(ch);
}

static void run_spsc(const struct wl_params *p)
{
	struct canal_chan *ch = chan_new(p);
	struct worker w;

	start(&w, R_SEND, &ch, 1, p->n, p->msg_size, -1);
	do_recv(ch, p->n);
	join_all(&w, 1);
	canal_chan_destroy(ch);
}

/* mpsc (receivers == 0: the main thread receives) and mpmc. */
static void run_mp(const struct wl_params *p, int mpmc)
{
	struct canal_chan *ch = chan_new(p);
	struct worker ws[2 * WL_THREADS_MAX];
	size_t t = p->threads, per = p->n / t, nw = 0;

	for (size_t i = 0; i < t; i++)
		start(&ws[nw++], R_SEND, &ch, 1, per, p->msg_size, -1);
	if (mpmc) {
		for (size_t i = 0; i < t; i++)
			start(&ws[nw++], R_RECV, &ch, 1, per, p->msg_size, -1);
	} else {
		do_recv(ch, per * t);
	}
	join_all(ws, nw);
	canal_chan_destroy(ch);
}

static void run_select(const struct wl_params *p, int both)
{
	struct canal_chan *chs[WL_THREADS_MAX];
	struct worker ws[2 * WL_THREADS_MAX];
	size_t t = p->threads, per = p->n / t, nw = 0;

	for (size_t k = 0; k < t; k++)
		chs[k] = chan_new(p);
	if (both) {
		for (size_t i = 0; i < t; i++)
			start(&ws[nw++], R_SELECT_SEND, chs, t, per, p->msg_size, -1);
		for (size_t i = 0; i < t; i++)
			start(&ws[nw++], R_SELECT_RECV, chs, t, per, p->msg_size, -1);
	} else {
		for (size_t k = 0; k < t; k++)
			start(&ws[nw++], R_SEND, &chs[k], 1, per, p->msg_size, -1);
		do_select(chs, t, per * t, p->msg_size, CANAL_OP_RECV);
	}
	join_all(ws, nw);
	for (size_t k = 0; k < t; k++)
		canal_chan_destroy(chs[k]);
}

static void run_ping_pong(const struct wl_params *p)
{
	struct canal_chan *chs[2] = { chan_new(p), chan_new(p) };
	size_t rounds = p->n / 2;
	struct worker w;
	struct msg m;
	cpu_set_t saved;
	int cpu_a, cpu_b;

	bench_two_cpus(p->pin && !p->tasks, &cpu_a, &cpu_b);
	if (cpu_a >= 0 &&
	    pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) != 0)
		cpu_a = cpu_b = -1;
	start(&w, R_PONG, chs, 2, rounds, p->msg_size, cpu_b);
	(void)bench_pin_self(cpu_a);
	for (size_t i = 0; i < rounds; i++) {
		msg_fill(&m, p->msg_size, i);
		check(canal_send(chs[0], &m), "canal_send");
		check(canal_recv(chs[1], &m), "canal_recv");
	}
	join_all(&w, 1);
	if (cpu_a >= 0) /* unpin the main thread */
		(void)pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	canal_chan_destroy(chs[0]);
	canal_chan_destroy(chs[1]);
}

static void run_kind(enum wl_kind kind, const struct wl_params *p)
{
	switch (kind) {
	case WL_SEQ:
		run_seq(p);
		break;
	case WL_SPSC:
		run_spsc(p);
		break;
	case WL_MPSC:
		run_mp(p, 0);
		break;
	case WL_MPMC:
		run_mp(p, 1);
		break;
	case WL_SELECT_RX:
		run_select(p, 0);
		break;
	case WL_SELECT_BOTH:
		run_select(p, 1);
		break;
	case WL_PING_PONG:
		run_ping_pong(p);
		break;
	default:
		bench_die("unknown workload %d", (int)kind);
	}
}

struct task_run {
	enum wl_kind kind;
	const struct wl_params *p;
	double seconds;
};

static void task_main(void *arg)
{
	struct task_run *r = arg;
	double t0;

	t0 = bench_now_s();
	run_kind(r->kind, r->p);
	r->seconds = bench_now_s() - t0;
}

double wl_run(enum wl_kind kind, const struct wl_params *p)
{
	double t0;

	if (p->threads < 1 || p->threads > WL_THREADS_MAX)
		bench_die("threads must be 1..%d", WL_THREADS_MAX);
	if (p->msg_size > WL_MSG_MAX || p->msg_size % 8)
		bench_die("message size must be 0, 8, ... %d", WL_MSG_MAX);
	if (!wl_possible(kind, p))
		bench_die("%s is impossible at capacity %zu", wl_kind_name(kind),
		    p->capacity);
	if (p->tasks) {
		struct task_run r = { .kind = kind, .p = p };
		int rc;

		task_done = canal_chan_create(0, 2 * WL_THREADS_MAX, 0);
		if (!task_done)
			bench_die("canal_chan_create: %s", strerror(errno));
		/* CANAL_BENCH_LOOPS: chanbench-canal.c */
		struct canal_run_options o = {0};
		const char *lv = getenv("CANAL_BENCH_LOOPS");
		o.loops = lv ? (unsigned)atoi(lv) : 0;
		rc = canal_run(task_main, &r, &o);
		check(rc, "canal_run");
		canal_chan_destroy(task_done);
		task_done = NULL;
		return r.seconds;
	}
	t0 = bench_now_s();
	run_kind(kind, p);
	return bench_now_s() - t0;
}

/* ------------------------------------------------------------------ */
/* The cache-line round trip                                           */
/* ------------------------------------------------------------------ */

struct bouncer {
	alignas(64) _Atomic uint64_t line; /* alone in its cache line */
	char pad[64 - sizeof(uint64_t)];
	size_t rounds;
	int cpu;
};

static void *bounce_back(void *arg)
{
	struct bouncer *b = arg;

	(void)bench_pin_self(b->cpu);
	for (size_t i = 0; i < b->rounds; i++) {
		wl_wait_value(&b->line, 2 * i + 1);
		atomic_store_explicit(&b->line, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

double wl_cacheline_roundtrips(size_t rounds, int pin)
{
	struct bouncer *b;
	pthread_t tid;
	cpu_set_t saved;
	double t0, t1;
	int cpu_a, cpu_b, rc;

	if (rounds < 2)
		rounds = 2;
	b = aligned_alloc(64, sizeof(*b));
	if (!b)
		bench_die("out of memory");
	atomic_init(&b->line, 0);
	b->rounds = rounds;
	bench_two_cpus(pin, &cpu_a, &cpu_b);
	b->cpu = cpu_b;
	if (cpu_a >= 0 &&
	    pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) != 0)
		cpu_a = b->cpu = -1;
	rc = pthread_create(&tid, NULL, bounce_back, b);
	if (rc)
		bench_die("pthread_create: %s", strerror(rc));
	(void)bench_pin_self(cpu_a);
	/* One untimed round trip: the other thread runs before timing starts;
	 * the result is scaled back to `rounds` round trips. */
	atomic_store_explicit(&b->line, 1, memory_order_release);
	wl_wait_value(&b->line, 2);
	t0 = bench_now_s();
	for (size_t i = 1; i < rounds; i++) {
		atomic_store_explicit(&b->line, 2 * i + 1, memory_order_release);
		wl_wait_value(&b->line, 2 * i + 2);
	}
	t1 = bench_now_s();
	pthread_join(tid, NULL);
	if (cpu_a >= 0)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	free(b);
	return (t1 - t0) * (double)rounds / (double)(rounds - 1);
}
