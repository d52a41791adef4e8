/* SPDX-License-Identifier: MIT */
/*
 * timer.c - each loop's timers: a 4-ary min-heap of (deadline, task), and
 * beside it a FIFO of tasks for the timers armed in deadline order.
 *
 * Invariants: only the loop's thread touches its heap and its FIFO; a
 * task has at most one timer, either in the heap, at
 * heap[timer_pos[t->timer_slot]], or in the FIFO (timer_slot FIFO_TIMER),
 * or none (timer_slot NO_TIMER), and is pinned to the loop while it has
 * one (t->pinned counts it), so that the task, resuming, disarms its
 * timer on the thread that owns them.
 *
 * The FIFO: most timers are I/O timeouts of one length (a server's tick),
 * armed in time order, so their deadlines come in order too. A timer
 * whose deadline is not before the FIFO's tail, and not more than
 * FIFO_SPAN_NS after it, is appended (no sift), and one disarmed before it
 * fires (the common case: the operation completed) is unlinked in O(1),
 * where the heap would sink its last entry through log4(n) levels (1.2 %
 * of a web server's samples at 1 000 connections, perf). The others go to
 * the heap: a timer due before the tail, and a much later one (a minute's
 * keep-alive among 5 s timeouts, a long sleep), which would otherwise
 * send every ordinary timeout after it to the heap until it fired. A lone
 * FIFO entry later than a new timer (a long timer armed while the FIFO
 * was empty) moves to the heap, and the FIFO starts again from the new
 * one. A timer the heap has no room for (ENOMEM) goes to the FIFO too,
 * at its place in deadline order (canal__timer_arm). The FIFO's deadlines
 * never decrease from head to tail (appends at or after the tail, that
 * fallback at its place; removals keep the order), so its head is its
 * earliest; the loop's next deadline is the earlier of the FIFO's head
 * and the heap's top (canal__timer_next). Pinning and the lock below are
 * the same for both.
 *
 * A timer that fires first tries to win the task's wake with WAKE_TIMEDOUT
 * (it loses if the task was woken meanwhile), and only then leaves the heap
 * or the FIFO and unpins the task. In that order the task, still pinned, cannot be
 * stolen and run elsewhere (and park again) between the two steps, so a
 * late timer never wins a later park's wake.
 *
 * A task whose timer fires may already sit in this loop's run queue, where
 * a stealing loop reads t->pinned under the queue's lock: so pinned and
 * timer_slot are cleared under that lock (release), and a thief that sees
 * pinned == 0 also sees timer_slot == NO_TIMER (acquire) and never touches
 * this heap when the task resumes on its loop.
 */
#include "runtime/internal.h"

#include <errno.h>
#include <stdlib.h>

/* Arity 4 (internal.h): half the depth of a binary heap, and a node's
 * four children are contiguous in the array. The deadlines of I/O timeouts
 * mostly grow (now + a constant), so an insertion seldom climbs; a removal
 * from the middle (a task woken before its deadline, the common case)
 * sinks the last entry.
 *
 * Slots: an entry that moves updates timer_pos[its slot], a loop-local
 * array, and never its task: with thousands of tasks waiting (a server's
 * connections), each task's structure is cold, and a store to it at every
 * level of a sift cost more than the sift (the lock that ends a removal
 * waited for those stores). A task holds its slot from arm to removal;
 * slots in use = heap_len, free ones = heap_cap - heap_len, chained from
 * timer_free through timer_pos (the chain is followed only while
 * heap_len < heap_cap, so its last link is never read). */
#define ARITY CANAL__TIMER_ARITY

static void heap_set(struct canal__loop *l, uint32_t i, struct canal__timer e)
{
	l->heap[i] = e;
	l->timer_pos[e.slot] = i;
}

static void sift_up(struct canal__loop *l, uint32_t i)
{
	struct canal__timer e = l->heap[i];
	while (i > 0) {
		uint32_t p = (i - 1) / ARITY;
		if (l->heap[p].deadline <= e.deadline)
			break;
		heap_set(l, i, l->heap[p]);
		i = p;
	}
	heap_set(l, i, e);
}

static void sift_down(struct canal__loop *l, uint32_t i)
{
	struct canal__timer e = l->heap[i];
	for (;;) {
		uint32_t c = ARITY * i + 1;
		if (c >= l->heap_len)
			break;
		uint32_t end = c + ARITY < l->heap_len ? c + ARITY : l->heap_len;
		uint32_t m = c;
		for (uint32_t k = c + 1; k < end; k++)
			if (l->heap[k].deadline < l->heap[m].deadline)
				m = k;
		if (l->heap[m].deadline >= e.deadline)
			break;
		heap_set(l, i, l->heap[m]);
		i = m;
	}
	heap_set(l, i, e);
}

/* Room for one more entry: heap and slots grow together. */
static int heap_grow(struct canal__loop *l)
{
	uint32_t cap = l->heap_cap ? 2 * l->heap_cap : 64;
	struct canal__timer *h = realloc(l->heap, cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	l->heap = h;
	uint32_t *pos = realloc(l->timer_pos, cap * sizeof(*pos));
	if (!pos)
		return -ENOMEM; /* heap_cap unchanged: the larger heap waits */
	l->timer_pos = pos;
	for (uint32_t k = l->heap_cap; k < cap; k++)
		pos[k] = k + 1 < cap ? k + 1 : l->timer_free;
	l->timer_free = l->heap_cap;
	l->heap_cap = cap;
	return 0;
}

/* How far after the FIFO's tail a deadline may be and still join it. */
#define FIFO_SPAN_NS (1000ull * 1000 * 1000)

/* t's timer into the heap at deadline_ns (t's pin taken by the caller). */
static int heap_insert(struct canal__loop *l, struct canal__task *t,
		       uint64_t deadline_ns)
{
	if (l->heap_len == l->heap_cap && heap_grow(l) != 0)
		return -ENOMEM;
	uint32_t slot = l->timer_free;
	l->timer_free = l->timer_pos[slot];
	t->timer_slot = slot;
	uint32_t i = l->heap_len++;
	heap_set(l, i, (struct canal__timer){deadline_ns, t, slot});
	sift_up(l, i);
	return 0;
}

/* t's timer into the FIFO after every entry due at or before it, so that
 * deadlines still never decrease from head to tail (t's pin taken by the
 * caller). An append walks no entry; the fallback below walks from the
 * tail. */
static void fifo_insert(struct canal__loop *l, struct canal__task *t,
			uint64_t deadline_ns)
{
	struct canal__task *prev = l->fifo_tail;
	while (prev && prev->fifo_deadline > deadline_ns)
		prev = prev->fifo_prev;
	t->fifo_deadline = deadline_ns;
	t->fifo_prev = prev;
	t->fifo_next = prev ? prev->fifo_next : l->fifo_head;
	if (t->fifo_next)
		t->fifo_next->fifo_prev = t;
	else
		l->fifo_tail = t;
	if (prev)
		prev->fifo_next = t;
	else
		l->fifo_head = t;
	t->timer_slot = FIFO_TIMER;
}

/* Returns 0: a timer the heap has no room for (its array could not
 * grow: ENOMEM) goes to the FIFO at its place in deadline order, which
 * allocates nothing (a walk of the FIFO per such timer, only while
 * memory is short). Failing instead made the park time out at once, and
 * canal_sleep_ns and canal_cond_wait, which take WAKE_TIMEDOUT for "the
 * time has passed", returned early (test_revlife_timer_enomem). */
int canal__timer_arm(struct canal__loop *l, struct canal__task *t,
		     uint64_t deadline_ns)
{
	struct canal__task *tail = l->fifo_tail;
	if (tail && tail == l->fifo_head && deadline_ns < tail->fifo_deadline &&
	    heap_insert(l, tail, tail->fifo_deadline) == 0) {
		/* A lone entry due later (see the top): to the heap, still
		 * pinned, not woken; the FIFO starts again from t. */
		l->fifo_head = l->fifo_tail = NULL;
		tail->fifo_prev = tail->fifo_next = NULL;
		tail = NULL;
	}
	if (!tail || (tail->fifo_deadline <= deadline_ns &&
		      deadline_ns - tail->fifo_deadline <= FIFO_SPAN_NS) ||
	    heap_insert(l, t, deadline_ns) != 0)
		fifo_insert(l, t, deadline_ns);
	t->pinned++;
	return 0;
}

/* t's timer is gone (from the heap or the FIFO). When it fires, under the
 * queue's lock, as the top of this file says. When t itself disarms it,
 * resumed (own: canal__timer_disarm), no lock: a running task is in no
 * queue, so no thief or waker reads these fields meanwhile (io.c's pins
 * of in-flight I/O are plain too); the next reader under the lock comes
 * after t parks again, and t's park is ordered before that (t's sched
 * and wake words, task.c). An xchg per disarm (each request of a server:
 * its I/O timeout) drained the store buffer that the switch back to t had
 * just filled: 0.9 % of the tasks web server's samples at 1 000
 * connections. */
static void unpin(struct canal__loop *l, struct canal__task *t, bool own)
{
	if (own) {
		t->timer_slot = NO_TIMER;
		t->pinned--;
		return;
	}
	canal__spin_lock(&l->lock);
	t->timer_slot = NO_TIMER;
	t->pinned--;
	canal__spin_unlock(&l->lock);
}

static void fifo_remove(struct canal__loop *l, struct canal__task *t, bool own)
{
	if (t->fifo_prev)
		t->fifo_prev->fifo_next = t->fifo_next;
	else
		l->fifo_head = t->fifo_next;
	if (t->fifo_next)
		t->fifo_next->fifo_prev = t->fifo_prev;
	else
		l->fifo_tail = t->fifo_prev;
	t->fifo_prev = t->fifo_next = NULL;
	unpin(l, t, own);
}

static void heap_remove(struct canal__loop *l, uint32_t i, bool own)
{
	struct canal__timer gone = l->heap[i];
	l->heap_len--;
	if (i != l->heap_len) {
		/* The last entry takes the hole: it sinks or, rarely (the
		 * hole was in another branch), climbs. */
		struct canal__timer last = l->heap[l->heap_len];
		heap_set(l, i, last);
		if (i > 0 && l->heap[(i - 1) / ARITY].deadline > last.deadline)
			sift_up(l, i);
		else
			sift_down(l, i);
	}
	l->timer_pos[gone.slot] = l->timer_free;
	l->timer_free = gone.slot;
	unpin(l, gone.task, own);
}

void canal__timer_disarm(struct canal__loop *l, struct canal__task *t)
{
	if (t->timer_slot == FIFO_TIMER)
		fifo_remove(l, t, true);
	else if (t->timer_slot != NO_TIMER)
		heap_remove(l, l->timer_pos[t->timer_slot], true);
}

uint64_t canal__timer_run(struct canal__loop *l, uint64_t now)
{
	for (;;) {
		struct canal__task *f = l->fifo_head;
		bool heap_first = l->heap_len > 0 &&
				  (!f || l->heap[0].deadline <= f->fifo_deadline);
		if (heap_first) {
			struct canal__timer top = l->heap[0];
			if (top.deadline > now)
				return top.deadline;
			canal__task_wake(top.task, WAKE_TIMEDOUT);
			heap_remove(l, 0, false);
		} else if (f) {
			if (f->fifo_deadline > now)
				return f->fifo_deadline;
			canal__task_wake(f, WAKE_TIMEDOUT);
			fifo_remove(l, f, false);
		} else {
			return CANAL_NO_DEADLINE;
		}
	}
}

void canal__timer_fini(struct canal__loop *l)
{
	l->fifo_head = l->fifo_tail = NULL; /* every task has ended */
	free(l->heap);
	free(l->timer_pos);
	l->heap = NULL;
	l->timer_pos = NULL;
	l->heap_len = l->heap_cap = 0;
}
