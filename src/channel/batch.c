/* SPDX-License-Identifier: MIT */
/*
 * batch.c - sending and receiving many elements with one claim of the
 * index per group ("par lots"). Invariants and orderings: internal.h.
 */
#include "internal.h"
#include "quantum.h"
#include "wake.h"

#include <errno.h>
#include <limits.h>

/* Batches                                                             */
/* ------------------------------------------------------------------ */

/* n elements cannot be an array (n * elt_size overflows), or their count
 * cannot be returned (ssize_t). */
static bool bad_count(const struct canal_chan *ch, size_t n)
{
	return n > (size_t)SSIZE_MAX ||
	       (ch->elt_size && n > SIZE_MAX / ch->elt_size);
}

static ssize_t send_batch(struct canal_chan *ch, const void *elts, size_t n,
			  bool try_only)
{
	const char *src = elts;
	size_t done = 0;
	long r = 0;

	if (unlikely(!ch || (!elts && n && ch->elt_size) || bad_count(ch, n)))
		return -EINVAL;
	if (ch->sync) {
		/* A rendezvous per element. */
		for (; done < n; done++) {
			r = canal__send(ch, src + done * ch->elt_size, NULL,
					CANAL_NO_DEADLINE, try_only);
			if (r)
				break;
		}
		return done ? (ssize_t)done : (n ? (ssize_t)r : 0);
	}
	while (done < n) {
		uint64_t pos;
		if (chan_damaged(ch)) {
			r = -EBADMSG;
			break;
		}
		r = canal__ring_claim_send(ch, n - done, &pos,
					   try_only ? 0 : CANAL_NO_DEADLINE,
					   NULL, false);
		if (r == -EAGAIN && !try_only) {
			canal__ring_wait_send(ch, NULL, CANAL_NO_DEADLINE);
			continue;
		}
		if (r < 0)
			break;
		long ok = r;
		for (long i = 0; i < r; i++) {
			uint64_t p = pos + (uint64_t)i;
			/* After a slot lost to a repair (shared channels),
			 * withdraw the rest: a batch is sent as a prefix. A
			 * slot lost is not written (canal__ring_still_claimed:
			 * it may be another claim's by now). */
			if (ok < r) {
				canal__ring_publish(ch, p, STAMP_SKIP);
				continue;
			}
			if (!canal__ring_fill(ch, p,
					      src + (done + (size_t)i) *
							    ch->elt_size))
				ok = i;
		}
		wake_receivers(ch, pos, (uint32_t)r);
		/* The chain after publishing (sendrecv.c, take_claimed). */
		chain_senders(ch, pos + (uint64_t)r);
		done += (size_t)ok;
		if (ok < r) {
			r = -EOWNERDEAD;
			break;
		}
	}
	return done ? (ssize_t)done : (n ? (ssize_t)r : 0);
}

static ssize_t recv_batch(struct canal_chan *ch, void *elts, size_t max,
			  bool try_only)
{
	char *dst = elts;

	if (unlikely(!ch || (!elts && max && ch->elt_size) ||
		     bad_count(ch, max)))
		return -EINVAL;
	if (max == 0)
		return 0;
	if (ch->sync) {
		int r = canal__recv(ch, dst, NULL, CANAL_NO_DEADLINE, try_only);
		return r ? r : 1;
	}
	for (;;) {
		uint64_t pos;
		if (chan_damaged(ch))
			return -EBADMSG;
		long r = canal__ring_claim_recv(ch, max, &pos, try_only,
						try_only ? 0 : CANAL_NO_DEADLINE,
						NULL);
		if (r == -EAGAIN && !try_only) {
			canal__ring_wait_recv(ch, NULL, CANAL_NO_DEADLINE);
			continue;
		}
		if (r < 0)
			return r;
		size_t got = 0;
		for (long i = 0; i < r; i++) {
			uint64_t p = pos + (uint64_t)i;
			struct canal_slot_hdr *s = slot_at(ch, p);
			uint64_t st = atomic_load_explicit(&s->stamp,
							   memory_order_acquire);
			if (stamp_state(st) == STAMP_FULL) {
				copy_elt(dst + got * ch->elt_size,
					 slot_data(ch, s), ch->elt_size);
				got++;
			}
			/* A slot repaired meanwhile (repair.c): what we
			 * copied may be torn, drop it. Later ones are fine:
			 * each slot is released on its own. */
			if (!canal__ring_release(ch, p) &&
			    stamp_state(st) == STAMP_FULL)
				got--;
		}
		wake_senders(ch, pos, (uint32_t)r);
		/* The chain after releasing (sendrecv.c, take_claimed). */
		chain_receivers(ch, pos + (uint64_t)r);
		if (got)
			return (ssize_t)got;
	}
}

/* A shared channel whose mapping was lost meanwhile (sigbus.c). */
static ssize_t damaged_or(const struct canal_chan *ch, ssize_t r)
{
	return ch && chan_damaged(ch) ? -EBADMSG : r;
}

/* A blocking batch counts its elements towards the quantum (quantum.h). */
static ssize_t counted_batch(ssize_t r)
{
	if (r > 0)
		canal__ops_done(r > (ssize_t)UINT32_MAX ? UINT32_MAX : (uint32_t)r);
	return r;
}

CANAL_EXPORT ssize_t canal_send_batch(struct canal_chan *ch, const void *elts,
				size_t n)
{
	return counted_batch(damaged_or(ch, send_batch(ch, elts, n, false)));
}

CANAL_EXPORT ssize_t canal_recv_batch(struct canal_chan *ch, void *elts, size_t max)
{
	return counted_batch(damaged_or(ch, recv_batch(ch, elts, max, false)));
}

CANAL_EXPORT ssize_t canal_try_send_batch(struct canal_chan *ch, const void *elts,
				    size_t n)
{
	return damaged_or(ch, send_batch(ch, elts, n, true));
}

CANAL_EXPORT ssize_t canal_try_recv_batch(struct canal_chan *ch, void *elts,
				    size_t max)
{
	return damaged_or(ch, recv_batch(ch, elts, max, true));
}

