/* SPDX-License-Identifier: MIT */
/*
 * transfer/ifaddr.c - a TCP bind setting (address, interface name or
 * subnet) resolved to one of this host's IPv4 addresses (ifaddr.h).
 */
#define _GNU_SOURCE
#include "ifaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "a.b.c.d/len": the network and its mask (host order); 0 or -EINVAL. */
static int parse_subnet(const char *spec, const char *slash, uint32_t *net,
			uint32_t *mask)
{
	char a[INET_ADDRSTRLEN];
	size_t l = (size_t)(slash - spec);
	if (l == 0 || l >= sizeof a)
		return -EINVAL;
	memcpy(a, spec, l);
	a[l] = 0;
	struct in_addr in;
	if (inet_pton(AF_INET, a, &in) != 1)
		return -EINVAL;
	char *end;
	const char *p = slash + 1;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	unsigned long bits = strtoul(p, &end, 10);
	if (*end || bits > 32)
		return -EINVAL;
	*mask = bits == 0 ? 0 : ~(uint32_t)0 << (32 - bits);
	*net = ntohl(in.s_addr);
	return (*net & ~*mask) ? -EINVAL : 0;
}

int canal__bind_resolve(const char *spec, char *out, char *why, size_t whylen)
{
	struct in_addr in;
	if (!spec || !*spec || strlen(spec) >= CANAL__ADDR_MAX) {
		snprintf(why, whylen, "bind \"%s\": empty or too long",
			 spec ? spec : "");
		return -EINVAL;
	}
	if (inet_pton(AF_INET, spec, &in) == 1) {
		/* The address is published for the peers to dial: one that
		 * names no single host (any, broadcast, multicast, class E)
		 * listened everywhere, or nowhere, and each peer dialed
		 * 0.0.0.0, its own host, or failed: a job across hosts with
		 * bind "0.0.0.0" connected to the wrong listeners
		 * (test_engine_bind). */
		uint32_t h = ntohl(in.s_addr);
		if (h == 0 || h >= 0xe0000000u) {
			snprintf(why, whylen,
				 "bind %s: not one host's address (peers dial "
				 "the address bound: name an address, an "
				 "interface, or a subnet such as 0.0.0.0/0 for "
				 "any of this host's)", spec);
			return -EINVAL;
		}
		snprintf(out, CANAL__ADDR_MAX, "%s", spec);
		return 0;
	}
	const char *slash = strchr(spec, '/');
	uint32_t net = 0, mask = 0;
	if (slash && parse_subnet(spec, slash, &net, &mask) < 0) {
		snprintf(why, whylen,
			 "bind %s: not an address, an interface or a subnet "
			 "(a.b.c.d/0-32, host bits clear)", spec);
		return -EINVAL;
	}
	if (!slash && strlen(spec) >= IF_NAMESIZE) {
		snprintf(why, whylen, "bind %s: interface name too long", spec);
		return -EINVAL;
	}
	struct ifaddrs *list;
	if (getifaddrs(&list) < 0) {
		int err = errno;
		snprintf(why, whylen, "bind %s: getifaddrs: %s", spec,
			 strerror(err));
		return -err;
	}
	/* Four passes: interfaces that are up, running (a carrier) and not
	 * loopback; then up and not loopback; then up; then any. Loopback
	 * late: a subnet as wide as 0.0.0.0/0 meant 127.0.0.1 (lo comes
	 * first), the one address a peer on another host cannot dial. (A
	 * bridge or a container's interface that is up and running may
	 * still come first: name the interface or the subnet where it
	 * matters.) */
	const struct sockaddr_in *found = NULL;
	for (int pass = 0; pass < 4 && !found; pass++) {
		for (struct ifaddrs *i = list; i && !found; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			unsigned f = i->ifa_flags;
			if (pass < 3 && !(f & IFF_UP))
				continue;
			if (pass < 2 && (f & IFF_LOOPBACK))
				continue;
			if (pass == 0 && !(f & IFF_RUNNING))
				continue;
			const struct sockaddr_in *a =
				(const struct sockaddr_in *)(void *)i->ifa_addr;
			bool match = slash ? (ntohl(a->sin_addr.s_addr) & mask) == net
					   : strcmp(i->ifa_name, spec) == 0;
			if (match)
				found = a;
		}
	}
	int err = 0;
	if (!found) {
		snprintf(why, whylen,
			 slash ? "bind %s: no address of this host in that subnet"
			       : "bind %s: no interface of that name with an IPv4 address",
			 spec);
		err = -EADDRNOTAVAIL;
	} else if (!inet_ntop(AF_INET, &found->sin_addr, out, CANAL__ADDR_MAX)) {
		err = -errno;
		snprintf(why, whylen, "bind %s: %s", spec, strerror(-err));
	}
	freeifaddrs(list);
	return err;
}
