/* SPDX-License-Identifier: MIT */
/*
 * transfer/accept.c - the accepting side of the TCP connection set-up
 * (tcp.c): the connections of the higher ranks are taken from the
 * listening socket and their openings (auth.h) read all at once, each as
 * its bytes come.
 *
 * Why all at once: reading the opening of one connection at a time let
 * whatever connected first hold every connection behind it. A stray local
 * process that connected to the listener and sent a hello's bytes one
 * every 3 s held the loop for half a minute (the limit was per recv()
 * call), while the real peer behind it in the backlog heard no verdict
 * and gave up, and so did this rank, long after connect_timeout_ms
 * (test_rev_tcp_slow_hello). Now a slow or silent connection holds only
 * its own slot: it is closed (and logged) when its opening fails, at its
 * own deadline (CANAL__OPENING_WAIT_MS after its accept, or the open's
 * deadline if sooner), or when every peer has connected.
 *
 * Invariants (one thread, the opening rank's; nothing here is shared):
 *  - Every accepted descriptor is in exactly one place: open[0, n) (its
 *    opening under way), fds[] (passed and answered CANAL__V_OK: the
 *    caller's from then on), or closed.
 *  - fds[r] >= 0 only for r in [lo, hi), and only once: a second opening
 *    that passes for a rank already there is answered CANAL__V_TWICE and
 *    closed (the first keeps the gate).
 *  - open[] is in accept order, so open[0] is the oldest; n <= cap, cap
 *    being the peers still missing at the start plus STRANGER_SLOTS.
 *  - Each round's poll ends by the earliest deadline of the open and of
 *    the openings, so an opening past its deadline fails in the round
 *    after it, and the open returns -ETIMEDOUT within a round of its own.
 *  - The listener is non-blocking and drained (accept until EAGAIN) in
 *    every round it is readable; a full table closes its oldest opening to
 *    make room rather than leave the listener unserved, so no number of
 *    strangers keeps a real peer in the backlog. A real peer closed so
 *    (a hello late on a lossy link, among a flood) sees end of stream
 *    without a verdict and dials again (auth.h).
 */
#define _GNU_SOURCE
#include "auth.h"
#include "driver.h"
#include "exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * Openings in flight beyond one per missing peer. A real peer sends its
 * hello right after its connect, so its opening usually passes in the
 * round it is accepted and holds a slot for a round trip at most; what
 * lingers is a stranger or a hello late on a lossy link. Every peer of the
 * job may be in flight at once (a job's ranks all dial at start), so those
 * slots are theirs; 64 more let as many strangers linger without evicting
 * anyone, and bound the descriptors and memory (some 300 bytes each) a
 * flood of them can take.
 */
#define STRANGER_SLOTS 64

/* Log that the connection on fd is refused (closed) and why. */
static void log_refusal(int rank, int fd, const char *why)
{
	struct sockaddr_in from = { 0 };
	socklen_t fl = sizeof from;
	char a[64] = "?";
	if (getpeername(fd, (struct sockaddr *)&from, &fl) == 0)
		inet_ntop(AF_INET, &from.sin_addr, a, sizeof a);
	fprintf(stderr,
		"canal engine: rank %d: refused a connection from %s:%d: %s\n",
		rank, a, ntohs(from.sin_port), why);
}

/* Close an opening that has not passed, and say why. */
static void drop(int rank, struct canal__auth_opening *o, const char *why)
{
	log_refusal(rank, o->fd, why);
	close(o->fd);
}

/* Advance o: false while its opening goes on (o stays in the table);
 * true once it is settled: its descriptor given to fds[] (one more peer
 * connected: *missing decremented) or closed and logged. */
static bool settle(int rank, struct canal__auth_opening *o, int *fds,
		   int *missing)
{
	int err = canal__auth_opening_step(o);
	if (err == -EINPROGRESS)
		return false;
	if (!err && fds[o->peer] >= 0) {
		snprintf(o->why, sizeof o->why, "rank %d connected twice",
			 o->peer);
		(void)canal__auth_answer(o->fd, CANAL__V_TWICE);
		err = -EPROTO;
	} else if (!err) {
		err = canal__auth_answer(o->fd, CANAL__V_OK);
		if (err)
			snprintf(o->why, sizeof o->why,
				 "rank %d left before the verdict (%s)",
				 o->peer, strerror(-err));
	}
	if (err) {
		/* Not one of ours, or not in time: refuse it, go on. */
		drop(rank, o, o->why);
		return true;
	}
	fds[o->peer] = o->fd;
	(*missing)--;
	return true;
}

/* accept(2) errors that concern the one connection being accepted (it
 * was aborted, or the network under it failed: accept(2), "Error
 * handling"): skip it and take the next. */
static bool accept_error_transient(int err)
{
	switch (err) {
	case EINTR:
	case ECONNABORTED:
	case EPROTO:
	case EPERM: /* a firewall rule */
	case ENETDOWN:
	case ENOPROTOOPT:
	case EHOSTDOWN:
	case ENONET:
	case EHOSTUNREACH:
	case EOPNOTSUPP:
	case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

/* Remove open[0], the oldest opening, closing it (why). */
static void evict_oldest(int rank, struct canal__auth_opening *open, int *n,
			 const char *why)
{
	drop(rank, &open[0], why);
	memmove(open, open + 1, (size_t)(*n - 1) * sizeof *open);
	(*n)--;
}

/* Accept every connection the listener holds now, starting the opening of
 * each and advancing it at once (a peer's hello has usually come with its
 * connection). 0, or the negative errno of a failure of the listener
 * itself (no descriptor left even after closing every opening). */
static int take_new(int lfd, const unsigned char *key,
		    const unsigned char *job, int rank, int lo, int hi,
		    uint64_t deadline, struct canal__auth_opening *open,
		    int *n, int cap, int *fds, int *missing)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			int err = errno;
			if (err == EAGAIN || err == EWOULDBLOCK)
				return 0;
			if (accept_error_transient(err))
				continue;
			if ((err == EMFILE || err == ENFILE || err == ENOBUFS ||
			     err == ENOMEM) && *n > 0) {
				evict_oldest(rank, open, n,
					     "out of descriptors for newer connections");
				continue;
			}
			return -err;
		}
		if (*n == cap)
			evict_oldest(rank, open, n,
				     "unfinished opening, room made for a newer connection");
		uint64_t until = canal__now_ms() + CANAL__OPENING_WAIT_MS;
		struct canal__auth_opening *o = &open[*n];
		canal__auth_opening_init(o, fd, key, job, rank, lo, hi,
					 until < deadline ? until : deadline);
		if (!settle(rank, o, fds, missing))
			(*n)++;
		if (*missing == 0)
			return 0; /* the rest of the backlog is nobody's */
	}
}

int canal__tcp_accept_peers(int lfd, const unsigned char *key,
			    const unsigned char *job, int rank, int lo, int hi,
			    uint64_t deadline, int *fds)
{
	int missing = 0;
	for (int r = lo; r < hi; r++)
		missing += fds[r] < 0;
	if (missing == 0)
		return 0;
	int cap = missing + STRANGER_SLOTS, n = 0, err = 0;
	struct canal__auth_opening *open = calloc((size_t)cap, sizeof *open);
	struct pollfd *p = calloc((size_t)cap + 1, sizeof *p);
	if (!open || !p) {
		free(open);
		free(p);
		return -ENOMEM;
	}
	while (missing > 0) {
		uint64_t now = canal__now_ms();
		if (now >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		uint64_t until = deadline;
		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < n; i++) {
			p[i + 1] = (struct pollfd){ .fd = open[i].fd,
						    .events = POLLIN };
			if (open[i].deadline < until)
				until = open[i].deadline;
		}
		uint64_t wait = until > now ? until - now : 0;
		if (poll(p, (nfds_t)n + 1, wait > INT_MAX ? INT_MAX : (int)wait) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		/* The openings with something to read (bytes, end of stream,
		 * an error) or out of time settle; the others keep their
		 * order (open[0] stays the oldest). */
		now = canal__now_ms();
		int kept = 0;
		for (int i = 0; i < n; i++) {
			if ((p[i + 1].revents || now >= open[i].deadline) &&
			    settle(rank, &open[i], fds, &missing))
				continue;
			open[kept++] = open[i];
		}
		n = kept;
		if (missing > 0 && p[0].revents) {
			err = take_new(lfd, key, job, rank, lo, hi, deadline,
				       open, &n, cap, fds, &missing);
			if (err)
				break;
		}
	}
	for (int i = 0; i < n; i++)
		drop(rank, &open[i],
		     err ? "unfinished opening, the open failed"
			 : "unfinished opening, every peer had connected");
	free(open);
	free(p);
	return err;
}
