/* SPDX-License-Identifier: MIT */
/*
 * fuzz_http.c - fuzz target of the web servers' request parser (issue 14):
 * web_parse_request and web_target_path on arbitrary bytes, checking
 * their promises rather than just not crashing:
 *   - a parsed head ends in CRLF CRLF within the input and WEB_HEAD_MAX,
 *     its target lies inside it, the method is GET or HEAD, HTTP/1.0/1.1,
 *     and parsing exactly the head gives the same answer;
 *   - "need more" only below WEB_HEAD_MAX bytes; errors are the listed
 *     statuses only;
 *   - a decoded path is relative, has no "." / ".." / empty segment and no
 *     NUL, and fits.
 * Built for libFuzzer (clang -fsanitize=fuzzer) and for fuzz_driver.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BUG(...)                                                               \
	do {                                                                   \
		fprintf(stderr, "fuzz_http: " __VA_ARGS__);                    \
		fputc('\n', stderr);                                           \
		abort();                                                       \
	} while (0)

static void check_path(const char *target, size_t len)
{
	char out[WEB_PATH_MAX];
	int r = web_target_path(target, len, out, sizeof out);
	if (r != 0) {
		if (r != -400 && r != -414)
			BUG("web_target_path returned %d", r);
		return;
	}
	size_t n = strlen(out);
	if (n == 0 || n >= sizeof out)
		BUG("empty or unterminated path");
	if (out[0] == '/')
		BUG("absolute path '%s'", out);
	const char *s = out;
	for (;;) {
		const char *e = strchr(s, '/');
		size_t sl = e ? (size_t)(e - s) : strlen(s);
		if (sl == 0 || (sl == 1 && s[0] == '.') ||
		    (sl == 2 && s[0] == '.' && s[1] == '.'))
			BUG("bad segment in '%s'", out);
		if (!e)
			break;
		s = e + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so ASan sees any read past it. */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct web_req req;
	int r = web_parse_request(buf, size, &req);
	if (r > 0) {
		size_t h = (size_t)r;
		if (h > size || h > WEB_HEAD_MAX || h < 4 || h != req.head_len ||
		    memcmp(buf + h - 4, "\r\n\r\n", 4) != 0)
			BUG("bad head length %d of %zu", r, size);
		if (req.method != WEB_GET && req.method != WEB_HEAD)
			BUG("method %d", (int)req.method);
		if (req.minor != 0 && req.minor != 1)
			BUG("minor %d", req.minor);
		if (req.target < buf || req.target_len == 0 ||
		    req.target + req.target_len > buf + h)
			BUG("target outside the head");
		struct web_req again;
		if (web_parse_request(buf, h, &again) != r ||
		    again.keep_alive != req.keep_alive)
			BUG("the head alone parses differently");
		check_path(req.target, req.target_len);
	} else if (r == 0) {
		if (size >= WEB_HEAD_MAX)
			BUG("need more at %zu bytes", size);
	} else if (r != -400 && r != -405 && r != -414 && r != -431 &&
		   r != -501 && r != -505) {
		BUG("status %d", -r);
	}
	check_path(buf, size);
	free(buf);
	return 0;
}
