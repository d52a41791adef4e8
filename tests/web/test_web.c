/* SPDX-License-Identifier: MIT */
/*
 * test_web.c - the behaviour every web server style must have (issue 14),
 * over loopback against a real server process:
 *     test_web <server binary> <style>
 * GET/HEAD/404, keep-alive, pipelining, Connection: close, HTTP/1.0; bad
 * input (400/405/414/431/501/505), path traversal (.., encoded,
 * absolute, symlinks out of the root); a slow client closed after the
 * header timeout while others are served; a client pipelining without end
 * beside another (each gets its turn); clients that stop reading closed
 * after the idle timeout; clients closing mid-response;
 * many idle keep-alive connections held while others are served
 * (CANAL_WEB_IDLE_CONNS, default 1000; CANAL_WEB_IDLE_CONNS_STRESS instead
 * when CANAL_STRESS is set); accept surviving EMFILE (a second
 * server with 64 descriptors); SIGTERM -> exit status 0.
 * CANAL_WEB_TESTS=word runs only the tests whose name contains word.
 *
 * Every wait is bounded (poll with deadlines); nothing is judged by time
 * except liveness bounds far above what the server needs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *g_bin, *g_style;
/* The servers' --cores (a test that needs every connection on one loop
 * sets "1" around its server_start). */
static const char *g_cores = "2";
static char g_dir[256], g_root[300];
static int g_failures;

static void fail(const char *test, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "FAIL [%s] %s: ", g_style, test);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	g_failures++;
}

#define CHECK(test, cond, ...)                                                 \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fail(test, __VA_ARGS__);                               \
			return;                                                \
		}                                                              \
	} while (0)

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		perror(path);
		exit(1);
	}
	close(fd);
}

#define BIG_SIZE (4 << 20)
#define MID_SIZE (60 << 10)
static uint64_t g_mid_hash;

/* FNV-1a: a body's hash, to compare whole bodies without keeping them. */
#define FNV_INIT 0xcbf29ce484222325ull
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void make_tree(void)
{
	char p[512];
	snprintf(g_dir, sizeof g_dir, "/tmp/canal-web-test-XXXXXX");
	if (!mkdtemp(g_dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(g_root, sizeof g_root, "%s/root", g_dir);
	mkdir(g_root, 0755);
	snprintf(p, sizeof p, "%s/secret.txt", g_dir);
	write_file(p, "SECRET\n", 7);
	snprintf(p, sizeof p, "%s/index.html", g_root);
	write_file(p, "hello\n", 6);
	snprintf(p, sizeof p, "%s/a.txt", g_root);
	write_file(p, "file a\n", 7);
	snprintf(p, sizeof p, "%s/sub", g_root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/sub/index.html", g_root);
	write_file(p, "sub index\n", 10);
	char *big = malloc(BIG_SIZE);
	for (size_t i = 0; i < BIG_SIZE; i++)
		big[i] = (char)('a' + i % 26);
	snprintf(p, sizeof p, "%s/big.bin", g_root);
	write_file(p, big, BIG_SIZE);
	/* Small enough for the small-file path (WEB_SMALL_BODY), larger than
	 * the slow reader's buffers: a shifted pattern, so that a resent or
	 * skipped range shows in its hash. */
	for (size_t i = 0; i < MID_SIZE; i++)
		big[i] = (char)('A' + (i * 7 + i / 251) % 53);
	g_mid_hash = fnv1a(FNV_INIT, big, MID_SIZE);
	snprintf(p, sizeof p, "%s/mid.bin", g_root);
	write_file(p, big, MID_SIZE);
	free(big);
	snprintf(p, sizeof p, "%s/link_in", g_root);
	if (symlink("a.txt", p) < 0)
		perror("symlink");
	snprintf(p, sizeof p, "%s/link_out", g_root);
	if (symlink("../secret.txt", p) < 0)
		perror("symlink");
	snprintf(p, sizeof p, "%s/link_abs", g_root);
	char target[300];
	snprintf(target, sizeof target, "%s/secret.txt", g_dir);
	if (symlink(target, p) < 0)
		perror("symlink");
	snprintf(p, sizeof p, "%s/fifo", g_root);
	if (mkfifo(p, 0644) < 0)
		perror("mkfifo");
	snprintf(p, sizeof p, "%s/link_dir", g_root);
	if (symlink("..", p) < 0)
		perror("symlink");
}

static void remove_tree(void)
{
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
}

/* ---- the server process -------------------------------------------------- */

struct server {
	pid_t pid;
	int port;
};

/* Starts the server (nofile > 0: its RLIMIT_NOFILE, hard and soft; env,
 * env2: NULL or one "NAME=VALUE" each for the server's environment only). */
static int server_start_env(struct server *s, long nofile, const char *env,
			    const char *env2)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return -1;
	s->pid = fork();
	if (s->pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		if (nofile > 0) {
			struct rlimit rl = {(rlim_t)nofile, (rlim_t)nofile};
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		setenv("CANAL_WEB_HEADER_TIMEOUT_MS", "1000", 1);
		if (env)
			putenv((char *)env);
		if (env2)
			putenv((char *)env2);
		/* Idle connections must outlive the slowest (sanitized) run. */
		setenv("CANAL_WEB_IDLE_TIMEOUT_MS", "600000", 0);
		execl(g_bin, g_bin, "--port", "0", "--root", g_root, "--cores",
		      g_cores, (char *)NULL);
		perror(g_bin);
		_exit(127);
	}
	close(pfd[1]);
	char line[256];
	size_t n = 0;
	long long deadline = now_ms() + 20000;
	s->port = 0;
	while (now_ms() < deadline && n < sizeof line - 1) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		if (poll(&p, 1, 200) <= 0)
			continue;
		ssize_t r = read(pfd[0], line + n, sizeof line - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		line[n] = '\0';
		char *nl = strchr(line, '\n');
		if (nl) {
			char *colon = strrchr(line, ':');
			if (colon)
				s->port = atoi(colon + 1);
			break;
		}
	}
	close(pfd[0]);
	if (s->port <= 0) {
		fprintf(stderr, "server %s did not say its port\n", g_bin);
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		return -1;
	}
	return 0;
}

static int server_start(struct server *s, long nofile, const char *env)
{
	return server_start_env(s, nofile, env, NULL);
}

/* SIGTERM; returns the exit status, or -1 when it had to be killed. */
static int server_stop(struct server *s)
{
	kill(s->pid, SIGTERM);
	long long deadline = now_ms() + 10000;
	int st;
	while (now_ms() < deadline) {
		pid_t r = waitpid(s->pid, &st, WNOHANG);
		if (r == s->pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
	return -1;
}

static struct server g_srv;

/* ---- a client ------------------------------------------------------------ */

struct client {
	int fd;
	size_t len;
	char buf[1 << 16];
};

/* rcvbuf > 0: the socket's receive buffer, set before connecting (so the
 * window the server sees is small from the start). */
static int connect_port_rcvbuf(int port, int rcvbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return fd;
}

static int connect_port(int port)
{
	return connect_port_rcvbuf(port, 0);
}

static struct client *client_open(void)
{
	struct client *c = calloc(1, sizeof *c);
	c->fd = connect_port(g_srv.port);
	if (c->fd < 0) {
		free(c);
		return NULL;
	}
	return c;
}

static void client_close(struct client *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c);
}

static int send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t r = send(fd, s, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		s += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Read more into c->buf: > 0 bytes, 0 EOF, < 0 error/timeout. */
static ssize_t fill(struct client *c)
{
	if (c->len == sizeof c->buf)
		return -ENOBUFS;
	ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
	if (r > 0)
		c->len += (size_t)r;
	return r < 0 ? -errno : r;
}

struct resp {
	int status;
	long content_length;
	bool conn_close;
	bool has_allow;
	char body[256]; /* the first bytes */
	size_t body_len;
	uint64_t hash;  /* FNV-1a of the whole body */
};


/* Read one response (head == true: no body follows). 0 or -1. */
static int read_resp(struct client *c, bool head, struct resp *r)
{
	memset(r, 0, sizeof *r);
	r->content_length = -1;
	r->hash = FNV_INIT;
	char *end;
	while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4)))
		if (fill(c) <= 0)
			return -1;
	size_t hl = (size_t)(end - c->buf) + 4;
	char *h = strndup(c->buf, hl);
	if (sscanf(h, "HTTP/1.1 %d", &r->status) != 1) {
		free(h);
		return -1;
	}
	for (char *l = strstr(h, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
		char *f = l + 2;
		if (strncasecmp(f, "Content-Length:", 15) == 0)
			r->content_length = atol(f + 15);
		else if (strncasecmp(f, "Connection: close", 17) == 0)
			r->conn_close = true;
		else if (strncasecmp(f, "Allow:", 6) == 0)
			r->has_allow = true;
	}
	free(h);
	memmove(c->buf, c->buf + hl, c->len - hl);
	c->len -= hl;
	if (head || r->content_length <= 0)
		return 0;
	size_t want = (size_t)r->content_length;
	while (want) {
		if (c->len == 0 && fill(c) <= 0)
			return -1;
		size_t n = c->len < want ? c->len : want;
		if (r->body_len < sizeof r->body - 1) {
			size_t k = sizeof r->body - 1 - r->body_len;
			if (k > n)
				k = n;
			memcpy(r->body + r->body_len, c->buf, k);
			r->body_len += k;
			r->body[r->body_len] = '\0';
		}
		r->hash = fnv1a(r->hash, c->buf, n);
		memmove(c->buf, c->buf + n, c->len - n);
		c->len -= n;
		want -= n;
	}
	return 0;
}

/* Wait for the server to close: true when EOF or reset comes first. */
static bool closed_by_server(struct client *c, int ms)
{
	long long deadline = now_ms() + ms;
	while (now_ms() < deadline) {
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0)
			continue;
		char b[4096];
		ssize_t r = recv(c->fd, b, sizeof b, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
	return false;
}

/* One request on a fresh connection; the response in *r. -1: no response. */
static int one(const char *req, struct resp *r)
{
	struct client *c = client_open();
	if (!c)
		return -1;
	int rc = send_all(c->fd, req, strlen(req));
	if (rc == 0)
		rc = read_resp(c, strncmp(req, "HEAD ", 5) == 0, r);
	client_close(c);
	return rc;
}

/* ---- the tests ----------------------------------------------------------- */

/* The server grew its descriptor table at start (core.c,
 * reserve_fd_table): every growth under load, in a process of several
 * threads, blocked the thread that took the descriptor for an RCU grace
 * period. /proc's FDSize is the table's size. */
static void test_fd_table(void)
{
	struct rlimit rl;
	CHECK("fd table", getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
	long want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 65536
			    ? 65536
			    : (long)rl.rlim_max;
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)g_srv.pid);
	FILE *f = fopen(path, "r");
	CHECK("fd table", f != NULL, "cannot read %s", path);
	if (!f)
		return;
	long fdsize = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "FDSize: %ld", &fdsize) == 1)
			break;
	fclose(f);
	CHECK("fd table", fdsize >= want,
	      "FDSize %ld, expected at least %ld (the open-file limit)", fdsize,
	      want);
}

static void test_basic(void)
{
	struct resp r;
	CHECK("get", one("GET / HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.status == 200 &&
			     r.content_length == 6 && strcmp(r.body, "hello\n") == 0,
	      "GET / -> %d '%s'", r.status, r.body);
	CHECK("get", one("GET /a.txt?x=1 HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 &&
			     r.status == 200 && strcmp(r.body, "file a\n") == 0,
	      "GET /a.txt?x=1 -> %d", r.status);
	CHECK("get", one("GET /sub/ HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.status == 200 &&
			     strcmp(r.body, "sub index\n") == 0,
	      "GET /sub/ -> %d", r.status);
	CHECK("get", one("GET /link_in HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 &&
			     r.status == 200 && strcmp(r.body, "file a\n") == 0,
	      "symlink inside the root -> %d", r.status);
	CHECK("404", one("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.status == 404,
	      "GET /nope -> %d", r.status);
	CHECK("404", one("GET /sub HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.status == 404,
	      "GET /sub (a directory) -> %d", r.status);

	/* HEAD, then GET on the same connection: HEAD sent no body. */
	struct client *c = client_open();
	CHECK("head", c, "connect");
	const char *two = "HEAD / HTTP/1.1\r\nHost: t\r\n\r\n";
	send_all(c->fd, two, strlen(two));
	int rc = read_resp(c, true, &r);
	CHECK("head", rc == 0 && r.status == 200 && r.content_length == 6 && !r.conn_close,
	      "HEAD / -> %d len %ld", r.status, r.content_length);
	/* keep-alive: three requests, then two pipelined in one send. */
	for (int i = 0; i < 3; i++) {
		const char *g = "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
		send_all(c->fd, g, strlen(g));
		rc = read_resp(c, false, &r);
		CHECK("keep-alive", rc == 0 && r.status == 200 && strcmp(r.body, "file a\n") == 0,
		      "request %d on one connection -> %d", i, r.status);
	}
	const char *pipe2 = "GET / HTTP/1.1\r\nHost: t\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\n\r\n";
	send_all(c->fd, pipe2, strlen(pipe2));
	CHECK("pipelining", read_resp(c, false, &r) == 0 && r.status == 200, "first -> %d", r.status);
	CHECK("pipelining", read_resp(c, false, &r) == 0 && r.status == 404, "second -> %d", r.status);
	/* Connection: close ends it. */
	const char *cl = "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	send_all(c->fd, cl, strlen(cl));
	CHECK("close", read_resp(c, false, &r) == 0 && r.status == 200 && r.conn_close,
	      "Connection: close -> %d close=%d", r.status, r.conn_close);
	CHECK("close", closed_by_server(c, 5000), "still open after Connection: close");
	client_close(c);

	/* HTTP/1.0: closes unless keep-alive asked. */
	c = client_open();
	CHECK("http/1.0", c, "connect");
	const char *h10 = "GET / HTTP/1.0\r\n\r\n";
	send_all(c->fd, h10, strlen(h10));
	CHECK("http/1.0", read_resp(c, false, &r) == 0 && r.status == 200, "-> %d", r.status);
	CHECK("http/1.0", closed_by_server(c, 5000), "HTTP/1.0 connection left open");
	client_close(c);
	c = client_open();
	const char *h10k = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
	for (int i = 0; i < 2; i++) {
		send_all(c->fd, h10k, strlen(h10k));
		CHECK("http/1.0", read_resp(c, false, &r) == 0 && r.status == 200,
		      "keep-alive request %d -> %d", i, r.status);
	}
	client_close(c);
	/* The big file arrives whole. */
	CHECK("big", one("GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 &&
			     r.status == 200 && r.content_length == BIG_SIZE,
	      "GET /big.bin -> %d len %ld", r.status, r.content_length);
}

static void expect_status(const char *test, const char *req, size_t len, int want)
{
	struct client *c = client_open();
	struct resp r = {0};
	CHECK(test, c, "connect");
	int rc = send_all(c->fd, req, len);
	if (rc == 0)
		rc = read_resp(c, false, &r);
	if (rc == 0 && r.status == want && want >= 400 && want != 403 && want != 404)
		rc = closed_by_server(c, 5000) ? 0 : -2;
	client_close(c);
	CHECK(test, rc == 0 && r.status == want, "%.40s... -> %d (rc %d), want %d", req,
	      r.status, rc, want);
	CHECK(test, !strstr(r.body, "SECRET"), "served the secret");
}

#define EXPECT(test, lit, want) expect_status(test, lit, sizeof(lit) - 1, want)

static void test_bad_input(void)
{
	EXPECT("request-line", "GET /\r\n\r\n", 400);
	EXPECT("request-line", "GET  / HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("request-line", "GET / HTTP/1.1 \r\nHost: t\r\n\r\n", 400);
	EXPECT("request-line", "GET / HTTX/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("request-line", "\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("request-line", "GET / HTTP/1.1\nHost: t\n\n", 400);
	EXPECT("request-line", "GET /a\x01 HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("version", "GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
	EXPECT("host", "GET / HTTP/1.1\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
	/* Host must be uri-host [":" port] (RFC 9110 7.2). */
	EXPECT("host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: user@t\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: t:http\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: t\tu\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.0\r\nHost: ../t\r\n\r\n", 400);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200);
	EXPECT("host", "GET / HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n", 200);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nBad Name: x\r\n\r\n", 400);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nName : x\r\n\r\n", 400);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n folded\r\n\r\n", 400);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nnocolon\r\n\r\n", 400);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nX: a\x7f\r\n\r\n", 400);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nX: a\rb\r\n\r\n", 400);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 400);
	EXPECT("header", "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n", 400);
	EXPECT("method", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", 405);
	EXPECT("method", "DELETE /a.txt HTTP/1.1\r\nHost: t\r\n\r\n", 405);
	EXPECT("method", "BREW / HTTP/1.1\r\nHost: t\r\n\r\n", 501);
	EXPECT("method", "get / HTTP/1.1\r\nHost: t\r\n\r\n", 501);
	EXPECT("method", "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", 501);
	struct resp r;
	CHECK("method", one("PUT / HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.has_allow,
	      "405 without Allow");

	/* Oversize: a 9000-byte field, a 9000-byte target, 100 fields. */
	static char big[20000];
	int n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: t\r\nX-Big: ");
	memset(big + n, 'a', 9000);
	n += 9000;
	n += snprintf(big + n, sizeof big - (size_t)n, "\r\n\r\n");
	expect_status("oversize", big, (size_t)n, 431);
	n = snprintf(big, sizeof big, "GET /");
	memset(big + n, 'a', 9000);
	n += 9000;
	n += snprintf(big + n, sizeof big - (size_t)n, " HTTP/1.1\r\nHost: t\r\n\r\n");
	expect_status("oversize", big, (size_t)n, 414);
	n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: t\r\n");
	for (int i = 0; i < 100; i++)
		n += snprintf(big + n, sizeof big - (size_t)n, "X-%d: v\r\n", i);
	n += snprintf(big + n, sizeof big - (size_t)n, "\r\n");
	expect_status("oversize", big, (size_t)n, 431);
	/* A head that never ends: 431 once 8 KiB came. */
	n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: t\r\n");
	for (; n < 12000; n += 6)
		memcpy(big + n, "X: y\r\n", 6);
	expect_status("oversize", big, (size_t)n, 431);
}

static void test_traversal(void)
{
	EXPECT("traversal", "GET /../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /sub/../../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /%2e%2e/secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /%2E%2E%2Fsecret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /..%2fsecret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /sub/%2e%2e/%2e%2e/secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /./index.html HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /a.txt%00 HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("traversal", "GET /%zz HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("absolute", "GET //etc/passwd HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	/* absolute-form is accepted (RFC 9112 3.2.2), its path in the root */
	EXPECT("absolute", "GET http://t/a.txt HTTP/1.1\r\nHost: t\r\n\r\n", 200);
	EXPECT("absolute", "GET http://t/etc/passwd HTTP/1.1\r\nHost: t\r\n\r\n", 404);
	EXPECT("absolute", "GET http://t/../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("absolute", "GET ftp://t/a.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("absolute", "GET etc/passwd HTTP/1.1\r\nHost: t\r\n\r\n", 400);
	EXPECT("symlink", "GET /link_out HTTP/1.1\r\nHost: t\r\n\r\n", 403);
	EXPECT("symlink", "GET /link_abs HTTP/1.1\r\nHost: t\r\n\r\n", 403);
	EXPECT("symlink", "GET /link_dir/secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 403);
	/* Not a regular file: refused at once (opening a FIFO must not block). */
	EXPECT("special", "GET /fifo HTTP/1.1\r\nHost: t\r\n\r\n", 403);
}

/* A client sending its head a byte every 200 ms is closed after the
 * header timeout (1 s here), and others are served meanwhile. */
static void test_slow_client(void)
{
	struct client *slow = client_open();
	CHECK("slow", slow, "connect");
	const char *head = "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ";
	send_all(slow->fd, head, strlen(head));
	long long deadline = now_ms() + 10000;
	bool closed = false;
	int served = 0;
	while (now_ms() < deadline) {
		if (send(slow->fd, "a", 1, MSG_NOSIGNAL) != 1) {
			closed = true;
			break;
		}
		struct resp r;
		if (one("GET / HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.status == 200)
			served++;
		if (closed_by_server(slow, 200)) {
			closed = true;
			break;
		}
	}
	client_close(slow);
	CHECK("slow", closed, "a client sending a byte every 200 ms was not closed in 10 s");
	CHECK("slow", served > 0, "nobody was served while the slow client sent");
}

/* Slow heads: 40 clients (more than the pool style's 32 threads at
 * --cores 2) each send half a request line and then a byte a second,
 * against a server whose header timeout is 60 s; others must be served
 * meanwhile, each within the client's 10 s receive timeout (a hang guard,
 * far below the header timeout). The pool style's threads each waited in
 * a read on one slow client, and the others waited for the timeout. */
static void test_slow_heads(void)
{
	enum { N = 40 };
	struct server s;
	int started = server_start(&s, 0, "CANAL_WEB_HEADER_TIMEOUT_MS=60000");
	CHECK("slow heads", started == 0, "server with a 60 s header timeout did not start");
	int fds[N], opened = 0, served = 0;
	for (; opened < N; opened++) {
		fds[opened] = connect_port(s.port);
		if (fds[opened] < 0)
			break;
		send_all(fds[opened], "GET /sl", 7);
	}
	int saved = g_srv.port;
	g_srv.port = s.port;
	for (int i = 0; i < 3; i++) {
		for (int k = 0; k < opened; k++)
			send(fds[k], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct resp r;
		if (one("GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n", &r) != 0 ||
		    r.status != 200)
			break;
		served++;
		usleep(1000000);
	}
	g_srv.port = saved;
	for (int k = 0; k < opened; k++)
		close(fds[k]);
	int st = server_stop(&s);
	CHECK("slow heads", opened == N, "%d of %d slow clients connected", opened, N);
	CHECK("slow heads", served == 3,
	      "request %d not served in 10 s beside %d clients sending a head slowly",
	      served + 1, N);
	CHECK("slow heads", st == 0, "exit status %d after SIGTERM", st);
}

/* A slow reader of a 60 KiB file (the small-file path: the io_uring and
 * tasks styles send it through the ring), from a server whose sockets
 * have a 4 KiB send buffer ($CANAL_WEB_SNDBUF): the client's receive
 * buffer is small too and it waits 500 ms before reading, so the server's
 * send stops part-way, is cut by its 200 ms waits and resumes where it
 * stopped; three responses on one keep-alive connection must each arrive
 * whole and right (a resend or a skip changes the hash). */
static void test_slow_reader(void)
{
	struct server s;
	int started = server_start(&s, 0, "CANAL_WEB_SNDBUF=4096");
	CHECK("slow reader", started == 0, "server with a 4 KiB send buffer did not start");
	int fd = connect_port_rcvbuf(s.port, 4096);
	int ok = 0;
	if (fd >= 0) {
		struct client *c = calloc(1, sizeof *c);
		c->fd = fd;
		for (int i = 0; i < 3; i++) {
			const char *g = "GET /mid.bin HTTP/1.1\r\nHost: t\r\n\r\n";
			send_all(c->fd, g, strlen(g));
			usleep(500000);
			struct resp r;
			if (read_resp(c, false, &r) != 0 || r.status != 200 ||
			    r.content_length != MID_SIZE || r.hash != g_mid_hash)
				break;
			ok++;
		}
		client_close(c);
	}
	int st = server_stop(&s);
	CHECK("slow reader", fd >= 0, "connect");
	CHECK("slow reader", ok == 3, "response %d of 3 missing or wrong", ok + 1);
	CHECK("slow reader", st == 0, "exit status %d after SIGTERM", st);
}

/* A reader that keeps taking the 60 KiB file slowly but steadily (1 KiB
 * every 100 ms: 6 s in all) from a server with a 2 s idle timeout and a
 * 4 KiB send buffer: the idle timeout bounds the time without send
 * progress (http.h), not the whole response, so the body must arrive
 * whole. The io_uring and tasks styles send such a body themselves (the
 * small-file path) and counted their deadline from the response's start:
 * they cut it after 2 s, where the other styles sent it all. */
static void test_slow_progress(void)
{
	struct server s;
	int started = server_start_env(&s, 0, "CANAL_WEB_SNDBUF=4096",
				       "CANAL_WEB_IDLE_TIMEOUT_MS=2000");
	CHECK("slow progress", started == 0, "server with a 2 s idle timeout did not start");
	int fd = connect_port_rcvbuf(s.port, 4096);
	size_t cap = MID_SIZE + 4096, got = 0, total = 0;
	char *acc = malloc(cap);
	int err = 0;
	if (fd >= 0) {
		const char *g = "GET /mid.bin HTTP/1.1\r\nHost: t\r\n\r\n";
		send_all(fd, g, strlen(g));
		long long deadline = now_ms() + 30000; /* hang guard */
		while (!err && (!total || got < total) && got < cap && now_ms() < deadline) {
			usleep(100000);
			size_t k = cap - got < 1024 ? cap - got : 1024;
			ssize_t r = recv(fd, acc + got, k, 0);
			if (r <= 0)
				err = r == 0 ? -ENODATA : -errno;
			else
				got += (size_t)r;
			char *e = total ? NULL : memmem(acc, got, "\r\n\r\n", 4);
			if (e) {
				char *cl = strcasestr(acc, "Content-Length:");
				total = (size_t)(e + 4 - acc) + (cl && cl < e ? (size_t)atol(cl + 15) : 0);
			}
		}
		close(fd);
	}
	bool whole = total && got == total &&
		     fnv1a(FNV_INIT, acc + total - MID_SIZE, MID_SIZE) == g_mid_hash &&
		     strncmp(acc, "HTTP/1.1 200", 12) == 0;
	free(acc);
	int st = server_stop(&s);
	CHECK("slow progress", fd >= 0, "connect");
	CHECK("slow progress", !err, "%zu of %zu bytes, then %s", got, total,
	      err == -ENODATA ? "EOF" : strerror(-err));
	CHECK("slow progress", whole, "response wrong (%zu of %zu bytes)", got, total);
	CHECK("slow progress", st == 0, "exit status %d after SIGTERM", st);
}

/* The lingering close (bench/web/linger.c): a client asks for a 60 KiB
 * file with "Connection: close" and keeps sending pipelined requests
 * behind it while it reads the response slowly (1 KiB at a time), from a
 * server whose sockets have a 4 KiB send buffer. When the server closes,
 * the response's tail is still in its send buffer and input keeps coming;
 * a plain close(2) then resets the connection and drops that tail. The
 * whole response must arrive, then the end of the stream, not a reset. */
static void test_lingering_close(void)
{
	struct server s;
	int started = server_start(&s, 0, "CANAL_WEB_SNDBUF=4096");
	CHECK("lingering close", started == 0, "server with a 4 KiB send buffer did not start");
	int fd = connect_port_rcvbuf(s.port, 4096);
	size_t cap = MID_SIZE + 4096, got = 0, total = 0, extra = 0;
	char *acc = malloc(cap);
	int err = 0, end = 1; /* end: 0 EOF, 1 nothing, -errno */
	if (fd >= 0) {
		const char *g = "GET /mid.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
		send_all(fd, g, strlen(g));
		const char *more = "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
		long long deadline = now_ms() + 10000;
		while (!err && (!total || got < total) && got < cap && now_ms() < deadline) {
			for (int i = 0; i < 8; i++) {
				ssize_t w = send(fd, more, strlen(more), MSG_NOSIGNAL | MSG_DONTWAIT);
				if (w <= 0)
					break;
				extra += (size_t)w;
			}
			struct pollfd p = {.fd = fd, .events = POLLIN};
			if (poll(&p, 1, 10) == 1) {
				size_t k = cap - got < 1024 ? cap - got : 1024;
				ssize_t r = recv(fd, acc + got, k, 0);
				if (r <= 0)
					err = r == 0 ? -ENODATA : -errno;
				else
					got += (size_t)r;
			}
			char *e = total ? NULL : memmem(acc, got, "\r\n\r\n", 4);
			if (e) {
				char *cl = strcasestr(acc, "Content-Length:");
				total = (size_t)(e + 4 - acc) + (cl && cl < e ? (size_t)atol(cl + 15) : 0);
			}
			usleep(2000);
		}
		/* Nothing may follow but the end of the stream. */
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (!err && poll(&p, 1, 10000) == 1) {
			char b;
			ssize_t r = recv(fd, &b, 1, 0);
			end = r == 0 ? 0 : r > 0 ? 1 : -errno;
		}
		close(fd);
	}
	bool whole = total && got == total &&
		     fnv1a(FNV_INIT, acc + total - MID_SIZE, MID_SIZE) == g_mid_hash &&
		     strncmp(acc, "HTTP/1.1 200", 12) == 0;
	free(acc);
	/* The same with 24 KiB of requests sent at once behind it, more than
	 * a connection's input buffer (16 KiB): the response must still come
	 * whole (the io_uring style took the overflow for a hostile client
	 * and cut the response). */
	int fd2 = connect_port_rcvbuf(s.port, 0);
	bool whole2 = false;
	if (fd2 >= 0) {
		struct client *c2 = calloc(1, sizeof *c2);
		c2->fd = fd2;
		size_t bl = 24 << 10;
		char *burst = malloc(bl + 128);
		const char *g = "GET /mid.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
		size_t gl = strlen(g), off = gl;
		memcpy(burst, g, gl);
		const char *more = "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
		while (off + strlen(more) <= gl + bl) {
			memcpy(burst + off, more, strlen(more));
			off += strlen(more);
		}
		send_all(fd2, burst, off);
		free(burst);
		struct resp r;
		whole2 = read_resp(c2, false, &r) == 0 && r.status == 200 &&
			 r.content_length == MID_SIZE && r.hash == g_mid_hash;
		client_close(c2);
	}
	int st = server_stop(&s);
	CHECK("lingering close", fd >= 0, "connect");
	CHECK("lingering close", extra > 4096, "only %zu bytes sent behind the request", extra);
	CHECK("lingering close", !err, "%zu of %zu bytes, then %s", got, total,
	      err == -ENODATA ? "EOF" : strerror(-err));
	CHECK("lingering close", whole, "response wrong (%zu of %zu bytes)", got, total);
	CHECK("lingering close", whole2, "response cut behind 24 KiB of pipelined requests");
	CHECK("lingering close", end == 0, "after the response: %s",
	      end == 1 ? "more data or nothing in 10 s" : strerror(-end));
	CHECK("lingering close", st == 0, "exit status %d after SIGTERM", st);
}

/* Clients that close (or reset) in the middle of a 4 MiB body. */
static void test_close_mid_response(void)
{
	for (int i = 0; i < 20; i++) {
		int fd = connect_port(g_srv.port);
		CHECK("mid-response", fd >= 0, "connect");
		int small = 4096;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
		const char *g = "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n";
		send_all(fd, g, strlen(g));
		char b[1024];
		if (recv(fd, b, sizeof b, 0) <= 0) {
			close(fd);
			fail("mid-response", "no response start");
			return;
		}
		if (i % 2) { /* reset rather than FIN */
			struct linger lg = {1, 0};
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		}
		close(fd);
	}
	struct resp r;
	CHECK("mid-response", one("GET / HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.status == 200,
	      "not served after 20 clients closed mid-response");
}

/* n idle keep-alive connections (half after one request) held while
 * others are served; afterwards each still answers, except in the pool
 * style, which trades idle connections for waiting clients and must then
 * have closed them cleanly (EOF or reset, never a wrong answer). */
static void test_idle(void)
{
	int n = 1000;
	const char *e = getenv("CANAL_WEB_IDLE_CONNS");
	if (e && atoi(e) > 0)
		n = atoi(e);
	e = getenv("CANAL_WEB_IDLE_CONNS_STRESS");
	if (getenv("CANAL_STRESS") && e && atoi(e) > 0)
		n = atoi(e);
	printf("  %d idle connections\n", n);
	struct client **cs = calloc((size_t)n, sizeof *cs);
	int opened = 0;
	struct resp r;
	for (; opened < n; opened++) {
		cs[opened] = client_open();
		if (!cs[opened])
			break;
		if (opened % 2 == 0) {
			const char *g = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
			send_all(cs[opened]->fd, g, strlen(g));
			if (read_resp(cs[opened], false, &r) != 0 || r.status != 200) {
				fail("idle", "connection %d: first request -> %d", opened, r.status);
				goto out;
			}
		}
	}
	if (opened < n) {
		fail("idle", "only %d of %d connections opened", opened, n);
		goto out;
	}
	for (int i = 0; i < 20; i++)
		if (one("GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n", &r) != 0 || r.status != 200) {
			fail("idle", "request %d not served with %d idle connections", i, n);
			goto out;
		}
	for (int i = 0; i < n; i++) {
		const char *g = "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
		int rc = send_all(cs[i]->fd, g, strlen(g));
		if (rc == 0)
			rc = read_resp(cs[i], false, &r);
		if (rc == 0 && (r.status != 200 || strcmp(r.body, "file a\n") != 0)) {
			fail("idle", "idle connection %d: wrong answer %d", i, r.status);
			goto out;
		}
		if (rc != 0) {
			fail("idle", "idle connection %d was dropped", i);
			goto out;
		}
	}
out:
	for (int i = 0; i < opened; i++)
		client_close(cs[i]);
	free(cs);
}

/* A server limited to 64 descriptors meets 100 clients: it must not
 * exit, and must serve again once they are gone. */
/* Pipelining past the input buffer: 600 keep-alive requests (18 000 bytes,
 * more than a connection's 16 KiB input buffer) sent in one go. Every
 * other style reads only what fits and reads on as it answers (TCP flow
 * control holds the rest); each request must be answered, in order. The
 * io_uring style's multishot receive kept feeding the buffer while the
 * first response was in flight, took the overflow for a hostile client and
 * closed the connection: not one response came. */
static void test_pipeline_deep(void)
{
	enum { N = 600 };
	static const char *const req[3] = {
		"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
		"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: t\r\n\r\n",
	};
	static const int want[3] = {200, 404, 200};
	size_t cap = (size_t)N * 40, len = 0;
	char *all = malloc(cap);
	for (int i = 0; i < N; i++) {
		size_t l = strlen(req[i % 3]);
		memcpy(all + len, req[i % 3], l);
		len += l;
	}
	struct client *c = client_open();
	CHECK("pipeline deep", c, "connect");
	int rc = send_all(c->fd, all, len), got = 0;
	free(all);
	struct resp r = {0};
	for (; rc == 0 && got < N; got++) {
		if (read_resp(c, false, &r) != 0 || r.status != want[got % 3] ||
		    (got % 3 == 0 && strcmp(r.body, "file a\n") != 0) ||
		    (got % 3 == 2 && strcmp(r.body, "hello\n") != 0))
			break;
	}
	client_close(c);
	CHECK("pipeline deep", rc == 0, "send of %zu bytes failed", len);
	CHECK("pipeline deep", got == N,
	      "%zu bytes of pipelined requests: %d of %d answered right, then %s %d",
	      len, got, N, r.status ? "status" : "nothing,", r.status);

}

/* The hog of test_pipeline_hog, in a child process: pipelines requests
 * on fd as fast as the server takes them and reads (and drops) the
 * responses as fast as they come, so that the server never finds the
 * connection's input empty nor its output full; one byte on ready_fd once
 * 64 KiB of responses came. Runs until killed; exits 1 when the
 * connection fails or nothing moves for 10 s. */
static void hog_run(int fd, int ready_fd)
{
	/* A 404 (keep-alive): no file to read, nothing for a task to wait
	 * for (tasks.c sends it with a send that completes at once). */
	const char *g = "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n";
	size_t gl = strlen(g), copies = 2048;
	char *reqs = malloc(gl * (copies + 1));
	static char sink[1 << 16];
	unsigned long long sent = 0, got = 0;
	bool told = false;
	if (!reqs)
		_exit(1);
	for (size_t i = 0; i <= copies; i++)
		memcpy(reqs + i * gl, g, gl);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
		if (poll(&p, 1, 10000) <= 0)
			_exit(1);
		for (;;) {
			ssize_t r = recv(fd, sink, sizeof sink, 0);
			if (r > 0) {
				got += (size_t)r;
				continue;
			}
			if (r == 0 || (errno != EAGAIN && errno != EINTR))
				_exit(1);
			break;
		}
		/* From where the last send stopped inside a request. */
		ssize_t w = send(fd, reqs + sent % gl, copies * gl, MSG_NOSIGNAL);
		if (w > 0)
			sent += (size_t)w;
		else if (w < 0 && errno != EAGAIN && errno != EINTR)
			_exit(1);
		if (!told && got >= 64 << 10)
			told = write(ready_fd, "r", 1) == 1;
	}
}

/* A pipeline hog: one client sends pipelined requests without end (and
 * reads the responses as fast as they come) to a server with one loop;
 * a second client's request must still be answered, within the client's
 * 10 s receive timeout (a hang guard: it takes milliseconds). The
 * readiness styles drove a connection until its socket had no more input
 * (web_conn_drive), which for this client is never: every other
 * connection of the loop, and the listener, waited for it. */
static void test_pipeline_hog(void)
{
	struct server s;
	g_cores = "1";
	int started = server_start(&s, 0, NULL);
	g_cores = "2";
	CHECK("pipeline hog", started == 0, "server with one loop did not start");
	int fd = connect_port(s.port), pfd[2] = {-1, -1};
	pid_t hog = -1;
	if (fd >= 0 && pipe(pfd) == 0) {
		hog = fork();
		if (hog == 0) {
			close(pfd[0]);
			hog_run(fd, pfd[1]);
		}
		close(pfd[1]);
	}
	if (fd >= 0)
		close(fd);
	bool flowing = false;
	if (hog > 0) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		char b;
		flowing = poll(&p, 1, 10000) == 1 && read(pfd[0], &b, 1) == 1;
	}
	struct resp r = {0};
	int rc = -1, hog_status = -1;
	long long waited = 0;
	if (flowing) {
		int saved = g_srv.port;
		g_srv.port = s.port;
		long long t0 = now_ms();
		rc = one("GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n", &r);
		waited = now_ms() - t0;
		g_srv.port = saved;
		printf("  the other request took %lld ms\n", waited);
	}
	bool hog_alive = false;
	if (hog > 0) {
		hog_alive = waitpid(hog, &hog_status, WNOHANG) == 0;
		kill(hog, SIGKILL);
		waitpid(hog, NULL, 0);
	}
	if (pfd[0] >= 0)
		close(pfd[0]);
	int st = server_stop(&s);
	CHECK("pipeline hog", fd >= 0 && hog > 0, "connect or fork");
	CHECK("pipeline hog", flowing, "the pipelining client got no 64 KiB of responses in 10 s");
	CHECK("pipeline hog", rc == 0 && r.status == 200 && strcmp(r.body, "file a\n") == 0,
	      "a request beside a client pipelining without end: %s after %lld ms",
	      rc ? "no answer" : "wrong answer", waited);
	CHECK("pipeline hog", hog_alive, "the pipelining client's connection failed (status %d)",
	      hog_status);
	CHECK("pipeline hog", st == 0, "exit status %d after SIGTERM", st);
}

/* Read fd until the end of the stream, an error, or limit bytes: the
 * bytes read; *ended: the end of the stream or a reset came. */
static size_t read_to_end(int fd, size_t limit, bool *ended)
{
	static char b[1 << 16];
	size_t got = 0;
	*ended = false;
	long long deadline = now_ms() + 30000; /* hang guard */
	while (got < limit && now_ms() < deadline) {
		ssize_t r = recv(fd, b, sizeof b, 0);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		*ended = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
		break;
	}
	return got;
}

/* Stalled readers: two clients ask for the 4 MiB file and read nothing
 * for 5 s, from a server with a 1 s idle timeout and a 4 KiB send buffer,
 * so that its send stops at once and never moves again; one is silent,
 * the other sends the next request a byte every 200 ms. The idle timeout
 * bounds the time without send progress (http.h): both connections must
 * be closed, which the clients see when they read at last (the end of
 * the stream or a reset before the body's end; an open connection brings
 * the whole body). The servers reset the timeout whenever they looked at
 * a connection with a response pending, progress or not: at every input
 * (epoll, io_uring), or every 100 us (the task style on epoll, whose wait
 * for a writable socket is a short sleep). */
static void test_stalled_reader(void)
{
	struct server s;
	int started = server_start_env(&s, 0, "CANAL_WEB_SNDBUF=4096",
				       "CANAL_WEB_IDLE_TIMEOUT_MS=1000");
	CHECK("stalled reader", started == 0, "server with a 1 s idle timeout did not start");
	int quiet = connect_port_rcvbuf(s.port, 4096);
	int chatty = connect_port_rcvbuf(s.port, 4096);
	const char *g = "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n";
	const char *next = "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
	if (quiet >= 0)
		send_all(quiet, g, strlen(g));
	if (chatty >= 0)
		send_all(chatty, g, strlen(g));
	size_t k = 0;
	for (long long end = now_ms() + 5000; now_ms() < end; k++) {
		usleep(200000);
		if (chatty >= 0)
			send(chatty, next + k % strlen(next), 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	bool quiet_ended = false, chatty_ended = false;
	size_t quiet_got = quiet >= 0 ? read_to_end(quiet, BIG_SIZE, &quiet_ended) : 0;
	size_t chatty_got = chatty >= 0 ? read_to_end(chatty, BIG_SIZE, &chatty_ended) : 0;
	if (quiet >= 0)
		close(quiet);
	if (chatty >= 0)
		close(chatty);
	int st = server_stop(&s);
	CHECK("stalled reader", quiet >= 0 && chatty >= 0, "connect");
	CHECK("stalled reader", quiet_ended && quiet_got < BIG_SIZE,
	      "a client reading nothing for 5 s (idle timeout 1 s) was kept: %zu bytes, %s",
	      quiet_got, quiet_ended ? "then the end" : "and more");
	CHECK("stalled reader", chatty_ended && chatty_got < BIG_SIZE,
	      "a client reading nothing for 5 s but sending a byte every 200 ms "
	      "(idle timeout 1 s) was kept: %zu bytes, %s",
	      chatty_got, chatty_ended ? "then the end" : "and more");
	CHECK("stalled reader", st == 0, "exit status %d after SIGTERM", st);
}

/* A HEAD request answered with an error status gets no body either (RFC
 * 9110 9.3.2): the server knows the method once the request line parsed.
 * A client reading the head of the answer to HEAD takes what follows for
 * the next response. */
static void test_head_error(void)
{
	static const char *const reqs[] = {
		"HEAD / HTTP/1.1\r\n\r\n",				  /* 400: no Host */
		"HEAD / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", /* 501 */
		"HEAD / HTTP/1.2\r\nHost: t\r\n\r\n",			  /* 505 */
	};
	for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
		struct client *c = client_open();
		CHECK("head error", c, "connect");
		struct resp r = {0};
		int rc = send_all(c->fd, reqs[i], strlen(reqs[i]));
		if (rc == 0)
			rc = read_resp(c, true, &r);
		/* Then only the end of the stream: no body bytes. */
		size_t extra = c->len;
		while (rc == 0) {
			ssize_t n = fill(c);
			if (n <= 0)
				break;
			extra = c->len;
		}
		client_close(c);
		CHECK("head error", rc == 0 && r.status >= 400,
		      "HEAD case %zu -> %d (rc %d)", i, r.status, rc);
		CHECK("head error", extra == 0,
		      "HEAD case %zu -> %d, then %zu body bytes after the head", i,
		      r.status, extra);
	}
}

/* A burst: 64 connections made while the server is stopped (the kernel
 * queues them for accept), each with a request, then the server goes on:
 * every one is answered, twice on the same connection (once with the
 * pool). With several
 * loops, uring.c and tasks.c take such a burst whole and spread it (the
 * io_uring server hands connections to its other loop), so this runs
 * those paths: a connection lost or served twice there fails it. */
static void test_burst(void)
{
	enum { N = 64 };
	static struct client *c[N];
	const char *g = "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
	int opened = 0, sent = 0;
	kill(g_srv.pid, SIGSTOP);
	for (; opened < N; opened++) {
		if (!(c[opened] = client_open()))
			break;
		sent += send_all(c[opened]->fd, g, strlen(g)) == 0;
	}
	kill(g_srv.pid, SIGCONT);
	/* Two requests each (the pool parks a connection waiting for input
	 * while others wait, pool.c: it answers both, as the others do). */
	int rounds = 2, ok = 0;
	for (int round = 0; round < rounds; round++) {
		for (int i = 0; i < opened; i++) {
			struct resp r;
			if (round == 1 && send_all(c[i]->fd, g, strlen(g)) != 0)
				continue;
			if (read_resp(c[i], false, &r) == 0 && r.status == 200 &&
			    strcmp(r.body, "file a\n") == 0)
				ok++;
		}
	}
	for (int i = 0; i < opened; i++)
		client_close(c[i]);
	CHECK("burst", opened == N && sent == N, "%d of %d connections made, %d sent",
	      opened, N, sent);
	CHECK("burst", ok == rounds * N, "%d of %d responses right", ok,
	      rounds * N);
}

static void test_emfile(void)
{
	struct server s;
	CHECK("emfile", server_start(&s, 64, NULL) == 0, "server with 64 descriptors did not start");
	int fds[100], n = 0;
	for (; n < 100; n++) {
		fds[n] = connect_port(s.port);
		if (fds[n] < 0)
			break;
	}
	usleep(300000); /* let it hit EMFILE */
	for (int i = 0; i < n; i++)
		close(fds[i]);
	bool ok = false;
	long long deadline = now_ms() + 15000;
	int saved = g_srv.port;
	g_srv.port = s.port;
	while (!ok && now_ms() < deadline) {
		struct resp r;
		ok = one("GET / HTTP/1.1\r\nHost: t\r\n\r\n", &r) == 0 && r.status == 200;
		if (!ok)
			usleep(100000);
	}
	g_srv.port = saved;
	int st = server_stop(&s);
	CHECK("emfile", ok, "not serving after running out of descriptors");
	CHECK("emfile", st == 0, "exit status %d after SIGTERM", st);
}

/* A server with a 1 s idle timeout closes a keep-alive connection quiet
 * after one request, and one that never sent anything, in a few seconds
 * (the timeout counts from the last response or the connection, not from
 * the server's last look at it). */
static void test_idle_timeout(void)
{
	struct server s;
	int started = server_start(&s, 0, "CANAL_WEB_IDLE_TIMEOUT_MS=1000");
	CHECK("idle timeout", started == 0, "server with a 1 s idle timeout did not start");
	int saved = g_srv.port;
	g_srv.port = s.port;
	struct client *used = client_open(), *quiet = client_open();
	g_srv.port = saved;
	bool answered = false, used_closed = false, quiet_closed = false;
	if (used && quiet) {
		const char *g = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
		send_all(used->fd, g, strlen(g));
		struct resp r;
		answered = read_resp(used, false, &r) == 0 && r.status == 200;
		long long t0 = now_ms();
		used_closed = closed_by_server(used, 10000);
		quiet_closed = closed_by_server(quiet, 10000 - (int)(now_ms() - t0));
	}
	client_close(used);
	client_close(quiet);
	int st = server_stop(&s);
	CHECK("idle timeout", used && quiet, "connect");
	CHECK("idle timeout", answered, "no answer on the connection before it goes idle");
	CHECK("idle timeout", used_closed,
	      "a keep-alive connection idle after a request was open 10 s later");
	CHECK("idle timeout", quiet_closed,
	      "a connection that sent nothing was open 10 s later");
	CHECK("idle timeout", st == 0, "exit status %d after SIGTERM", st);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s <server binary> <style>\n", argv[0]);
		return 2;
	}
	g_bin = argv[1];
	g_style = argv[2];
	signal(SIGPIPE, SIG_IGN);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	make_tree();
	if (server_start(&g_srv, 0, NULL) != 0) {
		remove_tree();
		return 1;
	}
	struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{"fd table", test_fd_table},
		{"basic", test_basic},
		{"bad input", test_bad_input},
		{"traversal", test_traversal},
		{"slow client", test_slow_client},
		{"slow heads", test_slow_heads},
		{"close mid-response", test_close_mid_response},
		{"slow reader", test_slow_reader},
		{"slow progress", test_slow_progress},
		{"stalled reader", test_stalled_reader},
		{"lingering close", test_lingering_close},
		{"pipeline deep", test_pipeline_deep},
		{"pipeline hog", test_pipeline_hog},
		{"head error", test_head_error},
		{"burst", test_burst},
		{"idle keep-alive", test_idle},
		{"emfile", test_emfile},
		{"idle timeout", test_idle_timeout},
	};
	const char *only = getenv("CANAL_WEB_TESTS");
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
		if (only && !strstr(tests[i].name, only))
			continue;
		int before = g_failures;
		long long t0 = now_ms();
		tests[i].fn();
		printf("%s %s: %s (%lld ms)\n", g_style, tests[i].name,
		       g_failures == before ? "ok" : "FAILED", now_ms() - t0);
		fflush(stdout);
		if (waitpid(g_srv.pid, NULL, WNOHANG) == g_srv.pid) {
			fail(tests[i].name, "the server died");
			remove_tree();
			return 1;
		}
	}
	int st = server_stop(&g_srv);
	if (st != 0)
		fail("sigterm", "exit status %d after SIGTERM (want 0)", st);
	remove_tree();
	return g_failures ? 1 : 0;
}
