/* SPDX-License-Identifier: MIT */
/*
 * common.c - the one main loop of every IPC benchmark program: see common.h.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "ipc";

void ipc_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void ipc_unique_name(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "canal-ipc-%ld-%s", (long)getpid(), tag);
}

const char *ipc_tmpdir(void)
{
	const char *d = getenv("TMPDIR");
	return d && *d ? d : "/tmp";
}

long ipc_read_proc_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* ------------------------------------------------------------------ */
/* Arguments                                                           */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-c count] [-s size] [--threads] [--pin CPU,CPU]\n"
		"       [--mode pingpong|stream] [--warmup N] [--json]\n"
		"  -c, --count N     timed round trips (pingpong) or messages "
		"(stream); default 1000\n"
		"  -s, --size N      bytes per message (suffix K or M: KiB, "
		"MiB); default 1\n"
		"  --threads         two threads of one process instead of two "
		"processes\n"
		"  --pin A,B         pin side 0 (client) to CPU A, side 1 to CPU "
		"B\n"
		"  --mode M          pingpong (round trips) or stream (one way)\n"
		"  --warmup N        untimed round trips / messages first; "
		"default min(1000, count/10)\n"
		"  --json            print the results as one JSON object\n"
		"exit status: 0 ok, 1 error, 2 usage, %d skipped, %d size not "
		"supported\n",
		prog, IPC_EXIT_SKIPPED, IPC_EXIT_SIZE);
}

static int parse_long(const char *s, long *out)
{
	return bench_parse_long(s, 0, LONG_MAX, out);
}

static int parse_size(const char *s, size_t *out)
{
	return bench_parse_size(s, 1, IPC_SIZE_MAX, out);
}

static int parse_args(int argc, char **argv, struct ipc_opts *o)
{
	enum { OPT_THREADS = 256, OPT_PIN, OPT_MODE, OPT_JSON, OPT_WARMUP };
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "pin", required_argument, NULL, OPT_PIN },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long warmup = -1;
	int c;

	*o = (struct ipc_opts){ .count = 1000, .size = 1, .pin = { -1, -1 } };
	while ((c = getopt_long(argc, argv, "c:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (parse_long(optarg, &o->count) || o->count < 1 ||
			    o->count > 100000000L) {
				ipc_err("bad count '%s' (1 .. 1e8)", optarg);
				return -1;
			}
			break;
		case 's':
			if (parse_size(optarg, &o->size)) {
				ipc_err("bad size '%s' (1 .. %zu bytes)", optarg,
					IPC_SIZE_MAX);
				return -1;
			}
			break;
		case OPT_THREADS:
			o->threads = 1;
			break;
		case OPT_PIN: {
			int a, b, n = -1;
			if (sscanf(optarg, "%d,%d%n", &a, &b, &n) != 2 ||
			    n != (int)strlen(optarg) || a < 0 || b < 0 ||
			    a >= CPU_SETSIZE || b >= CPU_SETSIZE) {
				ipc_err("bad --pin '%s' (want CPU,CPU)", optarg);
				return -1;
			}
			o->pin[0] = a;
			o->pin[1] = b;
			break;
		}
		case OPT_MODE:
			if (!strcmp(optarg, "pingpong")) {
				o->mode = IPC_PINGPONG;
			} else if (!strcmp(optarg, "stream")) {
				o->mode = IPC_STREAM;
			} else {
				ipc_err("bad --mode '%s' (pingpong or stream)",
					optarg);
				return -1;
			}
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_WARMUP:
			if (parse_long(optarg, &warmup) || warmup > 100000000L) {
				ipc_err("bad --warmup '%s'", optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			exit(IPC_EXIT_OK);
		default:
			return -1;
		}
	}
	if (optind != argc) {
		ipc_err("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (warmup < 0)
		warmup = o->count / 10 < 1000 ? o->count / 10 : 1000;
	o->warmup = warmup;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The run: both sides and what they share                             */
/* ------------------------------------------------------------------ */

/* In a MAP_SHARED mapping so that forked sides write it too. */
struct ipc_ctl {
	atomic_int arrived;	/* start barrier */
	atomic_int failed;	/* a side failed before the barrier */
	uint64_t t_end;		/* stream: when the ack arrived */
	uint64_t ts[];		/* count + 1 timestamps of the client */
};

struct ipc_run {
	const struct ipc_method *m;
	const struct ipc_opts *o;
	void *shared;
	struct ipc_ctl *ctl;
	size_t ctl_len;
	int side;
};

/* The payload: a fixed pattern, with a sequence number in its first (up to)
 * four bytes so that the receiver checks it got the right message. */
static inline uint8_t pattern_byte(size_t j)
{
	return (uint8_t)(j * 7u + 3u);
}

static void fill_pattern(uint8_t *buf, size_t len)
{
	for (size_t j = 0; j < len; j++)
		buf[j] = pattern_byte(j);
}

static inline void stamp(uint8_t *buf, size_t len, uint32_t seq)
{
	for (size_t j = 0; j < len && j < 4; j++)
		buf[j] = (uint8_t)(seq >> (8 * j));
}

static inline int stamp_ok(const uint8_t *buf, size_t len, uint32_t seq)
{
	for (size_t j = 0; j < len && j < 4; j++)
		if (buf[j] != (uint8_t)(seq >> (8 * j)))
			return 0;
	return 1;
}

/* Whole payload after the stamp matches the pattern. */
static int payload_ok(const uint8_t *buf, size_t len)
{
	for (size_t j = 4; j < len; j++)
		if (buf[j] != pattern_byte(j))
			return 0;
	return 1;
}

static void pin_self(int cpu)
{
	int err = bench_pin_self(cpu);

	if (err)
		ipc_err("warning: cannot pin to CPU %d: %s", cpu, strerror(-err));
}

static int barrier(struct ipc_ctl *ctl)
{
	atomic_fetch_add(&ctl->arrived, 1);
	while (atomic_load(&ctl->arrived) < 2) {
		if (atomic_load(&ctl->failed))
			return -1;
		sched_yield();
	}
	return 0;
}

/* Failure in a side: what went wrong, in which side. */
struct side_err {
	const char *what;
	long index;
	long got;
	int err;
};

static int report_side_err(const struct ipc_run *r, const struct side_err *e)
{
	const char *who = r->side ? "server" : "client";

	if (e->err)
		ipc_err("%s: %s (message %ld): %s", who, e->what, e->index,
			strerror(e->err));
	else if (e->got >= 0)
		ipc_err("%s: %s (message %ld): received %ld bytes, expected %zu",
			who, e->what, e->index, e->got, r->o->size);
	else
		ipc_err("%s: %s (message %ld)", who, e->what, e->index);
	return IPC_EXIT_ERROR;
}

#define FAIL(what_, i_, got_, err_)                                    \
	do {                                                           \
		e = (struct side_err){ (what_), (i_), (got_), (err_) }; \
		goto out;                                              \
	} while (0)

/* send then check; recv then check length; -errno to positive. */
static int client_pingpong(const struct ipc_run *r, void *ctx, uint8_t *sbuf,
			   uint8_t *rbuf)
{
	const struct ipc_method *m = r->m;
	const size_t size = r->o->size;
	const long warm = r->o->warmup, count = r->o->count;
	uint64_t *ts = r->ctl->ts;
	struct side_err e = { 0 };
	uint32_t seq = 0;
	ssize_t n;
	int rc;

	for (long i = 0; i < warm; i++, seq++) {
		stamp(sbuf, size, seq);
		if ((rc = m->send(ctx, sbuf, size)))
			FAIL("warm-up send", i, -1, -rc);
		if ((n = m->recv(ctx, rbuf, size)) != (ssize_t)size)
			FAIL("warm-up recv", i, n < 0 ? -1 : n,
			     n < 0 ? (int)-n : 0);
		if (!stamp_ok(rbuf, size, seq))
			FAIL("warm-up echo carries a wrong sequence number", i,
			     -1, 0);
	}
	/* The timed loop: no allocation, no output, one clock read per round
	 * trip into the preallocated ts[]. */
	ts[0] = bench_now_ns();
	for (long i = 0; i < count; i++, seq++) {
		stamp(sbuf, size, seq);
		rc = m->send(ctx, sbuf, size);
		if (__builtin_expect(rc != 0, 0))
			FAIL("send", i, -1, -rc);
		n = m->recv(ctx, rbuf, size);
		if (__builtin_expect(n != (ssize_t)size, 0))
			FAIL("recv", i, n < 0 ? -1 : n, n < 0 ? (int)-n : 0);
		if (__builtin_expect(!stamp_ok(rbuf, size, seq), 0))
			FAIL("echo carries a wrong sequence number", i, -1, 0);
		ts[i + 1] = bench_now_ns();
	}
	if (!payload_ok(rbuf, size))
		FAIL("last echo has a corrupted payload", count - 1, -1, 0);
	return 0;
out:
	return report_side_err(r, &e);
}

static int server_pingpong(const struct ipc_run *r, void *ctx, uint8_t *buf)
{
	const struct ipc_method *m = r->m;
	const size_t size = r->o->size;
	const long total = r->o->warmup + r->o->count;
	struct side_err e = { 0 };
	ssize_t n;
	int rc;

	for (long i = 0; i < total; i++) {
		n = m->recv(ctx, buf, size);
		if (__builtin_expect(n != (ssize_t)size, 0))
			FAIL("recv", i, n < 0 ? -1 : n, n < 0 ? (int)-n : 0);
		rc = m->send(ctx, buf, size);
		if (__builtin_expect(rc != 0, 0))
			FAIL("send", i, -1, -rc);
	}
	return 0;
out:
	return report_side_err(r, &e);
}

static int client_stream(const struct ipc_run *r, void *ctx, uint8_t *sbuf,
			 uint8_t *rbuf)
{
	const struct ipc_method *m = r->m;
	const size_t size = r->o->size;
	const long warm = r->o->warmup, count = r->o->count;
	uint64_t *ts = r->ctl->ts;
	struct side_err e = { 0 };
	uint32_t seq = 0;
	ssize_t n;
	int rc;

	for (long i = 0; i < warm; i++, seq++) {
		stamp(sbuf, size, seq);
		if ((rc = m->send(ctx, sbuf, size)))
			FAIL("warm-up send", i, -1, -rc);
	}
	/* The server acks the end of the warm-up: the timed stream starts
	 * with an empty channel. */
	if ((n = m->recv(ctx, rbuf, size)) != (ssize_t)size)
		FAIL("recv of the warm-up ack", 0, n < 0 ? -1 : n,
		     n < 0 ? (int)-n : 0);
	ts[0] = bench_now_ns();
	for (long i = 0; i < count; i++, seq++) {
		stamp(sbuf, size, seq);
		rc = m->send(ctx, sbuf, size);
		if (__builtin_expect(rc != 0, 0))
			FAIL("send", i, -1, -rc);
		ts[i + 1] = bench_now_ns();
	}
	n = m->recv(ctx, rbuf, size);
	r->ctl->t_end = bench_now_ns();
	if (n != (ssize_t)size)
		FAIL("recv of the final ack", count, n < 0 ? -1 : n,
		     n < 0 ? (int)-n : 0);
	return 0;
out:
	return report_side_err(r, &e);
}

static int server_stream(const struct ipc_run *r, void *ctx, uint8_t *buf)
{
	const struct ipc_method *m = r->m;
	const size_t size = r->o->size;
	const long warm = r->o->warmup, count = r->o->count;
	struct side_err e = { 0 };
	uint32_t seq = 0;
	ssize_t n;
	int rc;

	for (long part = 0; part < 2; part++) {
		long todo = part == 0 ? warm : count;
		for (long i = 0; i < todo; i++, seq++) {
			n = m->recv(ctx, buf, size);
			if (__builtin_expect(n != (ssize_t)size, 0))
				FAIL("recv", i, n < 0 ? -1 : n,
				     n < 0 ? (int)-n : 0);
			if (__builtin_expect(!stamp_ok(buf, size, seq), 0))
				FAIL("message out of order or lost", i, -1, 0);
		}
		if (todo > 0 && !payload_ok(buf, size))
			FAIL("corrupted payload", todo - 1, -1, 0);
		stamp(buf, size, 0xacacacacu);
		if ((rc = m->send(ctx, buf, size)))
			FAIL("send of the ack", part, -1, -rc);
	}
	return 0;
out:
	return report_side_err(r, &e);
}

static int side_main(struct ipc_run *r)
{
	const struct ipc_opts *o = r->o;
	uint8_t *sbuf = NULL, *rbuf = NULL;
	void *ctx = NULL;
	int rc;

	pin_self(o->pin[r->side]);
	sbuf = malloc(o->size);
	rbuf = malloc(o->size);
	if (!sbuf || !rbuf) {
		ipc_err("out of memory");
		atomic_store(&r->ctl->failed, 1);
		free(sbuf);
		free(rbuf);
		return IPC_EXIT_ERROR;
	}
	fill_pattern(sbuf, o->size);
	memset(rbuf, 0, o->size);
	rc = r->m->open(r->shared, o, r->side, &ctx);
	if (rc) {
		ipc_err("%s: open: %s", r->side ? "server" : "client",
			strerror(-rc));
		atomic_store(&r->ctl->failed, 1);
		free(sbuf);
		free(rbuf);
		return IPC_EXIT_ERROR;
	}
	if (barrier(r->ctl)) {
		rc = IPC_EXIT_ERROR;
	} else if (r->side == 0) {
		rc = o->mode == IPC_PINGPONG ? client_pingpong(r, ctx, sbuf, rbuf)
					     : client_stream(r, ctx, sbuf, rbuf);
	} else {
		rc = o->mode == IPC_PINGPONG ? server_pingpong(r, ctx, rbuf)
					     : server_stream(r, ctx, rbuf);
	}
	if (r->m->close)
		r->m->close(ctx);
	free(sbuf);
	free(rbuf);
	return rc;
}

static void *side_thread(void *arg)
{
	struct ipc_run *r = arg;
	int rc = side_main(r);

	if (rc) {
		/* The peer may be blocked for ever in a receive: end the
		 * whole program (stderr already has the reason). */
		_exit(rc);
	}
	return NULL;
}

static int run_threads(struct ipc_run runs[2])
{
	pthread_t th[2];

	for (int s = 0; s < 2; s++) {
		int err = pthread_create(&th[s], NULL, side_thread, &runs[s]);
		if (err) {
			ipc_err("pthread_create: %s", strerror(err));
			_exit(IPC_EXIT_ERROR);
		}
	}
	for (int s = 0; s < 2; s++)
		pthread_join(th[s], NULL);
	return 0;
}

static int run_processes(struct ipc_run runs[2])
{
	pid_t pid[2];
	int status, rc = 0;
	pid_t parent = getpid();

	fflush(stdout);
	fflush(stderr);
	for (int s = 0; s < 2; s++) {
		pid[s] = fork();
		if (pid[s] < 0) {
			ipc_err("fork: %s", strerror(errno));
			if (s == 1)
				kill(pid[0], SIGKILL);
			return IPC_EXIT_ERROR;
		}
		if (pid[s] == 0) {
			/* Do not outlive the launcher (a harness timeout). */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(IPC_EXIT_ERROR);
			exit(side_main(&runs[s]));
		}
	}
	for (int left = 2; left > 0; left--) {
		pid_t p;
		do
			p = wait(&status);
		while (p < 0 && errno == EINTR);
		if (p < 0)
			break;
		int s = p == pid[0] ? 0 : 1;
		pid[s] = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (WIFSIGNALED(status))
				ipc_err("%s killed by signal %d",
					s ? "server" : "client",
					WTERMSIG(status));
			rc = IPC_EXIT_ERROR;
			if (pid[1 - s] > 0)
				kill(pid[1 - s], SIGKILL);
		}
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Statistics and output                                               */
/* ------------------------------------------------------------------ */

struct ipc_stats {
	double total_ms, avg_us, min_us, max_us, sd_us, rate, mb_s;
	double p50_us, p99_us, p999_us;
};

static double percentile_us(const uint64_t *sorted, long n, double p)
{
	return bench_percentile(sorted, (size_t)n, p) / 1e3;
}

static int compute_stats(const struct ipc_opts *o, const struct ipc_ctl *ctl,
			 struct ipc_stats *st)
{
	long n = o->count;
	uint64_t *d = malloc((size_t)n * sizeof(*d));
	double sum = 0, sq = 0;

	if (!d)
		return -1;
	for (long i = 0; i < n; i++) {
		d[i] = ctl->ts[i + 1] - ctl->ts[i];
		sum += (double)d[i];
	}
	double mean = sum / (double)n;
	for (long i = 0; i < n; i++)
		sq += ((double)d[i] - mean) * ((double)d[i] - mean);
	bench_sort_u64(d, (size_t)n);
	uint64_t total = o->mode == IPC_STREAM ? ctl->t_end - ctl->ts[0]
					       : ctl->ts[n] - ctl->ts[0];
	if (total == 0)
		total = 1;
	st->total_ms = (double)total / 1e6;
	st->avg_us = mean / 1e3;
	st->min_us = (double)d[0] / 1e3;
	st->max_us = (double)d[n - 1] / 1e3;
	st->sd_us = sqrt(sq / (double)n) / 1e3;
	st->rate = (double)n / ((double)total / 1e9);
	st->mb_s = st->rate * (double)o->size / 1e6;
	st->p50_us = percentile_us(d, n, 50);
	st->p99_us = percentile_us(d, n, 99);
	st->p999_us = percentile_us(d, n, 99.9);
	free(d);
	return 0;
}

static void print_text(const struct ipc_method *m, const struct ipc_opts *o,
		       const struct ipc_stats *st)
{
	int pp = o->mode == IPC_PINGPONG;

	printf("============ RESULTS ================\n");
	printf("Method: %s\n", m->name);
	printf("Launch: %s\n", o->threads ? "threads" : "processes");
	printf("Mode: %s\n", pp ? "pingpong" : "stream");
	printf("Message size: %zu\n", o->size);
	printf("Message count: %ld\n", o->count);
	printf("Warm-up count: %ld\n", o->warmup);
	printf("Total duration: %.3f ms\n", st->total_ms);
	printf("Average duration: %.3f us\n", st->avg_us);
	printf("Minimum duration: %.3f us\n", st->min_us);
	printf("Maximum duration: %.3f us\n", st->max_us);
	printf("Standard deviation: %.3f us\n", st->sd_us);
	printf("Message rate: %.0f msg/s\n", st->rate);
	printf("p50 duration: %.3f us\n", st->p50_us);
	printf("p99 duration: %.3f us\n", st->p99_us);
	printf("p99.9 duration: %.3f us\n", st->p999_us);
	if (pp)
		printf("One-way latency: %.3f us\n", st->avg_us / 2);
	printf("Throughput: %.3f MB/s\n", st->mb_s);
	printf("=====================================\n");
}

static void print_json(const struct ipc_method *m, const struct ipc_opts *o,
		       const struct ipc_stats *st)
{
	int pp = o->mode == IPC_PINGPONG;

	printf("{\"method\": \"%s\", \"launch\": \"%s\", \"mode\": \"%s\", "
	       "\"size\": %zu, \"count\": %ld, \"warmup\": %ld, "
	       "\"total_ms\": %.6f, \"avg_us\": %.6f, \"min_us\": %.6f, "
	       "\"max_us\": %.6f, \"stddev_us\": %.6f, \"rate_msg_s\": %.3f, "
	       "\"p50_us\": %.6f, \"p99_us\": %.6f, \"p999_us\": %.6f, ",
	       m->name, o->threads ? "threads" : "processes",
	       pp ? "pingpong" : "stream", o->size, o->count, o->warmup,
	       st->total_ms, st->avg_us, st->min_us, st->max_us, st->sd_us,
	       st->rate, st->p50_us, st->p99_us, st->p999_us);
	if (pp)
		printf("\"one_way_us\": %.6f, ", st->avg_us / 2);
	else
		printf("\"one_way_us\": null, ");
	printf("\"mb_s\": %.6f}\n", st->mb_s);
}

static int refused(const struct ipc_method *m, int rc, const char *why)
{
	if (rc == IPC_EXIT_SKIPPED)
		printf("SKIPPED (%s)\n", why);
	else if (rc == IPC_EXIT_SIZE)
		printf("UNSUPPORTED SIZE (%s: %s)\n", m->name, why);
	else
		ipc_err("%s", why);
	fflush(stdout);
	return rc;
}

int ipc_main(int argc, char **argv, const struct ipc_method *m)
{
	struct ipc_opts o;
	char why[512] = "";
	void *shared = NULL;
	int rc;

	if (argc > 0 && argv[0]) {
		const char *slash = strrchr(argv[0], '/');
		prog = slash ? slash + 1 : argv[0];
	}
	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		return IPC_EXIT_USAGE;
	}
	if (m->check && (rc = m->check(&o, why, sizeof(why))))
		return refused(m, rc, why);

	size_t ctl_len = sizeof(struct ipc_ctl) +
			 ((size_t)o.count + 1) * sizeof(uint64_t);
	struct ipc_ctl *ctl = bench_shared_alloc(ctl_len);
	if (!ctl) {
		ipc_err("mmap: %s", strerror(errno));
		return IPC_EXIT_ERROR;
	}
	/* Touch the samples now: no page fault inside the timed loop. */
	memset(ctl->ts, 0, ((size_t)o.count + 1) * sizeof(uint64_t));

	if (m->setup && (rc = m->setup(&o, &shared, why, sizeof(why)))) {
		bench_shared_free(ctl, ctl_len);
		if (rc < 0) {
			ipc_err("setup: %s%s%s", strerror(-rc),
				why[0] ? ": " : "", why);
			return IPC_EXIT_ERROR;
		}
		return refused(m, rc, why);
	}

	struct ipc_run runs[2];
	for (int s = 0; s < 2; s++)
		runs[s] = (struct ipc_run){ .m = m, .o = &o, .shared = shared,
					    .ctl = ctl, .ctl_len = ctl_len,
					    .side = s };
	rc = o.threads ? run_threads(runs) : run_processes(runs);
	if (m->teardown)
		m->teardown(shared);
	if (rc == 0) {
		struct ipc_stats st;
		if (compute_stats(&o, ctl, &st)) {
			ipc_err("out of memory");
			rc = IPC_EXIT_ERROR;
		} else if (o.json) {
			print_json(m, &o, &st);
		} else {
			print_text(m, &o, &st);
		}
	}
	bench_shared_free(ctl, ctl_len);
	return rc;
}
