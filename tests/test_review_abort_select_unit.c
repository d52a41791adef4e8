/*
 * test_review_abort_select_unit - a canal_select with a timeout that
 * receives on a synchronous channel must return by its timeout when the
 * sender that matched it aborts its reservation.
 *
 * Defect (hostile review of issue 11): canal_send_reserve on a synchronous
 * channel takes a unit of demand, from `demand` or from `select_demand`
 * (canal__sync_take_demand), but canal_send_abort (single_copy.c) always
 * gives it back to the plain `demand` (canal__sync_give_back(ch, false)).
 * When the unit was a select's, select_demand stays at 0: the select's
 * retraction fails, it believes itself committed and calls
 * canal__sync_recv_announced(..., CANAL_NO_DEADLINE, committed) (select.c):
 * with no deadline, recv_ring's 10 ms slices never apply (dl stays
 * CANAL_NO_DEADLINE), so it waits on recv_wq for an element. The select
 * with a 200 ms timeout never returns; meanwhile `demand` holds a phantom
 * unit that lets a later plain sender return with no receiver. The same
 * happens when repair.c withdraws a dead sender's reserve that had taken a
 * select unit (it also gives back to `demand`).
 *
 * Deterministic: the reserve blocks until the select has announced itself,
 * and the select is the only receiver.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <time.h>

static struct canal_chan *ch;
static _Atomic int select_ret = 1000;

static void *selector(void *arg)
{
	(void)arg;
	long v = 0;
	struct canal_case c = { ch, CANAL_OP_RECV, &v, 0 };
	atomic_store(&select_ret, canal_select(&c, 1, 200000000, 0));
	return NULL;
}

int main(void)
{
	alarm(20);
	ch = canal_chan_create(sizeof(long), 0, 0);
	CHECK(ch);
	pthread_t t = spawn(selector, NULL);

	/* Blocks until the select announces itself (its select unit). */
	struct canal_slot s;
	CHECK_EQ(canal_send_reserve(ch, &s), 0);
	CHECK_EQ(canal_send_abort(ch, &s), 0);

	/* The select had a 200 ms timeout: give it 3 s. */
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 3;
	int jr = pthread_timedjoin_np(t, NULL, &dl);
	if (jr != 0) {
		fprintf(stderr,
			"canal_select(timeout 200 ms) still blocked 3 s after "
			"the matching reserve was aborted\n");
		CHECK_EQ(jr, 0);
	}
	CHECK_EQ(atomic_load(&select_ret), -ETIMEDOUT);

	/* No phantom demand may be left: a try_send finds no receiver. */
	long x = 7;
	CHECK_EQ(canal_try_send(ch, &x), -EAGAIN);
	canal_chan_destroy(ch);
	TEST_DONE("test_review_abort_select_unit");
}
