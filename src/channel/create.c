/* SPDX-License-Identifier: MIT */
/*
 * create.c - channel geometry, creation of thread channels and of anonymous
 * shared channels (CANAL_SHARED: usable across fork()), and destruction.
 * Memory files and validation are in segment.c, names in names.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Thread channels up to this size come from the heap, larger ones from
 * mmap (a zero-filled ring is a valid empty ring, see internal.h). Either
 * way the whole ring is committed and written at creation, as Go's make
 * and crossbeam's bounded do: left lazy, a receiver polling an untouched
 * slot maps the shared zero page, and the sender's first write to it is a
 * copy-on-write fault that shoots the old mapping out of the receiver's
 * TLB with an inter-processor interrupt: measured here, a ring of 1M
 * 8-byte slots moved 130 ns per message lazily and 30 ns populated. */
#define HEAP_ALLOC_MAX ((size_t)256 << 10)

/* Largest segment accepted: beyond this a request is absurd, not merely too
 * big for this machine (x86-64 user space is 128 TiB). */
#define CHAN_BYTES_MAX ((uint64_t)1 << 46)

/* Shared channels encode 31 bits of position in a slot's owner word. */
#define SHARED_CAPACITY_MAX ((size_t)1 << 30)

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

int canal__chan_geometry(size_t elt_size, size_t capacity, bool shared,
			 struct chan_geometry *g)
{
	if (capacity > CANAL_CAPACITY_MAX || elt_size > CANAL_ELT_SIZE_MAX ||
	    (shared && capacity > SHARED_CAPACITY_MAX))
		return -EINVAL;
	g->ring = capacity ? capacity : CANAL_SYNC_RING;
	g->slot_hdr = shared ? 16 : 8;
	g->stride = round_up(g->slot_hdr + elt_size, 8);
	g->slots_offset = round_up(sizeof(struct chan_state), CANAL_CACHELINE);
	if (g->ring > (CHAN_BYTES_MAX - g->slots_offset) / g->stride)
		return -EINVAL;
	g->map_size = round_up(g->slots_offset + g->ring * g->stride,
			       shared ? (uint64_t)sysconf(_SC_PAGESIZE)
				      : CANAL_CACHELINE);
	return 0;
}

void canal__chan_state_init(struct chan_state *st, size_t elt_size,
			    size_t capacity, unsigned flags,
			    const struct chan_geometry *g)
{
	st->version = CANAL_LAYOUT_VERSION;
	st->flags = flags;
	st->elt_size = elt_size;
	st->capacity = capacity;
	st->ring = g->ring;
	st->stride = g->stride;
	st->slot_hdr = g->slot_hdr;
	st->slots_offset = g->slots_offset;
	st->map_size = g->map_size;
	/* The magic last, with release: an opener that sees it (acquire)
	 * sees the rest of the header. */
	atomic_store_explicit((_Atomic uint64_t *)&st->magic, CANAL_MAGIC,
			      memory_order_release);
}

void canal__chan_handle_init(struct canal_chan *ch, struct chan_state *st,
			     int fd, bool shared, bool mmapped)
{
	ch->st = st;
	ch->slots = (char *)st + st->slots_offset;
	ch->elt_size = st->elt_size;
	ch->capacity = st->capacity;
	ch->ring = st->ring;
	ch->pow2 = (ch->ring & (ch->ring - 1)) == 0;
	ch->ring_mask = ch->pow2 ? ch->ring - 1 : 0;
	ch->ring_magic = ch->pow2 ? 0 : ~(unsigned __int128)0 / ch->ring + 1;
	ch->stride = st->stride;
	ch->slot_hdr = st->slot_hdr;
	ch->sync = st->capacity == 0;
	ch->shared = shared;
	ch->mmapped = mmapped;
	ch->map_size = st->map_size;
	ch->fd = fd;
	ch->lock_map = NULL;
}

CANAL_EXPORT struct canal_chan *canal_chan_create(size_t elt_size, size_t capacity,
					    unsigned flags)
{
	struct chan_geometry g;
	bool shared = flags & CANAL_SHARED;
	int err;

	if (flags & ~(unsigned)CANAL_SHARED) {
		errno = EINVAL;
		return NULL;
	}
	if ((err = canal__chan_geometry(elt_size, capacity, shared, &g))) {
		errno = -err;
		return NULL;
	}
	struct canal_chan *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	struct chan_state *st;
	int fd = -1;
	bool mapped = shared || g.map_size > HEAP_ALLOC_MAX;
	if (shared) {
		fd = canal__segment_create_fd(g.map_size, "canal");
		if (fd < 0) {
			free(ch);
			errno = -fd;
			return NULL;
		}
		st = mmap(NULL, g.map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			  fd, 0);
	} else if (mapped) {
		/* MAP_POPULATE on a private writable mapping faults every
		 * page in for writing (no zero-page mappings left). */
		st = mmap(NULL, g.map_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	} else {
		st = aligned_alloc(CANAL_CACHELINE, g.map_size);
		if (st) {
			memset(st, 0, g.map_size);
		} else {
			st = MAP_FAILED;
			errno = ENOMEM; /* (aligned_alloc need not set it) */
		}
	}
	if (st == MAP_FAILED) {
		/* mmap's own errno (channel.h), not ENOMEM whatever the
		 * cause: EAGAIN (mlockall(MCL_FUTURE) and RLIMIT_MEMLOCK),
		 * EPERM (a security module) are no lack of memory
		 * (test_errmap_chan_mmap). close() must not change it. */
		int e = errno;
		if (fd >= 0)
			close(fd);
		free(ch);
		errno = e;
		return NULL;
	}
	canal__chan_state_init(st, elt_size, capacity, flags, &g);
	canal__chan_handle_init(ch, st, fd, shared, mapped);
	if (shared && (err = canal__attach(ch))) {
		canal_chan_destroy(ch);
		errno = -err;
		return NULL;
	}
	return ch;
}

CANAL_EXPORT void canal_chan_destroy(struct canal_chan *ch)
{
	if (!ch)
		return;
	if (ch->shared)
		canal__sigbus_unguard(ch);
	if (ch->mmapped)
		munmap(ch->st, ch->map_size);
	else
		free(ch->st);
	if (ch->shared)
		canal__detach(ch); /* its descriptors, without the others' locks */
	free(ch);
}
