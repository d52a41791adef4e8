/*
 * test_revsel_committed_finite - a select with a finite timeout, whose
 * receive case on a synchronous channel a sender has taken (its element is
 * coming), completes that case as a select without timeout does; it must
 * not give the element up while its deadline is far away and complete
 * another case instead.
 *
 * channel.h: on a synchronous channel, "reserve waits for a receiver, and
 * commit blocks until that receiver has taken the element". Here the
 * receiver is the select: canal_send_reserve takes its announcement and
 * holds the slot for 300 ms, and meanwhile another case (a buffered
 * channel) becomes ready.
 *
 * Defect: recv_ring (sendrecv.c) left a committed wait once
 * "canal_now_ns() - deadline >= COMMITTED_GRACE_NS", an unsigned difference
 * that wraps while the deadline is still ahead: the select (10 s timeout)
 * made the coming element an orphan at its first 1 ms slice, went round its
 * cases and returned the buffered case, leaving the reserver's commit to
 * wait for some other receiver. With timeout -1 it waited as it should.
 * Deterministic: the buffered send happens only once the reserve has taken
 * the select's announcement; the select is committed whichever it sees
 * first.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <time.h>

#define HOLD_NS 300000000l

static struct canal_chan *sync_ch, *buf_ch;
static atomic_int reserved;

static void *reserver(void *arg)
{
	(void)arg;
	struct canal_slot s;
	CHECK_EQ(canal_send_reserve(sync_ch, &s), 0);
	atomic_store(&reserved, 1);
	*(long *)s.data = 42;
	struct timespec ts = { 0, HOLD_NS };
	nanosleep(&ts, NULL);
	CHECK_EQ(canal_send_commit(sync_ch, &s), 0);
	return NULL;
}

static void *other_sender(void *arg)
{
	(void)arg;
	while (!atomic_load(&reserved)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	long v = 7;
	CHECK_EQ(canal_send(buf_ch, &v), 0); /* capacity 1: never blocks */
	return NULL;
}

int main(void)
{
	alarm(30);
	sync_ch = canal_chan_create(sizeof(long), 0, 0);
	buf_ch = canal_chan_create(sizeof(long), 1, 0);
	CHECK(sync_ch && buf_ch);
	pthread_t r = spawn(reserver, NULL);
	pthread_t o = spawn(other_sender, NULL);

	long a = 0, b = 0;
	struct canal_case cases[2] = {
		{ .ch = sync_ch, .op = CANAL_OP_RECV, .elt = &a },
		{ .ch = buf_ch, .op = CANAL_OP_RECV, .elt = &b },
	};
	int k = canal_select(cases, 2, 10000000000ll, 0);
	fprintf(stderr, "select -> %d (a = %ld, b = %ld)\n", k, a, b);
	join(o);
	if (k != 0) {
		/* Let the reserver finish so that the failure is reported
		 * cleanly: its element went to the next receiver. */
		long v = 0;
		CHECK_EQ(canal_recv(sync_ch, &v), 0);
		CHECK_EQ(v, 42);
	}
	join(r);
	CHECK_EQ(k, 0);
	CHECK_EQ(cases[0].result, 0);
	CHECK_EQ(a, 42);
	/* The buffered element is still there, exactly once. */
	CHECK_EQ(canal_try_recv(buf_ch, &b), 0);
	CHECK_EQ(b, 7);
	CHECK_EQ(canal_try_recv(buf_ch, &b), -EAGAIN);
	canal_chan_destroy(sync_ch);
	canal_chan_destroy(buf_ch);
	TEST_DONE("test_revsel_committed_finite");
}
