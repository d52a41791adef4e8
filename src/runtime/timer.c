/* SPDX-License-Identifier: MIT */
/*
 * timer.c - each loop's timers: a binary min-heap of tasks by deadline.
 *
 * Invariants: only the loop's thread touches its heap; a task is in at
 * most one heap, at heap[t->timer_index] (NO_TIMER when in none), and is
 * pinned to the loop while it is (t->pinned counts it), so that the task,
 * resuming, disarms its timer on the thread that owns the heap.
 *
 * A timer that fires first tries to win the task's wake with WAKE_TIMEDOUT
 * (it loses if the task was woken meanwhile), and only then leaves the heap
 * and unpins the task. In that order the task, still pinned, cannot be
 * stolen and run elsewhere (and park again) between the two steps, so a
 * late timer never wins a later park's wake.
 *
 * A task whose timer fires may already sit in this loop's run queue, where
 * a stealing loop reads t->pinned under the queue's lock: so pinned and
 * timer_index are cleared under that lock (release), and a thief that sees
 * pinned == 0 also sees timer_index == NO_TIMER (acquire) and never touches
 * this heap when the task resumes on its loop.
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
	l->heap_len--;
	if (i != l->heap_len) {
		heap_set(l, i, l->heap[l->heap_len]);
		sift_down(l, i);
		sift_up(l, l->heap[i]->timer_index);
	}
	canal__spin_lock(&l->lock);
	t->timer_index = NO_TIMER;
	t->pinned--;
	canal__spin_unlock(&l->lock);
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
		canal__task_wake(t, WAKE_TIMEDOUT);
		heap_remove(l, 0);
	}
	return CANAL_NO_DEADLINE;
}

void canal__timer_fini(struct canal__loop *l)
{
	free(l->heap);
	l->heap = NULL;
	l->heap_len = l->heap_cap = 0;
}
