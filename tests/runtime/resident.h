/* resident.h - whether pages are resident (mincore(2)), for the tests of
 * the stack pool's budget and trims: no timing, the kernel's answer. */
#ifndef CANAL_TESTS_RESIDENT_H
#define CANAL_TESTS_RESIDENT_H

#include "check.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* Whether the page holding address a is resident. */
static inline bool page_resident(uintptr_t a)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	unsigned char v = 0;
	CHECK_EQ(mincore((void *)(a & ~(page - 1)), 1, &v), 0);
	return v & 1;
}

/* How many of the n addresses are on resident pages. */
static inline int count_resident(const uintptr_t *addr, int n)
{
	int kept = 0;
	for (int i = 0; i < n; i++)
		kept += page_resident(addr[i]);
	return kept;
}

#endif
