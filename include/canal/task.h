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
 *    A task that computes for long without blocking holds its loop. A
 *    blocking channel operation on a buffered channel may let others run
 *    even when it need not wait: when it loses the race for a slot to
 *    another CPU, and once every 1024 elements sent or received through
 *    canal_send, canal_recv, their timed forms and the blocking batches
 *    (so a task sending into a wide channel does not hold its loop to
 *    the end). The try forms of
 *    buffered channels never let others run (those of capacity-0
 *    channels may, as they may wait up to a millisecond for a peer).
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
 *  - What catches an overflow: one inaccessible guard page (the page size,
 *    4 KiB on x86-64) below each task's stack; the first access to it is
 *    reported. (Where the kernel cannot give every stack a guard page,
 *    Linux before 6.13 with very many tasks, the stacks beyond a budget
 *    have a canary instead, checked at each switch.) A function whose
 *    frame is larger than a page (big local arrays, alloca, VLAs) may move
 *    the stack pointer past the guard page without touching it and write
 *    into the stack of the task below, silently (a canary is missed the
 *    same way), unless its code probes each page it takes: canal, its
 *    tests and examples are built with -fstack-clash-protection where the
 *    compiler has it, and code that runs in tasks should be too (GCC >= 8,
 *    Clang >= 11), or keep its frames under a page. Frames of up to a
 *    page are caught either way.
 *  - Signal handlers: each loop thread (and each thread that runs detached
 *    tasks) has an alternate signal stack of 64 KiB (sigaltstack; canal_run
 *    fails, running nothing, if one cannot be set up), where
 *    the runtime's SIGSEGV handler and any handler installed with
 *    SA_ONSTACK run, with an inaccessible guard page below it. A handler
 *    that runs off its bottom is reported ("overflowed the alternate
 *    signal stack") and the process aborts; nothing below it is written.
 *    Handlers without SA_ONSTACK run on the task's stack (a task's stack
 *    with no room left for the signal's frame is reported as its
 *    overflow).
 */
#ifndef CANAL_TASK_H
#define CANAL_TASK_H

#include <canal/base.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

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
	 * io_uring when io_uring_setup works, else epoll. A refusal (ENOSYS,
	 * EPERM: no io_uring in this kernel, or forbidden) is kept for the
	 * process's life, also one that comes after io_uring worked (a
	 * loop's ring refused: that canal_run falls back to epoll, or says
	 * -ENOSYS if io_uring was asked for); a failure for want of
	 * resources (EMFILE, ENFILE, ENOMEM, EAGAIN) only for that
	 * canal_run. */
	int backend;
	/* Native threads for canal_detach() (0: 4). At most 1024. */
	unsigned detach_threads;
	/* Flags: CANAL_RUN_NO_SYNC_SHORTCUT, CANAL_RUN_COMPACT_STACKS,
	 * CANAL_RUN_SPAWN_NEAR. */
	unsigned flags;
};

enum {
	/* I/O never tries the non-blocking call first: every operation goes
	 * through the backend (to measure the synchronous-completion
	 * shortcut). */
	CANAL_RUN_NO_SYNC_SHORTCUT = 1u << 0,
	/* Stack compaction, for programs with very many parked tasks: a
	 * task parked for 10 ms or more (environment variable
	 * CANAL_STACK_COMPACT_MS=n: n ms) in a channel operation that waits
	 * on one channel (send, receive, their batch, timed and single-copy
	 * forms; not select) has the used part of its stack, usually a few
	 * hundred bytes, copied to the heap and its stack pages given back
	 * to the kernel: about 1 KiB of memory per parked task instead of
	 * 4 KiB or more. The first switch back into it copies them back (a
	 * page fault and a copy: a few microseconds). The contract, which
	 * the program must keep: while a task is parked in such an
	 * operation, no other task or thread reads or writes its stack (its
	 * local variables). Objects shared between tasks live on the heap or
	 * in static storage, or are owned by a task that is not parked in a
	 * channel operation meanwhile (a task waiting in canal_join-like
	 * patterns on a channel for workers that use its locals breaks it).
	 * A break reads zeros or loses writes: undefined behaviour. */
	CANAL_RUN_COMPACT_STACKS = 1u << 1,
	/* Spawn near, for servers that share the machine: canal_spawn from
	 * a task (or a loop's thread) places the new task on the spawner's
	 * own loop while fewer than 4 tasks wait in that loop's queue, and
	 * spreads it over the loops in turn (the default) beyond. A trickle
	 * of spawns (the connections of a server under light load) thus
	 * stays on one loop, and the other loops sleep, their CPUs left to
	 * other processes (a client on the same machine); a burst of
	 * spawns in a row (a fan-out of workers) still spreads past the
	 * bound. A loop that is awake and idle takes queued tasks from
	 * another (from a queue of two or more), but none is woken for
	 * them: tasks spawned near a task that keeps its loop busy wait for
	 * its switches (three CPU-bound tasks spawned near on two loops
	 * took 600 ms instead of 400). Without the flag, tasks are spread
	 * in turn, which suits CPU-bound work: two tasks spawned one after
	 * the other go to two loops. A task spawned from a detached task is
	 * spread either way. */
	CANAL_RUN_SPAWN_NEAR = 1u << 2,
};

/*
 * canal_run - run a runtime: start the loops, run main_task(arg) as a task,
 * and return once every task (main_task and all tasks spawned, directly or
 * not) has ended.
 *
 * opts NULL means every default. Returns 0 once every task ended, or
 *   -EINVAL  main_task is NULL, or an option is out of range (unknown
 *            flags or backend, loops > 1024, stack_size out of range,
 *            detach_threads > 1024);
 *   -EBUSY   a runtime is already running in this process (including a
 *            call from inside a task; the child of a fork() by a thread
 *            that is not a loop has none: it may run its own, while a
 *            child forked by a task may only exec or _exit);
 *   -ENOSYS  the backend asked for (option or CANAL_BACKEND) is not
 *            available (io_uring_setup refused: ENOSYS, EPERM, ...);
 *   -ENOMEM, -EAGAIN, -EMFILE, -ENFILE  the loops, threads or rings could
 *            not be created (nothing was run; io_uring asked for and its
 *            probe short of these resources, too); -ENOMEM also when a
 *            loop thread's or detach thread's alternate signal stack
 *            (below) could not be mapped or installed (sigaltstack);
 *   -EPERM   the calling thread runs on its alternate signal stack (a
 *            signal handler's), which sigaltstack cannot replace.
 * Blocks the calling thread, which runs one of the loops, until the end.
 * Thread-safe: concurrent calls get -EBUSY but one.
 *
 * A loop with I/O in flight and nothing to run spins up to 20 us,
 * watching its ring without a system call, before it sleeps in the kernel
 * (a CPU that goes idle on a VM pays a wake-up through the hypervisor when
 * the next completion comes); the environment variable CANAL_IO_SPIN_NS
 * sets the bound in ns (0: sleep at once; read at each canal_run; a value
 * that is not a number of ns up to 10^9 leaves 20 us). No spin on the epoll
 * backend, nor when loops exceed the CPUs of the calling thread's
 * affinity mask.
 */
int canal_run(void (*main_task)(void *arg), void *arg,
	      const struct canal_run_options *opts);

/*
 * canal_spawn - start fn(arg) as a new task. The task is placed on a loop
 * (spread over the loops in turn; with CANAL_RUN_SPAWN_NEAR, on the
 * spawner's loop while its queue is short) and runs when that loop gets
 * to it. It
 * starts with the default floating-point environment (round to nearest,
 * exceptions masked, flags clear), not its spawner's, and keeps its own
 * across switches, as a thread does.
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
 * Never blocks; callable from any thread.
 */
uint64_t canal_task_id(void);


/* ------------------------------------------------------------------ */
/* Condition variables for tasks (CPC's cpc_condvar)                   */
/* ------------------------------------------------------------------ */

/*
 * A condition variable of tasks, as in CPC: canal_cond_wait() suspends the
 * calling task until canal_cond_signal() or canal_cond_broadcast(). There
 * is no mutex and no memory: a signal wakes only tasks already waiting
 * (with several loops, a signal may come before the wait it was meant
 * for: pair the condvar with state the waiter checks, or use a channel).
 *
 * Cancellation: a condvar passed to a waiting operation (the I/O below)
 * cancels it when signalled: the operation ends with -ECANCELED and its
 * resources are released. A signal wakes or cancels exactly one waiter
 * (the oldest), a broadcast all of them. A signal that meets an operation
 * finishing at that moment (on io_uring: its completion already posted,
 * not yet read) is used up on it all the same: the operation returns its
 * own result, not -ECANCELED, and the next waiter is not woken (the
 * signaller may destroy the condvar once its call returns, so the signal
 * cannot be passed on). A waiter that must not miss a signal pairs the
 * condvar with state it checks after each operation.
 */
struct canal_cond;

/*
 * canal_cond_create - a new condition variable, or NULL with errno ENOMEM.
 * canal_cond_destroy - free one nobody waits on (NULL is ignored).
 * Never block. Thread-safe (destroy: once, when no task uses it).
 */
struct canal_cond *canal_cond_create(void);
void canal_cond_destroy(struct canal_cond *c);

/*
 * canal_cond_wait - suspend the calling task until c is signalled, or for
 * at most timeout_ns nanoseconds (< 0: no limit). Returns 0 when
 * signalled, -ETIMEDOUT, -EINVAL if c is NULL, -EPERM when not called
 * from a task (a plain thread or a detached task).
 */
int canal_cond_wait(struct canal_cond *c, int64_t timeout_ns);

/*
 * canal_cond_signal - wake (or cancel the operation of) the oldest waiter
 * of c; canal_cond_broadcast - all of them. Return how many were woken
 * (0 if none waited), or -EINVAL if c is NULL. Never block; callable from
 * any thread, task or not.
 */
int canal_cond_signal(struct canal_cond *c);
int canal_cond_broadcast(struct canal_cond *c);

/* ------------------------------------------------------------------ */
/* I/O that suspends the task                                          */
/* ------------------------------------------------------------------ */

/*
 * canal_io_read, canal_io_write, canal_io_readv, canal_io_writev,
 * canal_io_recv, canal_io_send, canal_io_accept, canal_io_connect,
 * canal_io_close - the system calls of the same names, for a task: the
 * task is suspended (its loop runs others) until the operation completes.
 *
 * timeout_ns: < 0 no limit; otherwise the operation is cancelled after
 * that long and returns -ETIMEDOUT. cancel: NULL, or a condvar whose
 * signal cancels the operation (-ECANCELED). When the completion and the
 * cancellation race there is exactly one outcome: either the operation
 * happened (its result is returned, its data moved) or it did not
 * (-ETIMEDOUT / -ECANCELED, nothing moved). Except a connect: one that
 * was under way in the kernel (a TCP handshake) when the call returned
 * -ETIMEDOUT or -ECANCELED goes on there, as connect(2) interrupted by a
 * signal does, and may already have reached its peer's listener; a
 * connect cannot be taken back. Its socket is then neither connected nor
 * free for another connect (a second canal_io_connect says -EALREADY
 * while it is under way): close it, or learn how it ended by waiting
 * until it is writable (poll(2) POLLOUT; it is once the connect ended)
 * and reading getsockopt(SO_ERROR): 0 connected, or the connect's error.
 * A Unix socket's connect never stays under way (it completes at once,
 * or waits for room in a full backlog without having started). To a
 * listener whose backlog is full, on both backends, in a task or not: a
 * socket in non-blocking mode gets connect(2)'s -EAGAIN at once; one in
 * blocking mode waits for room until timeout_ns (-ETIMEDOUT) or the
 * condvar, or until its SO_SNDTIMEO, if set and sooner, runs out:
 * -EAGAIN, as connect(2) says then.
 *
 * Returns what the system call returns (a byte count, 0, an accepted fd)
 * or -errno. read/write/readv/writev use and advance the file position
 * (the kernel's offset -1); read, write, recv and send move at most
 * 0x7ffff000 bytes per call, as read(2) and write(2) do (a larger len
 * gives a short count). send adds MSG_NOSIGNAL. accept returns a socket
 * with flags (SOCK_CLOEXEC, SOCK_NONBLOCK) as accept4(2); any other flag
 * is -EINVAL at once, whatever the listener and timeout_ns (accept4(2)'s
 * first check), on both backends and outside a task.
 *
 * First, unless canal_run was given CANAL_RUN_NO_SYNC_SHORTCUT, the call
 * is tried without blocking (RWF_NOWAIT, MSG_DONTWAIT) and returns at once
 * if it completes; only an operation that would block goes through the
 * backend (seed 004's synchronous-completion shortcut). An input operation
 * (read, readv, recv, accept) whose previous try by the same task on the
 * same fd would have blocked skips the try, but one time in 8 (a keep-alive
 * connection's next request has rarely come when the task asks for it);
 * the outcome is the same either way. So a try that moves less than the
 * system call would is not the answer: a read or readv of a regular file
 * or block device that stops at a page not in the page cache
 * (RWF_NOWAIT), before the end of the file, reads the rest through the
 * backend, and a recv with MSG_WAITALL on a stream socket (without
 * MSG_PEEK or MSG_DONTWAIT) waits for the whole count on both backends,
 * as recv(2) does. If the rest then fails, times out or is cancelled,
 * the bytes already moved are returned (as read(2) and recv(2) cut short
 * return them), not the error. The rest of a file's read is read at the
 * file position then: a position moved meanwhile by another user of the
 * same open file description (a dup, a forked child, another thread)
 * puts bytes from two places in one buffer, where read(2) would have
 * read one range; readers sharing a description should use offsets
 * (an io_uring READ with its offset, through canal_io_submit). timeout_ns 0 always makes the one
 * try (with or without CANAL_RUN_NO_SYNC_SHORTCUT), then -ETIMEDOUT; a
 * connect's try is a connect that does not block, in a task or not: 0
 * if it completed at once, its error if it failed at once, else
 * -ETIMEDOUT: nothing started (a Unix listener's full backlog), or under
 * way in the kernel (TCP: see above). A read, write, readv or writev of
 * 0 bytes, and a readv or writev of a count of parts out of range (< 0,
 * > IOV_MAX), is answered at once, as the system call answers it (0;
 * -EINVAL), not after a wait for readiness, whatever the timeout, on both
 * backends, in a task or not (but for a file that refuses RWF_NOWAIT,
 * below: once poll(2) says it will not block).
 *
 * A socket's mode (O_NONBLOCK) belongs to its open file description,
 * shared by every thread, dup and forked child. io_uring's connect never
 * touches it. connect(2) in a task on the epoll backend, and outside a
 * task with timeout_ns >= 0, is made on a socket in blocking mode set to
 * non-blocking for the instant of the call (F_GETFL, F_SETFL with
 * O_NONBLOCK, connect(2), F_SETFL back): in that window another user of
 * the socket's description sees it non-blocking (its blocking read, send
 * or accept may fail with EAGAIN), and an F_SETFL of its own made then
 * is undone. No other way exists to start a connect without blocking
 * the loop's thread. Keep other users of a socket off it until its
 * connect returned (the usual order), or use io_uring. Outside a task
 * with timeout_ns < 0, a socket in blocking mode gets connect(2) itself,
 * its mode untouched.
 *
 * Epoll backend: operations wait for readiness and then run; one reading
 * and one writing operation may wait on a given fd per loop at a time
 * (another gets -EBUSY); files that epoll cannot watch (regular files)
 * are read and written synchronously. An operation that must wait on a
 * descriptor the loop cannot watch returns -ENOMEM, nothing done: no
 * memory for the loop's table of descriptors or for the kernel's
 * registration, or the user's limit of epoll watches
 * (fs.epoll.max_user_watches, epoll_ctl's ENOSPC) reached. An epoll
 * descriptor that the loop's set cannot watch (its own set holds the
 * loop's: epoll_ctl's ELOOP; it is the loop's: EINVAL) gets the call's
 * own answer at once: -EINVAL for read, write, readv and writev,
 * -ENOTSOCK for recv and send (io_uring's too for recv and send; its
 * read or write of an epoll descriptor waits for the descriptor's
 * readiness first under CANAL_RUN_NO_SYNC_SHORTCUT). Where no try comes
 * first (CANAL_RUN_NO_SYNC_SHORTCUT, or a skipped input try, above), an
 * operation that fails whatever the readiness still waits for it on
 * epoll, where io_uring fails at once: recv or send of a descriptor that
 * is no socket (a pipe) says -ENOTSOCK once it is ready, a write to a
 * descriptor not open for writing (a pipe's read end) or a read of one
 * not open for reading waits for a readiness that may never come
 * (-ETIMEDOUT, or for ever), where io_uring says -EBADF. canal_io_close of an fd on which
 * tasks of the same loop wait ends their operations with -EBADF (on
 * io_uring it does not: the kernel holds the file for the operations
 * already submitted, which end as the file's other end decides, or by
 * their timeout or cancelling condvar; shut a socket down first,
 * shutdown(2), to end them on both backends). A file
 * that refuses RWF_NOWAIT (a pty, an inotify descriptor) is read or
 * written once poll(2) says it will not block; if another reader or
 * writer of the same file in blocking mode can take the bytes or the room
 * first, give the file O_NONBLOCK, or the loop's thread may block. A
 * listener in blocking mode is made non-blocking for the instant of each
 * accept, so that a connection another acceptor took first cannot block
 * the loop. A connect of a Unix socket in blocking mode to a listener
 * whose backlog is full waits for room as connect(2) would (no readiness
 * tells when: it is started again after pauses of 1 ms, doubling up to
 * 32 ms), until the timeout, the condvar or SO_SNDTIMEO (above).
 *
 * Outside a task (a plain thread or a detached task) the call blocks the
 * thread; timeout_ns applies to readiness (poll(2)), cancel is ignored;
 * an accept on a descriptor that does not listen says accept(2)'s error
 * at once (-ENOTSOCK, -EINVAL, -EOPNOTSUPP), as in a task.
 * A connect there with timeout_ns >= 0, or on a socket in non-blocking
 * mode, is started without blocking and waited for (poll(2), then
 * SO_ERROR) until timeout_ns (-ETIMEDOUT: as above, it may go on); a full
 * Unix backlog is tried again as in a task (a socket in blocking mode;
 * one in non-blocking mode gets connect(2)'s -EAGAIN). With timeout_ns
 * < 0, a socket in blocking mode: connect(2) itself.
 */
ssize_t canal_io_read(int fd, void *buf, size_t len, int64_t timeout_ns,
		      struct canal_cond *cancel);
ssize_t canal_io_write(int fd, const void *buf, size_t len,
		       int64_t timeout_ns, struct canal_cond *cancel);
ssize_t canal_io_readv(int fd, const struct iovec *iov, int iovcnt,
		       int64_t timeout_ns, struct canal_cond *cancel);
ssize_t canal_io_writev(int fd, const struct iovec *iov, int iovcnt,
			int64_t timeout_ns, struct canal_cond *cancel);
ssize_t canal_io_recv(int fd, void *buf, size_t len, int flags,
		      int64_t timeout_ns, struct canal_cond *cancel);
ssize_t canal_io_send(int fd, const void *buf, size_t len, int flags,
		      int64_t timeout_ns, struct canal_cond *cancel);
int canal_io_accept(int fd, struct sockaddr *addr, socklen_t *addrlen,
		    int flags, int64_t timeout_ns, struct canal_cond *cancel);
int canal_io_connect(int fd, const struct sockaddr *addr, socklen_t addrlen,
		     int64_t timeout_ns, struct canal_cond *cancel);
int canal_io_close(int fd);

/*
 * canal_io_poll - wait until fd is ready (CPC's cpc_io_wait): the task is
 * suspended until fd has one of events, as poll(2) on one descriptor
 * says it (level: an fd already ready answers at once), on both backends.
 * For code that calls the system call itself, in non-blocking mode, and
 * waits when it says EAGAIN (a library's socket, sendfile(2), splice(2)).
 *
 * events: POLLIN, POLLPRI, POLLOUT, POLLRDHUP, any of them (POLLERR and
 * POLLHUP are always reported and may be given).
 * Returns the events there (> 0): among those asked for, and POLLERR and
 * POLLHUP. Errors: -EINVAL events asks for none of the four or for
 * another bit; -EBADF fd < 0 or not open; -ETIMEDOUT after timeout_ns
 * (>= 0; < 0: no limit; 0: one look, as poll(2) with 0); -ECANCELED
 * the cancel condvar was signalled first (exactly one outcome, as above);
 * -EBUSY on the epoll backend, when another operation of this loop
 * already waits on fd in the same direction (input events: a read,
 * recv, accept or input poll; POLLOUT: a write, send, connect or output
 * poll); -ENOMEM as above (epoll: fd cannot be watched); on the epoll
 * backend, fd an epoll descriptor that is not ready: the loop's set
 * cannot watch it (-ELOOP, or -EINVAL for the loop's own).
 * As for the other calls, a first look without waiting is made unless
 * CANAL_RUN_NO_SYNC_SHORTCUT (poll(2) with 0; skipped as an input try,
 * above). A descriptor that epoll cannot watch (a regular file) is
 * answered by poll(2) (always ready). Outside a task (a plain thread, a
 * detached task): poll(2) itself, cancel ignored.
 * Thread safety: as the other calls (any task; the fd is the caller's).
 */
int canal_io_poll(int fd, short events, int64_t timeout_ns,
		  struct canal_cond *cancel);

/*
 * canal_io_submit - the generic primitive (CPC's cpc_call_async_prim):
 * start the io_uring operation *sqe, prepared by the caller with any
 * io_uring_prep_* (its user_data is canal's and is overwritten), suspend
 * the task until its completion, and return the completion's res.
 * Cancellable by timeout_ns (>= 0; -ETIMEDOUT) and by the cancel condvar
 * (-ECANCELED) through IORING_OP_ASYNC_CANCEL; exactly one outcome when
 * they race with the completion (see above): if the operation completed
 * first, its res is returned. An operation that posts several completions
 * (a zero-copy send's result and notification, a multishot operation)
 * returns at its last one, with the first one's res: a zero-copy send once
 * the kernel let go of its buffer, a multishot operation once it ends (an
 * error, timeout_ns or cancel). Buffers the SQE names must stay valid until
 * this returns (they do if they live in the task).
 * Errors: -EINVAL sqe NULL, or its flags link it to the next SQE
 * (IOSQE_IO_LINK, IOSQE_IO_HARDLINK), drain the ring (IOSQE_IO_DRAIN: the
 * loop always has a read in flight) or drop its completion
 * (IOSQE_CQE_SKIP_SUCCESS) or select a provided buffer
 * (IOSQE_BUFFER_SELECT: the loop's buffers are its receive streams'),
 * or it is a multishot accept (each further completion would be a
 * connection nobody sees), or an operation on other requests or rings:
 * IORING_OP_ASYNC_CANCEL (by user_data, by fd, ANY, ALL),
 * IORING_OP_POLL_REMOVE, IORING_OP_TIMEOUT_REMOVE (they would cancel or
 * change other tasks' operations or the loop's own; the caller's
 * operation has canal's user_data and no other in flight) and
 * IORING_OP_MSG_RING (its CQE, in a loop's ring, would be taken for one of
 * canal's); these checks come first, whatever timeout_ns;
 * -EPERM outside a task; -EOPNOTSUPP on the
 * epoll backend (readiness cannot express an arbitrary operation); -EBUSY
 * the submission queue is full.
 */
struct io_uring_sqe;
int canal_io_submit(const struct io_uring_sqe *sqe, int64_t timeout_ns,
		    struct canal_cond *cancel);

/* Most operations canal_io_submit_link() chains in one call. */
#define CANAL_IO_LINK_MAX 16u

/*
 * canal_io_submit_link - the generic primitive for a chain: start the n
 * io_uring operations sqes[0..n) as one linked chain (canal sets
 * IOSQE_IO_LINK on every SQE but the last: each starts only once the one
 * before it has succeeded; one that fails ends the chain, and so, by the
 * kernel's rule, does a read or write that moves fewer bytes than asked,
 * a send or receive only when it has MSG_WAITALL; the rest then complete
 * with -ECANCELED without running), suspend the task until every one of
 * them has completed, and store each completion's res in res[i]. The
 * chain costs one suspension and shares the loop's io_uring_enter with
 * the other tasks' operations: a file READ linked to a SEND of it
 * answers a request with no system call of the task's own. user_data of
 * the SQEs is canal's. Every operation must post exactly one completion:
 * zero-copy sends and multishot operations are refused, as are flags
 * that link, drain or drop the completion.
 * Timeout and cancelling condvar as canal_io_submit, for the whole chain:
 * when one of them comes before the last completion, the operations not
 * complete then are cancelled (IORING_OP_ASYNC_CANCEL) and the call still
 * waits for every completion, so that each res[i] is the one outcome of
 * operation i: its result if it ran (a byte count short of the request
 * if it was cut while under way, as a MSG_WAITALL send), -ECANCELED if it
 * did not.
 * Returns 0 once every operation has completed (look at res[] for their
 * results, errors included), or -ETIMEDOUT / -ECANCELED when the timeout
 * or the condvar came first (res[] as above; operations may all have
 * completed anyway, the cancel too late); timeout_ns 0: -ETIMEDOUT at
 * once, nothing started, res untouched. Errors, nothing started: -EINVAL
 * sqes or res NULL, n = 0 or above CANAL_IO_LINK_MAX, an SQE refused
 * above (IOSQE_IO_LINK, IOSQE_IO_HARDLINK, IOSQE_IO_DRAIN,
 * IOSQE_CQE_SKIP_SUCCESS, IOSQE_BUFFER_SELECT; IORING_OP_SEND_ZC,
 * IORING_OP_SENDMSG_ZC; the
 * multishot flags of POLL_ADD, RECV, RECVMSG, ACCEPT, TIMEOUT; the
 * opcodes on other requests or rings refused by canal_io_submit,
 * ASYNC_CANCEL, POLL_REMOVE, TIMEOUT_REMOVE, MSG_RING; an opcode newer
 * than the liburing canal was built with); -EPERM outside a task
 * (or in a detached one); -EOPNOTSUPP on the epoll backend; -EBUSY the
 * submission queue has no room for n SQEs at once.
 */
int canal_io_submit_link(const struct io_uring_sqe *sqes, unsigned n,
			 int32_t *res, int64_t timeout_ns,
			 struct canal_cond *cancel);

/*
 * canal_io_submit_batch - canal_io_submit_link where canal links nothing:
 * the n SQEs go to the kernel in one submission, in order, and the
 * caller's IOSQE_IO_LINK or IOSQE_IO_HARDLINK flags make chains among
 * them (a chain ends at an SQE without either flag); operations in
 * different chains run independently. The shape of a server that closes
 * a file while its contents are being sent: a READ linked to the SEND
 * (READ with IOSQE_IO_LINK), then the file's CLOSE on its own, which
 * runs as soon as it is submitted, without waiting for the SEND. (Linux
 * 5.18 and later take an operation's file when the operation starts, and
 * hold it until it ends; the head of a chain starts at submission, once
 * its chain's last SQE is read and before the SQEs after it are, so a
 * CLOSE after it in the batch does not disturb it. Not so for an
 * operation further down a chain, which starts when the one before it
 * completes, nor for one flagged IOSQE_ASYNC, which starts later in the
 * kernel's workers: a CLOSE that ran first takes their descriptor away,
 * or gives its number to another file.) Every operation must post
 * one completion, the call suspends the task until all have come, res[i]
 * is operation i's, and timeout and cancel are those of
 * canal_io_submit_link, for the whole batch.
 * Returns and errors: those of canal_io_submit_link, where the last SQE
 * may not carry IOSQE_IO_LINK or IOSQE_IO_HARDLINK (-EINVAL: it would tie
 * itself to an unrelated SQE) and the others may.
 */
int canal_io_submit_batch(const struct io_uring_sqe *sqes, unsigned n,
			  int32_t *res, int64_t timeout_ns,
			  struct canal_cond *cancel);

/* ------------------------------------------------------------------ */
/* Receive streams: one receive kept armed for a socket's whole life   */
/* ------------------------------------------------------------------ */

/*
 * A receive stream belongs to one task and one connected socket (TCP,
 * Unix stream): the kernel keeps a receive armed on the socket for as
 * long as the stream is open (io_uring's multishot receive, into buffers
 * its loop provides), where canal_io_recv arms one receive per call. A
 * server that reads a request, answers and reads the next saves the
 * kernel the arming and disarming of a receive per request. Bytes that
 * come while the task does not wait for them are kept in the stream, in
 * order, until it asks (up to 16 buffers of 4 KiB; beyond, they wait in
 * the socket, under its flow control); none is lost or given twice.
 *
 * Rules: only the task that opened a stream may use it (another gets
 * -EPERM); the task stays on its loop while the stream is open (idle
 * loops do not take it) and cannot detach (canal_detach returns -EBUSY);
 * it must close every stream it opened before it ends (a task that ends
 * with a stream open is reported, task id, and the process aborts); close
 * the stream before the socket. Not thread-safe: one task's object.
 *
 * Where the loop cannot keep a receive armed (the epoll backend, a kernel
 * without provided-buffer rings, or the loop's buffers all held by
 * streams whose tasks have not read them yet), a stream's receive is one
 * canal_io_recv: the same results, at the cost of a receive per call.
 * Unix-domain sockets always go that way: Linux's multishot receive can
 * miss the end of input on them (liburing issue 1549), and the task would
 * wait for ever.
 */
struct canal_io_rstream;

/*
 * canal_io_rstream_open - open a receive stream on socket fd for the
 * calling task; *out receives it. Never blocks (the receive is armed at
 * the loop's next pass). Returns 0; -EINVAL out NULL or fd < 0; -EPERM
 * outside a task (a plain thread or a detached task); -ENOMEM.
 */
int canal_io_rstream_open(int fd, struct canal_io_rstream **out);

/*
 * canal_io_rstream_recv - up to len bytes of the stream into buf: the
 * bytes already kept first; if none, the task is suspended until some
 * come. Returns the byte count (> 0), 0 at the end of input (the peer
 * shut down its side: again at every later call), -errno the receive's
 * error (-ECONNRESET, -ETIMEDOUT when the connection itself timed out,
 * TCP_USER_TIMEOUT or keepalive, ...; -ENOMEM when the stream had no
 * memory to keep bytes, which are then lost: again at every later call,
 * once the bytes kept before it were returned), -ETIMEDOUT after
 * timeout_ns (< 0: no
 * limit; 0: only what is kept, or what one try of the socket gives where
 * no receive is kept armed) or -ECANCELED when cancel is signalled, with
 * no byte taken; -EBUSY where a receive per call is made and no
 * submission slot is free, or (epoll) another task already waits to read
 * the fd: nothing taken, try again; (epoll) -ENOMEM also when nothing is
 * there yet and the loop cannot watch the socket (as canal_io_recv):
 * nothing taken or lost, not kept: a later call that finds bytes or the
 * end of input returns them. -EINVAL s or buf NULL or len 0; -EPERM
 * not the stream's task.
 */
ssize_t canal_io_rstream_recv(struct canal_io_rstream *s, void *buf,
			      size_t len, int64_t timeout_ns,
			      struct canal_cond *cancel);

/*
 * canal_io_submit_link_recv - canal_io_submit_link of sqes[0..n), then
 * canal_io_rstream_recv of s into buf, in one suspension of the task
 * where the stream's receive is armed: the shape of a server that sends
 * an answer and waits for the next request (the answer's completions and
 * the request's bytes wake the task once). Input is waited for only once
 * every operation of the chain completed with res >= 0 (a failed or
 * cancelled member ends the call then, with *got the bytes that came
 * meanwhile, if any; a short MSG_WAITALL send is the caller's to check in
 * res[]). Bytes the stream already kept are taken at once, after the
 * chain.
 * Returns 0 once the chain completed and the input came (or the chain
 * failed), or -ETIMEDOUT / -ECANCELED when the timeout or the condvar came
 * first (the chain's members not complete then are cancelled, as in
 * canal_io_submit_link); res[] then holds every operation's one outcome
 * (timeout_ns 0: -ETIMEDOUT at once, nothing started, res untouched). *got
 * is set in every case but -EINVAL and -EPERM below: the bytes
 * received into buf (> 0, even when the timeout came too or the chain
 * failed: never drop them), 0 at the end of input, the stream's -errno,
 * or -EAGAIN: nothing received (the chain failed, or the timeout or
 * condvar came first), or -EBUSY (as canal_io_rstream_recv: try again).
 * Errors, nothing started (*got -EAGAIN but for -EINVAL and -EPERM): those
 * of canal_io_submit_link; -EINVAL s, buf or got NULL or len 0; -EPERM not
 * the stream's task.
 */
int canal_io_submit_link_recv(const struct io_uring_sqe *sqes, unsigned n,
			      int32_t *res, struct canal_io_rstream *s,
			      void *buf, size_t len, ssize_t *got,
			      int64_t timeout_ns, struct canal_cond *cancel);

/*
 * canal_io_submit_batch_recv - canal_io_submit_link_recv with the batch
 * of canal_io_submit_batch (the caller's links) in place of the chain:
 * the input is waited for once every operation of the batch completed
 * with res >= 0. Returns and errors: those of canal_io_submit_link_recv
 * and of canal_io_submit_batch.
 */
int canal_io_submit_batch_recv(const struct io_uring_sqe *sqes, unsigned n,
			       int32_t *res, struct canal_io_rstream *s,
			       void *buf, size_t len, ssize_t *got,
			       int64_t timeout_ns, struct canal_cond *cancel);

/*
 * canal_io_rstream_close - end the stream: its receive is cancelled and
 * the task suspended until the kernel has let go of it (microseconds);
 * bytes kept and not read are dropped. The socket stays open. Returns 0;
 * -EINVAL s NULL; -EPERM not the stream's task (nothing done).
 */
int canal_io_rstream_close(struct canal_io_rstream *s);

/* ------------------------------------------------------------------ */
/* Detach and attach (CPC's cpc_detach / cpc_attach)                   */
/* ------------------------------------------------------------------ */

/*
 * canal_detach - move the calling task to the runtime's pool of native
 * threads (canal_run_options.detach_threads), where it may block (a
 * blocking library call, a long computation) without holding a loop.
 * While detached it is still a task (canal_task_id, canal_spawn work) but
 * channel operations, sleeps and I/O block its thread as in a plain
 * thread. canal_attach - come back to a loop. Return 0; -EPERM outside a
 * task; canal_detach on a detached task and canal_attach on an attached
 * one return 0 and do nothing; canal_detach -EBUSY while the task has a
 * receive stream open (it belongs to the loop: close it first).
 * Each suspends the task until a thread of the other side (a pool
 * thread, its loop) takes it; neither blocks a loop.
 */
int canal_detach(void);
int canal_attach(void);

#ifdef __cplusplus
}
#endif

#endif /* CANAL_TASK_H */
