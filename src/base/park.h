/* SPDX-License-Identifier: MIT */
/*
 * park.h - how a caller of canal gives up the CPU: the parker.
 *
 * Every way the channel layer gives up the CPU goes through the parker of
 * the calling thread: sleeping until a 32-bit word changes (one word, or any
 * of several), yielding, and sleeping until a deadline. No channel code
 * calls futex(2), sched_yield(2), nanosleep(2) or usleep(3) itself. A thread
 * that never installs a parker uses the default one (futex(2),
 * futex_waitv(2), sched_yield(2), clock_nanosleep(2)); a task runtime
 * installs its own on each of its loop threads, so that a blocking channel
 * operation called from a task parks the task and lets the loop run others
 * (a loop's thread never blocks in a channel).
 *
 * Waking: a notifier changes the word, then calls canal__wake(). Whatever
 * parker the notifier has, canal__wake() first asks the process's local
 * waker (installed by the runtime, NULL otherwise) to wake tasks of this
 * process parked on that word in user space, then wakes the rest through
 * the kernel (FUTEX_WAKE: threads, and io_uring futex waits of tasks in any
 * process). Words of process-shared memory (shared == true) are always
 * woken through the kernel, since their waiters may be in other processes;
 * a runtime parks tasks on such words with a kernel futex wait
 * (IORING_OP_FUTEX_WAIT) or by polling, never only in its own table.
 *
 * Contract of wait / wait_many (the futex contract): return 0 at once if a
 * word already differs from its key; otherwise sleep until a canal__wake()
 * on a word, the deadline (-ETIMEDOUT), or spuriously (0). The check of the
 * word against the key and the registration as a sleeper must be atomic
 * with respect to canal__wake() on that word (as FUTEX_WAIT is): a waker
 * that changed the word before our check is seen by the check, one that
 * changes it after finds us registered. Callers always re-check their
 * condition after a return.
 */
#ifndef CANAL_BASE_PARK_H
#define CANAL_BASE_PARK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* No deadline: wait forever. Deadlines are canal_now_ns() values. */
#define CANAL_NO_DEADLINE UINT64_MAX

/* Most words one wait_many takes (CANAL_SELECT_MAX of channel.h). */
#define CANAL__WAIT_MANY_MAX 128u

struct canal__parker_ops {
	/* Sleep until *word != key, a wake on word, or deadline_ns:
	 * 0 or -ETIMEDOUT. shared: word is in process-shared memory. */
	int (*wait)(void *self, _Atomic uint32_t *word, uint32_t key,
		    bool shared, uint64_t deadline_ns);
	/* The same on n words at once (1 <= n <= CANAL__WAIT_MANY_MAX):
	 * returns when any differs from its key or is woken. */
	int (*wait_many)(void *self, _Atomic uint32_t *const *words,
			 const uint32_t *keys, const bool *shared, unsigned n,
			 uint64_t deadline_ns);
	/* Let others run for a moment (a thread: sched_yield; a task: the
	 * other tasks of its loop, and the loop's completions). */
	void (*yield)(void *self);
	/* Sleep until deadline_ns (a caller backing off from a stalled
	 * peer). */
	void (*sleep_until)(void *self, uint64_t deadline_ns);
	/* Before a wait: let whatever else is ready to run on this thread
	 * run once (a task: the other runnable tasks of its loop), and say
	 * whether anything did (the waiter then re-checks its condition
	 * before it waits). NULL, or false, when nothing else is ready. */
	bool (*yield_if_busy)(void *self);
	/* If another task is ready on this thread (its loop's queue, yield
	 * slot or runnext slot), yield to it and return true once this one
	 * runs again (a thief may have taken that task meanwhile: then it
	 * only passed through the loop's scheduler); else return false at
	 * once, having done nothing. Never waits; at most one pass of the
	 * loop's scheduler (completions, timers). For a caller that holds
	 * nothing another party waits for, when running on is worth less
	 * than what others could do meanwhile: a claim lost to another CPU
	 * (channel/ring.c), or a quantum of operations that did not wait
	 * (channel/quantum.h: tasks are not preempted). NULL for a thread
	 * (nothing to yield to without a system call). */
	bool (*yield_to_ready)(void *self);
	/* Spinning policy: a task holds its loop's thread while it spins,
	 * so the wait layer parks it at once (no poll, no yield phase as a
	 * thread has; at most the one yield_if_busy). */
	bool is_task;
};

struct canal__parker {
	const struct canal__parker_ops *ops;
	void *self; /* the parker's own state, passed back to each op */
};

/* The calling thread's parker (the default one unless installed). */
const struct canal__parker *canal__parker_get(void);

/* Install p as the calling thread's parker (NULL: back to the default).
 * p must stay valid while installed. */
void canal__parker_install(const struct canal__parker *p);

/* The calling thread's parker's yield_to_ready: true if it yielded,
 * false at once for a thread or when no other task is ready. */
static inline bool canal__yield_to_ready(void)
{
	const struct canal__parker *p = canal__parker_get();
	return p->ops->yield_to_ready && p->ops->yield_to_ready(p->self);
}

/*
 * The process's local waker: wakes up to count tasks of this process parked
 * on word (a process-private word) and returns how many it woke. Installed
 * by a runtime while it runs (NULL: none). It must be callable from any
 * thread, task or not, and must not block.
 */
typedef uint32_t (*canal__local_waker_fn)(_Atomic uint32_t *word,
					  uint32_t count);
void canal__set_local_waker(canal__local_waker_fn fn);

/* Wake up to count sleepers on word (UINT32_MAX: all), after the caller
 * changed it with a seq_cst read-modify-write (release for the waiter's
 * acquire of the word; seq_cst for the skip below, the pairing of
 * canal__private_sleep_begin). See the top of this file. Returns how many
 * sleepers FUTEX_WAKE woke, as far as it can tell they are threads: not
 * the tasks the local waker woke, which run only when their loop gets to
 * them (a CPU-bound task may hold it), and on a private word nothing at
 * all while a runtime runs in this process (a task may wait on a private
 * word in an io_uring futex wait, beside shared words); on a shared word
 * a task of any process in an io_uring futex wait is counted (its
 * queue's other sleepers re-check every CANAL__SHARED_RECHECK_NS). A
 * chain relies on the count (wait.h). Each sleeper counted returns from
 * its wait after this call began, as soon as it runs; a select in
 * futex_waitv that another of its words woke already may be counted
 * again (the kernel dequeues its other waits on its way back): callers
 * that rely on the count treat every return of a select as theirs
 * (wait.c, canal__wait_many). 0 when nobody was asleep in the kernel (a
 * waiter between its check and its sleep is not counted: it finds the
 * word changed). */
uint32_t canal__wake(_Atomic uint32_t *word, uint32_t count, bool shared);

/*
 * Kernel sleepers on process-private words, counted per bucket of words
 * (a hash of the word's cache line; CANAL__SLEEP_BUCKETS buckets, each on
 * its own cache line). Whoever waits in the kernel on private words (a
 * thread's FUTEX_WAIT or futex_waitv, a task's io_uring futex wait)
 * brackets that wait with begin/end over the words it waits on (shared
 * ones are skipped), and canal__wake() skips FUTEX_WAKE on a private word
 * while its bucket's count is 0: a wake that found no task in the local
 * waker then costs no system call (a task woken but not yet run still
 * counts as a waiter of its queue, so a second notification in that
 * window came here and paid a FUTEX_WAKE for nobody: 1.5 system calls per
 * message in the capacity-0 mpmc grid cell on tasks). Per bucket, not one
 * count per process: with one count, a thread asleep on one queue made
 * every notification of every other queue with a registered waiter pay a
 * FUTEX_WAKE that found nobody (35-39k per run of the capacity-1 mpmc
 * thread cell, against 0.8k that woke someone; 0-4k with buckets). What is
 * left are wakes of the same word while the thread woken first has not
 * run yet (it still counts): fwd 100/100 pays 11-17k of them per run
 * either way. A select counts each of its private words (up to 128
 * read-modify-writes before it sleeps, where one count took one).
 * Pairing (Dekker, as FUTEX_WAIT's own waiter count), per word: the
 * sleeper's increment of the word's bucket (seq_cst RMW) comes before the
 * kernel's load of the word (the kernel orders it after its own
 * futex-bucket barrier); the notifier's change of the word (a seq_cst
 * RMW, canal__wake's contract; the callers are waitq_wake and the
 * engine's progress wake) comes before its load of the same bucket
 * (seq_cst). So either the notifier sees the sleeper and issues
 * FUTEX_WAKE, or the kernel's check sees the new word and the sleeper
 * does not sleep. Two words in one bucket only cost a useless syscall.
 * end may be relaxed: a stale non-zero count costs one useless syscall.
 */
#define CANAL__SLEEP_BUCKETS_LOG2 6u
#define CANAL__SLEEP_BUCKETS (1u << CANAL__SLEEP_BUCKETS_LOG2)
void canal__private_sleep_begin(_Atomic uint32_t *const *words,
				const bool *shared, unsigned n);
void canal__private_sleep_end(_Atomic uint32_t *const *words,
			      const bool *shared, unsigned n);

/* The default parker's operations, for a parker that falls back to them
 * (a detached task runs as a plain thread). */
extern const struct canal__parker_ops canal__thread_parker_ops;

#endif /* CANAL_BASE_PARK_H */
