/* liveness_check.h - helpers of the tests of shared channels' liveness
 * (who is alive among the attached processes, liveness.c): pipes between
 * a test's processes, a handle's attacher id, and waiting for a death to
 * be seen. */
#ifndef CANAL_TEST_LIVENESS_CHECK_H
#define CANAL_TEST_LIVENESS_CHECK_H

#include "check.h"

#include "../src/channel/internal.h"

#include <canal/channel.h>
#include <stdbool.h>

static inline void write_all(int fd, const void *p, size_t n)
{
	CHECK(write(fd, p, n) == (ssize_t)n);
}

static inline void read_all(int fd, void *p, size_t n)
{
	CHECK(read(fd, p, n) == (ssize_t)n);
}

/* This process's attacher id on ch, after a claim (the handle attaches,
 * or re-attaches in a forked child, at its first claim). ch must have
 * room for one element and hold none. */
static inline uint32_t self_id(struct canal_chan *ch)
{
	uint64_t x = 1;
	CHECK_EQ(canal_try_send(ch, &x), 0);
	CHECK_EQ(canal_try_recv(ch, &x), 0);
	return atomic_load(&ch->attach_id);
}

/* id's process seen dead within ms milliseconds (a killed process's
 * locks go once its descriptors are closed, before it is reaped). */
static inline bool seen_dead(struct canal_chan *ch, uint32_t id, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (canal__attacher_gone(ch, id))
			return true;
		usleep(1000);
	}
	return false;
}

#endif
