/* SPDX-License-Identifier: MIT */
/*
 * transfer/auth.c - the TCP connection's opening: plain hello or the keyed
 * challenge-response handshake (protocol in auth.h).
 *
 * Waiting: neither side ever blocks in recv() or send(). The connector
 * reads each answer under one deadline for the whole opening (poll, then
 * MSG_DONTWAIT); the acceptor's opening (struct canal__auth_opening) reads
 * what has come and returns, so that its caller can watch many at once,
 * and fails once its own deadline has passed. No socket option is set or
 * left behind (SO_RCVTIMEO, as before, is a limit per recv(): a peer
 * sending a byte now and then renewed it at every byte).
 *
 * Sending never waits either: each side sends at most 88 bytes over the
 * whole opening (acceptor: 72 + an 8-byte verdict; connector: 56 + 32),
 * each message only after reading the other's previous one, while a
 * socket's send buffer holds at least 4 KiB (tcp_wmem's minimum; a Unix
 * socket pair's far more). A send that would block cannot happen unless
 * the kernel is out of memory; send_now() reports it (-ENOBUFS) rather
 * than wait.
 */
#define _GNU_SOURCE
#include "auth.h"
#include "exchange.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NONCE CANAL__NONCE_BYTES
#define JOB CANAL__JOB_BYTES
/* The hello: {magic, rank, job}, keyed then nonce_c. */
#define HELLO_PLAIN (8 + JOB)
#define HELLO_KEYED (8 + JOB + NONCE)

_Static_assert(crypto_auth_BYTES == CANAL__MAC_BYTES,
	       "HMAC-SHA-512-256 is 32 bytes");
_Static_assert(crypto_auth_KEYBYTES == CANAL__KEY_BYTES, "key size");

/* Read fd to its end or len bytes, whichever comes first (a read may
 * return less than the file holds: a signal, a file system's choice):
 * the count, or read's negative errno. */
static ssize_t read_all(int fd, unsigned char *buf, size_t len)
{
	size_t have = 0;
	while (have < len) {
		ssize_t k = read(fd, buf + have, len - have);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		have += (size_t)k;
	}
	return (ssize_t)have;
}

int canal__auth_load(const char *path, unsigned char key[CANAL__KEY_BYTES],
		     char *why, size_t whylen)
{
	if (sodium_init() < 0) {
		snprintf(why, whylen, "libsodium failed to initialise");
		return -EIO;
	}
	/* O_NONBLOCK: what path is, is checked only once it is open (fstat
	 * of the opened file, not stat then open: no race), and open(2) of a
	 * FIFO without a writer blocked for ever (test_revauth_key_fifo);
	 * now it returns, and a FIFO or a device is refused below as not a
	 * regular file. A regular file reads the same either way. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int err = errno;
		snprintf(why, whylen, "key file %s: %s", path, strerror(err));
		return -err;
	}
	struct stat st;
	unsigned char buf[4097];
	int err = 0;
	ssize_t n = 0;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		snprintf(why, whylen, "key file %s: %s", path, strerror(-err));
	} else if (!S_ISREG(st.st_mode)) {
		err = -EACCES;
		snprintf(why, whylen,
			 "key file %s is not a regular file (a FIFO, a device "
			 "or a directory)", path);
	} else if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		err = -EACCES;
		snprintf(why, whylen,
			 "key file %s must be a regular file owned by this user "
			 "and readable by it only (chmod 600)", path);
	} else if ((n = read_all(fd, buf, sizeof buf)) < 0) {
		/* read's own error, not the file's size: a key that cannot
		 * be read is not a key of the wrong size
		 * (test_revapi_key_read_error) */
		err = (int)n;
		snprintf(why, whylen, "key file %s: %s", path, strerror(-err));
	} else if (n < 16 || n > 4096) {
		err = -EINVAL;
		snprintf(why, whylen, "key file %s must hold 16 to 4096 bytes",
			 path);
	} else {
		crypto_generichash(key, CANAL__KEY_BYTES, buf, (size_t)n, NULL, 0);
	}
	sodium_memzero(buf, sizeof buf);
	close(fd);
	return err;
}

/* Read into buf[*have, need) what fd holds now, without waiting: 0 once
 * the need bytes are there, -EINPROGRESS while some are still to come,
 * -ECONNRESET at end of stream, or recv's negative errno. */
static int recv_now(int fd, void *buf, size_t need, size_t *have)
{
	while (*have < need) {
		ssize_t k = recv(fd, (char *)buf + *have, need - *have,
				 MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK
				       ? -EINPROGRESS
				       : -errno;
		if (k == 0)
			return -ECONNRESET;
		*have += (size_t)k;
	}
	return 0;
}

/* Send n bytes at once (they fit: see the top of this file): 0, or a
 * negative errno (-ENOBUFS for a send the buffer could not take whole). */
static int send_now(int fd, const void *p, size_t n)
{
	ssize_t k;
	do
		k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -ENOBUFS
							       : -errno;
	return (size_t)k == n ? 0 : -ENOBUFS;
}

/* Wait until fd is readable or deadline (canal__now_ms() clock) has
 * passed: 0 (readable, or interrupted: the caller reads and looks at the
 * clock again), -ETIMEDOUT, or poll's negative errno. */
static int wait_readable(int fd, uint64_t deadline)
{
	uint64_t now = canal__now_ms();
	if (now >= deadline)
		return -ETIMEDOUT;
	uint64_t left = deadline - now;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) < 0 &&
	    errno != EINTR)
		return -errno;
	return 0;
}

/* Read n bytes by deadline: 0, -ETIMEDOUT, -ECONNRESET at end of stream,
 * or a negative errno. */
static int recv_until(int fd, void *buf, size_t n, uint64_t deadline)
{
	size_t have = 0;
	for (;;) {
		int err = recv_now(fd, buf, n, &have);
		if (err != -EINPROGRESS)
			return err;
		err = wait_readable(fd, deadline);
		if (err)
			return err;
	}
}

/* label | job | nonce_c | nonce_a | rank_c | rank_a (auth.h): each side
 * puts its own job token in, so a MAC made in another job never checks. */
static void mac(unsigned char out[32], const unsigned char *key, char label,
		const unsigned char *job, const unsigned char *nc,
		const unsigned char *na, int rc, int ra)
{
	unsigned char m[1 + JOB + 2 * NONCE + 8];
	m[0] = (unsigned char)label;
	memcpy(m + 1, job, JOB);
	memcpy(m + 1 + JOB, nc, NONCE);
	memcpy(m + 1 + JOB + NONCE, na, NONCE);
	uint32_t r[2] = { htole32((uint32_t)rc), htole32((uint32_t)ra) };
	memcpy(m + 1 + JOB + 2 * NONCE, r, 8);
	crypto_auth(out, m, sizeof m, key);
}

static const char *verdict_text(uint32_t code)
{
	switch (code) {
	case CANAL__V_KEY:
		return "one side has a key and the other not";
	case CANAL__V_MAC:
		return "wrong key";
	case CANAL__V_RANK:
		return "rank out of its range";
	case CANAL__V_TWICE:
		return "rank connected already";
	case CANAL__V_JOB:
		return "it is a rank of another job (the address published "
		       "for this peer is stale: its port is another job's now)";
	case CANAL__V_VERSION:
		return "another version of the opening";
	default:
		return "unknown reason";
	}
}

/* The acceptor's verdict, by deadline: 0, or a negative errno with why
 * set when the acceptor answered something else than code 0. */
static int read_verdict(int fd, int peer, uint64_t deadline, char *why,
			size_t whylen)
{
	uint32_t v[2];
	int err = recv_until(fd, v, sizeof v, deadline);
	if (err)
		return err;
	uint32_t magic = le32toh(v[0]), code = le32toh(v[1]);
	if (magic != CANAL__VERDICT_MAGIC) {
		snprintf(why, whylen, "peer %d answered the handshake with garbage",
			 peer);
		return -EPROTO;
	}
	if (code == CANAL__V_OK)
		return 0;
	snprintf(why, whylen, "peer %d refused this rank: %s", peer,
		 verdict_text(code));
	return code == CANAL__V_KEY || code == CANAL__V_MAC ? -EACCES
	       : code == CANAL__V_JOB			    ? -ESTALE
							    : -EPROTO;
}

int canal__auth_connect(int fd, const unsigned char *key,
			const unsigned char job[CANAL__JOB_BYTES], int rank,
			int peer, int wait_ms, char *why, size_t whylen)
{
	if (wait_ms < 1)
		wait_ms = 1;
	uint64_t deadline = canal__now_ms() + (uint64_t)wait_ms;
	unsigned char hello[HELLO_KEYED];
	uint32_t h[2] = { htole32(key ? CANAL__AUTH_MAGIC : CANAL__HELLO_MAGIC),
			  htole32((uint32_t)rank) };
	memcpy(hello, h, 8);
	memcpy(hello + 8, job, JOB);
	unsigned char *nonce_c = hello + HELLO_PLAIN;
	int err;
	why[0] = 0;
	if (!key) {
		err = send_now(fd, hello, HELLO_PLAIN);
		goto verdict;
	}
	randombytes_buf(nonce_c, NONCE);
	err = send_now(fd, hello, HELLO_KEYED);
	/* The hello's verdict: a refusal (no key here, rank), or go on. */
	if (!err)
		err = read_verdict(fd, peer, deadline, why, whylen);
	unsigned char reply[NONCE + CANAL__MAC_BYTES], want[CANAL__MAC_BYTES];
	if (!err)
		err = recv_until(fd, reply, sizeof reply, deadline);
	if (err)
		goto out;
	mac(want, key, 'A', job, nonce_c, reply, rank, peer);
	if (sodium_memcmp(want, reply + NONCE, sizeof want) != 0) {
		snprintf(why, whylen,
			 "peer %d failed the handshake (wrong key, or a job "
			 "token rewritten on the way)", peer);
		return -EACCES;
	}
	mac(want, key, 'C', job, nonce_c, reply, rank, peer);
	err = send_now(fd, want, sizeof want);
verdict:
	if (!err)
		err = read_verdict(fd, peer, deadline, why, whylen);
out:
	/* Dropped without a verdict: the acceptor closed it (its limit for
	 * a late hello, room for newer connections, or it is going away);
	 * the caller may dial again. */
	if (err == -ECONNRESET || err == -EPIPE)
		err = -EAGAIN;
	if (err && !why[0])
		snprintf(why, whylen, "handshake with peer %d: %s", peer,
			 err == -EAGAIN ? "dropped by the peer before its verdict"
					: strerror(-err));
	return err;
}

int canal__auth_answer(int fd, enum canal__verdict code)
{
	uint32_t v[2] = { htole32(CANAL__VERDICT_MAGIC), htole32((uint32_t)code) };
	return send_now(fd, v, sizeof v);
}

/* Refuse with a verdict (the peer spoke canal's opening): err. */
static int refuse(int fd, enum canal__verdict code, int err)
{
	(void)canal__auth_answer(fd, code); /* it may be gone: nothing to do */
	return err;
}

void canal__auth_opening_init(struct canal__auth_opening *o, int fd,
			      const unsigned char *key,
			      const unsigned char job[CANAL__JOB_BYTES],
			      int rank, int lo, int hi, uint64_t deadline)
{
	memset(o, 0, sizeof *o);
	o->fd = fd;
	o->key = key;
	o->job = job;
	o->rank = rank;
	o->lo = lo;
	o->hi = hi;
	o->deadline = deadline;
	o->stage = CANAL__OPENING_HELLO;
	o->peer = -1;
}

static int opening_fail(struct canal__auth_opening *o, int err)
{
	o->stage = CANAL__OPENING_FAILED;
	o->err = err;
	return err;
}

/* A read of the opening that did not complete (err from recv_now): wait
 * for more while the deadline allows, else fail, saying what was missing. */
static int opening_short(struct canal__auth_opening *o, int err,
			 const char *missing)
{
	if (err == -EINPROGRESS) {
		if (canal__now_ms() < o->deadline)
			return -EINPROGRESS;
		err = -ETIMEDOUT;
	}
	snprintf(o->why, sizeof o->why, "%s (%s)", missing, strerror(-err));
	return opening_fail(o, err);
}

/* The hello's {magic, rank} has come: 0 to go on to its job token, or
 * the refusal (its verdict sent when the peer spoke canal's opening). */
static int opening_check_magic(struct canal__auth_opening *o)
{
	uint32_t h[2];
	memcpy(h, o->hello, 8);
	uint32_t magic = le32toh(h[0]);
	if (magic == CANAL__HELLO_MAGIC_V1 || magic == CANAL__AUTH_MAGIC_V1) {
		snprintf(o->why, sizeof o->why,
			 "peer speaks the opening's version 1 (no job token): "
			 "an older canal");
		return refuse(o->fd, CANAL__V_VERSION, -EPROTO);
	}
	if (magic != CANAL__HELLO_MAGIC && magic != CANAL__AUTH_MAGIC) {
		snprintf(o->why, sizeof o->why,
			 "not a canal engine hello (garbage)");
		return -EPROTO;
	}
	if (magic == CANAL__HELLO_MAGIC && o->key) {
		snprintf(o->why, sizeof o->why,
			 "peer has no key (plain hello to a keyed rank)");
		return refuse(o->fd, CANAL__V_KEY, -EACCES);
	}
	if (magic == CANAL__AUTH_MAGIC && !o->key) {
		snprintf(o->why, sizeof o->why,
			 "peer sent a keyed handshake, this rank has no key");
		return refuse(o->fd, CANAL__V_KEY, -EACCES);
	}
	return 0;
}

/* The hello's job token has come too: 0 to go on (the peer's rank in
 * o->peer), or the refusal, its verdict sent. The job first: a rank of
 * another job is refused for that, whatever its rank. */
static int opening_check_job(struct canal__auth_opening *o)
{
	uint32_t h[2];
	memcpy(h, o->hello, 8);
	int r = (int)le32toh(h[1]);
	if (sodium_memcmp(o->hello + 8, o->job, JOB) != 0) {
		snprintf(o->why, sizeof o->why,
			 "claimed rank %d is a rank of another job (its job "
			 "token differs: a stale address of its job names "
			 "this port)", r);
		return refuse(o->fd, CANAL__V_JOB, -ESTALE);
	}
	if (r < o->lo || r >= o->hi) {
		snprintf(o->why, sizeof o->why, "rank %d out of range", r);
		return refuse(o->fd, CANAL__V_RANK, -EPROTO);
	}
	o->peer = r;
	return 0;
}

/* The stages in protocol order (auth.h): each reads its message, and when
 * it is whole, checks it, answers and hands on to the next. */
int canal__auth_opening_step(struct canal__auth_opening *o)
{
	int err;
	if (o->stage == CANAL__OPENING_HELLO) {
		/* The magic alone first: a version 1 hello (8 bytes plain)
		 * hears its refusal at once, not at the deadline. */
		err = recv_now(o->fd, o->hello, 8, &o->have);
		if (err)
			return opening_short(o, err, "no hello");
		err = opening_check_magic(o);
		if (err)
			return opening_fail(o, err);
		o->stage = CANAL__OPENING_JOB;
	}
	if (o->stage == CANAL__OPENING_JOB) {
		err = recv_now(o->fd, o->hello, HELLO_PLAIN, &o->have);
		if (err)
			return opening_short(o, err, "hello cut short");
		err = opening_check_job(o);
		if (err)
			return opening_fail(o, err);
		o->stage = o->key ? CANAL__OPENING_NONCE : CANAL__OPENING_PASSED;
	}
	if (o->stage == CANAL__OPENING_NONCE) {
		err = recv_now(o->fd, o->hello, HELLO_KEYED, &o->have);
		if (err)
			return opening_short(o, err, "handshake cut short");
		/* The hello's verdict (go on), then the challenge. */
		unsigned char out[8 + NONCE + CANAL__MAC_BYTES];
		uint32_t go[2] = { htole32(CANAL__VERDICT_MAGIC),
				   htole32(CANAL__V_OK) };
		memcpy(out, go, 8);
		randombytes_buf(o->nonce_a, NONCE);
		memcpy(out + 8, o->nonce_a, NONCE);
		mac(out + 8 + NONCE, o->key, 'A', o->job,
		    o->hello + HELLO_PLAIN, o->nonce_a, o->peer, o->rank);
		err = send_now(o->fd, out, sizeof out);
		if (err) {
			snprintf(o->why, sizeof o->why,
				 "handshake cut short (%s)", strerror(-err));
			return opening_fail(o, err);
		}
		o->stage = CANAL__OPENING_ANSWER;
		o->have = 0;
	}
	if (o->stage == CANAL__OPENING_ANSWER) {
		err = recv_now(o->fd, o->mac_c, sizeof o->mac_c, &o->have);
		if (err)
			return opening_short(o, err, "handshake cut short");
		unsigned char want[CANAL__MAC_BYTES];
		mac(want, o->key, 'C', o->job, o->hello + HELLO_PLAIN,
		    o->nonce_a, o->peer, o->rank);
		if (sodium_memcmp(want, o->mac_c, sizeof want) != 0) {
			snprintf(o->why, sizeof o->why,
				 "claimed rank %d failed the handshake (wrong key, replay, or a job token rewritten on the way)",
				 o->peer);
			return opening_fail(o, refuse(o->fd, CANAL__V_MAC,
						      -EACCES));
		}
		o->stage = CANAL__OPENING_PASSED;
	}
	return o->stage == CANAL__OPENING_PASSED ? 0 : o->err;
}

int canal__auth_accept(int fd, const unsigned char *key,
		       const unsigned char job[CANAL__JOB_BYTES], int rank,
		       int lo, int hi, int *peer, char *why, size_t whylen)
{
	struct canal__auth_opening o;
	canal__auth_opening_init(&o, fd, key, job, rank, lo, hi,
				 canal__now_ms() + CANAL__OPENING_WAIT_MS);
	int err;
	/* wait_readable's own -ETIMEDOUT is not used: the step after the
	 * deadline fails the opening itself, and says at which stage. */
	while ((err = canal__auth_opening_step(&o)) == -EINPROGRESS) {
		int werr = wait_readable(fd, o.deadline);
		if (werr && werr != -ETIMEDOUT) {
			snprintf(why, whylen, "waiting for the hello: %s",
				 strerror(-werr));
			return werr;
		}
	}
	if (err) {
		snprintf(why, whylen, "%s", o.why);
		return err;
	}
	*peer = o.peer;
	return 0;
}
