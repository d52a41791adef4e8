/* SPDX-License-Identifier: MIT */
/* wait.c - the one wait of canal (wait.h), the snooze (spin.h) and the
 * fork generation of spinner roles. */
#include "base/wait.h"

#include "base/load.h"

#include <errno.h>
#include <pthread.h>
#include <unistd.h>

uint32_t waitq_wake(struct canal_waitq *q, uint32_t count, bool shared)
{
	/* Release: pairs with the acquire read of seq in waitq_prepare(), so
	 * a waiter that reads the new key also sees the notifier's update.
	 * Seq_cst (the same locked instruction on x86): canal__wake's look at
	 * the kernel sleepers' count must not come before it (park.h). */
	atomic_fetch_add_explicit(&q->seq, 1, memory_order_seq_cst);
	return canal__wake(&q->seq, count, shared);
}

/* ------------------------------------------------------------------ */
/* Chain wake-ups (wait.h)                                             */
/* ------------------------------------------------------------------ */

/* This chain's mark: the fork generation, or a lease between processes
 * (never 0, never with CHAIN_MISSED). */
static uint32_t chain_mark(bool shared)
{
	uint32_t m = shared ? spin_lease_now() : canal__fork_generation();
	return m & ~CHAIN_MISSED;
}

/* A mark (misses masked off) that a chain of ours must respect. */
static bool chain_mark_live(uint32_t m, bool shared)
{
	if (m == 0)
		return false;
	if (!shared)
		return m == chain_mark(false);
	return ((spin_lease_now() - m) & ~CHAIN_MISSED) <= SPIN_LEASE_UNITS;
}

/* Clear the mark; pass a recorded miss on as a plain wake-up (its
 * waiters' W2 come after the exchange, so after the skipper's claim). */
static void chain_clear_pass(struct canal_waitq *q, bool shared)
{
	uint32_t old = atomic_exchange_explicit(&q->chained, 0,
						memory_order_seq_cst);
	if (old & CHAIN_MISSED)
		waitq_notify(q, 1, shared);
}

/* CAS attempts on the mark before a chain wakes unmarked. */
#define CHAIN_TRIES 16u

void waitq_chain(struct canal_waitq *q, bool shared)
{
	uint32_t mine = chain_mark(shared);
	uint32_t cur = atomic_load_explicit(&q->chained, memory_order_seq_cst);
	for (unsigned tries = 0;; tries++) {
		if (unlikely(tries == CHAIN_TRIES)) {
			/* The word keeps changing under us (a hostile peer, or
			 * a storm of chains): wake unmarked, which is always
			 * correct. */
			waitq_wake(q, 1, shared);
			return;
		}
		if (!chain_mark_live(cur & ~CHAIN_MISSED, shared)) {
			/* Free (or a dead process's, or a parent's): ours. */
			if (atomic_compare_exchange_weak_explicit(
				    &q->chained, &cur, mine,
				    memory_order_seq_cst, memory_order_seq_cst))
				break;
			continue;
		}
		/* A chain in flight: its woken thread (or the chain itself)
		 * will look after us (wait.h). Record the miss; a seq_cst
		 * load of a mark that already has it is enough. */
		if (cur & CHAIN_MISSED)
			return;
		if (atomic_compare_exchange_weak_explicit(
			    &q->chained, &cur, cur | CHAIN_MISSED,
			    memory_order_seq_cst, memory_order_seq_cst))
			return;
	}
	/* The mark is set before the wake: whoever the wake finds returns,
	 * and clears it, after it was set. */
	if (waitq_wake(q, 1, shared) == 0)
		chain_clear_pass(q, shared);
}

void waitq_woken_pass(struct canal_waitq *q, bool shared)
{
	if (unlikely(atomic_load_explicit(&q->chained, memory_order_seq_cst)))
		chain_clear_pass(q, shared);
}

/* ------------------------------------------------------------------ */
/* Fork generation                                                     */
/* ------------------------------------------------------------------ */

static _Atomic uint32_t fork_generation = 1;

static void fork_child(void)
{
	atomic_fetch_add_explicit(&fork_generation, 2, memory_order_relaxed);
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

uint32_t canal__fork_generation(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	static _Atomic int registered;
	if (unlikely(!atomic_load_explicit(&registered, memory_order_acquire))) {
		pthread_once(&once, register_atfork);
		atomic_store_explicit(&registered, 1, memory_order_release);
	}
	return atomic_load_explicit(&fork_generation, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* Policy                                                              */
/* ------------------------------------------------------------------ */

/* Yielding pays when a few threads share a few cores; with many more
 * sleepers than cores it only churns the run queues. */
static _Atomic uint32_t yield_limit;

static uint32_t compute_yield_limit(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN); /* reads /sys: 3 syscalls */
	uint32_t l = n > 0 && n < 1024 ? 2 * (uint32_t)n : 8;
	atomic_store_explicit(&yield_limit, l, memory_order_relaxed);
	return l;
}

/* At load, so that the children a process forks inherit the value and do
 * not each read /sys on their first wait (fwd's 2 000 processes did). */
__attribute__((constructor)) static void init_yield_limit(void)
{
	compute_yield_limit();
}

uint32_t canal__yield_limit(void)
{
	uint32_t l = atomic_load_explicit(&yield_limit, memory_order_relaxed);
	return likely(l) ? l : compute_yield_limit();
}

/* Until when this thread skips yield phases: its CPU proved contended. */
static _Thread_local uint64_t contended_until;

/*
 * Waits of this process that ended with their condition met after a
 * yield or a sleep: the sign that the process's own threads got somewhere.
 * A yield that gave the CPU away for longer than CANAL__YIELD_SLICE_NS
 * while this count moved by less than 2 handed a time slice to something
 * outside the process's canal work (a busy process sharing the CPU): the
 * CPU is contended. Less than 2, not 0: with two threads (a ping-pong, an
 * spsc), the peer on the other CPU completes the one wait our last send
 * allowed and then waits for us, whoever took our CPU. If the count moved
 * more, the slice went to our own threads making progress (more threads
 * than cores, as in an mpmc of 8 threads on 2 CPUs): yielding is what lets
 * them run, and parking instead would cost a 20-45 us wake-up per
 * hand-off on a VM (bounded0_mpmc 0.32 -> 0.07 s, bounded1_mpmc 0.21 ->
 * 0.13 s at N = 200 000, T = 4, Intel Xeon, busy with other jobs; no loss
 * in the two-thread cells with a busy loop beside them). Relaxed: a hint
 * read twice by one thread; a stale value only decides one yield phase.
 * Written only on slow paths (after a yield or a futex wait), never on a
 * spin's success.
 */
static _Atomic uint64_t wait_progress;

static void note_progress(void)
{
	atomic_fetch_add_explicit(&wait_progress, 1, memory_order_relaxed);
}

/* The yield phase: yield, then call done(arg), until it returns true
 * (true), CANAL_YIELD_NS have passed, the deadline, or the CPU proves
 * contended (false). despite_load: a hand-off that yields even while
 * other processes keep the CPUs busy (wait.h, canal__wait_kind). */
static bool yield_phase(const struct canal__parker *p, bool (*done)(void *),
			void *arg, uint64_t deadline_ns, bool despite_load)
{
	uint64_t t0 = canal_now_ns();
	if (t0 < contended_until || (!despite_load && canal__foreign_load(t0)))
		return false;
	for (uint64_t before = t0;;) {
		uint64_t seen = atomic_load_explicit(&wait_progress,
						     memory_order_relaxed);
		p->ops->yield(p->self);
		if (done(arg)) {
			note_progress();
			return true;
		}
		uint64_t now = canal_now_ns();
		if (now - before > CANAL__YIELD_SLICE_NS &&
		    atomic_load_explicit(&wait_progress,
					 memory_order_relaxed) - seen < 2) {
			contended_until = now + CANAL__CONTENDED_NS;
			return false;
		}
		if (now - t0 >= CANAL_YIELD_NS || now >= deadline_ns)
			return false;
		before = now;
	}
}

/*
 * The hook phase (wait.h, struct canal__wait_hook): poll the party that
 * feeds the queue until the condition holds (true), or until budget_ns
 * pass without a poll that did something, or the deadline (false). Polls
 * back to back while something happened in the last CANAL_YIELD_NS (a
 * reply on its way), then yields the CPU between polls: with two vCPUs
 * the peer process's thread, or our own party's, may need this one.
 */
static bool hook_phase(const struct canal__parker *p,
		       const struct canal__wait_cond *c, uint64_t deadline_ns)
{
	const struct canal__wait_hook *h = c->hook;
	uint64_t last = canal_now_ns();
	if (last >= deadline_ns || !h->begin(h->arg))
		return false;
	for (;;) {
		int act = h->poll(h->arg);
		if (c->ready(c->arg)) {
			h->end(h->arg, true);
			note_progress();
			return true;
		}
		uint64_t now = canal_now_ns();
		if (act > 0)
			last = now;
		if (now - last >= h->budget_ns || now >= deadline_ns)
			break;
		if (now - last >= CANAL_YIELD_NS)
			p->ops->yield(p->self);
		else
			canal__cpu_relax();
	}
	h->end(h->arg, false);
	return false;
}

/* Busy-wait budget of phase 2: 2^0 + ... + 2^(SPIN_ROUNDS-1) pauses, a few
 * microseconds, shorter than a futex round trip. */
#define SPIN_ROUNDS 8
/* Phase 1: polls without any shared write. */
#define QUIET_SPINS 64
/*
 * A task does not poll before parking. It holds its loop's thread: when
 * the task it waits for is on the same loop, no poll can succeed, and a
 * PAUSE costs 18-20 ns on this session's Intel Xeon VM (about 140 cycles
 * since Skylake). 16 polls per wait were most of a channel ping-pong
 * between two tasks (1.4 us a round trip; without them 0.5 us, on one
 * loop and on two), while the park and wake of a task cost no syscall.
 * Go's channels do not spin either.
 */

/*
 * Adaptive spinning. Spinning pays only while the thread we wait for runs
 * on another CPU. When both share one (the scheduler put them together, or
 * the machine is busy), every spin is time taken from that thread: on a
 * 2-vCPU VM, a ping-pong whose two threads landed on one vCPU spent ~20 us
 * a message in spins that could not succeed (the slow mode of issue 11).
 * So each thread counts its spin phases that ended without the condition:
 * after SPIN_MISS_LIMIT in a row it skips them (straight to the yield
 * phase, whose first yield runs the other thread if it shares our CPU),
 * trying a spin again every SPIN_PROBE_EVERY waits in case things moved.
 */
#define SPIN_MISS_LIMIT 4u
#define SPIN_PROBE_EVERY 16u

static _Thread_local unsigned spin_misses, spin_skips;

bool canal__spin_pays(void)
{
	/* A task never polls (TASK_POLLS below): its channel's read-only
	 * polls are PAUSEs taken from its own loop. */
	if (canal__parker_get()->ops->is_task)
		return false;
	if (spin_misses < SPIN_MISS_LIMIT)
		return true;
	return ++spin_skips % SPIN_PROBE_EVERY == 0;
}

void canal__spin_outcome(bool success)
{
	if (success)
		spin_misses = 0;
	else if (spin_misses < SPIN_MISS_LIMIT)
		spin_misses++;
}

/* Phase 1: QUIET_SPINS polls, a pause before each. */
static bool spin_quiet(bool (*probe)(void *), void *arg)
{
	for (unsigned i = 1; i <= QUIET_SPINS; i++) {
		canal__cpu_relax();
		if (probe(arg))
			return true;
	}
	return false;
}

/* Phase 2: SPIN_ROUNDS polls, 2^r pauses before the r-th. */
static bool spin_rounds(bool (*probe)(void *), void *arg)
{
	for (unsigned r = 0; r < SPIN_ROUNDS; r++) {
		for (unsigned i = 0; i < (1u << r); i++)
			canal__cpu_relax();
		if (probe(arg))
			return true;
	}
	return false;
}

bool canal__spin(bool (*probe)(void *), void *arg)
{
	if (!canal__spin_pays())
		return false;
	bool ok = spin_quiet(probe, arg) || spin_rounds(probe, arg);
	canal__spin_outcome(ok);
	return ok;
}

/*
 * The spins of phases 1 and 2 skipped (wait.h; phase 2 still takes the
 * spinner role, and leaves it before the park, as measured): a receiver waiting for an element of a
 * buffered thread channel, nobody else on its queue, while other processes
 * keep the CPUs busy. There the sender it waits for is as likely
 * preempted by them as running: a spin that succeeds saves a wake-up that
 * costs about a microsecond on a busy CPU (no idle exit), one that fails
 * takes up to 6 us from the CPU that sender needs, and the adaptive count
 * (canal__spin_pays) keeps spinning as long as one spin in four succeeds.
 * Beside one busy process (Intel Xeon, 2 vCPUs, N = 200 000, 5
 * interleaved runs, ns a message, median [range], docs/results/history.md
 * 2026-12-03 afternoon): bounded1_spsc 2 331 [2 272-2 390] -> 2 037
 * [2 026-2 119], bounded1_ping_pong 1 260 [1 247-1 347] -> 1 098 [1 049-
 * 1 226] (flume 1 884 and 945); the other cells within their spread.
 * Only there: skipping the spins of every wait alone on its queue (room
 * too) made the senders of bounded1_select_rx, one per channel, 1 548 ->
 * 1 919; of every wait, bounded1_mpmc 1 758 -> 2 361 and bounded0_mpsc
 * 1 483 -> 1 952. Nor capacity 0 (its receiver's element is one hand-off
 * away), nor shared queues, whose partner is another process and so
 * counts as foreign load itself (load.h): two processes polling each
 * other would park at every element. The verdict is read as it stands
 * (no clock read on this path): a wait that skips its spins goes on to the
 * yield phase, which asks for a fresh one (yield_phase), so it is at most
 * a window old, or CANAL__CONTENDED_NS while this thread's CPU proved
 * contended.
 */
static bool lone_under_load(bool shared, uint32_t waiters,
			    enum canal__wait_kind kind)
{
	return !shared && waiters == 0 && kind == CANAL__WAIT_ELEMENT &&
	       canal__foreign_load_last();
}

static uint64_t sleep_limit(bool shared, uint64_t deadline)
{
	if (likely(!shared))
		return deadline;
	uint64_t limit = canal_now_ns() + CANAL__SHARED_RECHECK_NS;
	return limit < deadline ? limit : deadline;
}

int canal__wait(struct canal_waitq *q, bool shared,
		const struct canal__wait_cond *c, uint64_t deadline)
{
	const struct canal__parker *p = canal__parker_get();
	uint32_t waiters = atomic_load_explicit(&q->waiters,
						memory_order_relaxed);
	bool spinner = false;

	if (p->ops->is_task) {
		/* The hand-off first (park.h, yield_if_busy): the task this
		 * one woke last runs, most often the peer we wait for (the
		 * receiver our last send woke), and our re-check then
		 * succeeds without either of us parking. */
		if (p->ops->yield_if_busy && p->ops->yield_if_busy(p->self) &&
		    c->ready(c->arg))
			return 0;
		goto park;
	}
	if (c->hook && hook_phase(p, c, deadline))
		return 0;
	/* Phases 1 and 2 while fewer than canal__yield_limit() others sleep
	 * on the queue (wait.h: a few sleepers mean a few threads sharing
	 * the queue, as in an mpmc; many, a crowd that a spin would only
	 * delay). */
	bool spin = waiters < canal__yield_limit() && canal__spin_pays();
	if (spin && lone_under_load(shared, waiters, c->kind))
		spin = false;
	if (spin && spin_quiet(c->probe, c->arg)) {
		canal__spin_outcome(true);
		return 0;
	}
	spinner = waitq_spin_begin(q, shared);
	if (spin) {
		bool ok = spin_rounds(c->probe, c->arg);
		canal__spin_outcome(ok);
		if (ok) {
			if (spinner)
				waitq_spin_end(q);
			return 0;
		}
	}
	/* wait.h, canal__wait_kind: which waits keep their yield phase
	 * under foreign load. */
	bool despite_load = c->kind == CANAL__WAIT_ACK ||
			    (c->kind == CANAL__WAIT_DEMAND && waiters > 0) ||
			    (waiters == 1 && !canal__foreign_saturated());
	if ((spinner || waiters < canal__yield_limit()) &&
	    yield_phase(p, c->ready, c->arg, deadline, despite_load)) {
		if (spinner)
			waitq_spin_end(q);
		return 0;
	}
	if (spinner)
		waitq_spin_end(q);
	if (c->park)
		return c->park(c->park_arg, deadline);
park:
	if (c->pre_park && c->pre_park(c->park_arg))
		return CANAL__WAIT_DONE;
	uint32_t key = waitq_prepare(q);
	if (c->ready(c->arg)) {
		waitq_finish(q);
		return 0;
	}
	int w = p->ops->wait(p->self, &q->seq, key, shared,
			     sleep_limit(shared, deadline));
	/* 0 also for a shared queue's periodic re-check. Every caller
	 * retries its operation after 0; after -ETIMEDOUT it may not. */
	bool retry = w == 0 || (w == -ETIMEDOUT && canal_now_ns() < deadline);
	waitq_after_sleep(q, shared, retry);
	waitq_finish(q);
	if (w == 0 && !p->ops->is_task)
		note_progress();
	return retry ? 0 : w;
}

/* For the yield phase of a select: has a notifier bumped one of the words? */
struct bumped_call {
	struct canal_waitq *const *queues;
	const uint32_t *keys;
	unsigned n;
};

static bool any_bumped(void *arg)
{
	struct bumped_call *b = arg;
	/* Acquire: pairs with the release increment of waitq_wake, as the
	 * futex wait's own read of the word would. */
	for (unsigned i = 0; i < b->n; i++)
		if (atomic_load_explicit(&b->queues[i]->seq,
					 memory_order_acquire) != b->keys[i])
			return true;
	return false;
}

int canal__wait_many(struct canal_waitq *const *queues, const uint32_t *keys,
		     const bool *shared, unsigned n, bool crowded,
		     uint64_t deadline)
{
	const struct canal__parker *p = canal__parker_get();
	struct bumped_call bc = { queues, keys, n };
	_Atomic uint32_t *words[CANAL__WAIT_MANY_MAX];

	if (n == 0 || n > CANAL__WAIT_MANY_MAX)
		return -EINVAL;
	if (!crowded && !p->ops->is_task &&
	    yield_phase(p, any_bumped, &bc, deadline, false))
		return 0;
	/* A task: the hand-off first, as canal__wait's. */
	if (p->ops->is_task && p->ops->yield_if_busy &&
	    p->ops->yield_if_busy(p->self) && any_bumped(&bc))
		return 0;
	/* Shared queues: re-check every CANAL__SHARED_RECHECK_NS, in case a
	 * notifier died before its wake-up. */
	bool any_shared = false;
	for (unsigned k = 0; k < n; k++) {
		words[k] = &queues[k]->seq;
		any_shared |= shared[k];
	}
	uint64_t dl = sleep_limit(any_shared, deadline);
	int w = p->ops->wait_many(p->self, words, keys, shared, n, dl);
	if (w == -ETIMEDOUT && dl != deadline)
		w = 0;
	/* A select retries all its cases after 0 (and passes wake-ups on to
	 * the other queues if it completes one: select.c, pass_on); after
	 * -ETIMEDOUT it polls once more and may leave. */
	for (unsigned k = 0; k < n; k++)
		waitq_after_sleep(queues[k], shared[k], w == 0);
	return w;
}

/* ------------------------------------------------------------------ */
/* Snooze (spin.h)                                                     */
/* ------------------------------------------------------------------ */

uint64_t canal__snooze(struct canal__snooze *s)
{
	if (s->step <= CANAL__PAUSE_EXP_MAX) {
		for (unsigned i = 0; i < (1u << s->step); i++)
			canal__cpu_relax();
		s->step++;
		return 0;
	}
	const struct canal__parker *p = canal__parker_get();
	uint64_t now = canal_now_ns();
	if (!s->since)
		s->since = now;
	uint64_t waited = now - s->since;
	if (waited < CANAL__SNOOZE_SLEEP_AFTER_NS)
		p->ops->yield(p->self);
	else
		p->ops->sleep_until(p->self, now + CANAL__SNOOZE_SLEEP_NS);
	return waited ? waited : 1;
}
