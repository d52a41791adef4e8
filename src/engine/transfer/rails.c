/* SPDX-License-Identifier: MIT */
/*
 * transfer/rails.c - a driver made of several drivers to the same peer
 * (rails: two TCP links on two networks, say), behind the same interface.
 * The engine sees one gate; its packets are spread over the rails, and a
 * rail that fails is dropped without losing a packet.
 *
 * Balance (split-balance): each packet goes to the rail that should
 * deliver it first: the one with the least (bytes in flight on it + the
 * packet) / (its measured bandwidth), trying the others in that order when
 * it cannot take the packet at once (-EAGAIN). Bytes in flight on a rail
 * are those sent on it that the peer has not yet said it received: every
 * acknowledgement carries, per rail, the bytes the peer received on it.
 * The bandwidth of a rail is measured between two acknowledgements, only
 * while it had at least BW_BACKLOG bytes in flight (else the sender, not
 * the rail, set the pace), smoothed (1/4 per sample). Until every live
 * rail has a measure, packets go to the rails in turn (each rail that can
 * take one), which is also how the first measures are made. So a large
 * message (the engine's 64 KiB rendezvous chunks) is divided in
 * proportion to the rails' bandwidths, rails of different kinds (shm and
 * TCP, UCX and TCP) included. Bytes per rail are counted
 * (canal__rails_info) for tests and reports.
 *
 * Reliability across rails: every packet carries a u64 sequence number
 * (little-endian, before the engine's packet). The sender keeps a copy of
 * each packet until the peer acknowledges it (ACK: sequence all-ones, then
 * u64 "every packet below this arrived"); when a rail fails (its driver
 * reports an error: reset, or TCP_USER_TIMEOUT/keepalive for a link that
 * went silent) every unacknowledged packet is sent again on the rails that
 * remain. The receiver delivers each sequence number once: those below
 * rnext, or marked in the seen[] window above it, are duplicates and
 * dropped (and acknowledged again: the acknowledgement of the first copy
 * may have been lost with the failed rail). Packets of different rails
 * arrive in any order: the engine matches messages by their (gate, tag,
 * seq) and rendezvous pieces by cookie, so it does not need the packets
 * in order.
 *
 * A rail whose own health() reports the peer dead (a pidfd on shm, an
 * endpoint error on UCX) is not failed at once: it takes no more sends
 * and is read to its end first (recv() 0 or an error), so that what the
 * peer delivered on it before dying reaches the engine (driver.h,
 * recv()); only then is it failed. A silent TCP rail reads nothing and
 * is failed at its first empty read.
 *
 * Acknowledgement frame: u64 all-ones, u64 "every packet below this
 * arrived", then one u64 per rail: bytes received on it so far (frames of
 * every kind, as the sender counts bytes[]). Acknowledgements may overtake
 * each other on different rails: older values are ignored; a rail's count
 * above what was sent on it is -EPROTO.
 *
 * Bounds: at most UNACKED_MAX packets (and UNACKED_BYTES) unacknowledged,
 * else send() says -EAGAIN; so a sequence number is always below
 * rnext + UNACKED_MAX < rnext + WIN at the receiver, and seen[] (indexed
 * modulo WIN) cannot alias. A number beyond that window is -EPROTO.
 * Acknowledgements go every ACK_EVERY packets received, or from flush()
 * once ACK_DELAY_NS has passed since the last one. idle() means "all
 * acknowledged both ways", so the session's close waits for that (up to
 * its flush limit) before closing the sockets.
 *
 * No concurrency: the session's one-thread rule covers all of it.
 */
#define _GNU_SOURCE
#include "driver.h"

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RAILS_MAX 4
#define WIN 4096u
#define UNACKED_MAX 2048u
#define UNACKED_BYTES ((size_t)16 << 20)
#define ACK_EVERY 16u
#define ACK_DELAY_NS 200000u
#define ACK_SEQ UINT64_MAX
#define RMAX_IOV 65
#define BW_BACKLOG ((uint64_t)65536)

struct rpkt {
	struct rpkt *next;
	uint64_t seq;
	bool resend;       /* its rail failed: send it again */
	size_t len;        /* bytes of data[] (header included) */
	unsigned char data[];
};

struct rails_driver {
	struct canal__driver base;
	int n, live;
	struct canal__driver *sub[RAILS_MAX];
	bool dead[RAILS_MAX];
	/* Its own health() said the peer is dead: nothing more is sent on
	 * it, and it is read to its end (recv() 0 or an error), then failed
	 * with dying_err, so that what the peer delivered on it before dying
	 * is handed out (driver.h, recv()). Counted in live until then. */
	bool dying[RAILS_MAX];
	int dying_err[RAILS_MAX];
	uint64_t bytes[RAILS_MAX];    /* sent on each rail (every frame) */
	uint64_t acked_rx[RAILS_MAX]; /* the peer's received count, last ack */
	uint64_t backlog[RAILS_MAX];  /* in flight at the last ack */
	double bw[RAILS_MAX];         /* bytes/ns measured; 0: not yet */
	uint64_t bw_t;                /* time of the last ack (ns) */
	uint64_t rx[RAILS_MAX];       /* receiver: bytes received per rail */
	int rr_send, rr_recv, cur;
	/* sender */
	uint64_t next_seq;
	struct rpkt *head, *tail; /* unacknowledged, by sequence */
	unsigned unacked;
	size_t unacked_bytes;
	unsigned resends;         /* packets marked resend */
	/* receiver */
	uint64_t rnext;
	uint8_t seen[WIN];
	unsigned since_ack;
	uint64_t last_ack_ns;
	int last_err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void rail_fail(struct rails_driver *d, int r, int err)
{
	if (d->dead[r])
		return;
	d->dead[r] = true;
	d->live--;
	d->last_err = err;
	/* Quiet when nothing is at stake (all acknowledged both ways): the
	 * peer closing its session after ours went idle ends like this. */
	if (d->unacked || d->since_ack)
		fprintf(stderr, "canal engine: rail %d failed (%s): %s\n", r,
			d->sub[r]->why,
			d->live ? "its unacknowledged packets go again on the others"
				: "no rail left");
	/* Which of them arrived is unknown: all unacknowledged go again. */
	for (struct rpkt *p = d->head; p; p = p->next)
		if (!p->resend) {
			p->resend = true;
			d->resends++;
		}
}

static int all_dead(struct rails_driver *d)
{
	snprintf(d->base.why, sizeof d->base.why, "every rail failed (last: %.60s)",
		 d->sub[0]->why);
	return d->last_err ? d->last_err : -ECONNRESET;
}

/* The order in which rails are offered a packet of total bytes: by
 * expected delivery time when every live rail has a measured bandwidth,
 * else in turn from rr_send. Returns the number of rails in order[]. */
static int rail_order(const struct rails_driver *d, size_t total, int *order)
{
	int m = 0;
	bool measured = true;
	for (int k = 0; k < d->n; k++) {
		int r = (d->rr_send + k) % d->n;
		if (d->dead[r] || d->dying[r])
			continue;
		measured = measured && d->bw[r] > 0;
		order[m++] = r;
	}
	if (!measured)
		return m;
	double when[RAILS_MAX];
	for (int i = 0; i < m; i++) {
		int r = order[i];
		when[i] = (double)(d->bytes[r] - d->acked_rx[r] + total) / d->bw[r];
	}
	for (int i = 1; i < m; i++) /* insertion sort, m <= 4 */
		for (int j = i; j > 0 && when[j] < when[j - 1]; j--) {
			double w = when[j];
			when[j] = when[j - 1];
			when[j - 1] = w;
			int r = order[j];
			order[j] = order[j - 1];
			order[j - 1] = r;
		}
	return m;
}

/* Offer v[0..n) (total bytes) to the rails in rail_order(): the rail that
 * took it, -EAGAIN when none could, or -ECONNRESET-like when none is
 * left. */
static int put(struct rails_driver *d, const struct iovec *v, int n,
	       size_t total)
{
	int order[RAILS_MAX];
	int m = rail_order(d, total, order);
	for (int k = 0; k < m; k++) {
		int r = order[k];
		if (d->dead[r])
			continue; /* failed during this loop */
		int err = d->sub[r]->ops->send(d->sub[r], v, n, total);
		if (err == -EAGAIN)
			continue;
		if (err < 0) {
			rail_fail(d, r, err);
			continue;
		}
		d->bytes[r] += total;
		d->rr_send = (r + 1) % d->n;
		return r;
	}
	return d->live ? -EAGAIN : all_dead(d);
}

static int send_ack(struct rails_driver *d)
{
	uint64_t a[2 + RAILS_MAX] = { htole64(ACK_SEQ), htole64(d->rnext) };
	for (int i = 0; i < d->n; i++)
		a[2 + i] = htole64(d->rx[i]);
	size_t len = (size_t)(2 + d->n) * 8;
	struct iovec v = { a, len };
	int r = put(d, &v, 1, len);
	if (r >= 0) {
		d->since_ack = 0;
		d->last_ack_ns = now_ns();
		return 0;
	}
	return r == -EAGAIN ? 0 : r;
}

static int resend(struct rails_driver *d)
{
	for (struct rpkt *p = d->head; p && d->resends; p = p->next) {
		if (!p->resend)
			continue;
		struct iovec v = { p->data, p->len };
		int r = put(d, &v, 1, p->len);
		if (r == -EAGAIN)
			return 0;
		if (r < 0)
			return r;
		p->resend = false;
		d->resends--;
	}
	return 0;
}

static int rails_flush(struct canal__driver *d_)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	for (int r = 0; r < d->n; r++) {
		if (d->dead[r] || d->dying[r])
			continue;
		int err = d->sub[r]->ops->flush(d->sub[r]);
		if (err < 0)
			rail_fail(d, r, err);
	}
	if (!d->live)
		return all_dead(d);
	int err = resend(d);
	if (!err && d->since_ack &&
	    (d->since_ack >= ACK_EVERY || now_ns() - d->last_ack_ns >= ACK_DELAY_NS))
		err = send_ack(d);
	return err;
}

static int rails_send(struct canal__driver *d_, const struct iovec *iov, int n,
		      size_t total)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	if (total > d->base.caps.max_packet || n >= RMAX_IOV)
		return -EMSGSIZE;
	if (!d->live)
		return all_dead(d);
	if (d->resends || d->unacked >= UNACKED_MAX ||
	    d->unacked_bytes + total > UNACKED_BYTES) {
		int err = rails_flush(d_);
		if (err < 0)
			return err;
		if (d->resends || d->unacked >= UNACKED_MAX ||
		    d->unacked_bytes + total > UNACKED_BYTES)
			return -EAGAIN;
	}
	struct rpkt *p = malloc(sizeof *p + 8 + total);
	if (!p)
		return -ENOMEM;
	uint64_t s = htole64(d->next_seq);
	memcpy(p->data, &s, 8);
	size_t off = 8;
	for (int i = 0; i < n; i++) {
		memcpy(p->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	p->len = off;
	p->seq = d->next_seq;
	p->resend = false;
	p->next = NULL;
	struct iovec v = { p->data, p->len };
	int r = put(d, &v, 1, p->len);
	if (r < 0) {
		free(p);
		return r;
	}
	d->next_seq++;
	if (d->tail)
		d->tail->next = p;
	else
		d->head = p;
	d->tail = p;
	d->unacked++;
	d->unacked_bytes += p->len;
	return 0;
}

/* The peer's per-rail received counts rx[0..n): bytes in flight and the
 * bandwidth measures (see Balance above). */
static int acked_bytes(struct rails_driver *d, const uint64_t *rx)
{
	bool newer = false;
	for (int r = 0; r < d->n; r++) {
		if (rx[r] > d->bytes[r]) {
			snprintf(d->base.why, sizeof d->base.why,
				 "acknowledged bytes beyond what was sent on rail %d",
				 r);
			return -EPROTO;
		}
		newer = newer || rx[r] > d->acked_rx[r];
	}
	if (!newer)
		return 0; /* an older acknowledgement, overtaken */
	uint64_t t = now_ns();
	uint64_t dt = t - d->bw_t;
	for (int r = 0; r < d->n; r++) {
		uint64_t got = rx[r] > d->acked_rx[r] ? rx[r] - d->acked_rx[r] : 0;
		if (got)
			d->acked_rx[r] = rx[r];
		if (d->backlog[r] >= BW_BACKLOG && dt > 0) {
			double sample = (double)got / (double)dt;
			d->bw[r] = d->bw[r] > 0 ? 0.75 * d->bw[r] + 0.25 * sample
						: sample;
			if (d->bw[r] <= 0)
				d->bw[r] = 1e-9; /* measured: nothing arrived */
		}
		d->backlog[r] = d->bytes[r] - d->acked_rx[r];
	}
	d->bw_t = t;
	return 0;
}

static int acked(struct rails_driver *d, uint64_t upto)
{
	if (upto > d->next_seq) {
		snprintf(d->base.why, sizeof d->base.why,
			 "acknowledgement beyond what was sent");
		return -EPROTO;
	}
	while (d->head && d->head->seq < upto) {
		struct rpkt *p = d->head;
		d->head = p->next;
		if (!d->head)
			d->tail = NULL;
		d->unacked--;
		d->unacked_bytes -= p->len;
		if (p->resend)
			d->resends--;
		free(p);
	}
	return 0;
}

static int rails_recv(struct canal__driver *d_, const unsigned char **pkt,
		      size_t *len)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	for (int k = 0, budget = 64; k < d->n && budget > 0;) {
		int r = (d->rr_recv + k) % d->n;
		if (d->dead[r]) {
			k++;
			continue;
		}
		const unsigned char *p;
		size_t l;
		int got = d->sub[r]->ops->recv(d->sub[r], &p, &l);
		if (got < 0) {
			if (got == -EPROTO) {
				snprintf(d->base.why, sizeof d->base.why,
					 "rail %d: %.70s", r, d->sub[r]->why);
				return got;
			}
			rail_fail(d, r, got);
			if (!d->live)
				return all_dead(d);
			k++;
			continue;
		}
		if (got == 0) {
			if (d->dying[r]) { /* read to its end */
				rail_fail(d, r, d->dying_err[r]);
				if (!d->live)
					return all_dead(d);
			}
			k++;
			continue;
		}
		budget--;
		uint64_t seq;
		if (l < 8) {
			snprintf(d->base.why, sizeof d->base.why,
				 "rail %d: packet shorter than its header", r);
			return -EPROTO;
		}
		memcpy(&seq, p, 8);
		seq = le64toh(seq);
		if (seq == ACK_SEQ) {
			uint64_t upto, rx[RAILS_MAX];
			if (l != (size_t)(2 + d->n) * 8) {
				snprintf(d->base.why, sizeof d->base.why,
					 "rail %d: bad acknowledgement", r);
				return -EPROTO;
			}
			d->rx[r] += l;
			memcpy(&upto, p + 8, 8);
			for (int i = 0; i < d->n; i++) {
				memcpy(&rx[i], p + 16 + 8 * i, 8);
				rx[i] = le64toh(rx[i]);
			}
			d->sub[r]->ops->release(d->sub[r]);
			int err = acked(d, le64toh(upto));
			if (!err)
				err = acked_bytes(d, rx);
			if (err)
				return err;
			continue;
		}
		if (seq >= d->rnext + WIN) {
			snprintf(d->base.why, sizeof d->base.why,
				 "rail %d: sequence number beyond the window", r);
			return -EPROTO;
		}
		d->rx[r] += l;
		if (seq < d->rnext || d->seen[seq % WIN]) {
			/* A duplicate: the peer sent it again (a rail failed),
			 * maybe because our acknowledgement was lost with that
			 * rail: acknowledge again, or its copy stays
			 * unacknowledged for ever. */
			d->sub[r]->ops->release(d->sub[r]);
			d->since_ack++;
			continue;
		}
		d->seen[seq % WIN] = 1;
		while (d->seen[d->rnext % WIN]) {
			d->seen[d->rnext % WIN] = 0;
			d->rnext++;
		}
		d->since_ack++;
		d->cur = r;
		d->rr_recv = (r + 1) % d->n;
		*pkt = p + 8;
		*len = l - 8;
		return 1;
	}
	return 0;
}

static void rails_release(struct canal__driver *d_)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	d->sub[d->cur]->ops->release(d->sub[d->cur]);
	if (d->since_ack >= ACK_EVERY)
		send_ack(d);
}

static bool rails_buffered(struct canal__driver *d_)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	for (int r = 0; r < d->n; r++)
		if (!d->dead[r] && d->sub[r]->ops->buffered(d->sub[r]))
			return true;
	return false;
}

static bool rails_idle(struct canal__driver *d_)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	/* Idle only once the peer has every packet (acknowledged) and we owe
	 * no acknowledgement: a socket closed with bytes unread would reset,
	 * and the reset can destroy what the peer had not read yet. */
	if (d->live && (d->unacked || d->since_ack))
		return false;
	for (int r = 0; r < d->n; r++)
		if (!d->dead[r] && !d->sub[r]->ops->idle(d->sub[r]))
			return false;
	return true;
}

static int rails_health(struct canal__driver *d_)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	if (!d->live) {
		all_dead(d);
		return -ECONNRESET;
	}
	for (int r = 0; r < d->n; r++) {
		if (d->dead[r] || d->dying[r])
			continue;
		int h = d->sub[r]->ops->health(d->sub[r]);
		if (h < 0) {
			/* Not failed yet: recv() reads it to its end first. */
			d->dying[r] = true;
			d->dying_err[r] = h;
		}
	}
	return d->live ? 0 : -ECONNRESET;
}

static void rails_close(struct canal__driver *d_)
{
	struct rails_driver *d = (struct rails_driver *)d_;
	for (int r = 0; r < d->n; r++)
		d->sub[r]->ops->close(d->sub[r]);
	while (d->head) {
		struct rpkt *p = d->head;
		d->head = p->next;
		free(p);
	}
	free(d);
}

static const struct canal__driver_ops rails_ops = {
	.name = "rails",
	.send = rails_send,
	.flush = rails_flush,
	.recv = rails_recv,
	.release = rails_release,
	.buffered = rails_buffered,
	.idle = rails_idle,
	.health = rails_health,
	.read_peer = NULL,
	.close = rails_close,
};

/* The eager size a rail gives a rails driver: a driver with bulk
 * transfers (UCX) keeps its own eager size small because bulk takes over
 * above it; rails have no bulk, and such a rail carries packets up to its
 * largest (less room for headers, as TCP's eager size leaves). */
static size_t rail_eager_max(const struct canal__driver *s)
{
	if (s->caps.bulk)
		return s->caps.max_packet - 256;
	/* Rails never read the peer's memory: the eager size of the driver
	 * without it (shm's ring: 64 KiB, not the read's 8 KiB). */
	return s->caps.eager_max_noread ? s->caps.eager_max_noread
					: s->caps.eager_max;
}

int canal__rails_new(struct canal__driver **subs, int n,
		     struct canal__driver **out)
{
	if (n < 1 || n > RAILS_MAX)
		return -EINVAL;
	struct rails_driver *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->base.ops = &rails_ops;
	d->base.caps = subs[0]->caps;
	d->base.caps.eager_max = rail_eager_max(subs[0]);
	/* What every rail can carry (they may be of different kinds). */
	for (int i = 1; i < n; i++) {
		if (subs[i]->caps.max_packet < d->base.caps.max_packet)
			d->base.caps.max_packet = subs[i]->caps.max_packet;
		if (rail_eager_max(subs[i]) < d->base.caps.eager_max)
			d->base.caps.eager_max = rail_eager_max(subs[i]);
		d->base.caps.gather = d->base.caps.gather && subs[i]->caps.gather;
		d->base.caps.costly_packets = d->base.caps.costly_packets ||
					      subs[i]->caps.costly_packets;
	}
	d->base.caps.max_packet -= 8; /* our header (TCP leaves 256 spare) */
	d->base.caps.read_peer_memory = false;
	d->base.caps.rts_address = false;
	d->base.caps.eager_max_noread = 0;
	d->base.caps.eager_accept_max = 0; /* one eager size, both sides */
	d->base.caps.rts_min = 0;
	/* A bulk transfer is one rail's (UCX's rendezvous): not spread, not
	 * sent again on another rail; rails carry packets only. */
	d->base.caps.bulk = false;
	/* flush() sends the acknowledgements and what a rail could not take,
	 * even over shm rails: progress must call it with an empty window. */
	d->base.caps.flush_noop = false;
	d->base.peer_pid = subs[0]->peer_pid;
	d->n = d->live = n;
	memcpy(d->sub, subs, (size_t)n * sizeof *subs);
	d->last_ack_ns = d->bw_t = now_ns();
	*out = &d->base;
	return 0;
}

int canal__rails_info(const struct canal__driver *d_, int rail,
		      unsigned long long *bytes, bool *dead)
{
	if (d_->ops != &rails_ops)
		return -EINVAL;
	const struct rails_driver *d = (const struct rails_driver *)d_;
	if (rail < 0 || rail >= d->n)
		return -EINVAL;
	*bytes = d->bytes[rail];
	*dead = d->dead[rail];
	return d->n;
}

struct canal__driver *canal__rails_sub(struct canal__driver *d_, int rail)
{
	if (d_->ops != &rails_ops)
		return NULL;
	struct rails_driver *d = (struct rails_driver *)d_;
	return rail >= 0 && rail < d->n ? d->sub[rail] : NULL;
}
