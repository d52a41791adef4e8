/* SPDX-License-Identifier: MIT */
/*
 * transfer/auth.c - the TCP connection's opening: plain hello or the keyed
 * challenge-response handshake (protocol in auth.h).
 */
#define _GNU_SOURCE
#include "auth.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NONCE 32

/*
 * How long either side waits for the other's next handshake message.
 * Not 2 s, as before: on a lossy link, once a SYN or SYN-ACK has been
 * lost the connection's retransmission timeout starts at 3 s (RFC 6298,
 * 5.7), so one more lost segment delays the hello past 2 s. The acceptor
 * then refused a rank that was merely late, and the rank, whose connect
 * had succeeded, found its link reset: test_launch_hosts (1 % of segments
 * dropped, 8 ranks on 4 namespaces) failed that way now and then. A silent
 * stray connection holds the accept loop this long before it is refused.
 */
#define HANDSHAKE_WAIT_S 10

_Static_assert(crypto_auth_BYTES == 32, "HMAC-SHA-512-256 is 32 bytes");
_Static_assert(crypto_auth_KEYBYTES == CANAL__KEY_BYTES, "key size");

int canal__auth_load(const char *path, unsigned char key[CANAL__KEY_BYTES],
		     char *why, size_t whylen)
{
	if (sodium_init() < 0) {
		snprintf(why, whylen, "libsodium failed to initialise");
		return -EIO;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
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
	} else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		   (st.st_mode & 077)) {
		err = -EACCES;
		snprintf(why, whylen,
			 "key file %s must be a regular file owned by this user "
			 "and readable by it only (chmod 600)", path);
	} else if ((n = read(fd, buf, sizeof buf)) < 16 || n > 4096) {
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

static int io_all(int fd, void *p, size_t n, bool wr)
{
	size_t done = 0;
	while (done < n) {
		ssize_t k = wr ? send(fd, (char *)p + done, n - done, MSG_NOSIGNAL)
			       : recv(fd, (char *)p + done, n - done, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? -ECONNRESET : -errno;
		done += (size_t)k;
	}
	return 0;
}

static void mac(unsigned char out[32], const unsigned char *key, char label,
		const unsigned char *nc, const unsigned char *na, int rc, int ra)
{
	unsigned char m[1 + 2 * NONCE + 8];
	m[0] = (unsigned char)label;
	memcpy(m + 1, nc, NONCE);
	memcpy(m + 1 + NONCE, na, NONCE);
	uint32_t r[2] = { htole32((uint32_t)rc), htole32((uint32_t)ra) };
	memcpy(m + 1 + 2 * NONCE, r, 8);
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
	default:
		return "unknown reason";
	}
}

/* The acceptor's verdict: 0, or a negative errno with why set. */
static int read_verdict(int fd, int peer, char *why, size_t whylen)
{
	uint32_t v[2];
	int err = io_all(fd, v, sizeof v, false);
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
	return code == CANAL__V_KEY || code == CANAL__V_MAC ? -EACCES : -EPROTO;
}

int canal__auth_connect(int fd, const unsigned char *key, int rank, int peer,
			int wait_ms, char *why, size_t whylen)
{
	if (wait_ms < 1)
		wait_ms = 1;
	struct timeval tv = { wait_ms / 1000, (wait_ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	unsigned char hello[8 + NONCE];
	uint32_t h[2] = { htole32(key ? CANAL__AUTH_MAGIC : CANAL__HELLO_MAGIC),
			  htole32((uint32_t)rank) };
	memcpy(hello, h, 8);
	int err;
	why[0] = 0;
	if (!key) {
		err = io_all(fd, hello, 8, true);
		goto verdict;
	}
	randombytes_buf(hello + 8, NONCE);
	err = io_all(fd, hello, sizeof hello, true);
	/* The hello's verdict: a refusal (no key here, rank), or go on. */
	if (!err)
		err = read_verdict(fd, peer, why, whylen);
	unsigned char reply[NONCE + 32], want[32];
	if (!err)
		err = io_all(fd, reply, sizeof reply, false);
	if (err)
		goto out;
	mac(want, key, 'A', hello + 8, reply, rank, peer);
	if (sodium_memcmp(want, reply + NONCE, 32) != 0) {
		snprintf(why, whylen, "peer %d failed the handshake (wrong key)",
			 peer);
		return -EACCES;
	}
	mac(want, key, 'C', hello + 8, reply, rank, peer);
	err = io_all(fd, want, 32, true);
verdict:
	if (!err)
		err = read_verdict(fd, peer, why, whylen);
out:
	/* Dropped without a verdict: the acceptor closed it (its limit for
	 * a late hello, or it is going away); the caller may dial again. A
	 * reply timeout is SO_RCVTIMEO's EAGAIN: say so. */
	if (err == -EAGAIN || err == -EWOULDBLOCK)
		err = -ETIMEDOUT;
	else if (err == -ECONNRESET || err == -EPIPE)
		err = -EAGAIN;
	if (err && !why[0])
		snprintf(why, whylen, "handshake with peer %d: %s", peer,
			 err == -EAGAIN ? "dropped by the peer before its verdict"
					: strerror(-err));
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return err;
}

int canal__auth_answer(int fd, enum canal__verdict code)
{
	uint32_t v[2] = { htole32(CANAL__VERDICT_MAGIC), htole32((uint32_t)code) };
	return io_all(fd, v, sizeof v, true);
}

/* Refuse with a verdict (the peer spoke canal's opening): err. */
static int refuse(int fd, enum canal__verdict code, int err)
{
	(void)canal__auth_answer(fd, code); /* it may be gone: nothing to do */
	return err;
}

int canal__auth_accept(int fd, const unsigned char *key, int rank, int lo,
		       int hi, int *peer, char *why, size_t whylen)
{
	struct timeval tv = { HANDSHAKE_WAIT_S, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	unsigned char hello[8 + NONCE];
	uint32_t h[2];
	int err = io_all(fd, hello, 8, false);
	if (err) {
		snprintf(why, whylen, "no hello (%s)", strerror(-err));
		return err;
	}
	memcpy(h, hello, 8);
	uint32_t magic = le32toh(h[0]);
	int r = (int)le32toh(h[1]);
	if (magic != CANAL__HELLO_MAGIC && magic != CANAL__AUTH_MAGIC) {
		snprintf(why, whylen, "not a canal engine hello (garbage)");
		return -EPROTO;
	}
	if (magic == CANAL__HELLO_MAGIC && key) {
		snprintf(why, whylen, "peer has no key (plain hello to a keyed rank)");
		return refuse(fd, CANAL__V_KEY, -EACCES);
	}
	if (magic == CANAL__AUTH_MAGIC && !key) {
		snprintf(why, whylen, "peer sent a keyed handshake, this rank has no key");
		return refuse(fd, CANAL__V_KEY, -EACCES);
	}
	if (r < lo || r >= hi) {
		snprintf(why, whylen, "rank %d out of range", r);
		return refuse(fd, CANAL__V_RANK, -EPROTO);
	}
	if (key) {
		err = io_all(fd, hello + 8, NONCE, false);
		/* The hello's verdict (go on), then the challenge. */
		unsigned char out[8 + NONCE + 32], got[32], want[32];
		unsigned char *reply = out + 8;
		uint32_t go[2] = { htole32(CANAL__VERDICT_MAGIC),
				   htole32(CANAL__V_OK) };
		memcpy(out, go, 8);
		randombytes_buf(reply, NONCE);
		if (!err) {
			mac(reply + NONCE, key, 'A', hello + 8, reply, r, rank);
			err = io_all(fd, out, sizeof out, true);
		}
		if (!err)
			err = io_all(fd, got, 32, false);
		if (err) {
			snprintf(why, whylen, "handshake cut short (%s)",
				 strerror(-err));
			return err;
		}
		mac(want, key, 'C', hello + 8, reply, r, rank);
		if (sodium_memcmp(want, got, 32) != 0) {
			snprintf(why, whylen,
				 "claimed rank %d failed the handshake (wrong key or replay)",
				 r);
			return refuse(fd, CANAL__V_MAC, -EACCES);
		}
	}
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	*peer = r;
	return 0;
}
