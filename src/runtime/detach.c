/* SPDX-License-Identifier: MIT */
/*
 * detach.c - canal_detach / canal_attach: a pool of native threads that
 * run tasks which need to block (CPC's detach and attach).
 */
#include "runtime/internal.h"

#include <stdlib.h>

int canal__detach_start(struct canal__runtime *rt)
{
	(void)rt;
	return 0;
}

void canal__detach_stop(struct canal__runtime *rt)
{
	(void)rt;
}

void canal__detach_push(struct canal__runtime *rt, struct canal__task *t)
{
	(void)rt, (void)t;
	abort();
}
