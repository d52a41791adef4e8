/* SPDX-License-Identifier: MIT */
/*
 * http.c - the request parser, target decoding, responses and the
 * connection state machine of http.h (issue 14).
 */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- parsing ------------------------------------------------------------ */

/* tchar of RFC 9110 5.6.2. */
static bool is_tchar(unsigned char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9'))
		return true;
	return ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Field value octets: VCHAR, obs-text, SP, HTAB. */
static bool is_vchar_ws(unsigned char ch)
{
	return ch == '\t' || (ch >= 0x20 && ch != 0x7f);
}

/* unreserved and sub-delims of RFC 3986 2.2-2.3: what a reg-name holds
 * besides pct-encoded octets. */
static bool is_host_char(unsigned char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9'))
		return true;
	return ch != 0 && strchr("-._~!$&'()*+,;=", ch) != NULL;
}

/* A hex digit's value, or -1. */
static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* IP-literal of RFC 3986 3.2.2 without its brackets: an IPv6address
 * (inet_pton: its grammar, embedded IPv4 included), or an IPvFuture:
 * "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ). */
static bool is_ip_literal(const char *s, size_t n)
{
	if (n > 1 && (s[0] == 'v' || s[0] == 'V')) {
		size_t i = 1;
		while (i < n && hexval(s[i]) >= 0)
			i++;
		if (i == 1 || i == n || s[i] != '.' || i + 1 == n)
			return false;
		for (i++; i < n; i++)
			if (s[i] != ':' && !is_host_char((unsigned char)s[i]))
				return false;
		return true;
	}
	char a[INET6_ADDRSTRLEN];
	struct in6_addr addr;
	if (n == 0 || n >= sizeof a)
		return false;
	memcpy(a, s, n);
	a[n] = '\0';
	return inet_pton(AF_INET6, a, &addr) == 1;
}

/*
 * Host's value (OWS already trimmed): uri-host [ ":" port ] (RFC 9110
 * 7.2), uri-host being an IP-literal in brackets or a reg-name, which
 * covers IPv4address (RFC 3986 3.2.2), and port *DIGIT. No userinfo, no
 * path, no whitespace or control characters: RFC 9112 3.2 answers such a
 * value with 400. Empty is valid (a target with no authority).
 */
static bool is_host_value(const char *v, size_t n)
{
	size_t i = 0;
	if (n && v[0] == '[') {
		const char *close = memchr(v, ']', n);
		if (!close || !is_ip_literal(v + 1, (size_t)(close - v) - 1))
			return false;
		i = (size_t)(close - v) + 1;
	} else {
		while (i < n && v[i] != ':') {
			unsigned char ch = (unsigned char)v[i];
			if (ch == '%') {
				if (n - i < 3 || hexval(v[i + 1]) < 0 ||
				    hexval(v[i + 2]) < 0)
					return false;
				i += 3;
				continue;
			}
			if (!is_host_char(ch))
				return false;
			i++;
		}
	}
	if (i == n)
		return true;
	if (v[i] != ':')
		return false;
	for (i++; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			return false;
	return true;
}

static bool eq_nocase(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if (x >= 'A' && x <= 'Z')
			x = (unsigned char)(x + 32);
		if (y >= 'A' && y <= 'Z')
			y = (unsigned char)(y + 32);
		if (x != y)
			return false;
	}
	return true;
}

static bool eq(const char *a, size_t alen, const char *b)
{
	return alen == strlen(b) && memcmp(a, b, alen) == 0;
}

static int parse_method(const char *m, size_t n, struct web_req *req)
{
	static const char *const not_allowed[] = {
		"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT",
	};
	if (n == 0 || n > 32)
		return -400;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)m[i]))
			return -400;
	if (eq(m, n, "GET")) {
		req->method = WEB_GET;
		return 0;
	}
	if (eq(m, n, "HEAD")) {
		req->method = WEB_HEAD;
		return 0;
	}
	for (size_t i = 0; i < sizeof not_allowed / sizeof not_allowed[0]; i++)
		if (eq(m, n, not_allowed[i]))
			return -405;
	return -501;
}

/* "METHOD SP target SP HTTP/d.d" (no CRLF). */
static int parse_request_line(const char *l, size_t n, struct web_req *req)
{
	const char *sp1 = memchr(l, ' ', n);
	if (!sp1)
		return -400;
	int r = parse_method(l, (size_t)(sp1 - l), req);
	const char *t = sp1 + 1, *end = l + n;
	const char *sp2 = memchr(t, ' ', (size_t)(end - t));
	if (!sp2 || sp2 == t)
		return -400;
	for (const char *p = t; p < sp2; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return -400;
	const char *v = sp2 + 1;
	if (end - v != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' ||
	    v[5] > '9' || v[6] != '.' || v[7] < '0' || v[7] > '9')
		return -400;
	/* The method's answer (405/501) comes after the line is known valid. */
	if (r < 0)
		return r;
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return -505;
	req->target = t;
	req->target_len = (size_t)(sp2 - t);
	req->minor = v[7] - '0';
	return 0;
}

/* Connection: a comma-separated list of tokens. */
static int parse_connection(const char *v, size_t n, bool *close,
			    bool *keep)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t') {
			if (!is_tchar((unsigned char)v[i]))
				return -400;
			i++;
		}
		if (eq_nocase(v + s, i - s, "close"))
			*close = true;
		else if (eq_nocase(v + s, i - s, "keep-alive"))
			*keep = true;
	}
	return 0;
}

/* A head past WEB_HEAD_MAX: 414 if its request line is, else 431. The
 * request line is not parsed then, but a HEAD method (complete: "HEAD ")
 * is still told, so that the answer carries no body. */
static int head_too_long(const char *buf, size_t len, size_t line_no,
			 struct web_req *req)
{
	if (line_no)
		return -431;
	if (len >= 5 && memcmp(buf, "HEAD ", 5) == 0)
		req->method = WEB_HEAD;
	return -414;
}

int web_parse_request(const char *buf, size_t len, struct web_req *req)
{
	size_t pos = 0, line_no = 0, fields = 0, hosts = 0;
	bool conn_close = false, conn_keep = false;
	memset(req, 0, sizeof *req);
	for (;;) {
		const char *lf = memchr(buf + pos, '\n', len - pos);
		if (!lf) {
			if (len >= WEB_HEAD_MAX)
				return head_too_long(buf, len, line_no, req);
			return 0;
		}
		size_t end = (size_t)(lf - buf); /* index of LF */
		if (end + 1 > WEB_HEAD_MAX)
			return head_too_long(buf, len, line_no, req);
		if (end == pos || buf[end - 1] != '\r')
			return -400; /* bare LF */
		const char *l = buf + pos;
		size_t n = end - 1 - pos; /* without CRLF */
		pos = end + 1;
		if (line_no++ == 0) {
			int r = parse_request_line(l, n, req);
			if (r < 0)
				return r;
			continue;
		}
		if (n == 0)
			break; /* end of head */
		if (++fields > WEB_FIELDS_MAX)
			return -431;
		const char *colon = memchr(l, ':', n);
		if (!colon || colon == l)
			return -400; /* also obs-fold: SP/HTAB is no tchar */
		size_t nl = (size_t)(colon - l);
		for (size_t i = 0; i < nl; i++)
			if (!is_tchar((unsigned char)l[i]))
				return -400;
		const char *v = colon + 1, *ve = l + n;
		for (const char *p = v; p < ve; p++)
			if (!is_vchar_ws((unsigned char)*p))
				return -400;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		size_t vn = (size_t)(ve - v);
		if (eq_nocase(l, nl, "host")) {
			if (!is_host_value(v, vn))
				return -400;
			hosts++;
		} else if (eq_nocase(l, nl, "connection")) {
			if (parse_connection(v, vn, &conn_close, &conn_keep) < 0)
				return -400;
		} else if (eq_nocase(l, nl, "content-length")) {
			if (vn == 0)
				return -400;
			for (size_t i = 0; i < vn; i++)
				if (v[i] != '0')
					return -400; /* no request bodies */
		} else if (eq_nocase(l, nl, "transfer-encoding")) {
			return -501;
		}
	}
	if (pos > WEB_HEAD_MAX)
		return -431;
	if (req->minor == 1 && hosts != 1)
		return -400;
	if (hosts > 1)
		return -400;
	req->keep_alive = req->minor == 1 ? !conn_close : (conn_keep && !conn_close);
	req->head_len = pos;
	return (int)pos;
}

/* The length of an absolute-form target's "scheme://authority" (RFC 9112
 * 3.2.2: an origin server MUST accept the absolute-form): "http" or
 * "https" in any case, then an authority that is a valid Host value and
 * not empty (no userinfo); 0 when target is not that. */
static size_t absolute_prefix(const char *target, size_t len)
{
	size_t i = 0;
	if (len >= 7 && eq_nocase(target, 4, "http"))
		i = 4;
	else
		return 0;
	if (i < len && (target[i] == 's' || target[i] == 'S'))
		i++;
	if (len - i < 3 || memcmp(target + i, "://", 3) != 0)
		return 0;
	i += 3;
	size_t a = i;
	while (i < len && target[i] != '/' && target[i] != '?' &&
	       target[i] != '#')
		i++;
	/* An http URI with an empty host is invalid (RFC 9110 4.2.1),
	 * ":port" alone too. */
	if (i == a || target[a] == ':' || !is_host_value(target + a, i - a))
		return 0;
	return i;
}

int web_target_path(const char *target, size_t len, char *out, size_t outlen)
{
	if (len && target[0] != '/') {
		/* absolute-form: its path (none: "/"), as origin-form; the
		 * authority names this server whatever it says (one root). */
		size_t skip = absolute_prefix(target, len);
		if (!skip)
			return -400; /* "*", a relative path, another scheme */
		target += skip;
		len -= skip;
		if (len == 0 || target[0] == '?') {
			target = "/";
			len = 1;
		}
	}
	if (len == 0 || target[0] != '/' || outlen < 16)
		return -400;
	size_t o = 0, seg = 0; /* seg: where the current segment starts */
	for (size_t i = 1; i <= len; i++) {
		char ch;
		if (i == len || target[i] == '?') {
			ch = '\0';
		} else if (target[i] == '#') {
			return -400;
		} else if (target[i] == '%') {
			if (i + 2 >= len)
				return -400;
			int h = hexval(target[i + 1]), lo = hexval(target[i + 2]);
			if (h < 0 || lo < 0)
				return -400;
			ch = (char)(h * 16 + lo);
			if (ch == '\0' || ch == '/')
				return -400;
			i += 2;
		} else {
			ch = target[i];
		}
		if (ch == '/' || ch == '\0') {
			size_t sl = o - seg;
			if ((sl == 1 && out[seg] == '.') ||
			    (sl == 2 && out[seg] == '.' && out[seg + 1] == '.'))
				return -400;
			if (sl == 0 && ch == '/')
				return -400; /* "//" */
			if (ch == '\0')
				break;
			seg = o + 1;
		}
		if (o + 1 >= outlen)
			return -414;
		out[o++] = ch;
	}
	if (o == 0 || out[o - 1] == '/') {
		static const char idx[] = "index.html";
		if (o + sizeof idx > outlen)
			return -414;
		memcpy(out + o, idx, sizeof idx);
		return 0;
	}
	out[o] = '\0';
	return 0;
}

/* ---- responses ---------------------------------------------------------- */

uint64_t web_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

/* The Date field, formatted once per second per thread. */
static const char *http_date(void)
{
	static __thread char buf[40];
	static __thread time_t last = -1;
	time_t now = time(NULL);
	if (now != last) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		last = now;
	}
	return buf;
}

static const char *content_type(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{".html", "text/html"},	      {".htm", "text/html"},
		{".txt", "text/plain"},	      {".css", "text/css"},
		{".js", "text/javascript"},   {".json", "application/json"},
		{".png", "image/png"},	      {".jpg", "image/jpeg"},
		{".jpeg", "image/jpeg"},      {".gif", "image/gif"},
		{".svg", "image/svg+xml"},
	};
	const char *dot = strrchr(path, '.');
	if (dot && !strchr(dot, '/'))
		for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
			if (strcmp(dot, types[i].ext) == 0)
				return types[i].type;
	return "application/octet-stream";
}

/* Status line and the fields every response has. */
/* Appending to a connection's head buffer without printf: the head is
 * written on every request, by every style (a task's stack is cold when
 * its connection's next request comes, and printf's frame is large). Text
 * that does not fit is cut at the buffer's end (never past it); the heads
 * written here are far shorter than the buffer. */
struct head_out {
	char *p;
	size_t n, cap;
};

static void put_str(struct head_out *o, const char *s)
{
	size_t len = strlen(s);
	if (len > o->cap - o->n)
		len = o->cap - o->n;
	memcpy(o->p + o->n, s, len);
	o->n += len;
}

static void put_uint(struct head_out *o, unsigned long long v)
{
	char d[24];
	size_t k = sizeof d;
	d[--k] = '\0';
	do {
		d[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_str(o, d + k);
}

static struct head_out head_fields(struct web_conn *c, int status, bool keep,
				   int minor)
{
	struct head_out o = {c->out, 0, sizeof c->out};
	put_str(&o, "HTTP/1.1 ");
	put_uint(&o, (unsigned)status);
	put_str(&o, " ");
	put_str(&o, reason(status));
	put_str(&o, "\r\nServer: canal\r\nDate: ");
	put_str(&o, http_date());
	put_str(&o, "\r\n");
	put_str(&o, keep ? (minor == 0 ? "Connection: keep-alive\r\n" : "")
			 : "Connection: close\r\n");
	return o;
}

/* An answer with a small text body; errors other than 403/404 close. */
static void respond_status(struct web_conn *c, int status, bool head,
			   bool keep, int minor)
{
	if (status != 403 && status != 404)
		keep = false;
	struct head_out o = head_fields(c, status, keep, minor);
	char body[64];
	int bl = snprintf(body, sizeof body, "%d %s\n", status, reason(status));
	put_str(&o, status == 405 ? "Allow: GET, HEAD\r\n" : "");
	put_str(&o, "Content-Type: text/plain\r\nContent-Length: ");
	put_uint(&o, (unsigned)bl);
	put_str(&o, "\r\n\r\n");
	put_str(&o, head ? "" : body);
	c->out_len = o.n;
	c->out_off = 0;
	c->close_after = !keep;
}

static int open_beneath(int root, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, root, path, &how, sizeof how);
	return fd < 0 ? -errno : (int)fd;
}

static void respond(const struct web_server *srv, struct web_conn *c,
		    const struct web_req *req)
{
	char path[WEB_PATH_MAX];
	bool head = req->method == WEB_HEAD;
	int r = web_target_path(req->target, req->target_len, path, sizeof path);
	if (r < 0) {
		respond_status(c, -r, head, req->keep_alive, req->minor);
		return;
	}
	int fd = open_beneath(srv->root_fd, path);
	if (fd < 0) {
		int st = fd == -ENOENT || fd == -ENOTDIR || fd == -ENAMETOOLONG ? 404
			 : fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM ? 503
			 : 403; /* EXDEV, ELOOP, EACCES, ...: refused */
		respond_status(c, st, head, req->keep_alive, req->minor);
		return;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		respond_status(c, 500, head, req->keep_alive, req->minor);
		return;
	}
	if (!S_ISREG(st.st_mode)) { /* a directory, a FIFO, a device */
		close(fd);
		respond_status(c, S_ISDIR(st.st_mode) ? 404 : 403, head,
			       req->keep_alive, req->minor);
		return;
	}
	struct head_out o = head_fields(c, 200, req->keep_alive, req->minor);
	put_str(&o, "Content-Type: ");
	put_str(&o, content_type(path));
	put_str(&o, "\r\nContent-Length: ");
	put_uint(&o, (unsigned long long)st.st_size);
	put_str(&o, "\r\n\r\n");
	c->out_len = o.n;
	c->out_off = 0;
	c->close_after = !req->keep_alive;
	if (head || st.st_size == 0) {
		close(fd);
		return;
	}
	c->file_fd = fd;
	c->file_off = 0;
	c->file_end = st.st_size;
}

/* ---- the connection ----------------------------------------------------- */

void web_conn_init(struct web_conn *c, int fd, const struct web_server *srv)
{
	c->fd = fd;
	c->in_len = 0;
	c->head_start_ns = 0;
	c->out_len = c->out_off = 0;
	c->file_fd = -1;
	c->file_off = c->file_end = 0;
	c->close_after = false;
	c->eof = false;
	c->requests = 0;
	c->style_sends_small = false;
	c->corked = false;
	c->drive_yielded = false;
	c->opened_ns = web_now_ns();
	c->deadline_ns = c->opened_ns + srv->idle_timeout_ns;
}

int web_conn_send_flags(const struct web_conn *c)
{
	return c->close_after ? MSG_MORE : 0;
}

void web_conn_fini(struct web_conn *c)
{
	if (c->file_fd >= 0)
		close(c->file_fd);
	c->file_fd = -1;
}

enum web_want web_conn_run(const struct web_server *srv, struct web_conn *c)
{
	/* Bytes sent or a response started by this call: only these move the
	 * idle timeout of a connection waiting to send (http.h). */
	bool progress = false;
	for (;;) {
		/* 1. Flush the response in progress (or leave it to the style). */
		if (c->style_sends_small && web_conn_small_out(c))
			goto want_write;
		if (c->close_after && !c->corked &&
		    (c->out_off < c->out_len || c->file_fd >= 0)) {
			/* The last response: its FIN rides on its last
			 * segment (web_conn_send_flags). An error here only
			 * costs that segment. */
			int one = 1;
			setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
			c->corked = true;
		}
		if (c->out_off < c->out_len) {
			bool more = c->file_fd >= 0;
			ssize_t n = send(c->fd, c->out + c->out_off,
					 c->out_len - c->out_off,
					 MSG_NOSIGNAL | (more ? MSG_MORE : 0));
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					goto want_write;
				return WEB_CLOSE;
			}
			c->out_off += (size_t)n;
			progress |= n > 0;
			continue;
		}
		if (c->file_fd >= 0) {
			if (c->file_off < c->file_end) {
				off_t left = c->file_end - c->file_off;
				ssize_t n = sendfile(c->fd, c->file_fd, &c->file_off,
						     left > (1 << 20) ? (1 << 20) : (size_t)left);
				if (n < 0) {
					if (errno == EINTR)
						continue;
					if (errno == EAGAIN || errno == EWOULDBLOCK)
						goto want_write;
					return WEB_CLOSE;
				}
				if (n == 0)
					return WEB_CLOSE; /* the file shrank */
				progress = true;
				continue;
			}
			close(c->file_fd);
			c->file_fd = -1;
		}
		if (c->out_len) { /* a response completed */
			c->out_len = c->out_off = 0;
			c->requests++;
			if (c->close_after)
				return WEB_CLOSE;
		}
		/* 2. Answer the next buffered request. */
		uint64_t now = web_now_ns();
		if (c->in_len == 0) {
			if (c->eof)
				return WEB_CLOSE;
			c->head_start_ns = 0;
			c->deadline_ns = now + srv->idle_timeout_ns;
			return WEB_WANT_READ;
		}
		if (!c->head_start_ns)
			c->head_start_ns = now;
		struct web_req req;
		int r = web_parse_request(c->in, c->in_len, &req);
		if (r == 0) {
			if (c->eof)
				return WEB_CLOSE;
			c->deadline_ns = c->head_start_ns + srv->header_timeout_ns;
			return WEB_WANT_READ;
		}
		if (r < 0) {
			/* req.method is HEAD when the request line's method
			 * parsed as HEAD: no body then either. */
			respond_status(c, -r, req.method == WEB_HEAD, false, 1);
			c->in_len = 0; /* the rest is not trusted */
			progress = true;
			continue;
		}
		respond(srv, c, &req);
		progress = true;
		c->in_len -= (size_t)r;
		memmove(c->in, c->in + r, c->in_len);
		c->head_start_ns = c->in_len ? now : 0;
	}
want_write:
	/* Not at every call: a style calls this whenever it looks at the
	 * connection (its input came, a short sleep ended), and a client
	 * that stopped reading kept its connection for ever that way. */
	if (progress)
		c->deadline_ns = web_now_ns() + srv->idle_timeout_ns;
	return WEB_WANT_WRITE;
}

bool web_conn_small_out(const struct web_conn *c)
{
	return c->out_off == 0 && c->out_len > 0 &&
	       (c->file_fd < 0 || (c->file_off == 0 && c->file_end <= WEB_SMALL_BODY));
}

ssize_t web_conn_recv(struct web_conn *c)
{
	if (c->in_len >= sizeof c->in)
		return -ENOBUFS; /* cannot happen: run answers a full buffer */
	for (;;) {
		ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
		if (n > 0) {
			c->in_len += (size_t)n;
			return n;
		}
		if (n == 0) {
			c->eof = true;
			return 0;
		}
		if (errno != EINTR)
			return -errno;
	}
}

int web_conn_feed(struct web_conn *c, const void *data, size_t len)
{
	if (len > sizeof c->in - c->in_len)
		return -ENOBUFS;
	memcpy(c->in + c->in_len, data, len);
	c->in_len += len;
	return 0;
}

enum web_want web_conn_drive(const struct web_server *srv, struct web_conn *c)
{
	c->drive_yielded = false;
	for (unsigned reads = 0;; reads++) {
		enum web_want w = web_conn_run(srv, c);
		if (w != WEB_WANT_READ)
			return w;
		if (reads == WEB_DRIVE_READS) {
			c->drive_yielded = true; /* what was read is answered */
			return WEB_WANT_READ;
		}
		ssize_t n = web_conn_recv(c);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return WEB_WANT_READ;
		if (n < 0)
			return WEB_CLOSE;
		/* n == 0: eof set, run answers what is buffered then closes */
	}
}
