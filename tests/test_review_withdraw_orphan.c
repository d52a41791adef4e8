/*
 * test_review_withdraw_orphan - on a synchronous channel, once a timed
 * sender has withdrawn an element that a select had left as an orphan, no
 * receiver waits: canal_try_send must return -EAGAIN ("canal_try_send()
 * succeeds only when a receiver is waiting", include/canal/channel.h).
 *
 * Defect: the scenario of test_review_timed_send_ack. A select receiving
 * on A and B is held (signal handler) after announcing itself on both;
 * a try_send on A and a timed send on B take its two select units; the
 * select commits to A and makes B's element an orphan (select.c,
 * canal__sync_make_orphan: orphans 1). Nobody takes it; at its deadline
 * the timed sender withdraws it (rendezvous.c, withdraw: FULL -> SKIP)
 * and gives its unit back (canal__sync_give_back(ch, true):
 * select_demand 1), although the select it was taken from has gone and
 * the orphan it counted no longer exists. B now counts a receiving select
 * that does not exist (select_demand 1) and an element that does not
 * exist (orphans 1): a later try_send on B takes the phantom unit and
 * returns 0 with nobody there (and a try_send does not wait for the ack).
 * Deterministic.
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
	TEST_DONE("test_review_withdraw_orphan");
}
