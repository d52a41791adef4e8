/* hang_guard.h - for tests of calls that must end by their deadline: a
 * loopback listener that takes connections into its backlog and never
 * answers (or that the test answers as it likes), the monotonic clock in
 * milliseconds, and the verdict of a child that ran the call under an
 * alarm. */
#ifndef CANAL_TEST_HANG_GUARD_H
#define CANAL_TEST_HANG_GUARD_H

#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

/* A TCP socket bound to 127.0.0.1, an ephemeral port, listening with a
 * backlog of 16 if listening (else a connection to it is refused, and no
 * one else can take the port while it is open): its fd; *sa its address
 * (if sa), addr its "127.0.0.1:port" (if addr). */
static inline int loopback_socket(struct sockaddr_in *sa, char *addr,
				  size_t cap, bool listening)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t l = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0);
	CHECK_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	if (listening)
		CHECK_EQ(listen(fd, 16), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	if (sa)
		*sa = a;
	if (addr)
		snprintf(addr, cap, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
	return fd;
}

/* A TCP listener on 127.0.0.1 (loopback_socket). */
static inline int loopback_listener(struct sockaddr_in *sa, char *addr,
				    size_t cap)
{
	return loopback_socket(sa, addr, cap, true);
}

static inline uint64_t hang_guard_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for child p, which exits 0 when its call ended as expected and
 * is killed by its alarm when the call hangs: true if it exited 0; a
 * child killed by a signal is reported on stderr as "<hung> (killed by
 * signal N)". */
static inline bool child_exited_ok(pid_t p, const char *hung)
{
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (WIFSIGNALED(st))
		fprintf(stderr, "%s (killed by signal %d)\n", hung,
			WTERMSIG(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

#endif
