/* test_remote_hostile - a peer that does not follow the remote channel
 * protocol: rank 1 writes crafted messages with the engine directly
 * (no hub) on the tags of rank 0's remote channels. Each must close that
 * channel with -EPROTO and a sentence naming the fault, wake its users
 * (-EPIPE, after the elements that were valid), and end its close at
 * once; rank 0's other channels are unaffected. Faults: data beyond the
 * credits granted, data before the hello, a data message of a wrong
 * length, credits for elements never sent, an unknown kind, a message
 * shorter than a header, a message longer than any the end expects, a
 * hello with another element size, a hello of an unknown end, a second
 * hello. On shm and TCP; the job's alarm
 * bounds the time. */
#include "engine_job.h"

#include <canal/remote.h>
#include <endian.h>
#include <stdint.h>

enum { HELLO = 1, DATA = 2, CREDIT = 3, FIN = 4 };

/* A message as the wire defines it (docs/ENGINE.md, "Remote channels"). */
static size_t msg(unsigned char *b, uint32_t kind, uint32_t arg, uint64_t a,
		  uint64_t bb, uint64_t c)
{
	uint32_t k = htole32(kind), g = htole32(arg);
	uint64_t x = htole64(a), y = htole64(bb), z = htole64(c);
	memcpy(b, &k, 4);
	memcpy(b + 4, &g, 4);
	memcpy(b + 8, &x, 8);
	memcpy(b + 16, &y, 8);
	memcpy(b + 24, &z, 8);
	return 32;
}

static void put(struct canal_engine *e, unsigned tag, const void *b, size_t len)
{
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_isend(e, 0, tag, b, len, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
}

/* A data message of n 8-byte elements valued first, first + 1, ... */
static void data(struct canal_engine *e, unsigned tag, uint32_t n, uint64_t first)
{
	unsigned char b[8 + 8 * 8];
	uint32_t k = htole32(DATA), g = htole32(n);
	memcpy(b, &k, 4);
	memcpy(b + 4, &g, 4);
	for (uint32_t i = 0; i < n && i < 8; i++) {
		uint64_t v = first + i;
		memcpy(b + 8 + 8 * i, &v, 8);
	}
	put(e, tag, b, 8 + 8 * (size_t)n);
}

#define NCASES 10

static const char *const expect[NCASES] = {
	"beyond the credits",	 /* tag 1 */
	"data before hello",	 /* tag 2 */
	"wrong length",		 /* tag 3 */
	"never sent",		 /* tag 4 (a sending end) */
	"unknown kind",		 /* tag 5 */
	"shorter than its header", /* tag 6 */
	"longer than",		 /* tag 7 */
	"elt_size",		 /* tag 8 */
	"unknown end",		 /* tag 9 */
	"second hello",		 /* tag 10 */
};

static int attacker(struct canal_engine *e)
{
	unsigned char b[32];
	/* hello of a sending end: elt_size 8, capacity 4 (window 2) */
	for (unsigned tag = 1; tag <= 7; tag++)
		if (tag != 2 && tag != 4)
			put(e, tag, b, msg(b, HELLO, CANAL_REMOTE_SEND, 8, 4, 0));
	/* 1: 2 valid elements, then one beyond the 2 credits */
	data(e, 1, 2, 100);
	data(e, 1, 1, 102);
	/* 2: data first */
	data(e, 2, 1, 0);
	/* 3: says 2 elements, carries 1 */
	{
		unsigned char d[16];
		uint32_t k = htole32(DATA), g = htole32(2);
		memcpy(d, &k, 4);
		memcpy(d + 4, &g, 4);
		memset(d + 8, 0, 8);
		put(e, 3, d, sizeof d);
	}
	/* 4: rank 0 sends here; answer as a receiving end, then give back
	 * credits it never used */
	put(e, 4, b, msg(b, HELLO, CANAL_REMOTE_RECV, 8, 4, 2));
	put(e, 4, b, msg(b, CREDIT, 0, 5, 0, 0));
	/* 5 */
	put(e, 5, b, msg(b, 99, 0, 0, 0, 0));
	/* 6 */
	put(e, 6, b, 4);
	/* 7: 100 KB (a rendezvous: its send is not waited for, the victim
	 * refuses it) */
	unsigned char *big = calloc(1, 100000);
	CHECK(big);
	struct canal_engine_req *bq;
	CHECK_EQ(canal_engine_isend(e, 0, 7, big, 100000, 0, &bq), 0);
	/* 8: a hello of another element size */
	put(e, 8, b, msg(b, HELLO, CANAL_REMOTE_SEND, 16, 4, 0));
	/* 9: a hello of an end that is neither sending nor receiving */
	put(e, 9, b, msg(b, HELLO, 7, 8, 4, 0));
	/* 10: two hellos */
	put(e, 10, b, msg(b, HELLO, CANAL_REMOTE_SEND, 8, 4, 0));
	put(e, 10, b, msg(b, HELLO, CANAL_REMOTE_SEND, 8, 4, 0));
	/* stay until rank 0 has seen everything */
	uint32_t done;
	struct canal_engine_req *q;
	CHECK_EQ(canal_engine_irecv(e, 0, 300, &done, sizeof done, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	canal_engine_test(e, bq, NULL);
	(void)bq; /* freed with the session if still pending */
	return 0;
}

static int victim(struct canal_engine *e)
{
	struct canal_remote_hub *hub;
	struct canal_remote *r[NCASES + 1];
	CHECK_EQ(canal_remote_hub_start(e, &hub), 0);
	for (unsigned tag = 1; tag <= NCASES; tag++)
		CHECK_EQ(canal_remote_open(hub, 1, tag,
					   tag == 4 ? CANAL_REMOTE_SEND : CANAL_REMOTE_RECV,
					   8, 4, &r[tag - 1]), 0);
	/* tag 1: no receive before the fault is seen, so that no credit
	 * goes back and the third element is beyond the window for sure */
	while (canal_remote_error(r[0], NULL, 0) == 0)
		usleep(1000);
	for (unsigned tag = 1; tag <= NCASES; tag++) {
		struct canal_chan *ch = canal_remote_chan(r[tag - 1]);
		uint64_t x = 0;
		int err;
		if (tag == 4) {
			while ((err = canal_send(ch, &x)) == 0)
				;
		} else {
			uint64_t want = 100;
			while ((err = canal_recv(ch, &x)) == 0) {
				CHECK_EQ(tag, 1); /* only tag 1 had valid data */
				CHECK_EQ(x, want);
				want++;
			}
			if (tag == 1)
				CHECK_EQ(want, 102);
		}
		CHECK_EQ(err, -EPIPE);
		char why[200];
		CHECK_EQ(canal_remote_error(r[tag - 1], why, sizeof why), -EPROTO);
		if (!strstr(why, expect[tag - 1])) {
			fprintf(stderr, "tag %u: expected \"%s\" in \"%s\"\n", tag,
				expect[tag - 1], why);
			return 1;
		}
		CHECK(strstr(why, "peer 1") != NULL);
		CHECK_EQ(canal_remote_close(r[tag - 1], 20000000000), -EPROTO);
	}
	/* tag NCASES + 1: opened, the peer never answers: still healthy */
	CHECK_EQ(canal_remote_open(hub, 1, NCASES + 1, CANAL_REMOTE_RECV, 8, 4, &r[NCASES]), 0);
	uint64_t x;
	CHECK_EQ(canal_recv_timeout(canal_remote_chan(r[NCASES]), &x, 1000000), -ETIMEDOUT);
	CHECK_EQ(canal_remote_error(r[NCASES], NULL, 0), 0);
	CHECK_EQ(canal_remote_close(r[NCASES], 0), -ETIMEDOUT);
	uint32_t done = 1;
	struct canal_engine_req *q;
	canal_remote_hub_lock(hub);
	CHECK_EQ(canal_engine_isend(e, 1, 300, &done, sizeof done, 0, &q), 0);
	CHECK_EQ(canal_engine_wait(e, q, NULL), 0);
	canal_remote_hub_unlock(hub);
	CHECK_EQ(canal_remote_hub_stop(hub), 0);
	return 0;
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	return rank == 0 ? victim(e) : attacker(e);
}

int main(void)
{
	job_run_shm_tcp(2, 60, body, NULL);
	TEST_DONE("test_remote_hostile");
}
