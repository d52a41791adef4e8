/* SPDX-License-Identifier: MIT */
/*
 * transfer/ucx_priv.h - what the UCX driver's two files share (ucx.c: the
 * packet driver and its bulk transfers; ucx_native.c: the engine's
 * messages as UCP tagged messages): libucp's entry points, loaded at
 * run time, the session's UCP context and worker, a peer's driver.
 * Not for the other layers: they see driver.h only.
 */
#ifndef CANAL_ENGINE_UCX_PRIV_H
#define CANAL_ENGINE_UCX_PRIV_H

#include "driver.h"

#include <stdbool.h>
#include <stddef.h>
#include <ucp/api/ucp.h>

/* libucp is loaded when a session first asks for the ucx driver, not
 * linked: a library linked with libucp brings libucm, whose memory hooks
 * (madvise, mmap, brk...) then run in every program using canal, UCX or
 * not (and break ThreadSanitizer). The calls below go through this table. */
struct canal__ucx_api {
	void *lib;
	int err;
	ucs_status_t (*config_read)(const char *, const char *, ucp_config_t **);
	void (*config_release)(ucp_config_t *);
	ucs_status_t (*config_modify)(ucp_config_t *, const char *, const char *);
	ucs_status_t (*init_version)(unsigned, unsigned, const ucp_params_t *,
				     const ucp_config_t *, ucp_context_h *);
	void (*cleanup)(ucp_context_h);
	ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t *,
				      ucp_worker_h *);
	void (*worker_destroy)(ucp_worker_h);
	ucs_status_t (*worker_get_address)(ucp_worker_h, ucp_address_t **, size_t *);
	void (*worker_release_address)(ucp_worker_h, ucp_address_t *);
	unsigned (*worker_progress)(ucp_worker_h);
	ucs_status_t (*ep_create)(ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *);
	ucs_status_ptr_t (*ep_close_nbx)(ucp_ep_h, const ucp_request_param_t *);
	ucs_status_ptr_t (*tag_send_nbx)(ucp_ep_h, const void *, size_t, ucp_tag_t,
					 const ucp_request_param_t *);
	ucs_status_ptr_t (*tag_recv_nbx)(ucp_worker_h, void *, size_t,
					 ucp_tag_t, ucp_tag_t,
					 const ucp_request_param_t *);
	ucs_status_t (*request_check_status)(void *);
	void (*request_free)(void *);
	void (*request_cancel)(ucp_worker_h, void *);
	ucp_tag_message_h (*tag_probe_nb)(ucp_worker_h, ucp_tag_t, ucp_tag_t, int,
					  ucp_tag_recv_info_t *);
	const char *(*status_string)(ucs_status_t);
};
extern struct canal__ucx_api canal__ucx_api;

#define ucp_config_read canal__ucx_api.config_read
#define ucp_config_release canal__ucx_api.config_release
#define ucp_config_modify canal__ucx_api.config_modify
#define ucp_cleanup canal__ucx_api.cleanup
#define ucp_worker_create canal__ucx_api.worker_create
#define ucp_worker_destroy canal__ucx_api.worker_destroy
#define ucp_worker_get_address canal__ucx_api.worker_get_address
#define ucp_worker_release_address canal__ucx_api.worker_release_address
#define ucp_worker_progress canal__ucx_api.worker_progress
#define ucp_ep_create canal__ucx_api.ep_create
#define ucp_ep_close_nbx canal__ucx_api.ep_close_nbx
#define ucp_tag_send_nbx canal__ucx_api.tag_send_nbx
#define ucp_tag_recv_nbx canal__ucx_api.tag_recv_nbx
#define ucp_request_check_status canal__ucx_api.request_check_status
#define ucp_request_free canal__ucx_api.request_free
#define ucp_request_cancel canal__ucx_api.request_cancel
#define ucp_tag_probe_nb canal__ucx_api.tag_probe_nb
#define ucs_status_string canal__ucx_api.status_string

#define UCX_MAX_PACKET ((size_t)1 << 20)
/* Messages above go by the engine's rendezvous: from UCX_BULK_MIN bytes
 * by bulk transfer (below: the engine's RTS, and the data by UCX's own
 * rendezvous between the users' buffers), between the two by the
 * engine's RTS/RTR/DATA. */
#define UCX_EAGER_MAX ((size_t)8192)
#define UCX_BULK_MIN ((size_t)8448)
/* UCX's rendezvous threshold, set in the context's configuration unless
 * the user set UCX_RNDV_THRESH: every bulk transfer then goes by UCX's
 * rendezvous, so a receiver's UCX holds a small request for a bulk whose
 * receive is not posted yet, never the data (the engine's flow control
 * does not count bulk bytes), while a packet of one eager message (at
 * most UCX_EAGER_MAX and its header) stays below it, eager. */
#define UCX_RNDV_THRESH "8448"
/* Tags: a packet's is the sender's rank; a bulk transfer's has the top
 * bit, the sender's rank in bits 48-62 and the low 48 bits of the
 * sending request's cookie (index, 16 bits of generation). */
#define UCX_BULK_BIT ((ucp_tag_t)1 << 63)
#define UCX_BULK_RANKS 32768
#define UCX_BULK_ID_MASK (((ucp_tag_t)1 << 48) - 1)
#define UCX_SLOTS 8
/* A bulk receive's scratch buffer (ucx.c, ucx_bulk_recv). */
#define UCX_SCRATCH ((size_t)1 << 20)
#define UCX_IMM_MAX 8192 /* larger packets go straight to a slot */
#define UCX_SHORT_MAX 1024 /* smaller ones are sent contiguous */
#define UCX_MAX_IOV 64
#define UCX_CLOSE_MS 1000
/* A drain progresses the worker until it has nothing left to do, at most
 * this many times: bounded work, no waiting for a peer (ucx.c,
 * canal__ucx_worker_drain; ucx_native.c's aborts). */
#define UCX_DRAIN_ROUNDS 4096

/* Which endpoints ask UCX for peer failure detection
 * (UCP_ERR_HANDLING_MODE_PEER): CANAL_UCX_ERR_MODE, read once per
 * session (ucx.c, err_mode_choice). */
enum ucx_err_choice {
	UCX_ERR_BY_HOST, /* unset: peers on other hosts only */
	UCX_ERR_PEER,    /* "peer": every peer */
	UCX_ERR_NONE,    /* "none": no peer */
};

/* A buffer a closed driver left to UCX: a request of it was still in
 * flight when the close (or a bulk receive's cancel) gave up
 * (UCX_CLOSE_MS; a peer that stalls), and UCX may still read it (a
 * send's slot, a bulk receive's iov) or write it (the posted receive's
 * in[], a bulk receive's scratch) whenever the worker progresses
 * (another driver of the session, its close). After the worker is
 * destroyed (canal__ucx_ctx_unref) this process's UCX touches none of
 * them, but a peer may still: its rendezvous reads a send's slot, or
 * writes a receive's in[] or scratch, through the kernel
 * (process_vm_readv/writev: UCX's cma, which no deregistration revokes)
 * once it resumes. So those buffers (size > 0: mapped on their own,
 * ucx_rbuf_alloc) are retired, not freed: their pages go back to the
 * kernel and their addresses stay reserved, unreadable and unwritable,
 * so that the peer's late access fails (EFAULT) instead of reading or
 * writing memory this process has since put to another use; the rest
 * (size 0: the iov, which no peer sees) is freed. */
struct ucx_orphan {
	struct ucx_orphan *next;
	void *buf;
	size_t size; /* 0: malloc's (free); else ucx_rbuf_alloc's (retire) */
};

/* Buffers that a peer's UCX may read or write through the kernel (a
 * send's slot, in[], scratch: struct ucx_orphan), each mapped on its
 * own (ucx_rbuf.c) so that it can be retired. alloc: NULL without
 * memory. grow: p (of old bytes, or NULL with old 0) moved or extended
 * to size bytes keeping its bytes; NULL without memory, p then intact.
 * free: munmap (p NULL: nothing). retire: the pages given back and the
 * addresses kept reserved, inaccessible (PROT_NONE); never made
 * available to another mapping; left as they are, a leak, if that
 * fails. size: as given at alloc or grow. */
void *canal__ucx_rbuf_alloc(size_t size);
void *canal__ucx_rbuf_grow(void *p, size_t old, size_t size);
void canal__ucx_rbuf_free(void *p, size_t size);
void canal__ucx_rbuf_retire(void *p, size_t size);

struct ucx_ctx {
	ucp_context_h ctx;
	ucp_worker_h worker;
	struct ucx_orphan *orphans; /* retired after ucp_worker_destroy */
	int refs;
	int rank;
	bool bulk;  /* our rendezvous threshold is in force */
	bool native; /* the engine's messages are UCP tagged messages
		      * (ucx_native.c): no packets, UCX's own thresholds */
	enum ucx_err_choice err_choice;
	char host[160]; /* this process's host_token() (ucx.c), published
			 * with the address and compared with the peers' */
};

struct ucx_slot {
	unsigned char *buf;
	size_t cap;
	void *req; /* non-NULL: in flight */
};

struct ucx_driver {
	struct canal__driver base;
	struct ucx_ctx *c;
	ucp_ep_h ep;
	int peer;
	ucs_status_t failed; /* the link broke (the endpoint's error
			      * callback, an operation, health() seeing the
			      * peer's pid gone): reported by health(), and
			      * by recv() once it has handed out what the
			      * peer delivered (ucx.c, "A broken link") */
	struct ucx_slot slot[UCX_SLOTS];
	unsigned busy;
	unsigned char *in;
	/* The next packet's receive, posted ahead (as soon as the last one
	 * is released) so that UCX matches it on arrival and writes it
	 * straight into in[] (the expected path), instead of parking it as
	 * unexpected for a probe and a second copy. */
	void *rreq;          /* posted, not complete (NULL otherwise) */
	bool posted;         /* a receive is posted or complete, not taken */
	bool rdone;          /* it completed: rstatus, rlen */
	ucs_status_t rstatus;
	size_t rlen;
	bool have;           /* in[0..rlen) is a packet not yet released */
	bool same_host;      /* peer_pid is a pid of this host */
	unsigned char *scratch; /* bulk bytes beyond a receive buffer */
	int pidfd;           /* same host: a pidfd of the peer, or -1 */
};

/* Drop a reference to c (the drivers' and the native object's): the last
 * one destroys the worker, frees the orphans, then the context. */
void canal__ucx_ctx_unref(struct ucx_ctx *c);

/* Progress c's worker until it has nothing left to do (at most
 * UCX_DRAIN_ROUNDS times, never waiting for a peer): what a dead peer
 * had delivered is then matched to the receives posted for it or queued
 * as unexpected. The number of events. */
unsigned canal__ucx_worker_drain(struct ucx_ctx *c);

#endif /* CANAL_ENGINE_UCX_PRIV_H */
