/* SPDX-License-Identifier: MIT */
/*
 * transfer/ifaddr.h - what a TCP bind setting names, as one of this host's
 * IPv4 addresses, so that one setting serves every host of a job
 * (`mpirun -x CANAL_ENGINE_BIND=10.1.0.0/16`, or `=ib0`).
 */
#ifndef CANAL_ENGINE_IFADDR_H
#define CANAL_ENGINE_IFADDR_H

#include <stddef.h>

#define CANAL__ADDR_MAX 64

/*
 * spec is one of:
 *   an IPv4 address ("10.1.0.5"): itself, as given (it need not be this
 *     host's: bind fails later if it is not), but not 0.0.0.0 nor one of
 *     224.0.0.0-255.255.255.255 (multicast, class E, broadcast): the
 *     address is what the peers dial, and these name no one host;
 *   an interface name ("eth0", "ib0"): that interface's first IPv4
 *     address;
 *   a subnet in CIDR form ("10.1.0.0/16"): this host's first IPv4 address
 *     inside it (interfaces in getifaddrs order: up, running and not
 *     loopback first, then up and not loopback, then up: "0.0.0.0/0" is
 *     not 127.0.0.1 where the host has another address; a bridge that is
 *     up may still come first, so name the interface or subnet where it
 *     matters).
 * The address as text in out (CANAL__ADDR_MAX bytes). 0, or a negative
 * errno with the reason in why: -EINVAL a malformed spec (empty, too long,
 * a prefix length out of 0-32, a subnet with host bits set, an address
 * that names no one host),
 * -EADDRNOTAVAIL no interface of that name with an IPv4 address, or no
 * address of this host in the subnet; getifaddrs' errno otherwise.
 * Thread-safe; reads the interfaces at each call (no cache).
 */
int canal__bind_resolve(const char *spec, char *out, char *why, size_t whylen);

#endif /* CANAL_ENGINE_IFADDR_H */
