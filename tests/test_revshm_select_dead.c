/*
 * test_revshm_select_dead - a select is the only waiter on a buffered
 * shared channel whose slot a killed process holds: it must repair the
 * slot as any waiter does (docs/GUARANTEES.md: "any process that waits on
 * that slot, after 1 ms of waiting on that slot") and complete its case.
 *
 *  1. receive case: a sender reserved position 0 and was killed; a live
 *     sender then sent an element at position 1. The select's receive case
 *     must get that element.
 *  2. send case: the ring is full (capacity 2); a receiver borrowed
 *     position 0 and was killed. The select's send case (position 2, on
 *     slot 0) must get through.
 *
 * Failed before the fix: both selects returned -ETIMEDOUT after 3 s (and
 * with no timeout would have spun for ever). select polls its cases with
 * try operations, which never wait on a held slot long enough to ask the
 * repair (canal__ring_claim_recv's try_only, wait_held's deadline 0), while
 * the indices say the case is ready, so the select never registers: it
 * snoozes and polls again until its deadline, and the slot stays held.
 * The fix is test_revshm_poll_dead's: a try operation counts its wait on
 * a holder from this process's first sighting of it and asks the repair.
 * (The synchronous case was fixed before: test_holes' test_sync_dead_select;
 * it goes through canal__sync_recv_announced, a blocking receive.)
 *
 * Bounded by alarm(); every wait has a deadline.
 */
#define _GNU_SOURCE 1
#include "dead_holder.h"

#include <canal/channel.h>

#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

static void select_recv_dead_sender(void)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 4,
						  CANAL_SHARED);
	CHECK(ch);
	kill_holding(ch, false);
	uint64_t v = 5, got = 0;
	CHECK_EQ(canal_send(ch, &v), 0);
	struct canal_case c = { ch, CANAL_OP_RECV, &got, 1 };
	CHECK_EQ(canal_select(&c, 1, 3000000000ll, 0), 0);
	CHECK_EQ(c.result, 0);
	CHECK_EQ(got, 5);
	/* Nothing else: the dead sender's position was withdrawn. */
	CHECK_EQ(canal_try_recv(ch, &got), -EAGAIN);
	canal_chan_destroy(ch);
}

static void select_send_dead_receiver(void)
{
	struct canal_chan *ch = full_behind_dead_borrow();
	uint64_t v3 = 3, got = 0;
	struct canal_case c = { ch, CANAL_OP_SEND, &v3, 1 };
	CHECK_EQ(canal_select(&c, 1, 3000000000ll, 0), 0);
	CHECK_EQ(c.result, 0);
	/* The dead receiver's element (1) is lost with it; 2 then 3. */
	CHECK_EQ(canal_recv_timeout(ch, &got, 3000000000ll), 0);
	CHECK_EQ(got, 2);
	CHECK_EQ(canal_recv_timeout(ch, &got, 3000000000ll), 0);
	CHECK_EQ(got, 3);
	canal_chan_destroy(ch);
}

int main(void)
{
	alarm(30);
	select_recv_dead_sender();
	select_send_dead_receiver();
	TEST_DONE("test_revshm_select_dead");
}
