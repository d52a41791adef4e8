/* SPDX-License-Identifier: MIT */
/*
 * pool.c - a fixed pool of threads, each accepting (issue 14): every
 * thread loops accept -> serve that connection with blocking waits ->
 * accept. Pool size: 16 threads per --cores, or CANAL_WEB_POOL_THREADS.
 *
 * A thread never waits on one client's input while others wait: a
 * connection waiting for input (idle between requests, or a head not yet
 * complete: a slow client) whose thread sees work waiting while no thread
 * is free is parked, and the thread takes the work. Parked connections
 * sit in `wait_ep`, an epoll set shared by the pool that also holds the
 * listener: a free thread waits on it, and takes either a new client
 * (accept) or a parked connection that became readable (EPOLLONESHOT: one
 * thread is told). Parked connections keep their deadlines (header or
 * idle timeout): any thread sweeps the expired ones every WEB_TICK_MS.
 * Beyond the pool size, connections being answered are served in turn;
 * clients wait in the listen queue only while every thread is answering
 * (not waiting for input): the style's limit, shown in the report.
 *
 * Parking (park_mu guards slots, nslots, free_idx, nfree and every
 * parked connection's struct): slot i holds a parked connection or NULL,
 * and gen[i] counts its uses; its epoll registration carries (gen << 32 |
 * i). A thread claims a slot's connection under park_mu only if the
 * event's gen is still the slot's (else the sweeper or another thread
 * took it, and the event is stale); the claim clears the slot and bumps
 * gen, so one connection has one owner. Registration (EPOLL_CTL_ADD) is
 * done under park_mu, so a sweeper cannot close the fd before it is in
 * the set. The mutex orders the parking thread's writes to the
 * connection before the claiming thread's reads.
 *
 * `accepting`, the number of threads free (waiting on wait_ep), is a
 * relaxed atomic hint: a wrong read costs one park too many or a short
 * wait, never correctness.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#define LISTENER_TAG UINT64_MAX

static struct web_ctx *g_ctx;
static atomic_int accepting;
static int wait_ep = -1;

static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static struct web_conn **slots;
static uint32_t *gen;
static uint32_t nslots, *free_idx, nfree;
static uint64_t next_sweep;

/* Park c (waiting for input); false (c untouched) when it cannot be. */
static bool park(struct web_conn *c)
{
	bool ok = false;
	pthread_mutex_lock(&park_mu);
	if (nfree == 0) {
		uint32_t cap = nslots ? 2 * nslots : 64;
		struct web_conn **s = realloc(slots, cap * sizeof *s);
		if (s)
			slots = s;
		uint32_t *g = s ? realloc(gen, cap * sizeof *g) : NULL;
		if (g)
			gen = g;
		uint32_t *f = g ? realloc(free_idx, cap * sizeof *f) : NULL;
		if (f) {
			free_idx = f;
			for (uint32_t i = nslots; i < cap; i++) {
				slots[i] = NULL;
				gen[i] = 0;
				free_idx[nfree++] = cap - 1 - (i - nslots);
			}
			nslots = cap;
		}
	}
	if (nfree) {
		uint32_t i = free_idx[nfree - 1];
		struct epoll_event ev = {
			.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT,
			.data.u64 = (uint64_t)gen[i] << 32 | i,
		};
		if (epoll_ctl(wait_ep, EPOLL_CTL_ADD, c->fd, &ev) == 0) {
			nfree--;
			slots[i] = c;
			ok = true;
		}
	}
	pthread_mutex_unlock(&park_mu);
	return ok;
}

/* Under park_mu: take slot i's connection out of the set. */
static struct web_conn *unpark_locked(uint32_t i)
{
	struct web_conn *c = slots[i];
	slots[i] = NULL;
	gen[i]++;
	free_idx[nfree++] = i;
	epoll_ctl(wait_ep, EPOLL_CTL_DEL, c->fd, NULL);
	return c;
}

/* The parked connection an event names, or NULL when it is stale. */
static struct web_conn *claim(uint64_t tag)
{
	uint32_t i = (uint32_t)tag, g = (uint32_t)(tag >> 32);
	struct web_conn *c = NULL;
	pthread_mutex_lock(&park_mu);
	if (i < nslots && gen[i] == g && slots[i])
		c = unpark_locked(i);
	pthread_mutex_unlock(&park_mu);
	return c;
}

/* Close parked connections past their deadline (all when web_stop),
 * at most once per WEB_TICK_MS over the pool. */
static void sweep(bool all)
{
	uint64_t now = web_now_ns();
	if (!all && now < __atomic_load_n(&next_sweep, __ATOMIC_RELAXED))
		return;
	if (pthread_mutex_trylock(&park_mu) != 0) {
		if (!all)
			return;
		pthread_mutex_lock(&park_mu);
	}
	__atomic_store_n(&next_sweep, now + WEB_TICK_MS * 1000000ull, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < nslots; i++) {
		if (!slots[i] || (!all && now < slots[i]->deadline_ns))
			continue;
		struct web_conn *c = unpark_locked(i);
		web_close(c);
		free(c);
	}
	pthread_mutex_unlock(&park_mu);
}

static bool nobody_accepting(void)
{
	sweep(false);
	return atomic_load_explicit(&accepting, memory_order_relaxed) == 0;
}

/* Take one piece of waiting work: a new client or a ready parked
 * connection (in *c, malloc'd). 0, -EAGAIN (nothing), -EMFILE. */
static int take_work(struct web_conn **c)
{
	struct epoll_event ev;
	if (epoll_wait(wait_ep, &ev, 1, 0) != 1)
		return -EAGAIN;
	if (ev.data.u64 != LISTENER_TAG) {
		*c = claim(ev.data.u64);
		return *c ? 0 : -EAGAIN;
	}
	struct web_conn *n = malloc(sizeof *n);
	if (!n)
		return -EMFILE;
	int fd = web_accept(g_ctx->listen_fd);
	if (fd < 0) {
		free(n);
		return fd;
	}
	web_conn_init(n, fd, &g_ctx->srv);
	*c = n;
	return 0;
}

static void *worker(void *p)
{
	struct web_ctx *ctx = g_ctx;
	struct web_conn *c = NULL;
	(void)p;
	while (!web_stop) {
		if (!c) {
			atomic_fetch_add_explicit(&accepting, 1, memory_order_relaxed);
			struct pollfd pf = {.fd = wait_ep, .events = POLLIN};
			int r = poll(&pf, 1, WEB_TICK_MS);
			int t = r > 0 ? take_work(&c) : -EAGAIN;
			atomic_fetch_sub_explicit(&accepting, 1, memory_order_relaxed);
			sweep(false);
			if (t == -EMFILE)
				web_sleep_ms(WEB_ACCEPT_BACKOFF_MS);
			if (t < 0)
				continue;
		}
		if (web_serve_conn(ctx, c, wait_ep, nobody_accepting) == 0) {
			free(c); /* closed */
			c = NULL;
			continue;
		}
		/* c waits for input and work waits: take it, park c. */
		struct web_conn *n = NULL;
		int t = take_work(&n);
		if (t == -EMFILE)
			web_sleep_ms(WEB_ACCEPT_BACKOFF_MS);
		if (t < 0)
			continue; /* another thread took it: keep serving c */
		if (!park(c)) {
			/* Cannot park (no memory): an idle keep-alive
			 * connection may be closed at any time. */
			web_close(c);
			free(c);
		}
		c = n;
	}
	if (c) {
		web_close(c);
		free(c);
	}
	return NULL;
}

static int run(struct web_ctx *ctx)
{
	int n = 16 * ctx->cores;
	const char *e = getenv("CANAL_WEB_POOL_THREADS");
	if (e && atoi(e) > 0)
		n = atoi(e);
	wait_ep = epoll_create1(EPOLL_CLOEXEC);
	if (wait_ep < 0)
		return -errno;
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = LISTENER_TAG};
	if (epoll_ctl(wait_ep, EPOLL_CTL_ADD, ctx->listen_fd, &ev) < 0)
		return -errno;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	pthread_attr_t attr;
	if (!t)
		return -ENOMEM;
	g_ctx = ctx;
	web_thread_attr(&attr);
	int started = 0;
	for (; started < n; started++)
		if (pthread_create(&t[started], &attr, worker, NULL) != 0)
			break;
	pthread_attr_destroy(&attr);
	if (started == 0) {
		free(t);
		return -EAGAIN;
	}
	web_announce(ctx);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	sweep(true);
	free(slots);
	free(gen);
	free(free_idx);
	close(wait_ep);
	return 0;
}

const struct web_style web_style = {"pool", run};
