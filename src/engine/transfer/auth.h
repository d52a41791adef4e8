/* SPDX-License-Identifier: MIT */
/*
 * transfer/auth.h - the opening of a TCP connection between two ranks:
 * a plain hello, or, with a shared key, a challenge-response handshake so
 * that a stray or hostile connection cannot become a gate.
 *
 * The job: both forms carry job[16], a token of the job the connector
 * belongs to, which the acceptor compares with its own. All the ranks of
 * a job agree on it through the address exchange before any dial (tcp.c:
 * rank 0 draws it at random and publishes it with its address; the
 * others read it there, as they read rank 0's address anyway). Without
 * it, the opening bound the two ranks (and the key) but not the job: a
 * rank that dialed the published address of a peer that had died, after
 * the kernel had given the port to a rank of another job (same key file,
 * or none), passed the opening, and the two jobs' gates crossed
 * (test_revjob_stale_port). The token is not secret (whoever reads the
 * exchange has it): it tells jobs apart, the key tells who may connect.
 *
 * Plain (no key): the connector sends {u32 HELLO_MAGIC, u32 rank,
 * job[16]}; the acceptor answers its verdict (below).
 *
 * Keyed: the key is 32 bytes derived (BLAKE2b, crypto_generichash) from
 * the contents of a key file that only its owner can read. MACs are
 * libsodium's crypto_auth (HMAC-SHA-512-256).
 *   1. connector -> acceptor: {u32 AUTH_MAGIC, u32 rank_c, job[16],
 *      nonce_c[32]}
 *   2. acceptor -> connector: the hello's verdict (below; code 0: go on),
 *      then {nonce_a[32], mac_a}
 *        mac_a = HMAC(key, 'A' | job | nonce_c | nonce_a | rank_c | rank_a)
 *   3. connector -> acceptor: {mac_c}
 *        mac_c = HMAC(key, 'C' | job | nonce_c | nonce_a | rank_c | rank_a)
 *   4. acceptor -> connector: the verdict
 * Each side checks the other's MAC (constant time), computed over its own
 * job token: the clear job[16] of step 1 gives a refusal its reason, the
 * MACs bind the handshake to the job. nonce_a is fresh random bytes for
 * every connection, so a recorded handshake replayed on a new connection
 * carries a mac_c for another nonce_a and is refused; the direction label
 * keeps mac_a from being reflected as mac_c.
 *
 * Versions: the magics name the opening's version (2: with the job). The
 * acceptor refuses a version 1 hello ("pctc", "pcta": 8 or 40 bytes, no
 * job) with CANAL__V_VERSION, which a version 1 connector reads as a
 * refusal ("unknown reason", -EPROTO); a version 1 acceptor takes a
 * version 2 hello for garbage and closes without a verdict, which a
 * version 2 connector dials again until its deadline (-ETIMEDOUT). The
 * verdict's magic is the same in both.
 *
 * Verdict (both forms): {u32 VERDICT_MAGIC, u32 code}, code 0 (accepted:
 * from then on the connection is a gate) or the reason the acceptor
 * refused (enum canal__verdict), after which it closes the connection. A
 * refusal of the hello itself (another version, no key on one side,
 * another job, rank out of range) comes at once, in step 2's place. The
 * connector counts as connected
 * only once it has read code 0, so it tells a refusal (a clear error,
 * never retried) from a connection the acceptor dropped without a verdict
 * (end of stream or a reset: its 10 s limit for the whole opening passed
 * while the hello was late on a lossy link, it made room for newer
 * connections (accept.c), or it is going away), which the connector dials
 * again until its deadline. Garbage (a wrong magic) and a short read get
 * no verdict: the acceptor does not talk to what is not a canal engine.
 * Each refusal is logged on stderr by the acceptor; nothing the connection
 * sent is read as a message. The verdict is not authenticated: whoever can
 * forge it can reset the connection too (the key protects who may
 * connect, not the stream).
 */
#ifndef CANAL_ENGINE_AUTH_H
#define CANAL_ENGINE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define CANAL__KEY_BYTES 32
#define CANAL__JOB_BYTES 16
#define CANAL__HELLO_MAGIC 0x32686370u /* "pch2": plain, version 2 */
#define CANAL__AUTH_MAGIC 0x32616370u  /* "pca2": keyed, version 2 */
#define CANAL__HELLO_MAGIC_V1 0x63746370u /* "pctc": refused (no job) */
#define CANAL__AUTH_MAGIC_V1 0x61746370u  /* "pcta": refused (no job) */
#define CANAL__VERDICT_MAGIC 0x76746370u /* "pctv", both versions */

/* The acceptor's answer (auth.h's Verdict). */
enum canal__verdict {
	CANAL__V_OK = 0,
	CANAL__V_KEY = 1,   /* one side has a key, the other not */
	CANAL__V_MAC = 2,   /* wrong MAC: another key, or a replay */
	CANAL__V_RANK = 3,  /* rank out of the range this acceptor takes */
	CANAL__V_TWICE = 4, /* that rank is connected already */
	CANAL__V_JOB = 5,   /* the connector is a rank of another job */
	CANAL__V_VERSION = 6, /* a version 1 hello (without the job) */
};

/* Load the key from path: a regular file owned by this user, not readable
 * or writable by group or others, 16 to 4096 bytes. Never waits: path is
 * opened O_NONBLOCK, so a FIFO (or a device) is refused rather than
 * waited on. 0, or a negative errno with the reason in why (-EACCES: not
 * a regular file, or permissions; -EINVAL: size; open's or read's errno).
 * The caller wipes key (sodium_memzero) once its handshakes are done. */
int canal__auth_load(const char *path, unsigned char key[CANAL__KEY_BYTES],
		     char *why, size_t whylen);
/* Connector side, on a connected socket; key NULL: plain hello; job:
 * this rank's job token (CANAL__JOB_BYTES). Waits up to wait_ms (at least
 * 1 ms) in all for the acceptor's messages, the verdict included (the
 * acceptor answers once it has dialed its own lower ranks, so it may take
 * that long). 0 once the acceptor's verdict accepted this rank; else a
 * negative errno with the reason in why: -EACCES refused for the key (or
 * the acceptor's MAC is wrong: another key, or, keyed, another job),
 * -ESTALE refused for the job (the acceptor is a rank of another job),
 * -EPROTO refused for the rank or the version, or a malformed answer,
 * -EAGAIN the acceptor dropped the connection without a verdict (end of
 * stream, reset or broken pipe: worth dialing again), -ETIMEDOUT no
 * verdict within wait_ms. */
int canal__auth_connect(int fd, const unsigned char *key,
			const unsigned char job[CANAL__JOB_BYTES], int rank,
			int peer, int wait_ms, char *why, size_t whylen);

/*
 * How long the acceptor gives one connection for its whole opening (the
 * hello and, with a key, the answer to the challenge), from its accept.
 * Not 2 s, as before: on a lossy link, once a SYN or SYN-ACK has been
 * lost the connection's retransmission timeout starts at 3 s (RFC 6298,
 * 5.7), so one more lost segment delays the hello past 2 s. The acceptor
 * then refused a rank that was merely late, and the rank, whose connect
 * had succeeded, found its link reset: test_launch_hosts (1 % of segments
 * dropped, 8 ranks on 4 namespaces) failed that way now and then.
 * A deadline for the whole opening, not a limit per recv() (SO_RCVTIMEO,
 * as before): a stray that sent a byte every few seconds renewed the limit
 * at each byte. A slow or silent stray holds one of the acceptor's slots
 * this long, never the others (accept.c reads every opening at once).
 */
#define CANAL__OPENING_WAIT_MS 10000
#define CANAL__NONCE_BYTES 32
#define CANAL__MAC_BYTES 32

/* Where one connection's opening stands, on the acceptor side. */
enum canal__opening_stage {
	CANAL__OPENING_HELLO,  /* reading {magic, rank} */
	CANAL__OPENING_JOB,    /* magic known: reading job[16] */
	CANAL__OPENING_NONCE,  /* keyed: reading nonce_c */
	CANAL__OPENING_ANSWER, /* keyed: challenge sent, reading mac_c */
	CANAL__OPENING_PASSED, /* the caller sends the verdict */
	CANAL__OPENING_FAILED, /* refused or cut short: err and why */
};

/*
 * One connection's opening on the acceptor side, advanced by
 * canal__auth_opening_step() as its bytes come, never waiting, so that an
 * acceptor can have many in flight and none waits for another (accept.c).
 * The caller owns it and fd; key (NULL: plain hello) and job stay valid
 * while the opening lives. Read only stage, peer, err, why and deadline.
 */
struct canal__auth_opening {
	int fd;
	const unsigned char *key;
	const unsigned char *job; /* ours: the peer's must be the same */
	int rank, lo, hi;        /* ours, and the range the peer's must be in */
	uint64_t deadline;       /* canal__now_ms() clock: the whole opening */
	enum canal__opening_stage stage;
	size_t have;             /* bytes of the message being read */
	int peer;                /* PASSED: the connector's rank */
	int err;                 /* FAILED: the negative errno */
	unsigned char hello[8 + CANAL__JOB_BYTES + CANAL__NONCE_BYTES];
	unsigned char nonce_a[CANAL__NONCE_BYTES];
	unsigned char mac_c[CANAL__MAC_BYTES];
	char why[160];
};

/* Start the opening of fd, a connection just accepted: the peer's job
 * token must be job, its rank in [lo, hi), the whole opening done by
 * deadline (canal__now_ms() clock; at most CANAL__OPENING_WAIT_MS away, as
 * the caller chooses). Reads nothing yet. */
void canal__auth_opening_init(struct canal__auth_opening *o, int fd,
			      const unsigned char *key,
			      const unsigned char job[CANAL__JOB_BYTES],
			      int rank, int lo, int hi, uint64_t deadline);
/* Read what fd has of the opening now and answer what it calls for,
 * without waiting. Returns 0 once it passed (the peer's rank in o->peer;
 * the caller then sends the verdict itself: canal__auth_answer with
 * CANAL__V_OK, or CANAL__V_TWICE for a rank it has already);
 * -EINPROGRESS while more is to come (call again when fd is readable, or
 * at o->deadline); else the negative errno it failed with, the reason in
 * o->why, the refusal's verdict already sent when the peer spoke canal's
 * opening (none to garbage, a short read or a late one): -EPROTO garbage,
 * a version 1 hello or a rank out of range, -EACCES no key on one side or
 * a wrong MAC, -ESTALE a rank of another job (its job token differs),
 * -ECONNRESET end of stream, -ETIMEDOUT unfinished at o->deadline, or a
 * socket's errno. The caller closes the connection and logs. Once it has
 * passed or failed, every call returns the same. */
int canal__auth_opening_step(struct canal__auth_opening *o);
/* The same on one connection, waiting: checks the opening of fd within
 * CANAL__OPENING_WAIT_MS; the peer's rank (which must be in [lo, hi), its
 * job token job) in *peer. 0 when the handshake succeeded (the caller then
 * sends the verdict), else a negative errno with the reason in why (as
 * above). */
int canal__auth_accept(int fd, const unsigned char *key,
		       const unsigned char job[CANAL__JOB_BYTES], int rank,
		       int lo, int hi, int *peer, char *why, size_t whylen);
/* Send the verdict code on fd, without waiting (it fits in the socket's
 * buffer: auth.c, send_now): 0, or a negative errno (the connector is
 * gone: the caller drops the connection). */
int canal__auth_answer(int fd, enum canal__verdict code);

#endif /* CANAL_ENGINE_AUTH_H */
