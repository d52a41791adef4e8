/* test_revcond_keep_stress.c - a connect that waits for room in a full
 * Unix backlog (epoll: started again after pauses, with one kept
 * registration on its cancelling condvar, cond.h; io_uring: waiting in
 * the kernel) against signals and broadcasts from a plain thread at
 * random moments, with a canal_cond_wait waiter on the same condvar.
 *
 * Invariants, each trial: the connect cannot complete (the backlog stays
 * full) and its timeout is a hang guard, as the waiter's; so every signal
 * that says it woke a waiter ended exactly one of them (the connect with
 * -ECANCELED, the wait with 0), and the signaller, which signals until
 * its calls' counts add up to 2, then destroys the condvar at once (the
 * ended waiters must not touch it: ASan, TSan). Two loops: the
 * connecting task may move between its pauses.
 */
#define _GNU_SOURCE 1
#include "check.h"
#include "full_backlog.h"
#include "trial_pace.h"

#include <canal/task.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#ifdef SANITIZED
#define TRIALS 300
#else
#define TRIALS 1500
#endif
#define GUARD_NS 30000000000LL /* hang guard of each wait */

static struct full_backlog full;
static _Atomic(struct canal_cond *) trial_cond;
static _Atomic int trial_go, trial_done, stop;
static _Atomic int conn_r, wait_r, ended;
static int counts[TRIALS];
static uint64_t seed = 0x9e3779b97f4a7c15ull;

static void *signaller(void *arg)
{
	(void)arg;
	for (int trial = 0; trial < TRIALS; trial++) {
		trial_pace(&trial_go, trial, &seed, 4000);
		struct canal_cond *c = atomic_load(&trial_cond);
		int sum = 0;
		bool bcast = trial % 3 == 2;
		while (sum < 2) {
			int n = bcast ? canal_cond_broadcast(c)
				      : canal_cond_signal(c);
			CHECK(n >= 0 && n <= 2);
			sum += n;
			if (n == 0)
				spin_us((unsigned)(check_rand64(&seed) % 300));
		}
		counts[trial] = sum;
		canal_cond_destroy(c); /* both waiters were ended */
		atomic_store(&trial_done, trial + 1);
	}
	return NULL;
}

static void connecter(void *arg)
{
	struct canal_cond *c = arg;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	int r = canal_io_connect(s, (struct sockaddr *)&full.addr,
				 sizeof full.addr, GUARD_NS, c);
	close(s);
	atomic_store(&conn_r, r);
	atomic_fetch_add(&ended, 1);
}

static void waiter(void *arg)
{
	atomic_store(&wait_r, canal_cond_wait(arg, GUARD_NS));
	atomic_fetch_add(&ended, 1);
}

static void main_task(void *arg)
{
	(void)arg;
	for (int trial = 0; trial < TRIALS; trial++) {
		struct canal_cond *c = canal_cond_create();
		CHECK(c);
		atomic_store(&ended, 0);
		atomic_store(&conn_r, 1);
		atomic_store(&wait_r, 1);
		atomic_store(&trial_cond, c);
		/* Half the trials register the waiter first. */
		if (trial & 1)
			CHECK_EQ(canal_spawn(waiter, c), 0);
		CHECK_EQ(canal_spawn(connecter, c), 0);
		if (!(trial & 1))
			CHECK_EQ(canal_spawn(waiter, c), 0);
		atomic_store(&trial_go, trial + 1);
		while (atomic_load(&ended) < 2 ||
		       atomic_load(&trial_done) != trial + 1)
			canal_sleep_ns(200000);
		int cr = atomic_load(&conn_r), wr = atomic_load(&wait_r);
		if (cr != -ECANCELED || wr != 0 || counts[trial] != 2) {
			fprintf(stderr,
				"trial %d: connect %d, wait %d, signals woke "
				"%d; want -ECANCELED, 0, 2\n",
				trial, cr, wr, counts[trial]);
			abort();
		}
	}
	atomic_store(&stop, 1);
}

int main(void)
{
	full_backlog_open(&full, "revcond-keep");
	pthread_t th = spawn(signaller, NULL);
	struct canal_run_options o = {.loops = 2};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	join(th);
	full_backlog_close(&full);
	TEST_DONE("test_revcond_keep_stress");
}
