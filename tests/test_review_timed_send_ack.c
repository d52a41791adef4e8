/*
 * test_review_timed_send_ack - canal_send_timeout on a synchronous channel
 * must return by its deadline, as include/canal/channel.h promises ("a
 * timed one by its deadline, whatever another thread or process does").
 *
 * Defect (hostile review of issue 11): a sender that took a select's unit
 * waits for the ack after publishing (send_impl, sendrecv.c:
 * canal__sync_wait_ack(ch, pos), which has no deadline), even for a timed
 * send. When the select completes another case in the same instant, the
 * element becomes an orphan (select.c) and the timed sender waits until
 * some later receiver takes it: for ever if none comes, whatever its
 * timeout (200 ms here).
 * Deterministic: the select is held in a signal handler (after announcing
 * itself on both channels) while both senders take its units; its case 0
 * (channel A) is then the one it commits to, and channel B's element, the
 * timed sender's, is orphaned.
 *
 * Then, once the timed sender has withdrawn that orphan at its deadline,
 * no receiver waits on B: canal_try_send must return -EAGAIN ("succeeds
 * only when a receiver is waiting"). Defect (hostile review, 2026-11-30):
 * the sender gave its select unit back (rendezvous.c,
 * canal__sync_give_back: select_demand 1) although the select it was
 * taken from had gone and the orphan it counted no longer existed; a
 * later try_send on B took the phantom unit and returned 0 with nobody
 * there. A unit given back now cancels an orphan first.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <semaphore.h>
#include <time.h>

static struct canal_chan *a, *b;
static sem_t hold, held;
static _Atomic int send_ret = 1000;

static void on_usr1(int sig)
{
	(void)sig;
	sem_post(&held);
	while (sem_wait(&hold) != 0)
		;
}

static void *selector(void *arg)
{
	(void)arg;
	long va = 0, vb = 0;
	struct canal_case c[2] = { { a, CANAL_OP_RECV, &va, 0 },
				   { b, CANAL_OP_RECV, &vb, 0 } };
	int r = canal_select(c, 2, -1, CANAL_SELECT_BIASED);
	CHECK_EQ(r, 0);
	CHECK_EQ(va, 1);
	return NULL;
}

static void *timed_sender(void *arg)
{
	(void)arg;
	long x = 2;
	atomic_store(&send_ret, canal_send_timeout(b, &x, 200000000));
	return NULL;
}

int main(void)
{
	alarm(20);
	CHECK_EQ(sem_init(&hold, 0, 0), 0);
	CHECK_EQ(sem_init(&held, 0, 0), 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);

	a = canal_chan_create(sizeof(long), 0, 0);
	b = canal_chan_create(sizeof(long), 0, 0);
	CHECK(a && b);
	pthread_t st = spawn(selector, NULL);
	struct timespec ts = { 0, 100000000 };
	nanosleep(&ts, NULL); /* the select announces and sleeps */
	pthread_kill(st, SIGUSR1);
	while (sem_wait(&held) != 0)
		;
	long x = 1;
	CHECK_EQ(canal_try_send(a, &x), 0); /* the select's unit on A */
	pthread_t tt = spawn(timed_sender, NULL);
	/* Let the timed sender take the select's unit on B and publish. */
	nanosleep(&ts, NULL);
	sem_post(&hold);
	join(st);

	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 3;
	int jr = pthread_timedjoin_np(tt, NULL, &dl);
	if (jr != 0)
		fprintf(stderr, "canal_send_timeout(200 ms) still blocked 3 s "
				"later (waiting for the ack of an orphan)\n");
	CHECK_EQ(jr, 0);
	fprintf(stderr, "canal_send_timeout -> %d\n", atomic_load(&send_ret));
	/* The timed sender's element was withdrawn: nobody took it. */
	CHECK_EQ(atomic_load(&send_ret), -ETIMEDOUT);

	/* Nobody receives on B now. */
	long y = 3;
	int r = canal_try_send(b, &y);
	if (r == 0)
		fprintf(stderr, "canal_try_send returned 0 with no receiver "
				"waiting (a phantom select unit)\n");
	CHECK_EQ(r, -EAGAIN);
	canal_chan_destroy(a);
	canal_chan_destroy(b);
	TEST_DONE("test_review_timed_send_ack");
}
