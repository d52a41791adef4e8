/* SPDX-License-Identifier: MIT */
/*
 * canal/task.h - lightweight tasks: a runtime of stackful cooperative tasks
 * on a few loop threads (io_uring, or epoll where io_uring is unavailable).
 *
 * Conventions (those of canal/channel.h): functions returning int return 0
 * (or a non-negative count) on success and a negative errno value on
 * failure; errno is not touched.
 *
 * The model:
 *  - canal_run() starts a runtime: loop threads (one per core by default),
 *    runs main_task as the first task, and returns once every task has
 *    ended. It may be called again after it returned; one runtime runs at a
 *    time in a process.
 *  - A task is a function with its own stack (stackful: ordinary C code runs
 *    in it, at any call depth). Tasks are cooperative: a task runs on its
 *    loop's thread until it blocks (a channel operation, a condition
 *    variable, I/O, canal_sleep_ns) or yields; then the loop runs others.
 *    A task that computes for long without blocking holds its loop.
 *  - Tasks and channels: every blocking operation of <canal/channel.h>
 *    called from a task parks the task (its loop runs others); from a plain
 *    thread it blocks the thread as always. Threads and tasks mix freely on
 *    one channel.
 *  - A task may move to another loop while it is runnable (idle loops take
 *    work from busy ones), never while it waits for I/O or a timer. Do not
 *    keep the address of a thread-local variable across a blocking call.
 *  - Stacks are committed on demand: a task costs the pages its stack
 *    touched. A task that overflows its stack is reported (task id, stack
 *    size) and the process aborts; see canal_run_options.stack_size.
 */
#ifndef CANAL_TASK_H
#define CANAL_TASK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which I/O backend the loops use (canal_run_options.backend). */
enum canal_backend {
	CANAL_BACKEND_AUTO = 0,	 /* io_uring, else epoll; CANAL_BACKEND env */
	CANAL_BACKEND_IO_URING = 1,
	CANAL_BACKEND_EPOLL = 2,
};

/*
 * Options of canal_run(). Zero-initialise and set what you need: every 0
 * field means "the default".
 */
struct canal_run_options {
	/* Loop threads (the thread calling canal_run is one of them).
	 * 0: one per online CPU. At most 1024. */
	unsigned loops;
	/* Bytes of stack per task, rounded up to the page size; committed
	 * on demand, so a large value costs address space, not memory.
	 * 0: 256 KiB. At least 16 KiB, at most 1 GiB. */
	size_t stack_size;
	/* enum canal_backend. CANAL_BACKEND_AUTO reads the environment
	 * variable CANAL_BACKEND ("io_uring" or "epoll") and otherwise takes
	 * io_uring when io_uring_setup works (not ENOSYS/EPERM). */
	int backend;
	/* Native threads for canal_detach() (0: 4). */
	unsigned detach_threads;
	/* Flags: CANAL_RUN_NO_SYNC_SHORTCUT. */
	unsigned flags;
};

enum {
	/* I/O never tries the non-blocking call first: every operation goes
	 * through the backend (to measure the synchronous-completion
	 * shortcut). */
	CANAL_RUN_NO_SYNC_SHORTCUT = 1u << 0,
};

/*
 * canal_run - run a runtime: start the loops, run main_task(arg) as a task,
 * and return once every task (main_task and all tasks spawned, directly or
 * not) has ended.
 *
 * opts NULL means every default. Returns 0 once every task ended, or
 *   -EINVAL  main_task is NULL, or an option is out of range (unknown
 *            flags or backend, loops > 1024, stack_size out of range);
 *   -EBUSY   a runtime is already running in this process (including a
 *            call from inside a task);
 *   -ENOSYS  the backend asked for (option or CANAL_BACKEND) is not
 *            available (io_uring_setup failed);
 *   -ENOMEM, -EAGAIN, -EMFILE  the loops, threads or rings could not be
 *            created (nothing was run).
 * Blocks the calling thread, which runs one of the loops, until the end.
 * Thread-safe: concurrent calls get -EBUSY but one.
 */
int canal_run(void (*main_task)(void *arg), void *arg,
	      const struct canal_run_options *opts);

/*
 * canal_spawn - start fn(arg) as a new task. The task is placed on a loop
 * (spread over the loops in turn) and runs when that loop gets to it.
 * Callable from a task, a detached task, or a thread that is a loop of the
 * running runtime. Returns 0, or
 *   -EINVAL  fn is NULL;
 *   -EPERM   called outside a running runtime (a plain thread, or after
 *            canal_run returned);
 *   -ENOMEM  no memory (or address space) for the task's stack.
 * Never blocks.
 */
int canal_spawn(void (*fn)(void *arg), void *arg);

/*
 * canal_yield - let the other runnable tasks of this loop run, then
 * continue. Outside a task (a plain thread, a detached task) it yields the
 * thread (sched_yield). Never fails.
 */
void canal_yield(void);

/*
 * canal_sleep_ns - suspend the calling task for ns nanoseconds (the loop
 * runs others meanwhile). Outside a task it sleeps the thread. Returns 0.
 */
int canal_sleep_ns(uint64_t ns);

/*
 * canal_task_id - the id of the calling task (1 for main_task, then in
 * spawn order, unique within one canal_run), or 0 outside a task.
 */
uint64_t canal_task_id(void);

#ifdef __cplusplus
}
#endif

#endif /* CANAL_TASK_H */
