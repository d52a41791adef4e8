/* netns.h - "hosts" for the issue-16 tests: network namespaces joined by
 * veth pairs, made with ip(8) as root, with addresses in 10.201.x.0/24 that
 * exist only inside the namespaces the test creates (and deletes: the
 * caller runs its body in a child and calls netns_cleanup() whatever the
 * child did; stale namespaces of dead test processes are removed at start).
 * All traffic stays inside them. */
#ifndef CANAL_TEST_NETNS_H
#define CANAL_TEST_NETNS_H

#define _GNU_SOURCE
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define NETNS_MAX 4
static char netns_names[NETNS_MAX][64];
static int netns_count;

static inline int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Remove namespaces left by test processes that died (name canal-t-PID-*). */
static inline void netns_reap_stale(void)
{
	DIR *d = opendir("/var/run/netns");
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		int pid;
		if (sscanf(de->d_name, "canal-t-%d-", &pid) == 1 &&
		    kill(pid, 0) < 0 && errno == ESRCH)
			sh("ip netns del %s 2>/dev/null", de->d_name);
	}
	closedir(d);
}

static inline void netns_cleanup(void)
{
	for (int i = 0; i < netns_count; i++)
		sh("ip netns del %s 2>/dev/null", netns_names[i]);
	netns_count = 0;
}

/* Make namespace i (name canal-t-<pid>-<i>, loopback up): 0, or -1 when
 * namespaces cannot be made here (not root, no ip, a container without
 * the capability): the caller skips. */
static inline int netns_add(int i)
{
	snprintf(netns_names[i], sizeof netns_names[i], "canal-t-%d-%d",
		 (int)getpid(), i);
	if (sh("ip netns add %s 2>/dev/null", netns_names[i]) != 0)
		return -1;
	netns_count = i + 1 > netns_count ? i + 1 : netns_count;
	return sh("ip -n %s link set lo up", netns_names[i]) == 0 ? 0 : -1;
}

/* Delay and loss on the veth end dev in namespace ns: tc netem "delay 5ms
 * loss 1%" where the kernel has sch_netem; otherwise (a kernel without
 * netem, like this project's test VMs) a tbf rate limit of 20 Mbit/s (its
 * queue delays bulk traffic) and an nftables rule dropping 1% of the TCP
 * segments at random. Says on stdout which was applied; -1 when neither. */
static inline int netns_impair(const char *ns, const char *dev)
{
	if (sh("ip netns exec %s tc qdisc add dev %s root netem delay 5ms loss 1%% 2>/dev/null",
	       ns, dev) == 0) {
		printf("netns: %s/%s: netem delay 5ms loss 1%%\n", ns, dev);
		return 0;
	}
	if (sh("ip netns exec %s tc qdisc add dev %s root tbf rate 20mbit burst 32kb latency 100ms",
	       ns, dev) != 0)
		return -1;
	int nft = sh("ip netns exec %s nft add table inet canal 2>/dev/null", ns) == 0 &&
		  sh("ip netns exec %s nft add chain inet canal out "
		     "'{ type filter hook output priority 0; }'", ns) == 0 &&
		  sh("ip netns exec %s nft add rule inet canal out oifname %s "
		     "meta l4proto tcp numgen random mod 100 '<' 1 counter drop", ns, dev) == 0;
	printf("netns: %s/%s: no netem in this kernel: tbf 20mbit%s\n", ns, dev,
	       nft ? " + nftables drops 1% of TCP segments" : " (no nft: no loss)");
	return 0;
}

/* Print what the impairment of namespace i dropped (nftables counter). */
static inline void netns_report(int i)
{
	fflush(NULL);
	sh("ip netns exec %s nft list chain inet canal out 2>/dev/null | "
	   "grep -o 'counter packets [0-9]*' | sed 's/^/netns: %s: dropped /'",
	   netns_names[i], netns_names[i]);
}

/* A veth pair between namespaces a and b, named cv<net>a / cv<net>b, with
 * 10.201.<net>.1 on a's side and .2 on b's, up; impaired (delay, loss) on
 * both ends when impair. */
static inline int netns_link(int a, int b, int net, bool impair)
{
	char va[16], vb[16];
	snprintf(va, sizeof va, "cv%da", net);
	snprintf(vb, sizeof vb, "cv%db", net);
	if (sh("ip -n %s link add %s type veth peer name %s netns %s",
	       netns_names[a], va, vb, netns_names[b]) ||
	    sh("ip -n %s addr add 10.201.%d.1/24 dev %s", netns_names[a], net, va) ||
	    sh("ip -n %s addr add 10.201.%d.2/24 dev %s", netns_names[b], net, vb) ||
	    sh("ip -n %s link set %s up", netns_names[a], va) ||
	    sh("ip -n %s link set %s up", netns_names[b], vb))
		return -1;
	if (impair && (netns_impair(netns_names[a], va) ||
		       netns_impair(netns_names[b], vb)))
		return -1;
	return 0;
}

/* A star: namespaces 0..n-1 ("hosts") joined by a bridge in namespace sw
 * ("the switch"), as test_launch_hosts.sh does for canal-launch -H. Host
 * i's end is called cs<net> in every host (one UCX_NET_DEVICES for all)
 * and has 10.201.<net>.<i+1>; impaired (delay, loss) on the hosts' ends
 * when impair, so every host's sending is shaped. */
static inline int netns_star(int sw, int n, int net, bool impair)
{
	char dev[16];
	snprintf(dev, sizeof dev, "cs%d", net);
	if (sh("ip -n %s link add br%d type bridge", netns_names[sw], net) ||
	    sh("ip -n %s link set br%d up", netns_names[sw], net))
		return -1;
	for (int i = 0; i < n; i++) {
		if (sh("ip -n %s link add %s type veth peer name cs%dp%d netns %s",
		       netns_names[i], dev, net, i, netns_names[sw]) ||
		    sh("ip -n %s link set cs%dp%d master br%d", netns_names[sw],
		       net, i, net) ||
		    sh("ip -n %s link set cs%dp%d up", netns_names[sw], net, i) ||
		    sh("ip -n %s addr add 10.201.%d.%d/24 dev %s", netns_names[i],
		       net, i + 1, dev) ||
		    sh("ip -n %s link set %s up", netns_names[i], dev))
			return -1;
		if (impair && netns_impair(netns_names[i], dev))
			return -1;
	}
	return 0;
}

/* Wait until dev[i] is up (carrier) in namespace i, for i in 0..n-1, at
 * most 5 s: UCX lists only the devices that are up. */
static inline void netns_wait_up(int n, const char *const *dev)
{
	for (int k = 0; k < 500; k++) {
		int up = 0;
		for (int i = 0; i < n; i++)
			up += sh("ip -n %s link show %s | grep -q 'state UP'",
				 netns_names[i], dev[i]) == 0;
		if (up == n)
			return;
		usleep(10000);
	}
}

/* Make the calling process a host of its own: a UTS namespace with the
 * hostname canal-host-<i>. The ranks of these tests share the machine's
 * pid and memory, and by default its hostname, which makes the engine
 * take them for one host (UCX's driver then watches the peers' pids and
 * keeps UCX's cheaper error mode). 0, or -1 (errno) when the kernel
 * refuses. */
static inline int netns_own_host(int i)
{
	char name[32];
	snprintf(name, sizeof name, "canal-host-%d", i);
	if (unshare(CLONE_NEWUTS) != 0)
		return -1;
	return sethostname(name, strlen(name));
}

/* Move the calling process (single-threaded) into namespace i, with a
 * private mount namespace whose /sys shows namespace i's devices (as
 * `ip netns exec` does: UCX finds its network devices in /sys). */
static inline int netns_enter(int i)
{
	char p[128];
	snprintf(p, sizeof p, "/var/run/netns/%s", netns_names[i]);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = setns(fd, CLONE_NEWNET);
	close(fd);
	if (r == 0 && unshare(CLONE_NEWNS) == 0 &&
	    mount("", "/", NULL, MS_SLAVE | MS_REC, NULL) == 0) {
		umount2("/sys", MNT_DETACH);
		mount("sysfs", "/sys", "sysfs", 0, NULL);
	}
	return r;
}

/* Fork ranks 0..n-1 (n <= 8), each running rank_main(rank, dir) bounded
 * by limit_s seconds; their pids into p[]. */
static inline void netns_fork_ranks(pid_t *p, int n,
				    int (*rank_main)(int rank, const char *dir),
				    const char *dir, unsigned limit_s)
{
	fflush(NULL);
	for (int r = 0; r < n; r++) {
		p[r] = fork();
		CHECK(p[r] >= 0);
		if (p[r] == 0) {
			alarm(limit_s);
			_exit(rank_main(r, dir));
		}
	}
}

/* Wait for the ranks of netns_fork_ranks: 0 when every one exited 0;
 * otherwise says which did not (label names the run). */
static inline int netns_wait_ranks(const pid_t *p, int n, const char *label)
{
	int bad = 0;
	for (int r = 0; r < n; r++) {
		int st;
		CHECK(waitpid(p[r], &st, 0) == p[r]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "%s: rank %d: status %d\n", label, r, st);
			bad = 1;
		}
	}
	return bad;
}

/* Run body in a child bounded by limit_s seconds, then delete the
 * namespaces whatever happened: the child's exit status (0 = pass). */
static inline int netns_run(int (*body)(void), unsigned limit_s)
{
	fflush(NULL);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		setpgid(0, 0);
		alarm(limit_s);
		int rc = body();
		fflush(NULL);
		_exit(rc);
	}
	setpgid(p, p);
	int st = 0;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	kill(-p, SIGKILL); /* what the body started (its ranks) */
	netns_cleanup();
	if (WIFSIGNALED(st))
		fprintf(stderr, "netns test body: signal %d%s\n", WTERMSIG(st),
			WTERMSIG(st) == SIGALRM ? " (time limit)" : "");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

#endif
