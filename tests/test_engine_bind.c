/* test_engine_bind.c - a TCP bind setting as an address, an interface name
 * or a subnet (transfer/ifaddr.h; issue 16: one CANAL_ENGINE_BIND for
 * every host of an mpirun job). The resolver on the loopback interface
 * (present everywhere) and on whatever IPv4 interfaces this host has (each
 * name and its own /32 and /prefix resolve to an address of this host in
 * it; a subnet prefers an interface that is up and not loopback);
 * malformed settings, addresses that name no one host (0.0.0.0, multicast,
 * broadcast: the address bound is the one peers dial) and names that
 * match nothing are refused with the reason; a session over TCP opened with one of them fails with that
 * error and opens with a good one. Across hosts: test_engine_netns binds
 * by interface name on one side and by subnet on the other. */
#include "check.h"
#include "engine_job.h"
#include "../src/engine/transfer/ifaddr.h"

#include <arpa/inet.h>
#include <canal/engine.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

static int resolve(const char *spec, char *out)
{
	char why[200] = "";
	int err = canal__bind_resolve(spec, out, why, sizeof why);
	if (err)
		CHECK(why[0] != 0); /* every refusal says why */
	return err;
}

/* Is text one of this host's IPv4 addresses? */
static bool is_local(const char *text)
{
	struct ifaddrs *l;
	CHECK(getifaddrs(&l) == 0);
	bool found = false;
	for (struct ifaddrs *i = l; i && !found; i = i->ifa_next) {
		char a[INET_ADDRSTRLEN];
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    inet_ntop(AF_INET,
			      &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
			      a, sizeof a))
			found = strcmp(a, text) == 0;
	}
	freeifaddrs(l);
	return found;
}

/* Has this host an IPv4 address on an interface that is up and not
 * loopback? */
static bool has_outward(void)
{
	struct ifaddrs *l;
	CHECK(getifaddrs(&l) == 0);
	bool found = false;
	for (struct ifaddrs *i = l; i && !found; i = i->ifa_next)
		found = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			(i->ifa_flags & IFF_UP) &&
			!(i->ifa_flags & IFF_LOOPBACK);
	freeifaddrs(l);
	return found;
}

static void every_interface(void)
{
	struct ifaddrs *l;
	CHECK(getifaddrs(&l) == 0);
	int seen = 0;
	for (struct ifaddrs *i = l; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		const struct sockaddr_in *a =
			(const struct sockaddr_in *)(void *)i->ifa_addr;
		char out[CANAL__ADDR_MAX], spec[64], text[INET_ADDRSTRLEN];
		CHECK(inet_ntop(AF_INET, &a->sin_addr, text, sizeof text));
		/* Its name: an address of that interface (the first one). */
		CHECK_EQ(resolve(i->ifa_name, out), 0);
		CHECK(is_local(out));
		/* Its own /32: exactly itself. */
		snprintf(spec, sizeof spec, "%s/32", text);
		CHECK_EQ(resolve(spec, out), 0);
		CHECK(!strcmp(out, text));
		/* Its network: an address of this host inside it. */
		uint32_t m = i->ifa_netmask
			? ntohl(((struct sockaddr_in *)(void *)i->ifa_netmask)->sin_addr.s_addr)
			: ~0u;
		int bits = __builtin_popcount(m);
		struct in_addr net = { htonl(ntohl(a->sin_addr.s_addr) & m) };
		char ntext[INET_ADDRSTRLEN];
		CHECK(inet_ntop(AF_INET, &net, ntext, sizeof ntext));
		snprintf(spec, sizeof spec, "%s/%d", ntext, bits);
		CHECK_EQ(resolve(spec, out), 0);
		CHECK(is_local(out));
		struct in_addr got;
		CHECK(inet_pton(AF_INET, out, &got) == 1);
		CHECK_EQ(ntohl(got.s_addr) & m, ntohl(net.s_addr));
		seen++;
	}
	freeifaddrs(l);
	CHECK(seen >= 1); /* lo at least */
}

/* A one-rank TCP session with bind: open's result. */
static int open_with(const char *dir, const char *bind)
{
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = 0;
	o.size = 2;
	o.dir = dir;
	o.driver = "tcp";
	o.bind = bind;
	o.connect_timeout_ms = 200; /* no rank 1: a good setting times out */
	struct canal_engine *e = NULL;
	int err = canal_engine_open(&o, &e);
	if (!err)
		canal_engine_close(e);
	return err;
}

int main(void)
{
	char out[CANAL__ADDR_MAX];
	CHECK_EQ(resolve("127.0.0.1", out), 0);
	CHECK(!strcmp(out, "127.0.0.1"));
	CHECK_EQ(resolve("192.0.2.7", out), 0); /* an address: as given */
	CHECK(!strcmp(out, "192.0.2.7"));
	CHECK_EQ(resolve("lo", out), 0);
	CHECK(!strcmp(out, "127.0.0.1"));
	CHECK_EQ(resolve("127.0.0.0/8", out), 0);
	CHECK(!strncmp(out, "127.", 4) && is_local(out));
	CHECK_EQ(resolve("0.0.0.0/0", out), 0); /* any address of this host */
	CHECK(is_local(out));
	/* ... one other hosts can dial where there is one (lo, first in
	 * getifaddrs' list, was taken: 127.0.0.1) */
	if (has_outward())
		CHECK(strncmp(out, "127.", 4) != 0);
	else
		printf("no IPv4 interface up but loopback: 0.0.0.0/0 -> %s\n", out);
	every_interface();

	/* Nothing there. */
	CHECK_EQ(resolve("nosuchif0", out), -EADDRNOTAVAIL);
	/* A /32 that is none of this host's addresses (documentation
	 * ranges, the first one this host does not have). */
	const char *absent[] = { "203.0.113.77", "198.51.100.77", "192.0.2.77" };
	size_t k = 0;
	while (k < 3 && is_local(absent[k]))
		k++;
	CHECK(k < 3);
	char spec[64];
	snprintf(spec, sizeof spec, "%s/32", absent[k]);
	CHECK_EQ(resolve(spec, out), -EADDRNOTAVAIL);
	/* Malformed. */
	const char *bad[] = { "", "127.0.0.0/33", "127.0.0.1/8", "127.0.0.0/",
			      "127.0.0.0/-1", "127.0.0.0/8x", "/8", "1.2.3/8",
			      "an-interface-name-too-long",
			      /* no one host's: peers would dial their own */
			      "0.0.0.0", "255.255.255.255", "224.0.0.1",
			      "239.1.2.3", "240.0.0.1" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_EQ(resolve(bad[i], out), -EINVAL);
	char longs[200];
	memset(longs, 'a', sizeof longs - 1);
	longs[sizeof longs - 1] = 0;
	CHECK_EQ(resolve(longs, out), -EINVAL);
	CHECK_EQ(resolve(NULL, out), -EINVAL);

	/* The session: refused settings fail open with their error; a good
	 * one gets as far as waiting for rank 1. */
	char dir[] = "/tmp/canal-test-bind.XXXXXX";
	CHECK(mkdtemp(dir));
	CHECK_EQ(open_with(dir, "nosuchif0"), -EADDRNOTAVAIL);
	CHECK_EQ(open_with(dir, "127.0.0.0/33"), -EINVAL);
	CHECK_EQ(open_with(dir, "0.0.0.0"), -EINVAL);
	CHECK_EQ(open_with(dir, "lo"), -ETIMEDOUT);
	CHECK_EQ(open_with(dir, "127.0.0.0/8,nosuchif0"), -EADDRNOTAVAIL);
	job_rmdir(dir);
	TEST_DONE("test_engine_bind");
}
