/* SPDX-License-Identifier: MIT */
/*
 * expect.h - table-driven checks of documented return values: each call is
 * made and its value compared with the documented one; every mismatch is
 * reported (not only the first), and the test ends with
 * CHECK_EQ(expect_failures, 0). Include after check.h.
 */
#ifndef CANAL_TEST_EXPECT_H
#define CANAL_TEST_EXPECT_H

#include <stdio.h>
#include <string.h>

static int expect_failures;

/* The check of a call made in a context (a task, a plain thread, ...)
 * that the report names first ("ctx: what: got, want"); ctx NULL: none. */
static inline void expect_value_in(const char *ctx, const char *what,
				   long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s%s%s: %ld (%s), want %ld (%s)\n", ctx ? ctx : "",
		ctx ? ": " : "", what, got, strerror((int)-got), want,
		strerror((int)-want));
	expect_failures++;
}

static inline void expect_value(const char *what, long got, long want)
{
	expect_value_in(NULL, what, got, want);
}

#define EXPECT(call, want) expect_value(#call, (long)(call), (long)(want))
#define EXPECT_V(what, got, want) expect_value(what, (long)(got), (long)(want))
#define EXPECT_IN(ctx, call, want)                                           \
	expect_value_in(ctx, #call, (long)(call), (long)(want))

#endif
