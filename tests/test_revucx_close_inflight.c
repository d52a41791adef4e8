/* test_revucx_close_inflight - (review) the UCX driver's close waits up
 * to 1 s for each send still in a slot, then freed the slot's buffer
 * while UCX kept the request: a peer that stalled past that second and
 * then resumed had UCX read (its rendezvous, or the rest of an eager
 * send) the freed memory while the worker lived on (the session's other
 * gates, closed after this one, or still open). Expected: the buffer
 * lives as long as UCX may read it (until the request completes or the
 * worker is destroyed), so the peer gets the packet as sent.
 *
 * Three ranks over the engine's packets (CANAL_ENGINE_UCX_NATIVE=0).
 * Rank 1 parks (no progress) once connected; rank 0 sends it one 64 KiB
 * packet through gate 1's driver (a slot: UCX's rendezvous, pending
 * while rank 1 does not progress), closes that driver alone (the
 * session stays open with gate 2: the worker lives), lets rank 1 go and
 * progresses the worker through gate 2's driver until rank 1 says
 * whether the packet it took is the one sent. Freed memory is made to
 * differ from the packet (glibc's M_PERTURB; under ASan its free fill),
 * so a read of the freed buffer delivers other bytes. Rank 0 then ends
 * without closing its session (gate 1 has no driver). Ordered by pipes,
 * no timing; the ranks' alarm is the hang guard. */
#define _GNU_SOURCE
#include "ucx_close_job.h"

#include <malloc.h>
#include <poll.h>


#ifdef __SANITIZE_ADDRESS__
/* ASan leaves freed memory as it was: fill it, as M_PERTURB does. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "max_free_fill_size=1048576:free_fill_byte=90";
}
#endif

#define PKT ((size_t)64 << 10) /* above UCX_IMM_MAX: sent from a slot */

static int parked[2], go[2], verdict[2], done[2];

/* Rank 0 and peer exchange a message each way (endpoints connected both
 * ways), and both drivers have handed everything to UCX. */
static void handshake(struct canal_engine *e, int rank, int peer)
{
	struct canal_engine_req *r;
	char m[8] = "";
	if (rank != 0) {
		CHECK_EQ(canal_engine_irecv(e, 0, 2, m, sizeof m, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		CHECK_EQ(canal_engine_isend(e, 0, 2, "ready", 6, 0, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		until_handed_over(e, 0);
		return;
	}
	CHECK_EQ(canal_engine_isend(e, peer, 2, "go", 3, 0, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	CHECK_EQ(canal_engine_irecv(e, peer, 2, m, sizeof m, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	CHECK_EQ(strcmp(m, "ready"), 0);
	until_handed_over(e, peer);
}

static int rank0(struct canal_engine *e)
{
	handshake(e, 0, 1);
	handshake(e, 0, 2);
	CHECK_EQ(get_byte(parked[0]), 'p');
	struct canal__driver *d1 = e->gates[1].drv, *d2 = e->gates[2].drv;
	CHECK_EQ(strcmp(d1->ops->name, "ucx"), 0);
	unsigned char *b = malloc(PKT);
	CHECK(b != NULL);
	for (size_t i = 0; i < PKT; i++)
		b[i] = pattern(i);
	struct iovec v = { b, PKT };
	mallopt(M_PERTURB, 0x5a); /* freed memory is overwritten */
	CHECK_EQ(d1->ops->send(d1, &v, 1, PKT), 0);
	free(b);
	/* In a slot, pending: rank 1 does not progress. */
	CHECK(!d1->ops->idle(d1));
	/* Gate 1's driver alone: its close gives up on the send after its
	 * limit; the worker lives on for gate 2. */
	d1->ops->close(d1);
	put_byte(go[1], 'g');
	struct pollfd p = { .fd = verdict[0], .events = POLLIN };
	while (poll(&p, 1, 1) == 0) {
		const unsigned char *pkt;
		size_t len;
		if (d2->ops->recv(d2, &pkt, &len) == 1)
			d2->ops->release(d2);
	}
	char c = get_byte(verdict[0]);
	put_byte(done[1], 'd');
	if (c != 'y')
		fprintf(stderr, "rank 1 took %s\n",
			c == 'n' ? "other bytes than were sent (the freed buffer)"
				 : "an error instead of the packet");
	/* Gate 1 has no driver now: the session is not closed (its close
	 * would use it), the process ends. */
	fflush(NULL);
	_exit(c == 'y' ? 0 : 1);
}

static int rank1(struct canal_engine *e)
{
	handshake(e, 1, 0);
	put_byte(parked[1], 'p');
	CHECK_EQ(get_byte(go[0]), 'g');
	struct canal__driver *d = e->gates[0].drv;
	char c = 0;
	while (!c) {
		const unsigned char *pkt;
		size_t len;
		int r = d->ops->recv(d, &pkt, &len);
		if (r < 0) {
			c = 'e';
		} else if (r == 1) {
			if (len == PKT) {
				c = 'y';
				for (size_t i = 0; i < PKT && c == 'y'; i++)
					if (pkt[i] != pattern(i))
						c = 'n';
			}
			d->ops->release(d);
		}
	}
	put_byte(verdict[1], c);
	return 0;
}

static int job(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size, (void)arg;
	if (strcmp(canal_engine_driver(e), "ucx") != 0)
		return 5;
	if (rank == 0)
		return rank0(e);
	if (rank == 1)
		return rank1(e);
	handshake(e, 2, 0);
	CHECK_EQ(get_byte(done[0]), 'd');
	return 0;
}

int main(void)
{
	if (!job_have_ucx()) {
		printf("test_revucx_close_inflight: SKIP: no UCX\n");
		return 0;
	}
	setenv("CANAL_ENGINE_UCX_NATIVE", "0", 1);
	CHECK_EQ(pipe(parked), 0);
	CHECK_EQ(pipe(go), 0);
	CHECK_EQ(pipe(verdict), 0);
	CHECK_EQ(pipe(done), 0);
	struct job j = { .n = 3, .driver = "ucx", .strategy = "default",
			 .timeout_s = 60, .killed_rank = -1 };
	CHECK_EQ(job_run(&j, job, NULL), 0);
	TEST_DONE("test_revucx_close_inflight");
}
