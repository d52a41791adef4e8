/* SPDX-License-Identifier: MIT */
/*
 * task.c - a task's life: creation on a stack block, the switches in and
 * out of it, parking and waking (the handshake of internal.h), and the
 * public canal_spawn, canal_yield, canal_sleep_ns, canal_task_id.
 */
#define _GNU_SOURCE
#include "runtime/internal.h"
#include "runtime/context.h"
#include "runtime/sanitizer.h"
#include "base/clock.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* A task's structure lives in its stack block's task area (one
 * allocation per task, and a parked task's structure shares a page with
 * the top of its stack), or, in a runtime that compacts stacks
 * (CANAL_RUN_COMPACT_STACKS), apart from its stack, so that the stack's
 * pages can be given back while wakers still write the structure
 * (compact.c); free ones are kept by each loop, up to TASK_CACHE_MAX. */
#define TASK_CACHE_MAX 256u

_Static_assert(sizeof(struct canal__task) <= CANAL__TASK_AREA - 8,
	       "the task structure must fit its stack block's task area, "
	       "short of its last word (the canary of the block above)");

static struct canal__task *task_alloc(struct canal__loop *self)
{
	if (self && self->task_cache) {
		struct canal__task *t = self->task_cache;
		self->task_cache = t->next;
		self->task_cached--;
		return t;
	}
	size_t size = (sizeof(struct canal__task) + 63) & ~(size_t)63;
	return aligned_alloc(64, size);
}

static void task_release(struct canal__loop *self, struct canal__task *t)
{
	if (self && self->task_cached < TASK_CACHE_MAX) {
		t->next = self->task_cache;
		self->task_cache = t;
		self->task_cached++;
		return;
	}
	free(t);
}

void canal__task_cache_flush(struct canal__loop *l)
{
	while (l->task_cache) {
		struct canal__task *t = l->task_cache;
		l->task_cache = t->next;
		free(t);
	}
	l->task_cached = 0;
}

/* internal.h. */
__attribute__((noinline)) bool canal__task_finish_park(struct canal__task *t)
{
	uint32_t s = TASK_PARKING;
	if (atomic_compare_exchange_strong_explicit(
		    &t->sched, &s, TASK_PARKED, memory_order_acq_rel,
		    memory_order_acquire))
		return true;
	/* NOTIFIED: woken while switching out. */
	atomic_store_explicit(&t->sched, TASK_RUNNING, memory_order_relaxed);
	return false;
}

/* Every resumption of a task t makes it its loop's current task (a
 * direct switch names it only here, once it runs on its own stack: the
 * outgoing task stays current while the switch pushes its registers on
 * its stack, so that an overflow there is reported as its own, stack.c
 * segv_handler; test_revstk_switch_overflow), and finishes the park of a
 * task that switched straight here (canal__task_park), as the scheduler
 * does for one that switched out to it: only now, its context saved, may
 * it become PARKED and so visible to a waker that would push it to a
 * queue; a waker that came while it was PARKING (NOTIFIED) left the push
 * to us. */
static inline void task_resumed(struct canal__loop *l, struct canal__task *t)
{
	l->current = t;
	struct canal__task *parked = l->parked_prev;
	if (parked) {
		l->parked_prev = NULL;
		if (!canal__task_finish_park(parked))
			canal__loop_push(l, parked);
	}
}

/* From the running task t straight to next, without the scheduler
 * context (a direct yield, hand-off or park: a park has set parked_prev,
 * which next's task_resumed acts on). */
static inline __attribute__((always_inline)) void
direct_switch(struct canal__task *t, struct canal__task *next)
{
	canal__stack_canary_check(&t->stack, t->id);
	canal__compact_ready(next);
	/* l->current stays t until next runs (task_resumed). */
	san_start_switch(&t->asan_fake_stack, next->stack.lo,
			 next->stack.size);
	san_fiber_switch(next->tsan_fiber);
	canal__ctx_switch(&t->sp, next->sp);
	san_finish_switch(t->asan_fake_stack);
	task_resumed(canal__this_loop(), t);
}

static void task_entry(void *arg)
{
	struct canal__task *t = arg;
	san_finish_switch(NULL);
	task_resumed(canal__this_loop(), t);
	t->fn(t->arg);
	if (t->rstreams) {
		/* Its streams' receives would outlive it, their CQEs naming
		 * freed memory and pinning nothing: a program error. */
		fprintf(stderr,
			"canal: task %llu ended with %u receive stream(s) "
			"open; close each (canal_io_rstream_close) first\n",
			(unsigned long long)t->id, t->rstreams);
		abort();
	}
	t->after = AFTER_EXIT;
	canal__task_switch_out(t);
	__builtin_unreachable();
}

int canal__task_create(struct canal__runtime *rt, void (*fn)(void *),
		       void *arg, struct canal__loop *loop,
		       struct canal__task **out)
{
	struct canal__loop *self = canal__this_loop();
	if (self && (self->rt != rt || self->is_pool))
		self = NULL;
	bool apart = rt->opts.flags & CANAL_RUN_COMPACT_STACKS;
	struct canal__task *t = apart ? task_alloc(self) : NULL;
	if (apart && !t)
		return -ENOMEM;
	struct canal__stack st;
	void *area = canal__stack_get(rt->pool, self ? &self->stacks : NULL,
				      &st);
	if (!area) {
		if (t)
			task_release(self, t);
		return -ENOMEM;
	}
	if (!apart)
		t = area;
	memset(t, 0, sizeof(*t));
	t->stack = st;
	t->fn = fn;
	t->arg = arg;
	t->loop = loop;
	t->timer_slot = NO_TIMER;
	t->id = atomic_fetch_add_explicit(&rt->next_id, 1,
					  memory_order_relaxed);
	/* A compacting runtime's task touches its stack only when it first
	 * runs (canal__compact_ready): spawned and not yet run, it costs its
	 * structure alone. */
	t->sp = apart ? NULL : canal__ctx_make(area, task_entry, t);
	t->tsan_fiber = san_fiber_create();
	*out = t;
	return 0;
}

void canal__task_first_context(struct canal__task *t)
{
	t->sp = canal__ctx_make(t->stack.lo + t->stack.size, task_entry, t);
}

void canal__task_free(struct canal__task *t)
{
	struct canal__runtime *rt = t->loop->rt;
	struct canal__loop *self = canal__this_loop();
	if (self && (self->rt != rt || self->is_pool))
		self = NULL;
	san_fiber_destroy(t->tsan_fiber);
	struct canal__stack st = t->stack;
	void *area = st.lo + st.size;
	canal__stack_put(rt->pool, self ? &self->stacks : NULL, area, &st);
	if (!self) /* no loop: none would trim a batch this put filled */
		canal__stack_pool_trim_full(rt->pool);
	if ((void *)t != area)
		task_release(self, t);
}

struct canal__task *canal__task_run(struct canal__loop *l,
				    struct canal__task *t)
{
	canal__compact_ready(t);
	l->current = t;
	san_start_switch(&l->asan_fake_stack, t->stack.lo, t->stack.size);
	san_fiber_switch(t->tsan_fiber);
	canal__ctx_switch(&l->sched_sp, t->sp);
	san_finish_switch(l->asan_fake_stack);
	l->current = NULL;
	return l->out;
}

void canal__task_switch_out(struct canal__task *t)
{
	/* The loop now running t: it may differ from the one that started
	 * it (stealing), so read it at each switch, not once. */
	struct canal__loop *l = canal__this_loop();
	san_start_switch(t->after == AFTER_EXIT ? NULL : &t->asan_fake_stack,
			 l->thread_stack_bottom, l->thread_stack_size);
	san_fiber_switch(l->tsan_fiber);
	l->out = t;
	canal__ctx_switch(&t->sp, l->sched_sp);
	san_finish_switch(t->asan_fake_stack);
	task_resumed(canal__this_loop(), t);
}

void canal__task_make_runnable(struct canal__task *t)
{
	uint32_t s = atomic_load_explicit(&t->sched, memory_order_acquire);
	for (;;) {
		if (s == TASK_PARKING) {
			/* Still switching out: its scheduler will push it. */
			if (atomic_compare_exchange_weak_explicit(
				    &t->sched, &s, TASK_NOTIFIED,
				    memory_order_acq_rel,
				    memory_order_acquire))
				return;
		} else if (s == TASK_PARKED) {
			if (atomic_compare_exchange_weak_explicit(
				    &t->sched, &s, TASK_RUNNING,
				    memory_order_acq_rel,
				    memory_order_acquire)) {
				canal__loop_push_woken(t);
				return;
			}
		} else {
			return; /* cannot happen: one winner per park */
		}
	}
}

bool canal__task_win(struct canal__task *t, uint32_t reason)
{
	uint32_t armed = WAKE_ARMED;
	return atomic_compare_exchange_strong_explicit(&t->wake, &armed, reason,
						       memory_order_acq_rel,
						       memory_order_acquire);
}

bool canal__task_wake(struct canal__task *t, uint32_t reason)
{
	if (!canal__task_win(t, reason))
		return false;
	canal__task_make_runnable(t);
	return true;
}

bool canal__task_disarm(struct canal__task *t)
{
	uint32_t armed = WAKE_ARMED;
	if (!atomic_compare_exchange_strong_explicit(&t->wake, &armed,
						     WAKE_NONE,
						     memory_order_acq_rel,
						     memory_order_acquire))
		return false;
	atomic_store_explicit(&t->sched, TASK_RUNNING, memory_order_relaxed);
	return true;
}

uint32_t canal__task_park(struct canal__task *t, uint64_t deadline_ns)
{
	struct canal__loop *l = canal__this_loop();
	/* Never fails (timer.c): WAKE_TIMEDOUT only ever means that the
	 * deadline has passed, which canal_sleep_ns and canal_cond_wait
	 * rely on. */
	if (deadline_ns != CANAL_NO_DEADLINE)
		(void)canal__timer_arm(l, t, deadline_ns);
	t->after = AFTER_PARK;
	struct canal__task *next = canal__loop_park_next(l);
	if (next) {
		/* Straight to the task it woke (loop.c); the task switched
		 * to finishes our park (task_resumed). */
		l->parked_prev = t;
		direct_switch(t, next);
	} else {
		canal__task_switch_out(t);
	}
	/* Resumed on t->loop (pinned while the timer was armed). */
	if (t->timer_slot != NO_TIMER)
		canal__timer_disarm(canal__this_loop(), t);
	uint32_t why = atomic_load_explicit(&t->wake, memory_order_acquire);
	atomic_store_explicit(&t->wake, WAKE_NONE, memory_order_relaxed);
	return why;
}

EXPORT int canal_spawn(void (*fn)(void *), void *arg)
{
	if (!fn)
		return -EINVAL;
	struct canal__runtime *rt =
		atomic_load_explicit(&canal__rt, memory_order_acquire);
	struct canal__loop *self = canal__this_loop();
	/* Only tasks and loop threads of the running runtime may spawn: a
	 * plain thread could race with the runtime's end. */
	if (!rt || !self || self->rt != rt)
		return -EPERM;
	struct canal__loop *l = canal__loop_pick_spawn(rt, self);
	struct canal__task *t;
	atomic_fetch_add_explicit(&rt->live, 1, memory_order_relaxed);
	int r = canal__task_create(rt, fn, arg, l, &t);
	if (r) {
		atomic_fetch_sub_explicit(&rt->live, 1, memory_order_relaxed);
		return r;
	}
	canal__loop_push(l, t);
	return 0;
}

/* t (running on l) yields: straight to the next ready task, or through
 * the scheduler (its turn, the runnext slot's, or nothing else ready). */
static void yield_task(struct canal__loop *l, struct canal__task *t)
{
	struct canal__task *next = canal__loop_yield_next(l, t);
	if (next) {
		direct_switch(t, next);
		return;
	}
	t->after = AFTER_YIELD;
	canal__task_switch_out(t);
}

EXPORT void canal_yield(void)
{
	struct canal__loop *l = canal__this_loop();
	struct canal__task *t = l ? l->current : NULL;
	if (!t || t->detached) {
		sched_yield();
		return;
	}
	yield_task(l, t);
}

/* canal_yield only when another task is ready on this loop: true once
 * this one runs again; false at once when none is ready, outside a task,
 * or in a detached one. */
bool canal__task_yield_ready(void)
{
	struct canal__loop *l = canal__this_loop();
	struct canal__task *t = l ? l->current : NULL;
	if (!t || t->detached || !canal__loop_has_ready(l))
		return false;
	yield_task(l, t);
	return true;
}

/* A task about to wait lets the task it woke last (the runnext slot) run
 * first, trading places with it (loop.c, canal__loop_handoff_next).
 * Returns whether it did. */
bool canal__task_handoff(void)
{
	struct canal__loop *l = canal__this_loop();
	struct canal__task *t = l ? l->current : NULL;
	if (!t || t->detached)
		return false;
	struct canal__task *next = canal__loop_handoff_next(l, t);
	if (!next)
		return false;
	direct_switch(t, next);
	return true;
}

EXPORT int canal_sleep_ns(uint64_t ns)
{
	struct canal__task *t = canal__this_task();
	uint64_t now = canal_now_ns();
	uint64_t deadline = ns > UINT64_MAX - 1 - now ? UINT64_MAX - 1
						       : now + ns;
	if (!t || t->detached) {
		struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
				      .tv_nsec = (long)(deadline % 1000000000u)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
		return 0;
	}
	if (ns == 0) {
		canal_yield();
		return 0;
	}
	canal__task_arm(t);
	while (canal__task_park(t, deadline) != WAKE_TIMEDOUT) {
		canal__task_arm(t); /* nothing else wakes a sleep */
	}
	return 0;
}

EXPORT uint64_t canal_task_id(void)
{
	struct canal__task *t = canal__this_task();
	return t ? t->id : 0;
}
