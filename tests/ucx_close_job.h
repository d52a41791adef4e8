/* ucx_close_job.h - what test_revucx_close_inflight and
 * test_revucx_close_recv share: ranks ordered by pipes (one byte each
 * way), a byte pattern that freed memory does not hold, and progress
 * until a gate's driver has handed everything to UCX. */
#ifndef CANAL_TEST_UCX_CLOSE_JOB_H
#define CANAL_TEST_UCX_CLOSE_JOB_H

#include "engine_job.h"

#include "../src/engine/internal.h"
#include "../src/engine/transfer/driver.h"

static inline unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + 13 + (i >> 8));
}

static inline void put_byte(int fd, char c)
{
	CHECK_EQ(write(fd, &c, 1), 1);
}

static inline char get_byte(int fd)
{
	char c = 0;
	CHECK_EQ(read(fd, &c, 1), 1);
	return c;
}

static inline void until_handed_over(struct canal_engine *e, int gate)
{
	struct canal__driver *d = e->gates[gate].drv;
	while (!d->ops->idle(d))
		canal_engine_progress(e);
}

#endif
