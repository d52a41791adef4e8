/* test_remote_netns.c - remote channels between two "hosts" (issue 16):
 * two network namespaces joined by a veth pair that delays and drops
 * packets (netns.h: tc netem delay 5ms loss 1%, or a tbf rate limit and
 * nftables drops where the kernel has no netem), the engine over TCP with
 * each rank bound to its namespace's address. The channel stress
 * invariants of remote_stress.h hold across them: a remote channel each
 * way, 4 producers and 2 consumers per direction, exactly once,
 * per-producer FIFO, close midway. Root only; skips with the reason when
 * namespaces cannot be made. Bounded (90 s per rank); the namespaces are
 * deleted whatever happens (the body runs in a child). */
#include "netns.h"
#include "remote_stress.h"

#include <canal/engine.h>

static int rank_main(int rank, const char *dir)
{
	if (netns_enter(rank) != 0) {
		perror("setns");
		return 3;
	}
	char bind[32];
	snprintf(bind, sizeof bind, "10.201.1.%d", rank + 1);
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = rank;
	o.size = 2;
	o.dir = dir;
	o.driver = "tcp";
	o.bind = bind;
	o.connect_timeout_ms = 20000;
	struct canal_engine *e;
	int err = canal_engine_open(&o, &e);
	if (err) {
		fprintf(stderr, "rank %d: open: %s\n", rank, strerror(-err));
		return 3;
	}
	struct canal_remote_hub *hub;
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	int bad = remote_stress(hub, rank, 1500, 64);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	canal_engine_close(e);
	return bad;
}

static int body(void)
{
	if (netns_link(0, 1, 1, true) != 0) {
		fprintf(stderr, "veth/netem setup failed\n");
		return 1;
	}
	char dir[] = "/tmp/canal-test-remote-netns.XXXXXX";
	CHECK(mkdtemp(dir));
	pid_t p[2];
	netns_fork_ranks(p, 2, rank_main, dir, 90);
	int bad = netns_wait_ranks(p, 2, "remote channels");
	sh("rm -rf %s", dir);
	if (bad)
		return 1;
	printf("test_remote_netns: remote channels across namespaces: ok\n");
	netns_report(0);
	netns_report(1);
	return 0;
}

int main(void)
{
	if (geteuid() != 0) {
		printf("test_remote_netns: SKIP: needs root (ip netns add)\n");
		return 77;
	}
	netns_reap_stale();
	if (netns_add(0) != 0 || netns_add(1) != 0) {
		netns_cleanup();
		printf("test_remote_netns: SKIP: cannot create network namespaces here (ip netns add failed)\n");
		return 77;
	}
	int rc = netns_run(body, 200);
	CHECK_EQ(rc, 0);
	TEST_DONE("test_remote_netns");
}
