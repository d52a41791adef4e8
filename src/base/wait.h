/* SPDX-License-Identifier: MIT */
/*
 * wait.h - canal's one way to wait: event counts over 32-bit futex words.
 *
 * A struct canal_waitq is an event count: a sequence word (the futex word)
 * and the number of waiters. It lives inside the channel, holds no pointer,
 * and works in memory shared between processes (the futex operations drop
 * FUTEX_PRIVATE_FLAG when the queue is shared).
 *
 * Protocol (the waiter must re-check its condition between prepare and
 * sleep; the notifier must make its condition true before notify):
 *
 *   waiter                               notifier
 *   W1 key = waitq_prepare(q)            N1 make the condition true
 *        (waiters++ seq_cst, then           (a seq_cst RMW on the index
 *         key = seq acquire)                 the waiter's condition reads)
 *   W2 if (condition) { cancel; done }   N2 waitq_notify_one/all(q)
 *        (a seq_cst load of that index)     (load waiters seq_cst; if > 0:
 *   W3 waitq_sleep(q, key, deadline)         seq++ release; futex_wake)
 *   W4 waitq_finish(q)  (waiters--)
 *
 * Why no wake-up is lost: W1's increment and W2's load are seq_cst, as are
 * N1's RMW and N2's load of waiters. In the single total order of seq_cst
 * operations, either N2 comes after W1 - then the notifier sees a waiter and
 * bumps seq, so W3's futex wait either finds seq != key and returns at once
 * or is woken - or N2 comes before W1, and then W2 comes after N1 and sees
 * the condition true. The seq++ is a release paired with W1's acquire read
 * of seq: a waiter that read the new key also sees N1.
 *
 * No wake syscall when nobody sleeps: notify only reads `waiters` (a plain
 * load on x86) when it is 0. Between processes, a waiter killed between W1
 * and W4 leaves `waiters` raised for good: every notify on that queue then
 * makes a wake syscall that wakes nobody (no wake-up is lost; a known
 * limit, docs/GUARANTEES.md). Never repair it by lowering `waiters` below
 * the live waiters' count: a live waiter between W1 and W3 is counted and
 * woken by nobody, and an under-count loses its wake-up.
 *
 * Back-ends: sleeping and waking go through the calling thread's parker
 * (base/park.h), so that a task runtime parks a task (and runs others)
 * instead of a thread.
 */
#ifndef CANAL_BASE_WAIT_H
#define CANAL_BASE_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/compiler.h"
#include "base/park.h"
#include "base/spin.h"

struct canal_waitq {
	_Atomic uint32_t seq;	  /* the futex word: bumped by every notify */
	_Atomic uint32_t waiters; /* threads between prepare and finish */
	_Atomic uint32_t spinners; /* 0, or the one spinner (1, or a lease) */
	_Atomic uint32_t chained;  /* 0, or a chain wake-up in flight */
};

static inline uint32_t waitq_prepare(struct canal_waitq *q)
{
	atomic_fetch_add_explicit(&q->waiters, 1, memory_order_seq_cst);
	return atomic_load_explicit(&q->seq, memory_order_acquire);
}

static inline void waitq_finish(struct canal_waitq *q)
{
	atomic_fetch_sub_explicit(&q->waiters, 1, memory_order_relaxed);
}

static inline int waitq_sleep(struct canal_waitq *q, uint32_t key, bool shared,
			      uint64_t deadline_ns)
{
	const struct canal__parker *p = canal__parker_get();
	return p->ops->wait(p->self, &q->seq, key, shared, deadline_ns);
}

/* Slow paths, out of line. waitq_wake returns how many sleepers it woke
 * (canal__wake). */
uint32_t waitq_wake(struct canal_waitq *q, uint32_t count, bool shared);

/* Wake up to count waiters if there are any (count UINT32_MAX: all). */
static inline void waitq_notify(struct canal_waitq *q, uint32_t count,
				bool shared)
{
	if (atomic_load_explicit(&q->waiters, memory_order_seq_cst) != 0)
		waitq_wake(q, count, shared);
}

static inline bool waitq_has_waiters(struct canal_waitq *q)
{
	return atomic_load_explicit(&q->waiters, memory_order_seq_cst) != 0;
}

/*
 * The spinner role. At most one thread holds a queue's role at a time;
 * others may spin beside it (phases 1 and 2 of canal__wait, while fewer
 * than canal__yield_limit() sleep on the queue). The role is what makes
 * notifiers skip their wake, and its holder keeps it through its yield
 * phase (phase 3) however many others sleep. A notifier that sees a
 * spinner need not wake a sleeper: the spinner will see the condition.
 * Pairing: the notifier does
 * [N1 make the condition true (seq_cst RMW); load spinners (seq_cst)]; the
 * spinner, when it gives up, does [spinners = 0 (seq_cst); W1 prepare; W2
 * re-check]. If the notifier saw the spinner, the spinner's store, and so
 * its W2, come later in the seq_cst order and see the condition.
 *
 * Between processes the spinner may be killed while it holds the role, so
 * there the word is a lease: the time the role was taken (canal_now_ns() in
 * units of 1.024 us, low bit set so that it is never 0). Notifiers trust a
 * lease younger than SPIN_LEASE_UNITS (about 1 ms, fifty times the longest
 * spin, CANAL_YIELD_NS); an older one is taken over by the next spinner and
 * ignored by notifiers. A spinner killed just after a notifier trusted it
 * leaves that one wake-up undone: the sleepers see the element at their
 * next periodic re-check (SHARED_RECHECK_NS), as when a notifier itself is
 * killed before its wake-up (docs/GUARANTEES.md). A live spinner whose
 * lease ran out (it was preempted) and was taken over may clear the new
 * holder's role on its way out: notifiers then wake sleepers that did not
 * need it, never the reverse. The 32-bit clock wraps every 73 minutes: a
 * dead spinner's lease looks young again for 1 ms every 73 minutes, which
 * delays at most the wake-ups of that millisecond to the periodic re-check.
 */
#define SPIN_LEASE_SHIFT 10
#define SPIN_LEASE_UNITS 1000u

static inline uint32_t spin_lease_now(void)
{
	return (uint32_t)(canal_now_ns() >> SPIN_LEASE_SHIFT) | 1u;
}

static inline bool spin_lease_live(uint32_t lease)
{
	return (uint32_t)(spin_lease_now() - lease) <= SPIN_LEASE_UNITS;
}

/* Thread channels: the spinner role holds the process's fork generation
 * (odd, never 0), so that a role copied into a child by fork() - whose
 * spinner thread does not exist there - is not trusted by the child's
 * notifiers, and is taken over by the child's first spinner. */
uint32_t canal__fork_generation(void);

static inline bool waitq_spin_begin(struct canal_waitq *q, bool shared)
{
	uint32_t cur = atomic_load_explicit(&q->spinners, memory_order_relaxed);
	uint32_t mine;
	if (shared) {
		mine = spin_lease_now();
		if (cur != 0 && (uint32_t)(mine - cur) <= SPIN_LEASE_UNITS)
			return false; /* a live lease */
	} else {
		mine = canal__fork_generation();
		if (cur == mine)
			return false;
	}
	return atomic_compare_exchange_strong_explicit(
		&q->spinners, &cur, mine, memory_order_seq_cst,
		memory_order_relaxed);
}

static inline void waitq_spin_end(struct canal_waitq *q)
{
	atomic_store_explicit(&q->spinners, 0, memory_order_seq_cst);
}

/* A wake-up is needed: someone sleeps (or is about to) and nobody spins
 * (between processes: nobody holds a live lease; in a forked child: no
 * spinner of this generation). */
static inline bool waitq_needs_wake(struct canal_waitq *q, bool shared)
{
	if (atomic_load_explicit(&q->waiters, memory_order_seq_cst) == 0)
		return false;
	uint32_t s = atomic_load_explicit(&q->spinners, memory_order_seq_cst);
	if (s == 0)
		return true;
	return shared ? !spin_lease_live(s) : s != canal__fork_generation();
}

/*
 * Chain wake-ups, one in flight per queue. A waiter that completes its
 * operation and leaves more behind for the others (a receiver leaving
 * elements in the ring, a sender leaving room: channel/wake.h) wakes one
 * more waiter, the chain, so that someone is awake while work remains.
 * When the thread a chain woke has not yet come back from its sleep, a
 * second chain only wakes a thread that finds the work taken and sleeps
 * again (fwd 100/100: a chain per message, 15k futex calls per run of
 * 15k messages). So a chain marks the queue (`chained`) before its wake,
 * and a chain that finds the mark set skips its wake and records the miss
 * (CHAIN_MISSED) instead.
 *
 * Invariant: while the mark is set, someone will look at the queue's
 * condition again after the mark is cleared: either a thread the marking
 * chain woke (it clears the mark when it returns from its sleep and
 * retries its operation: waitq_woken), or, if that wake found nobody
 * asleep, the marking chain itself, which clears the mark with an
 * exchange and, if a miss was recorded meanwhile, wakes one waiter
 * (unmarked). A waiter that returns from its sleep and will not retry
 * the queue's own condition (a deadline passed; a sender waiting for one
 * slot) clears the mark the same way (waitq_woken_pass).
 *
 * Pairing: the skipper does [its claim (seq_cst CAS of head or tail); its
 * look at the other index (seq_cst); the mark (seq_cst load or CAS)]; the
 * clearer does [clear (seq_cst store or exchange); then retries, or wakes
 * a waiter whose W2 comes later]. The skipper read a mark value that the
 * clear overwrites, so its load comes before the clear in the seq_cst
 * order, and the clearer's retry (or the woken waiter's re-check) sees
 * the work the skipper left. The mark is set before the chain's wake, so
 * every thread that wake finds returns after the mark was set: its clear
 * cannot come first and leave a mark with nobody to clear it.
 *
 * What stays in flight: only sleepers that FUTEX_WAKE woke and that
 * canal__wake counts, threads, which run when the scheduler runs them, as
 * a chain without the mark would need for whichever thread it woke; a
 * woken thread that the scheduler keeps off the CPU (stopped, throttled)
 * holds the misses recorded meanwhile until it runs. Not tasks: a task
 * runs when its loop gets to it, which a CPU-bound task may delay for as
 * long as it runs, while other waiters sleep beside the work (a review
 * measured 1.8 s against 18 us, and a hang when the loop's thread
 * blocked). So a chain that woke only tasks, through the local waker or
 * through the kernel on a private word while a runtime runs, clears its
 * mark at once, as if it had woken nobody. On a shared word the kernel's
 * count may include a task of another process in an io_uring futex wait;
 * the misses then wait for its loop, or for the queue's other sleepers'
 * periodic re-check (CANAL__SHARED_RECHECK_NS), as after a killed
 * notifier.
 *
 * The mark's value: thread channels hold the process's fork generation
 * (a mark copied into a child by fork() is not trusted by the child's
 * chains; a child made without the atfork handlers, by _Fork() or a raw
 * clone(), inherits a live mark as it inherits a spinner role: such a
 * child must not use the parent's thread channels); between processes, a
 * lease (the time, as the spinner's, in 31 bits: it wraps every 36
 * minutes), since the woken process may be killed before it clears the
 * mark: chains trust a mark younger than SPIN_LEASE_UNITS (about 1 ms),
 * and take over an older one (a chain after that wakes another waiter;
 * misses recorded before it wait for the woken process, or for the
 * periodic re-check if it died). A mark taken over loses its misses: the
 * new chain's wake stands for them (one awake waiter is all the chain
 * invariant asks; its seq bump comes after the skippers read the mark).
 * A peer that keeps rewriting the word makes a chain give up after a few
 * tries and wake unmarked, as without the mark.
 */
#define CHAIN_MISSED 0x80000000u

/* Wake one more waiter of q, unless a chain is already in flight. */
void waitq_chain(struct canal_waitq *q, bool shared);

/* After every return from a sleep on q (woken, timed out, spurious) by a
 * waiter that retries its operation on q's condition next. */
static inline void waitq_woken(struct canal_waitq *q)
{
	/* Seq_cst, load and store: the clear of the pairing above. The load
	 * first, so that queues without chains (most returns) write
	 * nothing. */
	if (unlikely(atomic_load_explicit(&q->chained, memory_order_seq_cst)))
		atomic_store_explicit(&q->chained, 0, memory_order_seq_cst);
}

/* The same for a waiter that does not retry q's condition next: a miss
 * recorded on the mark is passed on as a wake-up. */
void waitq_woken_pass(struct canal_waitq *q, bool shared);

/* After a return from a sleep on q: one of the two above, by whether the
 * caller retries q's condition next. */
static inline void waitq_after_sleep(struct canal_waitq *q, bool shared,
				     bool retries)
{
	if (retries)
		waitq_woken(q);
	else
		waitq_woken_pass(q, shared);
}

/*
 * THE ONE WAIT. Every blocking operation of canal waits here (or, for a
 * select, in canal__wait_many; a synchronous sender that gave back its
 * demand to wait for a slot still held uses the protocol's steps W1-W4
 * without the spin phase: channel/ring.c, canal__ring_wait_slot), with
 * its condition passed in:
 *   ready(arg)  the condition the protocol above needs: seq_cst loads of the
 *               indices the notifier's N1 writes (the W2);
 *   probe(arg)  a cheap read-only poll for the spin phases (the slot line
 *               the other side writes with the data); may be ready itself.
 * canal__wait returns 0 when the caller should try its operation again
 * (the condition held, or a wake-up, or a spurious return) and -ETIMEDOUT
 * once the deadline has passed.
 *
 * Phases, cheapest first (a thread; a task, whose parker says is_task,
 * parks at once, phase 4: it holds its loop's thread, and a poll cannot
 * succeed while the task it waits for is on that loop; wait.c):
 *  1. while fewer than canal__yield_limit() others sleep on the queue,
 *     poll a little without writing anything shared (a reply already on
 *     its way, as in a ping-pong, costs no cache-line transfer for our
 *     bookkeeping). Not a receiver waiting for an element alone on a
 *     buffered thread channel's queue while other processes keep the
 *     CPUs busy (its spins skipped, here and in phase 2, which still
 *     takes the spinner role and leaves it before the park: wait.c,
 *     lone_under_load);
 *  2. take the queue's one spinner role if it is free: notifiers then skip
 *     the wake syscall, because the spinner will see their change. Under
 *     the same bound, spin longer, with the role or without it. A few
 *     sleepers are a few threads sharing the queue (an mpmc of 4 + 4
 *     threads); beside busy processes, where the yield phase is skipped,
 *     their spins are what keeps them from a futex wake-up per element
 *     (AMD EPYC, 2 vCPUs, N = 200 000, 7 interleaved runs, medians,
 *     beside one busy loop / two: bounded1_mpmc 0.56 -> 0.38 s / 0.71 ->
 *     0.34, bounded1_mpsc 0.99 -> 0.63 / 1.04 -> 0.41; crossbeam 0.28 /
 *     0.19 and 0.71 / 0.18; the quiet grid and fwd unchanged). Many
 *     sleepers are a crowd (fwd's readers): spinning there only delays
 *     the park (spinning at any count made fwd between threads at 100/100
 *     10.6 -> 12.6 ms, 1000/1 40.4 -> 46.5);
 *  3. the yield phase: give the CPU away through the parker and re-check,
 *     for up to CANAL_YIELD_NS. With more threads than cores, the thread we
 *     wait for may be waiting for this CPU; and a reply a few microseconds
 *     away (its sender was itself woken) is met awake, not with a sleep
 *     and a wake-up that costs 20-45 us on a VM (an inter-processor
 *     interrupt through the hypervisor). The spinner yields even when many
 *     others sleep (it is then the one awake waiter, taking the next
 *     element without a wake-up: fwd-canal 1/1000 0.07 -> 0.03 s); others
 *     yield only while waiters do not far outnumber cores. The phase is cut
 *     short when the CPU proves contended (a yield that let another thread
 *     run for longer than CANAL__YIELD_SLICE_NS while the process's other
 *     waits got almost nowhere: a busy process shares our CPU, and every
 *     further yield would hand it a time slice); the thread then skips
 *     yield phases for CANAL__CONTENDED_NS and parks at once. A long slice
 *     during which other waits of the process completed went to our own
 *     threads (more threads than cores): yielding on is what lets them
 *     run (wait.c, wait_progress). The phase is skipped altogether
 *     while other processes keep the machine's CPUs busy (base/load.h):
 *     a yield would hand one of them its slice, and the waiter would sit
 *     runnable behind it until the next tick (4 ms at 250 Hz), where a
 *     woken sleeper usually preempts it; except for the capacity-0
 *     hand-offs that canal__wait_kind names below;
 *  4. park on the queue's futex word through the parker. The spinner leaves
 *     its role first (spin_end before prepare: the pairing above). Shared
 *     queues sleep at most CANAL__SHARED_RECHECK_NS at a time.
 */
#define CANAL_YIELD_NS 20000u
#define CANAL__YIELD_SLICE_NS 50000u
#define CANAL__CONTENDED_NS 20000000u

/* Between processes, a notifier may be killed between its change and its
 * wake-up: sleepers on shared queues re-check their condition at least
 * this often, so that such a lost wake-up costs at most this delay. Not
 * shorter: with thousands of sleeping processes the re-checks themselves
 * would take the CPU (10 000 sleepers at 100 ms made the seed's fwd 2.5x
 * slower). */
#define CANAL__SHARED_RECHECK_NS 500000000u

/*
 * What a wait is for, as far as the yield phase cares (phase 3: under
 * foreign load the phase is skipped, except for the two capacity-0 waits
 * below and for any wait that finds exactly one other waiter registered
 * on its queue; all are still cut short by the contention check and
 * bounded by canal__yield_limit as any yield phase). Everything else is
 * CANAL__WAIT_PLAIN: ring waits (room; an element, including a capacity-0
 * receiver's wait for its matched element) and selects (canal__wait_many);
 * or CANAL__WAIT_ELEMENT, which the yield phase treats as PLAIN (a
 * receiver of a buffered channel waiting for an element; it differs in
 * phases 1 and 2 only).
 *  CANAL__WAIT_DEMAND  a synchronous sender waits for a receiver's demand
 *                      (every capacity-0 send: plain, batch, reserve). It
 *                      yields under foreign load only while others are
 *                      registered on the same queue (sleeping senders or
 *                      sending selects, in any process). A measured
 *                      heuristic: there, the CPU the yield gives away most
 *                      often goes to those senders or to the receiver they
 *                      wait for, and each park costs a wake-up per element.
 *                      Alone, it may wait for a receiver that is not there
 *                      yet, and a yield hands the foreign process its
 *                      slice: it parks.
 *  CANAL__WAIT_ACK     a sender whose element was published against a
 *                      unit of demand it took (a select's unit,
 *                      sendrecv.c; any unit, for canal_send_commit) waits
 *                      for a receiver to claim it: usually the receiver
 *                      whose demand it matched, just woken, one hand-off
 *                      away (an orphan waits for the next plain receiver:
 *                      rendezvous.c, R3). A yield is what lets that
 *                      receiver run when it shares our CPU.
 * Measured beside one and two busy processes (Intel Xeon, N = 200 000,
 * 5 interleaved runs, medians, docs/results/chan-busy-20261127/ab2_*):
 * bounded0_mpsc 0.94 -> 0.35 s and 1.17 -> 0.42 s, bounded0_mpmc 0.36 ->
 * 0.26 and 0.68 -> 0.34, bounded0_select_rx 0.89 -> 0.65 and 0.94 ->
 * 0.62; the other cells unchanged. A lone demand wait yielding as well
 * made bounded0_mpmc slower again (0.28-0.37 -> 0.46-0.84 s), and a
 * select's own wait yielding made bounded0_select_rx 3.5 s against 0.95
 * beside two busy processes.
 * Any wait behind exactly one other (docs/results/busy-queue-20261128):
 * the yield most often runs that waiter or the thread both wait for, as
 * above, where a park costs a 20-45 us wake-up per element; but not on a
 * saturated machine (load.h, canal__foreign_saturated), where the yield
 * can only hand the CPU to the other processes. Beside one busy process
 * (5 runs): bounded1_mpsc 1.17 -> 0.62 s, bounded1_mpmc 1.18 -> 0.73,
 * bounded1_select_both 0.27 -> 0.21; beside two, unchanged. Without the
 * saturation rule, beside two busy processes bounded1_mpmc went 1.45 ->
 * 2.47 s; with every wait behind one or more yielding, 6.8 s (their
 * yields crowd the run queues); behind any number, but only the queue's
 * spinner, 2.8 s.
 */
enum canal__wait_kind {
	CANAL__WAIT_PLAIN = 0,
	CANAL__WAIT_DEMAND,
	CANAL__WAIT_ACK,
	/* A receiver of a buffered channel waits for an element: PLAIN for
	 * the yield phase; its spin phases are skipped when it is alone on
	 * a thread channel's queue under foreign load (wait.c,
	 * lone_under_load: the role of phase 2 is still taken). */
	CANAL__WAIT_ELEMENT,
};

/*
 * A progress hook: a waiter that can itself make its condition come true.
 * Some queues are fed by a party that only polls (canal's remote
 * channels: a hub thread moving elements between the engine and the
 * local channel). A thread blocked on such a queue runs that party's
 * round itself instead of waiting for it to be scheduled, as an MPI
 * library progresses its transfers inside MPI_Wait: no thread hand-off
 * on the way.
 *   begin(arg)          before the first poll: true to poll (the party
 *                       may stand aside while someone polls for it),
 *                       false to skip the hook phase (another thread
 *                       polls already: this one waits as usual, served
 *                       by that one's rounds);
 *   poll(arg)           one round, never blocking: > 0 when it did
 *                       something, 0 when not (or when it could not run
 *                       now: another thread runs the round);
 *   end(arg, satisfied) once after a begin that returned true, after the
 *                       last poll: satisfied when the waiter's condition
 *                       came true (it is likely back soon), false when it
 *                       gives up polling (the party must take over at
 *                       once: the waiter is going to sleep, and only the
 *                       party can make it ready);
 *   published(arg)      NULL, or called by every send that published
 *                       elements into the channel (any form, tasks too),
 *                       after the publication, in the sender's thread;
 *                       never blocks (the party may push them on at once
 *                       when nobody else would soon).
 * The hook phase (wait.c) runs before every other phase, for threads only
 * (a task parks at once: a round can take its loop's thread for long),
 * not once the deadline has passed, and lasts until budget_ns pass
 * without a poll that did something, or the deadline; the ordinary phases
 * follow it.
 */
struct canal__wait_hook {
	bool (*begin)(void *arg);
	int (*poll)(void *arg);
	void (*end)(void *arg, bool satisfied);
	void (*published)(void *arg);
	void *arg;
	uint64_t budget_ns;
};

/*
 * park(park_arg, deadline), NULL for most waits: phase 4 for a thread (never a
 * task) is the caller's own, instead of the sleep on q's word. The caller
 * must keep the protocol's steps itself (register where its notifiers
 * look, re-check ready, sleep, unregister). It returns what canal__wait
 * returns (0: try again; -ETIMEDOUT), or CANAL__WAIT_DONE when the park
 * itself completed the caller's operation (a receiver took a parked
 * sender's element: channel/handoff.c).
 */
#define CANAL__WAIT_DONE 1
struct canal__wait_cond {
	bool (*ready)(void *arg);
	bool (*probe)(void *arg);
	void *arg;
	enum canal__wait_kind kind;
	const struct canal__wait_hook *hook; /* NULL: none */
	int (*park)(void *park_arg, uint64_t deadline_ns);
	/* pre_park(park_arg), NULL for most waits: called once before phase
	 * 4 (a thread's sleep, a task's park); true when it completed the
	 * caller's operation itself (canal__wait then returns
	 * CANAL__WAIT_DONE without sleeping: a receiver took a parked
	 * sender's element, channel/handoff.c). */
	bool (*pre_park)(void *park_arg);
	void *park_arg;
};

int canal__wait(struct canal_waitq *q, bool shared,
		const struct canal__wait_cond *c, uint64_t deadline_ns);

/*
 * A select's wait, after it registered on n queues (keys from prepare) and
 * found no case ready: the yield phase (unless crowded), then a sleep on
 * all the words at once. Returns 0 when woken (or a word was bumped),
 * -ETIMEDOUT at the deadline. The caller unregisters (waitq_finish).
 */
int canal__wait_many(struct canal_waitq *const *queues, const uint32_t *keys,
		     const bool *shared, unsigned n, bool crowded,
		     uint64_t deadline_ns);

/* Adaptive spinning (wait.c): whether the calling thread's spins have
 * been paying lately (never for a task), and the outcome of a spin phase
 * it ran. */
bool canal__spin_pays(void);
void canal__spin_outcome(bool success);

/*
 * Phases 1 and 2 of canal__wait without the spinner role, for a waiter
 * that has no one queue to hold it on (a select): while spins pay
 * (canal__spin_pays), poll probe(arg) - read-only, no shared write - a few
 * microseconds at most; true as soon as it holds. Nothing is registered,
 * so nobody is owed a wake-up: the caller re-checks, registers and waits
 * as usual when it returns false. Never blocks; false at once in a task.
 */
bool canal__spin(bool (*probe)(void *), void *arg);

/* Threads far outnumbering cores (waiters >= this) skip the yield phase. */
uint32_t canal__yield_limit(void);

#endif /* CANAL_BASE_WAIT_H */
