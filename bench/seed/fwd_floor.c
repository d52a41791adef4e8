/* SPDX-License-Identifier: MIT */
/*
 * fwd_floor.c - the floor of fwd: a transport that moves nothing. fwd.c
 * starts and joins the same threads (fwd-floor) or processes
 * (fwd-floor-proc) as for every other transport, and they return at once.
 * What a fwd variant costs above this is the cost of its communication.
 */
#include "transport.h"

static int setup(int shared)
{
	(void)shared;
	return 0;
}

static void writer(int id, long quota)
{
	(void)id;
	(void)quota;
}

static void writers_done(int shared)
{
	(void)shared;
}

static long reader(long *bad)
{
	(void)bad;
	return 0;
}

static long forward(long max)
{
	(void)max;
	return 0;
}

const struct fwd_transport fwd_floor_transport = {
	.name = "floor", .setup = setup, .writer = writer, .writers_done = writers_done,
	.reader = reader, .forward = forward,
};
