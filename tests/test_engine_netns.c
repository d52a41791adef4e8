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
 * per tag. Then, over UCX, three hosts on a switch: an any-gate receive
 * matched to a large message whose sender dies mid-transfer must end with
 * -ECONNRESET while the third host's gate stays open (death_rank), with
 * UCX's matching and with the engine's packets. Root only; skips with the
 * reason when namespaces or hostnames cannot be made. Bounded (60 s per
 * job); the namespaces are deleted whatever happens (the body runs in a
 * child). */
#include "netns.h"
#include "remote_traffic.h"

#include <canal/engine.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>

static const char *drv;
static bool have_ucx;

/* A rank's start: into namespace rank as a host of its own, then a
 * session of size ranks over driver (bind may be NULL): 0 and *e, or 3
 * with the reason on stderr. */
static int rank_open(int rank, int size, const char *dir, const char *driver,
		     const char *bind, struct canal_engine **e)
{
	if (netns_enter(rank) != 0) {
		perror("setns");
		return 3;
	}
	if (netns_own_host(rank) != 0) {
		perror("unshare(CLONE_NEWUTS), sethostname");
		return 3;
	}
	struct canal_engine_options o;
	canal_engine_options_init(&o);
	o.rank = rank;
	o.size = size;
	o.dir = dir;
	o.driver = driver;
	o.bind = bind;
	o.connect_timeout_ms = 20000;
	int err = canal_engine_open(&o, e);
	if (err) {
		fprintf(stderr, "rank %d of %d (%s): open: %s\n", rank, size,
			driver, strerror(-err));
		return 3;
	}
	return 0;
}

static int rank_main(int rank, const char *dir)
{
	/* The two forms one setting can give every host (ifaddr.h): rank 0
	 * names its interface, rank 1 the subnet; each resolves to its own
	 * namespace's address (10.201.1.1 and .2). */
	const char *bind = rank == 0 ? "cv1a" : "10.201.1.0/24";
	if (!strcmp(drv, "ucx")) {
		setenv("UCX_TLS", "tcp", 1);
		setenv("UCX_NET_DEVICES", rank == 0 ? "cv1a" : "cv1b", 1);
	}
	struct canal_engine *e;
	int err = rank_open(rank, 2, dir, drv, bind, &e);
	if (err)
		return err;
	int bad = remote_traffic(e, 12, 0);
	canal_engine_close(e);
	return bad;
}

/* The any-gate receive whose sender dies mid-transfer (docs/ENGINE.md,
 * "UCX's own matching"). Three hosts on a switch (netns_star): rank 0
 * posts an any-gate receive of DEATH_LEN bytes; rank 1 sends that much
 * and kills itself once rank 0 has seen the message's first bytes land in
 * its buffer (the rest, 32 MiB through a 20 Mbit/s link, needs seconds
 * more: the transfer is under way when its sender dies); rank 2 stays
 * alive. Rank 0's receive must end with -ECONNRESET within DEATH_BOUND_S
 * (a bound for a hang, not a timing: the gate to rank 2 is open, so it
 * is not "every gate closed" that ends it), gate 1 must close with
 * -ECONNRESET (a receive posted on it too), gate 2 stay open and carry a
 * message each way. The ranks share death_flags (MAP_SHARED, made before
 * the fork): opened (ranks whose session is open: rank 1 dies only once
 * every rank has its endpoints, or a late one's open fails), posted (rank
 * 0's receive is posted, rank 1 may send) and seen (bytes landed, rank 1
 * may die). */
#define DEATH_LEN ((size_t)32 << 20)
#define DEATH_BOUND_S 30
#define DEATH_BYTE 0xa5
struct death_flags {
	atomic_int opened, posted, seen;
};
static struct death_flags *death_flags;

/* Seconds since start (CLOCK_MONOTONIC). */
static double since(uint64_t start_ns)
{
	return (double)(canal_now_ns() - start_ns) / 1e9;
}

/* Some of the message landed: a byte of the sender's among the first
 * MiB (UCX may write its fragments in any order). */
static bool landed(const unsigned char *b)
{
	for (size_t k = 0; k < ((size_t)1 << 20); k += 4096)
		if (b[k] == DEATH_BYTE)
			return true;
	return false;
}

static int death_receiver(struct canal_engine *e)
{
	unsigned char *buf = calloc(1, DEATH_LEN);
	CHECK(buf != NULL);
	struct canal_engine_req *r, *on_gate;
	struct canal_engine_status st;
	char m[8] = "";
	CHECK_EQ(canal_engine_irecv(e, 1, 8, m, sizeof m, &on_gate), 0);
	CHECK_EQ(canal_engine_irecv(e, CANAL_ENGINE_ANY_GATE, 5, buf, DEATH_LEN,
				    &r), 0);
	atomic_store(&death_flags->posted, 1);
	uint64_t start = canal_now_ns();
	int err;
	while ((err = canal_engine_test(e, r, &st)) == 0) {
		if (!atomic_load(&death_flags->seen) && landed(buf))
			atomic_store(&death_flags->seen, 1);
		if (since(start) > DEATH_BOUND_S) {
			fprintf(stderr, "rank 0: any-gate receive still pending "
					"%d s after it started (its sender died: "
					"%s)\n", DEATH_BOUND_S,
				atomic_load(&death_flags->seen)
					? "after its first bytes"
					: "no byte had landed");
			return 1;
		}
	}
	printf("test_engine_netns: the any-gate receive ended: %s after %.1f s\n",
	       strerror(-err), since(start));
	CHECK_EQ(err, -ECONNRESET);
	CHECK(atomic_load(&death_flags->seen));
	/* The gate of the dead peer closes too (its endpoint's error,
	 * seen by the engine's health check), with its receive; the other
	 * gate stays open. */
	while ((err = canal_engine_test(e, on_gate, NULL)) == 0 &&
	       since(start) < 2 * DEATH_BOUND_S)
		;
	CHECK_EQ(err, -ECONNRESET);
	char why[128];
	CHECK_EQ(canal_engine_gate_error(e, 1, why, sizeof why), -ECONNRESET);
	printf("test_engine_netns: gate 1: %s\n", why);
	fflush(stdout); /* the rank ends by _exit */
	CHECK_EQ(canal_engine_gate_error(e, 2, NULL, 0), 0);
	struct canal_engine_req *s, *rr;
	CHECK_EQ(canal_engine_isend(e, 2, 6, "ping", 5, 0, &s), 0);
	CHECK_EQ(canal_engine_irecv(e, 2, 7, m, sizeof m, &rr), 0);
	CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
	CHECK_EQ(canal_engine_wait(e, rr, NULL), 0);
	CHECK_EQ(strcmp(m, "pong"), 0);
	free(buf);
	return 0;
}

static int death_rank(int rank, const char *dir)
{
	setenv("UCX_TLS", "tcp", 1);
	setenv("UCX_NET_DEVICES", "cs2", 1);
	struct canal_engine *e;
	int err = rank_open(rank, 3, dir, "ucx", NULL, &e);
	if (err)
		return err;
	atomic_fetch_add(&death_flags->opened, 1);
	int bad = 0;
	if (rank == 0) {
		bad = death_receiver(e);
	} else if (rank == 1) {
		unsigned char *buf = malloc(DEATH_LEN);
		CHECK(buf != NULL);
		memset(buf, DEATH_BYTE, DEATH_LEN);
		while (atomic_load(&death_flags->opened) < 3 ||
		       !atomic_load(&death_flags->posted))
			canal_engine_progress(e);
		struct canal_engine_req *r;
		CHECK_EQ(canal_engine_isend(e, 0, 5, buf, DEATH_LEN, 0, &r), 0);
		while (canal_engine_test(e, r, NULL) == 0)
			if (atomic_load(&death_flags->seen))
				raise(SIGKILL);
		fprintf(stderr, "rank 1: the transfer ended before the kill "
				"(the link is not shaped?)\n");
		bad = 1;
	} else {
		char m[8] = "";
		struct canal_engine_req *r;
		CHECK_EQ(canal_engine_irecv(e, 0, 6, m, sizeof m, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		CHECK_EQ(strcmp(m, "ping"), 0);
		CHECK_EQ(canal_engine_isend(e, 0, 7, "pong", 5, 0, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	}
	canal_engine_close(e);
	return bad;
}

/* One run of death_rank's case: ranks 0 and 2 must exit 0, rank 1 be
 * killed by its own SIGKILL. When rank 0 fails, the others (rank 2 waits
 * for its message, rank 1 perhaps for its bytes to land) are stopped at
 * once instead of at their time limit. */
static int death_run(const char *native)
{
	setenv("CANAL_ENGINE_UCX_NATIVE", native, 1);
	atomic_store(&death_flags->opened, 0);
	atomic_store(&death_flags->posted, 0);
	atomic_store(&death_flags->seen, 0);
	char dir[] = "/tmp/canal-test-netns.XXXXXX";
	CHECK(mkdtemp(dir));
	pid_t p[3];
	netns_fork_ranks(p, 3, death_rank, dir, 60);
	int st[3], bad = 0;
	for (int r = 0; r < 3; r++) {
		CHECK(waitpid(p[r], &st[r], 0) == p[r]);
		if (r == 0 && !(WIFEXITED(st[0]) && WEXITSTATUS(st[0]) == 0)) {
			kill(p[1], SIGKILL);
			kill(p[2], SIGKILL);
		}
	}
	for (int r = 0; r < 3; r++) {
		bool ok = r == 1 ? WIFSIGNALED(st[r]) && WTERMSIG(st[r]) == SIGKILL
				 : WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0;
		if (!ok) {
			fprintf(stderr, "any-gate receive, sender dies (native "
					"%s): rank %d: status %d\n", native, r,
				st[r]);
			bad = 1;
		}
	}
	sh("rm -rf %s", dir);
	unsetenv("CANAL_ENGINE_UCX_NATIVE");
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
	if (!have_ucx)
		return 0;
	/* Three hosts: namespaces 0-2 on a switch in namespace 3. */
	if (netns_star(3, 3, 2, true)) {
		fprintf(stderr, "switch setup failed\n");
		return 1;
	}
	netns_wait_up(3, (const char *const[]){ "cs2", "cs2", "cs2" });
	death_flags = mmap(NULL, sizeof *death_flags, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(death_flags != MAP_FAILED);
	const char *natives[] = { "1", "0" };
	for (int k = 0; k < 2; k++) {
		if (death_run(natives[k]))
			return 1;
		printf("test_engine_netns: ucx (%s), any-gate receive from a "
		       "sender that died mid-transfer: -ECONNRESET, the other "
		       "gate open: ok\n",
		       k == 0 ? "UCX's matching" : "packets");
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
	/* Made here, not in the body's child: netns_run deletes the ones
	 * this process knows of. */
	if (netns_add(0) != 0 || netns_add(1) != 0 ||
	    (have_ucx && (netns_add(2) != 0 || netns_add(3) != 0))) {
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
