/* SPDX-License-Identifier: MIT */
/*
 * http.h - the HTTP/1.1 core every web server style shares (issue 14).
 *
 * Three layers, each usable alone:
 *   - web_parse_request: a strict, bounded parser of one request head
 *     (request line + header fields + empty line). Pure: no I/O, no
 *     allocation, no global state; fuzzed by tests/web/fuzz_http.c.
 *   - web_target_path: turns a request target into a path relative to the
 *     served root, refusing traversal ("..", "%2e%2e", encoded "/", NUL,
 *     absolute-form targets).
 *   - struct web_conn and web_conn_*: one connection's state machine, I/O
 *     style agnostic. A style only decides WHEN to call web_conn_run
 *     (progress: flush output, parse buffered input, open files) and how
 *     input arrives (web_conn_recv from the socket, or web_conn_feed from a
 *     buffer the kernel filled, as io_uring's provided buffers). Bodies are
 *     sent with sendfile(2) from a file opened with openat2(2)
 *     RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so no symlink leads out of
 *     the root.
 *
 * A web_conn is used by one thread at a time (the style guarantees it);
 * nothing here is shared between threads except the read-only web_server.
 */
#ifndef CANAL_BENCH_WEB_HTTP_H
#define CANAL_BENCH_WEB_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds: a request head larger than WEB_HEAD_MAX bytes gets 431 (or 414
 * when the request line alone does not fit); more than WEB_FIELDS_MAX
 * header fields gets 431. */
#define WEB_HEAD_MAX 8192
#define WEB_FIELDS_MAX 64
#define WEB_PATH_MAX 1024
/* Input buffer: one head plus what a client pipelines behind it. */
#define WEB_IN_MAX (2 * WEB_HEAD_MAX)

enum web_method { WEB_GET = 1, WEB_HEAD = 2 };

struct web_req {
	enum web_method method;
	const char *target; /* points into the parsed buffer, not terminated */
	size_t target_len;
	int minor;	     /* HTTP/1.<minor>: 0 or 1 */
	bool keep_alive;     /* after the version's default and Connection: */
	size_t head_len;     /* bytes of the head, empty line included */
};

/*
 * web_parse_request - parse one request head at the start of buf.
 * Returns the head's length (> 0) with *req filled, 0 when buf holds an
 * incomplete head that may still become valid, or a negative HTTP status
 * to answer: -400 malformed, -414 request line too long, -431 head too
 * large or too many fields, -405 a known method other than GET/HEAD,
 * -501 an unknown method or Transfer-Encoding, -505 another HTTP version.
 * Strict: CRLF line ends only, no obsolete line folding, no whitespace
 * before a field's colon, field names are tokens, values have no control
 * characters except HTAB, HTTP/1.1 requires exactly one Host, whose value
 * must be uri-host [":" port] (RFC 9110 7.2: a reg-name, IPv4 address or
 * bracketed IP literal; no userinfo, path, whitespace or control
 * characters), a request body (Content-Length other than 0) is refused
 * with 400.
 */
int web_parse_request(const char *buf, size_t len, struct web_req *req);

/*
 * web_target_path - decode an origin-form target ("/a/b.txt?q") into a
 * relative path ("a/b.txt") in out (capacity outlen, NUL terminated); an
 * absolute-form one ("http://host:port/a/b.txt", which RFC 9112 3.2.2
 * says a server MUST accept) has its path decoded the same way (none:
 * "/"), its scheme http or https, its authority a valid Host value.
 * "/" and paths ending in "/" get "index.html" appended. Returns 0, or a
 * negative HTTP status: -400 for anything else ("*", a relative path,
 * another scheme, an empty or malformed authority, userinfo), bad
 * percent-encoding, an encoded NUL or "/", a "." or ".." segment, or
 * an empty segment ("//"); -414 when it does not fit.
 */
int web_target_path(const char *target, size_t len, char *out, size_t outlen);

/* What every connection of a server reads; set up by core.c. */
struct web_server {
	int root_fd;		 /* O_PATH|O_DIRECTORY of --root */
	uint64_t header_timeout_ns; /* first byte of a head to its end */
	/* Keep-alive idle, and send progress: a connection with a response
	 * pending is closed once this long passed since bytes of it were
	 * last sent or since it started, whatever else the connection does
	 * (a client that stops reading and sends nothing, or sends bytes
	 * now and then, is not making the response progress). */
	uint64_t idle_timeout_ns;
};

enum web_want {
	WEB_WANT_READ,	/* needs input (web_conn_recv / web_conn_feed) */
	WEB_WANT_WRITE, /* output pending, the socket is full */
	WEB_CLOSE,	/* done: the style closes the socket (web_conn_fini) */
};

struct web_conn {
	int fd;
	/* Input. */
	size_t in_len;
	uint64_t head_start_ns; /* when this head's first byte came, 0: none */
	/* Output: header bytes, then file bytes [file_off, file_end). */
	size_t out_len, out_off;
	int file_fd;
	off_t file_off, file_end;
	bool close_after; /* close once the output is flushed */
	bool eof;	  /* the client half-closed */
	uint64_t deadline_ns;
	uint64_t opened_ns; /* web_conn_init's time */
	uint64_t requests;  /* responses completed */
	/* Set by a style that sends small responses itself (io_uring: one
	 * ring SEND of head + body): web_conn_run then leaves a response
	 * with web_conn_small_out true unsent and returns WEB_WANT_WRITE; the
	 * style sends it, closes file_fd, sets out_off = out_len and
	 * file_fd = -1, and calls web_conn_run again. web_conn_init clears it. */
	bool style_sends_small;
	bool corked; /* TCP_CORK set for the last response (web_conn_run) */
	/* web_conn_drive's last call stopped at WEB_DRIVE_READS reads: the
	 * socket may hold input that no new readiness edge will announce. */
	bool drive_yielded;
	char in[WEB_IN_MAX];
	char out[512];
};

/* Monotonic (coarse) time in nanoseconds. */
uint64_t web_now_ns(void);

/* web_conn_init - a fresh connection on socket fd (non-blocking). */
void web_conn_init(struct web_conn *c, int fd, const struct web_server *srv);
/* web_conn_fini - release what the connection holds, but not c->fd. */
void web_conn_fini(struct web_conn *c);

/*
 * web_conn_run - make progress without reading: send pending output, then
 * answer each complete request buffered (pipelining), in order. Returns
 * what the connection waits for. Updates c->deadline_ns: the header
 * timeout from a head's first byte, the idle timeout from the last
 * response (waiting for input) or from this call's send progress or
 * response start (WEB_WANT_WRITE; a call that sent nothing and started
 * nothing leaves it as it was).
 */
enum web_want web_conn_run(const struct web_server *srv, struct web_conn *c);

/* Largest body a style_sends_small style sends from memory. */
#define WEB_SMALL_BODY (64 * 1024)

/* web_conn_send_flags - the flags a style's own send of the pending response
 * adds (with MSG_NOSIGNAL): MSG_MORE when it is the connection's last
 * (close_after), so that its last segment waits in the socket for the
 * close's shutdown, whose FIN then rides on it (nginx's tcp_nopush does the
 * same with TCP_CORK): one segment less per connection, which a client
 * opening a connection per request (ab) feels. web_conn_run's own sends
 * get this by TCP_CORK (its body goes by sendfile, which takes no flags).
 * Every style shuts a closing connection down at once (web_close), so
 * nothing waits longer than that. */
int web_conn_send_flags(const struct web_conn *c);

/* web_conn_small_out - a response is pending, none of it sent yet, and its
 * body (if any) is a file of at most WEB_SMALL_BODY bytes. */
bool web_conn_small_out(const struct web_conn *c);

/* web_conn_recv - one recv(2) into the input buffer: bytes read (> 0),
 * 0 at end of input, -EAGAIN, or another negative errno. */
ssize_t web_conn_recv(struct web_conn *c);

/* web_conn_feed - append bytes already received (io_uring). Returns 0, or
 * -ENOBUFS when they do not fit (the style closes the connection). */
int web_conn_feed(struct web_conn *c, const void *data, size_t len);

/*
 * A connection's turn: web_conn_drive reads at most this many times per
 * call, and a task serving one connection (tasks.c) lets the other tasks
 * of its loop run after as many receives. A client that pipelines
 * requests without end, reading the responses as fast as they come, never
 * lets its socket run dry: driven until the socket would block, it held
 * its loop for as long as it liked, and every other connection of the
 * loop, and the listener, waited (test_web's "pipeline hog"). A read takes
 * up to WEB_IN_MAX (16 KiB) of requests, so a turn answers up to 256 KiB
 * of them; a client whose requests fit one read (each request followed
 * by its response, as every load generator sends them) never reaches the
 * bound, so it costs the common case nothing. 16 is not measured: any
 * small bound gives the others their turn.
 */
#define WEB_DRIVE_READS 16

/* web_conn_drive - readiness styles: web_conn_run and web_conn_recv until
 * the socket would block, the connection is done, or WEB_DRIVE_READS reads
 * were made (then WEB_WANT_READ with c->drive_yielded set: the socket may
 * still be readable; a level-triggered style sees it at its next wait, an
 * edge-triggered one must ask again, epoll.c). */
enum web_want web_conn_drive(const struct web_server *srv, struct web_conn *c);

#endif
