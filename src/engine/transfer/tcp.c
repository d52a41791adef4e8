/* SPDX-License-Identifier: MIT */
/*
 * transfer/tcp.c - the TCP driver: one non-blocking stream socket per peer
 * (TCP_NODELAY), packets framed by a 4-byte little-endian length.
 *
 * send() hands the packet to the kernel with one writev (prefix + the
 * caller's iovec: gather without a copy); what the socket does not take at
 * once is copied to the driver's output buffer, which is the packet "in
 * flight": while it is not empty, send() says -EAGAIN and idle() false.
 * recv() reads as much as the socket has into an input buffer and hands out
 * whole packets in place. A length of 0 or above max_packet is -EPROTO (a
 * peer cannot make us allocate or read beyond the buffer); end of stream or
 * a reset is -ECONNRESET.
 *
 * Connection set-up (canal__tcp_connect_all): every process listens on
 * bind_addr (an address, or an interface or subnet naming one of this
 * host's: ifaddr.h) with a kernel-chosen port and publishes "addr port"
 * under key "tcp" (exchange.h: dir/tcp.<rank>, PMIx or the launcher), then
 * all fence; it connects to every lower rank and accepts every higher one.
 * Rank 0 draws the job token (auth.h: 16 random bytes) and publishes it
 * with its address, "addr port <32 hex digits>"; every other rank reads
 * rank 0's address before any other (it dials the lower ranks from 0 up)
 * and takes the token from there, so every rank of the job holds the same
 * token before its first dial or accept, at no exchange of its own. A
 * connection opens with a hello {u32 magic, u32 rank, job[16]}, or with a
 * shared key the handshake of auth.h; a wrong magic, a failed handshake,
 * another job's token, a rank out of range or a rank seen twice is
 * refused (closed, logged on stderr).
 * The acceptor reads the openings of all its connections at once, each
 * under its own deadline (accept.c), so a stray connection that is slow
 * or silent holds up no real peer. Connecting before accepting cannot
 * deadlock: a connect completes in the peer's listen backlog, and the
 * dialer waits for its verdict until the open's deadline.
 */
#define _GNU_SOURCE
#include "driver.h"
#include "auth.h"
#include "exchange.h"
#include "ifaddr.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define TCP_MAX_PACKET ((size_t)65536 + 256)
#define TCP_EAGER_MAX ((size_t)65536)
#define MAX_IOV 64

struct tcp_driver {
	struct canal__driver base;
	int fd;
	unsigned char *out;
	size_t out_off, out_len;
	unsigned char *in;
	size_t in_cap, in_start, in_end;
	size_t pending;
	/* The peer's end, seen by a send (EPIPE, ECONNRESET): -ECONNRESET,
	 * reported by health() and by recv() once it has handed out what the
	 * peer had sent before it went; 0 while the link stands. */
	int gone;
};

static int sock_error(struct tcp_driver *d, int err)
{
	if (err == EPIPE || err == ECONNRESET || err == ENOTCONN ||
	    err == ETIMEDOUT) {
		snprintf(d->base.why, sizeof d->base.why, "%s",
			 err == ETIMEDOUT ? "no answer within the TCP timeout"
					  : "connection reset");
		return -ECONNRESET;
	}
	snprintf(d->base.why, sizeof d->base.why, "socket: %s", strerror(err));
	return -err;
}

/*
 * A send that finds the peer gone (EPIPE, ECONNRESET) is not the gate's
 * error yet: the peer may have sent its last messages and closed, and its
 * bytes wait in our socket. Failing the gate at the send lost them (a
 * hostile review: a receiver returning credit to a sender that had closed
 * lost 1-4 rounds of messages in 40). The bytes to send are dropped (the
 * peer reads nothing more), health() says the peer is dead, and the
 * session drains recv(), which hands out what came and then the error
 * (driver.h; ucx.c holds a broken link's error back the same way).
 */
static int peer_gone(struct tcp_driver *d, int err)
{
	if (err != EPIPE && err != ECONNRESET)
		return sock_error(d, err);
	if (!d->gone) {
		d->gone = sock_error(d, err);
	}
	d->out_off = d->out_len = 0;
	return 0;
}

static int tcp_flush(struct canal__driver *d_)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	while (d->out_off < d->out_len) {
		ssize_t k = send(d->fd, d->out + d->out_off,
				 d->out_len - d->out_off, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return peer_gone(d, errno);
		}
		d->out_off += (size_t)k;
	}
	d->out_off = d->out_len = 0;
	return 0;
}

static int tcp_send(struct canal__driver *d_, const struct iovec *iov, int n,
		    size_t total)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	if (total > d->base.caps.max_packet || n >= MAX_IOV)
		return -EMSGSIZE;
	if (d->gone)
		return 0; /* dropped: the peer is gone (peer_gone) */
	if (d->out_len) {
		int r = tcp_flush(d_);
		if (r < 0)
			return r;
		if (d->out_len)
			return -EAGAIN;
	}
	uint32_t prefix = htole32((uint32_t)total);
	struct iovec v[MAX_IOV + 1];
	v[0].iov_base = &prefix;
	v[0].iov_len = sizeof prefix;
	memcpy(v + 1, iov, (size_t)n * sizeof *iov);
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n + 1 };
	ssize_t k = sendmsg(d->fd, &m, MSG_NOSIGNAL);
	if (k < 0) {
		if (errno != EAGAIN && errno != EINTR)
			return peer_gone(d, errno);
		k = 0;
	}
	/* Keep the rest of the packet: the caller's buffers are free now. */
	size_t skip = (size_t)k;
	for (int i = 0; i <= n; i++) {
		if (skip >= v[i].iov_len) {
			skip -= v[i].iov_len;
			continue;
		}
		memcpy(d->out + d->out_len, (char *)v[i].iov_base + skip,
		       v[i].iov_len - skip);
		d->out_len += v[i].iov_len - skip;
		skip = 0;
	}
	return 0;
}

static int tcp_recv(struct canal__driver *d_, const unsigned char **pkt,
		    size_t *len)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	for (int round = 0; round < 2; round++) {
		size_t have = d->in_end - d->in_start;
		if (have >= 4) {
			uint32_t l;
			memcpy(&l, d->in + d->in_start, 4);
			l = le32toh(l);
			if (l == 0 || l > d->base.caps.max_packet) {
				snprintf(d->base.why, sizeof d->base.why,
					 "bad packet length %u", l);
				return -EPROTO;
			}
			if (have >= 4 + (size_t)l) {
				*pkt = d->in + d->in_start + 4;
				*len = l;
				d->pending = 4 + (size_t)l;
				return 1;
			}
		}
		if (round == 1)
			break;
		if (d->in_start > 0) {
			memmove(d->in, d->in + d->in_start, have);
			d->in_start = 0;
			d->in_end = have;
		}
		ssize_t k = recv(d->fd, d->in + d->in_end, d->in_cap - d->in_end,
				 MSG_DONTWAIT);
		if (k == 0) {
			snprintf(d->base.why, sizeof d->base.why,
				 "connection closed by peer");
			return -ECONNRESET;
		}
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return sock_error(d, errno);
		}
		d->in_end += (size_t)k;
	}
	return 0;
}

static void tcp_release(struct canal__driver *d_)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	d->in_start += d->pending;
	d->pending = 0;
	if (d->in_start == d->in_end)
		d->in_start = d->in_end = 0;
}

static bool tcp_buffered(struct canal__driver *d_)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	size_t have = d->in_end - d->in_start;
	if (have < 4)
		return false;
	uint32_t l;
	memcpy(&l, d->in + d->in_start, 4);
	l = le32toh(l);
	/* a bad length is reported by recv() */
	return l == 0 || l > d->base.caps.max_packet || have >= 4 + (size_t)l;
}

static bool tcp_idle(struct canal__driver *d_)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	return d->out_len == 0;
}

static bool tcp_delivered(struct canal__driver *d_)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	if (d->gone)
		return true; /* a dead peer takes nothing more */
	if (d->out_len)
		return false;
	/* A connection the kernel has closed (a reset not yet read by
	 * recv()) delivers nothing more, while SIOCOUTQ keeps its last
	 * count: ask its state first (TCP_INFO leaves the socket's pending
	 * error for recv(), where SO_ERROR would clear it). */
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	if (getsockopt(d->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 &&
	    ti.tcpi_state == TCP_CLOSE)
		return true;
	/* SIOCOUTQ: bytes sent and not yet acknowledged, plus unsent. */
	int q = 0;
	return ioctl(d->fd, SIOCOUTQ, &q) < 0 || q == 0;
}

static int tcp_health(struct canal__driver *d_)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	return d->gone;
}

static void tcp_close(struct canal__driver *d_)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	close(d->fd);
	free(d->out);
	free(d->in);
	free(d);
}

static const struct canal__driver_ops tcp_ops = {
	.name = "tcp",
	.send = tcp_send,
	.flush = tcp_flush,
	.recv = tcp_recv,
	.release = tcp_release,
	.buffered = tcp_buffered,
	.idle = tcp_idle,
	.delivered = tcp_delivered,
	.health = tcp_health,
	.read_peer = NULL,
	.close = tcp_close,
};

/* The options a gate's socket needs, each checked: a refused one fails
 * the open (0 or -errno, the option named in why) rather than leave a
 * connection without TCP_NODELAY (each small packet held for the peer's
 * delayed ACK), in blocking mode (a send to a peer that stalls blocks the
 * session), or, with dead_after_ms, without the timeout and keepalive
 * that see a vanished peer (engine.h, tcp_timeout_ms). */
static int tcp_sockopts(int fd, int dead_after_ms, char *why, size_t whylen)
{
	int one = 1;
	const char *what = "TCP_NODELAY";
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		goto fail;
	if (dead_after_ms > 0) {
		/* Unacknowledged data for this long, or keepalive probes (one a
		 * second after a second of silence) unanswered that long: the
		 * kernel resets the connection, and recv/send say so. With
		 * TCP_USER_TIMEOUT set the kernel ends a keepalive-probed
		 * connection by it, not by TCP_KEEPCNT; the count is capped
		 * at the kernel's maximum (127), which it refuses beyond. */
		unsigned ut = (unsigned)dead_after_ms;
		int idle = 1, intvl = 1, cnt = dead_after_ms / 1000 + 1;
		if (cnt > 127)
			cnt = 127;
		what = "TCP_USER_TIMEOUT";
		if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut))
			goto fail;
		what = "SO_KEEPALIVE";
		if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one))
			goto fail;
		what = "TCP_KEEPIDLE";
		if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle))
			goto fail;
		what = "TCP_KEEPINTVL";
		if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
			       sizeof intvl))
			goto fail;
		what = "TCP_KEEPCNT";
		if (setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt))
			goto fail;
	}
	what = "O_NONBLOCK";
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
		goto fail;
	return 0;
fail:;
	int err = errno;
	snprintf(why, whylen, "socket option %s: %s", what, strerror(err));
	return -err;
}

static int tcp_driver_new(int fd, int dead_after_ms, struct canal__driver **out)
{
	struct tcp_driver *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->fd = fd;
	d->base.ops = &tcp_ops;
	d->base.caps.max_packet = TCP_MAX_PACKET;
	d->base.caps.eager_max = TCP_EAGER_MAX;
	d->base.caps.gather = true;
	d->base.caps.read_peer_memory = false;
	d->base.caps.costly_packets = true;
	d->out = malloc(TCP_MAX_PACKET + 4);
	d->in_cap = 4 * (TCP_MAX_PACKET + 4);
	d->in = malloc(d->in_cap);
	if (!d->out || !d->in) {
		free(d->out);
		free(d->in);
		free(d);
		return -ENOMEM;
	}
	int err = tcp_sockopts(fd, dead_after_ms, d->base.why,
			       sizeof d->base.why);
	if (err) {
		fprintf(stderr, "canal engine: %s\n", d->base.why);
		free(d->out);
		free(d->in);
		free(d);
		return err;
	}
	*out = &d->base;
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* Publish "addr port", and with job (rank 0) " <job in hex>". */
static int publish_port(const struct canal__xchg *x, const char *addr,
			int port, const unsigned char *job, uint64_t deadline)
{
	char v[96], hex[2 * CANAL__JOB_BYTES + 1] = "";
	if (job)
		sodium_bin2hex(hex, sizeof hex, job, CANAL__JOB_BYTES);
	snprintf(v, sizeof v, "%s %d%s%s", addr, port, job ? " " : "", hex);
	return canal__xchg_put(x, x->tcp_key ? x->tcp_key : "tcp", v,
			       deadline);
}

/* rank's published address into *sa and, with job (rank 0's), the job
 * token that follows it: 0, the exchange's error, or -EPROTO (malformed,
 * or no token: rank 0 runs a canal without job tokens; logged). */
static int read_port(const struct canal__xchg *x, int rank, uint64_t deadline,
		     struct sockaddr_in *sa, unsigned char *job)
{
	char v[96], addr[64], hex[2 * CANAL__JOB_BYTES + 2] = "";
	int port;
	int err = canal__xchg_get(x, rank, x->tcp_key ? x->tcp_key : "tcp", v,
				  sizeof v, deadline);
	if (err)
		return err;
	int n = sscanf(v, "%63s %d %33s", addr, &port, hex);
	if (n < 2 || port <= 0 || port > 65535)
		return -EPROTO;
	size_t bin = 0;
	if (job && (n != 3 || strlen(hex) != 2 * CANAL__JOB_BYTES ||
		    sodium_hex2bin(job, CANAL__JOB_BYTES, hex, strlen(hex),
				   NULL, &bin, NULL) != 0 ||
		    bin != CANAL__JOB_BYTES)) {
		fprintf(stderr, "canal engine: rank %d: rank %d published no "
				"job token with its address (\"%s\"): a canal "
				"without them?\n", x->rank, rank, v);
		return -EPROTO;
	}
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1)
		return -EPROTO;
	return 0;
}

/* connect(2) bounded by deadline (now_ms clock): 0 or -errno
 * (-ETIMEDOUT). A blocking connect to an address that drops SYNs waited
 * out the kernel's retries (about 127 s) whatever the job's
 * connect_timeout_ms said (a hostile review). The socket is back in
 * blocking mode after. */
static int connect_until(int fd, const struct sockaddr_in *sa,
			 uint64_t deadline)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
		return -errno;
	int err = 0;
	if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0)
		err = -errno;
	while (err == -EINPROGRESS || err == -EINTR) {
		uint64_t now = now_ms();
		uint64_t left = now < deadline ? deadline - now : 0;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0) {
			err = errno == EINTR ? -EINTR : -errno;
			continue;
		}
		if (n == 0) {
			err = -ETIMEDOUT;
			break;
		}
		int so = 0;
		socklen_t len = sizeof so;
		err = getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len) != 0
			      ? -errno
			      : -so;
	}
	if (fcntl(fd, F_SETFL, fl) != 0 && !err)
		err = -errno;
	return err;
}

/* Dial peer at sa until deadline (now_ms clock): a connection the peer
 * refused to listen on yet, or dropped before its handshake verdict (auth.h:
 * its limit passed while our hello was late on a lossy link), is dialed
 * again; a refusal (wrong key, another job, rank) is final: the address
 * names a listener that will not take this rank. The connected socket, or a
 * negative errno (logged). */
int canal__tcp_dial(const struct sockaddr_in *sa, int rank, int peer,
		    const unsigned char *key, const unsigned char *job,
		    uint64_t deadline)
{
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		int err = 0;
		char why[160] = "";
		err = connect_until(fd, sa, deadline);
		if (err == 0) {
			/* The verdict is waited for until the caller's
			 * deadline, no longer: a floor of 1 s, as before,
			 * held a dial with 100 ms left for 1 s
			 * (test_revauth_dial_verdict_deadline). A dial
			 * whose connect took the last of its time still
			 * reads a verdict already there (auth.h: 1 ms). */
			uint64_t now = now_ms();
			uint64_t left = now < deadline ? deadline - now : 0;
			err = canal__auth_connect(fd, key, job, rank, peer,
						  left > INT_MAX ? INT_MAX
								 : (int)left,
						  why, sizeof why);
			if (!err)
				return fd;
		}
		close(fd);
		bool again = err == -ECONNREFUSED || err == -EINTR ||
			     err == -EAGAIN;
		if (!again || now_ms() > deadline) {
			if (why[0])
				fprintf(stderr, "canal engine: rank %d: %s\n",
					rank, why);
			return again ? -ETIMEDOUT : err;
		}
		sleep_ms(err == -EAGAIN ? 10 : 1);
	}
}

int canal__tcp_connect_all(const char *dir, const char *bind_addr, int rank,
			   int size, int timeout_ms, int dead_after_ms,
			   struct canal__driver **drivers)
{
	struct canal__xchg x = { .rank = rank, .size = size, .dir = dir };
	return canal__tcp_connect_xchg(&x, bind_addr, timeout_ms, dead_after_ms,
				       NULL, drivers);
}

int canal__tcp_connect_xchg(const struct canal__xchg *x, const char *bind_addr,
			   int timeout_ms, int dead_after_ms,
			   const unsigned char *key,
			   struct canal__driver **drivers)
{
	int rank = x->rank, size = x->size;
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int err = 0, lfd = -1;
	char addr[CANAL__ADDR_MAX], bad[160];
	/* The job's token (auth.h): rank 0's own draw, the others' read from
	 * rank 0's publication at j = 0 below, before any dial or accept. */
	unsigned char job[CANAL__JOB_BYTES] = { 0 };
	if (rank == 0) {
		if (sodium_init() < 0)
			return -EIO;
		randombytes_buf(job, sizeof job);
	}
	if (!bind_addr)
		bind_addr = "127.0.0.1";
	/* An interface name or a subnet: this host's address there. */
	err = canal__bind_resolve(bind_addr, addr, bad, sizeof bad);
	if (err) {
		fprintf(stderr, "canal engine: rank %d: %s\n", rank, bad);
		return err;
	}
	bind_addr = addr;
	if (rank < size - 1) {
		/* Non-blocking: accept.c drains it (accept until EAGAIN). */
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			     0);
		if (lfd < 0)
			return -errno;
		struct sockaddr_in sa = { .sin_family = AF_INET };
		if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
			close(lfd);
			return -EINVAL;
		}
		socklen_t sl = sizeof sa;
		if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
		    listen(lfd, size) < 0 ||
		    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
			err = -errno;
			goto out;
		}
		err = publish_port(x, bind_addr, ntohs(sa.sin_port),
				   rank == 0 ? job : NULL, deadline);
		if (err)
			goto out;
	}
	err = canal__xchg_fence(x, deadline);
	if (err)
		goto out;
	for (int j = 0; j < rank; j++) {
		struct sockaddr_in sa;
		err = read_port(x, j, deadline, &sa, j == 0 ? job : NULL);
		if (err)
			goto out;
		int fd = canal__tcp_dial(&sa, rank, j, key, job, deadline);
		if (fd < 0) {
			err = fd;
			goto out;
		}
		err = tcp_driver_new(fd, dead_after_ms, &drivers[j]);
		if (err) {
			close(fd);
			goto out;
		}
	}
	if (lfd >= 0) {
		int *fds = malloc((size_t)size * sizeof *fds);
		if (!fds) {
			err = -ENOMEM;
			goto out;
		}
		for (int j = 0; j < size; j++)
			fds[j] = -1;
		err = canal__tcp_accept_peers(lfd, key, job, rank, rank + 1,
					      size, deadline, fds);
		/* What was accepted is ours, after a failure too. */
		for (int j = rank + 1; j < size; j++) {
			if (fds[j] < 0)
				continue;
			int derr = err ? err
				       : tcp_driver_new(fds[j], dead_after_ms,
							&drivers[j]);
			if (derr) {
				close(fds[j]);
				err = derr;
			}
		}
		free(fds);
	}
out:
	if (lfd >= 0)
		close(lfd);
	return err;
}

int canal__tcp_inject(struct canal__driver *d_, const void *bytes, size_t n)
{
	struct tcp_driver *d = (struct tcp_driver *)d_;
	ssize_t k = send(d->fd, bytes, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	return (int)k;
}
