/* SPDX-License-Identifier: MIT */
/*
 * schedule/strategy.c - the strategies: how the next packet is built from
 * a gate's window when the driver can take one. Both are made of the same
 * tactics (the seed's vocabulary): "express first" (control pieces and
 * EXPRESS data lead), "control passes" (a data piece waiting for credit
 * holds back the data behind it, never the control pieces: RTR, FIN and
 * CREDIT are what unblocks the peers) and, for aggregate, "aggregate" (pack
 * the eligible pieces that fit one packet) and "wait while busy" (while
 * the driver still has a packet in flight, hold small pieces back so that
 * more can join them).
 *
 * Data pieces take credit strictly in queue order (express queue, then
 * normal). Letting a later piece take the credit an earlier one waits for
 * can deadlock: the later piece sits unexpected at a receiver that frees it
 * only after the earlier one has arrived (seen by test_engine_stress).
 *
 *   default    one piece per packet, sent as soon as the driver has room.
 *   aggregate  while the driver is busy, pieces accumulate (until
 *              AGGREGATE_FLUSH bytes are queued); when it is idle, one
 *              packet takes as many pieces of any flows as fit (at most
 *              EXPRESS_PACKET bytes with express pieces on a driver
 *              whose packets are cheap).
 */
#include "schedule.h"

#include "../transfer/driver.h"

#include <string.h>

/* How far down each queue a strategy looks for an eligible piece. */
#define SCAN_LIMIT 64
/* Above this many queued bytes, aggregate stops waiting for idle. */
#define AGGREGATE_FLUSH ((size_t)32768)
/* Where packets are cheap (!caps.costly_packets), a packet that carries
 * express pieces is kept to this many bytes: the receiver needs those
 * pieces early (its next receive depends on them), and a large piece
 * behind them in the same packet makes it wait for the large piece's
 * bytes, and then find that piece unexpected. Measured, page requests of
 * 64 KiB pages on shm with the ring's 64 KiB eager size
 * (`seed_patterns page --page-bytes 65536`: found flag
 * express, then the page, eager; the default 65 KiB page is an RTS): the
 * reply as one packet 7.8-9.0 us per 3 pages, one packet per piece
 * 6.3-7.0, the express packet kept short 6.2-6.3. On TCP the second
 * packet's system call costs more than the wait: 43 -> 52 us. */
#define EXPRESS_PACKET ((size_t)4096)

/* Walk the window in order (control queue, the express and data queues
 * merged in queueing order, then normal, at most SCAN_LIMIT pieces each) and call take() on each piece that may
 * go now: control pieces always, data pieces in order while they have
 * credit and take() accepts them; the first data piece refused stops the
 * data. Returns the number taken. */
struct selection {
	struct canal__piece **out;
	int k, max;
	int64_t credits;
	size_t room;
};

static bool take(struct selection *sel, struct canal__piece *p)
{
	size_t sz = (size_t)p->hdr_len + p->payload_len;
	if (sel->k >= sel->max || sz > sel->room ||
	    (int64_t)p->credit_cost > sel->credits)
		return false;
	sel->out[sel->k++] = p;
	sel->room -= sz;
	sel->credits -= p->credit_cost;
	return true;
}

/* A cursor on one queue: at most SCAN_LIMIT of its pieces are looked at. */
struct cursor {
	struct canal__list *q, *l;
	int seen;
};

static struct canal__piece *cursor_peek(const struct cursor *c)
{
	if (c->l == c->q || c->seen >= SCAN_LIMIT)
		return NULL;
	return canal__container_of(c->l, struct canal__piece, link);
}

static void cursor_next(struct cursor *c)
{
	c->l = c->l->next;
	c->seen++;
}

/* Offer p to the selection: pieces that spend credit keep their order; a
 * DATA piece spends none (its receive is posted: RTR) and must not wait
 * behind one that waits for credit: the receiver returns credit only as
 * it takes messages, and the one it waits for may be that DATA's (a
 * deadlock: test_engine_flow, rndv_flood). */
static void offer(struct selection *sel, struct canal__piece *p,
		  bool *data_blocked)
{
	bool credited = p->credit_cost > 0;
	if (credited && *data_blocked)
		return;
	if (!take(sel, p) && credited)
		*data_blocked = true;
}

static int walk(struct canal__gate *g, struct selection *sel, int limit)
{
	bool data_blocked = false;
	struct cursor c = { &g->control, g->control.next, 0 };
	struct canal__piece *p;
	for (; (p = cursor_peek(&c)) && sel->k < limit; cursor_next(&c))
		offer(sel, p, &data_blocked);
	/* express and data merged in queueing order (internal.h), each
	 * cursor to its own limit: DATA behind a scan of blocked EXPRESS
	 * pieces is still seen (test_reveng4_data_behind_express). Orders
	 * compare modulo 2^32: fewer pieces than that are ever queued. */
	struct cursor x = { &g->express, g->express.next, 0 };
	struct cursor d = { &g->data, g->data.next, 0 };
	while (sel->k < limit) {
		struct canal__piece *px = cursor_peek(&x), *pd = cursor_peek(&d);
		if (!px && !pd)
			break;
		bool from_x = px && (!pd || (int32_t)(px->order - pd->order) <= 0);
		offer(sel, from_x ? px : pd, &data_blocked);
		cursor_next(from_x ? &x : &d);
	}
	struct cursor n = { &g->normal, g->normal.next, 0 };
	for (; (p = cursor_peek(&n)) && sel->k < limit; cursor_next(&n))
		offer(sel, p, &data_blocked);
	return sel->k;
}

static int select_default(struct canal_engine *e, struct canal__gate *g,
			  struct canal__piece **out, int max)
{
	(void)e;
	struct selection sel = { out, 0, max, g->credits, g->drv->caps.max_packet };
	return walk(g, &sel, 1);
}

static int select_aggregate(struct canal_engine *e, struct canal__gate *g,
			    struct canal__piece **out, int max)
{
	(void)e;
	struct canal__driver *d = g->drv;
	bool urgent = !canal__list_empty(&g->control) ||
		      !canal__list_empty(&g->express) ||
		      !canal__list_empty(&g->data);
	if (!d->ops->idle(d) && g->queued_bytes < AGGREGATE_FLUSH && !urgent)
		return 0;
	size_t room = d->caps.max_packet;
	if (urgent && !d->caps.costly_packets && room > EXPRESS_PACKET)
		room = EXPRESS_PACKET;
	struct selection sel = { out, 0, max, g->credits, room };
	int k = walk(g, &sel, max);
	if (k == 0 && room < d->caps.max_packet) {
		/* The first express piece alone is larger: it goes alone. */
		sel = (struct selection){ out, 0, max, g->credits,
					  d->caps.max_packet };
		k = walk(g, &sel, 1);
	}
	return k;
}

static bool lone_default(struct canal__gate *g, const struct canal__piece *p)
{
	(void)g;
	(void)p;
	return true;
}

/* As select_aggregate with one piece queued: it goes now if express or if
 * the driver is idle (queued_bytes < AGGREGATE_FLUSH for an eager piece). */
static bool lone_aggregate(struct canal__gate *g, const struct canal__piece *p)
{
	return p->express || g->drv->ops->idle(g->drv);
}

static const struct canal__strategy strategies[] = {
	{ "default", select_default, lone_default },
	{ "aggregate", select_aggregate, lone_aggregate },
};

const struct canal__strategy *canal__strategy_find(const char *name)
{
	for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
		if (strcmp(strategies[i].name, name) == 0)
			return &strategies[i];
	return NULL;
}
