/* SPDX-License-Identifier: MIT */
/*
 * load.h - do other processes take this machine's CPUs?
 *
 * The wait layer's yield phase (wait.h, phase 3) gives the CPU away and
 * re-checks. That pays while the threads that take the CPU are our own (the
 * one we wait for among them). When another process keeps a CPU busy, a
 * yield hands it the rest of its slice instead: the yielder stays runnable,
 * not asleep, so the store that makes its condition true preempts nothing,
 * and it waits for the next scheduler tick (3.85 ms on average at 250 Hz,
 * counted in the wait layer beside two busy processes:
 * docs/results/chan-busy-20261127). A thread asleep in the kernel is woken
 * by that store instead, and a wake-up on a CPU that is already busy costs
 * no idle exit. So the yield phase asks this first.
 *
 * The verdict comes from the CPU time spent outside this process, over
 * the last window, on the CPUs this thread may run on (/proc/stat's
 * user + nice + system of those CPUs, less CLOCK_PROCESS_CPUTIME_ID):
 * "foreign load" when it exceeds CANAL__FOREIGN_SHARE_PERMILLE of the
 * window times max(1, CPUs - 1) (one busy process on 2 to 4 CPUs; a
 * proportionate share of a larger machine). Interrupt and softirq time,
 * idle and steal are left out: a process's own network traffic or the
 * hypervisor's own use of the host are not a process that a yield would
 * hand the CPU to.
 *
 * A second verdict from the same window: "saturated" when the foreign
 * CPU time exceeds the window times CPUs - 3/4, so that this process had
 * less than a CPU left (two busy processes on 2 CPUs; one is not): the
 * yields that the first verdict still allows (a wait behind another
 * waiter, wait.h) are not made then.
 *
 * Known limits: another process of the same job (the other end of a
 * shared channel) counts as foreign, so two busy cooperating processes
 * park rather than yield; a cgroup CPU quota is not seen (only cpusets
 * are); building /proc/stat costs the kernel time that grows with CPUs
 * and interrupt lines (tens of microseconds on a 2-vCPU VM), paid ten
 * times a second at most, by whichever waiter finds the verdict expired.
 */
#ifndef CANAL_BASE_LOAD_H
#define CANAL_BASE_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#define CANAL__FOREIGN_WINDOW_NS 100000000ull
#define CANAL__FOREIGN_SHARE_PERMILLE 300u

/*
 * A fork()ed child keeps the verdict its parent had at the fork (none if
 * the parent never sampled, as a process that forks before its first wait)
 * and takes no sample of its own for this long after the fork; its first
 * sample then keeps that verdict for one more window (nothing to compare
 * with yet). A sample reads /proc/stat: 5-10 us of kernel time on a 2-vCPU
 * VM, and the pages of sscanf that a child faults in. fwd between
 * processes (1 000 writers and 1 000 readers forked, each waiting through
 * a run of about 250 ms) read it about 4 000 times with a first sample
 * 100 ms after each fork. Ten windows: a child that lives less than a
 * second never samples; one that lives longer decides its yields on a
 * verdict up to this plus a window old (an ancestor's, through a chain of
 * forks less than this apart) before it has its own.
 */
#define CANAL__FORK_QUIET_NS 1000000000ull

/*
 * True when, over the last completed window, other processes used more
 * than the share above. now_ns: canal_now_ns() of the caller. The verdict
 * is cached for CANAL__FOREIGN_WINDOW_NS; when it expires, one caller
 * samples (a read of /proc/stat and a clock_gettime), the others meanwhile
 * get the previous verdict. False until two samples exist (a fork()ed
 * child keeps its parent's verdict meanwhile, and for at least
 * CANAL__FORK_QUIET_NS after the fork: load.c, load_fork_child),
 * and whenever /proc/stat cannot be read. Thread-safe; not a cancellation
 * point (it disables cancellation while it reads); not async-signal-safe
 * (it opens a file).
 */
bool canal__foreign_load(uint64_t now_ns);

/*
 * True when, over the last completed window, other processes left this
 * process less than a CPU: their CPU time exceeded the window times
 * (CPUs - 3/4) (two busy processes on 2 CPUs; one is not). The machine is
 * saturated: a yield can only hand the CPU to them. Read from the window
 * canal__foreign_load last sampled (it never samples itself); false where
 * canal__foreign_load is. Thread-safe, a relaxed load.
 */
bool canal__foreign_saturated(void);

/*
 * The verdict of canal__foreign_load as it stands, without looking at the
 * time or sampling: for a hot path that may act on a verdict up to a
 * window old, because something else on its way asks canal__foreign_load
 * (the wait layer: a wait that acts on this verdict reaches the yield
 * phase, which asks). Thread-safe, a relaxed load.
 */
bool canal__foreign_load_last(void);

/* How many samples this process took or tried (each a read of
 * /proc/stat unless it could not be opened): for the tests. A relaxed
 * load. */
uint64_t canal__foreign_samples(void);

/* The verdict for one window, from its deltas (the arithmetic above; for
 * the tests): busy_ns and own_ns the machine's and the process's CPU time
 * over window_ns, ncpus how many CPUs they were measured on. */
bool canal__foreign_verdict(uint64_t busy_ns, uint64_t own_ns,
			    uint64_t window_ns, unsigned ncpus);
/* The same for canal__foreign_saturated. */
bool canal__saturated_verdict(uint64_t busy_ns, uint64_t own_ns,
			      uint64_t window_ns, unsigned ncpus);

#endif /* CANAL_BASE_LOAD_H */
