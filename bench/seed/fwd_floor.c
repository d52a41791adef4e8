/* SPDX-License-Identifier: MIT */
/*
 * fwd_floor.c - the floor of fwd: the same threads (fwd-floor) or processes
 * (FWD_PROC: fwd-floor-proc) as the fwd programs, started and joined the
 * same way, exchanging no message. What a fwd variant costs above this is
 * the cost of its communication.
 */
#include "seed.h"

#include <stdio.h>
#include <unistd.h>

#ifndef FWD_PROC
static void *idle(void *arg)
{
	return arg;
}
#endif

int main(int argc, char **argv)
{
	long n_writers, n_readers;
	fwd_parse_args(argc, argv, &n_writers, &n_readers);
	seed_working();
#ifdef FWD_PROC
	for (long i = 0; i < n_readers + n_writers; i++)
		if (seed_fork() == 0)
			_exit(0);
	long bad = seed_wait_children(n_readers + n_writers);
	if (bad)
		seed_die("%ld children failed", bad);
#else
	pthread_t *r = seed_spawn((size_t)n_readers, idle, NULL, 0);
	pthread_t *f = seed_spawn(1, idle, NULL, 0);
	pthread_t *w = seed_spawn((size_t)n_writers, idle, NULL, 0);
	seed_join(w, (size_t)n_writers);
	seed_join(f, 1);
	seed_join(r, (size_t)n_readers);
#endif
	seed_end();
	return 0;
}
