/* SPDX-License-Identifier: MIT */
/*
 * channel/quantum.h - the operation quantum: a task lets the other ready
 * tasks of its loop run (base/park.h, yield_to_ready) after every
 * CANAL__OP_QUANTUM elements it sent or received through the blocking
 * forms (canal_send, canal_recv, their timed forms, the blocking batches;
 * not the try forms, which never let others run on a buffered channel,
 * nor the single-copy reserve/borrow, which hand the caller a slot).
 *
 * Tasks are not preempted: a sender into a wide channel never waits and
 * would hold its loop until it is done, and with two loops each running
 * such tasks both CPUs would work the same end of the ring at once (every
 * claim moving its lines between the CPUs) while the other end waits in
 * the queues. Go's scheduler preempts every 10 ms; a yield to a ready task
 * costs a switch (about 10 ns), once per CANAL__OP_QUANTUM elements.
 * Measured (Intel Xeon host, 2 loops, 4 senders and 4 receivers of 1 M
 * messages, capacity 1 M, 8 interleaved runs, with ring.c's lost_race):
 * quanta of 64 elements: mpmc 0.065 s, mpsc 0.082; 256: 0.054, 0.051;
 * 1024: 0.048, 0.044; 4096: 0.050, 0.042; none: 0.064 (0.03-0.24,
 * bimodal), 0.040; Go 0.099, 0.088.
 *
 * Counted only after an operation succeeded (nothing is held then: any
 * task may run), per thread (a loop's tasks share the count); for a plain
 * thread, whose parker has no yield_to_ready, it is a countdown and
 * nothing more. Initial-exec TLS: no call to find the count, in the
 * shared library too (each thread starts with a full quantum).
 */
#ifndef CANAL_CHANNEL_QUANTUM_H
#define CANAL_CHANNEL_QUANTUM_H

#include "base/compiler.h"

#include <stdint.h>

#define CANAL__OP_QUANTUM 1024u

extern _Thread_local uint32_t canal__op_budget
	__attribute__((tls_model("initial-exec")));

/* The quantum is used up: a full one again, and a yield to ready tasks. */
void canal__quantum_over(void);

/* n elements sent or received (n >= 1). */
static inline void canal__ops_done(uint32_t n)
{
	if (unlikely(canal__op_budget <= n))
		canal__quantum_over();
	else
		canal__op_budget -= n;
}

/* r: a blocking single-element operation's result; counted when 0. */
static inline int canal__counted(int r)
{
	if (r == 0)
		canal__ops_done(1);
	return r;
}

#endif /* CANAL_CHANNEL_QUANTUM_H */
