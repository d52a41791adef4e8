/* test_engine_netns.c - the engine between "hosts" (issue 16): network
 * namespaces joined by veth pairs whose ends delay every packet and drop
 * some (tc netem delay 5ms loss 1%, or where the kernel has no netem a tbf
 * rate limit and nftables dropping 1% of TCP segments: see netns.h), each
 * rank in a UTS namespace of its own with its own hostname (a different
 * host for the engine, too). Over TCP, and over UCX
 * with UCX_TLS=tcp (UCX would otherwise use shared memory: the namespaces
 * share the machine's memory), each rank binds its namespace's address
 * (given as the interface's name on one side, as the subnet on the
 * other) and the exchange of remote_traffic.h must be exactly once and in order
 * per tag. Root only; skips with the reason when namespaces or hostnames
 * cannot be made. Bounded (60 s per job); the namespaces are deleted
 * whatever happens (the body runs in a child). */
#include "netns.h"
#include "remote_traffic.h"

#include <canal/engine.h>
#include <stdbool.h>

static const char *drv;
static bool have_ucx;

static int rank_main(int rank, const char *dir)
{
	if (netns_enter(rank) != 0) {
		perror("setns");
		return 3;
	}
	if (netns_own_host(rank) != 0) {
		perror("unshare(CLONE_NEWUTS), sethostname");
		return 3;
	}
	/* The two forms one setting can give every host (ifaddr.h): rank 0
	 * names its interface, rank 1 the subnet; each resolves to its own
	 * namespace's address (10.201.1.1 and .2). */
	const char *bind = rank == 0 ? "cv1a" : "10.201.1.0/24";
	if (!strcmp(drv, "ucx")) {
		setenv("UCX_TLS", "tcp", 1);
		setenv("UCX_NET_DEVICES", rank == 0 ? "cv1a" : "cv1b", 1);
	}
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = rank;
	o.size = 2;
	o.dir = dir;
	o.driver = drv;
	o.bind = bind;
	o.connect_timeout_ms = 20000;
	struct canal_engine *e;
	int err = canal_engine_open(&o, &e);
	if (err) {
		fprintf(stderr, "rank %d (%s): open: %s\n", rank, drv, strerror(-err));
		return 3;
	}
	int bad = remote_traffic(e, 12, 0);
	canal_engine_close(e);
	return bad;
}

static int body(void)
{
	if (netns_link(0, 1, 1, true) != 0) {
		fprintf(stderr, "veth/netem setup failed\n");
		return 1;
	}
	/* Both ends up (carrier) before the engine is asked to use them:
	 * UCX lists only devices that are up. */
	netns_wait_up(2, (const char *const[]){ "cv1a", "cv1b" });
	const char *drivers[] = { "tcp", "ucx" };
	for (int k = 0; k < (have_ucx ? 2 : 1); k++) {
		drv = drivers[k];
		char dir[] = "/tmp/canal-test-netns.XXXXXX";
		CHECK(mkdtemp(dir));
		pid_t p[2];
		netns_fork_ranks(p, 2, rank_main, dir, 60);
		int bad = netns_wait_ranks(p, 2, drv);
		sh("rm -rf %s", dir);
		if (bad)
			return 1;
		printf("test_engine_netns: %s across namespaces: ok\n", drv);
		netns_report(0);
		netns_report(1);
	}
	return 0;
}

int main(void)
{
#ifdef __SANITIZE_THREAD__
	/* UCX's memory hooks (libucm) crash under ThreadSanitizer. */
	setenv("UCX_MEM_EVENTS", "no", 0);
#endif
	/* Is UCX built in? Asked in a child: UCX initialised here would
	 * keep this namespace's device list for the ranks forked later. */
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		struct canal_engine_options o;
		canal_engine_options_init(&o);
		o.rank = 0;
		o.size = 1;
		o.driver = "ucx";
		struct canal_engine *e;
		_exit(canal_engine_open(&o, &e) == -ENOTSUP ? 1 : 0);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	have_ucx = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (geteuid() != 0) {
		printf("test_engine_netns: SKIP: needs root (ip netns add)\n");
		return 77;
	}
	/* A hostname per rank (netns_own_host): tried in a child. */
	p = fork();
	CHECK(p >= 0);
	if (p == 0)
		_exit(netns_own_host(0) == 0 ? 0 : 1);
	CHECK(waitpid(p, &st, 0) == p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("test_engine_netns: SKIP: cannot give a process its own "
		       "hostname here (unshare(CLONE_NEWUTS), sethostname)\n");
		return 77;
	}
	netns_reap_stale();
	if (netns_add(0) != 0 || netns_add(1) != 0) {
		netns_cleanup();
		printf("test_engine_netns: SKIP: cannot create network namespaces here (ip netns add failed)\n");
		return 77;
	}
	if (!have_ucx)
		printf("test_engine_netns: canal built without UCX: TCP only\n");
	int rc = netns_run(body, 200);
	CHECK_EQ(rc, 0);
	TEST_DONE("test_engine_netns");
}
