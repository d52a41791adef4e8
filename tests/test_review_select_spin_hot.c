/*
 * test_review_select_spin_hot - a select whose case is "ready" by the
 * indices but cannot complete (a sender reserved the slot and has not
 * committed it yet; or a receiver borrowed the slot a send would reuse)
 * must snooze (yield, then sleep: select.c's `busy`), not burn its CPU.
 *
 * Defect (review of 5ed6c8b): canal__spin's probe (any_case_ready) is the
 * same index test, so it succeeds at its first poll; the select
 * `continue`s without registering, poll_cases fails, and it spins again:
 * `busy` is never set, the snooze never runs, canal__spin_outcome(true)
 * keeps spins on. The select loops hot, at 100 % of a CPU, for as long as
 * the slot is held (for ever if its holder is a stopped process).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <sys/resource.h>
#include <time.h>

#define HOLD_MS 300

static struct canal_chan *ch;
static _Atomic int64_t cpu_ns = -1;
static _Atomic int ret = 1000;
static _Atomic long sleeps = -1;

static long voluntary_switches(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *selector(void *arg)
{
	struct canal_case *c = arg;
	int64_t t0 = thread_cpu_ns();
	long v0 = voluntary_switches();
	atomic_store(&ret, canal_select(c, 1, 5000000000LL, 0));
	atomic_store(&cpu_ns, thread_cpu_ns() - t0);
	atomic_store(&sleeps, voluntary_switches() - v0);
	return NULL;
}

struct res {
	int64_t cpu;
	long sleeps;
};

static struct res run(int op)
{
	ch = canal_chan_create(sizeof(long), 1, 0);
	CHECK(ch);
	struct canal_slot s;
	long v = 7;
	if (op == CANAL_OP_RECV) {
		/* Reserved, not committed: tail moved, slot unpublished. */
		CHECK_EQ(canal_send_reserve(ch, &s), 0);
	} else {
		/* Borrowed, not released: head moved, slot not free. */
		CHECK_EQ(canal_send(ch, &v), 0);
		CHECK_EQ(canal_recv_borrow(ch, &s), 0);
	}
	struct canal_case c = { ch, op, &v, 0 };
	atomic_store(&ret, 1000);
	pthread_t t = spawn(selector, &c);
	usleep(HOLD_MS * 1000);
	if (op == CANAL_OP_RECV) {
		*(long *)s.data = 42;
		CHECK_EQ(canal_send_commit(ch, &s), 0);
	} else {
		CHECK_EQ(canal_recv_release(ch, &s), 0);
	}
	join(t);
	CHECK_EQ(atomic_load(&ret), 0);
	CHECK_EQ(c.result, 0);
	if (op == CANAL_OP_RECV)
		CHECK_EQ(v, 42);
	canal_chan_destroy(ch);
	return (struct res){ atomic_load(&cpu_ns), atomic_load(&sleeps) };
}

int main(void)
{
	alarm(30);
	struct res r = run(CANAL_OP_RECV);
	struct res s = run(CANAL_OP_SEND);
	printf("select while the slot was held %d ms: recv case %lld ms CPU, "
	       "%ld voluntary switches; send case %lld ms CPU, %ld\n",
	       HOLD_MS, (long long)(r.cpu / 1000000), r.sleeps,
	       (long long)(s.cpu / 1000000), s.sleeps);
	fflush(stdout);
	/* A snoozing select: 2 ms of yields, then 100 us sleeps: hundreds
	 * of voluntary switches in 300 ms, even on a loaded machine. A hot
	 * loop: none (its CPU time is then whatever the scheduler gave). */
	CHECK(r.sleeps >= 20);
	CHECK(s.sleeps >= 20);
	TEST_DONE("test_review_select_spin_hot");
}
