/* test_revapi_lazy_nopidfd - (review of engine.h against the code) a
 * peer that dies before any segment joins it is seen dead on shm even
 * where pidfd_open() cannot be used.
 *
 * engine.h: a peer that dies is seen within 1 s on shm, its pending
 * requests fail with -ECONNRESET. With lazy connection (the default) a
 * gate on which nothing was sent has no segment; its peer's death is
 * watched through a pidfd of the pid in its inbox (transfer/lazy.c). When
 * pidfd_open() failed (a kernel before 5.3, a seccomp profile that denies
 * it, as container runtimes' did; or a peer already gone when its inbox
 * was mapped) the gate was never checked at all: a receive from that
 * peer, or an any-gate one, waited for ever. The shm driver falls back
 * on kill(pid, 0) there, which an exited process that its parent has
 * not reaped yet still passes: a gate connected before its peer died was
 * not seen dead either until the parent reaped it. Here rank 0 denies
 * itself pidfd_open (seccomp, ENOSYS) before it opens; rank 1 opens and
 * exits at once, without sending (case 0) or after sending a message
 * that rank 0 receives (case 1); the test's process reaps rank 1 only
 * after rank 0. Expected: rank 0's (next) receive from rank 1 fails with
 * -ECONNRESET (a pending one is reported after 8 s). Skipped (77) where
 * no seccomp filter can be installed. */
#include "engine_job.h"

#include <canal/base.h>

static int deny_pidfd(void)
{
#ifdef SYS_pidfd_open
	struct sock_filter f[] = {
		SECCOMP_TEST_PROLOGUE,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	return seccomp_test_install(f, sizeof f / sizeof f[0]) &&
	       syscall(SYS_pidfd_open, getpid(), 0) == -1 && errno == ENOSYS;
#else
	return 0;
#endif
}

static int probe_child(int arg)
{
	(void)arg;
	return deny_pidfd() ? 0 : 77;
}

static void before_open(int rank)
{
	if (rank == 0)
		CHECK(deny_pidfd());
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	int sent = *(int *)arg;
	char buf[8];
	struct canal_engine_req *q;
	if (rank == 1) {
		if (sent) {
			CHECK_EQ(canal_engine_isend(e, 0, 3, "last", 5, 0, &q), 0);
			CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		}
		_exit(0); /* dies with its session open */
	}
	if (sent) { /* its last words first */
		CHECK_EQ(canal_engine_irecv(e, 1, 3, buf, sizeof buf, &q), 0);
		CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
		CHECK(!strcmp(buf, "last"));
	}
	CHECK_EQ(canal_engine_irecv(e, 1, 3, buf, sizeof buf, &q), 0);
	uint64_t deadline = canal_now_ns() + 8000000000ull;
	int t;
	while ((t = canal_engine_test(e, q, NULL)) == 0 &&
	       canal_now_ns() < deadline)
		;
	if (t == 0) {
		fprintf(stderr, "rank 0: receive from the dead rank 1 still "
				"pending after 8 s (gate error %d)\n",
			canal_engine_gate_error(e, 1, NULL, 0));
		return 1;
	}
	CHECK_EQ(t, -ECONNRESET);
	return 0;
}

int main(void)
{
	if (!seccomp_test_child("test_revapi_lazy_nopidfd", probe_child, 0))
		return 77;
	/* 0: nothing sent, no segment; 1: a message first (the gate's
	 * segment made: the shm driver's own watch) */
	for (int sent = 0; sent < 2; sent++) {
		struct job j = { 2, "shm", "default", 60, -1, before_open };
		CHECK_EQ(job_run(&j, body, &sent), 0);
	}
	TEST_DONE("test_revapi_lazy_nopidfd");
}
