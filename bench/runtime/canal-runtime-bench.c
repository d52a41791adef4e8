/* SPDX-License-Identifier: MIT */
/*
 * canal-runtime-bench - the task runtime's basic costs, one line per
 * result ("name value unit"), read by bench/harness/canal_bench/runtime.py:
 *   yield_pingpong     ns per switch: two tasks on one loop alternate with
 *                      canal_yield (a switch is one task to the other)
 *   spawn_join         ns per task: spawn a task, wait for its end (it
 *                      signals a condvar the spawner waits on), one loop
 *   cond_pingpong      ns per round trip: two tasks, one loop, two condvars
 *   chan_pingpong_1loop_C, chan_pingpong_2loops_C
 *                      ns per round trip of a canal channel of capacity C
 *                      (0, 1) between two tasks on one loop / on two loops
 *   thread_chan_pingpong_C
 *                      the same between two OS threads (today's canal)
 *   sock_pingpong_recv, sock_pingpong_rstream
 *                      ns per round trip of 8 bytes between two tasks on
 *                      one loop over a TCP loopback pair (canal_io_send,
 *                      then a receive: canal_io_recv, or a receive stream
 *                      each task keeps open); rounds / 4 round trips
 *   parked_bytes       resident bytes per task parked on a channel
 *                      (RSS delta / tasks, CANAL_RB_PARKED tasks)
 *   parked_compact_bytes
 *                      the same in a runtime with CANAL_RUN_COMPACT_STACKS
 * Times are taken inside the runtime, from the main task's start to the
 * workload's end (as Go's peer times inside its running runtime): the
 * start and end of canal_run itself (loop threads, io_uring rings) are
 * not part of any figure.
 * Usage: canal-runtime-bench [rounds] (default 200000). CANAL_RB_ONLY=name
 * runs only the workloads whose result names start with name (e.g.
 * chan_pingpong_1loop, for callgrind: instructions per round trip).
 */
#define _GNU_SOURCE
#include <canal/channel.h>
#include <canal/task.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

static long rounds = 200000;

static void die(const char *what, int r)
{
	fprintf(stderr, "canal-runtime-bench: %s: %s\n", what, strerror(-r));
	exit(1);
}

/* The timed span of a workload: t0 when the main task starts, t1 when
 * the workload's last step ends (inside the runtime). */
static uint64_t t0, t1;

/* ---- yield ping-pong ---- */
static _Atomic int yielders_left;

static void yielder(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++)
		canal_yield();
	if (atomic_fetch_sub_explicit(&yielders_left, 1,
				      memory_order_relaxed) == 1)
		t1 = canal_now_ns();
}

static void yield_main(void *arg)
{
	(void)arg;
	t0 = canal_now_ns();
	atomic_store_explicit(&yielders_left, 2, memory_order_relaxed);
	canal_spawn(yielder, NULL);
	canal_spawn(yielder, NULL);
}

/* ---- spawn + join ---- */
struct joiner {
	struct canal_cond *cv;
	_Atomic int done;
};

static void child(void *arg)
{
	struct joiner *j = arg;
	atomic_store_explicit(&j->done, 1, memory_order_relaxed);
	canal_cond_signal(j->cv);
}

static void spawn_main(void *arg)
{
	(void)arg;
	struct joiner j = {.cv = canal_cond_create()};
	t0 = canal_now_ns();
	for (long i = 0; i < rounds; i++) {
		atomic_store_explicit(&j.done, 0, memory_order_relaxed);
		int r = canal_spawn(child, &j);
		if (r)
			die("canal_spawn", r);
		while (!atomic_load_explicit(&j.done, memory_order_relaxed))
			canal_cond_wait(j.cv, -1);
	}
	t1 = canal_now_ns();
	canal_cond_destroy(j.cv);
}

/* ---- condvar ping-pong ---- */
struct cpp {
	struct canal_cond *ping, *pong;
	_Atomic long turn;
};

static void cond_ponger(void *arg)
{
	struct cpp *c = arg;
	for (long i = 0; i < rounds; i++) {
		while (atomic_load_explicit(&c->turn, memory_order_relaxed) !=
		       2 * i + 1)
			canal_cond_wait(c->ping, -1);
		atomic_store_explicit(&c->turn, 2 * i + 2,
				      memory_order_relaxed);
		canal_cond_signal(c->pong);
	}
}

static void cond_main(void *arg)
{
	struct cpp *c = arg;
	t0 = canal_now_ns();
	canal_spawn(cond_ponger, c);
	for (long i = 0; i < rounds; i++) {
		atomic_store_explicit(&c->turn, 2 * i + 1,
				      memory_order_relaxed);
		canal_cond_signal(c->ping);
		while (atomic_load_explicit(&c->turn, memory_order_relaxed) !=
		       2 * i + 2)
			canal_cond_wait(c->pong, -1);
	}
	t1 = canal_now_ns();
}

/* ---- channel ping-pong ---- */
struct cping {
	struct canal_chan *a, *b;
};

static void chan_ponger(void *arg)
{
	struct cping *p = arg;
	long v;
	for (long i = 0; i < rounds; i++) {
		canal_recv(p->a, &v);
		canal_send(p->b, &v);
	}
}

static void chan_pinger(struct cping *p)
{
	for (long i = 0; i < rounds; i++) {
		long v = i;
		canal_send(p->a, &v);
		canal_recv(p->b, &v);
	}
}

static void chan_main(void *arg)
{
	t0 = canal_now_ns();
	canal_spawn(chan_ponger, arg);
	chan_pinger(arg);
	t1 = canal_now_ns();
}

static void *chan_ponger_thread(void *arg)
{
	chan_ponger(arg);
	return NULL;
}

/* ---- parked memory ---- */
static long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * sysconf(_SC_PAGESIZE);
}

struct parked {
	struct canal_chan *ch;
	long n;
	_Atomic long in;
	double bytes;
};

static void parked_task(void *arg)
{
	struct parked *p = arg;
	atomic_fetch_add_explicit(&p->in, 1, memory_order_relaxed);
	canal_recv(p->ch, NULL);
}

static void parked_main(void *arg)
{
	struct parked *p = arg;
	long before = rss_bytes();
	for (long i = 0; i < p->n; i++)
		if (canal_spawn(parked_task, p))
			die("canal_spawn", -ENOMEM);
	while (atomic_load_explicit(&p->in, memory_order_relaxed) < p->n)
		canal_sleep_ns(1000000);
	/* Steady state (the Go peer uses the same rule): resident memory
	 * moved by less than 1 % in 100 ms, at most 5 s. */
	long prev = rss_bytes(), cur = prev;
	for (int i = 0; i < 50; i++) {
		canal_sleep_ns(100000000);
		cur = rss_bytes();
		if (labs(prev - cur) * 100 < prev)
			break;
		prev = cur;
	}
	p->bytes = (double)(cur - before) / (double)p->n;
	canal_close(p->ch);
}

/* ---- socket ping-pong: canal_io_recv or a receive stream ---- */
struct sping {
	int fd[2];
	bool stream;
	_Atomic int left;
};

/* Receive exactly n bytes on fd (or through s): dies on error. */
static void recv_exact(int fd, struct canal_io_rstream *s, char *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = s ? canal_io_rstream_recv(s, b + got, n - got, -1,
						      NULL)
			      : canal_io_recv(fd, b + got, n - got, 0, -1,
					      NULL);
		if (r <= 0)
			die("receive", r < 0 ? (int)r : -EPIPE);
		got += (size_t)r;
	}
}

static void sock_side(struct sping *p, int side, bool first)
{
	int fd = p->fd[side];
	struct canal_io_rstream *s = NULL;
	int r;
	if (p->stream && (r = canal_io_rstream_open(fd, &s)))
		die("canal_io_rstream_open", r);
	char b[8] = "pingpong";
	long n = rounds / 4;
	for (long i = 0; i < n; i++) {
		if (first && canal_io_send(fd, b, 8, 0, -1, NULL) != 8)
			die("canal_io_send", -EIO);
		recv_exact(fd, s, b, 8);
		if (!first && canal_io_send(fd, b, 8, 0, -1, NULL) != 8)
			die("canal_io_send", -EIO);
	}
	if (s)
		canal_io_rstream_close(s);
	if (atomic_fetch_sub_explicit(&p->left, 1, memory_order_relaxed) == 1)
		t1 = canal_now_ns();
}

static void sock_ponger(void *arg)
{
	sock_side(arg, 1, false);
}

static void sock_main(void *arg)
{
	struct sping *p = arg;
	atomic_store_explicit(&p->left, 2, memory_order_relaxed);
	t0 = canal_now_ns();
	canal_spawn(sock_ponger, p);
	sock_side(p, 0, true);
}

static const char *only;

/* Whether the workload of result name runs (CANAL_RB_ONLY). */
static bool wanted(const char *name)
{
	return !only || strncmp(name, only, strlen(only)) == 0;
}

/* The span of the last timed workload. */
static double elapsed_ns(void)
{
	return (double)(t1 - t0);
}

/* A connected TCP pair on loopback (TCP_NODELAY): the socket ping-pongs
 * run on TCP, not on a Unix socket pair, where receive streams take a
 * receive per call (Linux's multishot receive can miss a Unix socket's end
 * of input: canal/task.h). */
static void tcp_pair(int fd[2])
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &al))
		die("listen", -errno);
	fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd[1] < 0 || connect(fd[1], (struct sockaddr *)&a, sizeof(a)))
		die("connect", -errno);
	fd[0] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (fd[0] < 0)
		die("accept", -errno);
	setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(l);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	only = getenv("CANAL_RB_ONLY");
	struct canal_run_options one = {.loops = 1}, two = {.loops = 2};
	int r;

	if (wanted("yield_pingpong")) {
		if ((r = canal_run(yield_main, NULL, &one)))
			die("canal_run", r);
		printf("yield_pingpong %.1f ns/switch\n",
		       elapsed_ns() / (2.0 * rounds));
	}

	if (wanted("spawn_join")) {
		if ((r = canal_run(spawn_main, NULL, &one)))
			die("canal_run", r);
		printf("spawn_join %.1f ns/task\n", elapsed_ns() / rounds);
	}

	if (wanted("cond_pingpong")) {
		struct cpp c = {.ping = canal_cond_create(),
				.pong = canal_cond_create()};
		if ((r = canal_run(cond_main, &c, &one)))
			die("canal_run", r);
		printf("cond_pingpong %.1f ns/rt\n", elapsed_ns() / rounds);
		canal_cond_destroy(c.ping);
		canal_cond_destroy(c.pong);
	}

	const size_t caps[] = {0, 1};
	for (int k = 0; k < 2; k++) {
		struct cping p = {
			canal_chan_create(sizeof(long), caps[k], 0),
			canal_chan_create(sizeof(long), caps[k], 0)};
		char name[64];
		snprintf(name, sizeof(name), "chan_pingpong_1loop_%zu", caps[k]);
		if (wanted(name)) {
			if ((r = canal_run(chan_main, &p, &one)))
				die("canal_run", r);
			printf("%s %.1f ns/rt\n", name, elapsed_ns() / rounds);
		}
		snprintf(name, sizeof(name), "chan_pingpong_2loops_%zu", caps[k]);
		if (wanted(name)) {
			if ((r = canal_run(chan_main, &p, &two)))
				die("canal_run", r);
			printf("%s %.1f ns/rt\n", name, elapsed_ns() / rounds);
		}
		snprintf(name, sizeof(name), "thread_chan_pingpong_%zu",
			 caps[k]);
		if (wanted(name)) {
			pthread_t th;
			t0 = canal_now_ns();
			pthread_create(&th, NULL, chan_ponger_thread, &p);
			chan_pinger(&p);
			pthread_join(th, NULL);
			t1 = canal_now_ns();
			printf("%s %.1f ns/rt\n", name, elapsed_ns() / rounds);
		}
		canal_chan_destroy(p.a);
		canal_chan_destroy(p.b);
	}

	for (int k = 0; k < 2; k++) {
		const char *name = k ? "sock_pingpong_rstream"
				     : "sock_pingpong_recv";
		if (!wanted(name))
			continue;
		struct sping p = {.stream = k == 1};
		tcp_pair(p.fd);
		if ((r = canal_run(sock_main, &p, &one)))
			die("canal_run", r);
		printf("%s %.1f ns/rt\n", name, elapsed_ns() / (rounds / 4));
		close(p.fd[0]);
		close(p.fd[1]);
	}

	if (!wanted("parked_bytes"))
		return 0;
	const char *e = getenv("CANAL_RB_PARKED");
	struct parked pk = {.ch = canal_chan_create(0, 0, 0),
			    .n = e ? atol(e) : 100000};
	if ((r = canal_run(parked_main, &pk, NULL)))
		die("canal_run", r);
	printf("parked_bytes_%ld %.0f bytes/task\n", pk.n, pk.bytes);
	canal_chan_destroy(pk.ch);
	/* The same with stack compaction (opt-in: task.h). */
	struct canal_run_options compact = {.flags = CANAL_RUN_COMPACT_STACKS};
	struct parked pc = {.ch = canal_chan_create(0, 0, 0), .n = pk.n};
	if ((r = canal_run(parked_main, &pc, &compact)))
		die("canal_run", r);
	printf("parked_compact_bytes_%ld %.0f bytes/task\n", pc.n, pc.bytes);
	canal_chan_destroy(pc.ch);
	return 0;
}
