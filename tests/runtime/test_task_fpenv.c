/* test_task_fpenv.c - each task keeps its own floating-point control
 * state across switches: rounding mode (MXCSR and the x87 control word),
 * the x87 precision field alone, and MXCSR's sticky exception flags; a
 * new task starts with the defaults; the thread that called canal_run
 * gets its own state back.
 *
 * The context switch loads a task's saved control words only when they
 * differ from the outgoing task's (context.c): tasks here yield to each
 * other on one loop while holding different states, so a switch that
 * skipped a load it needed (or compared the wrong bytes) leaves a task
 * with another's rounding mode, precision or flags, and its checks fail.
 * Rounds are counted; no timing is checked. */
#define _GNU_SOURCE
#include "check.h"

#include <stdio.h>


#include <canal/task.h>

#include <fenv.h>
#include <stdatomic.h>
#include <stdio.h>

#if defined(__x86_64__) || defined(__i386__)
#include <fpu_control.h>
#define HAVE_X87 1
#endif

#define ROUNDS 2000

static _Atomic int failures, tasks_done;

static void fail(const char *who, int round, const char *what)
{
	if (atomic_fetch_add(&failures, 1) < 10)
		fprintf(stderr, "%s, round %d: %s\n", who, round, what);
}

/* 1/3 rounded by the current mode: upward and downward differ. The
 * quotient goes through a volatile so that the division is done even
 * where the result is not used (it raises FE_INEXACT). */
static double third(void)
{
	volatile double one = 1.0, three = 3.0;
	volatile double q = one / three;
	return q;
}

static double third_up, third_down;

struct rounding {
	const char *name;
	int mode;
	const double *expect; /* NULL: nearest, not checked by value */
};

static void keep_rounding(void *arg)
{
	const struct rounding *r = arg;
	if (fesetround(r->mode) != 0)
		fail(r->name, -1, "fesetround failed");
	for (int i = 0; i < ROUNDS; i++) {
		canal_yield();
		if (fegetround() != r->mode)
			fail(r->name, i, "rounding mode changed across a yield");
		if (r->expect && third() != *r->expect)
			fail(r->name, i, "division rounded another way");
	}
	atomic_fetch_add(&tasks_done, 1);
}

/* Starts with the defaults and never changes them. */
static void keep_default(void *arg)
{
	(void)arg;
	if (fegetround() != FE_TONEAREST)
		fail("default", -1, "a new task did not start rounding to nearest");
	for (int i = 0; i < ROUNDS; i++) {
		canal_yield();
		if (fegetround() != FE_TONEAREST)
			fail("default", i, "rounding mode changed across a yield");
#ifdef HAVE_X87
		fpu_control_t cw;
		_FPU_GETCW(cw);
		if (cw != _FPU_DEFAULT)
			fail("default", i, "x87 control word is not the default");
#endif
	}
	atomic_fetch_add(&tasks_done, 1);
}

/* Raises the inexact flag before every yield. */
static void raise_inexact(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		(void)third();
		if (!fetestexcept(FE_INEXACT))
			fail("inexact", i, "1/3 did not raise FE_INEXACT");
		canal_yield();
		if (!fetestexcept(FE_INEXACT))
			fail("inexact", i, "its FE_INEXACT flag was cleared");
	}
	atomic_fetch_add(&tasks_done, 1);
}

/* Keeps its flags clear while raise_inexact sets its own. */
static void keep_clear(void *arg)
{
	(void)arg;
	feclearexcept(FE_ALL_EXCEPT);
	for (int i = 0; i < ROUNDS; i++) {
		canal_yield();
		if (fetestexcept(FE_ALL_EXCEPT))
			fail("clear", i, "another task's exception flags appeared");
	}
	atomic_fetch_add(&tasks_done, 1);
}

#ifdef HAVE_X87
/* Changes only the x87 precision field: its MXCSR is the default one, as
 * that of the keep_default task that runs after it (main_task's order), so
 * only the x87 word tells their states apart. */
static void keep_x87_precision(void *arg)
{
	(void)arg;
	fpu_control_t cw;
	_FPU_GETCW(cw);
	fpu_control_t mine = (cw & ~(fpu_control_t)_FPU_EXTENDED) | _FPU_SINGLE;
	_FPU_SETCW(mine);
	for (int i = 0; i < ROUNDS; i++) {
		canal_yield();
		_FPU_GETCW(cw);
		if (cw != mine)
			fail("x87", i, "x87 control word changed across a yield");
	}
	atomic_fetch_add(&tasks_done, 1);
}
#endif

static struct rounding up = {"upward", FE_UPWARD, &third_up};
static struct rounding down = {"downward", FE_DOWNWARD, &third_down};
static struct rounding zero = {"toward zero", FE_TOWARDZERO, &third_down};

static int expected_tasks;

static void main_task(void *arg)
{
	(void)arg;
	CHECK(canal_spawn(keep_rounding, &up) == 0);
	CHECK(canal_spawn(keep_default, NULL) == 0);
	CHECK(canal_spawn(keep_rounding, &down) == 0);
	CHECK(canal_spawn(raise_inexact, NULL) == 0);
	CHECK(canal_spawn(keep_clear, NULL) == 0);
	CHECK(canal_spawn(keep_rounding, &zero) == 0);
	expected_tasks = 6;
#ifdef HAVE_X87
	CHECK(canal_spawn(keep_x87_precision, NULL) == 0);
	CHECK(canal_spawn(keep_default, NULL) == 0);
	expected_tasks += 2;
#endif
}

int main(void)
{
	fesetround(FE_UPWARD);
	third_up = third();
	fesetround(FE_DOWNWARD);
	third_down = third();
	fesetround(FE_TONEAREST);
	CHECK(third_up != third_down);

	/* The caller's own state, which tasks must not leak into. */
	CHECK(fesetround(FE_TOWARDZERO) == 0);
	feclearexcept(FE_ALL_EXCEPT);
#ifdef HAVE_X87
	fpu_control_t before;
	_FPU_GETCW(before);
#endif
	struct canal_run_options o = {.loops = 1};
	CHECK(canal_run(main_task, NULL, &o) == 0);
	CHECK(fegetround() == FE_TOWARDZERO);
	CHECK(!fetestexcept(FE_ALL_EXCEPT));
#ifdef HAVE_X87
	fpu_control_t after;
	_FPU_GETCW(after);
	CHECK(after == before);
#endif
	fesetround(FE_TONEAREST);
	CHECK(atomic_load(&tasks_done) == expected_tasks);
	CHECK(atomic_load(&failures) == 0);
	printf("test_task_fpenv: %d tasks, %d yields each: ok\n",
	       expected_tasks, ROUNDS);
	return 0;
}
