/* test_revrem_close_gave_up - a sending end whose canal_remote_close()
 * runs out of time loses the elements still in its channel (remote.h:
 * "-ETIMEDOUT when the wait ran out: ... undelivered elements are
 * lost"); the receiving end must not take that for a normal end.
 *
 * Rank 1's users send (capacity 4: 2 in each end's local channel) while
 * rank 0's take nothing, until rank 1's local channel is full and a send
 * waits in vain; rank 1 closes with
 * a 100 ms limit (-ETIMEDOUT: the receivers make no room) and tells rank
 * 0, which then drains: a prefix of the sequence, then -EPIPE. Expected: the receiving end's error and close
 * say -ECONNABORTED (elements were lost). What happened: the sending end
 * ended the channel with the same FIN as a sender whose receivers had
 * stopped it, and the receiving end closed with 0 and no error, as if
 * the stream had been whole. Ordered by a pipe; the only timed wait is
 * the close that must run out (nothing drains meanwhile); the job's
 * alarm bounds the rest. shm and TCP. */
#include "engine_job.h"

#include <canal/remote.h>

#define CAP 4
#define MAX 4096 /* elements: far above what the buffers hold */
#define WAIT_NS 50000000ll /* a send's wait for room: 50 ms */
#define TAG 3
#define LONG_NS 10000000000ll /* 10 s: never reached, the alarm's bound */

static int closed[2];

static int sender(struct canal_remote_hub *hub)
{
	struct canal_remote *r;
	CHECK_EQ(canal_remote_open(hub, 0, TAG, CANAL_REMOTE_SEND, 8, CAP, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	/* Until the channel is full and stays so (the receivers take
	 * nothing: every buffer on the way fills): a send that waited in
	 * vain with the channel full. */
	uint64_t i = 0;
	for (; i < MAX; i++) {
		int err;
		while ((err = canal_send_timeout(ch, &i, WAIT_NS)) == -ETIMEDOUT &&
		       canal_chan_len(ch) < canal_chan_capacity(ch))
			;
		if (err == -ETIMEDOUT)
			break;
		CHECK_EQ(err, 0);
	}
	CHECK(i < MAX);
	int err = canal_remote_close(r, 100000000ll);
	char c = 'c';
	CHECK_EQ(write(closed[1], &c, 1), 1);
	if (err != -ETIMEDOUT) {
		fprintf(stderr, "rank 1: close: %d, not -ETIMEDOUT: every "
				"element went (the test proves nothing)\n", err);
		return 1;
	}
	return 0;
}

static int receiver(struct canal_remote_hub *hub)
{
	struct canal_remote *r;
	CHECK_EQ(canal_remote_open(hub, 1, TAG, CANAL_REMOTE_RECV, 8, CAP, &r), 0);
	struct canal_chan *ch = canal_remote_chan(r);
	char c;
	CHECK_EQ(read(closed[0], &c, 1), 1);
	uint64_t got = 0, x;
	int err;
	while ((err = canal_recv_timeout(ch, &x, LONG_NS)) == 0) {
		CHECK_EQ(x, got); /* a prefix, in order, each once */
		got++;
	}
	CHECK_EQ(err, -EPIPE);
	CHECK(got < MAX);
	char why[200] = "";
	int e = canal_remote_error(r, why, sizeof why);
	int ce = canal_remote_close(r, LONG_NS);
	if (e != -ECONNABORTED || ce != -ECONNABORTED) {
		fprintf(stderr, "rank 0: %llu elements, then the end; "
				"error %d (\"%s\"), close %d: the lost elements "
				"went unsaid\n", (unsigned long long)got, e, why,
			ce);
		return 1;
	}
	CHECK(strstr(why, "lost") != NULL);
	return 0;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size, (void)arg;
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	int bad = rank == 0 ? receiver(hub) : sender(hub);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return bad;
}

int main(void)
{
	const char *drivers[] = { "shm", "tcp" };
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(pipe(closed), 0);
		struct job j = { 2, drivers[i], "default", 60, -1, NULL };
		CHECK_EQ(job_run(&j, body, NULL), 0);
		close(closed[0]);
		close(closed[1]);
	}
	TEST_DONE("test_revrem_close_gave_up");
}
