/* SPDX-License-Identifier: MIT */
/*
 * transfer/auth.h - the opening of a TCP connection between two ranks:
 * a plain hello, or, with a shared key, a challenge-response handshake so
 * that a stray or hostile connection cannot become a gate.
 *
 * Plain (no key): the connector sends {u32 HELLO_MAGIC, u32 rank}.
 *
 * Keyed: the key is 32 bytes derived (BLAKE2b, crypto_generichash) from
 * the contents of a key file that only its owner can read. MACs are
 * libsodium's crypto_auth (HMAC-SHA-512-256).
 *   1. connector -> acceptor: {u32 AUTH_MAGIC, u32 rank_c, nonce_c[32]}
 *   2. acceptor -> connector: {nonce_a[32], mac_a}
 *        mac_a = HMAC(key, 'A' | nonce_c | nonce_a | rank_c | rank_a)
 *   3. connector -> acceptor: {mac_c}
 *        mac_c = HMAC(key, 'C' | nonce_c | nonce_a | rank_c | rank_a)
 * Each side checks the other's MAC (constant time). nonce_a is fresh random
 * bytes for every connection, so a recorded handshake replayed on a new
 * connection carries a mac_c for another nonce_a and is refused; the
 * direction label keeps mac_a from being reflected as mac_c. A wrong
 * magic (garbage, or a plain hello to a keyed acceptor and the reverse),
 * a short read (2 s limit) or a wrong MAC refuses the connection: the
 * acceptor closes it and logs one line on stderr; nothing it sent is read.
 */
#ifndef CANAL_ENGINE_AUTH_H
#define CANAL_ENGINE_AUTH_H

#include <stddef.h>

#define CANAL__KEY_BYTES 32
#define CANAL__HELLO_MAGIC 0x63746370u /* "pctc" */
#define CANAL__AUTH_MAGIC 0x61746370u  /* "pcta" */

/* Load the key from path: a regular file owned by this user, not readable
 * or writable by group or others, 16 to 4096 bytes. 0, or a negative errno
 * with the reason in why (-EACCES: permissions, -EINVAL: size). */
int canal__auth_load(const char *path, unsigned char key[CANAL__KEY_BYTES],
		     char *why, size_t whylen);
/* Connector side, on a connected blocking socket: 0, or a negative errno
 * with the reason in why. key NULL: plain hello. */
int canal__auth_connect(int fd, const unsigned char *key, int rank,
			int peer, char *why, size_t whylen);
/* Acceptor side: the peer's rank (which must be in [lo, hi)) in *peer once
 * the handshake succeeded: 0, or a negative errno with the reason in why
 * (the caller closes the connection and logs). */
int canal__auth_accept(int fd, const unsigned char *key, int rank, int lo,
		       int hi, int *peer, char *why, size_t whylen);

#endif /* CANAL_ENGINE_AUTH_H */
