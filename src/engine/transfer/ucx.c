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
 * recv(): probe (and remove) the next message with this peer's tag, then
 * receive it into the driver's input buffer; a receive still in progress
 * (a rendezvous) is finished by later calls. A message longer than
 * UCX_MAX_PACKET is -EPROTO.
 *
 * Addresses: each rank puts "pid host <hex worker address>" under "ucx"
 * (exchange.h: files in the launch directory or PMIx), fences, and creates
 * an endpoint to each peer's address. With CANAL_UCX_ERR_MODE=peer the
 * endpoints ask for peer failure detection (UCP_ERR_HANDLING_MODE_PEER,
 * which restricts UCX to transports that detect failures: TCP, verbs);
 * the error callback marks the driver, health() then reports the peer
 * dead. Without it, health() still sees a dead peer on the same host (a
 * pidfd of the peer becomes readable; kill(pid, 0) where pidfd_open fails).
 *
 * Threading: none; the session's one-thread-at-a-time rule covers the
 * worker (created UCS_THREAD_MODE_SINGLE).
 */
#define _GNU_SOURCE
#include "driver.h"
#include "exchange.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>
#include <pthread.h>
#include <ucp/api/ucp.h>

/* libucp is loaded when a session first asks for the ucx driver, not
 * linked: a library linked with libucp brings libucm, whose memory hooks
 * (madvise, mmap, brk...) then run in every program using canal, UCX or
 * not (and break ThreadSanitizer). The calls below go through this table. */
static struct {
	void *lib;
	int err;
	ucs_status_t (*config_read)(const char *, const char *, ucp_config_t **);
	void (*config_release)(ucp_config_t *);
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
	ucp_tag_message_h (*tag_probe_nb)(ucp_worker_h, ucp_tag_t, ucp_tag_t, int,
					  ucp_tag_recv_info_t *);
	ucs_status_ptr_t (*tag_msg_recv_nbx)(ucp_worker_h, void *, size_t,
					     ucp_tag_message_h,
					     const ucp_request_param_t *);
	ucs_status_t (*request_check_status)(void *);
	void (*request_free)(void *);
	void (*request_cancel)(ucp_worker_h, void *);
	const char *(*status_string)(ucs_status_t);
} ucx_api;
static pthread_once_t ucx_once = PTHREAD_ONCE_INIT;

static void ucx_load(void)
{
	void *l = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
	void *s = l ? dlopen("libucs.so.0", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!l || !s) {
		fprintf(stderr, "canal engine: ucx driver: %s (apt install libucx0)\n",
			dlerror());
		ucx_api.err = -ENOTSUP;
		return;
	}
#define LOAD(field, lib, name)                                               \
	do {                                                                 \
		*(void **)&ucx_api.field = dlsym(lib, name);                 \
		if (!ucx_api.field)                                          \
			ucx_api.err = -ENOTSUP;                              \
	} while (0)
	LOAD(config_read, l, "ucp_config_read");
	LOAD(config_release, l, "ucp_config_release");
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
	LOAD(tag_probe_nb, l, "ucp_tag_probe_nb");
	LOAD(tag_msg_recv_nbx, l, "ucp_tag_msg_recv_nbx");
	LOAD(request_check_status, l, "ucp_request_check_status");
	LOAD(request_free, l, "ucp_request_free");
	LOAD(request_cancel, l, "ucp_request_cancel");
	LOAD(status_string, s, "ucs_status_string");
#undef LOAD
	if (ucx_api.err)
		fprintf(stderr, "canal engine: ucx driver: libucp lacks a function\n");
	ucx_api.lib = l;
}

#define ucp_config_read ucx_api.config_read
#define ucp_config_release ucx_api.config_release
#define ucp_cleanup ucx_api.cleanup
#define ucp_worker_create ucx_api.worker_create
#define ucp_worker_destroy ucx_api.worker_destroy
#define ucp_worker_get_address ucx_api.worker_get_address
#define ucp_worker_release_address ucx_api.worker_release_address
#define ucp_worker_progress ucx_api.worker_progress
#define ucp_ep_create ucx_api.ep_create
#define ucp_ep_close_nbx ucx_api.ep_close_nbx
#define ucp_tag_send_nbx ucx_api.tag_send_nbx
#define ucp_tag_probe_nb ucx_api.tag_probe_nb
#define ucp_tag_msg_recv_nbx ucx_api.tag_msg_recv_nbx
#define ucp_request_check_status ucx_api.request_check_status
#define ucp_request_free ucx_api.request_free
#define ucp_request_cancel ucx_api.request_cancel
#define ucs_status_string ucx_api.status_string

#define UCX_MAX_PACKET ((size_t)1 << 20)
#define UCX_EAGER_MAX (UCX_MAX_PACKET - 256)
#define UCX_SLOTS 8
#define UCX_IMM_MAX 8192 /* larger packets go straight to a slot */
#define UCX_MAX_IOV 64
#define UCX_CLOSE_MS 1000

struct ucx_ctx {
	ucp_context_h ctx;
	ucp_worker_h worker;
	int refs;
	int rank;
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
	ucs_status_t failed; /* set by the endpoint's error callback */
	struct ucx_slot slot[UCX_SLOTS];
	unsigned busy;
	unsigned char *in;
	void *rreq;          /* receive in progress */
	size_t rlen;
	bool have;           /* in[0..rlen) is a packet not yet released */
	bool same_host;      /* peer_pid is a pid of this host */
	int pidfd;           /* same host: a pidfd of the peer, or -1 */
};

static void ctx_unref(struct ucx_ctx *c)
{
	if (--c->refs > 0)
		return;
	if (c->worker)
		ucp_worker_destroy(c->worker);
	if (c->ctx)
		ucp_cleanup(c->ctx);
	free(c);
}

static int ucx_fail(struct ucx_driver *d, ucs_status_t st)
{
	if (!d->failed)
		d->failed = st;
	snprintf(d->base.why, sizeof d->base.why, "ucx: %s",
		 ucs_status_string(st));
	return st == UCS_ERR_NO_MEMORY ? -ENOMEM : -ECONNRESET;
}

/* Retire the completed sends; a send that failed breaks the link. */
static int reap(struct ucx_driver *d)
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
			return ucx_fail(d, st);
	}
	return 0;
}

static int ucx_flush(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	ucp_worker_progress(d->c->worker);
	if (d->failed)
		return ucx_fail(d, d->failed);
	return reap(d);
}

static int ucx_send(struct canal__driver *d_, const struct iovec *iov, int n,
		    size_t total)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	if (total > UCX_MAX_PACKET || n > UCX_MAX_IOV)
		return -EMSGSIZE;
	if (d->failed)
		return ucx_fail(d, d->failed);
	ucp_tag_t tag = (ucp_tag_t)d->c->rank;
	if (total <= UCX_IMM_MAX && d->busy == 0) {
		/* Only when nothing is in flight: a packet must not overtake
		 * one still in a slot (it would not: same tag, same
		 * endpoint; kept simple all the same). */
		ucp_dt_iov_t v[UCX_MAX_IOV];
		for (int i = 0; i < n; i++) {
			v[i].buffer = iov[i].iov_base;
			v[i].length = iov[i].iov_len;
		}
		ucp_request_param_t p = {
			.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
					UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL,
			.datatype = ucp_dt_make_iov(),
		};
		ucs_status_ptr_t r = ucp_tag_send_nbx(d->ep, v, (size_t)n, tag, &p);
		if (r == NULL)
			return 0;
		ucs_status_t st = UCS_PTR_STATUS(r);
		if (UCS_PTR_IS_PTR(r)) { /* not expected with FORCE_IMM_CMPL */
			ucp_request_free(r);
			return 0;
		}
		if (st != UCS_ERR_NO_RESOURCE)
			return ucx_fail(d, st);
	}
	int err = reap(d);
	if (err)
		return err;
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
		unsigned char *b = realloc(s->buf, cap);
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
	if (UCS_PTR_IS_ERR(r))
		return ucx_fail(d, UCS_PTR_STATUS(r));
	s->req = r;
	d->busy++;
	return 0;
}

static int ucx_recv(struct canal__driver *d_, const unsigned char **pkt,
		    size_t *len)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	if (!d->rreq) {
		ucp_worker_progress(d->c->worker);
		ucp_tag_recv_info_t info;
		ucp_tag_message_h m = ucp_tag_probe_nb(d->c->worker,
						       (ucp_tag_t)d->peer,
						       ~(ucp_tag_t)0, 1, &info);
		if (!m)
			return 0;
		if (info.length == 0 || info.length > UCX_MAX_PACKET) {
			snprintf(d->base.why, sizeof d->base.why,
				 "bad packet length %zu", info.length);
			return -EPROTO;
		}
		d->rlen = info.length;
		ucp_request_param_t p = { .op_attr_mask = 0 };
		ucs_status_ptr_t r = ucp_tag_msg_recv_nbx(d->c->worker, d->in,
							  info.length, m, &p);
		if (UCS_PTR_IS_ERR(r))
			return ucx_fail(d, UCS_PTR_STATUS(r));
		if (r == NULL) {
			d->have = true;
			goto out;
		}
		d->rreq = r;
	} else {
		ucp_worker_progress(d->c->worker);
	}
	ucs_status_t st = ucp_request_check_status(d->rreq);
	if (st == UCS_INPROGRESS)
		return 0;
	ucp_request_free(d->rreq);
	d->rreq = NULL;
	if (st != UCS_OK)
		return ucx_fail(d, st);
	d->have = true;
out:
	*pkt = d->in;
	*len = d->rlen;
	return 1;
}

static void ucx_release(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	d->have = false;
}

/* A probe is a user-space call (no system call): always worth one more. */
static bool ucx_buffered(struct canal__driver *d_)
{
	(void)d_;
	return true;
}

static bool ucx_idle(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	if (d->busy) {
		ucp_worker_progress(d->c->worker);
		if (reap(d) < 0)
			return true; /* broken: nothing more will leave */
	}
	return d->busy == 0;
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

static void wait_req(struct ucx_ctx *c, void *r, uint64_t deadline)
{
	if (!r || UCS_PTR_IS_ERR(r))
		return;
	while (ucp_request_check_status(r) == UCS_INPROGRESS &&
	       canal__now_ms() < deadline)
		ucp_worker_progress(c->worker);
	if (ucp_request_check_status(r) != UCS_INPROGRESS)
		ucp_request_free(r);
	/* else: left to the worker's destruction */
}

static void ucx_close(struct canal__driver *d_)
{
	struct ucx_driver *d = (struct ucx_driver *)d_;
	uint64_t deadline = canal__now_ms() + UCX_CLOSE_MS;
	if (d->rreq) {
		ucp_request_cancel(d->c->worker, d->rreq);
		wait_req(d->c, d->rreq, deadline);
	}
	for (int i = 0; i < UCX_SLOTS; i++) {
		if (d->slot[i].req)
			wait_req(d->c, d->slot[i].req, deadline);
	}
	if (d->ep) {
		ucp_request_param_t p = {
			.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
			.flags = d->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0,
		};
		wait_req(d->c, ucp_ep_close_nbx(d->ep, &p), deadline);
	}
	for (int i = 0; i < UCX_SLOTS; i++)
		free(d->slot[i].buf);
	if (d->pidfd >= 0)
		close(d->pidfd);
	free(d->in);
	ctx_unref(d->c);
	free(d);
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
	.close = ucx_close,
};

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	(void)ep;
	struct ucx_driver *d = arg;
	if (!d->failed)
		d->failed = st;
}

static int ctx_new(int rank, struct ucx_ctx **out)
{
	pthread_once(&ucx_once, ucx_load);
	if (ucx_api.err)
		return ucx_api.err;
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
	ucp_params_t p = {
		.field_mask = UCP_PARAM_FIELD_FEATURES,
		.features = UCP_FEATURE_TAG,
	};
	ucs_status_t st = ucx_api.init_version(UCP_API_MAJOR, UCP_API_MINOR, &p,
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
		ctx_unref(c);
		return -ENODEV;
	}
	*out = c;
	return 0;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

static int driver_new(struct ucx_ctx *c, int peer, const char *value,
		      struct canal__driver **out)
{
	int pid, pos = 0;
	char host[256], me[256] = "";
	if (sscanf(value, "%d %255s %n", &pid, host, &pos) != 2 || pos == 0)
		return -EPROTO;
	gethostname(me, sizeof me - 1);
	const char *hex = value + pos;
	size_t hl = strlen(hex);
	if (hl == 0 || hl % 2)
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
	struct ucx_driver *d = calloc(1, sizeof *d);
	if (d)
		d->in = malloc(UCX_MAX_PACKET);
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
	d->base.peer_pid = (pid_t)pid;
	d->same_host = strcmp(host, me) == 0;
	d->pidfd = d->same_host ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	d->peer = peer;
	d->c = c;
	/* Peer failure detection costs the shared-memory transports in UCX
	 * 1.13 (UCX then picks TCP: 8 B one-way 17 us instead of 0.5 us
	 * here), so it is asked for only with CANAL_UCX_ERR_MODE=peer. */
	const char *mode = getenv("CANAL_UCX_ERR_MODE");
	bool peer_mode = mode && strcmp(mode, "peer") == 0;
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
		free(d->in);
		free(d);
		return -ECONNREFUSED;
	}
	c->refs++;
	*out = &d->base;
	return 0;
}

int canal__ucx_connect_all(const struct canal__xchg *x, int timeout_ms,
			   struct canal__driver **drivers)
{
	uint64_t deadline = canal__now_ms() + (uint64_t)timeout_ms;
	struct ucx_ctx *c;
	int err = ctx_new(x->rank, &c);
	if (err)
		return err;
	ucp_address_t *addr;
	size_t alen;
	char *val = NULL;
	if (ucp_worker_get_address(c->worker, &addr, &alen) != UCS_OK) {
		err = -ENODEV;
		goto out;
	}
	val = malloc(CANAL__XCHG_MAX);
	char me[256] = "";
	gethostname(me, sizeof me - 1);
	if (!me[0] || strchr(me, ' '))
		snprintf(me, sizeof me, "-");
	if (!val || 300 + 2 * alen >= CANAL__XCHG_MAX) {
		ucp_worker_release_address(c->worker, addr);
		err = val ? -E2BIG : -ENOMEM;
		goto out;
	}
	int pos = snprintf(val, 300, "%d %s ", (int)getpid(), me);
	for (size_t i = 0; i < alen; i++)
		pos += snprintf(val + pos, 3, "%02x", ((unsigned char *)addr)[i]);
	ucp_worker_release_address(c->worker, addr);
	err = canal__xchg_put(x, "ucx", val);
	if (!err)
		err = canal__xchg_fence(x);
	for (int j = 0; j < x->size && !err; j++) {
		if (j == x->rank)
			continue;
		err = canal__xchg_get(x, j, "ucx", val, CANAL__XCHG_MAX, deadline);
		if (!err)
			err = driver_new(c, j, val, &drivers[j]);
	}
out:
	free(val);
	ctx_unref(c); /* the drivers hold their references */
	return err;
}
