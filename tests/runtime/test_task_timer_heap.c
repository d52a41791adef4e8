/* test_task_timer_heap.c - a loop's timers (src/runtime/timer.c): the heap
 * and the FIFO beside it, white box: arms, disarms from anywhere and
 * expiries, checked after every step against a model kept by the test.
 *
 * Tasks here are bare structures that no loop runs (wake = WAKE_NONE: the
 * expiry's wake finds nothing armed and does nothing else). Invariants
 * checked:
 *  - heap order: no entry's deadline is below its parent's (arity
 *    CANAL__TIMER_ARITY);
 *  - FIFO: linked both ways from fifo_head to fifo_tail, deadlines never
 *    decreasing along it, each member's timer_slot FIFO_TIMER and its
 *    fifo_deadline its deadline; a timer whose deadline is not before the
 *    tail's goes there, any other to the heap;
 *  - slots: heap[timer_pos[t->timer_slot]] is t's entry for every armed
 *    task not in the FIFO (its slot its own), timer_slot NO_TIMER for
 *    every task not armed, and heap_len + the FIFO's length == the number
 *    armed;
 *  - pins: an armed task holds exactly one pin, a disarmed one none;
 *  - expiry: canal__timer_run(now) removes exactly the tasks whose deadline
 *    is <= now and returns the earliest deadline left (CANAL_NO_DEADLINE
 *    when none), which canal__timer_next() gives too.
 * Deadlines repeat on purpose (equal keys). The same run twice (the
 * runtime's tests run once per backend; the heap does not depend on it). */
#include "check.h"

#include "runtime/internal.h"

#include <stdint.h>
#include <stdlib.h>

#define TASKS 3000

static struct canal__task *tasks;
static uint64_t deadline[TASKS];
static bool armed[TASKS];
static struct canal__loop loop;

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
	return check_rand64(&rng);
}

static bool ordered(void)
{
	for (uint32_t i = 1; i < loop.heap_len; i++)
		if (loop.heap[(i - 1) / CANAL__TIMER_ARITY].deadline >
		    loop.heap[i].deadline)
			return false;
	return true;
}

/* The FIFO's length, after checking its links and order. */
static uint32_t fifo_check(void)
{
	uint32_t len = 0;
	struct canal__task *prev = NULL;
	for (struct canal__task *t = loop.fifo_head; t; t = t->fifo_next) {
		CHECK(t->fifo_prev == prev);
		CHECK_EQ(t->timer_slot, FIFO_TIMER);
		if (prev)
			CHECK(prev->fifo_deadline <= t->fifo_deadline);
		prev = t;
		CHECK(++len <= TASKS);
	}
	CHECK(loop.fifo_tail == prev);
	return len;
}

static uint32_t fifo_arms, heap_arms; /* where arm() put its timers */

static void check_all(void)
{
	uint32_t n = 0, in_fifo = 0;
	uint64_t min = CANAL_NO_DEADLINE;
	for (int i = 0; i < TASKS; i++) {
		struct canal__task *t = &tasks[i];
		if (armed[i] && deadline[i] < min)
			min = deadline[i];
		if (armed[i] && t->timer_slot == FIFO_TIMER) {
			n++;
			in_fifo++;
			CHECK_EQ(t->fifo_deadline, deadline[i]);
			CHECK_EQ(t->pinned, 1);
		} else if (armed[i]) {
			n++;
			CHECK(t->timer_slot < loop.heap_cap);
			uint32_t at = loop.timer_pos[t->timer_slot];
			CHECK(at < loop.heap_len);
			CHECK(loop.heap[at].task == t);
			CHECK_EQ(loop.heap[at].slot, t->timer_slot);
			CHECK_EQ(loop.heap[at].deadline, deadline[i]);
			CHECK_EQ(t->pinned, 1);
		} else {
			CHECK_EQ(t->timer_slot, NO_TIMER);
			CHECK_EQ(t->pinned, 0);
		}
	}
	CHECK_EQ(fifo_check(), in_fifo);
	CHECK_EQ(loop.heap_len + in_fifo, n);
	CHECK(ordered());
	CHECK_EQ(canal__timer_next(&loop), min);
}

/* Arm task i at d; where it went is checked by check_all() (consistency)
 * and by the scenarios below (the routing rules). */
static void arm(int i, uint64_t d)
{
	deadline[i] = d;
	CHECK_EQ(canal__timer_arm(&loop, &tasks[i], d), 0);
	(tasks[i].timer_slot == FIFO_TIMER ? &fifo_arms : &heap_arms)[0]++;
	armed[i] = true;
}

/* canal__timer_run(now) against the model: exactly the tasks due by now
 * expire (unarmed, unpinned), and it returns the earliest deadline left. */
static void expire(uint64_t now)
{
	uint64_t next_dl = canal__timer_run(&loop, now);
	uint64_t min = CANAL_NO_DEADLINE;
	for (int i = 0; i < TASKS; i++) {
		if (armed[i] && deadline[i] <= now) {
			armed[i] = false; /* expired now */
			CHECK_EQ(tasks[i].timer_slot, NO_TIMER);
			CHECK_EQ(tasks[i].pinned, 0);
		}
		if (armed[i] && deadline[i] < min)
			min = deadline[i];
	}
	CHECK_EQ(next_dl, min);
	check_all();
}

static bool in_fifo(int i)
{
	return tasks[i].timer_slot == FIFO_TIMER;
}

static void disarm(int i)
{
	canal__timer_disarm(&loop, &tasks[i]);
	armed[i] = false;
}

static void run_round(void)
{
	tasks = calloc(TASKS, sizeof(*tasks));
	CHECK(tasks != NULL);
	for (int i = 0; i < TASKS; i++) {
		tasks[i].timer_slot = NO_TIMER;
		armed[i] = false;
	}

	/* Arm every task; deadlines in [1000, 6000): many equal. */
	for (int i = 0; i < TASKS; i++) {
		arm(i, 1000 + next() % 5000);
		if (i % 97 == 0)
			check_all();
	}
	check_all();

	/* Disarm half, in random order (holes anywhere in the heap). */
	for (int k = 0; k < TASKS / 2; k++) {
		int i = (int)(next() % TASKS);
		if (armed[i])
			disarm(i);
		if (k % 53 == 0)
			check_all();
	}
	check_all();
	disarm(0); /* disarming a task twice: the second does nothing */
	disarm(0);
	check_all();

	/* Expire in steps of time; re-arm some expired tasks later, and
	 * disarm some live ones, between the steps. */
	for (uint64_t now = 900; now < 12000; now += 37) {
		expire(now);
		for (int k = 0; k < 20; k++) {
			int i = (int)(next() % TASKS);
			if (armed[i])
				disarm(i);
			else if (now < 8000)
				arm(i, now + 1 + next() % 3000);
		}
		check_all();
	}
	/* Everything armed so far has expired (last deadline < 11001). */
	CHECK_EQ(canal__timer_run(&loop, 11999), CANAL_NO_DEADLINE);
	CHECK_EQ(loop.heap_len, 0);
	CHECK(loop.fifo_head == NULL && loop.fifo_tail == NULL);

	/* A server's tick: deadlines in arming order (every one to the
	 * FIFO, none to the heap), disarmed from anywhere, then expired in
	 * steps; one earlier deadline among them goes to the heap. */
	uint32_t heap_before = heap_arms;
	for (int i = 0; i < TASKS; i++)
		arm(i, 20000 + (uint64_t)i / 3);
	CHECK_EQ(heap_arms, heap_before);
	check_all();
	disarm(5);
	arm(5, 19000); /* before the tail: the heap */
	CHECK_EQ(heap_arms, heap_before + 1);
	check_all();
	for (int k = 0; k < TASKS / 2; k++) {
		int i = (int)(next() % TASKS);
		if (armed[i])
			disarm(i);
	}
	check_all();
	for (uint64_t now = 18950; now < 21100; now += 50)
		expire(now);
	CHECK_EQ(canal__timer_run(&loop, 99999), CANAL_NO_DEADLINE);
	CHECK(loop.fifo_head == NULL && loop.heap_len == 0);

	/* Routing. A lone FIFO entry due later than a new timer (a long
	 * timer armed while the FIFO was empty) moves to the heap, still
	 * armed and pinned, and the FIFO starts again from the new one. */
	const uint64_t S = 1000ull * 1000 * 1000; /* timer.c's FIFO span */
	arm(1, 100000 + 60 * S);
	CHECK(in_fifo(1));
	arm(2, 100000);
	CHECK(in_fifo(2) && !in_fifo(1));
	check_all();
	/* In order and within the span after the tail: the FIFO. */
	arm(3, 100000 + S / 2);
	arm(4, 100000 + S / 2); /* equal to the tail */
	CHECK(in_fifo(3) && in_fifo(4));
	/* Before the tail, or more than the span after it: the heap (a
	 * minute's keep-alive among short timeouts does not block the
	 * FIFO for those after it). */
	arm(5, 100000 + S / 4);
	arm(6, 100000 + S / 2 + S + 1);
	CHECK(!in_fifo(5) && !in_fifo(6));
	arm(7, 100000 + S / 2 + S);
	CHECK(in_fifo(7));
	check_all();
	/* A FIFO of more than one entry keeps them: an earlier timer goes
	 * to the heap. */
	arm(8, 100001);
	CHECK(!in_fifo(8) && in_fifo(2) && in_fifo(3));
	check_all();
	/* They fire in deadline order across both. */
	uint64_t order[] = { 100000, 100001, 100000 + S / 4, 100000 + S / 2,
			     100000 + S / 2 + S, 100000 + S / 2 + S + 1,
			     100000 + 60 * S };
	for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
		uint64_t nd = canal__timer_run(&loop, order[k]);
		for (int i = 1; i <= 8; i++)
			if (armed[i] && deadline[i] <= order[k]) {
				CHECK_EQ(tasks[i].timer_slot, NO_TIMER);
				CHECK_EQ(tasks[i].pinned, 0);
				armed[i] = false;
			}
		check_all();
		CHECK_EQ(nd, k + 1 < sizeof order / sizeof *order
				     ? order[k + 1] : CANAL_NO_DEADLINE);
	}
	canal__timer_fini(&loop);
	free(tasks);
}

int main(void)
{
	run_round();
	run_round();
	CHECK(fifo_arms > 0 && heap_arms > 0); /* both ways were taken */
	printf("test_task_timer_heap: all checks passed\n");
	return 0;
}
