/* SPDX-License-Identifier: MIT */
/*
 * test_engine_strategy.c - white-box: what the strategies put in one packet
 * (src/engine/schedule/strategy.c), on a gate built by hand with a driver
 * that only answers idle() and has the capabilities under test.
 *
 * The window of the page-request reply (seed 002): an express "found" flag
 * (1 B), then the page number (4 B) and an eager page, in that order.
 *  - default: one piece per packet.
 *  - aggregate, cheap packets (shm): the express packet is kept short, the
 *    page goes in a packet of its own; an express piece larger than that
 *    goes alone.
 *  - aggregate, costly packets (TCP): one packet takes all three.
 *  - aggregate on a busy driver with little queued waits (0 pieces), but
 *    not when an express piece waits.
 *  - credit: a data piece without credit stops the data behind it.
 */
#include "check.h"

#include "engine/schedule/schedule.h"
#include "engine/transfer/driver.h"

static bool fake_idle_value = true;

static bool fake_idle(struct canal__driver *d)
{
	(void)d;
	return fake_idle_value;
}

static const struct canal__driver_ops fake_ops = { .name = "fake",
						   .idle = fake_idle };

struct window {
	struct canal__driver drv;
	struct canal__gate g;
	struct canal__piece p[8];
	int n;
};

static void window_init(struct window *w, bool costly, size_t max_packet)
{
	memset(w, 0, sizeof *w);
	w->drv.ops = &fake_ops;
	w->drv.caps.max_packet = max_packet;
	w->drv.caps.eager_max = max_packet - 256;
	w->drv.caps.costly_packets = costly;
	canal__sched_gate_init(&w->g); /* every queue, the credit window */
	w->g.drv = &w->drv;
}

static struct canal__piece *add(struct window *w, bool express, uint32_t len)
{
	CHECK(w->n < 8);
	struct canal__piece *p = &w->p[w->n++];
	canal__list_init(&p->link);
	p->hdr_len = 12;
	p->express = express;
	p->embedded = true;
	p->payload_len = len;
	p->credit_cost = canal__eager_cost(len);
	canal__list_append(express ? &w->g.express : &w->g.normal, &p->link);
	w->g.queued_bytes += len;
	return p;
}

static int pick(const char *strategy, struct window *w,
		struct canal__piece **out)
{
	const struct canal__strategy *s = canal__strategy_find(strategy);
	CHECK(s != NULL);
	return s->select(NULL, &w->g, out, 8);
}

/* The reply of one page request; returns the page piece. */
static struct canal__piece *reply(struct window *w, uint32_t page)
{
	add(w, true, 1);
	add(w, false, 4);
	return add(w, false, page);
}

int main(void)
{
	struct window w;
	struct canal__piece *out[8];
	const size_t shm_packet = 65536 + 256;

	CHECK(canal__strategy_find("no such strategy") == NULL);

	/* default: one piece, the express one first. */
	window_init(&w, false, shm_packet);
	reply(&w, 65536);
	CHECK_EQ(pick("default", &w, out), 1);
	CHECK(out[0] == &w.p[0]);

	/* aggregate, cheap packets: found + number, not the page. */
	window_init(&w, false, shm_packet);
	reply(&w, 65536);
	CHECK_EQ(pick("aggregate", &w, out), 2);
	CHECK(out[0] == &w.p[0] && out[1] == &w.p[1]);
	/* Once the express piece has left, the page goes (alone here). */
	canal__list_remove(&w.p[0].link);
	canal__list_remove(&w.p[1].link);
	CHECK_EQ(pick("aggregate", &w, out), 1);
	CHECK(out[0] == &w.p[2]);

	/* aggregate, costly packets: the whole reply in one packet. */
	window_init(&w, true, shm_packet);
	reply(&w, 65536);
	CHECK_EQ(pick("aggregate", &w, out), 3);
	CHECK(out[0] == &w.p[0] && out[1] == &w.p[1] && out[2] == &w.p[2]);

	/* Without express pieces, cheap packets are as large as ever. */
	window_init(&w, false, shm_packet);
	add(&w, false, 4);
	add(&w, false, 60000);
	CHECK_EQ(pick("aggregate", &w, out), 2);

	/* A page small enough joins the express packet on any driver. */
	window_init(&w, false, shm_packet);
	reply(&w, 1000);
	CHECK_EQ(pick("aggregate", &w, out), 3);

	/* An express piece larger than the short packet goes alone. */
	window_init(&w, false, shm_packet);
	add(&w, true, 20000);
	add(&w, false, 4);
	CHECK_EQ(pick("aggregate", &w, out), 1);
	CHECK(out[0] == &w.p[0]);

	/* Busy driver, little queued, no express: aggregate waits... */
	fake_idle_value = false;
	window_init(&w, false, shm_packet);
	add(&w, false, 4);
	add(&w, false, 4);
	CHECK_EQ(pick("aggregate", &w, out), 0);
	/* ...unless an express piece waits. */
	add(&w, true, 1);
	CHECK_EQ(pick("aggregate", &w, out), 3);
	CHECK(out[0] == &w.p[2]);
	fake_idle_value = true;

	/* Credit: the second piece has none; the third, smaller, must not
	 * pass it (data take credit in queue order). */
	window_init(&w, true, shm_packet);
	add(&w, false, 4);
	add(&w, false, 4000);
	add(&w, false, 4);
	w.g.credits = (int64_t)canal__eager_cost(4) + 100;
	CHECK_EQ(pick("aggregate", &w, out), 1);
	CHECK(out[0] == &w.p[0]);

	printf("test_engine_strategy: ok\n");
	return 0;
}
