/* SPDX-License-Identifier: MIT */
/*
 * engine/session.c - the session: options, connecting the gates, the
 * progress loop, waiting, closing. It sits above the three layers.
 * A session of the shm driver alone connects its gates on first use by
 * default (transfer/lazy.c): open then waits only for the peers' inboxes,
 * and a gate without a driver is skipped by progress until it has one.
 *
 * Progress (canal__engine_progress_once) is the internal interface that
 * any driver of progress calls: the caller's wait/test/probe, and the
 * progress thread of progress.c (each under the session lock, a no-op
 * without the thread); a runtime task would call the same function. One round polls each gate's
 * driver (bounded), then pushes its window; every HEALTH_EVERY rounds it
 * asks the drivers whether their peers are alive (a pidfd poll on shm
 * and UCX): what the dead peer delivered is drained once more (its last
 * messages, in shm's ring or UCX's worker), then the gate is failed.
 */
#define _GNU_SOURCE
#include "internal.h"

#include "collect/collect.h"
#include "schedule/schedule.h"
#include "transfer/auth.h"
#include "transfer/driver.h"
#include "transfer/exchange.h"
#include "transfer/ifaddr.h"
#include "transfer/lazy.h"

#include <canal/channel.h>
#include "base/spin.h"
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HEALTH_EVERY 256
#define HEALTH_PERIOD_NS (50u * 1000 * 1000)
#define CLOSE_FLUSH_NS (1000u * 1000 * 1000)
/* A waiter polls without a system call for SPIN_NS, then yields the CPU
 * between rounds. Polling long is what MPI users get (Open MPI never
 * yields unless oversubscribed): on a loaded machine, a sched_yield() hands
 * the CPU to another job for a whole time slice. Measured here (osu_latency
 * at 8 B, shm, 2 vCPUs shared with other jobs): yielding after 200 rounds
 * (~10 us) gave 4-18 us, after 2000 rounds 1.6-2.3 us, Open MPI 0.35 us. */
#define SPIN_NS (2u * 1000 * 1000)
#define SPIN_CHECK_EVERY 1024
/* The first idle rounds poll without a pause instruction: a reply within
 * a microsecond (a ping-pong on shm) is seen up to one pause sooner
 * (34 TSC cycles, 15 ns, on this project's Xeon VM; 140 cycles on
 * Skylake and later server cores). Measured here: no difference beyond
 * the noise (osu_latency 8 B, minima 0.31 us with a pause in every round,
 * 0.32 us without in the first 64); kept for the cores with long pauses. */
#define SPIN_NO_PAUSE 64

EXPORT void canal_engine_options_init(struct canal_engine_options *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->rank = -1;
}

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	long x = strtol(v, &end, 10);
	return *end || x < 0 || x > 1 << 20 ? -2 : (int)x;
}

static const char *env_str(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

static void free_session(struct canal_engine *e)
{
	/* UCP operations end before their requests go (internal.h). */
	for (uint32_t i = 0; e->native && i < e->reqcap; i++)
		if (e->reqtab[i] && e->reqtab[i]->nat.live)
			canal__ucx_native_abort(e->native, &e->reqtab[i]->nat);
	canal__ucx_native_free(e->native);
	/* Queues first: they may hold pieces embedded in requests. */
	for (int gi = 0; e->gates && gi < e->size; gi++)
		canal__sched_gate_drop(&e->gates[gi]);
	for (uint32_t i = 0; i < e->reqcap; i++)
		if (e->reqtab[i])
			canal__req_free(e->reqtab[i]);
	while (e->req_cache) {
		struct canal_engine_req *r = e->req_cache;
		e->req_cache = (struct canal_engine_req *)(void *)r->link.next;
		free(r);
	}
	if (e->gates) {
		for (int gi = 0; gi < e->size; gi++) {
			struct canal__gate *g = &e->gates[gi];
			canal__collect_gate_free(g);
			if (g->drv)
				g->drv->ops->close(g->drv);
		}
	}
	free(e->gates);
	if (e->seq)
		munmap(e->seq, e->seq_bytes);
	if (e->pmix) {
		struct canal__xchg x = { .pmix = e->pmix };
		canal__pmix_fini(&x);
	}
	canal__lazy_close(e->lazy);
	canal__collect_packs_free(e);
	canal__remote_owed_free(e->remote_owed);
	canal__remote_zombies_free(e);
	if (e->pmix_dir)
		rmdir(e->dir);
	free(e->reqtab);
	free(e->reqgen);
	free(e->reqfree);
	free(e);
}

/* bind = "a0,a1,...": up to 4 non-empty entries, each shorter than
 * CANAL__ADDR_MAX, copied to addrs; their number, or -EINVAL. */
static int split_bind(const char *bind, char addrs[4][CANAL__ADDR_MAX])
{
	int n = 0;
	for (const char *p = bind;; n++) {
		size_t l = strcspn(p, ",");
		if (n == 4 || l == 0 || l >= CANAL__ADDR_MAX)
			return -EINVAL; /* a fifth, or an empty or long entry */
		memcpy(addrs[n], p, l);
		addrs[n][l] = 0;
		p += l;
		if (!*p++)
			return n + 1;
	}
}

/* What is left until deadline (canal__now_ms() clock) for the next step of
 * connecting, in ms: connect_timeout_ms bounds the open as a whole, not
 * each rail, kind or gate in turn (each took the whole of it, so an open
 * with a missing peer could wait it out once per step). At least 1: a
 * step begun at the deadline still looks once, then says -ETIMEDOUT. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = canal__now_ms();
	if (now >= deadline)
		return 1;
	return deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
}

/* TCP gates: one connection per peer, or with bind = "addr0,addr1,..."
 * one per address (rails, up to 4; rail i published as "tcp<i>") joined
 * per peer by the rails driver. A rail is declared dead after dead ms of
 * silence (2 s when not set: a pulled cable is seen by its timeout). */
static int tcp_rails(struct canal__xchg *x, const char *bind,
		     uint64_t deadline, int dead, const unsigned char *key,
		     struct canal__driver **drv)
{
	if (!bind || !strchr(bind, ','))
		return canal__tcp_connect_xchg(x, bind, ms_left(deadline),
					       dead > 0 ? dead : 0, key, drv);
	char addrs[4][CANAL__ADDR_MAX], keys[4][16];
	int n = split_bind(bind, addrs);
	if (n < 0)
		return n;
	struct canal__driver **sub = calloc((size_t)n * (size_t)x->size, sizeof *sub);
	if (!sub)
		return -ENOMEM;
	int err = 0;
	for (int i = 0; i < n && !err; i++) {
		snprintf(keys[i], sizeof keys[i], "tcp%d", i);
		struct canal__xchg xi = *x;
		xi.tcp_key = keys[i];
		err = canal__tcp_connect_xchg(&xi, addrs[i], ms_left(deadline),
					      dead > 0 ? dead : 2000, key,
					      sub + (size_t)i * (size_t)x->size);
	}
	for (int g = 0; g < x->size; g++) {
		if (g == x->rank)
			continue;
		struct canal__driver *s[4];
		bool whole = true;
		for (int i = 0; i < n; i++) {
			s[i] = sub[(size_t)i * (size_t)x->size + (size_t)g];
			whole = whole && s[i];
		}
		if (!err && whole && (err = canal__rails_new(s, n, &drv[g])) == 0)
			continue;
		for (int i = 0; i < n; i++)
			if (s[i])
				s[i]->ops->close(s[i]);
	}
	free(sub);
	return err;
}

/* bind has at most 4 comma-separated entries (split_bind) and each
 * resolves (ifaddr.h): 0, or the first error (-EINVAL for the list
 * itself), logged with its reason. */
static int check_bind(const char *bind, int rank)
{
	char addrs[4][CANAL__ADDR_MAX], addr[CANAL__ADDR_MAX], why[160];
	int n = split_bind(bind, addrs);
	if (n < 0) {
		fprintf(stderr, "canal engine: rank %d: bind list \"%s\": at most 4 "
			"non-empty entries, each shorter than %d bytes\n",
			rank, bind, CANAL__ADDR_MAX);
		return n;
	}
	for (int i = 0; i < n; i++) {
		int err = canal__bind_resolve(addrs[i], addr, why, sizeof why);
		if (err) {
			fprintf(stderr, "canal engine: rank %d: %s\n", rank, why);
			return err;
		}
	}
	return 0;
}

/* driver: one kind ("shm", "tcp", "ucx") or several joined by '+' (each
 * at most once, "ucx" only where built): one rail of each kind per peer,
 * joined by the rails driver. Sets the kinds named; returns how many, or
 * -EINVAL. */
static int parse_drivers(const char *driver, bool *shm, bool *tcp, bool *ucx)
{
	int n = 0;
	for (const char *p = driver; ; p++) {
		size_t l = strcspn(p, "+");
		bool *k = l == 3 && !strncmp(p, "shm", 3)   ? shm
			  : l == 3 && !strncmp(p, "tcp", 3) ? tcp
			  : l == 3 && !strncmp(p, "ucx", 3) ? ucx
							    : NULL;
		if (!k || *k)
			return -EINVAL; /* unknown, empty or twice */
		*k = true;
		n++;
		p += l;
		if (!*p)
			return n;
	}
}

/* Gates of rails of several kinds (shm, then UCX, then TCP): each kind
 * connects to every peer as it would alone, then each peer's drivers are
 * joined by the rails driver (which takes them over). */
static int mixed_rails(struct canal__xchg *x, bool shm, bool ucx, bool tcp,
		       const char *bind, uint64_t deadline, int dead,
		       const unsigned char *key, struct canal__driver **drv)
{
	size_t size = (size_t)x->size;
	struct canal__driver **k = calloc(3 * size, sizeof *k);
	if (!k)
		return -ENOMEM;
	struct canal__driver **kshm = k, **kucx = k + size, **ktcp = k + 2 * size;
	int err = 0;
	for (int gi = 0; shm && gi < x->size && !err; gi++)
		if (gi != x->rank)
			err = canal__shm_connect(x->dir, x->rank, gi,
						 ms_left(deadline), false,
						 &kshm[gi]); /* rails never read */
#ifdef CANAL_HAVE_UCX
	if (!err && ucx)
		err = canal__ucx_connect_all(x, ms_left(deadline), false,
					     kucx);
#else
	(void)ucx, (void)kucx;
#endif
	if (!err && tcp)
		err = canal__tcp_connect_xchg(x, bind, ms_left(deadline),
					      dead > 0 ? dead : 2000, key, ktcp);
	for (size_t g = 0; g < size; g++) {
		if ((int)g == x->rank)
			continue;
		struct canal__driver *s[3];
		int n = 0;
		bool whole = true;
		for (int i = 0; i < 3; i++) {
			bool want = i == 0 ? shm : i == 1 ? ucx : tcp;
			if (!want)
				continue;
			s[n] = k[(size_t)i * size + g];
			whole = whole && s[n];
			n++;
		}
		if (!err && whole && (err = canal__rails_new(s, n, &drv[g])) == 0)
			continue;
		for (int i = 0; i < n; i++)
			if (s[i])
				s[i]->ops->close(s[i]);
	}
	free(k);
	return err;
}

EXPORT int canal_engine_open(const struct canal_engine_options *opt,
			     struct canal_engine **out)
{
	struct canal_engine_options o;
	if (opt)
		o = *opt;
	else
		canal_engine_options_init(&o);
	/* -1 and 0 name the environment's rank and size; other negative
	 * values are bad ones, not defaults (test_revapi_open_bad_rank). */
	if (!out || o.rank < -1 || o.size < 0)
		return -EINVAL;
	int rank = o.rank >= 0 ? o.rank : env_int("CANAL_RANK", -1);
	int size = o.size > 0 ? o.size : env_int("CANAL_SIZE", 1);
	const char *dir = o.dir ? o.dir : env_str("CANAL_LAUNCH_DIR", NULL);
	/* Started by mpirun/srun (PMIx) rather than canal-launch: rank and
	 * size from the PMIx server, addresses through PMIx. */
	struct canal__xchg xchg = { 0 };
	int pm = 0;
	if (o.rank < 0 && !getenv("CANAL_RANK")) {
		pm = canal__pmix_init(&xchg);
		if (pm < 0)
			return pm;
		if (pm) {
			rank = xchg.rank;
			size = xchg.size;
		}
	}
	const char *driver = o.driver ? o.driver
				      : env_str("CANAL_ENGINE_DRIVER", "shm");
	const char *strategy = o.strategy
				       ? o.strategy
				       : env_str("CANAL_ENGINE_STRATEGY", "default");
	const char *progress = o.progress
				       ? o.progress
				       : env_str("CANAL_ENGINE_PROGRESS", "caller");
	bool threaded = !strcmp(progress, "thread");
	const char *connect = o.connect ? o.connect
					: env_str("CANAL_ENGINE_CONNECT", "lazy");
	bool lazy = !strcmp(connect, "lazy");
	int timeout = o.connect_timeout_ms > 0 ? o.connect_timeout_ms : 30000;
	/* Every step of connecting below shares this one (ms_left). */
	uint64_t deadline = canal__now_ms() + (uint64_t)timeout;
	bool shm = false, tcp = false, ucx = false;
	int kinds = parse_drivers(driver, &shm, &tcp, &ucx);
	const struct canal__strategy *strat = canal__strategy_find(strategy);
	/* canal-launch --hosts: addresses through the launcher, no shared
	 * directory (so no shm driver). */
	const char *launch_addr = pm ? NULL : env_str("CANAL_LAUNCH_ADDR", NULL);
	bool need_dir = size > 1 && ((!pm && !launch_addr) || shm);
	if (need_dir && !dir && launch_addr)
		fprintf(stderr, "canal engine: the shm driver needs the ranks on "
				"one machine (canal-launch without -H); across "
				"hosts use tcp or ucx\n");
	/* UCX alone: its own matching unless CANAL_ENGINE_UCX_NATIVE=0
	 * (every rank alike; 0 or 1). */
	const char *nv = env_str("CANAL_ENGINE_UCX_NATIVE", "1");
	bool native = ucx && kinds == 1 && strcmp(nv, "0") != 0;
	/* shm's rendezvous (CANAL_ENGINE_SHM_RNDV), read once here: every
	 * gate of the session, lazy ones included, keeps it. */
	int shm_mode = shm ? canal__shm_rndv_mode() : 0;
	bool shm_read = shm_mode == 1;
	/* Bounded before the per-gate tables are sized by it: 2^20 + 1
	 * from opt.size took 24 GB and the OOM killer
	 * (test_revapi_open_size_max). */
	if (rank < 0 || size < 1 || size > CANAL_ENGINE_SIZE_MAX ||
	    rank >= size || (need_dir && !dir && !pm) ||
	    (dir && strlen(dir) >= sizeof ((struct canal_engine *)0)->dir) ||
	    kinds < 1 || !strat || (!threaded && strcmp(progress, "caller")) ||
	    (!lazy && strcmp(connect, "eager")) ||
	    (ucx && strcmp(nv, "0") && strcmp(nv, "1")) ||
	    (shm && shm_mode < 0)) {
		canal__pmix_fini(&xchg);
		return -EINVAL;
	}
#ifndef CANAL_HAVE_UCX
	(void)native;
	if (ucx) {
		canal__pmix_fini(&xchg);
		return -ENOTSUP;
	}
#endif
	/* The derived key lives on this stack while the gates connect and
	 * is wiped (sodium_memzero) on every way out of open: nothing needs
	 * it once the handshakes are done. */
	unsigned char key[CANAL__KEY_BYTES];
	const char *key_file = o.key_file ? o.key_file
					  : env_str("CANAL_ENGINE_KEY_FILE", NULL);
	if (key_file && tcp) {
		char why[200];
		int kerr = canal__auth_load(key_file, key, why, sizeof why);
		if (kerr) {
			fprintf(stderr, "canal engine: %s\n", why);
			canal__pmix_fini(&xchg);
			return kerr;
		}
	}
	const char *bind = o.bind ? o.bind : env_str("CANAL_ENGINE_BIND", NULL);
	if (kinds > 1 && bind && strchr(bind, ',')) {
		/* Rails of several kinds take one TCP address. */
		sodium_memzero(key, sizeof key);
		canal__pmix_fini(&xchg);
		return -EINVAL;
	}
	if (tcp && bind) {
		/* Every entry names an address of this host before any rail
		 * connects (ifaddr.h; tcp.c resolves each again to bind). */
		int berr = check_bind(bind, rank);
		if (berr) {
			sodium_memzero(key, sizeof key);
			canal__pmix_fini(&xchg);
			return berr;
		}
	}
	struct canal_engine *e = calloc(1, sizeof *e);
	if (!e) {
		sodium_memzero(key, sizeof key);
		canal__pmix_fini(&xchg);
		return -ENOMEM;
	}
	e->pmix = xchg.pmix;
	e->rank = rank;
	e->size = size;
	e->strategy = strat;
	snprintf(e->driver_name, sizeof e->driver_name, "%s", driver);
	if (dir)
		snprintf(e->dir, sizeof e->dir, "%s", dir);
	int err = 0;
	if (pm && need_dir && !dir) {
		/* shm under PMIx (one host): rank 0 makes the directory. */
		char v[CANAL__XCHG_MAX] = "";
		if (rank == 0) {
			snprintf(e->dir, sizeof e->dir, "/dev/shm/canal-pmix.XXXXXX");
			if (!mkdtemp(e->dir)) {
				snprintf(e->dir, sizeof e->dir,
					 "/tmp/canal-pmix.XXXXXX");
				if (!mkdtemp(e->dir))
					err = -errno;
			}
			e->pmix_dir = !err;
			if (!err)
				err = canal__xchg_put(&xchg, "dir", e->dir,
						      deadline);
		}
		int ferr = canal__xchg_fence(&xchg, deadline);
		err = err ? err : ferr;
		if (!err && rank != 0) {
			err = canal__xchg_get(&xchg, 0, "dir", v, sizeof v, 0);
			size_t vl = err ? 0 : strlen(v);
			if (!err && vl >= sizeof e->dir)
				err = -EPROTO;
			if (!err) /* not snprintf: GCC's -Wformat-truncation
				   * (Debug builds) cannot see the check */
				memcpy(e->dir, v, vl + 1);
		}
		dir = e->dir;
	}
	xchg.rank = rank;
	xchg.size = size;
	xchg.dir = dir;
	xchg.launch_addr = launch_addr;
	canal__list_init(&e->any_posted);
	canal__list_init(&e->packs);
	canal__list_init(&e->remote_zombies);
	e->gates = calloc((size_t)size, sizeof *e->gates);
	if (!err && !e->gates)
		err = -ENOMEM;
	if (!err) {
		/* One mapping, not the heap: resident only where a tag is
		 * used (collect.h). size <= CANAL_ENGINE_SIZE_MAX: no
		 * overflow. */
		size_t bytes = (size_t)size * CANAL__COLLECT_SEQ_WORDS *
			       sizeof(uint32_t);
		void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);
		if (m == MAP_FAILED) {
			err = -ENOMEM;
		} else {
			e->seq = m;
			e->seq_bytes = bytes;
		}
	}
	for (int gi = 0; gi < size && !err; gi++) {
		struct canal__gate *g = &e->gates[gi];
		g->rank = gi;
		canal__sched_gate_init(g);
		err = canal__collect_gate_init(
			g, e->seq + (size_t)gi * CANAL__COLLECT_SEQ_WORDS);
	}
	if (!err && size > 1) {
		struct canal__driver **drv = calloc((size_t)size, sizeof *drv);
		int dead = o.tcp_timeout_ms > 0
				   ? o.tcp_timeout_ms
				   : env_int("CANAL_ENGINE_TCP_TIMEOUT_MS", 0);
		if (!drv) {
			err = -ENOMEM;
		} else if (kinds > 1) {
			err = mixed_rails(&xchg, shm, ucx, tcp, bind, deadline,
					  dead, key_file ? key : NULL, drv);
		} else if (tcp) {
			err = tcp_rails(&xchg, bind, deadline, dead,
					key_file ? key : NULL, drv);
#ifdef CANAL_HAVE_UCX
		} else if (ucx) {
			err = canal__ucx_connect_all(&xchg, ms_left(deadline),
						     native, drv);
			if (!err && native)
				err = canal__ucx_native_new(drv, size, rank,
							    &e->native);
#endif
		} else if (lazy) {
			/* shm alone: each gate gets its segment on first use
			 * (transfer/lazy.c); open only waits for the peers'
			 * inboxes. */
			err = canal__lazy_open(dir, rank, size,
					       ms_left(deadline), shm_read,
					       &e->lazy);
		} else {
			/* Peers in increasing rank everywhere: the pairwise
			 * waits cannot form a cycle. */
			for (int gi = 0; gi < size && !err; gi++)
				if (gi != rank)
					err = canal__shm_connect(
						dir, rank, gi, ms_left(deadline),
						shm_read, &drv[gi]);
		}
		for (int gi = 0; gi < size && drv; gi++)
			e->gates[gi].drv = drv[gi];
		free(drv);
	}
	sodium_memzero(key, sizeof key);
	if (!err && threaded)
		err = canal__progress_start(e);
	if (err) {
		free_session(e);
		return err;
	}
	*out = e;
	return 0;
}

void canal__gate_check(struct canal_engine *e, int gi)
{
	struct canal__gate *g = &e->gates[gi];
	if (gi == e->rank || g->error || !g->drv)
		return;
	int h = g->drv->ops->health(g->drv);
	if (h == -EPROTO) {
		canal__gate_fail(e, gi, h, "peer %d: malformed frame: %s", gi,
				 g->drv->why);
	} else if (h < 0) {
		/* What the dead peer had delivered is taken first: its
		 * packets polled until the driver has none left (driver.h,
		 * recv(): shm's ring; UCX's worker, which recv() progresses
		 * until idle before it reports the error), or UCX's worker
		 * progressed until idle (UCX's matching: each message then
		 * goes to the receive posted for it, or stays UCX's, handed
		 * out after the gate closes). */
		if (e->native)
			canal__ucx_native_drain(e->native);
		while (!e->native && !g->error &&
		       canal__sched_poll(e, gi, canal__collect_arrive) > 0)
			;
		canal__gate_fail(e, gi, h, "peer %d (pid %d) %s", gi,
				 (int)g->drv->peer_pid,
				 g->drv->peer_closed ? "closed its session"
						     : "died");
	}
}

static void check_health(struct canal_engine *e)
{
	if (e->lazy) {
		/* Peers that rang are attached first, so that a dead one's
		 * last messages are drained below like any other's. */
		canal__lazy_poll(e);
		canal__lazy_health(e);
	}
	for (int gi = 0; gi < e->size; gi++)
		canal__gate_check(e, gi);
}

/* The periodic health check, every HEALTH_EVERY rounds and at most once
 * per HEALTH_PERIOD_NS. */
static inline void health_tick(struct canal_engine *e)
{
	if (++e->health_round >= HEALTH_EVERY) {
		e->health_round = 0;
		uint64_t now = canal_now_ns();
		if (now - e->last_health_ns >= HEALTH_PERIOD_NS) {
			e->last_health_ns = now;
			check_health(e);
		}
	}
}

int canal__engine_progress_once(struct canal_engine *e)
{
	/* UCX's matching (never lazy: every endpoint is made at open, and
	 * canal_engine_open sets e->native and e->lazy in exclusive
	 * branches): one progress of the worker, no packets. */
	if (e->native) {
		int n = (int)canal__ucx_native_progress(e->native);
		health_tick(e);
		return n;
	}
	int n = e->lazy ? canal__lazy_poll(e) : 0;
	for (int gi = 0; gi < e->size; gi++) {
		struct canal__gate *g = &e->gates[gi];
		if (gi == e->rank || g->error || !g->drv)
			continue;
		n += canal__sched_poll(e, gi, canal__collect_arrive);
		/* An idle round of a waiter is this loop: keep it short (the
		 * shorter it is, the sooner an arrival is seen). */
		if (!g->drv || !g->drv->caps.flush_noop ||
		    canal__gate_queued(g))
			n += canal__sched_push(e, gi);
	}
	health_tick(e);
	return n;
}

EXPORT int canal_engine_progress(struct canal_engine *e)
{
	if (!e)
		return -EINVAL;
	canal__engine_lock(e);
	int n = canal__engine_progress_once(e);
	canal__engine_unlock(e);
	return n;
}

static void fill_status(const struct canal_engine_req *r,
			struct canal_engine_status *st)
{
	if (!st)
		return;
	st->gate = r->gate;
	st->tag = r->tag;
	st->len = r->kind == REQ_RECV ? r->msg_len : r->len;
}

static int finish(struct canal_engine_req *r, struct canal_engine_status *st,
		  unsigned *flags)
{
	fill_status(r, st);
	if (flags)
		*flags = r->flags;
	int err = r->error;
	canal__req_free(r);
	return err;
}

EXPORT int canal_engine_test(struct canal_engine *e,
			     struct canal_engine_req *r,
			     struct canal_engine_status *st)
{
	if (!e || !r || r->e != e)
		return -EINVAL;
	canal__engine_lock(e);
	if (!r->done)
		canal__engine_progress_once(e);
	int err = 0;
	if (r->done) {
		err = finish(r, st, NULL);
		err = err ? err : 1;
	}
	canal__engine_unlock(e);
	return err;
}

static __attribute__((noinline)) int wait_loop(struct canal_engine *e,
					       struct canal_engine_req *r,
					       struct canal_engine_status *st,
					       unsigned *flags);

EXPORT int canal_engine_wait(struct canal_engine *e,
			     struct canal_engine_req *r,
			     struct canal_engine_status *st)
{
	if (!e || !r || r->e != e)
		return -EINVAL;
	/* Already complete in caller mode (no progress thread, so nothing
	 * else writes r): a send that UCX or the window took at once, or a
	 * receive completed by an earlier progress call. */
	if (!e->pt && r->done)
		return finish(r, st, NULL);
	return wait_loop(e, r, st, NULL);
}

int canal__engine_wait_flags(struct canal_engine *e,
			     struct canal_engine_req *r,
			     struct canal_engine_status *st, unsigned *flags)
{
	return wait_loop(e, r, st, flags);
}

static int wait_loop(struct canal_engine *e, struct canal_engine_req *r,
		     struct canal_engine_status *st, unsigned *flags)
{
	unsigned idle = 0;
	bool yielding = false;
	uint64_t idle_start = 0;
	if (e->pt)
		atomic_fetch_add(&e->waiters, 1); /* seq_cst: progress.c */
	canal__engine_lock(e);
	while (!r->done) {
		if (canal__engine_progress_once(e) > 0) {
			idle = 0;
			yielding = false;
			continue;
		}
		/* Backing off: without the lock (another caller may go on). */
		canal__engine_unlock(e);
		if (yielding) {
			sched_yield();
		} else {
			if (++idle % SPIN_CHECK_EVERY == 0) {
				uint64_t now = canal_now_ns();
				if (idle == SPIN_CHECK_EVERY)
					idle_start = now;
				else if (now - idle_start > SPIN_NS)
					yielding = true;
			}
			if (idle > SPIN_NO_PAUSE)
				canal__cpu_relax();
		}
		canal__engine_lock(e);
	}
	int err = finish(r, st, flags);
	if (e->pt) {
		/* Before the last unlock, so that it wakes the thread if work
		 * is left (progress.c). */
		atomic_fetch_sub(&e->waiters, 1); /* seq_cst: progress.c */
	}
	canal__engine_unlock(e);
	return err;
}

static bool flushed(struct canal_engine *e)
{
	/* UCX's matching: no send under way (a living peer's). */
	for (uint32_t i = 0; e->native && i < e->reqcap; i++) {
		const struct canal_engine_req *r = e->reqtab[i];
		if (r && r->nat.live && r->nat.send &&
		    !e->gates[r->gate].error)
			return false;
	}
	for (int gi = 0; gi < e->size && !e->native; gi++) {
		struct canal__gate *g = &e->gates[gi];
		if (gi == e->rank || g->error || !g->drv)
			continue;
		if (canal__gate_queued(g) || !canal__list_empty(&g->bulk))
			return false;
		/* TCP: bytes not yet acknowledged by the peer's kernel (a
		 * send completes once the kernel took its bytes; closing
		 * before they are acknowledged can reset them away: driver.h
		 * delivered()). shm's ring outlives us in the peer's mapping:
		 * nothing to wait for. */
		if (strcmp(g->drv->ops->name, "shm") == 0)
			continue;
		bool done = g->drv->ops->delivered
				    ? g->drv->ops->delivered(g->drv)
				    : g->drv->ops->idle(g->drv);
		if (!done)
			return false;
	}
	return true;
}

EXPORT int canal_engine_close(struct canal_engine *e)
{
	if (!e)
		return 0;
	/* A running hub owns the session (remote.h) and its thread is in it
	 * now: freeing the session under it is a use after free. Refused,
	 * the session untouched, until canal_remote_hub_stop() (e->hub is
	 * set and cleared by the caller's thread, never by the hub's). */
	if (e->hub)
		return -EINVAL;
	canal__progress_stop(e); /* the flush below is the caller's */
	uint64_t deadline = canal_now_ns() + CLOSE_FLUSH_NS;
	while (!flushed(e) && canal_now_ns() < deadline) {
		if (canal__engine_progress_once(e) == 0)
			sched_yield();
	}
	/* Pending: the application's requests, not those of the remote
	 * channels' ends a stopped hub left unfinished (remote.h: the close
	 * frees them; test_revapi_close_zombie). */
	unsigned pending = 0;
	for (uint32_t i = 0; i < e->reqcap; i++)
		if (e->reqtab[i] && !e->reqtab[i]->internal &&
		    !e->reqtab[i]->done)
			pending++;
	int err = pending > canal__remote_zombies_pending(e) ? -EBUSY : 0;
	free_session(e);
	return err;
}

EXPORT int canal_engine_rank(const struct canal_engine *e)
{
	return e->rank;
}

EXPORT int canal_engine_size(const struct canal_engine *e)
{
	return e->size;
}

EXPORT const char *canal_engine_driver(const struct canal_engine *e)
{
	return e->driver_name;
}

EXPORT const char *canal_engine_strategy(const struct canal_engine *e)
{
	return e->strategy->name;
}

EXPORT int canal_engine_gate_error(const struct canal_engine *e, int gate,
				   char *buf, size_t buflen)
{
	if (!e || !canal__gate_valid(e, gate))
		return -EINVAL;
	/* The lock is the session's state, not its meaning: taking it in a
	 * const query is fine. */
	struct canal_engine *me = (struct canal_engine *)(uintptr_t)e;
	canal__engine_lock(me);
	const struct canal__gate *g = &e->gates[gate];
	if (buf && buflen)
		snprintf(buf, buflen, "%s", g->error ? g->errmsg : "");
	int err = g->error;
	canal__engine_unlock(me);
	return err;
}
