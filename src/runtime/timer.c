/* SPDX-License-Identifier: MIT */
/*
 * timer.c - each loop's timers: a binary min-heap of tasks by deadline.
 *
 * Invariants: only the loop's thread touches its heap; a task is in at
 * most one heap, at heap[t->timer_index] (NO_TIMER when in none), and is
 * pinned to the loop while it is (t->pinned counts it), so that the task,
 * resuming, disarms its timer on the thread that owns the heap. A timer
 * that fires is removed from the heap first, then tries to win the task's
 * wake with WAKE_TIMEDOUT (it loses if the task was woken meanwhile).
 */
#include "runtime/internal.h"

#include <errno.h>
#include <stdlib.h>

static void heap_set(struct canal__loop *l, uint32_t i, struct canal__task *t)
{
	l->heap[i] = t;
	t->timer_index = i;
}

static void sift_up(struct canal__loop *l, uint32_t i)
{
	struct canal__task *t = l->heap[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (l->heap[p]->deadline <= t->deadline)
			break;
		heap_set(l, i, l->heap[p]);
		i = p;
	}
	heap_set(l, i, t);
}

static void sift_down(struct canal__loop *l, uint32_t i)
{
	struct canal__task *t = l->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= l->heap_len)
			break;
		if (c + 1 < l->heap_len &&
		    l->heap[c + 1]->deadline < l->heap[c]->deadline)
			c++;
		if (l->heap[c]->deadline >= t->deadline)
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, t);
}

int canal__timer_arm(struct canal__loop *l, struct canal__task *t,
		     uint64_t deadline_ns)
{
	if (l->heap_len == l->heap_cap) {
		uint32_t cap = l->heap_cap ? 2 * l->heap_cap : 64;
		void *h = realloc(l->heap, cap * sizeof(*l->heap));
		if (!h)
			return -ENOMEM;
		l->heap = h;
		l->heap_cap = cap;
	}
	t->deadline = deadline_ns;
	t->pinned++;
	heap_set(l, l->heap_len++, t);
	sift_up(l, t->timer_index);
	return 0;
}

static void heap_remove(struct canal__loop *l, uint32_t i)
{
	struct canal__task *t = l->heap[i];
	t->timer_index = NO_TIMER;
	t->pinned--;
	l->heap_len--;
	if (i == l->heap_len)
		return;
	heap_set(l, i, l->heap[l->heap_len]);
	sift_down(l, i);
	sift_up(l, l->heap[i]->timer_index);
}

void canal__timer_disarm(struct canal__loop *l, struct canal__task *t)
{
	if (t->timer_index != NO_TIMER)
		heap_remove(l, t->timer_index);
}

uint64_t canal__timer_run(struct canal__loop *l, uint64_t now)
{
	while (l->heap_len > 0) {
		struct canal__task *t = l->heap[0];
		if (t->deadline > now)
			return t->deadline;
		heap_remove(l, 0);
		canal__task_wake(t, WAKE_TIMEDOUT);
	}
	return CANAL_NO_DEADLINE;
}

void canal__timer_fini(struct canal__loop *l)
{
	free(l->heap);
	l->heap = NULL;
	l->heap_len = l->heap_cap = 0;
}
