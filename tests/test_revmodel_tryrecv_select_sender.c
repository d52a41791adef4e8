/* SPDX-License-Identifier: MIT */
/*
 * test_revmodel_tryrecv_select_sender.c - canal_try_recv on a synchronous
 * channel meets a sender that waits in a select.
 *
 * <canal/channel.h>: on a synchronous channel canal_try_recv "succeeds
 * only when a sender is waiting or has an element ready; it may then wait
 * up to 1 ms for that sender to hand its element over"; a blocked select
 * with a send case is a waiting sender (as in Go, whose non-blocking
 * receive takes the value of a select blocked on a send). Symmetrically,
 * canal_try_send already succeeds against a select waiting to receive
 * (the select announces itself as a receiver).
 *
 * Before the fix, only a plain blocking sender counted as waiting
 * (senders_waiting, counted in canal__sync_take_demand): against a select
 * blocked on a send case, every canal_try_recv returned -EAGAIN at once,
 * for ever (here: 0 of 1000 tries succeeded; a poller and a select-sender
 * never met). Found while modelling the API for test_revmodel_chan_stress.
 */
#include "check.h"

#include "channel/internal.h"

#include <canal/channel.h>

#include <stdint.h>

static struct canal_chan *ch, *never;

static void *select_sender(void *p)
{
	(void)p;
	uint32_t v = 42, dummy;
	/* A send case and a receive case on a channel that never has an
	 * element: the select can only complete by its send. */
	struct canal_case c[2] = {
		{ ch, CANAL_OP_SEND, &v, 0 },
		{ never, CANAL_OP_RECV, &dummy, 0 },
	};
	int r = canal_select(c, 2, -1, 0);
	CHECK_EQ(r, 0);
	CHECK_EQ(c[0].result, 0);
	return NULL;
}

int main(void)
{
	alarm(60);
	ch = canal_chan_create(sizeof(uint32_t), 0, 0);
	never = canal_chan_create(sizeof(uint32_t), 1, 0);
	CHECK(ch && never);
	pthread_t t = spawn(select_sender, NULL);
	/* Until the select waits on the channel's demand queue. */
	while (atomic_load(&ch->st->demand_wq.waiters) == 0)
		usleep(1000);

	uint32_t v = 0;
	int r = -EAGAIN, tries;
	for (tries = 0; tries < 1000 && r == -EAGAIN; tries++) {
		r = canal_try_recv(ch, &v);
		if (r == -EAGAIN)
			usleep(1000);
	}
	printf("try_recv: %d after %d tries\n", r, tries);
	if (r == -EAGAIN) {
		/* Let the select finish, then fail. */
		CHECK_EQ(canal_recv(ch, &v), 0);
		join(t);
		fprintf(stderr, "canal_try_recv never met the select waiting "
				"to send\n");
		return 1;
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(v, 42);
	join(t);
	/* Nothing left behind: no element, no demand, no orphan. */
	CHECK_EQ(canal_chan_len(ch), 0);
	CHECK_EQ(atomic_load(&ch->st->senders_waiting), 0);
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	canal_chan_destroy(ch);
	canal_chan_destroy(never);
	TEST_DONE("test_revmodel_tryrecv_select_sender");
}
