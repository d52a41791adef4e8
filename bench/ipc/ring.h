/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the shared-memory transport of shm-spin, shm-futex, mmap-spin and
 * eventfd: per direction, a single-producer single-consumer ring of a few
 * fixed-size slots in memory both sides map, and a way to wait:
 *
 *   RING_SPIN     busy polling (a CPU relax per poll);
 *   RING_FUTEX    futex(2) wait on a sequence word, woken only when the
 *                 peer announced it sleeps;
 *   RING_EVENTFD  read(2) on an eventfd, written only when the peer sleeps:
 *                 the eventfd is a token, the data is in the ring, so no
 *                 message is ever lost to counter coalescing.
 *
 * The methods differ only in what backs the memory (POSIX shm, a mapped
 * file, an anonymous shared mapping) and the wait.
 */
#ifndef CANAL_BENCH_IPC_RING_H
#define CANAL_BENCH_IPC_RING_H

#include "common.h"

#include <stddef.h>
#include <stdint.h>

enum ipc_ring_wait { RING_SPIN, RING_FUTEX, RING_EVENTFD };

/* What setup() creates and both sides inherit. */
struct ipc_ring_shared {
	void *base; /* ipc_ring_bytes() bytes, MAP_SHARED, zero-filled */
	size_t len;
	size_t nslots, stride;
	enum ipc_ring_wait wait;
	int efd[4]; /* RING_EVENTFD: direction d: data efd[2d], room efd[2d+1] */
};

/* Bytes of the mapping for messages of size bytes (both directions). */
size_t ipc_ring_bytes(size_t size);
/* Fill r for a zero-filled mapping base of ipc_ring_bytes(size) bytes;
 * creates the eventfds for RING_EVENTFD. Returns 0 or -errno. */
int ipc_ring_init(struct ipc_ring_shared *r, void *base, size_t size,
		  enum ipc_ring_wait wait);
/* Close the eventfds (not the mapping). */
void ipc_ring_fini(struct ipc_ring_shared *r);

/* The transport functions, shared is a struct ipc_ring_shared *. */
int ipc_ring_open(void *shared, const struct ipc_opts *o, int side,
		  void **ctx);
int ipc_ring_send(void *ctx, const void *buf, size_t len);
ssize_t ipc_ring_recv(void *ctx, void *buf, size_t len);
void ipc_ring_close(void *ctx);

#endif
