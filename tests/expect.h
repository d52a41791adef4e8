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

static inline void expect_value(const char *what, long got, long want)
{
	if (got == want)
		return;
	fprintf(stderr, "%s: %ld (%s), want %ld (%s)\n", what, got,
		strerror((int)-got), want, strerror((int)-want));
	expect_failures++;
}

#define EXPECT(call, want) expect_value(#call, (long)(call), (long)(want))
#define EXPECT_V(what, got, want) expect_value(what, (long)(got), (long)(want))

#endif
