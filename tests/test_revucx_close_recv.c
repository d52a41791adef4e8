/* test_revucx_close_recv - (review) the UCX driver's close cancels the
 * receive it posted ahead into its input buffer and waits up to 1 s for
 * it, then freed that buffer whatever became of the receive: one already
 * matched to a stalled peer's rendezvous cannot be cancelled, and once
 * the peer resumed while the worker lived on (the session's other gates)
 * UCX wrote the packet into the freed memory, by then another
 * allocation's. Expected: the buffer lives as long as UCX may write it
 * (until the receive completes or the worker is destroyed), so memory
 * allocated after the close keeps what was put in it.
 *
 * Three ranks over the engine's packets (CANAL_ENGINE_UCX_NATIVE=0), with
 * UCX's rendezvous by put (UCX_RNDV_SCHEME=put_zcopy: the sender writes
 * the data into the receiver's buffer once it has the receiver's answer,
 * so the receive stays under way while the sender does not progress;
 * by get, cma's read completes it without the sender). Once rank 0 has
 * nothing more to do with rank 1 (a first rendezvous from rank 1 done:
 * handshake()), rank 1 sends it one 64 KiB packet (above the rendezvous
 * threshold) and parks (no progress); rank 0's
 * gate-1 driver matches it to its posted receive (which must still be
 * under way: else this test proves nothing), then that driver alone is
 * closed (the session stays open with gate 2: the worker lives). Rank 0
 * then allocates a buffer of the input buffer's size (1 MiB, from the
 * heap: M_MMAP_THRESHOLD above it, so the freed input buffer is reused
 * rather than unmapped), fills it, lets rank 1 go and progresses the
 * worker through gate 2's driver until rank 1's send has ended; the
 * buffer must be as filled and the send must have succeeded. Under ASan
 * (no quarantine) the freed 1 MiB is unmapped: rank 1's write then
 * fails. Rank 0 ends without closing its session (gate 1 has no
 * driver). Ordered by pipes, no timing; the ranks' alarm is the hang
 * guard.
 *
 * With CANAL_TEST_CLOSE=session (test_revucx_close_recv_session), rank 0
 * closes its whole session instead of gate 1's driver: the worker is
 * destroyed, and the input buffer was then freed to the heap, where the
 * next 1 MiB allocation took it, and rank 1's UCX, resuming, wrote the
 * packet into it through the kernel (cma's process_vm_writev needs
 * nothing of rank 0's UCX). Expected: the memory allocated after the
 * close keeps what was put in it; rank 1's send may fail (its write
 * finds no memory there) or not, but must end. */
#define _GNU_SOURCE
#include "ucx_close_job.h"

#include <malloc.h>
#include <poll.h>


#ifdef __SANITIZE_ADDRESS__
/* ASan keeps freed memory in quarantine, mapped: without it the freed
 * input buffer (1 MiB, its secondary allocator) is unmapped at once. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=0";
}
#endif

#define PKT ((size_t)64 << 10)  /* above UCX's rendezvous threshold */
#define IN ((size_t)1 << 20)    /* the driver's input buffer (UCX_MAX_PACKET) */

static int ready[2], parked[2], go[2], verdict[2], done[2];

static unsigned char big[PKT];

static bool session_mode(void)
{
	const char *m = getenv("CANAL_TEST_CLOSE");
	return m && strcmp(m, "session") == 0;
}

/* Rank 0 and peer exchange a message each way (endpoints connected both
 * ways), then the peer sends a large one (a bulk transfer: UCX's
 * rendezvous. Seen with UCX 1.13 on shared memory: an endpoint's first
 * rendezvous request goes out only once the receiver has answered an
 * exchange of UCX's own, which a parked sender never sees), and both
 * drivers have handed everything to UCX. */
static void handshake(struct canal_engine *e, int rank, int peer)
{
	struct canal_engine_req *r;
	char m[8] = "";
	if (rank != 0) {
		CHECK_EQ(canal_engine_irecv(e, 0, 2, m, sizeof m, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		CHECK_EQ(canal_engine_isend(e, 0, 2, "ready", 6, 0, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		CHECK_EQ(canal_engine_isend(e, 0, 3, big, sizeof big, 0, &r), 0);
		CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		until_handed_over(e, 0);
		return;
	}
	CHECK_EQ(canal_engine_isend(e, peer, 2, "go", 3, 0, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	CHECK_EQ(canal_engine_irecv(e, peer, 2, m, sizeof m, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	CHECK_EQ(strcmp(m, "ready"), 0);
	CHECK_EQ(canal_engine_irecv(e, peer, 3, big, sizeof big, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	until_handed_over(e, peer);
}

static int rank0(struct canal_engine *e)
{
	handshake(e, 0, 1);
	handshake(e, 0, 2);
	/* From here rank 0 progresses nothing until rank 1 has sent. */
	put_byte(ready[1], 'r');
	CHECK_EQ(get_byte(parked[0]), 'p');
	struct canal__driver *d1 = e->gates[1].drv, *d2 = e->gates[2].drv;
	CHECK_EQ(strcmp(d1->ops->name, "ucx"), 0);
	/* The packet's rendezvous meets the receive posted into gate 1's
	 * input buffer; its data waits for rank 1. */
	for (int i = 0; i < 1000; i++) {
		const unsigned char *pkt;
		size_t len;
		int r = d1->ops->recv(d1, &pkt, &len);
		if (r != 0) {
			fprintf(stderr, "rank 0: the receive ended (%d) while "
					"rank 1 is parked: not a rendezvous by "
					"put (UCX_RNDV_SCHEME)\n", r);
			_exit(4);
		}
	}
	/* Gate 1's driver alone: its close gives up on the receive after
	 * its limit; the worker lives on for gate 2. Or the whole session
	 * (session mode): the worker goes too. */
	if (session_mode()) {
		int rc = canal_engine_close(e);
		CHECK(rc == 0 || rc == -EBUSY);
	} else {
		d1->ops->close(d1);
	}
	unsigned char *b = malloc(IN);
	CHECK(b != NULL);
	for (size_t i = 0; i < IN; i++)
		b[i] = pattern(i);
	put_byte(go[1], 'g');
	struct pollfd p = { .fd = verdict[0], .events = POLLIN };
	while (!session_mode() && poll(&p, 1, 1) == 0) {
		const unsigned char *pkt;
		size_t len;
		if (d2->ops->recv(d2, &pkt, &len) == 1)
			d2->ops->release(d2);
	}
	char c = get_byte(verdict[0]);
	put_byte(done[1], 'd');
	size_t bad = 0;
	for (size_t i = 0; i < IN; i++)
		bad += b[i] != pattern(i);
	/* With the worker gone, rank 1's write may find no memory. */
	bool ended_ok = c == 'y' || (session_mode() && c == 'e');
	if (!ended_ok)
		fprintf(stderr, "rank 1's send %s\n",
			c == 'e' ? "failed (its data written to freed memory)"
				 : "ended with a packet taken from rank 0");
	if (bad)
		fprintf(stderr, "%zu bytes of memory allocated after the "
				"close were overwritten (the freed input "
				"buffer)\n", bad);
	/* Gate 1 has no driver now (or the session is closed): the
	 * process ends. */
	fflush(NULL);
	_exit(ended_ok && bad == 0 ? 0 : 1);
}

static int rank1(struct canal_engine *e)
{
	handshake(e, 1, 0);
	CHECK_EQ(get_byte(ready[0]), 'r');
	struct canal__driver *d = e->gates[0].drv;
	unsigned char *b = malloc(PKT);
	CHECK(b != NULL);
	for (size_t i = 0; i < PKT; i++)
		b[i] = (unsigned char)~pattern(i);
	struct iovec v = { b, PKT };
	CHECK_EQ(d->ops->send(d, &v, 1, PKT), 0);
	free(b);
	/* The rendezvous's request is out (rank 0 does not progress: no
	 * answer can come back yet), the data waits. */
	for (int i = 0; i < 1000; i++)
		CHECK_EQ(d->ops->flush(d), 0);
	put_byte(parked[1], 'p');
	CHECK_EQ(get_byte(go[0]), 'g');
	while (!d->ops->idle(d))
		;
	/* Ended: sent, or failed (recv() reports a broken link). */
	const unsigned char *pkt;
	size_t len;
	int r = d->ops->recv(d, &pkt, &len);
	put_byte(verdict[1], r == 0 ? 'y' : r < 0 ? 'e' : 'x');
	return 0;
}

/* The input buffers come from the heap, where a freed one is reused by
 * the next allocation of its size. */
static void before_open(int rank)
{
	if (rank == 0) {
		mallopt(M_MMAP_THRESHOLD, 64 << 20);
		mallopt(M_TRIM_THRESHOLD, 256 << 20);
	}
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
		printf("test_revucx_close_recv: SKIP: no UCX\n");
		return 0;
	}
	setenv("CANAL_ENGINE_UCX_NATIVE", "0", 1);
	setenv("UCX_RNDV_SCHEME", "put_zcopy", 1);
	CHECK_EQ(pipe(ready), 0);
	CHECK_EQ(pipe(parked), 0);
	CHECK_EQ(pipe(go), 0);
	CHECK_EQ(pipe(verdict), 0);
	CHECK_EQ(pipe(done), 0);
	struct job j = { .n = 3, .driver = "ucx", .strategy = "default",
			 .timeout_s = 60, .killed_rank = -1,
			 .before_open = before_open };
	CHECK_EQ(job_run(&j, job, NULL), 0);
	TEST_DONE("test_revucx_close_recv");
}
