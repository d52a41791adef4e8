/*
 * test_review_select_stolen - a canal_select with a timeout, receiving on a
 * synchronous channel, must return by its timeout when the element a
 * sender pushed for it was taken by a plain receiver.
 *
 * Defect (hostile review of issue 11): plain receivers and selects draw
 * on two demand counters (rendezvous.c), but take elements from one ring.
 * 1. the select announces itself: select_demand = 1, and sleeps;
 * 2. canal_try_send takes that unit and publishes (it does not wait for
 *    the ack; a blocking canal_send would return as soon as anyone takes
 *    the element);
 * 3. a plain receiver arrives first (here canal_try_recv): it announces
 *    itself (demand = 1: there is no orphan) and takes the element;
 * 4. the select wakes, its retraction of select_demand fails (0), so it
 *    counts itself committed and waits in canal__sync_recv_announced with
 *    CANAL_NO_DEADLINE (no slices, no further retract). But the unit left
 *    over is the plain receiver's, in `demand`: nothing
 *    is coming for the select. It blocks past its 300 ms timeout until some
 *    later sender arrives (for ever if none does), and that sender, matched
 *    with the phantom plain unit, returns 0 before anyone is there.
 * Made deterministic by holding the select's thread in a signal handler
 * (after it announced and slept) while steps 2 and 3 run.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <semaphore.h>
#include <time.h>

static struct canal_chan *ch;
static sem_t hold, held;
static _Atomic int select_ret = 1000;

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
	long v = 0;
	struct canal_case c = { ch, CANAL_OP_RECV, &v, 0 };
	atomic_store(&select_ret, canal_select(&c, 1, 300000000, 0));
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

	ch = canal_chan_create(sizeof(long), 0, 0);
	CHECK(ch);
	pthread_t t = spawn(selector, NULL);
	/* Let the select announce itself and go to sleep (setup only). */
	struct timespec ts = { 0, 100000000 };
	nanosleep(&ts, NULL);
	pthread_kill(t, SIGUSR1);
	while (sem_wait(&held) != 0)
		;

	long x = 42, y = 0;
	/* 2. Matched with the select's unit. */
	CHECK_EQ(canal_try_send(ch, &x), 0);
	/* 3. A plain receiver takes the element first. */
	CHECK_EQ(canal_try_recv(ch, &y), 0);
	CHECK_EQ(y, 42);
	sem_post(&hold);

	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 3;
	int jr = pthread_timedjoin_np(t, NULL, &dl);
	if (jr != 0)
		fprintf(stderr, "canal_select(timeout 300 ms) still blocked "
				"3 s later, waiting for an element nobody "
				"sends\n");
	CHECK_EQ(jr, 0);
	CHECK_EQ(atomic_load(&select_ret), -ETIMEDOUT);
	/* Nobody waits: no unit of demand may be left. */
	CHECK_EQ(canal_try_send(ch, &x), -EAGAIN);
	canal_chan_destroy(ch);
	TEST_DONE("test_review_select_stolen");
}
