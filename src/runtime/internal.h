/* SPDX-License-Identifier: MIT */
/*
 * runtime/internal.h - the inside of canal's task runtime: tasks, loops and
 * the runtime, and the rules that hold between them.
 *
 * Who owns what:
 *  - A loop is a thread (the caller of canal_run is loop 0) with its own
 *    scheduler context, run queue, timer heap and backend (io_uring ring or
 *    epoll set). The timer heap and the backend are touched only by the
 *    loop's thread. The run queue is a list under the loop's mutex: any
 *    thread may push (a waker, a spawner, a stealer takes from it).
 *  - A task is at any time in exactly one of: running on a loop (that loop's
 *    `current`), in one run queue, in one loop's runnext slot or yield
 *    slot (below; the yield slot's task may still be running), parked
 *    (referenced only by what can wake it: a parker bucket, a condvar list,
 *    a timer, an in-flight I/O), or on the detach pool.
 *
 * The runnext slot (Go's runnext, a direct hand-off): a task woken by the
 * task running on its own loop (a channel ping-pong, a condvar signal) is
 * put in the loop's runnext slot instead of its queue, and runs as soon as
 * the waker switches out, before the queue: no queue lock, and the woken
 * task runs while what the waker wrote for it is in cache. Only the loop's
 * thread touches the slot (a waker running there, its scheduler), so it
 * needs no lock or atomic; the happens-before from waker to woken is that
 * of one thread. It holds at most one task: a second wake-up pushes the
 * first to the queue. Thieves do not see it (it is not `queued`): it runs
 * at the next switch out, which every scheduler pass reaches before the
 * loop looks for work or sleeps, so the slot is empty whenever the loop
 * is in loop_schedule. Fairness: at most RUNNEXT_STREAK_MAX slot tasks in a
 * row, then the queue's first runs (loop.c).
 *
 * The yield slot (a direct yield, loop.c canal__loop_yield_next): a task
 * that yields with another task to run switches straight to it and takes
 * its loop's yield slot; the slot's previous task (switched out at an
 * earlier yield) goes to the queue's back, or, with the queue empty, is
 * the task switched to. Only the loop's thread writes the slot and takes
 * a task from it, so two tasks of one loop yielding to each other cost no
 * locked instruction. The yielder takes the slot before its switch, so
 * the slot's task may still be running; nothing takes it but the loop's
 * thread, after that switch. Thieves read the slot (relaxed) only to
 * count its task as the queue's newest, which they never take (they take
 * the older half), so they steal what they stole when a yielder went to
 * the queue's back. The scheduler context moves the slot's task to the
 * queue before anything else at each switch out to it (after_switch), so
 * the slot is empty whenever the loop schedules, steals, spins or sleeps.
 *
 * Switching out (the rule that makes every wake-up safe): a task never makes
 * itself visible to another loop before it has switched out. It records
 * what it wants (task->after: yield, park, exit, detach) and switches to its
 * loop's scheduler context, which acts on it: push it back (yield), hand it
 * to the pool (detach), free it (exit), or finish the park handshake.
 *
 * The park handshake (task->sched):
 *   RUNNING --task: park--> PARKING --scheduler, after the switch--> PARKED
 *   A waker that won the wake (task->wake, below) calls
 *   canal__task_make_runnable:
 *     PARKING -> NOTIFIED (the scheduler, whose CAS PARKING->PARKED then
 *                fails, pushes the task itself), or
 *     PARKED  -> RUNNING, and the waker pushes it to task->loop's queue
 *                (or its runnext slot, below).
 *   Both CAS are acq_rel: the waker's writes before the wake (a result, an
 *   element) happen-before the task's resumption, and the task's writes
 *   before it parked (its saved registers, via the switch) happen-before
 *   whoever runs it next.
 *   Stack compaction (compact.c, opt-in) holds a PARKED task by taking it
 *   back to PARKING (PARKED -> PARKING -> PARKED), so that a waker meanwhile
 *   leaves the push to the sweep exactly as it leaves it to a scheduler.
 *
 * The wake race (task->wake): a park arms it (WAKE_ARMED) before the task
 * registers anywhere; every wake source (parker bucket, timer, condvar,
 * I/O completion, cancel) tries CAS ARMED -> its reason; exactly one wins
 * and only the winner makes the task runnable. The losers do nothing (the
 * task unregisters itself from every source after it resumes, under each
 * source's own lock, so no source keeps a reference past the wait).
 *
 * Migration: idle loops steal from other loops' queues, but never a task
 * that is pinned (an armed timer or an in-flight I/O operation belongs to
 * its loop's timers or ring). A pinned task only resumes on task->loop.
 * A task runs on task->loop: whoever puts it on another loop's queue (a
 * thief, the detach pool at canal_attach, a waker running on another loop
 * that moves an unpinned task to its own: canal__loop_push_woken) sets
 * task->loop first, since wakes push it there and its next timer and I/O
 * are armed where it runs. Thieves and moving wakers read `pinned` under
 * the old loop's queue lock (timer.c clears it under that lock).
 */
#ifndef CANAL_RUNTIME_INTERNAL_H
#define CANAL_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "canal/task.h"
#include "base/park.h"
#include "runtime/stack.h"

struct canal__loop;
struct canal__backend_ops;

/* A lock held for a few instructions (run queues): cheaper than a mutex
 * uncontended (one exchange, one store); a waiter that spins long yields
 * the CPU, in case the holder was preempted. acquire/release: what the
 * holder did is seen by the next holder. */
struct canal__spinlock {
	_Atomic uint32_t held;
};

static inline bool canal__spin_trylock(struct canal__spinlock *s)
{
	return atomic_load_explicit(&s->held, memory_order_relaxed) == 0 &&
	       atomic_exchange_explicit(&s->held, 1, memory_order_acquire) == 0;
}

void canal__spin_lock_slow(struct canal__spinlock *s);

static inline void canal__spin_lock(struct canal__spinlock *s)
{
	if (!__builtin_expect(
		    atomic_exchange_explicit(&s->held, 1,
					     memory_order_acquire) == 0,
		    1))
		canal__spin_lock_slow(s);
}

static inline void canal__spin_unlock(struct canal__spinlock *s)
{
	atomic_store_explicit(&s->held, 0, memory_order_release);
}

/* A timer heap's entry (timer.c): the deadline is kept beside the task
 * pointer so that ordering the heap reads the heap's own array, not the
 * tasks (each in its own stack block, cold when thousands wait). */
struct canal__timer {
	uint64_t deadline;
	struct canal__task *task;
	uint32_t slot; /* its index in timer_pos */
};
#define CANAL__TIMER_ARITY 4u

enum task_sched {
	TASK_RUNNING = 0, /* running, or in a run queue or slot */
	TASK_PARKING = 1, /* parked, not yet switched out */
	TASK_PARKED = 2,  /* switched out; waker pushes it */
	TASK_NOTIFIED = 3 /* woken while PARKING: the scheduler pushes it */
};

enum task_wake {
	WAKE_NONE = 0,	   /* not waiting */
	WAKE_ARMED = 1,	   /* waiting: the first wake source wins */
	WAKE_WOKEN = 2,	   /* woken by its event (word, condvar, I/O) */
	WAKE_TIMEDOUT = 3, /* its deadline passed */
	WAKE_CANCELED = 4  /* a cancelling condvar was signalled */
};

enum task_after {
	AFTER_NOTHING = 0,
	AFTER_YIELD,  /* push it at the back of this loop's queue */
	AFTER_PARK,   /* finish the park handshake */
	AFTER_EXIT,   /* free it */
	AFTER_DETACH, /* hand it to the detach pool */
	AFTER_ATTACH, /* (on a pool thread) push it back to a loop */
};

/* A wait node of the parked table (park.c, which states its invariants):
 * a task waiting on a process-private word is linked, through one such
 * node per word, in the bucket of the word. A one-word wait (task_wait,
 * every channel park) uses the node in its task structure, wnode; a
 * many-word wait (select) keeps its nodes on its stack. `since` is the
 * compaction epoch at which the node was linked, `swept` whether it is in
 * its bucket's swept list (compact.c's sweep has looked at it). */
struct canal__wait_node {
	struct canal__wait_node *next, *prev;
	_Atomic uint32_t *word;
	struct canal__task *task;
	uint32_t since;
	bool swept;
	bool linked;
};

struct canal__task {
	void *sp; /* saved stack pointer while switched out */
	/* compact.c: the used part of its stack, [sp, stack top), copied out
	 * while it is parked and its stack's pages given back (NULL: its
	 * stack is in place). Written by the sweep that holds it PARKING,
	 * read by whoever runs it next (canal__compact_ready), beside sp. */
	void *saved;
	struct canal__task *next; /* run queue / pool queue link */
	struct canal__loop *loop; /* its loop: queue, timers, I/O */
	_Atomic uint32_t sched;	  /* enum task_sched */
	_Atomic uint32_t wake;	  /* enum task_wake */
	uint32_t after;		  /* enum task_after, read by the scheduler */
	uint32_t pinned;	  /* armed timer + in-flight I/O: no steal */
	uint32_t rstreams;	  /* receive streams open (rstream.c) */
	bool detached;		  /* runs on the detach pool */
	uint32_t poll_round;	  /* park.c: polls of a shared word in a row */
	/* io.c, the adaptive shortcut: the last input operation tried
	 * first (fd + 1, 0: none; its kind), whether that try would have
	 * blocked, and the tries skipped since. The task's own. */
	int32_t try_fd;
	uint8_t try_kind;
	uint8_t try_missed;
	uint16_t try_skips;
	uint64_t id;
	void (*fn)(void *);
	void *arg;
	/* Timer (timer.c, loop-local): the slot of the task's entry in the
	 * heap, FIFO_TIMER when it is in the loop's FIFO of timers (linked
	 * by fifo_prev/fifo_next, due at fifo_deadline), NO_TIMER when it
	 * has none. */
	uint32_t timer_slot;
	struct canal__task *fifo_prev, *fifo_next;
	uint64_t fifo_deadline;
	struct canal__stack stack;
	/* Sanitizer fiber state (sanitizer.h). */
	void *asan_fake_stack;
	void *tsan_fiber;
	/* park.c: the node of its one-word waits. */
	struct canal__wait_node wnode;
	uint32_t saved_len; /* bytes at saved */
};

#define NO_TIMER UINT32_MAX
#define FIFO_TIMER (UINT32_MAX - 1)

struct canal__runtime;

struct canal__loop {
	struct canal__runtime *rt;
	unsigned index;
	bool is_pool; /* a detach pool thread, not a loop */
	pthread_t thread;
	/* The scheduler context (the loop thread's own stack). */
	void *sched_sp;
	void *asan_fake_stack;
	void *tsan_fiber;
	const void *thread_stack_bottom; /* for ASan's switch annotations */
	size_t thread_stack_size;
	struct canal__task *current; /* running task, NULL in the scheduler */
	/* The task that last switched out to the scheduler (canal__task_run
	 * returns it: after a direct yield it is not the one run). */
	struct canal__task *out;
	/* The task a direct park just switched away from (PARKING), until
	 * the task switched to finishes its park (task.c; loop thread
	 * only). */
	struct canal__task *parked_prev;

	/* Run queue. Invariant: a task is linked here iff it is runnable,
	 * not running and not in a runnext or yield slot. Pushers take the
	 * mutex; `sleeping` pairs with it: the loop stores sleeping = 1 (seq_cst) before its last look at the
	 * queue under the mutex, a pusher loads it (seq_cst) after its push
	 * under the mutex, so either the loop sees the task or the pusher
	 * sees the sleeper and wakes it through the backend. Whoever
	 * clears `sleeping` (exchange: one per sleep) writes the eventfd:
	 * pushers, the runtime's end, and a loop waking another to steal
	 * from it (loop.c, wake_a_thief: no push; the woken loop finds its
	 * queue empty and steals). */
	struct canal__spinlock lock;
	struct canal__task *head, *tail;
	_Atomic uint32_t queued; /* length, readable without the lock */
	_Atomic uint32_t sleeping;
	/* The runnext slot (loop thread only; see the top of this file). */
	struct canal__task *runnext;
	uint32_t runnext_streak; /* slot tasks run in a row */
	/* The yield slot (see the top of this file): written by the loop's
	 * thread only, read by thieves (relaxed) to count it. */
	struct canal__task *_Atomic yslot;

	/* Timers: a 4-ary min-heap of (deadline, task) by deadline (loop
	 * thread only; timer.c). */
	struct canal__timer *heap;
	uint32_t heap_len, heap_cap;
	/* timer_pos[slot]: the heap index of the entry of that slot; for a
	 * free slot, the next free slot (free list from timer_free). */
	uint32_t *timer_pos;
	uint32_t timer_free;
	/* The FIFO of timers (timer.c): deadlines never decrease from head
	 * to tail; an I/O timeout of the same length as the one before it
	 * lands at the tail (loop thread only). */
	struct canal__task *fifo_head, *fifo_tail;

	/* Stack cache of this loop (stack.c), and its free task structures
	 * (task.c; linked by next; loop thread only). */
	struct canal__stack_cache stacks;
	struct canal__task *task_cache;
	uint32_t task_cached;

	/* Backend state (backend_*.c). */
	void *backend;
	uint32_t inflight; /* I/O operations submitted and not completed */
	/* Task runs left before the scheduler's poll of completions and
	 * timers is due (loop.c, direct_turn); <= 0: due. */
	int32_t turns;
	int start_error;
};

struct canal__runtime {
	struct canal_run_options opts;
	const struct canal__backend_ops *backend;
	unsigned nloops;
	struct canal__loop *loops;
	_Atomic uint64_t live;	    /* tasks not yet ended */
	_Atomic uint64_t next_id;
	_Atomic uint32_t spread;    /* round-robin cursor of spawn */
	_Atomic uint32_t stop;	    /* every task ended: loops return */
	_Atomic uint32_t spinning;  /* loops in their idle spin (loop.c) */
	uint64_t io_spin_ns;	    /* io_spin's bound (loop.c) */
	bool ring_refused;	    /* a loop's io_uring_setup refused (loop.c) */
	struct canal__stack_pool *pool;
	struct canal__detach_pool *detach;
};

/* The running runtime (NULL outside canal_run). */
extern struct canal__runtime *_Atomic canal__rt;

/* The loop of the calling thread (NULL if it is not a loop). A task may
 * resume on another thread than the one it switched out on (stealing,
 * wakes from another loop): the compiler must never reuse a thread's
 * variable, or its address, across a switch. On x86-64 one volatile load
 * through %fs (the initial-exec sequence, written out so that no address
 * is computed once and kept: the "memory" clobber orders it with the
 * switch, a call); elsewhere a call that is never inlined. */
struct canal__loop *canal__this_loop_call(void);
#if defined(__x86_64__) && defined(__LP64__) && !defined(CANAL_NO_TLS_ASM)
extern __thread struct canal__loop *canal__tls_loop
	__attribute__((tls_model("initial-exec")));
static inline __attribute__((always_inline)) struct canal__loop *
canal__this_loop(void)
{
	struct canal__loop *l;
	__asm__ __volatile__("movq canal__tls_loop@gottpoff(%%rip), %0\n\t"
			     "movq %%fs:(%0), %0"
			     : "=r"(l)
			     :
			     : "memory");
	return l;
}
#else
#define canal__this_loop canal__this_loop_call
#endif
void canal__set_this_loop(struct canal__loop *l);
/* The calling task (NULL outside a task; a detached task is a task). */
struct canal__task *canal__this_task(void);

/* task.c */
int canal__task_create(struct canal__runtime *rt, void (*fn)(void *),
		       void *arg, struct canal__loop *loop,
		       struct canal__task **out);
void canal__task_free(struct canal__task *t);
/* Free a loop's cache of task structures (its exit). */
void canal__task_cache_flush(struct canal__loop *l);
/* Switch from the scheduler context of the calling loop into t; returns
 * the task that switched back out to the scheduler (t, or a task t
 * yielded to directly). */
struct canal__task *canal__task_run(struct canal__loop *l,
				    struct canal__task *t);
/* loop.c: the runnext task, which the running task t switches to
 * directly, t taking the slot; or NULL (no such task, or the scheduler's
 * turn). */
struct canal__task *canal__loop_handoff_next(struct canal__loop *l,
					     struct canal__task *t);
/* task.c: that hand-off from the calling task; false if none. */
bool canal__task_handoff(void);
/* task.c: yield if another task is ready on this loop (base/park.h's
 * yield_to_ready); false, having done nothing, if none is. */
bool canal__task_yield_ready(void);
/* loop.c: is a task other than the running one ready on l (the runnext
 * slot, the yield slot, the queue)? Read by l's own thread; a thief may
 * empty the queue meanwhile (then a yield finds nothing: harmless). */
bool canal__loop_has_ready(struct canal__loop *l);
/* loop.c: the task a yield of t switches to directly (t then in the
 * loop's yield slot), or NULL: yield through the scheduler. */
struct canal__task *canal__loop_yield_next(struct canal__loop *l,
					   struct canal__task *t);
/* The end of a park, once the task's context is saved (the scheduler
 * after a switch out, or the task a direct park switched to): PARKING ->
 * PARKED, true; or, woken meanwhile (NOTIFIED), the task is made RUNNING
 * and false: the caller pushes it. Not inlined: its CAS takes a local's
 * address, which ASan fences with redzones that a task's first frame,
 * never returning, would leave on its reused stack. */
bool canal__task_finish_park(struct canal__task *t);
/* loop.c: the task a park switches to directly (the runnext slot's, or
 * past the slot's fairness streak the queue's first), or NULL: park
 * through the scheduler. */
struct canal__task *canal__loop_park_next(struct canal__loop *l);
/* Switch from the running task to its loop's scheduler (t->after set). */
void canal__task_switch_out(struct canal__task *t);

/* Park the calling task until a wake source wins (its wake must have been
 * armed with canal__task_arm before it registered anywhere). deadline_ns:
 * CANAL_NO_DEADLINE or a canal_now_ns() time, at which the timer wins with
 * WAKE_TIMEDOUT. Returns the winning reason (enum task_wake). */
/* Arming also enters PARKING: a waker may win between the registration
 * and the switch out (then it finds PARKING and leaves the push to the
 * scheduler). These stores are published by whatever publishes the
 * registration (a bucket or condvar lock, an SQE submission); and the
 * wake's store is a release, paired with canal__task_win's acquire CAS:
 * a waker that wins ARMED sees PARKING, even where nothing publishes the
 * arm (a kept condvar waiter, cond.h, taken between two parks: its
 * signaller would otherwise read a stale sched on a weakly ordered CPU,
 * skip the push and leave the task parked; a plain store on x86). */
static inline void canal__task_arm(struct canal__task *t)
{
	atomic_store_explicit(&t->sched, TASK_PARKING, memory_order_relaxed);
	atomic_store_explicit(&t->wake, WAKE_ARMED, memory_order_release);
}
/* Take an armed wake back without parking: true if no source had won it
 * (the task goes on running); false if one did, and then the task must
 * still park (canal__task_park) to be pushed by that winner. */
bool canal__task_disarm(struct canal__task *t);
uint32_t canal__task_park(struct canal__task *t, uint64_t deadline_ns);
/* Try to wake t for reason: true if this call won (then t is runnable). */
bool canal__task_wake(struct canal__task *t, uint32_t reason);
/* canal__task_wake in two steps, for a waker that must act between them
 * (park.c unlinks its wait node): win the wake (true: this call won, and
 * the caller must then call canal__task_make_runnable exactly once). */
bool canal__task_win(struct canal__task *t, uint32_t reason);
void canal__task_make_runnable(struct canal__task *t);

/* loop.c */
void canal__loop_push(struct canal__loop *l, struct canal__task *t);
/* Make t (whose wake the caller won, PARKED -> RUNNING) run: the runnext
 * slot of t->loop when the caller is the task running there, else
 * t->loop's queue. */
void canal__loop_push_woken(struct canal__task *t);
/* The next loop in turn (spawn's spreading, a task's attach). */
struct canal__loop *canal__loop_pick(struct canal__runtime *rt);
/* The loop for a task spawned from self (a loop or a pool thread of rt):
 * self itself under CANAL_RUN_SPAWN_NEAR while its queue is short, else
 * canal__loop_pick. */
struct canal__loop *canal__loop_pick_spawn(struct canal__runtime *rt,
					   struct canal__loop *self);
/* t ended (it switched out with AFTER_EXIT to l, a loop or a pool
 * thread): free it; the last one stops the runtime. */
void canal__task_ended(struct canal__loop *l, struct canal__task *t);

/* timer.c (loop thread only; canal__timer_disarm by the task itself,
 * resumed) */
/* canal__timer_arm returns 0: it cannot fail (timer.c). */
int canal__timer_arm(struct canal__loop *l, struct canal__task *t,
		     uint64_t deadline_ns);
void canal__timer_disarm(struct canal__loop *l, struct canal__task *t);
/* Fire expired timers; returns the next deadline (CANAL_NO_DEADLINE). */
uint64_t canal__timer_run(struct canal__loop *l, uint64_t now);
/* The loop's next deadline, CANAL_NO_DEADLINE when it has no timer. */
static inline uint64_t canal__timer_next(const struct canal__loop *l)
{
	uint64_t d = l->heap_len ? l->heap[0].deadline : CANAL_NO_DEADLINE;
	if (l->fifo_head && l->fifo_head->fifo_deadline < d)
		d = l->fifo_head->fifo_deadline;
	return d;
}
void canal__timer_fini(struct canal__loop *l);

/* park.c: the runtime's parker and local waker. */
extern const struct canal__parker_ops canal__task_parker_ops;
uint32_t canal__local_wake(_Atomic uint32_t *word, uint32_t count);
/* In a forked child without the runtime: empty the parked table. */
void canal__parked_forget(void);
/* Wait until no thread other than a loop (or a detach pool thread) is
 * inside canal__local_wake: canal_run's end, after its last task ended and
 * its loops and pool were joined, before it closes their backends. */
void canal__local_wake_quiesce(void);
/* A waker that is not a loop or pool thread (a condvar's signal from a
 * plain thread) counts itself around its wakes, as canal__local_wake
 * does, so that canal__local_wake_quiesce waits for it too. */
void canal__outside_wake_begin(void);
void canal__outside_wake_end(void);

/* compact.c: stack compaction of long-parked tasks (see there). */
/* At canal_run: on or off (CANAL_RUN_COMPACT_STACKS), the epoch's
 * length (CANAL_STACK_COMPACT_MS). */
struct canal__runtime;
void canal__compact_configure(const struct canal__runtime *rt);
/* Whether the running runtime compacts (written at canal_run only). */
extern _Atomic uint32_t canal__compact_on;
static inline bool canal__compacting(void)
{
	return __builtin_expect(
		atomic_load_explicit(&canal__compact_on, memory_order_relaxed),
		0);
}
uint32_t canal__compact_epoch_slow(void);
void canal__compact_note_slow(void);
void canal__compact_busy_slow(struct canal__loop *l);
/* The epoch a wait node is stamped with when linked (0 when off). */
static inline uint32_t canal__compact_epoch(void)
{
	return canal__compacting() ? canal__compact_epoch_slow() : 0;
}
/* A node was linked: the sweep has work coming. */
static inline void canal__compact_note(void)
{
	if (canal__compacting())
		canal__compact_note_slow();
}
/* From an idle loop, before it sleeps: sweep if one is due; returns the
 * time by which the loop should look again (CANAL_NO_DEADLINE: none). */
uint64_t canal__compact_idle(struct canal__loop *l);
/* Between tasks (loop_poll_quick): a short sweep if one is due. */
static inline void canal__compact_busy(struct canal__loop *l)
{
	if (canal__compacting())
		canal__compact_busy_slow(l);
}
/* In a child forked by a plain thread (loop.c). */
void canal__compact_forget(void);
/* Tasks compacted so far, and holds that a wake-up interrupted (the
 * sweep pushed the task), over the process's life (tests). */
void canal__compact_stats(uint64_t *compacted, uint64_t *notified);
/* Put t's stack back in place before it runs (t->saved != NULL). */
void canal__compact_restore(struct canal__task *t);
/* task.c: a compacting runtime's task gets its first context here, when
 * it first runs (t->sp == NULL until then). */
void canal__task_first_context(struct canal__task *t);
/* Before every switch into t. */
static inline void canal__compact_ready(struct canal__task *t)
{
	if (__builtin_expect(t->saved != NULL, 0))
		canal__compact_restore(t);
	else if (__builtin_expect(t->sp == NULL, 0))
		canal__task_first_context(t);
}

/* park.c, for the sweep: walk the table's buckets from *cursor, taking
 * out of each bucket's main list (oldest first) the nodes linked at epoch
 * `old` or before, into its swept list; the tasks of those that are
 * one-word waits (wnode) and PARKED are taken PARKED -> PARKING and
 * stored in out[] (at most max; the caller compacts them, then releases
 * each with canal__compact_release). Stops at max tasks or after the last
 * bucket; *young is set if a bucket kept nodes too young for this sweep.
 * Returns the number of tasks stored; *cursor == CANAL__PARKED_BUCKETS
 * when the walk is complete. */
#define CANAL__PARKED_BUCKETS 1024u
unsigned canal__parked_collect(struct canal__task **out, unsigned max,
			       uint32_t old, unsigned *cursor, bool *young);
/* End a hold taken by the sweep: PARKING -> PARKED, or, woken
 * meanwhile (NOTIFIED), push it to its loop. */
void canal__compact_release(struct canal__task *t);

/* detach.c */
int canal__detach_start(struct canal__runtime *rt);
void canal__detach_stop(struct canal__runtime *rt);
void canal__detach_push(struct canal__runtime *rt, struct canal__task *t);

#endif /* CANAL_RUNTIME_INTERNAL_H */
