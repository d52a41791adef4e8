/* SPDX-License-Identifier: MIT */
/*
 * seed.h - what every seed benchmark program shares (cat, copy, fwd and
 * their floors): the message, the counts of the fwd program, the small
 * thread stacks, argument parsing, starting threads and processes. What
 * every benchmark program needs (clock, errors, the skipped exit status,
 * full writes) is in bench/lib/bench.h.
 *
 * Every variant uses these helpers so that no variant is given an
 * advantage: same message, same stack size, same way of starting threads
 * and processes.
 */
#ifndef CANAL_BENCH_SEED_H
#define CANAL_BENCH_SEED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include "bench.h"

/* fwd: writers together send at most FWD_TOTAL messages, the forwarder
 * forwards at most FWD_FORWARD_MAX then closes both channels. */
#define FWD_TOTAL 30000L
#define FWD_FORWARD_MAX 15000L
/* Capacity of the canal channels of fwd (the seed's 256 messages). */
#define FWD_CAPACITY 256
/* Stack of every thread of every variant (10 000 + 10 000 threads). */
#define SEED_STACK_SIZE ((size_t)64 * 1024)
/* cat / copy: size of one chunk. */
#define CC_CHUNK 4096

/* The seed's message: (id, content[64]); 68 bytes, < PIPE_BUF. */
struct fwd_msg {
	int id;
	char content[64];
};
_Static_assert(sizeof(struct fwd_msg) == 68, "fwd_msg is 68 bytes");

/* Counters shared by every thread or process of one fwd run; placed in a
 * MAP_SHARED anonymous mapping so that the process variants use them too. */
struct fwd_shared {
	atomic_long writers_left; /* the last writer to finish closes input */
	atomic_long received;	  /* messages received by all readers */
	atomic_long forwarded;	  /* messages forwarded */
};

struct fwd_shared *fwd_shared_new(long writers);

/* fwd <writers> <readers>: both >= 1 (dies with a usage message). */
void fwd_parse_args(int argc, char **argv, long *writers, long *readers);
/* How many messages writer i (0-based) of n sends: FWD_TOTAL split evenly. */
long fwd_writer_quota(long i, long n);
/* Fill a message of writer id. */
void fwd_msg_fill(struct fwd_msg *m, int id, long seq);
/* Check a received message (cheap: a reader that reads its data). */
int fwd_msg_check(const struct fwd_msg *m);

/* Start n threads running fn(arg_i), arg_i = (char *)args + i * arg_size
 * (or (void *)(intptr_t)i when args is NULL), each with a SEED_STACK_SIZE
 * stack. Dies if a thread cannot be created. */
pthread_t *seed_spawn(size_t n, void *(*fn)(void *), void *args, size_t arg_size);
/* Join the n threads of seed_spawn() and free the array. */
void seed_join(pthread_t *threads, size_t n);

/* fork(), dying on failure. */
pid_t seed_fork(void);
/* Wait for n children; returns the number that did not exit with 0. */
long seed_wait_children(long n);

/* Print "Working..." (flushed) and "End of program". */
void seed_working(void);
void seed_end(void);

#endif
