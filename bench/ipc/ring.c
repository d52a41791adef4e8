/* SPDX-License-Identifier: MIT */
/* ring.c - see ring.h. */
#define _GNU_SOURCE
#include "ring.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CACHELINE 64
#define RING_SLOTS_MAX 8
#define RING_BYTES_TARGET ((size_t)16 << 20)

/* One direction. head: messages published; tail: messages consumed. The
 * *_seq words are the futex words; the *_waiting flags say that the
 * consumer (or the producer, ring full) sleeps or is about to. */
struct ring_hdr {
	_Alignas(CACHELINE) _Atomic uint64_t head;
	_Atomic uint32_t head_seq;
	_Atomic uint32_t cons_waiting;
	_Alignas(CACHELINE) _Atomic uint64_t tail;
	_Atomic uint32_t tail_seq;
	_Atomic uint32_t prod_waiting;
};

/* Each slot: the message length, then the message. */
struct slot {
	uint64_t len;
	unsigned char data[];
};

struct ring_ctx {
	struct ring_hdr *out, *in;
	unsigned char *out_slots, *in_slots;
	uint64_t head; /* of out, mine */
	uint64_t tail; /* of in, mine */
	size_t nslots, stride;
	enum ipc_ring_wait wait;
	int futex_op_wait, futex_op_wake;
	int out_data, out_room, in_data, in_room; /* eventfds */
};

static size_t round_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

static void geometry(size_t size, size_t *nslots, size_t *stride,
		     size_t *dir_bytes)
{
	size_t st = round_up(sizeof(struct slot) + size, CACHELINE);
	size_t n = RING_BYTES_TARGET / 2 / st;

	if (n > RING_SLOTS_MAX)
		n = RING_SLOTS_MAX;
	if (n < 2)
		n = 2;
	*nslots = n;
	*stride = st;
	*dir_bytes = round_up(sizeof(struct ring_hdr), CACHELINE) + n * st;
}

size_t ipc_ring_bytes(size_t size)
{
	size_t n, st, dir;

	geometry(size, &n, &st, &dir);
	return 2 * dir;
}

int ipc_ring_init(struct ipc_ring_shared *r, void *base, size_t size,
		  enum ipc_ring_wait wait)
{
	size_t dir;

	memset(r, 0, sizeof(*r));
	r->base = base;
	geometry(size, &r->nslots, &r->stride, &dir);
	r->len = 2 * dir;
	r->wait = wait;
	for (int i = 0; i < 4; i++)
		r->efd[i] = -1;
	if (wait == RING_EVENTFD) {
		for (int i = 0; i < 4; i++) {
			r->efd[i] = eventfd(0, EFD_CLOEXEC);
			if (r->efd[i] < 0) {
				int err = errno;
				ipc_ring_fini(r);
				return -err;
			}
		}
	}
	return 0;
}

void ipc_ring_fini(struct ipc_ring_shared *r)
{
	for (int i = 0; i < 4; i++) {
		if (r->efd[i] >= 0)
			close(r->efd[i]);
		r->efd[i] = -1;
	}
}

int ipc_ring_open(void *shared, const struct ipc_opts *o, int side,
		  void **ctxp)
{
	const struct ipc_ring_shared *r = shared;
	struct ring_ctx *c = calloc(1, sizeof(*c));
	size_t dir = r->len / 2;
	unsigned char *d0 = r->base, *d1 = d0 + dir;
	size_t hdr = round_up(sizeof(struct ring_hdr), CACHELINE);

	if (!c)
		return -ENOMEM;
	/* Direction 0: client -> server; direction 1: server -> client. */
	unsigned char *out = side == 0 ? d0 : d1, *in = side == 0 ? d1 : d0;
	c->out = (struct ring_hdr *)out;
	c->in = (struct ring_hdr *)in;
	c->out_slots = out + hdr;
	c->in_slots = in + hdr;
	c->nslots = r->nslots;
	c->stride = r->stride;
	c->wait = r->wait;
	/* Threads share one mm: private futexes (as canal's thread channels
	 * use); processes need shared ones. */
	c->futex_op_wait = FUTEX_WAIT | (o->threads ? FUTEX_PRIVATE_FLAG : 0);
	c->futex_op_wake = FUTEX_WAKE | (o->threads ? FUTEX_PRIVATE_FLAG : 0);
	int od = side == 0 ? 0 : 2, id = side == 0 ? 2 : 0;
	c->out_data = r->efd[od];
	c->out_room = r->efd[od + 1];
	c->in_data = r->efd[id];
	c->in_room = r->efd[id + 1];
	*ctxp = c;
	return 0;
}

void ipc_ring_close(void *ctx)
{
	free(ctx);
}

static void futex_wait(const struct ring_ctx *c, _Atomic uint32_t *w,
		       uint32_t val)
{
	syscall(SYS_futex, w, c->futex_op_wait, val, NULL, NULL, 0);
}

static void futex_wake(const struct ring_ctx *c, _Atomic uint32_t *w)
{
	syscall(SYS_futex, w, c->futex_op_wake, 1, NULL, NULL, 0);
}

static int efd_wait(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

static int efd_post(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

/*
 * Wait until *word != val... expressed for both waits below: ready() is
 * "the counter moved". The protocol (futex and eventfd alike): announce
 * *waiting = 1, re-check, sleep; the other side publishes its counter, then
 * reads *waiting and wakes only if set. Both sides use sequentially
 * consistent operations, so either the waiter sees the new counter or the
 * other side sees the flag: no lost wake-up. Spurious wake-ups (a stale
 * eventfd token) only cost one more loop.
 */
static int wait_change(const struct ring_ctx *c, _Atomic uint64_t *counter,
		       uint64_t blocked, _Atomic uint32_t *seq,
		       _Atomic uint32_t *waiting, int efd)
{
	unsigned long spins = 0;
	int rc = 0;

	while (atomic_load_explicit(counter, memory_order_acquire) == blocked) {
		if (c->wait == RING_SPIN) {
			bench_relax_yield(&spins);
			continue;
		}
		uint32_t s = atomic_load(seq);
		atomic_store(waiting, 1);
		if (atomic_load(counter) == blocked) {
			if (c->wait == RING_FUTEX)
				futex_wait(c, seq, s);
			else
				rc = efd_wait(efd);
		}
		atomic_store(waiting, 0);
		if (rc)
			return rc;
	}
	return 0;
}

static int post_change(const struct ring_ctx *c, _Atomic uint32_t *seq,
		       _Atomic uint32_t *waiting, int efd)
{
	if (c->wait == RING_SPIN)
		return 0;
	atomic_fetch_add(seq, 1);
	if (atomic_load(waiting)) {
		if (c->wait == RING_FUTEX)
			futex_wake(c, seq);
		else
			return efd_post(efd);
	}
	return 0;
}

int ipc_ring_send(void *ctx, const void *buf, size_t len)
{
	struct ring_ctx *c = ctx;
	struct ring_hdr *h = c->out;
	int rc;

	if (len + sizeof(struct slot) > c->stride)
		return -EMSGSIZE;
	/* Full: wait until the consumer's tail passes head - nslots. */
	if (c->head - atomic_load_explicit(&h->tail, memory_order_acquire) >=
	    c->nslots) {
		rc = wait_change(c, &h->tail, c->head - c->nslots, &h->tail_seq,
				 &h->prod_waiting, c->out_room);
		if (rc)
			return rc;
	}
	struct slot *s = (struct slot *)(c->out_slots +
					 (c->head % c->nslots) * c->stride);
	s->len = len;
	memcpy(s->data, buf, len);
	c->head++;
	if (c->wait == RING_SPIN)
		atomic_store_explicit(&h->head, c->head, memory_order_release);
	else
		atomic_store(&h->head, c->head);
	return post_change(c, &h->head_seq, &h->cons_waiting, c->out_data);
}

ssize_t ipc_ring_recv(void *ctx, void *buf, size_t len)
{
	struct ring_ctx *c = ctx;
	struct ring_hdr *h = c->in;
	int rc;

	rc = wait_change(c, &h->head, c->tail, &h->head_seq, &h->cons_waiting,
			 c->in_data);
	if (rc)
		return rc;
	const struct slot *s = (const struct slot *)(c->in_slots +
			(c->tail % c->nslots) * c->stride);
	size_t n = (size_t)s->len;
	memcpy(buf, s->data, n < len ? n : len);
	c->tail++;
	if (c->wait == RING_SPIN)
		atomic_store_explicit(&h->tail, c->tail, memory_order_release);
	else
		atomic_store(&h->tail, c->tail);
	rc = post_change(c, &h->tail_seq, &h->prod_waiting, c->in_room);
	return rc ? rc : (ssize_t)n;
}
