/* test_task_stack_pool.c - the stack pool gives pages back: beyond its
 * budget of free blocks that keep their pages (dirty_max), a block put
 * back loses every page but its task area's; a block taken from the pool
 * makes room in the budget again. Residency is read with mincore(2). */
#include "check.h"
#include "runtime/stack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page;

/* Whether the lowest page of the stack is resident. */
static int low_page_resident(const struct canal__stack *st)
{
	unsigned char v = 0;
	CHECK_EQ(mincore(st->lo, page, &v), 0);
	return v & 1;
}

static void touch(const struct canal__stack *st)
{
	memset(st->lo, 0xa5, st->size);
}

int main(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	struct canal__stack_pool *p = NULL;
	CHECK_EQ(canal__stack_pool_create(64 << 10, &p), 0);
	size_t dm = canal__stack_pool_dirty_max(p);
	CHECK(dm >= 1 && dm < 100000);
	size_t n = dm + 16;
	struct canal__stack *st = calloc(n, sizeof(*st));
	void **area = calloc(n, sizeof(*area));
	CHECK(st && area);
	for (size_t i = 0; i < n; i++) {
		area[i] = canal__stack_get(p, NULL, &st[i]);
		CHECK(area[i] != NULL);
		CHECK_EQ((uintptr_t)st[i].lo % page, 0);
		touch(&st[i]);
		CHECK(low_page_resident(&st[i]));
	}
	for (size_t i = 0; i < n; i++)
		canal__stack_put(p, NULL, area[i], &st[i]);
	/* The first dm kept their pages, the others gave them back. */
	size_t kept = 0, released = 0;
	for (size_t i = 0; i < n; i++) {
		if (low_page_resident(&st[i]))
			kept += i < dm;
		else
			released += i >= dm;
	}
	CHECK_EQ(kept, dm);
	CHECK_EQ(released, n - dm);

	/* The free list is last in, first out: the 16 released blocks come
	 * back first, then a kept one, which leaves room for one more. */
	struct canal__stack got[17];
	void *got_area[17];
	for (int i = 0; i < 17; i++) {
		got_area[i] = canal__stack_get(p, NULL, &got[i]);
		CHECK(got_area[i] != NULL);
	}
	CHECK(low_page_resident(&got[16])); /* the kept one */
	for (int i = 0; i < 16; i++)
		touch(&got[i]);
	/* One slot in the budget: the first put keeps its pages, the next
	 * ones (the budget full again) give theirs back. */
	for (int i = 0; i < 17; i++)
		canal__stack_put(p, NULL, got_area[i], &got[i]);
	CHECK(low_page_resident(&got[0]));
	for (int i = 1; i < 16; i++)
		CHECK(!low_page_resident(&got[i]));
	/* The kept block was put back last, over budget: released too. */
	CHECK(!low_page_resident(&got[16]));

	canal__stack_pool_destroy(p);
	free(st);
	free(area);
	printf("stack pool: %zu blocks kept with their pages, the rest given back\n", dm);
	return 0;
}
