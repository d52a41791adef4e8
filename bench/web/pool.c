/* SPDX-License-Identifier: MIT */
/*
 * pool.c - a fixed pool of threads, each accepting (issue 14): every
 * thread loops accept -> serve that connection with blocking waits ->
 * accept. Pool size: 16 threads per --cores, or CANAL_WEB_POOL_THREADS.
 *
 * A keep-alive client would hold its thread forever, so a thread whose
 * connection is idle between requests while no thread waits in accept
 * also watches the listener; when a client is waiting it accepts it and
 * closes its idle connection (HTTP lets a server close an idle persistent
 * connection at any time). Beyond the pool size, clients wait in the
 * listen queue: the style's limit, shown in the report.
 *
 * Shared state: `accepting`, the number of threads blocked in accept,
 * relaxed atomics (a hint: a wrong read costs one idle-connection trade
 * too many or too few, never correctness).
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct web_ctx *g_ctx;
static atomic_int accepting;

static bool nobody_accepting(void)
{
	return atomic_load_explicit(&accepting, memory_order_relaxed) == 0;
}

static void *worker(void *p)
{
	struct web_ctx *ctx = g_ctx;
	struct web_conn *c = malloc(sizeof *c);
	(void)p;
	if (!c)
		return NULL;
	c->fd = -1;
	while (!web_stop) {
		if (c->fd < 0) {
			atomic_fetch_add_explicit(&accepting, 1, memory_order_relaxed);
			struct pollfd pf = {.fd = ctx->listen_fd, .events = POLLIN};
			int r = poll(&pf, 1, WEB_TICK_MS);
			int fd = r > 0 ? web_accept(ctx->listen_fd) : -EAGAIN;
			atomic_fetch_sub_explicit(&accepting, 1, memory_order_relaxed);
			if (fd == -EMFILE)
				web_sleep_ms(WEB_ACCEPT_BACKOFF_MS);
			if (fd < 0)
				continue;
			web_conn_init(c, fd, &ctx->srv);
		}
		if (web_serve_conn(ctx, c, ctx->listen_fd, nobody_accepting) == 0)
			continue; /* closed: c->fd == -1 */
		int fd = web_accept(ctx->listen_fd);
		if (fd == -EMFILE)
			web_sleep_ms(WEB_ACCEPT_BACKOFF_MS);
		if (fd < 0)
			continue; /* another thread took it: keep serving c */
		web_close(c);
		web_conn_init(c, fd, &ctx->srv);
	}
	if (c->fd >= 0)
		web_close(c);
	free(c);
	return NULL;
}

static int run(struct web_ctx *ctx)
{
	int n = 16 * ctx->cores;
	const char *e = getenv("CANAL_WEB_POOL_THREADS");
	if (e && atoi(e) > 0)
		n = atoi(e);
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
	return 0;
}

const struct web_style web_style = {"pool", run};
