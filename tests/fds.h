/* SPDX-License-Identifier: MIT */
/*
 * fds.h - descriptors tests set up again and again: a TCP listener on a
 * free loopback port, a pseudo-terminal pair. Both blocking, as made.
 */
#ifndef CANAL_TESTS_FDS_H
#define CANAL_TESTS_FDS_H

#include "check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

/* A listening TCP socket on 127.0.0.1, port chosen by the kernel; its
 * address in *addr (for connect). */
static inline int test_loopback_listener(int backlog, struct sockaddr_in *addr)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0);
	*addr = (struct sockaddr_in){.sin_family = AF_INET,
				     .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(*addr);
	CHECK_EQ(bind(l, (struct sockaddr *)addr, sizeof(*addr)), 0);
	CHECK_EQ(listen(l, backlog), 0);
	CHECK_EQ(getsockname(l, (struct sockaddr *)addr, &al), 0);
	return l;
}

/* A pseudo-terminal: its master in *master, its slave in *slave. */
static inline void test_pty_pair(int *master, int *slave)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	CHECK(m >= 0);
	CHECK_EQ(grantpt(m), 0);
	CHECK_EQ(unlockpt(m), 0);
	int s = open(ptsname(m), O_RDWR | O_NOCTTY);
	CHECK(s >= 0);
	*master = m;
	*slave = s;
}

#endif
