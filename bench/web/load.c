/* SPDX-License-Identifier: MIT */
/*
 * load.c - canal's HTTP load generator (issue 14): build/bench/web/load
 *
 *   load --port P [--host A] [--path /page.html] [--connections C]
 *        (--duration S | --requests N) [--rate R] [--close]
 *        [--timeout-ms T] [--csv FILE]
 *
 * One thread, one epoll loop, C connections (HTTP/1.1 keep-alive, all
 * opened before the clock starts, or a connection per request with
 * --close, as ab does, each connect part of its request's time). Every request's
 * intended start, actual send and completion are recorded (preallocated
 * array), so:
 *   - closed loop (no --rate): each connection sends its next request when
 *     the previous one completes; intended start == send time;
 *   - fixed rate (--rate R requests/s in total): request k is due at
 *     t0 + k/R whether or not a connection is free, and its latency counts
 *     from that intended start, so a stalled server is not hidden by the
 *     client waiting for it (no coordinated omission).
 * Prints one summary line
 *   CANAL_LOAD requests=.. ok=.. duration_s=.. rps=.. mean_us=.. p50_us=..
 *              p99_us=.. p999_us=.. max_us=.. connect=.. read=.. timeout=..
 *              non2xx=.. max_inflight=.. late_p50_us=.. late_p99_us=..
 * (late_*: how long after its intended start each request was sent, the
 * client's own lateness; near 0 at a fixed rate the client keeps up with,
 * the wait for a free connection when the server falls behind)
 * and with --csv every request: intended_ns,start_ns,done_ns,status,error
 * (ns from the run's start; error: 0 none, 1 connect, 2 read, 3 timeout).
 * --timeout-ms T (default 10 000): a request not answered T ms after its
 * intended start is a timeout; at a fixed rate, one still waiting for its
 * connection by then is recorded so without being sent, so that a run
 * against a server that stopped answering ends T ms after its duration.
 * A keep-alive connection that the server closes (an answer whose
 * Connection field lists "close", an HTTP/1.0 answer without "keep-alive",
 * or its end of the stream seen with the response or while idle) is opened
 * again for its next request.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum err { E_NONE, E_CONNECT, E_READ, E_TIMEOUT };

struct rec {
	uint64_t intended, start, done;
	int16_t status;
	uint8_t err;
};

enum cstate { C_IDLE, C_CONNECTING, C_BUSY, C_DEAD };

struct conn {
	int fd;
	enum cstate st;
	long req;	 /* index into recs, -1: none */
	long next_k;	 /* fixed rate: the next request this connection carries */
	bool cand;	 /* fixed rate: on the candidate stack */
	size_t sent;	 /* bytes of the request sent */
	size_t have;	 /* bytes buffered */
	long body_left;	 /* -1: head not complete */
	bool server_close;
	char buf[16384];
};

static struct sockaddr_in g_addr;
static char g_req[512];
static size_t g_req_len;
static bool g_close;
static bool g_no_pwait2; /* epoll_pwait2 missing: ms waits */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int open_conn(int ep, struct conn *c)
{
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	int r = connect(c->fd, (struct sockaddr *)&g_addr, sizeof g_addr);
	if (r < 0 && errno != EINPROGRESS) {
		int e = -errno;
		close(c->fd);
		c->fd = -1;
		return e;
	}
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP,
				 .data.ptr = c};
	epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
	c->st = C_CONNECTING;
	c->have = 0;
	c->server_close = false;
	return 0;
}

static void close_conn(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->st = C_DEAD;
}

/* The tokens of a Connection field's value [v, e): a comma-separated
 * list, case-insensitive (RFC 9110 7.6.1). */
static void connection_tokens(const char *v, const char *e, bool *ends,
			      bool *keep)
{
	while (v < e) {
		while (v < e && (*v == ' ' || *v == '\t' || *v == ','))
			v++;
		const char *t = v;
		while (v < e && *v != ' ' && *v != '\t' && *v != ',')
			v++;
		size_t n = (size_t)(v - t);
		if (n == 5 && strncasecmp(t, "close", 5) == 0)
			*ends = true;
		else if (n == 10 && strncasecmp(t, "keep-alive", 10) == 0)
			*keep = true;
	}
}

/* Parse the response head in c->buf: status, Content-Length, Connection.
 * Returns the head length, 0 when incomplete, -1 when malformed. */
static long parse_head(struct conn *c, int *status)
{
	char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
	if (!end)
		return c->have == sizeof c->buf ? -1 : 0;
	size_t hl = (size_t)(end - c->buf) + 4;
	int minor;
	if (sscanf(c->buf, "HTTP/1.%d %d", &minor, status) != 2)
		return -1;
	long len = -1;
	bool ends = false, keep = false;
	for (char *l = memmem(c->buf, hl, "\r\n", 2); l && l < end; l = memmem(l + 2, (size_t)(end - l), "\r\n", 2)) {
		if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
			len = atol(l + 17);
		else if (strncasecmp(l + 2, "Connection:", 11) == 0)
			connection_tokens(l + 13, memmem(l + 2, (size_t)(end + 2 - (l + 2)), "\r\n", 2),
					  &ends, &keep);
	}
	if (len < 0)
		return -1;
	/* The connection ends after this response (RFC 9112 9.3): "close",
	 * or HTTP/1.0 without "keep-alive". */
	if (ends || (minor == 0 && !keep))
		c->server_close = true;
	c->body_left = len;
	return (long)hl;
}

/* One request on connected, idle c, outside the measurement: waits (up to
 * tmo) for the whole response. Returns 0 with c idle and its buffer
 * empty, or -1 (c is then closed, to be opened again at its first use). */
static int warm_up(struct conn *c, uint64_t tmo)
{
	uint64_t give_up = now_ns() + tmo;
	size_t sent = 0;
	long body_left = -1; /* -1 until the head is in; the body is dropped */
	c->have = 0;
	c->body_left = -1;
	c->server_close = false;
	while (now_ns() < give_up) {
		if (sent < g_req_len) {
			ssize_t s = send(c->fd, g_req + sent, g_req_len - sent, MSG_NOSIGNAL);
			if (s < 0 && errno != EAGAIN)
				break;
			if (s > 0)
				sent += (size_t)s;
		}
		struct pollfd p = {.fd = c->fd, .events = POLLIN | (sent < g_req_len ? POLLOUT : 0)};
		if (poll(&p, 1, 10) < 0 && errno != EINTR)
			break;
		ssize_t got = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
		if (got == 0 || (got < 0 && errno != EAGAIN))
			break;
		if (got <= 0)
			continue;
		if (body_left >= 0) {
			if (got > body_left)
				break; /* more than the response */
			body_left -= got;
		} else {
			c->have += (size_t)got;
			int status = 0;
			long hl = parse_head(c, &status);
			if (hl < 0)
				break;
			if (hl == 0)
				continue;
			long extra = (long)c->have - hl;
			if (extra > c->body_left)
				break;
			body_left = c->body_left - extra;
		}
		c->have = 0; /* the body's bytes are not kept */
		if (body_left == 0) {
			/* A server may end a keep-alive connection after a
			 * response without saying so (its FIN then often rides
			 * on the last segment): one look, warm-up only. */
			char b;
			ssize_t k = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
			if (c->server_close || k >= 0 || errno != EAGAIN)
				break; /* closed, more than the response, an error */
			c->body_left = -1;
			return 0;
		}
	}
	close_conn(c);
	return -1;
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *path = "/", *csv = NULL;
	long port = -1, conns = 10, requests = 0, timeout_ms = 10000;
	double duration = 0, rate = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--close") == 0) {
			g_close = true;
			continue;
		}
		if (!v)
			goto usage;
		i++;
		if (strcmp(a, "--port") == 0) port = atol(v);
		else if (strcmp(a, "--host") == 0) host = v;
		else if (strcmp(a, "--path") == 0) path = v;
		else if (strcmp(a, "--connections") == 0) conns = atol(v);
		else if (strcmp(a, "--requests") == 0) requests = atol(v);
		else if (strcmp(a, "--duration") == 0) duration = atof(v);
		else if (strcmp(a, "--rate") == 0) rate = atof(v);
		else if (strcmp(a, "--timeout-ms") == 0) timeout_ms = atol(v);
		else if (strcmp(a, "--csv") == 0) csv = v;
		else goto usage;
	}
	if (port <= 0 || port > 65535 || conns < 1 || (requests <= 0 && duration <= 0) ||
	    rate < 0 || timeout_ms < 1 || path[0] != '/' || strlen(path) > 256)
		goto usage;
	g_addr.sin_family = AF_INET;
	g_addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &g_addr.sin_addr) != 1)
		goto usage;
	g_req_len = (size_t)snprintf(g_req, sizeof g_req, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n",
				     path, host, g_close ? "Connection: close\r\n" : "");
	/* Timers to the nanosecond (the default slack is 50 us): fixed-rate
	 * requests leave on time. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	/* Capacity of the record array. */
	long cap = requests > 0 ? requests
		   : rate > 0 ? (long)(rate * duration) + 1 : 20000000;
	if (cap > 50000000)
		cap = 50000000;
	struct rec *recs = calloc((size_t)cap, sizeof *recs);
	struct conn *cs = calloc((size_t)conns, sizeof *cs);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (!recs || !cs || ep < 0) {
		fprintf(stderr, "load: out of memory\n");
		return 1;
	}
	uint64_t t0 = now_ns();
	uint64_t end = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
	uint64_t tmo = (uint64_t)timeout_ms * 1000000u;
	long issued = 0, completed = 0, inflight = 0, max_inflight = 0;
	long next_due = 0; /* fixed rate: next request index to become due */
	/* Fixed rate: connection i carries requests i, i + C, i + 2C, ... (each
	 * connection a client at R/C requests/s, as wrk2 does, so that every
	 * one of the C connections is in use); a request due while its
	 * connection is busy waits for it, its time counted from its intended
	 * start. The candidate stack holds the connections that may have a
	 * due request to send: pushed when one of their requests becomes due
	 * or when they become free. */
	long sent_due = 0; /* fixed rate: requests handed to a connection */
	long *cand = calloc((size_t)conns, sizeof *cand);
	long ncand = 0;
	if (!cand) {
		fprintf(stderr, "load: out of memory\n");
		return 1;
	}
#define PUSH_CAND(c_)                                             \
	do {                                                      \
		if (rate > 0 && !(c_)->cand) {                    \
			(c_)->cand = true;                        \
			cand[ncand++] = (long)((c_) - cs);        \
		}                                                 \
	} while (0)
/* The end of c's request, whatever it was (err: E_NONE or why not): its
 * record done now, c free again, and, at a fixed rate, a candidate for
 * its next due request. */
#define END_REQ(c_, err_)                                          \
	do {                                                       \
		recs[(c_)->req].done = now;                        \
		recs[(c_)->req].err = (uint8_t)(err_);             \
		(c_)->req = -1;                                    \
		inflight--;                                        \
		completed++;                                       \
		PUSH_CAND(c_);                                     \
	} while (0)

	for (long i = 0; i < conns; i++) {
		cs[i].fd = -1;
		cs[i].req = -1;
		cs[i].st = C_DEAD;
		cs[i].next_k = i;
	}

	struct epoll_event evs[512];
	/* Keep-alive: every connection is opened before the clock starts (as
	 * wrk does), so that the run measures requests, not a storm of
	 * connects and the server's first touch of each one; with --close
	 * each request's connect is part of its time. A connection that fails
	 * here stays dead and is tried again, and counted, at its first use. */
	if (!g_close) {
		long pending = 0;
		for (long i = 0; i < conns; i++)
			if (open_conn(ep, &cs[i]) == 0)
				pending++;
		uint64_t give_up = now_ns() + tmo;
		while (pending > 0 && now_ns() < give_up) {
			int n = epoll_wait(ep, evs, 512, 10);
			for (int e = 0; e < n; e++) {
				struct conn *c = evs[e].data.ptr;
				if (c->st == C_IDLE &&
				    (evs[e].events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))) {
					close_conn(c); /* closed by the server: reopened at first use */
					continue;
				}
				if (c->st != C_CONNECTING)
					continue;
				int so = 0;
				socklen_t sl = sizeof so;
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so, &sl);
				if (so || (evs[e].events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))) {
					close_conn(c);
					pending--;
				} else if (evs[e].events & EPOLLOUT) {
					c->st = C_IDLE;
					pending--;
				}
			}
		}
		for (long i = 0; i < conns; i++)
			if (cs[i].st == C_CONNECTING)
				close_conn(&cs[i]);
		/* A connection is connected once the kernel has queued it, maybe
		 * long before the server accepts it: one request on the last one
		 * (accepts are taken in order) makes sure the server has them all
		 * before the clock starts, instead of the run's first
		 * milliseconds measuring its backlog of accepts. */
		for (long i = conns - 1; i >= 0; i--)
			if (cs[i].st == C_IDLE) {
				warm_up(&cs[i], tmo);
				break;
			}
	}
	t0 = now_ns();
	end = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
	for (;;) {
		uint64_t now = now_ns();
		bool stop_issuing = now >= end || (requests > 0 && issued >= requests) || issued >= cap;
		/* Fixed rate: requests become due on the schedule. */
		if (rate > 0 && !stop_issuing) {
			long due = (long)((double)(now - t0) * rate / 1e9) + 1;
			if (requests > 0 && due > requests)
				due = requests;
			if (due > cap)
				due = cap;
			for (; next_due < due; next_due++) {
				recs[next_due].intended = t0 + (uint64_t)((double)next_due * 1e9 / rate);
				PUSH_CAND(&cs[next_due % conns]);
			}
		}
		/* Give work to free connections: the candidates at a fixed rate,
		 * every connection in a closed loop. */
		for (long j = 0; rate > 0 ? ncand > 0 : j < conns; j++) {
			/* Candidates come off the top: one whose connect fails at
			 * once goes back on and is looked at again (its next due
			 * request), so the stack never holds a connection twice. */
			struct conn *c = rate > 0 ? &cs[cand[--ncand]] : &cs[j];
			if (rate > 0)
				c->cand = false;
			if (c->req >= 0 || (c->st != C_IDLE && c->st != C_DEAD))
				continue;
			long k;
			if (rate > 0) {
				/* A due request already older than the timeout
				 * (from its intended start) is one: recorded, never
				 * sent (a server that stops answering would
				 * otherwise stretch the run by a timeout per
				 * request). */
				while (c->next_k < next_due &&
				       now - recs[c->next_k].intended > tmo) {
					k = c->next_k;
					c->next_k += conns;
					sent_due++;
					issued = k + 1 > issued ? k + 1 : issued;
					recs[k].start = recs[k].done = now;
					recs[k].err = E_TIMEOUT;
					completed++;
				}
				if (c->next_k >= next_due)
					continue;
				k = c->next_k;
				c->next_k += conns;
				sent_due++;
			} else {
				if (stop_issuing || (requests > 0 && issued >= requests) || issued >= cap)
					break;
				k = issued;
				recs[k].intended = now;
			}
			issued = k + 1 > issued ? k + 1 : issued;
			c->req = k;
			c->sent = 0;
			c->body_left = -1;
			recs[k].start = now;
			inflight++;
			if (inflight > max_inflight)
				max_inflight = inflight;
			if (c->st == C_DEAD && open_conn(ep, c) < 0) {
				/* its next due request, if any: later in this pass */
				END_REQ(c, E_CONNECT);
				continue;
			}
			if (c->st == C_IDLE) {
				c->st = C_BUSY;
				ssize_t n = send(c->fd, g_req, g_req_len, MSG_NOSIGNAL);
				if (n > 0)
					c->sent = (size_t)n;
				else if (n < 0 && errno != EAGAIN) {
					/* The server closed it meanwhile (no edge-
					 * triggered event would come): a read error,
					 * as a close mid-request is. */
					close_conn(c);
					END_REQ(c, E_READ);
				}
			}
		}
		if (rate > 0)
			stop_issuing = stop_issuing || (now >= end && sent_due >= next_due);
		if (stop_issuing && inflight == 0 && (rate == 0 || sent_due >= next_due))
			break;
		/* Sleep until the next request is due (fixed rate) or 1 ms at most
		 * (the timeouts' check): a coarser wait would send requests late
		 * and, since latency counts from the intended start, charge the
		 * client's own lateness to the server. */
		uint64_t wait_ns = 1000000;
		bool more_due = next_due < cap && !(requests > 0 && next_due >= requests);
		if (rate > 0 && !stop_issuing && more_due) {
			uint64_t next_at = t0 + (uint64_t)((double)next_due * 1e9 / rate);
			now = now_ns();
			wait_ns = next_at > now ? next_at - now : 0;
			if (wait_ns > 1000000)
				wait_ns = 1000000;
		}
		struct timespec wait_ts = {0, (long)wait_ns};
		int n = -1;
		if (!g_no_pwait2) {
			n = epoll_pwait2(ep, evs, 512, &wait_ts, NULL);
			if (n < 0 && errno == ENOSYS)
				g_no_pwait2 = true; /* before Linux 5.11 */
		}
		if (g_no_pwait2)
			n = epoll_wait(ep, evs, 512, (int)((wait_ns + 999999) / 1000000));
		now = now_ns();
		for (int e = 0; e < n; e++) {
			struct conn *c = evs[e].data.ptr;
			if (c->req < 0) { /* idle keep-alive closed by the server */
				if (evs[e].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
					close_conn(c);
				continue;
			}
			struct rec *r = &recs[c->req];
			enum err fail = E_NONE;
			/* The server's end of the stream (this event's, or found
			 * once the response is in, below): an edge-triggered
			 * event reports it once, so a connection whose response
			 * ends with it must not carry the next request (sent into
			 * the half-closed connection, that one would wait out its
			 * timeout, or meet a reset). A server may close a
			 * persistent connection after any response, "Connection:
			 * close" or not (RFC 9112 9.3). */
			bool peer_end = evs[e].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
			if (c->st == C_CONNECTING) {
				int so = 0;
				socklen_t sl = sizeof so;
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so, &sl);
				if (so) {
					fail = E_CONNECT;
					goto finish;
				}
				if (!(evs[e].events & EPOLLOUT))
					continue;
				c->st = C_BUSY;
			}
			while (c->sent < g_req_len) {
				ssize_t s = send(c->fd, g_req + c->sent, g_req_len - c->sent, MSG_NOSIGNAL);
				if (s < 0) {
					if (errno == EAGAIN)
						break;
					fail = c->sent ? E_READ : E_CONNECT;
					goto finish;
				}
				c->sent += (size_t)s;
			}
			for (;;) {
				ssize_t got = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
				if (got < 0 && errno == EAGAIN)
					break;
				if (got <= 0) {
					fail = got < 0 && errno == ECONNREFUSED ? E_CONNECT : E_READ;
					goto finish;
				}
				c->have += (size_t)got;
				if (c->body_left < 0) {
					int status = 0;
					long hl = parse_head(c, &status);
					if (hl < 0) {
						fail = E_READ;
						goto finish;
					}
					if (hl == 0)
						continue;
					r->status = (int16_t)status;
					memmove(c->buf, c->buf + hl, c->have - (size_t)hl);
					c->have -= (size_t)hl;
				}
				size_t take = c->have < (size_t)c->body_left ? c->have : (size_t)c->body_left;
				c->body_left -= (long)take;
				memmove(c->buf, c->buf + take, c->have - take);
				c->have -= take;
				if (c->body_left != 0)
					continue;
				/* Read on to EAGAIN (edge-triggered: an end that came
				 * with the response's last bytes has no event of its
				 * own): a connection to keep must have nothing more. */
				if (!fail && !g_close && !c->server_close && !c->have &&
				    !peer_end) {
					char b;
					ssize_t k = recv(c->fd, &b, 1, MSG_DONTWAIT);
					peer_end = k >= 0 || errno != EAGAIN;
				}
				goto finish;
			}
			continue;
		finish:
			if (fail || g_close || c->server_close || c->have || peer_end)
				close_conn(c);
			else
				c->st = C_IDLE;
			END_REQ(c, fail);
		}
		/* Timeouts. */
		for (long i = 0; i < conns; i++) {
			struct conn *c = &cs[i];
			if (c->req >= 0 && now - recs[c->req].intended > tmo) {
				close_conn(c);
				END_REQ(c, E_TIMEOUT);
			}
		}
	}
	uint64_t t1 = now_ns();

	long ok = 0, nerr[4] = {0}, non2xx = 0;
	uint64_t *lat = malloc(sizeof *lat * (size_t)(issued ? issued : 1));
	double sum = 0;
	for (long k = 0; k < issued; k++) {
		struct rec *r = &recs[k];
		if (r->err) {
			nerr[r->err]++;
			continue;
		}
		if (r->status < 200 || r->status > 299) {
			non2xx++;
			continue;
		}
		lat[ok++] = r->done - r->intended;
		sum += (double)(r->done - r->intended);
	}
	/* How late the client itself sent (start - intended): near zero unless
	 * the client is the bottleneck or its sleeps overshoot. */
	uint64_t *late = malloc(sizeof *late * (size_t)(issued ? issued : 1));
	long nl = 0;
	for (long k = 0; k < issued; k++)
		if (!recs[k].err && recs[k].start >= recs[k].intended)
			late[nl++] = recs[k].start - recs[k].intended;
	qsort(lat, (size_t)ok, sizeof *lat, cmp_u64);
	qsort(late, (size_t)nl, sizeof *late, cmp_u64);
#define PCT(p) (ok ? lat[(size_t)((double)(ok - 1) * (p) / 100.0 + 0.5)] / 1000 : 0)
#define LATE(p) (nl ? late[(size_t)((double)(nl - 1) * (p) / 100.0 + 0.5)] / 1000 : 0)
	double secs = (double)(t1 - t0) / 1e9;
	printf("CANAL_LOAD requests=%ld ok=%ld duration_s=%.3f rps=%.1f mean_us=%.1f p50_us=%llu "
	       "p99_us=%llu p999_us=%llu max_us=%llu connect=%ld read=%ld timeout=%ld non2xx=%ld "
	       "max_inflight=%ld late_p50_us=%llu late_p99_us=%llu\n",
	       issued, ok, secs, (double)ok / secs, ok ? sum / (double)ok / 1000 : 0.0,
	       (unsigned long long)PCT(50), (unsigned long long)PCT(99),
	       (unsigned long long)PCT(99.9), (unsigned long long)(ok ? lat[ok - 1] / 1000 : 0),
	       nerr[E_CONNECT], nerr[E_READ], nerr[E_TIMEOUT], non2xx, max_inflight,
	       (unsigned long long)LATE(50), (unsigned long long)LATE(99));
	if (csv) {
		FILE *f = fopen(csv, "w");
		if (!f) {
			perror(csv);
			return 1;
		}
		fprintf(f, "intended_ns,start_ns,done_ns,status,error\n");
		for (long k = 0; k < issued; k++)
			fprintf(f, "%llu,%llu,%llu,%d,%d\n",
				(unsigned long long)(recs[k].intended - t0),
				(unsigned long long)(recs[k].start - t0),
				(unsigned long long)(recs[k].done - t0), recs[k].status, recs[k].err);
		fclose(f);
	}
	for (long i = 0; i < conns; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	free(lat);
	free(late);
	free(cand);
	free(recs);
	free(cs);
	close(ep);
	return 0;
usage:
	fprintf(stderr,
		"usage: %s --port P [--host A] [--path /p] [--connections C]\n"
		"       (--duration S | --requests N) [--rate R] [--close] [--timeout-ms T] [--csv F]\n",
		argv[0]);
	return 2;
}
