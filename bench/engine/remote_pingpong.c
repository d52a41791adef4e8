/* SPDX-License-Identifier: MIT */
/*
 * remote_pingpong.c - remote channels (<canal/remote.h>) against what a
 * user would otherwise write, 8-byte elements, two processes on one host:
 *   bare tcp   a blocking TCP ping-pong on loopback (TCP_NODELAY, one
 *              write and one read of 8 bytes per message), and a stream of
 *              one write(8) per message read in 64 KiB reads;
 *   bare tcp poll  the same ping-pong reading with MSG_DONTWAIT in a busy
 *              loop, as latency-minded TCP code does (the blocking read
 *              sleeps, and a wake-up on this VM can cost 20-45 us; canal's
 *              engine polls): no stream;
 *   engine     canal_engine_isend/irecv + wait, the same ping-pong (what a
 *              remote channel adds is remote minus engine);
 *   remote     a remote channel each way: canal_send then canal_recv in a
 *              user thread, the hubs forwarding; the stream is canal_send
 *              per element, canal_recv per element on the other side.
 * Round trip: median (and min-max) of the per-iteration times in
 * microseconds; stream: messages per second over the whole run.
 * The program forks its two processes itself (a fresh launch directory),
 * like the tests; no CPU pinning (each process has a user thread and a hub
 * thread).
 *   remote_pingpong [--driver tcp|shm] [--iterations N] [--messages M]
 *                   [--pin 1]
 * Prints one line per method:
 *   <method> rtt_us <median> [<min>-<max>] msgs_per_s <rate>
 */
#define _GNU_SOURCE
#include <canal/engine.h>
#include <canal/remote.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int iterations = 5000, messages = 200000;
static const char *driver = "tcp";
static int pin; /* --pin 1: rank r on CPU r, as canal-launch pins */

static void die(const char *what, int err)
{
	fprintf(stderr, "remote_pingpong: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_result(const char *name, uint64_t *rtt, int n, double rate)
{
	qsort(rtt, (size_t)n, sizeof *rtt, cmp_u64);
	printf("%-13s rtt_us %.2f [%.2f-%.2f] msgs_per_s %.0f\n", name,
	       (double)rtt[n / 2] / 1e3, (double)rtt[0] / 1e3,
	       (double)rtt[n - 1] / 1e3, rate);
	fflush(stdout);
}

/* ---- bare TCP ---- */

static void full_write(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die("write", errno);
		p = (const char *)p + k;
		n -= (size_t)k;
	}
}

/* poll: spin on a non-blocking read instead of sleeping in it. */
static void full_read(int fd, void *p, size_t n, bool poll)
{
	while (n) {
		ssize_t k = recv(fd, p, n, poll ? MSG_DONTWAIT : 0);
		if (k < 0 && (errno == EINTR || (poll && errno == EAGAIN)))
			continue;
		if (k <= 0)
			die("read", k == 0 ? ECONNRESET : errno);
		p = (char *)p + k;
		n -= (size_t)k;
	}
}

static void pin_to(int cpu)
{
	if (!pin)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
}

static void bare_tcp(bool poll)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) ||
	    listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &al))
		die("listen", errno);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) { /* the echo side, and the stream's reader */
		pin_to(1);
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (struct sockaddr *)&a, sizeof a))
			die("connect", errno);
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		uint64_t x;
		for (int i = 0; i < iterations; i++) {
			full_read(s, &x, 8, poll);
			full_write(s, &x, 8);
		}
		if (poll)
			_exit(0);
		static char buf[65536];
		size_t want = (size_t)messages * 8;
		while (want) {
			ssize_t k = read(s, buf, want < sizeof buf ? want : sizeof buf);
			if (k <= 0)
				die("stream read", errno);
			want -= (size_t)k;
		}
		full_write(s, &x, 8);
		_exit(0);
	}
	pin_to(0);
	int s = accept(ls, NULL, NULL);
	if (s < 0)
		die("accept", errno);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	uint64_t *rtt = malloc(sizeof *rtt * (size_t)iterations), x = 0;
	for (int i = 0; i < iterations; i++) {
		uint64_t t = canal_now_ns();
		full_write(s, &x, 8);
		full_read(s, &x, 8, poll);
		rtt[i] = canal_now_ns() - t;
	}
	double rate = 0;
	if (!poll) {
		uint64_t t = canal_now_ns();
		for (int i = 0; i < messages; i++)
			full_write(s, &x, 8);
		full_read(s, &x, 8, false);
		rate = messages / ((double)(canal_now_ns() - t) / 1e9);
	}
	print_result(poll ? "bare tcp poll" : "bare tcp", rtt, iterations,
		     rate);
	free(rtt);
	close(s);
	close(ls);
	waitpid(pid, NULL, 0);
	/* The ranks pin themselves; this process goes back to any CPU. */
	if (pin) {
		cpu_set_t set;
		CPU_ZERO(&set);
		for (int c = 0; c < CPU_SETSIZE; c++)
			CPU_SET(c, &set);
		sched_setaffinity(0, sizeof set, &set);
	}
}

/* ---- the engine and remote channels ---- */

static void engine_pingpong(struct canal_engine *e, int rank)
{
	int peer = 1 - rank;
	uint64_t *rtt = malloc(sizeof *rtt * (size_t)iterations), x = 0;
	struct canal_engine_req *q;
	for (int i = 0; i < iterations; i++) {
		uint64_t t = canal_now_ns();
		if (rank == 0) {
			canal_engine_isend(e, peer, 1, &x, 8, 0, &q);
			canal_engine_wait(e, q, NULL);
		}
		int err = canal_engine_irecv(e, peer, 1, &x, 8, &q);
		if (!err)
			err = canal_engine_wait(e, q, NULL);
		if (err)
			die("engine recv", err);
		if (rank == 1) {
			canal_engine_isend(e, peer, 1, &x, 8, 0, &q);
			canal_engine_wait(e, q, NULL);
		}
		rtt[i] = canal_now_ns() - t;
	}
	if (rank == 0)
		print_result("engine", rtt, iterations, 0);
	free(rtt);
}

static void remote(struct canal_engine *e, int rank)
{
	int peer = 1 - rank;
	struct canal_remote_hub *hub;
	struct canal_remote *out, *in;
	int err = canal_remote_hub_start(e, &hub);
	if (!err)
		err = canal_remote_open(hub, peer, rank ? 3 : 2, CANAL_REMOTE_SEND, 8, 1024, &out);
	if (!err)
		err = canal_remote_open(hub, peer, rank ? 2 : 3, CANAL_REMOTE_RECV, 8, 1024, &in);
	if (err)
		die("remote open", err);
	struct canal_chan *o = canal_remote_chan(out), *n = canal_remote_chan(in);
	uint64_t *rtt = malloc(sizeof *rtt * (size_t)iterations), x = 0;
	for (int i = 0; i < iterations; i++) {
		uint64_t t = canal_now_ns();
		if (rank == 0 && canal_send(o, &x))
			die("send", EPIPE);
		if (canal_recv(n, &x))
			die("recv", EPIPE);
		if (rank == 1 && canal_send(o, &x))
			die("send", EPIPE);
		rtt[i] = canal_now_ns() - t;
	}
	/* stream: rank 0 sends, rank 1 receives, then acknowledges */
	uint64_t t = canal_now_ns();
	if (rank == 0) {
		for (int i = 0; i < messages; i++)
			if (canal_send(o, &x))
				die("stream send", EPIPE);
		if (canal_recv(n, &x))
			die("stream ack", EPIPE);
	} else {
		for (int i = 0; i < messages; i++)
			if (canal_recv(n, &x))
				die("stream recv", EPIPE);
		if (canal_send(o, &x))
			die("stream ack", EPIPE);
	}
	double rate = messages / ((double)(canal_now_ns() - t) / 1e9);
	if (rank == 0)
		print_result("remote", rtt, iterations, rate);
	free(rtt);
	canal_close(o);
	if (canal_recv(n, &x) != -EPIPE)
		die("close", EPROTO);
	if ((err = canal_remote_close(out, 10000000000)) ||
	    (err = canal_remote_close(in, 10000000000)) ||
	    (err = canal_remote_hub_stop(hub)))
		die("remote close", err);
}

static void rank_main(const char *dir, int rank)
{
	struct canal_engine_options opt;
	canal_engine_options_init(&opt);
	opt.rank = rank;
	opt.size = 2;
	opt.dir = dir;
	opt.driver = driver;
	struct canal_engine *e;
	int err = canal_engine_open(&opt, &e);
	if (err)
		die("engine open", err);
	engine_pingpong(e, rank);
	remote(e, rank);
	canal_engine_close(e);
}

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--driver"))
			driver = argv[i + 1];
		else if (!strcmp(argv[i], "--iterations"))
			iterations = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pin"))
			pin = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--messages"))
			messages = atoi(argv[i + 1]);
		else
			break;
	}
	if (iterations < 1 || messages < 1 || argc % 2 == 0) {
		fprintf(stderr, "usage: remote_pingpong [--driver tcp|shm] "
				"[--iterations N] [--messages M] [--pin 1]\n");
		return 2;
	}
	printf("# remote_pingpong: 8 B, driver %s, %d round trips, %d streamed\n",
	       driver, iterations, messages);
	if (!strcmp(driver, "tcp")) {
		bare_tcp(false);
		bare_tcp(true);
	}
	char dir[] = "/tmp/canal-remote-bench.XXXXXX";
	if (!mkdtemp(dir))
		die("mkdtemp", errno);
	fflush(NULL);
	pid_t pids[2];
	for (int r = 0; r < 2; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			alarm(600);
			if (pin) {
				cpu_set_t set;
				CPU_ZERO(&set);
				CPU_SET(r, &set);
				sched_setaffinity(0, sizeof set, &set);
			}
			rank_main(dir, r);
			fflush(NULL);
			_exit(0);
		}
	}
	int bad = 0;
	for (int r = 0; r < 2; r++) {
		int st;
		waitpid(pids[r], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[512];
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
	return bad;
}
