/* test_chain_wake.c - one chain wake-up in flight per queue (base/wait.h,
 * waitq_chain): the windows in which a chain is skipped are forced by
 * setting the queue's mark by hand, as a chain preempted at that point
 * would have left it, and a sleeper that nobody must forget is put to
 * sleep in the kernel first, on process-private queues (a shared queue's
 * sleeper re-checks every 500 ms, which would hide a loss: the shared
 * marks are checked on the queue's words). Each sleeper waits with a
 * deadline far away (10 s); a lost wake-up shows as -ETIMEDOUT (or as the
 * watchdog), never as a slow pass. Last, a stress of chains racing on a
 * model of the ring checks the general invariants (every item taken, no
 * sleeper left beside work); the narrow windows are the forced cases'
 * job, since random interleavings rarely land in them. */
#include "check.h"

#include "base/clock.h"
#include "base/wait.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define FAR_NS 10000000000ull

struct sleeper {
	struct canal_waitq *q;
	bool shared;
	_Atomic uint32_t *flag; /* the condition: *flag != 0 */
	uint64_t deadline;
	_Atomic pid_t tid;
	int result;
};

static bool flag_set(void *arg)
{
	return atomic_load_explicit((_Atomic uint32_t *)arg,
				    memory_order_seq_cst) != 0;
}

static void *sleep_on(void *arg)
{
	struct sleeper *s = arg;
	atomic_store(&s->tid, (pid_t)syscall(SYS_gettid));
	const struct canal__wait_cond c = { .ready = flag_set,
					    .probe = flag_set,
					    .arg = s->flag,
					    .kind = CANAL__WAIT_PLAIN };
	int r;
	do
		r = canal__wait(s->q, s->shared, &c, s->deadline);
	while (r == 0 && !flag_set((void *)s->flag));
	s->result = r;
	return NULL;
}

/* The thread's state letter in /proc (S: asleep, in the kernel). */
static char thread_state(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Until `want` sleepers are registered on q and each of those threads is
 * asleep in the kernel (the yield phase runs first; bounded: 10 s). */
static void until_asleep(struct canal_waitq *q, struct sleeper *const *s,
			 unsigned n)
{
	uint64_t give_up = canal_now_ns() + FAR_NS;
	for (;;) {
		unsigned asleep = 0;
		for (unsigned i = 0; i < n; i++) {
			pid_t tid = atomic_load(&s[i]->tid);
			if (tid && thread_state(tid) == 'S')
				asleep++;
		}
		if (asleep == n && atomic_load(&q->waiters) == n)
			return;
		CHECK(canal_now_ns() < give_up);
		usleep(1000);
	}
}

/* Nobody asleep: the chain marks, its wake finds nobody, it clears. */
static void test_chain_alone(void)
{
	struct canal_waitq q = { 0 };
	waitq_chain(&q, false);
	CHECK_EQ(atomic_load(&q.chained), 0);
	waitq_chain(&q, true);
	CHECK_EQ(atomic_load(&q.chained), 0);
}

/* The review's window: a chain marked the queue, its wake found nobody,
 * and it was preempted before clearing. Meanwhile a waiter went to sleep
 * and another chain (work left behind) saw the mark and skipped. The
 * first chain's clear must wake the sleeper. */
static void test_missed_while_clearing(void)
{
	const bool shared = false; /* a shared sleeper's periodic re-check
				    * would hide a loss: test_shared_marks */
	struct canal_waitq *q = mmap(NULL, sizeof *q, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(q != MAP_FAILED);
	_Atomic uint32_t flag = 0;
	struct sleeper s = { q, shared, &flag, canal_now_ns() + FAR_NS, 0, 1 };

	pthread_t t = spawn(sleep_on, &s);
	struct sleeper *all[] = { &s };
	until_asleep(q, all, 1);

	/* The first chain: marked, its wake found nobody (the sleeper was
	 * not asleep yet), not cleared yet. */
	uint32_t mark = canal__fork_generation() & ~CHAIN_MISSED;
	atomic_store(&q->chained, mark);

	/* The second chain: its work is left behind (N1, a seq_cst RMW);
	 * it sees the mark, records the miss and wakes nobody. */
	atomic_fetch_add(&flag, 1);
	uint32_t seq = atomic_load(&q->seq);
	waitq_chain(q, shared);
	CHECK_EQ(atomic_load(&q->chained), mark | CHAIN_MISSED);
	CHECK_EQ(atomic_load(&q->seq), seq);
	CHECK_EQ(atomic_load(&q->waiters), 1);

	/* The first chain resumes: its wake had found nobody, it clears
	 * the mark and finds the miss (waitq_chain's clear: the same as a
	 * waiter's that leaves without retrying). */
	waitq_woken_pass(q, shared);
	join(t);
	CHECK_EQ(s.result, 0);
	CHECK_EQ(atomic_load(&q->chained), 0);
	munmap(q, sizeof *q);
}

/* A waiter the chain woke clears the mark when it comes back; a miss
 * recorded before that is its to cover: it retries and finds the work. */
static void test_woken_clears(void)
{
	struct canal_waitq q = { 0 };
	_Atomic uint32_t flag = 0;
	struct sleeper s = { &q, false, &flag, canal_now_ns() + FAR_NS, 0, 1 };
	pthread_t t = spawn(sleep_on, &s);
	struct sleeper *all[] = { &s };
	until_asleep(&q, all, 1);
	atomic_fetch_add(&flag, 1);
	waitq_chain(&q, false);
	join(t);
	CHECK_EQ(s.result, 0);
	CHECK_EQ(atomic_load(&q.chained), 0);
}

/* A waiter that leaves at its deadline without retrying passes a miss
 * on: the other sleeper, whose work the skipped chain left, wakes. */
static void test_timeout_passes_miss(void)
{
	struct canal_waitq q = { 0 };
	_Atomic uint32_t never = 0, flag = 0;
	struct sleeper stayer = { &q, false, &flag, canal_now_ns() + FAR_NS, 0,
				  1 };
	pthread_t ts = spawn(sleep_on, &stayer);
	struct sleeper *all[] = { &stayer };
	until_asleep(&q, all, 1);

	/* A chain in flight (its woken thread will be the leaver) and a
	 * skipper whose work is left behind: the mark with the miss. */
	uint32_t mark = canal__fork_generation() & ~CHAIN_MISSED;
	atomic_store(&q.chained, mark);
	atomic_fetch_add(&flag, 1);
	waitq_chain(&q, false);
	CHECK_EQ(atomic_load(&q.chained), mark | CHAIN_MISSED);

	/* The leaver's condition never holds: it leaves at its deadline
	 * (asleep or not by then), and must pass the miss on. */
	struct sleeper leaver = { &q, false, &never,
				  canal_now_ns() + 20000000u, 0, 1 };
	join(spawn(sleep_on, &leaver));
	CHECK_EQ(leaver.result, -ETIMEDOUT);
	join(ts);
	CHECK_EQ(stayer.result, 0);
	CHECK_EQ(atomic_load(&q.chained), 0);
}

/* Between processes, the same state machine with a lease, checked on the
 * queue's words (no sleeper: its periodic re-check, every 500 ms, would
 * find the work however the wake-ups went). A live lease is respected and
 * the miss recorded; the clear passes the miss on as a wake-up (a bump of
 * the word); a lease older than SPIN_LEASE_UNITS is taken over. A thread
 * preempted for a millisecond between setting the lease and the chain
 * sees it expire: then the round is repeated (bounded). */
static void test_shared_marks(void)
{
	struct canal_waitq *q = mmap(NULL, sizeof *q, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(q != MAP_FAILED);
	int done = 0;
	for (int round = 0; round < 100 && !done; round++) {
		memset(q, 0, sizeof *q);
		atomic_store(&q->waiters, 1); /* someone registered */
		uint64_t t0 = canal_now_ns();
		uint32_t mark = ((uint32_t)(t0 >> SPIN_LEASE_SHIFT) | 1u) &
				~CHAIN_MISSED;
		atomic_store(&q->chained, mark);
		waitq_chain(q, true);
		uint32_t after = atomic_load(&q->chained);
		if (canal_now_ns() - t0 >= 500000u)
			continue; /* the lease may have expired: again */
		CHECK_EQ(after, mark | CHAIN_MISSED);
		CHECK_EQ(atomic_load(&q->seq), 0);
		waitq_woken_pass(q, true);
		CHECK_EQ(atomic_load(&q->chained), 0);
		CHECK_EQ(atomic_load(&q->seq), 1); /* the miss, passed on */
		/* Without a miss, a clear wakes nobody. */
		atomic_store(&q->chained, mark);
		waitq_woken_pass(q, true);
		CHECK_EQ(atomic_load(&q->seq), 1);
		done = 1;
	}
	CHECK(done);
	munmap(q, sizeof *q);
}

/* A mark copied into a fork()ed child (its chain's thread is not there)
 * is not trusted by the child; a shared queue's stale lease is taken
 * over. */
static void test_stale_marks(void)
{
	struct canal_waitq q = { 0 };
	atomic_store(&q.chained, canal__fork_generation() & ~CHAIN_MISSED);
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		waitq_chain(&q, false);
		_exit(atomic_load(&q.chained) == 0 ? 0 : 1);
	}
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* In the parent the mark is live: the chain skips, records it. */
	waitq_chain(&q, false);
	CHECK(atomic_load(&q.chained) & CHAIN_MISSED);

	/* Between processes: a lease older than SPIN_LEASE_UNITS. */
	uint32_t old = ((uint32_t)(canal_now_ns() >> SPIN_LEASE_SHIFT) -
			4 * SPIN_LEASE_UNITS) | 1u;
	atomic_store(&q.chained, (old & ~CHAIN_MISSED) | CHAIN_MISSED);
	waitq_chain(&q, true);
	CHECK_EQ(atomic_load(&q.chained), 0);
}

/*
 * Chains racing with each other, with sleepers and with the producer's
 * own wake-ups, as channel/wake.h uses them, on a model of a ring (a
 * count of items): the producer adds bursts and wakes one waiter per item
 * when it made the count non-zero (a burst onto a non-empty count wakes
 * nobody); a consumer that takes an item and leaves more behind chains.
 * Each consumer takes one item and leaves, so what it leaves behind
 * reaches the others only through its chain (a consumer that came back
 * for more would cover a lost chain itself). Every item is taken, and
 * nobody stays asleep beside items: a lost chain leaves consumers asleep
 * until their bound (FAR_NS), a failed check. Rounds of CONSUMERS
 * threads, bounded by ROUNDS.
 */
#define CONSUMERS 32u
#define ROUNDS 40
#define BURST 7u

struct model {
	struct canal_waitq q;
	_Atomic uint32_t items;
	_Atomic uint32_t taken;
};

static bool model_ready(void *arg)
{
	struct model *m = arg;
	return atomic_load_explicit(&m->items, memory_order_seq_cst) != 0;
}

static void *model_consumer(void *arg)
{
	struct model *m = arg;
	const struct canal__wait_cond c = { .ready = model_ready,
					    .probe = model_ready,
					    .arg = m,
					    .kind = CANAL__WAIT_PLAIN };
	for (;;) {
		uint32_t n = atomic_load_explicit(&m->items,
						  memory_order_seq_cst);
		if (n == 0) {
			CHECK_EQ(canal__wait(&m->q, false, &c,
					     canal_now_ns() + FAR_NS), 0);
			continue;
		}
		if (!atomic_compare_exchange_strong_explicit(
			    &m->items, &n, n - 1, memory_order_seq_cst,
			    memory_order_seq_cst))
			continue;
		atomic_fetch_add(&m->taken, 1);
		if (n - 1 != 0 && waitq_needs_wake(&m->q, false))
			waitq_chain(&m->q, false);
		return NULL;
	}
}

static void test_chain_stress(void)
{
	struct model *m = calloc(1, sizeof *m);
	CHECK(m != NULL);
	uint64_t rng = 0x2545f4914f6cdd1dull;
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t t[CONSUMERS];
		for (unsigned i = 0; i < CONSUMERS; i++)
			t[i] = spawn(model_consumer, m);
		for (uint32_t sent = 0; sent < CONSUMERS;) {
			uint32_t k = 1 + (uint32_t)(check_rand64(&rng) % BURST);
			if (k > CONSUMERS - sent)
				k = CONSUMERS - sent;
			uint32_t before = atomic_fetch_add(&m->items, k);
			sent += k;
			if (before == 0 && waitq_needs_wake(&m->q, false))
				waitq_wake(&m->q, k, false);
			if (check_rand64(&rng) % 4 == 0)
				sched_yield();
		}
		for (unsigned i = 0; i < CONSUMERS; i++)
			join(t[i]);
		CHECK_EQ(atomic_load(&m->items), 0);
	}
	CHECK_EQ(atomic_load(&m->taken), ROUNDS * CONSUMERS);
	free(m);
}

int main(void)
{
	alarm(120); /* a lost wake-up hangs no CI job */
	test_chain_alone();
	test_missed_while_clearing();
	test_shared_marks();
	test_woken_clears();
	test_timeout_passes_miss();
	test_stale_marks();
	test_chain_stress();
	printf("test_chain_wake: all checks passed\n");
	return 0;
}
