/* SPDX-License-Identifier: MIT */
/*
 * transport.h - the seed programs around one table of transports, as
 * bench/ipc is: one main per program (fwd.c, cc.c) and, per transport, the
 * few operations that differ (fwd_canal.c, fwd_fd.c, fwd_floor.c,
 * cc_canal.c, cc_fd.c).
 *
 * A program is built once per variant from the same source, with its name
 * in SEED_PROGRAM ("fwd-canal-sync", "copy-socket-proc"): <program>-
 * <transport>[-proc]. "-proc" runs the sides as processes (forked from the
 * forwarder, or the reader of cat/copy) instead of threads; the transport's
 * setup() is then told to share its channels between processes.
 */
#ifndef CANAL_BENCH_SEED_TRANSPORT_H
#define CANAL_BENCH_SEED_TRANSPORT_H

#include <stdint.h>

#include "seed.h"

enum seed_role { SEED_WRITER, SEED_READER, SEED_FORWARDER };

/* fwd: writers -> in -> forwarder -> out -> readers. */
struct fwd_transport {
	const char *name; /* "canal-sync" */
	/* Create the channels in and out (shared: between processes).
	 * Returns 0, or BENCH_EXIT_SKIPPED after printing why. */
	int (*setup)(int shared);
	/* Processes only, optional: in a child of the given role (or, for
	 * SEED_FORWARDER, in the parent once every child is forked), let go
	 * of the channel ends that role does not use. */
	void (*keep_only)(enum seed_role role);
	/* Send quota messages of writer id; stop early if in is closed. */
	void (*writer)(int id, long quota);
	/* The last writer has finished: close in, so that the forwarder stops
	 * even if fewer than FWD_FORWARD_MAX messages came. */
	void (*writers_done)(int shared);
	/* Receive until out is closed and drained; returns the count and adds
	 * corrupted messages (fwd_msg_check) to *bad. */
	long (*reader)(long *bad);
	/* Forward up to max messages, then close in and out; returns how many
	 * were forwarded. */
	long (*forward)(long max);
	/* Optional: once every thread is joined or every child waited for. */
	void (*teardown)(int shared);
};

/* cat and copy: a reading side -> one channel -> a writing side. */
struct cc_chunk {
	uint32_t len;
	char data[CC_CHUNK];
};

struct cc_transport {
	const char *name; /* "pipe" */
	/* Create the channel; 0 or BENCH_EXIT_SKIPPED after printing why. */
	int (*setup)(int shared);
	/* Processes only, optional: after fork, in the producer (1) or the
	 * consumer (0), let go of the end this side does not use. */
	void (*keep_only)(int producer);
	/* Producer: send one chunk. 0, or -EPIPE when the consumer gave up
	 * (it said why); dies on any other error. */
	int (*send)(const struct cc_chunk *c);
	/* Producer: end of file. */
	void (*end)(void);
	/* Consumer: receive one chunk: 1, or 0 at end of file; dies on
	 * errors. */
	int (*recv)(struct cc_chunk *c);
	/* Consumer: it stops (end of file or failure); a producer still
	 * sending gets -EPIPE. */
	void (*consumer_done)(void);
	/* Optional: after both sides ended. */
	void (*teardown)(void);
};

/* The transports, by name (NULL if unknown). */
const struct fwd_transport *fwd_transport_find(const char *name);
const struct cc_transport *cc_transport_find(const char *name);

/* The transport tables of each file. */
extern const struct fwd_transport fwd_canal_transports[];
extern const struct fwd_transport fwd_fd_transports[];
extern const struct fwd_transport fwd_floor_transport;
extern const struct cc_transport cc_canal_transport;
extern const struct cc_transport cc_fd_transports[];

/* Split SEED_PROGRAM "<program>-<transport>[-proc]": the transport's name
 * into buf, *proc set; dies when it does not start with program. */
void seed_program_name(const char *full, const char *program, char *buf,
		       size_t len, int *proc);

#endif
