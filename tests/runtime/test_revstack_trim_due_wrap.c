/* SPDX-License-Identifier: MIT */
/*
 * test_revstack_trim_due_wrap - the due time of a full batch of free
 * stacks (canal__stack_pool_trim_due) is never in the past while the
 * batch is not due: an idle loop sleeps no longer than that time
 * (loop.c loop_sleep), then calls canal__stack_pool_trim_idle; a due time
 * in the past that trims nothing makes every sleep return at once (the
 * loop spins at 100 % CPU for as long as the batch waits).
 *
 * CANAL_STACK_TRIM_MS=-1 (strtoull: ULLONG_MAX, "never", as a user might
 * write it) or any delay near 2^64 ns: trim_since + trim_delay wraps. The
 * pool's budget filled, then a batch beyond it: either the due time is
 * ahead of now, or a trim_idle at now gives a batch back. No timing.
 */
#include "check.h"
#include "base/clock.h"
#include "runtime/stack.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void one(const char *ms)
{
	CHECK_EQ(setenv("CANAL_STACK_TRIM_MS", ms, 1), 0);
	struct canal__stack_pool *p = NULL;
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	size_t n = canal__stack_pool_dirty_max(p) +
		   canal__stack_pool_trim_batch(p);
	struct canal__stack *st = calloc(n, sizeof(*st));
	void **area = calloc(n, sizeof(*area));
	CHECK(st && area);
	for (size_t i = 0; i < n; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
	}
	for (size_t i = 0; i < n; i++)
		canal__stack_put(p, NULL, area[i], &st[i]);
	uint64_t now = canal_now_ns();
	uint64_t due = canal__stack_pool_trim_due(p);
	bool trimmed = due <= now && canal__stack_pool_trim_idle(p, now);
	printf("CANAL_STACK_TRIM_MS=%s: due %s now, trim_idle at now %s\n",
	       ms, due > now ? "after" : "at or before",
	       due > now ? "not called" : trimmed ? "trimmed" : "did nothing");
	/* A loop would sleep until due and find nothing to do: a spin. */
	CHECK(due > now || trimmed);
	canal__stack_pool_destroy(p);
	free(st);
	free(area);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	one("10");
	one("-1");
	one("18446744073709551615");
	printf("test_revstack_trim_due_wrap: ok\n");
	return 0;
}
