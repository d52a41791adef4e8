/* full_backlog.h - a Unix stream listener whose backlog is full, for the
 * tests of a connect that must wait for room (no readiness tells when
 * there is some: the runtime retries): listen(2) with a backlog of 0, then
 * non-blocking connects until the kernel says EAGAIN. */
#ifndef CANAL_TESTS_FULL_BACKLOG_H
#define CANAL_TESTS_FULL_BACKLOG_H

#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FULL_BACKLOG_MAX 256

struct full_backlog {
	struct sockaddr_un addr;
	int listener;
	int fill[FULL_BACKLOG_MAX], nfill;
};

/* A listener at /tmp/canal-<tag>-<pid> with the given backlog. */
static inline int unix_listener(struct sockaddr_un *a, const char *tag,
				int backlog)
{
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path, "/tmp/canal-%s-%d", tag,
		 (int)getpid());
	unlink(a->sun_path);
	CHECK_EQ(bind(l, (struct sockaddr *)a, sizeof *a), 0);
	CHECK_EQ(listen(l, backlog), 0);
	return l;
}

static inline void full_backlog_open(struct full_backlog *fb, const char *tag)
{
	fb->listener = unix_listener(&fb->addr, tag, 0);
	for (fb->nfill = 0; fb->nfill < FULL_BACKLOG_MAX; fb->nfill++) {
		int s = socket(AF_UNIX,
			       SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		CHECK(s >= 0);
		if (connect(s, (struct sockaddr *)&fb->addr, sizeof fb->addr)) {
			CHECK_EQ(errno, EAGAIN);
			close(s);
			break;
		}
		fb->fill[fb->nfill] = s;
	}
	CHECK(fb->nfill < FULL_BACKLOG_MAX); /* the backlog did fill */
}

static inline void full_backlog_close(struct full_backlog *fb)
{
	for (int i = 0; i < fb->nfill; i++)
		close(fb->fill[i]);
	close(fb->listener);
	unlink(fb->addr.sun_path);
}

#endif
