/* SPDX-License-Identifier: MIT */
/*
 * transfer/exchange.c - the files back end of the address exchange and the
 * dispatch to PMIx (see exchange.h).
 */
#define _GNU_SOURCE
#include "exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int canal__pmix_put(const struct canal__xchg *x, const char *key,
		    const char *value);
int canal__pmix_fence(const struct canal__xchg *x, uint64_t deadline_ms);
int canal__pmix_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms);

uint64_t canal__now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait until fd is readable or deadline (canal__now_ms() clock) has
 * passed: 0 (readable, or interrupted: the caller reads and looks at the
 * clock again), -ETIMEDOUT, or poll's negative errno. */
static int wait_readable(int fd, uint64_t deadline)
{
	uint64_t now = canal__now_ms();
	if (now >= deadline)
		return -ETIMEDOUT;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

/* One request line to the launcher's key-value service, its answer line
 * into ans[cap] (without the newline): 0 or -errno (-EPROTO: a malformed
 * answer; -EINVAL: $CANAL_LAUNCH_ADDR is not "ip:port"; -ETIMEDOUT: no
 * answer in time). Each call is bounded as a whole: 5 s, or until
 * deadline_ms if sooner (1 ms at least), to connect, send and receive the
 * whole answer line. */
static int launcher_ask(const char *addr, const char *line, char *ans,
			size_t cap, uint64_t deadline_ms)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof host)
		return -EINVAL; /* not "ip:port" */
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	if (*end || port <= 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	sa.sin_port = htons((uint16_t)port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	uint64_t now = canal__now_ms();
	uint64_t ms = deadline_ms > now ? deadline_ms - now : 1;
	if (ms > 5000)
		ms = 5000;
	uint64_t until = now + ms;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	/* connect() and send() are single calls: the socket's send timeout
	 * bounds them (without it an address that drops SYNs blocks
	 * connect() for ever; the line fits in the socket's buffer). The
	 * answer is read under the one deadline until (poll, then
	 * MSG_DONTWAIT), not a limit per recv(): a service that sent a byte
	 * now and then renewed SO_RCVTIMEO at every byte
	 * (test_revauth_kv_trickle). */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	int err = 0;
	size_t len = strlen(line), got = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len) {
		err = -errno;
	} else {
		for (;;) {
			ssize_t k = recv(fd, ans + got, cap - 1 - got,
					 MSG_DONTWAIT);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				err = wait_readable(fd, until);
				if (err)
					break;
				continue;
			}
			if (k <= 0) {
				err = k < 0 ? -errno : -EPROTO;
				break;
			}
			got += (size_t)k;
			if (memchr(ans, '\n', got))
				break;
			if (got == cap - 1) {
				err = -EPROTO;
				break;
			}
		}
	}
	close(fd);
	if (err == -EAGAIN || err == -EWOULDBLOCK || err == -EINPROGRESS)
		return -ETIMEDOUT; /* a socket timeout's errno */
	if (err)
		return err;
	ans[got] = 0;
	*strchr(ans, '\n') = 0;
	return 0;
}

/* The launcher could not be asked (launcher_ask's err) until the
 * deadline: said on stderr, since the caller hears -ETIMEDOUT only. */
static void launcher_gave_up(const struct canal__xchg *x, const char *what,
			     int err)
{
	fprintf(stderr,
		"canal engine: rank %d: %s through the launcher at %s: no "
		"answer by the connect deadline (last attempt: %s)\n",
		x->rank, what, x->launch_addr,
		err ? strerror(-err) : "refused by the service");
}

int canal__xchg_put(const struct canal__xchg *x, const char *key,
		    const char *value, uint64_t deadline_ms)
{
	if (x->pmix)
		return canal__pmix_put(x, key, value);
	if (x->launch_addr) {
		char line[CANAL__XCHG_MAX + 128], ans[8];
		if (strchr(value, '\n') || strchr(key, ' ') ||
		    snprintf(line, sizeof line, "P %s.%d %s\n", key, x->rank,
			     value) >= (int)sizeof line)
			return -EINVAL;
		/* A lossy network can cut an exchange short: ask again (a
		 * put that arrived twice stores the same value) until the
		 * open's deadline, not a time of the put's own (30 s, as
		 * before, whatever connect_timeout_ms said:
		 * test_revauth_kv_put_deadline). */
		for (;;) {
			int err = launcher_ask(x->launch_addr, line, ans,
					       sizeof ans, deadline_ms);
			if (!err && !strcmp(ans, "K"))
				return 0;
			if (err == -EINVAL)
				return err;
			if (canal__now_ms() >= deadline_ms) {
				launcher_gave_up(x, "publishing", err);
				return -ETIMEDOUT;
			}
			struct timespec ts = { 0, 10000000L };
			nanosleep(&ts, NULL);
		}
	}
	char path[600], tmp[620];
	snprintf(path, sizeof path, "%s/%s.%d", x->dir, key, x->rank);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", value);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

int canal__xchg_fence(const struct canal__xchg *x, uint64_t deadline_ms)
{
	return x->pmix ? canal__pmix_fence(x, deadline_ms) : 0;
}

int canal__xchg_get(const struct canal__xchg *x, int rank, const char *key,
		    char *buf, size_t cap, uint64_t deadline_ms)
{
	if (x->pmix)
		return canal__pmix_get(x, rank, key, buf, cap, deadline_ms);
	if (x->launch_addr) {
		char line[256], ans[CANAL__XCHG_MAX + 8];
		snprintf(line, sizeof line, "G %s.%d\n", key, rank);
		for (;;) {
			/* "N" (not there yet), or an exchange cut short by the
			 * network or refused ("E"): ask again until the
			 * deadline. */
			int err = launcher_ask(x->launch_addr, line, ans,
					       sizeof ans, deadline_ms);
			if (!err && ans[0] == 'V' && ans[1] == ' ') {
				if (strlen(ans + 2) >= cap)
					return -EPROTO;
				strcpy(buf, ans + 2);
				return 0;
			}
			/* An answer outside the protocol ("V", "N", "E"):
			 * not a launcher, asking again cannot help. */
			if (!err && strcmp(ans, "N") && strcmp(ans, "E"))
				return -EPROTO;
			if (err == -EINVAL)
				return err;
			/* The deadline, whatever the last attempt met (the
			 * value not there yet, a launcher gone, refusing or
			 * silent): -ETIMEDOUT, as a put says. The last
			 * attempt's own error (-ECONNREFUSED once the
			 * launcher was gone) made open's error depend on
			 * which of the two was under way then
			 * (test_revxchg_launcher_gone). */
			if (canal__now_ms() >= deadline_ms) {
				if (err || strcmp(ans, "N"))
					launcher_gave_up(x, "reading an address",
							 err);
				return -ETIMEDOUT;
			}
			struct timespec ts = { 0, 2000000L };
			nanosleep(&ts, NULL);
		}
	}
	char path[600];
	snprintf(path, sizeof path, "%s/%s.%d", x->dir, key, rank);
	for (;;) {
		FILE *f = fopen(path, "r");
		if (f) {
			char *ok = fgets(buf, (int)cap, f);
			fclose(f);
			if (!ok)
				return -EPROTO;
			size_t n = strlen(buf);
			if (n == 0 || buf[n - 1] != '\n')
				return -EPROTO; /* too long, or cut */
			buf[n - 1] = 0;
			return 0;
		}
		if (canal__now_ms() > deadline_ms)
			return -ETIMEDOUT;
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
	}
}
