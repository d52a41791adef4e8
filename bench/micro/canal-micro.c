/* SPDX-License-Identifier: MIT */
/*
 * canal-micro - canal's micro benchmark (issue 2 section 3): ns per message
 * of seq, spsc, mpsc, mpmc (4 senders, 4 receivers) and select (4 senders,
 * one receiver selecting over their 4 channels) at capacity 0, 1 and 1024,
 * ns per round trip of ping-pong between two threads at the same
 * capacities, and in the same run the floor of a round trip: two threads
 * bouncing a value in one cache line with atomics. The two threads of
 * ping-pong and of the cache-line bounce are pinned to two CPUs when
 * possible. The workloads are bench/chan/workloads.c, shared with
 * chanbench-canal.
 *
 * Output, one line per result (bench/harness/canal_bench/micro.py parses it):
 *     spsc_1024 23.4 ns/msg
 *     ping_pong_1 412.0 ns/rt
 *     cacheline_rt 180.2 ns/rt
 * seq at capacity 0 is impossible (one thread cannot rendezvous with itself)
 * and is not printed.
 *
 * Then the same between two processes (a parent and a forked child, pinned
 * to two CPUs when possible, 8-byte messages, CANAL_SHARED channels):
 *     proc_spsc_1024         ns/msg, the child sends N, the parent receives;
 *     proc_ping_pong_1       ns/rt over two channels of capacity 1, both
 *                            sides polling (canal_try_recv), never asleep;
 *     proc_cacheline_rt      ns/rt, an atomic in a MAP_SHARED page bounced;
 *     proc_futex_rt          ns/rt, two shared (not private) futex words,
 *                            each side FUTEX_WAITs at once, then wakes;
 *     proc_futex_rt_delayed  proc_futex_rt, the responder busy-waiting
 *                            PROC_DELAY_NS (CLOCK_MONOTONIC) before replying;
 *     proc_ping_pong_sleep   canal round trip (canal_send/canal_recv, capacity
 *                            1) with the same responder delay, so that the
 *                            parent must sleep: compare with the line above
 *                            (both raw values include the delay).
 *
 * Usage: canal-micro [-n MESSAGES] [-m MESSAGES_SMALL] [-r ROUND_TRIPS]
 *                    [-R PROC_ROUND_TRIPS] [-S SLEEP_ROUND_TRIPS]
 *                    [-s 0|8|64] [-T SECONDS] [-P]
 *   -n  messages at capacity 1024 (default 200000);
 *   -m  messages at capacity 0 and 1 (default n / 10, at least 1000): these
 *       cost a thread hand-off per message, 10 to 1000 times more, and
 *       fewer messages give the same precision in the same time;
 *   -r  ping-pong and cache-line round trips (default 50000);
 *   -R  round trips of proc_ping_pong_1 and proc_cacheline_rt (default 5000);
 *   -S  round trips of the sleeping process variants (default 300);
 *   -T  run each thread workload and the cache-line round trip again
 *       until it has taken this long in all (default 0: once), and report
 *       the time per message over all its runs: a 5 ms cell is one
 *       scheduler accident away from a wrong figure;
 *   -P  do not pin threads.
 */
#define _GNU_SOURCE
#include "workloads.h"

#include <canal/channel.h>

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MICRO_THREADS 4
/* Responder delay of proc_futex_rt_delayed and proc_ping_pong_sleep. */
#define PROC_DELAY_NS 50000u

static void usage(void)
{
	fprintf(stderr, "usage: canal-micro [-n MESSAGES] [-m MESSAGES_SMALL] "
			"[-r ROUND_TRIPS] [-R PROC_ROUND_TRIPS] "
			"[-S SLEEP_ROUND_TRIPS] [-s 0|8|64] [-T SECONDS] [-P]\n");
	exit(2);
}

/* ------------------------------------------------------------------ */
/* Process variants                                                    */
/* ------------------------------------------------------------------ */

/* The MAP_SHARED page of a parent and its child, one word a cache line. */
struct proc_shm {
	alignas(64) _Atomic uint64_t line; /* proc_cacheline_rt */
	alignas(64) _Atomic uint32_t to_child; /* futex words */
	alignas(64) _Atomic uint32_t to_parent;
	alignas(64) _Atomic uint64_t go; /* proc_spsc_1024 start gate */
};

struct proc_ctx {
	struct proc_shm *shm;
	struct canal_chan *ch[2]; /* spsc: ch[0]; ping-pong: ping, pong */
	size_t count;		  /* messages or round trips */
	unsigned delay_ns;	  /* responder delay */
	pid_t pid;		  /* the child */
	pid_t parent;
	int cpu_a, cpu_b;	  /* -1: not pinned */
	cpu_set_t saved;	  /* the parent's affinity */
};

static void busy_wait_ns(unsigned ns)
{
	uint64_t end = bench_now_ns() + ns;

	while (bench_now_ns() < end)
		;
}


/* Shared futexes (no FUTEX_PRIVATE_FLAG): the words are in a MAP_SHARED
 * page used by two processes. */
static void futex_wait_ne(_Atomic uint32_t *w, uint32_t want)
{
	uint32_t v;

	while ((v = atomic_load_explicit(w, memory_order_acquire)) != want)
		(void)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, v, NULL,
			      NULL, 0);
}

static void futex_post(_Atomic uint32_t *w, uint32_t v)
{
	atomic_store_explicit(w, v, memory_order_release);
	(void)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void proc_init(struct proc_ctx *c, int pin)
{
	void *p;

	memset(c, 0, sizeof(*c));
	c->cpu_a = c->cpu_b = -1;
	c->pid = -1;
	p = mmap(NULL, sizeof(struct proc_shm), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("canal-micro: mmap");
		exit(1);
	}
	c->shm = p; /* zero-filled */
	if (sched_getaffinity(0, sizeof(c->saved), &c->saved) != 0)
		return;
	bench_two_cpus(pin, &c->cpu_a, &c->cpu_b);
}

static void proc_chans(struct proc_ctx *c, size_t capacity, int n)
{
	for (int i = 0; i < n; i++) {
		c->ch[i] = canal_chan_create(sizeof(uint64_t), capacity,
					     CANAL_SHARED);
		if (!c->ch[i]) {
			perror("canal-micro: canal_chan_create");
			exit(1);
		}
	}
}

/* Fork; the child pins itself to cpu_b, runs fn and _exits with its
 * result; the parent pins itself to cpu_a and returns. */
static void proc_fork(struct proc_ctx *c, int (*fn)(struct proc_ctx *))
{
	fflush(NULL);
	c->parent = getpid();
	c->pid = fork();
	if (c->pid < 0) {
		perror("canal-micro: fork");
		exit(1);
	}
	if (c->pid == 0) {
		/* Do not spin forever should the parent die. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != c->parent)
			_exit(1);
		(void)bench_pin_self(c->cpu_b);
		_exit(fn(c));
	}
	(void)bench_pin_self(c->cpu_a);
}

/* Reap the child, restore the parent's affinity, free everything. */
static void proc_end(struct proc_ctx *c, const char *name)
{
	int status;

	while (waitpid(c->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("canal-micro: waitpid");
			exit(1);
		}
	}
	if (c->cpu_a >= 0)
		(void)sched_setaffinity(0, sizeof(c->saved), &c->saved);
	canal_chan_destroy(c->ch[0]);
	canal_chan_destroy(c->ch[1]);
	munmap(c->shm, sizeof(struct proc_shm));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "canal-micro: %s: the child failed\n", name);
		exit(1);
	}
}

/* A failure in the parent: kill and reap the child, then die. */
static void proc_check(struct proc_ctx *c, int rc, const char *what)
{
	if (rc == 0)
		return;
	fprintf(stderr, "canal-micro: %s: %s\n", what, strerror(-rc));
	kill(c->pid, SIGKILL);
	(void)waitpid(c->pid, NULL, 0);
	exit(1);
}

static void print_proc(const char *name, double ns, const char *unit)
{
	printf("%s %.1f %s\n", name, ns, unit);
	fflush(stdout);
}

/* proc_spsc_1024 */
static int spsc_child(struct proc_ctx *c)
{
	wl_wait_value(&c->shm->go, 1);
	for (uint64_t i = 0; i < c->count; i++)
		if (canal_send(c->ch[0], &i) != 0)
			return 1;
	return 0;
}

static double proc_spsc(size_t n, int pin)
{
	struct proc_ctx c;
	uint64_t t0, t1, v;

	proc_init(&c, pin);
	proc_chans(&c, 1024, 1);
	c.count = n;
	proc_fork(&c, spsc_child);
	t0 = bench_now_ns();
	atomic_store_explicit(&c.shm->go, 1, memory_order_release);
	for (uint64_t i = 0; i < n; i++) {
		proc_check(&c, canal_recv(c.ch[0], &v), "canal_recv");
		if (v != i)
			proc_check(&c, -EPROTO, "proc_spsc_1024 out of order");
	}
	t1 = bench_now_ns();
	proc_end(&c, "proc_spsc_1024");
	return (double)(t1 - t0) / (double)n;
}

/* proc_ping_pong_1: both sides poll, never sleep. */
static int poll_recv(struct canal_chan *ch, uint64_t *v)
{
	unsigned spins = 0;
	int rc;

	while ((rc = canal_try_recv(ch, v)) == -EAGAIN) {
		bench_relax();
		if (++spins % 4096 == 0)
			sched_yield();
	}
	return rc;
}

static int poll_send(struct canal_chan *ch, const uint64_t *v)
{
	int rc;

	while ((rc = canal_try_send(ch, v)) == -EAGAIN)
		bench_relax();
	return rc;
}

static int busy_pong_child(struct proc_ctx *c)
{
	uint64_t v;

	for (size_t i = 0; i < c->count; i++)
		if (poll_recv(c->ch[0], &v) != 0 || poll_send(c->ch[1], &v) != 0)
			return 1;
	return 0;
}

/* Blocking pong with the responder delay (proc_ping_pong_sleep). */
static int sleep_pong_child(struct proc_ctx *c)
{
	uint64_t v;

	for (size_t i = 0; i < c->count; i++) {
		if (canal_recv(c->ch[0], &v) != 0)
			return 1;
		busy_wait_ns(c->delay_ns);
		if (canal_send(c->ch[1], &v) != 0)
			return 1;
	}
	return 0;
}

/* rounds round trips over two channels of capacity 1; the first is not
 * timed (the child starts). Returns ns per round trip. */
static double proc_ping_pong(size_t rounds, int pin, int busy,
			     unsigned delay_ns, const char *name)
{
	struct proc_ctx c;
	uint64_t t0 = 0, t1, v;

	proc_init(&c, pin);
	proc_chans(&c, 1, 2);
	c.count = rounds;
	c.delay_ns = delay_ns;
	proc_fork(&c, busy ? busy_pong_child : sleep_pong_child);
	for (uint64_t i = 0; i < rounds; i++) {
		if (i == 1)
			t0 = bench_now_ns();
		v = i;
		if (busy) {
			proc_check(&c, poll_send(c.ch[0], &v), "canal_try_send");
			proc_check(&c, poll_recv(c.ch[1], &v), "canal_try_recv");
		} else {
			proc_check(&c, canal_send(c.ch[0], &v), "canal_send");
			proc_check(&c, canal_recv(c.ch[1], &v), "canal_recv");
		}
		if (v != i)
			proc_check(&c, -EPROTO, name);
	}
	t1 = bench_now_ns();
	proc_end(&c, name);
	return (double)(t1 - t0) / (double)(rounds - 1);
}

/* proc_cacheline_rt */
static int bounce_child(struct proc_ctx *c)
{
	for (uint64_t i = 0; i < c->count; i++) {
		wl_wait_value(&c->shm->line, 2 * i + 1);
		atomic_store_explicit(&c->shm->line, 2 * i + 2,
				      memory_order_release);
	}
	return 0;
}

static double proc_cacheline(size_t rounds, int pin)
{
	struct proc_ctx c;
	uint64_t t0 = 0, t1;

	proc_init(&c, pin);
	c.count = rounds;
	proc_fork(&c, bounce_child);
	for (uint64_t i = 0; i < rounds; i++) {
		if (i == 1)
			t0 = bench_now_ns();
		atomic_store_explicit(&c.shm->line, 2 * i + 1,
				      memory_order_release);
		wl_wait_value(&c.shm->line, 2 * i + 2);
	}
	t1 = bench_now_ns();
	proc_end(&c, "proc_cacheline_rt");
	return (double)(t1 - t0) / (double)(rounds - 1);
}

/* proc_futex_rt, proc_futex_rt_delayed: round trip i posts i + 1 on each
 * word; each side FUTEX_WAITs at once (no spinning). */
static int futex_child(struct proc_ctx *c)
{
	for (uint32_t i = 1; i <= c->count; i++) {
		futex_wait_ne(&c->shm->to_child, i);
		busy_wait_ns(c->delay_ns);
		futex_post(&c->shm->to_parent, i);
	}
	return 0;
}

static double proc_futex(size_t rounds, int pin, unsigned delay_ns)
{
	struct proc_ctx c;
	uint64_t t0 = 0, t1;

	proc_init(&c, pin);
	c.count = rounds;
	c.delay_ns = delay_ns;
	proc_fork(&c, futex_child);
	for (uint32_t i = 1; i <= rounds; i++) {
		if (i == 2)
			t0 = bench_now_ns();
		futex_post(&c.shm->to_child, i);
		futex_wait_ne(&c.shm->to_parent, i);
	}
	t1 = bench_now_ns();
	proc_end(&c, delay_ns ? "proc_futex_rt_delayed" : "proc_futex_rt");
	return (double)(t1 - t0) / (double)(rounds - 1);
}

/* Runs of one cell until it has taken min_s seconds in all (at least one
 * run, at most MICRO_RUNS_MAX): seconds per unit (message or round trip)
 * over every run. */
#define MICRO_RUNS_MAX 1000
static double per_unit(enum wl_kind kind, const struct wl_params *p, double units,
		       double min_s)
{
	double total = 0, done = 0;
	int runs = 0;

	do {
		total += wl_run(kind, p);
		done += units;
	} while (total < min_s && ++runs < MICRO_RUNS_MAX);
	return total / done;
}

static double cacheline_per_rt(size_t rounds, int pin, double min_s)
{
	double total = 0, done = 0;
	int runs = 0;

	do {
		total += wl_cacheline_roundtrips(rounds, pin);
		done += (double)rounds;
	} while (total < min_s && ++runs < MICRO_RUNS_MAX);
	return total / done;
}

int main(int argc, char **argv)
{
	static const struct { enum wl_kind kind; const char *name; } tests[] = {
		{ WL_SEQ, "seq" },	 { WL_SPSC, "spsc" },
		{ WL_MPSC, "mpsc" },	 { WL_MPMC, "mpmc" },
		{ WL_SELECT_RX, "select" },
	};
	static const size_t caps[] = { 0, 1, 1024 };
	size_t n = 200000, n_small = 0, rounds = 50000, size = 8;
	size_t proc_rounds = 5000, sleep_rounds = 300;
	int pin = 1, opt;
	double min_s = 0;

	while ((opt = getopt(argc, argv, "n:m:r:R:S:s:T:Ph")) != -1) {
		switch (opt) {
		case 'n':
			n = wl_parse_count(optarg, "message count");
			break;
		case 'm':
			n_small = wl_parse_count(optarg, "message count");
			break;
		case 'r':
			rounds = wl_parse_count(optarg, "round trips");
			break;
		case 'R':
			proc_rounds = wl_parse_count(optarg, "round trips");
			break;
		case 'S':
			sleep_rounds = wl_parse_count(optarg, "round trips");
			break;
		case 's':
			size = wl_parse_count(optarg, "message size");
			break;
		case 'T': {
			char *end;
			min_s = strtod(optarg, &end);
			if (end == optarg || *end || !(min_s >= 0 && min_s <= 60))
				usage();
			break;
		}
		case 'P':
			pin = 0;
			break;
		default:
			usage();
		}
	}
	if (!n_small)
		n_small = n / 10 > 1000 ? n / 10 : 1000;
	if (optind != argc || n < MICRO_THREADS || n_small < MICRO_THREADS ||
	    rounds < 2 || proc_rounds < 2 || sleep_rounds < 2 ||
	    sleep_rounds > UINT32_MAX ||
	    (size != 0 && size != 8 && size != 64))
		usage();

	for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
		for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
			struct wl_params p = { .n = caps[c] > 1 ? n : n_small,
					       .threads = MICRO_THREADS,
					       .msg_size = size, .capacity = caps[c] };

			if (!wl_possible(tests[t].kind, &p))
				continue;
			double s = per_unit(tests[t].kind, &p,
					    (double)wl_messages(tests[t].kind, &p), min_s);

			printf("%s_%zu %.1f ns/msg\n", tests[t].name, caps[c], s * 1e9);
			fflush(stdout);
		}
	}
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		struct wl_params p = { .n = 2 * rounds, .threads = 1,
				       .msg_size = size, .capacity = caps[c],
				       .pin = pin };
		double s = per_unit(WL_PING_PONG, &p, (double)rounds, min_s);

		printf("ping_pong_%zu %.1f ns/rt\n", caps[c], s * 1e9);
		fflush(stdout);
	}
	printf("cacheline_rt %.1f ns/rt\n", cacheline_per_rt(rounds, pin, min_s) * 1e9);
	fflush(stdout);

	print_proc("proc_spsc_1024", proc_spsc(n, pin), "ns/msg");
	print_proc("proc_ping_pong_1",
		   proc_ping_pong(proc_rounds, pin, 1, 0, "proc_ping_pong_1"),
		   "ns/rt");
	print_proc("proc_cacheline_rt", proc_cacheline(proc_rounds, pin),
		   "ns/rt");
	print_proc("proc_futex_rt", proc_futex(sleep_rounds, pin, 0), "ns/rt");
	print_proc("proc_futex_rt_delayed",
		   proc_futex(sleep_rounds, pin, PROC_DELAY_NS), "ns/rt");
	print_proc("proc_ping_pong_sleep",
		   proc_ping_pong(sleep_rounds, pin, 0, PROC_DELAY_NS,
				  "proc_ping_pong_sleep"),
		   "ns/rt");
	return 0;
}
