/* SPDX-License-Identifier: MIT */
/*
 * transfer/exchange.h - how the processes of a job learn each other's
 * addresses. Two back ends behind one small interface:
 *
 *  - files (canal-launch, the tests): put writes <dir>/<key>.<rank> under
 *    a temporary name then renames it (a reader never sees half a value);
 *    get polls for the peer's file until the deadline; fence does nothing.
 *  - PMIx (mpirun, srun): put is PMIx_Put, fence is PMIx_Commit then a
 *    PMIx_Fence over the whole job collecting the data, get is PMIx_Get.
 *  - the launcher (canal-launch --hosts: no directory shared between the
 *    hosts): $CANAL_LAUNCH_ADDR = "ip:port" of canal-launch's key-value
 *    service; each put or get is one TCP connection carrying one line:
 *    "P <key>.<rank> <value>" answered "K", or "G <key>.<rank>" answered
 *    "V <value>" or "N" (not there yet: get asks again until its
 *    deadline); fence does nothing.
 *
 * The protocol the drivers follow works with both: every rank puts what it
 * has, then every rank calls fence (collective: under PMIx it returns only
 * once all ranks reached it), then gets the peers' values. Values are
 * short strings (at most CANAL__XCHG_MAX bytes with the NUL).
 */
#ifndef CANAL_ENGINE_EXCHANGE_H
#define CANAL_ENGINE_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#define CANAL__XCHG_MAX 4096

struct canal__xchg {
	int rank, size;
	const char *dir;  /* files back end; NULL under PMIx */
	const char *launch_addr; /* launcher back end ("ip:port"), or NULL */
	void *pmix;       /* PMIx back end (a pmix_proc_t of this process) */
	const char *tcp_key; /* key of the TCP address; NULL: "tcp" (rail i
			      * of several: "tcp<i>") */
};

/* Publish value under key for this rank: 0, or a negative errno. The
 * launcher back end asks again (a network that cut the exchange short, a
 * service that refused it, a launcher gone or silent) until deadline_ms
 * (CLOCK_MONOTONIC milliseconds: the open's), then -ETIMEDOUT whatever
 * the last attempt met (said on stderr); -EINVAL for a launch address
 * that is not "ip:port" or a value with a newline. The files and PMIx back
 * ends do not wait (PMIx_Put is local: the fence waits). */
int canal__xchg_put(const struct canal__xchg *x, const char *key,
		    const char *value, uint64_t deadline_ms);
/* Collective under PMIx (see above): returns once every rank has put its
 * values, or -ETIMEDOUT at deadline_ms (CLOCK_MONOTONIC milliseconds,
 * rounded up to PMIx's whole seconds, at least 1) when a rank has not
 * reached its fence by then (the open's connect timeout), -ECONNRESET
 * when a rank ended without reaching it (PMIx's partial success), or -EIO
 * (PMIx failed otherwise). */
int canal__xchg_fence(const struct canal__xchg *x, uint64_t deadline_ms);
/* The value rank put under key, into buf[cap]: 0, -ETIMEDOUT at
 * deadline_ms (CLOCK_MONOTONIC milliseconds) with no value, the launcher's
 * included whatever its last attempt met (the value not there yet, or the
 * launcher gone, refusing connections or silent: said on stderr; the same
 * rule as put's), -EPROTO when too long or, from the launcher, at once on
 * an answer outside its protocol; -EINVAL for a launch address that is
 * not "ip:port". */
int canal__xchg_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms);

/* PMIx launch (pmix.c): when the environment says this process was started
 * by a PMIx server (PMIX_RANK and PMIX_NAMESPACE set), connect to it and
 * fill x (rank, size, pmix): 1; 0 when not under PMIx (or canal was built
 * without PMIx); a negative errno when PMIx is there but fails. */
int canal__pmix_init(struct canal__xchg *x);
void canal__pmix_fini(struct canal__xchg *x);

uint64_t canal__now_ms(void);

#endif /* CANAL_ENGINE_EXCHANGE_H */
