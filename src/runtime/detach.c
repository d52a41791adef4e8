/* SPDX-License-Identifier: MIT */
/*
 * detach.c - canal_detach / canal_attach (CPC's cpc_detach, cpc_attach): a
 * pool of native threads that run tasks which need to block.
 *
 * Each pool thread has a pseudo-loop (is_pool) holding its scheduler
 * context, so a detached task switches in and out exactly as on a loop.
 * A task detaches by switching out with AFTER_DETACH: its loop's scheduler
 * pushes it on the pool's queue (pool->lock; pool->cond wakes a thread).
 * It attaches by switching out to its pool thread with AFTER_ATTACH: the
 * pool thread clears `detached`, makes the loop it picks the task's loop
 * (t->loop, before the push: wakes push it there, and the timers and I/O
 * of its next waits live there, internal.h) and pushes it to that loop. A
 * detached task is never on a loop's queue, so no loop touches it
 * meanwhile.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/sanitizer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

struct canal__detach_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct canal__task *head, *tail;
	bool stop;
	unsigned nthreads;
	struct canal__loop *threads; /* pseudo-loops */
	/* Start-up (canal__detach_start waits for it): threads that set up
	 * their alternate signal stack or failed, and the first error.
	 * Under lock; started_cond signals a change. */
	unsigned started;
	int start_error;
	pthread_cond_t started_cond;
};

void canal__detach_push(struct canal__runtime *rt, struct canal__task *t)
{
	struct canal__detach_pool *p = rt->detach;
	t->detached = true;
	t->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void *pool_thread(void *arg)
{
	struct canal__loop *self = arg;
	struct canal__detach_pool *p = self->rt->detach;
	pthread_attr_t a;
	void *addr = NULL;
	size_t size = 0;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstack(&a, &addr, &size);
		pthread_attr_destroy(&a);
	}
	self->thread_stack_bottom = addr;
	self->thread_stack_size = size;
	self->tsan_fiber = san_fiber_current();
	/* An alternate signal stack, as a loop's (loop.c loop_thread): the
	 * SIGSEGV handler that reports a task's stack overflow runs on it
	 * (stack.c), the task's own stack being the one that overflowed.
	 * Without it a detached task's overflow killed the process with a
	 * bare SIGSEGV (the kernel could not push the signal frame). None
	 * (ENOMEM): reported to canal__detach_start, which fails canal_run;
	 * the thread ends. */
	void *alt = NULL;
	int r = canal__altstack_setup(&alt);
	pthread_mutex_lock(&p->lock);
	if (r && !p->start_error)
		p->start_error = r;
	p->started++;
	pthread_cond_signal(&p->started_cond);
	pthread_mutex_unlock(&p->lock);
	if (r)
		return NULL;
	canal__set_this_loop(self);
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		struct canal__task *t = p->head;
		if (!t) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		t = canal__task_run(self, t);
		canal__stack_canary_check(&t->stack, t->id);
		if (t->after == AFTER_EXIT) { /* it ended detached */
			canal__task_ended(self, t);
			continue;
		}
		/* AFTER_ATTACH (AFTER_YIELD: the same). */
		t->detached = false;
		struct canal__loop *l = canal__loop_pick(self->rt);
		t->loop = l;
		canal__loop_push(l, t);
	}
	canal__set_this_loop(NULL);
	canal__altstack_teardown(alt);
	return NULL;
}

int canal__detach_start(struct canal__runtime *rt)
{
	struct canal__detach_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	unsigned n = rt->opts.detach_threads;
	p->threads = calloc(n, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_cond_init(&p->started_cond, NULL);
	rt->detach = p;
	for (; p->nthreads < n; p->nthreads++) {
		struct canal__loop *self = &p->threads[p->nthreads];
		self->rt = rt;
		self->is_pool = true;
		self->index = p->nthreads;
		int r = pthread_create(&self->thread, NULL, pool_thread, self);
		if (r) {
			canal__detach_stop(rt);
			return -r;
		}
	}
	pthread_mutex_lock(&p->lock);
	while (p->started < p->nthreads)
		pthread_cond_wait(&p->started_cond, &p->lock);
	int err = p->start_error;
	pthread_mutex_unlock(&p->lock);
	if (err) {
		canal__detach_stop(rt); /* (the failed threads have ended) */
		return err;
	}
	return 0;
}

void canal__detach_stop(struct canal__runtime *rt)
{
	struct canal__detach_pool *p = rt->detach;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i].thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_cond_destroy(&p->started_cond);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
	rt->detach = NULL;
}

EXPORT int canal_detach(void)
{
	struct canal__task *t = canal__this_task();
	if (!t)
		return -EPERM;
	if (t->detached)
		return 0;
	if (t->rstreams)
		return -EBUSY; /* its streams belong to its loop (rstream.c) */
	t->after = AFTER_DETACH;
	canal__task_switch_out(t);
	return 0;
}

EXPORT int canal_attach(void)
{
	struct canal__task *t = canal__this_task();
	if (!t)
		return -EPERM;
	if (!t->detached)
		return 0;
	t->after = AFTER_ATTACH;
	canal__task_switch_out(t);
	return 0;
}
