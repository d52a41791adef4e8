/* SPDX-License-Identifier: MIT */
/*
 * transfer/lazy.h - gates connected on first use (lazy.c): the inboxes
 * through which a rank learns that a peer has connected to it.
 */
#ifndef CANAL_ENGINE_LAZY_H
#define CANAL_ENGINE_LAZY_H

struct canal_engine;
struct canal__lazy;

/* Create this rank's inbox in dir and map every peer's, waiting for them
 * up to timeout_ms: 0, -ETIMEDOUT, -EPROTO (a peer's inbox is not one of
 * ours), -ENOMEM or an errno. */
int canal__lazy_open(const char *dir, int rank, int size, int timeout_ms,
		     bool shm_read, struct canal__lazy **out);
void canal__lazy_close(struct canal__lazy *z);
/* Give gate gi its driver if it has none, and ring the peer: 0, or the
 * gate's error (a failed attach closes the gate). Never waits. */
int canal__lazy_connect(struct canal_engine *e, int gi);
/* Attach the gates whose peers rang since the last look: how many. One
 * load when nobody rang. */
int canal__lazy_poll(struct canal_engine *e);
/* Fail the gates not yet connected whose peer died. */
void canal__lazy_health(struct canal_engine *e);

#endif
