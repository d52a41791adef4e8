/* SPDX-License-Identifier: MIT */
/*
 * transfer/ucx.c - the UCX driver: one UCP context and worker per session
 * (shared by the session's drivers, reference counted), one endpoint per
 * peer, packets sent as UCP tagged messages whose tag is the sender's rank.
 * UCX chooses the protocol of each packet: eager for small ones, its own
 * rendezvous (zero-copy: cma/knem on shared memory, RDMA get/put on
 * InfiniBand/RoCE) for large ones, above its rndv_thresh. The transports
 * are UCX's (UCX_TLS): the same binary runs on shared memory and TCP here
 * and on verbs where the hardware is (docs/ENGINE.md, "Across machines").
 *
 * Packets up to UCX_MAX_PACKET (1 MiB) go as one message, so the engine's
 * own rendezvous (RTS/RTR/DATA) is used only above 1 MiB.
 *
 * send(): the packet is first offered to UCX from the caller's iovec with
 * "complete immediately or refuse" (UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL): no
 * copy when UCX can take it at once. Otherwise it is gathered into a free
 * send slot (the driver's copy, so the caller's buffers are free on
 * return) and sent from there; the slot is busy until the request
 * completes. No free slot: -EAGAIN. idle(): no busy slot. Messages of one
 * endpoint with one tag are matched in the order they were sent (UCP's
 * ordering rule), so packets arrive in order.
 *
 * recv(): the receive of the next message with this peer's tag is posted
 * ahead, into the driver's input buffer (at release() of the previous
 * packet), so UCX matches it on arrival (its expected path: no unexpected
 * queue, no second copy); recv() progresses the worker and hands the
 * packet out once that receive has completed. A message longer than
 * UCX_MAX_PACKET is -EPROTO.
 *
 * Addresses: each rank puts "pid host mode len sum <hex worker address>"
 * under "ucx" (exchange.h: files in the launch directory or PMIx; mode 'n'
 * when the session's messages go by UCX's matching, ucx_native.c, else
 * 'p': every rank must agree, or open fails with -EPROTO; len: the
 * address's bytes, sum: their FNV-1a in 8 hex digits), fences, and
 * creates an endpoint to each peer's address. A value that does not
 * parse, or whose address does not match its len and sum, fails open
 * with -EPROTO before UCX sees it (UCX aborts the process on an address
 * it cannot unpack: test_revucx_bad_address).
 *
 * Peer failure: an endpoint to a peer on another host (another hostname)
 * asks for UCX's failure detection (UCP_ERR_HANDLING_MODE_PEER): its
 * error callback marks the driver, health() then reports the peer dead,
 * and UCX fails the transfers under way with it, those of receives the
 * engine cannot tie to the peer included (an any-gate receive UCX has
 * matched to the peer's rendezvous: docs/ENGINE.md, "UCX's own
 * matching"). An endpoint on the same host does not
 * (UCP_ERR_HANDLING_MODE_NONE): in UCX 1.13 the peer mode excludes the
 * shared-memory transports (UCX then runs over TCP: 8 B one-way 10 times
 * slower or more, docs/ENGINE.md, near the UCX_TLS table), and health()
 * sees a dead peer of this host by its pid (a pidfd that becomes
 * readable; kill(pid, 0) where pidfd_open fails). "Another host" is
 * another hostname, boot id or PID namespace (host_token()): cloned VMs
 * with one hostname differ by boot id, and a peer in another PID
 * namespace of this machine (a container), whose pid means nothing here,
 * counts as another host. CANAL_UCX_ERR_MODE=peer or none makes
 * every endpoint alike; another value fails open with -EINVAL (that rank
 * fails before publishing its address: the others wait for it until
 * their connect timeout). An endpoint that
 * UCX refuses in the peer mode is made in the other (a transport without
 * failure detection).
 *
 * A broken link loses nothing the peer had delivered. Its first sign (the
 * endpoint's error callback, an operation that fails, health() seeing
 * the pid gone) is latched in failed, and reported by recv() only: once
 * failed, recv() still hands out what the worker holds from the peer
 * (the posted receive, then the unexpected queue), and when nothing is
 * left it progresses the worker until idle (canal__ucx_worker_drain:
 * bounded, no waiting for the peer; over TCP the peer's last bytes may
 * still be in the socket) and looks again; only then does it report the
 * error. Meanwhile send() says -EAGAIN, flush() 0, and bulk transfers
 * stay under way (one started on a broken link is held, not started):
 * the session fails the gate on the first error any of them returns, and
 * would drop the packets not taken yet. health() reports the death at
 * once: the session then drains the gate by recv() before failing it.
 *
 * Threading: none; the session's one-thread-at-a-time rule covers the
 * worker (created UCS_THREAD_MODE_SINGLE).
 */
#define _GNU_SOURCE
#include "driver.h"
#include "exchange.h"
#include "ucx_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <dlfcn.h>
#include <pthread.h>

/* The longest worker address published: its hex and the value's prefix
 * (pid, host token, mode, len, sum: under 300 bytes) fit CANAL__XCHG_MAX. */
#define UCX_ADDR_MAX ((CANAL__XCHG_MAX - 301) / 2)

struct canal__ucx_api canal__ucx_api;
static pthread_once_t ucx_once = PTHREAD_ONCE_INIT;

static void ucx_load(void)
{
	void *l = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
	void *s = l ? dlopen("libucs.so.0", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!l || !s) {
		fprintf(stderr, "canal engine: ucx driver: %s (apt install libucx0)\n",
			dlerror());
		canal__ucx_api.err = -ENOTSUP;
		return;
	}
#define LOAD(field, lib, name)                                               \
	do {                                                                 \
		*(void **)&canal__ucx_api.field = dlsym(lib, name);         \
		if (!canal__ucx_api.field)                                  \
			canal__ucx_api.err = -ENOTSUP;                      \
	} while (0)
	LOAD(config_read, l, "ucp_config_read");
	LOAD(config_release, l, "ucp_config_release");
	LOAD(config_modify, l, "ucp_config_modify");
	LOAD(init_version, l, "ucp_init_version");
	LOAD(cleanup, l, "ucp_cleanup");
	LOAD(worker_create, l, "ucp_worker_create");
	LOAD(worker_destroy, l, "ucp_worker_destroy");
	LOAD(worker_get_address, l, "ucp_worker_get_address");
	LOAD(worker_release_address, l, "ucp_worker_release_address");
	LOAD(worker_progress, l, "ucp_worker_progress");
	LOAD(ep_create, l, "ucp_ep_create");
	LOAD(ep_close_nbx, l, "ucp_ep_close_nbx");
	LOAD(tag_send_nbx, l, "ucp_tag_send_nbx");
	LOAD(tag_recv_nbx, l, "ucp_tag_recv_nbx");
	LOAD(request_check_status, l, "ucp_request_check_status");
	LOAD(request_free, l, "ucp_request_free");
	LOAD(request_cancel, l, "ucp_request_cancel");
	LOAD(tag_probe_nb, l, "ucp_tag_probe_nb");
	LOAD(status_string, s, "ucs_status_string");
#undef LOAD
	if (canal__ucx_api.err)
		fprintf(stderr, "canal engine: ucx driver: libucp lacks a function\n");
	canal__ucx_api.lib = l;
}


void canal__ucx_ctx_unref(struct ucx_ctx *c)
{
	if (--c->refs > 0)
		return;
	if (c->worker)
		ucp_worker_destroy(c->worker);
	/* The worker is gone: this process's UCX touches none of them any
	 * more; a peer still may (struct ucx_orphan). */
	while (c->orphans) {
		struct ucx_orphan *o = c->orphans;
		c->orphans = o->next;
		if (o->size)
			canal__ucx_rbuf_retire(o->buf, o->size);
		else
			free(o->buf);
		free(o);
	}
	if (c->ctx)
		ucp_cleanup(c->ctx);
	free(c);
}

unsigned canal__ucx_worker_drain(struct ucx_ctx *c)
{
	unsigned total = 0, k;
	for (int i = 0; i < UCX_DRAIN_ROUNDS; i++) {
		if ((k = ucp_worker_progress(c->worker)) == 0)
			break;
		total += k;
	}
	return total;
}

/* The link broke: latched, reported by recv() (header comment). */
static void link_broken(struct ucx_driver *d, ucs_status_t st)
{
	if (!d->failed)
		d->failed = st;
}

/* Report the broken link: its errno, the reason in why. */
static int ucx_fail(struct ucx_driver *d, ucs_status_t st)
{
	link_broken(d, st);
	snprintf(d->base.why, sizeof d->base.why, "ucx: %s",
		 ucs_status_string(st));
	return st == UCS_ERR_NO_MEMORY ? -ENOMEM : -ECONNRESET;
}

/* Retire the completed sends; a send that failed breaks the link. */
static void reap(struct ucx_driver *d)
{
	for (int i = 0; i < UCX_SLOTS && d->busy; i++) {
		struct ucx_slot *s = &d->slot[i];
		if (!s->req)
			continue;
		ucs_status_t st = ucp_request_check_status(s->req);
		if (st == UCS_INPROGRESS)
			continue;
		ucp_request_free(s->req);
		s->req = NULL;
		d->busy--;
		if (st != UCS_OK)
			link_broken(d, st);
	}
}

static int ucx_flush(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	/* Nothing in a slot: nothing of ours to push (a send taken at once
	 * is UCX's). The worker is progressed by recv() in the same round:
	 * one call per idle round instead of two (a waiter's round is
	 * shorter, so it sees an arrival sooner). A broken link: nothing
	 * will leave, and recv() reports it. */
	if (d->busy == 0 || d->failed)
		return 0;
	ucp_worker_progress(d->c->worker);
	reap(d);
	return 0;
}

static int ucx_send(struct canal__driver *d_, const struct iovec *iov, int n,
		    size_t total)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	if (total > UCX_MAX_PACKET || n > UCX_MAX_IOV)
		return -EMSGSIZE;
	if (d->failed)
		return -EAGAIN; /* for ever: recv() reports the broken link */
	ucp_tag_t tag = (ucp_tag_t)d->c->rank;
	if (total <= UCX_IMM_MAX && d->busy == 0) {
		/* Only when nothing is in flight: a packet must not overtake
		 * one still in a slot (it would not: same tag, same
		 * endpoint; kept simple all the same). */
		ucp_request_param_t p = {
			.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
					UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL,
		};
		ucs_status_ptr_t r;
		if (n == 1 || total <= UCX_SHORT_MAX) {
			/* Contiguous: UCX's eager-short protocol (the header
			 * inline in one transport operation) takes only a
			 * contiguous buffer; an iov goes by its slower
			 * pack-callback path. A small packet is gathered on
			 * the stack first (FORCE_IMM_CMPL: UCX has copied it
			 * out, or refused it, when the call returns). */
			unsigned char small[UCX_SHORT_MAX];
			const void *buf = iov[0].iov_base;
			if (n > 1) {
				size_t off = 0;
				for (int i = 0; i < n; i++) {
					memcpy(small + off, iov[i].iov_base,
					       iov[i].iov_len);
					off += iov[i].iov_len;
				}
				buf = small;
			}
			p.datatype = ucp_dt_make_contig(1);
			r = ucp_tag_send_nbx(d->ep, buf, total, tag, &p);
		} else {
			ucp_dt_iov_t v[UCX_MAX_IOV];
			for (int i = 0; i < n; i++) {
				v[i].buffer = iov[i].iov_base;
				v[i].length = iov[i].iov_len;
			}
			p.datatype = ucp_dt_make_iov();
			r = ucp_tag_send_nbx(d->ep, v, (size_t)n, tag, &p);
		}
		if (r == NULL)
			return 0;
		ucs_status_t st = UCS_PTR_STATUS(r);
		if (UCS_PTR_IS_PTR(r)) { /* not expected with FORCE_IMM_CMPL */
			ucp_request_free(r);
			return 0;
		}
		if (st != UCS_ERR_NO_RESOURCE) {
			link_broken(d, st);
			return -EAGAIN;
		}
	}
	reap(d);
	if (d->failed)
		return -EAGAIN;
	struct ucx_slot *s = NULL;
	for (int i = 0; i < UCX_SLOTS && !s; i++)
		if (!d->slot[i].req)
			s = &d->slot[i];
	if (!s) {
		ucp_worker_progress(d->c->worker);
		return -EAGAIN;
	}
	if (s->cap < total) {
		size_t cap = total < 4096 ? 4096 : total;
		unsigned char *b = canal__ucx_rbuf_grow(s->buf, s->cap, cap);
		if (!b)
			return -ENOMEM;
		s->buf = b;
		s->cap = cap;
	}
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		memcpy(s->buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	ucp_request_param_t p = { .op_attr_mask = 0 };
	ucs_status_ptr_t r = ucp_tag_send_nbx(d->ep, s->buf, total, tag, &p);
	if (r == NULL)
		return 0;
	if (UCS_PTR_IS_ERR(r)) {
		link_broken(d, UCS_PTR_STATUS(r));
		return -EAGAIN;
	}
	s->req = r;
	d->busy++;
	return 0;
}

/* UCX's completion of the posted receive (inside worker progress). */
static void recv_done(void *req, ucs_status_t st,
		      const ucp_tag_recv_info_t *info, void *arg)
{
	(void)req;
	struct ucx_driver *d = arg;
	d->rstatus = st;
	d->rlen = st == UCS_OK ? info->length : 0;
	d->rdone = true;
}

/* Post the receive of the next packet from this peer (tag = its rank,
 * exact: the bulk transfers' tags never match it) into in[]. Always as a
 * request whose callback reports the length: UCX 1.13 leaves recv_info
 * unwritten when a tag receive completes at once (seen here: a packet
 * already waiting came back with its length untouched). */
static int post_recv(struct ucx_driver *d)
{
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
				UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
		.cb.recv = recv_done,
		.user_data = d,
	};
	d->rdone = false;
	ucs_status_ptr_t r = ucp_tag_recv_nbx(d->c->worker, d->in,
					      UCX_MAX_PACKET,
					      (ucp_tag_t)d->peer, ~(ucp_tag_t)0,
					      &p);
	if (UCS_PTR_IS_ERR(r))
		return ucx_fail(d, UCS_PTR_STATUS(r));
	d->posted = true;
	d->rreq = r;
	return 0;
}

static int ucx_recv(struct canal__driver *d_, const unsigned char **pkt,
		    size_t *len)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	if (!d->posted) {
		int err = post_recv(d);
		if (err)
			return err;
	}
	if (!d->rdone) {
		/* A broken link: the peer's packets still in the worker or
		 * its socket are taken before the error (header comment). */
		if (d->failed)
			canal__ucx_worker_drain(d->c);
		else
			ucp_worker_progress(d->c->worker);
		if (!d->rdone)
			return d->failed ? ucx_fail(d, d->failed) : 0;
	}
	if (d->rreq) {
		ucp_request_free(d->rreq);
		d->rreq = NULL;
	}
	d->posted = false;
	if (d->rstatus != UCS_OK && d->rstatus != UCS_ERR_MESSAGE_TRUNCATED)
		return ucx_fail(d, d->rstatus);
	if (d->rstatus == UCS_ERR_MESSAGE_TRUNCATED || d->rlen == 0) {
		snprintf(d->base.why, sizeof d->base.why,
			 "bad packet length (%s)",
			 d->rstatus == UCS_OK ? "0" : "above the largest packet");
		return -EPROTO;
	}
	d->have = true;
	*pkt = d->in;
	*len = d->rlen;
	return 1;
}

static void ucx_release(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	d->have = false;
	/* The next receive goes out now, before the peer's next packet can
	 * arrive (an error here is found again by the next recv()); on a
	 * broken link too: it takes what UCX holds from the dead peer. */
	(void)post_recv(d);
}

/* The receive posted at release() completed at once: a packet is here. */
static bool ucx_buffered(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	return d->posted && d->rdone;
}

static bool ucx_idle(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	if (d->busy && !d->failed) {
		ucp_worker_progress(d->c->worker);
		reap(d);
	}
	return d->busy == 0 || d->failed; /* broken: nothing more will leave */
}

static int ucx_health(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	if (!d->failed && d->pidfd >= 0) {
		/* Readable once the peer has exited (a zombie included). */
		struct pollfd p = { .fd = d->pidfd, .events = POLLIN };
		if (poll(&p, 1, 0) > 0)
			d->failed = UCS_ERR_ENDPOINT_TIMEOUT;
	} else if (!d->failed && d->same_host && d->base.peer_pid > 0 &&
		   kill(d->base.peer_pid, 0) < 0 && errno == ESRCH) {
		d->failed = UCS_ERR_ENDPOINT_TIMEOUT;
	}
	if (d->failed) {
		snprintf(d->base.why, sizeof d->base.why, "ucx: %s",
			 ucs_status_string(d->failed));
		return -ECONNRESET;
	}
	return 0;
}

/* Progress until r completes or the deadline, then free r whatever its
 * state: true when it had completed, false when it is still under way
 * (UCX may still use its buffer until the worker's destruction: the
 * caller orphans it). A request left unfreed is one UCX's worker
 * destruction asserts on (an endpoint's close still flushing towards a
 * stalled peer: ucp_ep.c, "UCP_REQUEST_FLAG_RELEASED"; seen under TSan
 * in test_revucx_close_recv); freed, UCX completes it internally and
 * calls no callback for it. */
static bool wait_req(struct ucx_ctx *c, void *r, uint64_t deadline)
{
	if (!r || UCS_PTR_IS_ERR(r))
		return true;
	while (ucp_request_check_status(r) == UCS_INPROGRESS &&
	       canal__now_ms() < deadline)
		ucp_worker_progress(c->worker);
	bool done = ucp_request_check_status(r) != UCS_INPROGRESS;
	ucp_request_free(r);
	return done;
}

/* buf stays allocated until the worker is destroyed, then is retired
 * (size > 0, ucx_rbuf_alloc's) or freed (size 0, malloc's) (struct
 * ucx_orphan): a send's slot, a receive's in[], a bulk receive's iov and
 * scratch. Without memory for the list entry it is never freed: a leak
 * rather than UCX, or a peer, reading or writing freed memory. */
static void orphan(struct ucx_ctx *c, void *buf, size_t size)
{
	struct ucx_orphan *o = malloc(sizeof *o);
	if (!o)
		return;
	o->buf = buf;
	o->size = size;
	o->next = c->orphans;
	c->orphans = o;
}

static void ucx_close(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	uint64_t deadline = canal__now_ms() + UCX_CLOSE_MS;
	if (d->rreq) {
		if (!d->rdone) {
			ucp_request_cancel(d->c->worker, d->rreq);
			while (!d->rdone && canal__now_ms() < deadline)
				ucp_worker_progress(d->c->worker);
		}
		/* Freed whatever its state: UCX then calls no callback for
		 * it, which would write into d after the free below. */
		ucp_request_free(d->rreq);
		/* Still under way at the deadline: matched to a rendezvous
		 * of a peer that stalls (no cancel ends it), so UCX writes
		 * the packet into in[] whenever the peer resumes and the
		 * worker runs (another driver of the session): orphaned,
		 * not freed, as a slot's buffer below. */
		if (!d->rdone) {
			orphan(d->c, d->in, UCX_MAX_PACKET);
			d->in = NULL;
		}
	}
	/* A send still under way at the deadline keeps its buffer: UCX
	 * sends from it whenever the peer resumes and the worker runs
	 * (another driver of the session): orphaned, not freed. */
	for (int i = 0; i < UCX_SLOTS; i++) {
		if (d->slot[i].req &&
		    !wait_req(d->c, d->slot[i].req, deadline)) {
			orphan(d->c, d->slot[i].buf, d->slot[i].cap);
			d->slot[i].buf = NULL;
		}
	}
	if (d->ep) {
		ucp_request_param_t p = {
			.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
			.flags = d->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0,
		};
		wait_req(d->c, ucp_ep_close_nbx(d->ep, &p), deadline);
	}
	for (int i = 0; i < UCX_SLOTS; i++)
		canal__ucx_rbuf_free(d->slot[i].buf, d->slot[i].cap);
	if (d->pidfd >= 0)
		close(d->pidfd);
	canal__ucx_rbuf_free(d->in, UCX_MAX_PACKET);
	canal__ucx_rbuf_free(d->scratch, UCX_SCRATCH);
	canal__ucx_ctx_unref(d->c);
	free(d);
}

/* Bulk transfers: a message's bytes straight from the sender's buffer to
 * the receiver's, by UCX's rendezvous (zero-copy: cma on one host, RDMA
 * where there is a card), matched by the tag of (sender rank, id). */
struct ucx_bulk {
	void *req;       /* UCX's request; NULL: held, not started (a broken
			  * link: recv() reports it, bulk_cancel frees it) */
	bool done;
	ucs_status_t st;
	size_t len;      /* receive: bytes that arrived */
	ucp_dt_iov_t *iov; /* receive into a buffer smaller than the data */
	bool recv;
};

static void bulk_free(struct ucx_bulk *b)
{
	free(b->iov);
	free(b);
}

static void bulk_send_done(void *req, ucs_status_t st, void *arg)
{
	(void)req;
	struct ucx_bulk *b = arg;
	b->st = st;
	b->done = true;
}

static void bulk_recv_done(void *req, ucs_status_t st,
			   const ucp_tag_recv_info_t *info, void *arg)
{
	(void)req;
	struct ucx_bulk *b = arg;
	b->st = st;
	b->len = st == UCS_OK ? info->length : 0;
	b->done = true;
}

static ucp_tag_t bulk_tag(int rank, uint64_t id)
{
	return UCX_BULK_BIT | (ucp_tag_t)rank << 48 | (id & UCX_BULK_ID_MASK);
}

/* r: UCX's answer to the start of b, or the status of a link already
 * broken (not started). A failed start breaks the link; b is then held
 * (header comment). */
static int bulk_start(struct ucx_driver *d, ucs_status_ptr_t r,
		      struct ucx_bulk *b, void **h)
{
	if (UCS_PTR_IS_ERR(r))
		link_broken(d, UCS_PTR_STATUS(r));
	else
		b->req = r;
	*h = b;
	return 0;
}

/* A new handle and the request parameters both directions share (a
 * callback on b, always through a request); 0 or -ENOMEM. */
static int bulk_new(struct ucx_bulk **b, ucp_request_param_t *p)
{
	*b = calloc(1, sizeof **b);
	if (!*b)
		return -ENOMEM;
	*p = (ucp_request_param_t){
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
				UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
		.user_data = *b,
	};
	return 0;
}

static int ucx_bulk_send(struct canal__driver *d_, uint64_t id,
			 const void *buf, size_t len, void **h)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	struct ucx_bulk *b;
	ucp_request_param_t p;
	int err = bulk_new(&b, &p);
	if (err)
		return err;
	p.cb.send = bulk_send_done;
	ucs_status_ptr_t r = d->failed ? UCS_STATUS_PTR(d->failed)
				       : ucp_tag_send_nbx(d->ep, buf, len,
							  bulk_tag(d->c->rank, id),
							  &p);
	return bulk_start(d, r, b, h);
}

/* The receive of exactly len bytes: UCX then reports a bulk longer than
 * the RTS said as truncated (the engine's -EPROTO), and a buffer smaller
 * than the message (cap < len) still gets the message's first cap bytes,
 * as the engine promises for -EMSGSIZE (UCX writes nothing into a
 * rendezvous receive that is too small): the rest goes into the driver's
 * scratch buffer, the same one over and over (iov entries). */
static int ucx_bulk_recv(struct canal__driver *d_, uint64_t id, void *buf,
			 size_t cap, size_t len, void **h)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	struct ucx_bulk *b;
	ucp_request_param_t p;
	int err = bulk_new(&b, &p);
	if (err)
		return err;
	p.cb.recv = bulk_recv_done;
	b->recv = true;
	const void *dst = buf;
	size_t count = len;
	if (cap < len) {
		size_t rest = len - cap;
		size_t n = 1 + (rest + UCX_SCRATCH - 1) / UCX_SCRATCH;
		if (!d->scratch)
			d->scratch = canal__ucx_rbuf_alloc(UCX_SCRATCH);
		b->iov = calloc(n, sizeof *b->iov);
		if (!d->scratch || !b->iov) {
			free(b->iov);
			free(b);
			return -ENOMEM;
		}
		b->iov[0].buffer = buf;
		b->iov[0].length = cap;
		for (size_t i = 1; i < n; i++) {
			size_t k = rest < UCX_SCRATCH ? rest : UCX_SCRATCH;
			b->iov[i].buffer = d->scratch;
			b->iov[i].length = k;
			rest -= k;
		}
		p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
		p.datatype = ucp_dt_make_iov();
		dst = b->iov;
		count = n;
	}
	ucs_status_ptr_t r = d->failed ? UCS_STATUS_PTR(d->failed)
				       : ucp_tag_recv_nbx(d->c->worker, (void *)dst,
							  count, bulk_tag(d->peer, id),
							  ~(ucp_tag_t)0, &p);
	return bulk_start(d, r, b, h);
}

static int ucx_bulk_test(struct canal__driver *d_, void *h, size_t *len)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	struct ucx_bulk *b = h;
	/* Under way, or held: a broken link, here or seen by UCX in this
	 * transfer, is reported by recv() (header comment), and the gate's
	 * failure then cancels b. */
	if (!b->done)
		return 0;
	ucs_status_t st = b->st;
	if (st != UCS_OK && st != UCS_ERR_MESSAGE_TRUNCATED) {
		link_broken(d, st);
		return 0;
	}
	if (len)
		*len = b->len;
	ucp_request_free(b->req);
	bulk_free(b);
	return st == UCS_OK ? 1 : -EMSGSIZE;
}

static void ucx_bulk_cancel(struct canal__driver *d_, void *h)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	struct ucx_bulk *b = h;
	if (b->req && !b->done && b->recv) {
		/* A receive not matched yet ends at once; one under way ends
		 * when UCX is done writing (a second at most: a peer that
		 * stalls mid-transfer keeps it, and it is then dropped by
		 * the endpoint's close). A send cannot be called back in
		 * UCX 1.13 (ucp_request_cancel ignores it): the peer may
		 * still read its buffer (engine.h, canal_engine_close). */
		ucp_request_cancel(d->c->worker, b->req);
		uint64_t deadline = canal__now_ms() + UCX_CLOSE_MS;
		while (!b->done && canal__now_ms() < deadline)
			ucp_worker_progress(d->c->worker);
		/* Still under way: UCX reads the iov and writes the bytes
		 * beyond the user's buffer into the scratch buffer whenever
		 * the peer resumes and the worker runs (ucx_close, in[]):
		 * both orphaned, not freed; a later bulk gets a new
		 * scratch buffer. */
		if (!b->done && b->iov) {
			orphan(d->c, b->iov, 0);
			b->iov = NULL;
			if (d->scratch)
				orphan(d->c, d->scratch, UCX_SCRATCH);
			d->scratch = NULL;
		}
	}
	/* Once freed, UCX calls no callback for it (ucp_request_free): b
	 * goes too. */
	if (b->req)
		ucp_request_free(b->req);
	bulk_free(b);
}

static const struct canal__driver_ops ucx_ops = {
	.name = "ucx",
	.send = ucx_send,
	.flush = ucx_flush,
	.recv = ucx_recv,
	.release = ucx_release,
	.buffered = ucx_buffered,
	.idle = ucx_idle,
	.health = ucx_health,
	.read_peer = NULL,
	.bulk_send = ucx_bulk_send,
	.bulk_recv = ucx_bulk_recv,
	.bulk_test = ucx_bulk_test,
	.bulk_cancel = ucx_bulk_cancel,
	.close = ucx_close,
};

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	(void)ep;
	struct ucx_driver *d = arg;
	if (!d->failed)
		d->failed = st;
}

static int ctx_new(int rank, bool native, struct ucx_ctx **out)
{
	pthread_once(&ucx_once, ucx_load);
	if (canal__ucx_api.err)
		return canal__ucx_api.err;
	struct ucx_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->rank = rank;
	ucp_config_t *cfg;
	if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK) {
		free(c);
		return -EINVAL;
	}
	/* Bulk transfers need every one of them to go by rendezvous (held
	 * as a small request until the receive is posted; a tag is not
	 * reused while its transfer is alive): with the user's own
	 * threshold there is no bulk, and packets take messages up to
	 * 1 MiB as before. */
	/* Native matching (ucx_native.c) leaves UCX's protocols as UCX
	 * chooses them, as ucx_perftest and Open MPI's pml ucx do. */
	c->native = native;
	c->bulk = !native && !getenv("UCX_RNDV_THRESH") &&
		  ucp_config_modify(cfg, "RNDV_THRESH", UCX_RNDV_THRESH) == UCS_OK;
	ucp_params_t p = {
		.field_mask = UCP_PARAM_FIELD_FEATURES,
		.features = UCP_FEATURE_TAG,
	};
	ucs_status_t st = canal__ucx_api.init_version(UCP_API_MAJOR, UCP_API_MINOR, &p,
					       cfg, &c->ctx);
	ucp_config_release(cfg);
	if (st != UCS_OK) {
		free(c);
		return -ENODEV;
	}
	ucp_worker_params_t wp = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	if (ucp_worker_create(c->ctx, &wp, &c->worker) != UCS_OK) {
		canal__ucx_ctx_unref(c);
		return -ENODEV;
	}
	*out = c;
	return 0;
}

/* CANAL_UCX_ERR_MODE: unset or empty, "peer" or "none"; else -EINVAL
 * and a line saying so. */
static int err_mode_choice(int rank, enum ucx_err_choice *out)
{
	const char *v = getenv("CANAL_UCX_ERR_MODE");
	if (!v || !*v)
		*out = UCX_ERR_BY_HOST;
	else if (!strcmp(v, "peer"))
		*out = UCX_ERR_PEER;
	else if (!strcmp(v, "none"))
		*out = UCX_ERR_NONE;
	else {
		fprintf(stderr, "canal engine: ucx: rank %d: CANAL_UCX_ERR_MODE"
				"=%s: not peer or none (unset: peer toward "
				"other hosts, none on this one)\n", rank, v);
		return -EINVAL;
	}
	return 0;
}

/* The check published with a worker address (FNV-1a, 32 bits): a value
 * corrupted on its way is refused before UCX unpacks it. */
static unsigned addr_sum(const unsigned char *a, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ a[i]) * 16777619u;
	return h;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* This process's host as the peers compare it (no spaces): the
 * hostname, the kernel's boot id and the inode of the PID namespace,
 * "name|boot-id|pidns" ("-" or "?" for a part that cannot be read). Two
 * machines with one hostname (cloned VMs) differ by boot id; a process in
 * another PID namespace of this machine (a container) by the namespace,
 * and its pid means nothing here: both count as other hosts (UCX's peer
 * failure detection, no pid check). */
static void host_token(char *buf, size_t n)
{
	char name[65] = "", boot[64] = "?", ns[64] = "";
	if (gethostname(name, sizeof name - 1) != 0 || !name[0] ||
	    strpbrk(name, " |"))
		snprintf(name, sizeof name, "-");
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(boot, sizeof boot, f))
			snprintf(boot, sizeof boot, "?");
		boot[strcspn(boot, " \n")] = '\0';
		fclose(f);
	}
	ssize_t k = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
	ns[k > 0 ? k : 0] = '\0';
	/* "pid:[4026531836]": the number */
	const char *num = strchr(ns, '[');
	snprintf(buf, n, "%s|%s|%.*s", name, boot[0] ? boot : "?",
		 num ? (int)strcspn(num + 1, "]") : 1, num ? num + 1 : "?");
}

static int driver_new(struct ucx_ctx *c, int peer, const char *value,
		      struct canal__driver **out)
{
	int pid, pos = 0;
	char host[256], how = 0;
	size_t alen = 0;
	unsigned sum = 0;
	if (sscanf(value, "%d %255s %c %zu %8x %n", &pid, host, &how, &alen,
		   &sum, &pos) != 5 ||
	    pos == 0 || (how != 'n' && how != 'p'))
		return -EPROTO;
	if ((how == 'n') != c->native) {
		fprintf(stderr, "canal engine: ucx: rank %d %s UCX's matching "
				"and rank %d %s (CANAL_ENGINE_UCX_NATIVE, or the "
				"driver: ucx alone or in rails, must be alike on "
				"every rank)\n", c->rank,
			c->native ? "uses" : "does not use", peer,
			c->native ? "does not" : "does");
		return -EPROTO;
	}
	const char *me = c->host;
	const char *hex = value + pos;
	size_t hl = strlen(hex);
	/* What canal can check before UCX sees the address (UCX aborts the
	 * process on one it cannot unpack): the length and checksum its
	 * publisher put before it, the hex. */
	if (alen == 0 || alen > UCX_ADDR_MAX || hl != 2 * alen)
		return -EPROTO;
	unsigned char *addr = malloc(hl / 2);
	if (!addr)
		return -ENOMEM;
	for (size_t i = 0; i < hl / 2; i++) {
		int a = hexval(hex[2 * i]), b = hexval(hex[2 * i + 1]);
		if (a < 0 || b < 0) {
			free(addr);
			return -EPROTO;
		}
		addr[i] = (unsigned char)(a << 4 | b);
	}
	if (addr_sum(addr, alen) != sum) {
		free(addr);
		return -EPROTO;
	}
	struct ucx_driver *d = calloc(1, sizeof *d);
	if (d)
		d->in = canal__ucx_rbuf_alloc(UCX_MAX_PACKET);
	if (!d || !d->in) {
		if (d)
			free(d);
		free(addr);
		return -ENOMEM;
	}
	d->base.ops = &ucx_ops;
	d->base.caps.max_packet = UCX_MAX_PACKET;
	d->base.caps.eager_max = UCX_EAGER_MAX;
	d->base.caps.gather = true;
	d->base.caps.read_peer_memory = false;
	d->base.caps.bulk = c->bulk && c->rank < UCX_BULK_RANKS &&
			    peer < UCX_BULK_RANKS;
	d->base.caps.bulk_min = UCX_BULK_MIN;
	if (!d->base.caps.bulk)
		d->base.caps.eager_max = UCX_MAX_PACKET - 256;
	d->base.peer_pid = (pid_t)pid;
	d->same_host = strcmp(host, me) == 0;
	d->pidfd = d->same_host ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	d->peer = peer;
	d->c = c;
	/* Peer failure detection costs the shared-memory transports in UCX
	 * 1.13: asked for toward other hosts only, where they cannot serve
	 * and nothing else sees the peer die (header comment). */
	bool peer_mode = c->err_choice == UCX_ERR_PEER ||
			 (c->err_choice == UCX_ERR_BY_HOST && !d->same_host);
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
			      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
			      UCP_EP_PARAM_FIELD_ERR_HANDLER,
		.address = (const ucp_address_t *)addr,
		.err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER
				      : UCP_ERR_HANDLING_MODE_NONE,
		.err_handler = { .cb = ep_error, .arg = d },
	};
	ucs_status_t st = ucp_ep_create(c->worker, &ep, &d->ep);
	if (st != UCS_OK && peer_mode) {
		ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
		st = ucp_ep_create(c->worker, &ep, &d->ep);
	}
	free(addr);
	if (st != UCS_OK) {
		if (d->pidfd >= 0)
			close(d->pidfd);
		canal__ucx_rbuf_free(d->in, UCX_MAX_PACKET);
		free(d);
		return -ECONNREFUSED;
	}
	c->refs++;
	*out = &d->base;
	return 0;
}

int canal__ucx_connect_all(const struct canal__xchg *x, int timeout_ms,
			   bool native, struct canal__driver **drivers)
{
	uint64_t deadline = canal__now_ms() + (uint64_t)timeout_ms;
	enum ucx_err_choice choice;
	int err = err_mode_choice(x->rank, &choice);
	if (err)
		return err;
	struct ucx_ctx *c;
	err = ctx_new(x->rank, native, &c);
	if (err)
		return err;
	c->err_choice = choice;
	ucp_address_t *addr;
	size_t alen;
	char *val = NULL;
	if (ucp_worker_get_address(c->worker, &addr, &alen) != UCS_OK) {
		err = -ENODEV;
		goto out;
	}
	val = malloc(CANAL__XCHG_MAX);
	host_token(c->host, sizeof c->host);
	const char *me = c->host;
	if (!val || alen > UCX_ADDR_MAX) {
		ucp_worker_release_address(c->worker, addr);
		err = val ? -E2BIG : -ENOMEM;
		goto out;
	}
	int pos = snprintf(val, 300, "%d %s %c %zu %08x ", (int)getpid(), me,
			   native ? 'n' : 'p', alen,
			   addr_sum((const unsigned char *)addr, alen));
	for (size_t i = 0; i < alen; i++)
		pos += snprintf(val + pos, 3, "%02x", ((unsigned char *)addr)[i]);
	ucp_worker_release_address(c->worker, addr);
	err = canal__xchg_put(x, "ucx", val, deadline);
	if (!err)
		err = canal__xchg_fence(x, deadline);
	for (int j = 0; j < x->size && !err; j++) {
		if (j == x->rank)
			continue;
		err = canal__xchg_get(x, j, "ucx", val, CANAL__XCHG_MAX, deadline);
		if (!err)
			err = driver_new(c, j, val, &drivers[j]);
	}
out:
	free(val);
	canal__ucx_ctx_unref(c); /* the drivers hold their references */
	return err;
}
