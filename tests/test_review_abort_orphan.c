/*
 * test_review_abort_orphan - on a synchronous channel, after a timed
 * receiver gave up on a reserved slot and the reserve was then aborted, no
 * receiver waits: canal_try_send must return -EAGAIN and a blocking send
 * must not return ("canal_try_send() succeeds only when a receiver is
 * waiting"; "a blocking send returns only once the element is in a
 * receiver's hands", include/canal/channel.h).
 *
 * Defect: canal_recv_timeout announces itself (demand 1); the reserve takes
 * that unit (demand 0) and holds the slot. At its deadline the receiver's
 * retract fails, it waits the committed grace (2 ms) and leaves, counting
 * the coming element as an orphan (recv_ring, sendrecv.c:
 * canal__sync_make_orphan; orphans 1). canal_send_abort then gives the
 * unit back to `demand` (single_copy.c: canal__sync_give_back(ch, false);
 * demand 1), although the receiver it was taken from is gone and the
 * orphan it left will never come: the channel now counts a waiting
 * receiver that does not exist (demand 1) and an element that does not
 * exist (orphans 1). A later try_send takes the phantom unit and returns
 * 0 with nobody there; a blocking send likewise returns at once.
 * Deterministic: the reserve blocks until the timed receiver announces,
 * and the test waits for the receiver to return before aborting.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

static struct canal_chan *ch;

static void *timed_receiver(void *arg)
{
	(void)arg;
	long v = 0;
	return (void *)(intptr_t)canal_recv_timeout(ch, &v, 100000000);
}

int main(void)
{
	alarm(20);
	ch = canal_chan_create(sizeof(long), 0, 0);
	CHECK(ch);

	pthread_t rt = spawn(timed_receiver, NULL);
	struct canal_slot s;
	CHECK_EQ(canal_send_reserve(ch, &s), 0); /* the receiver's unit */
	/* The receiver gives up (its deadline and the 2 ms grace). */
	CHECK_EQ((intptr_t)join(rt), -ETIMEDOUT);
	CHECK_EQ(canal_send_abort(ch, &s), 0);

	/* Nobody receives now. */
	long x = 7;
	int r = canal_try_send(ch, &x);
	if (r == 0)
		fprintf(stderr, "canal_try_send returned 0 with no receiver "
				"waiting (a phantom unit of demand)\n");
	CHECK_EQ(r, -EAGAIN);
	r = canal_send_timeout(ch, &x, 50000000);
	if (r == 0)
		fprintf(stderr, "canal_send_timeout returned 0 with no "
				"receiver waiting\n");
	CHECK_EQ(r, -ETIMEDOUT);
	/* And the channel still works both ways. */
	CHECK_EQ(canal_try_recv(ch, &x), -EAGAIN);
	canal_chan_destroy(ch);
	TEST_DONE("test_review_abort_orphan");
}
