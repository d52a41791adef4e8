/* SPDX-License-Identifier: MIT */
/*
 * threads.c - a thread per connection (issue 14): the accepting thread
 * starts one detached thread per accepted connection, which serves it with
 * blocking waits (web_serve_conn) and ends when it closes. --cores is not
 * used: the kernel schedules the threads. Collapses where threads do
 * (memory, scheduler) at thousands of connections.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static const struct web_ctx *g_ctx;

static void *conn_main(void *p)
{
	struct web_conn *c = p;
	web_serve_conn(g_ctx, c, -1, NULL);
	free(c);
	return NULL;
}

static int run(struct web_ctx *ctx)
{
	pthread_attr_t attr;
	g_ctx = ctx;
	web_thread_attr(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	web_announce(ctx);
	while (!web_stop) {
		struct pollfd p = {.fd = ctx->listen_fd, .events = POLLIN};
		if (poll(&p, 1, WEB_TICK_MS) <= 0)
			continue;
		int fd = web_accept(ctx->listen_fd);
		if (fd == -EMFILE) {
			web_sleep_ms(WEB_ACCEPT_BACKOFF_MS);
			continue;
		}
		if (fd < 0)
			continue;
		struct web_conn *c = malloc(sizeof *c);
		pthread_t t;
		if (!c) {
			close(fd);
			continue;
		}
		web_conn_init(c, fd, &ctx->srv);
		if (pthread_create(&t, &attr, conn_main, c) != 0) {
			close(fd);
			free(c);
			web_sleep_ms(WEB_ACCEPT_BACKOFF_MS);
		}
	}
	pthread_attr_destroy(&attr);
	return 0;
}

const struct web_style web_style = {"threads", run};
