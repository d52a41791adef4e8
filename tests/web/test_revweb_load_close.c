/* SPDX-License-Identifier: MIT */
/*
 * test_revweb_load_close.c - canal's load generator (bench/web/load.c)
 * against a server that closes its side of a keep-alive connection right
 * after each complete response, without a "Connection: close" field (HTTP
 * lets a server close a persistent connection at any time, RFC 9112 9.3):
 *     test_revweb_load_close <load binary>
 * Its FIN rides on the response's last segment (the response sent with
 * MSG_MORE, then shutdown(SHUT_WR): what canal's own servers do for their
 * last response), so the client sees the end of the stream in the same
 * event as the end of the response. The server then reads and discards
 * until the client closes (as a lingering close does). The load generator
 * must take such a connection for closed and open a new one for the next
 * request: every request answered, no error of any kind.
 *
 * Failed before the fix with "requests=6 ok=3 connect=0 read=1 timeout=2"
 * (closed loop): the generator stopped reading at the response's end and
 * never saw the end of the stream behind it (edge-triggered epoll reports
 * it once), sent the next request into the half-closed connection and
 * waited the whole --timeout-ms for an answer that could not come; the
 * warm-up's connection, reused, met its pending end as a read error.
 *
 * Then servers that say the connection ends otherwise than with
 * "Connection: close" in those words (HTTP/1.0 without keep-alive,
 * "keep-alive, close", "connection:CLOSE") and close only after the
 * client: failed before the fix with "requests=6 ok=3 connect=0 read=0
 * timeout=3" (the generator matched the exact string "Connection: close"
 * only, and took every HTTP/1.0 answer for keep-alive). An HTTP/1.0 answer
 * with "Connection: Keep-Alive" keeps its connection (one connection for
 * all the requests).
 *
 * Then a server that never answers, at a fixed rate: every request a
 * timeout, once, the run ending about --timeout-ms after its duration.
 *
 * Bounded: alarm(60); each load run takes well under a second once fixed
 * (--timeout-ms 2000 per lost request before).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"

static int g_listen;
/* The response the server gives (set before each load run): with the
 * FIN on its segment (the first case), or one that says the connection
 * ends in a way other than "Connection: close" exactly, the server's
 * close then coming only after the client's. */
static const char *_Atomic g_resp;
static _Atomic bool g_fin;
static _Atomic bool g_one = true; /* one answer per connection */
static _Atomic int g_accepts;

/* One connection: answer each request (MSG_MORE + half-close, the FIN on
 * the response's segment), then discard input until the client's end. */
static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	size_t have = 0;
	for (;;) {
		ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
		if (n <= 0)
			break;
		have += (size_t)n;
		if (!memmem(buf, have, "\r\n\r\n", 4)) {
			if (have == sizeof buf)
				break;
			continue;
		}
		const char *resp = g_resp;
		if (!resp) { /* a server that never answers */
			while (recv(fd, buf, sizeof buf, 0) > 0)
				;
			break;
		}
		bool fin = g_fin;
		send(fd, resp, strlen(resp), MSG_NOSIGNAL | (fin ? MSG_MORE : 0));
		if (fin)
			shutdown(fd, SHUT_WR);
		if (!g_one) {
			char *e = memmem(buf, have, "\r\n\r\n", 4);
			have -= (size_t)(e + 4 - buf);
			memmove(buf, e + 4, have);
			continue;
		}
		while (recv(fd, buf, sizeof buf, 0) > 0)
			; /* a request sent after the end: never answered */
		break;
	}
	close(fd);
	return NULL;
}

static void *acceptor(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(g_listen, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		g_accepts++;
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &at, serve, (void *)(intptr_t)fd) != 0)
			close(fd);
		pthread_attr_destroy(&at);
	}
}

/* Run load with args (NULL-terminated, after --port P); its summary line
 * in out. */
static void run_load(const char *bin, int port, const char *const *args,
		     char *out, size_t cap)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		char ps[16];
		snprintf(ps, sizeof ps, "%d", port);
		const char *argv[24] = {bin, "--port", ps};
		int n = 3;
		for (; args[n - 3] && n < 23; n++)
			argv[n] = args[n - 3];
		argv[n] = NULL;
		execv(bin, (char *const *)argv);
		perror(bin);
		_exit(127);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t r;
	while (len < cap - 1 && (r = read(pfd[0], out + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(pfd[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static long field(const char *line, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, " %s=", name);
	const char *p = strstr(line, key);
	if (!p) {
		fprintf(stderr, "no %s in: %s\n", name, line);
		abort();
	}
	return atol(p + strlen(key));
}

static void expect_all_ok(const char *line, long n)
{
	printf("%s", line);
	long ok = field(line, "ok"), requests = field(line, "requests");
	long connect = field(line, "connect"), rd = field(line, "read");
	long timeout = field(line, "timeout"), non2xx = field(line, "non2xx");
	if (requests != n || ok != n || connect || rd || timeout || non2xx) {
		fprintf(stderr,
			"FAIL: want %ld requests all ok, got requests=%ld ok=%ld "
			"connect=%ld read=%ld timeout=%ld non2xx=%ld\n",
			n, requests, ok, connect, rd, timeout, non2xx);
		abort();
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <load binary>\n", argv[0]);
		return 2;
	}
	alarm(60);
	signal(SIGPIPE, SIG_IGN);
	g_listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(g_listen >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(g_listen, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(listen(g_listen, 64) == 0);
	socklen_t al = sizeof a;
	CHECK(getsockname(g_listen, (struct sockaddr *)&a, &al) == 0);
	int port = ntohs(a.sin_port);
	pthread_t t = spawn(acceptor, NULL);
	pthread_detach(t);

	char out[4096];
	g_resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	g_fin = true;
	/* Closed loop, one connection: the warm-up request's connection,
	 * then each request's, is closed by the server. */
	static const char *const closed[] = {"--connections", "1", "--requests",
					     "6", "--timeout-ms", "2000", NULL};
	run_load(argv[1], port, closed, out, sizeof out);
	expect_all_ok(out, 6);
	/* Fixed rate, two connections. */
	static const char *const rate[] = {"--connections", "2", "--requests",
					   "10", "--rate", "200",
					   "--timeout-ms", "2000", NULL};
	run_load(argv[1], port, rate, out, sizeof out);
	expect_all_ok(out, 10);
	/* Answers that end the connection without saying "Connection: close"
	 * in those words: HTTP/1.0 without keep-alive, the field's value in
	 * another case or in a list, no space after the colon (RFC 9110 7.6.1:
	 * a list of case-insensitive tokens). The client must send no more on
	 * the connection (RFC 9112 9.6); this server answers no more. */
	static const char *const ends[] = {
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\n"
		"Content-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nconnection:CLOSE\r\nContent-Length: 2\r\n\r\nok",
	};
	g_fin = false;
	for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
		g_resp = ends[i];
		run_load(argv[1], port, closed, out, sizeof out);
		expect_all_ok(out, 6);
	}
	/* HTTP/1.0 with keep-alive: the connection carries them all. */
	g_resp = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"
		 "Content-Length: 2\r\n\r\nok";
	g_one = false;
	g_accepts = 0;
	run_load(argv[1], port, closed, out, sizeof out);
	expect_all_ok(out, 6);
	if (g_accepts != 1) {
		fprintf(stderr, "FAIL: HTTP/1.0 keep-alive: %d connections, want 1\n",
			g_accepts);
		abort();
	}
	/* A server that stops answering, at a fixed rate: a request counts
	 * as a timeout --timeout-ms after its intended start, and one whose
	 * connection is still busy by then is never sent. Before (timeouts
	 * counted from each send, one connection), the 1 000 requests of this
	 * 1 s run timed out one after another, 200 ms each: 200 s, past the
	 * alarm. Every request once, all timeouts. */
	g_resp = NULL;
	static const char *const silent[] = {"--connections", "1", "--rate", "1000",
					     "--duration", "1", "--timeout-ms", "200",
					     NULL};
	run_load(argv[1], port, silent, out, sizeof out);
	printf("%s", out);
	/* How many came due depends on the schedule's last turns (a loaded
	 * machine, a sanitizer): only that each was counted once, a timeout. */
	long req = field(out, "requests"), tmo = field(out, "timeout");
	CHECK(req > 0 && req <= 1001);
	CHECK(tmo == req);
	CHECK(field(out, "ok") == 0 && field(out, "connect") == 0 &&
	      field(out, "read") == 0 && field(out, "non2xx") == 0);
	TEST_DONE("test_revweb_load_close");
}
