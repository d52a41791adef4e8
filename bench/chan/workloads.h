/* SPDX-License-Identifier: MIT */
/*
 * workloads.h - the channel workloads of canal's channel benchmarks, shared
 * by chanbench-canal (canal against Go, crossbeam-channel and flume, issue
 * 5) and canal-micro (ns per message, issue 2). The Go and Rust peers
 * (bench/peers/) implement the same workloads; docs/bench-chan.md defines
 * them.
 *
 * Every workload moves messages of 0, 8 or 64 bytes; a message carries its
 * sequence number in each of its 8-byte words. Timing covers the whole
 * workload, channel creation and thread start included, as the peers do.
 */
#ifndef CANAL_BENCH_WORKLOADS_H
#define CANAL_BENCH_WORKLOADS_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

/* wl_wait_value spins until *line == want (the cache-line round trips:
 * threads here, processes in canal-micro), yielding now and then so that
 * two threads or processes sharing one CPU still progress. */
static inline void wl_wait_value(_Atomic uint64_t *line, uint64_t want)
{
	unsigned spins = 0;

	while (atomic_load_explicit(line, memory_order_acquire) != want) {
		bench_relax();
		if (++spins % 4096 == 0)
			sched_yield();
	}
}

enum wl_kind {
	WL_SEQ,		/* one thread sends min(cap, N) then receives them, to N */
	WL_SPSC,	/* one sender, one receiver, N messages */
	WL_MPSC,	/* T senders of N/T, one receiver */
	WL_MPMC,	/* T senders of N/T, T receivers of N/T */
	WL_SELECT_RX,	/* T senders on T channels, one receiver selecting */
	WL_SELECT_BOTH, /* T senders and T receivers all selecting over T */
	WL_PING_PONG,	/* N/2 round trips between two threads */
	WL_NKINDS
};

/* Largest message (bytes) and largest T. */
#define WL_MSG_MAX 64
#define WL_THREADS_MAX 64

struct wl_params {
	size_t n;	 /* messages (ping_pong: 2 per round trip) */
	size_t threads;	 /* T */
	size_t msg_size; /* 0, 8 or 64 */
	size_t capacity; /* of every channel */
	int pin;	 /* ping_pong: pin the two threads to two CPUs */
	int tasks;	 /* 1: canal tasks (canal_run, canal_spawn) in place of
			  * threads; the timing starts inside the main task */
};

/* "seq", "spsc", ... ; wl_kind_parse returns -1 for an unknown name. */
const char *wl_kind_name(enum wl_kind kind);
int wl_kind_parse(const char *name);

/* Number of messages a workload moves with these parameters (the divisor
 * of its ns per message): N for seq/spsc, T * (N / T) for the multi-thread
 * ones, 2 * (N / 2) for ping_pong. */
size_t wl_messages(enum wl_kind kind, const struct wl_params *p);

/* 1 when the workload can run at p->capacity (seq cannot at 0). */
int wl_possible(enum wl_kind kind, const struct wl_params *p);

/* Run a workload once; returns the elapsed seconds. Dies (message on
 * stderr, exit 1) when a channel operation fails. With p->tasks, the
 * workload runs in a canal runtime (one loop per CPU): the main thread's
 * part in the main task, every other thread's part in a task of its own,
 * joined through a channel; timing starts in the main task (Go's runtime
 * start is not timed either) and pinning is ignored. */
double wl_run(enum wl_kind kind, const struct wl_params *p);

/* The floor of ping_pong: rounds round trips of a value bouncing between
 * two threads through one cache line (atomics, no channel), the threads
 * pinned to two CPUs when pin is set and two CPUs are allowed. Returns the
 * elapsed seconds. */
double wl_cacheline_roundtrips(size_t rounds, int pin);

/* Parse a decimal count (dies with a message on a bad one). */
size_t wl_parse_count(const char *s, const char *what);

#endif /* CANAL_BENCH_WORKLOADS_H */
