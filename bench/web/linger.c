/* SPDX-License-Identifier: MIT */
/*
 * linger.c - the lingering close of every style (nginx's lingering_close):
 * a connection the server closes while its client is still sending
 * (requests pipelined behind a "Connection: close" one, an unread body)
 * must not be closed at once: close(2) with unread input, or input that
 * arrives after it, makes the kernel send a reset, and the client's kernel
 * then drops the end of the last response that it had not yet read.
 *
 * web_close (core.c) shuts writing down and drains what is there; when
 * it found input, it hands the socket here (web_linger) instead of closing
 * it. One thread per server process (started at the first hand-off)
 * watches the lingering sockets with epoll, reads and discards what comes,
 * and closes each at its client's end of input, after LINGER_IDLE_MS
 * without input, or LINGER_TOTAL_MS after the hand-off, whichever comes
 * first (nginx: lingering_timeout 5 s, lingering_time 30 s). At most
 * LINGER_MAX sockets (a quarter of the descriptor limit if less) linger
 * at once: past that, web_linger closes at once (a flood of such clients
 * must not hold the server's descriptors). Known gaps, as nginx's default:
 * a request that reaches the server only after web_close found no input
 * still meets a plain close (deciding on unacknowledged output instead,
 * SIOCOUTQ, would send most closes here); and the deadline close does no
 * last drain.
 *
 * Ownership: a socket handed here belongs to the linger thread alone (the
 * style has forgotten it); the list is under `mu` only for the hand-off
 * and the count.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINGER_IDLE_MS 1000
#define LINGER_TOTAL_MS 5000
#define LINGER_MAX 1024

struct lingering {
	int fd;
	uint64_t idle_until, until; /* web_now_ns clock */
	struct lingering *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int epfd = -1;
static unsigned count;			  /* sockets lingering (under mu) */
static struct lingering *handed;	  /* handed, not yet watched (mu) */
static struct lingering *watched;	  /* the linger thread's own list */

static void finish(struct lingering *e)
{
	epoll_ctl(epfd, EPOLL_CTL_DEL, e->fd, NULL);
	close(e->fd);
	free(e);
	pthread_mutex_lock(&mu);
	count--;
	pthread_mutex_unlock(&mu);
}

/* Read and discard: true while the client may send more. */
static bool discard(int fd)
{
	char buf[4096];
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
			      errno == EINTR))
			return true;
		return false; /* end of input, or an error */
	}
	return true;
}

static void *linger_thread(void *arg)
{
	(void)arg;
	struct epoll_event ev[64];
	for (;;) {
		int n = epoll_wait(epfd, ev, 64, 100);
		uint64_t now = web_now_ns();
		pthread_mutex_lock(&mu);
		struct lingering *h = handed;
		handed = NULL;
		pthread_mutex_unlock(&mu);
		while (h) {
			struct lingering *next = h->next;
			h->next = watched;
			watched = h;
			h = next;
		}
		for (int i = 0; i < n; i++) {
			struct lingering *e = ev[i].data.ptr;
			if (discard(e->fd))
				e->idle_until = now + LINGER_IDLE_MS * 1000000ull;
			else
				e->until = 0; /* done: closed below */
		}
		for (struct lingering **pp = &watched; *pp;) {
			struct lingering *e = *pp;
			if (now >= e->until || now >= e->idle_until) {
				*pp = e->next;
				finish(e);
			} else {
				pp = &e->next;
			}
		}
	}
	return NULL;
}

/* LINGER_MAX, or a quarter of the descriptor limit if that is less: a
 * flood of lingering clients leaves the server most of its descriptors. */
static unsigned linger_max(void)
{
	static unsigned max;
	if (!max) {
		struct rlimit rl;
		max = LINGER_MAX;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur / 4 < LINGER_MAX)
			max = rl.rlim_cur / 4 ? (unsigned)(rl.rlim_cur / 4) : 1;
	}
	return max;
}

static bool linger_start(void)
{
	/* Under mu. */
	if (epfd >= 0)
		return true;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return false;
	pthread_t th;
	if (pthread_create(&th, NULL, linger_thread, NULL) != 0) {
		close(epfd);
		epfd = -1;
		return false;
	}
	pthread_detach(th);
	return true;
}

void web_linger(int fd)
{
	struct lingering *e = malloc(sizeof(*e));
	pthread_mutex_lock(&mu);
	if (!e || count >= linger_max() || !linger_start()) {
		pthread_mutex_unlock(&mu);
		free(e);
		close(fd);
		return;
	}
	uint64_t now = web_now_ns();
	e->fd = fd;
	e->idle_until = now + LINGER_IDLE_MS * 1000000ull;
	e->until = now + LINGER_TOTAL_MS * 1000000ull;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = e};
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		pthread_mutex_unlock(&mu);
		free(e);
		close(fd);
		return;
	}
	count++;
	e->next = handed;
	handed = e;
	pthread_mutex_unlock(&mu);
}
