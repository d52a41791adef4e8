/* SPDX-License-Identifier: MIT */
/*
 * test_http.c - the web servers' request parser and target decoding
 * (bench/web/http.c), case by case: every status it can return, the
 * fields it reports, and the paths it makes or refuses.
 */
#include <stdio.h>
#include <string.h>

#include "http.h"

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL line %d: ", __LINE__);           \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

static int parse(const char *s, struct web_req *r)
{
	return web_parse_request(s, strlen(s), r);
}

static void test_parse(void)
{
	struct web_req r;
	const char *g = "GET /a?b HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\nGET /next";
	int n = parse(g, &r);
	CHECK(n == (int)(strstr(g, "\r\n\r\n") - g) + 4, "head length %d", n);
	CHECK(r.method == WEB_GET && r.minor == 1 && r.keep_alive, "GET fields");
	CHECK(r.target_len == 4 && memcmp(r.target, "/a?b", 4) == 0, "target");
	CHECK(parse("HEAD / HTTP/1.0\r\n\r\n", &r) > 0 && r.method == WEB_HEAD &&
		      r.minor == 0 && !r.keep_alive, "HEAD 1.0");
	CHECK(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r) > 0 && r.keep_alive,
	      "1.0 keep-alive");
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n", &r) > 0 &&
		      !r.keep_alive, "close in a list");
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", &r) > 0,
	      "Content-Length: 0 is no body");
	CHECK(parse("GET / HTTP/1.1\r\nHost:x\r\nX:\t v \t\r\n\r\n", &r) > 0, "OWS");
	/* Incomplete: 0, at every prefix of a valid head. */
	const char *full = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	for (size_t i = 0; i < strlen(full); i++)
		CHECK(web_parse_request(full, i, &r) == 0, "prefix %zu", i);
	/* Statuses. */
	static const struct {
		const char *req;
		int want;
	} bad[] = {
		{"GET / HTTP/1.1\nHost: x\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", -400},
		{"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\n X: y\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\nX : y\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\n: y\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\nX: \x01\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -0\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\nConnection: a b@\r\n\r\n", -400},
		{"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", -501},
		{"GET / HTTP/1.12\r\nHost: x\r\n\r\n", -400},
		{"GET / http/1.1\r\nHost: x\r\n\r\n", -400},
		{"GET /\x80 HTTP/1.1\r\nHost: x\r\n\r\n", -400},
		{" GET / HTTP/1.1\r\nHost: x\r\n\r\n", -400},
		{"GET / HTTP/3.0\r\nHost: x\r\n\r\n", -505},
		{"GET / HTTP/1.2\r\nHost: x\r\n\r\n", -505},
		{"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", -405},
		{"PATCH / HTTP/1.1\r\nHost: x\r\n\r\n", -405},
		{"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", -405},
		{"PROPFIND / HTTP/1.1\r\nHost: x\r\n\r\n", -501},
		{"G\"T / HTTP/1.1\r\nHost: x\r\n\r\n", -400},
		{"POST / HTTP/9\r\n\r\n", -400}, /* the line's syntax first */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int got = parse(bad[i].req, &r);
		CHECK(got == bad[i].want, "case %zu: %d, want %d", i, got, bad[i].want);
	}
	/* Bounds. */
	static char big[WEB_IN_MAX];
	memset(big, 'a', sizeof big);
	memcpy(big, "GET /", 5);
	CHECK(web_parse_request(big, WEB_HEAD_MAX, &r) == -414, "long request line");
	CHECK(r.method != WEB_HEAD, "long GET line: not HEAD");
	CHECK(web_parse_request(big, WEB_HEAD_MAX - 1, &r) == 0, "still possible");
	/* A HEAD whose request line is too long: its 414 has no body. */
	memcpy(big, "HEAD /", 6);
	CHECK(web_parse_request(big, WEB_HEAD_MAX, &r) == -414 &&
		      r.method == WEB_HEAD,
	      "long HEAD line: 414, method HEAD (%d)", (int)r.method);
	memcpy(big, "GET /a", 6);
	int k = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: x\r\n");
	while (k < WEB_HEAD_MAX)
		big[k++] = 'a';
	CHECK(web_parse_request(big, WEB_HEAD_MAX, &r) == -431, "long field");
	k = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: x\r\n");
	for (int i = 0; i < WEB_FIELDS_MAX; i++)
		k += snprintf(big + k, sizeof big - (size_t)k, "F: v\r\n");
	memcpy(big + k, "\r\n", 3);
	CHECK(web_parse_request(big, (size_t)k + 2, &r) == -431, "%d fields", WEB_FIELDS_MAX + 1);
	k -= 6;
	memcpy(big + k, "\r\n", 3);
	CHECK(web_parse_request(big, (size_t)k + 2, &r) > 0, "%d fields", WEB_FIELDS_MAX);
}

/* Host's value is uri-host [ ":" port ] (RFC 9110 7.2, RFC 3986 3.2.2):
 * anything else is a 400 (RFC 9112 3.2), in HTTP/1.0 too. */
static void test_host(void)
{
	static const char *const good[] = {
		"example.com", "example.com:8080", "127.0.0.1:80", "[::1]",
		"[::1]:8080", "[v1.fe80::a+en1]", "xn--bcher-kva.example",
		"a-b_c~d.e", "a%20b", "!$&'()*+,;=", "a:", "",
		"x \t", /* trailing whitespace is the field's, not the host's */
	};
	static const char *const bad[] = {
		"a b", "a\tb", "a/b", "/", "a?b", "a#b", "a@b", "user@a:80",
		"a:b", "a:80:80", "a:-1", "a:8 0", "[::1", "[::1]x", "[::1]:x",
		"[]", "::1", "[::1/64]", "a%zz", "a%2", "a\"b", "<a>", "a\\b",
		"a^b", "a{b}", "a|b", "a`b", "\x80x", "http://a",
	};
	char req[256];
	struct web_req r;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", good[i]);
		int got = parse(req, &r);
		CHECK(got == (int)strlen(req), "Host '%s': %d, want %zu", good[i], got,
		      strlen(req));
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		for (int minor = 0; minor <= 1; minor++) {
			snprintf(req, sizeof req, "GET / HTTP/1.%d\r\nHost: %s\r\n\r\n",
				 minor, bad[i]);
			int got = parse(req, &r);
			CHECK(got == -400, "HTTP/1.%d Host '%s': %d, want -400", minor,
			      bad[i], got);
		}
	}
	/* Incomplete still means 0 while the Host line is: no early answer. */
	CHECK(parse("GET / HTTP/1.1\r\nHost: a b", &r) == 0, "Host line unfinished");
}

static void test_paths(void)
{
	static const struct {
		const char *target, *want; /* want NULL: refused with 400 */
	} cases[] = {
		{"/", "index.html"},
		{"/a.txt", "a.txt"},
		{"/sub/", "sub/index.html"},
		{"/sub/b.txt?x=/../y", "sub/b.txt"},
		{"/%41%62c", "Abc"},
		{"/a%20b", "a b"},
		{"/...", "..."},
		{"/a..b/.c", "a..b/.c"},
		{"/..", NULL},
		{"/../a", NULL},
		{"/a/../b", NULL},
		{"/a/..", NULL},
		{"/./a", NULL},
		{"/a/.", NULL},
		{"/%2e%2e/a", NULL},
		{"/%2E./a", NULL},
		{"/..%2fa", NULL},
		{"/a%2Fb", NULL},
		{"/a%00", NULL},
		{"/a%", NULL},
		{"/a%4", NULL},
		{"/a%g0", NULL},
		{"//a", NULL},
		{"/a//b", NULL},
		{"/a#b", NULL},
		{"a", NULL},
		{"*", NULL},
		/* absolute-form (RFC 9112 3.2.2: a server MUST accept it) */
		{"http://x/a", "a"},
		{"HTTP://x:8080/sub/", "sub/index.html"},
		{"https://[::1]/a.txt?q", "a.txt"},
		{"http://x", "index.html"},
		{"http://x?q=/../", "index.html"},
		{"http://x/../a", NULL},
		{"http://x/%2e%2e/a", NULL},
		{"http:///a", NULL},
		{"http://:80/a", NULL},
		{"http://u@x/a", NULL},
		{"http://a b/", NULL},
		{"http://x:8o/a", NULL},
		{"http://x#f", NULL},
		{"http:/a", NULL},
		{"http:", NULL},
		{"ftp://x/a", NULL},
		{"httpx://x/a", NULL},
	};
	char out[WEB_PATH_MAX];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int r = web_target_path(cases[i].target, strlen(cases[i].target), out, sizeof out);
		if (cases[i].want)
			CHECK(r == 0 && strcmp(out, cases[i].want) == 0, "%s -> %d '%s', want '%s'",
			      cases[i].target, r, r ? "" : out, cases[i].want);
		else
			CHECK(r == -400, "%s -> %d, want -400", cases[i].target, r);
	}
	char longt[2 * WEB_PATH_MAX];
	memset(longt, 'a', sizeof longt);
	longt[0] = '/';
	CHECK(web_target_path(longt, sizeof longt, out, sizeof out) == -414, "too long");
	CHECK(web_target_path("/", 1, out, 8) == -400, "tiny output buffer");
}

int main(void)
{
	test_parse();
	test_host();
	test_paths();
	if (failures) {
		fprintf(stderr, "test_http: %d failures\n", failures);
		return 1;
	}
	printf("test_http: all checks passed\n");
	return 0;
}
