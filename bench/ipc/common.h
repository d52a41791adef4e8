/* SPDX-License-Identifier: MIT */
/*
 * common.h - what every IPC benchmark program shares (issue 6).
 *
 * Each program bench/ipc/<method> is common.c plus one file that fills a
 * struct ipc_method: a tiny transport interface. common.c owns everything
 * else, once, for every method: argument parsing, launching the two sides
 * (two processes, or two threads with --threads), pinning, the start
 * barrier, the timed loops, statistics and the RESULTS / JSON output.
 *
 * The two sides: side 0 ("client") times; side 1 ("server") echoes.
 *   pingpong: the client sends a message and waits for the echo, count
 *             times (after warm-up round trips); one timestamp per round
 *             trip goes into a preallocated array.
 *   stream:   the client sends count messages one way; the server receives
 *             them all then sends one message back (the "ack"), which ends
 *             the clock. The samples are the intervals between sends.
 */
#ifndef CANAL_BENCH_IPC_COMMON_H
#define CANAL_BENCH_IPC_COMMON_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h" /* clock, pinning, relax, full I/O, shared memory */

/* Exit statuses (the harness reads them). */
#define IPC_EXIT_OK 0
#define IPC_EXIT_ERROR 1
#define IPC_EXIT_USAGE 2
/* The method cannot run on this machine / build: "SKIPPED (...)". */
#define IPC_EXIT_SKIPPED BENCH_EXIT_SKIPPED
/* The method cannot carry a message of this size: "UNSUPPORTED SIZE (...)". */
#define IPC_EXIT_SIZE 78

enum ipc_mode { IPC_PINGPONG, IPC_STREAM };

struct ipc_opts {
	long count;	 /* timed round trips (pingpong) or messages (stream) */
	long warmup;	 /* untimed ones before */
	size_t size;	 /* bytes per message */
	int threads;	 /* 1: two threads of one process */
	int pin[2];	 /* CPU of side 0 and side 1, -1: not pinned */
	enum ipc_mode mode;
	int json;
};

/* Largest size accepted by -s (the sweep stops at 1 MiB). */
#define IPC_SIZE_MAX ((size_t)64 << 20)

/* The transport interface. Every function returns 0 or a negative errno
 * unless said otherwise; `why` receives a human-readable reason when check
 * refuses (no trailing newline). */
struct ipc_method {
	const char *name;
	/* Optional, in the launching process before anything else: can this
	 * method run with these options here? Returns 0, IPC_EXIT_SKIPPED or
	 * IPC_EXIT_SIZE (or IPC_EXIT_ERROR) and fills why. */
	int (*check)(const struct ipc_opts *o, char *why, size_t whylen);
	/* Optional, in the launching process, before the sides start: create
	 * what both sides share (inherited across fork). *shared is passed to
	 * open() and teardown(). May also return IPC_EXIT_SKIPPED /
	 * IPC_EXIT_SIZE (positive) with why filled. */
	int (*setup)(const struct ipc_opts *o, void **shared, char *why,
		     size_t whylen);
	/* In each side (side 0 or 1), in its own process or thread: connect.
	 * May block until the peer opens too (fifos, sockets). */
	int (*open)(void *shared, const struct ipc_opts *o, int side,
		    void **ctx);
	/* Send exactly len bytes as one message to the peer (handles partial
	 * writes and EINTR). */
	int (*send)(void *ctx, const void *buf, size_t len);
	/* Receive one message into buf (capacity len): returns its length in
	 * bytes (which the caller checks against len) or a negative errno. */
	ssize_t (*recv)(void *ctx, void *buf, size_t len);
	/* Optional, in each side: undo open(). */
	void (*close)(void *ctx);
	/* Optional, in the launching process after both sides ended. */
	void (*teardown)(void *shared);
};

/* The whole program: parse argv, check, setup, run both sides, print.
 * Returns the exit status. */
int ipc_main(int argc, char **argv, const struct ipc_method *m);

/* Helpers for the methods. */

/* Print "<program>: <formatted message>\n" on stderr. */
void ipc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Full reads and writes, memory shared with children, polling: see
 * bench_write_all, bench_read_full, bench_shared_alloc, bench_relax_yield
 * in bench/lib/bench.h. */
/* A unique name for this run: "canal-ipc-<pid>-<tag>". */
void ipc_unique_name(char *buf, size_t len, const char *tag);
/* Directory for files and sockets: $TMPDIR or /tmp. */
const char *ipc_tmpdir(void);
/* Read one number from a /proc file; -1 if it cannot. */
long ipc_read_proc_long(const char *path);

#endif /* CANAL_BENCH_IPC_COMMON_H */
