/* SPDX-License-Identifier: MIT */
/*
 * overhead.c - the engine's CPU cost per message over its raw driver,
 * measured in one thread so that neither scheduling nor cache-line
 * transfers between cores enter the figure (they dominate a ping-pong on
 * a shared machine): two sessions (ranks 0 and 1) of this process are
 * connected; a round is "rank 0 sends n bytes, rank 1 receives them, sends
 * them back, rank 0 receives", driven by one thread; the same round is done
 * with the two raw drivers. Reported: thread CPU time per one-way message,
 * median of 7 runs, engine, raw and the difference (the seed's first
 * experiment, "overhead over the raw driver"). A ucx session with UCX's
 * own matching (the default for --driver ucx) has no packets: its raw
 * round is UCX's tagged send and receive as the engine's native layer
 * makes them (transfer/ucx_native.c), so the difference is what the
 * engine's requests cost on top of UCX.
 *   overhead [--driver shm|tcp] [--size B] [--rounds N]
 */
#include "../../src/engine/internal.h"
#include "../../src/engine/transfer/driver.h"

#include <canal/channel.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct opener {
	char dir[64];
	int rank;
	const char *driver;
	struct canal_engine *e;
	int err;
};

static void *open_one(void *arg)
{
	struct opener *o = arg;
	struct canal_engine_options opt;
	canal_engine_options_init(&opt);
	opt.rank = o->rank;
	opt.size = 2;
	opt.dir = o->dir;
	opt.driver = o->driver;
	/* Both drivers are used raw from the start (the raw rounds): every
	 * gate connected at open (lazy shm, the default, would leave them
	 * NULL until a first message). */
	opt.connect = "eager";
	o->err = canal_engine_open(&opt, &o->e);
	return NULL;
}

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void check(int err, const char *what)
{
	if (err < 0) {
		fprintf(stderr, "overhead: %s: %s\n", what, strerror(-err));
		exit(1);
	}
}

static void engine_hop(struct canal_engine *from, struct canal_engine *to,
		       int to_rank, int from_rank, char *sbuf, char *rbuf, size_t n)
{
	struct canal_engine_req *s, *r;
	check(canal_engine_irecv(to, from_rank, 1, rbuf, n, &r), "irecv");
	check(canal_engine_isend(from, to_rank, 1, sbuf, n, 0, &s), "isend");
	int done;
	while ((done = canal_engine_test(to, r, NULL)) == 0)
		canal_engine_progress(from);
	check(done, "test");
	check(canal_engine_wait(from, s, NULL), "wait");
}

static void raw_hop(struct canal__driver *from, struct canal__driver *to,
		    char *sbuf, char *rbuf, size_t n)
{
	struct iovec v = { sbuf, n };
	check(from->ops->send(from, &v, 1, n), "send");
	const unsigned char *p;
	size_t len;
	int r;
	while ((r = to->ops->recv(to, &p, &len)) == 0)
		from->ops->flush(from);
	check(r, "recv");
	memcpy(rbuf, p, len);
	to->ops->release(to);
}

/* The raw round of a session with UCX's matching: a tagged send and a
 * receive through the native layer, done when its callback has run. */
static void raw_native_done(struct canal__native_op *op, int err,
			    const struct canal__native_info *info)
{
	(void)op, (void)info;
	check(err, "native op");
}

static void raw_native_hop(struct canal__native *from, struct canal__native *to,
			   int to_rank, int from_rank, char *sbuf, char *rbuf,
			   size_t n)
{
	struct canal__native_op s = { .done = raw_native_done };
	struct canal__native_op r = { .done = raw_native_done };
	check(canal__ucx_native_recv(to, from_rank, 1, rbuf, n, &r), "recv");
	int k = canal__ucx_native_send(from, to_rank, 1, sbuf, n, &s);
	check(k, "send");
	/* Both workers, until both ends are done: a send may need its own
	 * side's progress (a rendezvous, a send UCX queued). */
	while (r.live || (k == 0 && s.live)) {
		canal__ucx_native_progress(to);
		canal__ucx_native_progress(from);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
#ifdef __SANITIZE_THREAD__
	/* UCX's memory hooks (libucm) crash under ThreadSanitizer (the
	 * tests say the same). */
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
	const char *driver = "shm";
	size_t size = 8;
	long rounds = 100000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--driver"))
			driver = argv[i + 1];
		else if (!strcmp(argv[i], "--size"))
			size = strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = strtol(argv[i + 1], NULL, 0);
	}
	char dir[] = "/tmp/canal-overhead.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	struct opener o[2];
	for (int i = 0; i < 2; i++) {
		snprintf(o[i].dir, sizeof o[i].dir, "%s", dir);
		o[i].rank = i;
		o[i].driver = driver;
	}
	pthread_t t;
	pthread_create(&t, NULL, open_one, &o[1]);
	open_one(&o[0]);
	pthread_join(t, NULL);
	check(o[0].err, "open");
	check(o[1].err, "open");
	struct canal_engine *e0 = o[0].e, *e1 = o[1].e;
	struct canal__driver *d01 = e0->gates[1].drv, *d10 = e1->gates[0].drv;
	bool native = e0->native && e1->native;
	if (!native && (!d01 || !d10)) {
		fprintf(stderr, "overhead: a gate has no driver after open\n");
		return 2;
	}
	if (!native && size > d01->caps.eager_max) {
		fprintf(stderr, "overhead: size above the eager size\n");
		return 2;
	}
	char *a = calloc(1, size + 1), *b = calloc(1, size + 1);
	enum { RUNS = 7 };
	double eng[RUNS], raw[RUNS];
	for (int run = 0; run < RUNS; run++) {
		double t0 = cpu_ns();
		for (long i = 0; i < rounds; i++) {
			engine_hop(e0, e1, 1, 0, a, b, size);
			engine_hop(e1, e0, 0, 1, b, a, size);
		}
		eng[run] = (cpu_ns() - t0) / (2.0 * (double)rounds);
		t0 = cpu_ns();
		for (long i = 0; i < rounds && native; i++) {
			raw_native_hop(e0->native, e1->native, 1, 0, a, b, size);
			raw_native_hop(e1->native, e0->native, 0, 1, b, a, size);
		}
		for (long i = 0; i < rounds && !native; i++) {
			raw_hop(d01, d10, a, b, size);
			raw_hop(d10, d01, b, a, size);
		}
		raw[run] = (cpu_ns() - t0) / (2.0 * (double)rounds);
	}
	qsort(eng, RUNS, sizeof eng[0], cmp);
	qsort(raw, RUNS, sizeof raw[0], cmp);
	printf("# Engine CPU cost per message over the raw %s, %zu B, one thread\n",
	       native ? "UCP tagged messages (UCX's matching)" : driver, size);
	printf("engine %.1f ns [%.1f-%.1f]  raw %.1f ns [%.1f-%.1f]  overhead %.1f ns\n",
	       eng[RUNS / 2], eng[0], eng[RUNS - 1], raw[RUNS / 2], raw[0], raw[RUNS - 1],
	       eng[RUNS / 2] - raw[RUNS / 2]);
	canal_engine_close(e1);
	canal_engine_close(e0);
	char path[128];
	snprintf(path, sizeof path, "%s/tcp.0", dir);
	unlink(path);
	rmdir(dir);
	free(a);
	free(b);
	return 0;
}
