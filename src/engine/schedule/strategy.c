/* SPDX-License-Identifier: MIT */
/*
 * schedule/strategy.c - the strategies: how the next packet is built from
 * a gate's window when the driver can take one. Both are made of the same
 * tactics (the seed's vocabulary): "express first" (control pieces and
 * EXPRESS data lead), "skip the blocked" (a piece waiting for credit does
 * not hold back the pieces behind it: the receiver matches by sequence
 * number, so the wire order within a flow does not matter) and, for
 * aggregate, "aggregate" (pack every eligible piece that fits one packet)
 * and "wait while busy" (while the driver still has a packet in flight,
 * hold small pieces back so that more can join them).
 *
 *   default    one piece per packet, sent as soon as the driver has room.
 *   aggregate  while the driver is busy, pieces accumulate (until
 *              AGGREGATE_FLUSH bytes are queued); when it is idle, one
 *              packet takes as many pieces of any flows as fit.
 */
#include "schedule.h"

#include "../transfer/driver.h"

#include <string.h>

/* How far down the normal queue a strategy looks for an eligible piece. */
#define SCAN_LIMIT 64
/* Above this many queued bytes, aggregate stops waiting for idle. */
#define AGGREGATE_FLUSH ((size_t)32768)

static inline bool eligible(const struct canal__gate *g,
			    const struct canal__piece *p)
{
	return (int64_t)p->credit_cost <= g->credits;
}

static int select_default(struct canal_engine *e, struct canal__gate *g,
			  struct canal__piece **out, int max)
{
	(void)e;
	(void)max;
	struct canal__list *qs[2] = { &g->express, &g->normal };
	for (int q = 0; q < 2; q++) {
		int seen = 0;
		for (struct canal__list *l = qs[q]->next;
		     l != qs[q] && seen < SCAN_LIMIT; l = l->next, seen++) {
			struct canal__piece *p =
				canal__container_of(l, struct canal__piece, link);
			if (eligible(g, p)) {
				out[0] = p;
				return 1;
			}
		}
	}
	return 0;
}

static int select_aggregate(struct canal_engine *e, struct canal__gate *g,
			    struct canal__piece **out, int max)
{
	(void)e;
	struct canal__driver *d = g->drv;
	if (!d->ops->idle(d) && g->queued_bytes < AGGREGATE_FLUSH &&
	    canal__list_empty(&g->express))
		return 0;
	size_t room = d->caps.max_packet;
	int k = 0;
	int64_t credits = g->credits;
	struct canal__list *qs[2] = { &g->express, &g->normal };
	for (int q = 0; q < 2 && k < max; q++) {
		int seen = 0;
		for (struct canal__list *l = qs[q]->next;
		     l != qs[q] && seen < SCAN_LIMIT && k < max;
		     l = l->next, seen++) {
			struct canal__piece *p =
				canal__container_of(l, struct canal__piece, link);
			size_t sz = (size_t)p->hdr_len + p->payload_len;
			if ((int64_t)p->credit_cost > credits || sz > room)
				continue;
			out[k++] = p;
			room -= sz;
			credits -= p->credit_cost;
		}
	}
	return k;
}

static const struct canal__strategy strategies[] = {
	{ "default", select_default },
	{ "aggregate", select_aggregate },
};

const struct canal__strategy *canal__strategy_find(const char *name)
{
	for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
		if (strcmp(strategies[i].name, name) == 0)
			return &strategies[i];
	return NULL;
}
