/* test_engine_stress - many messages between 4 processes in random order:
 * each process sends to each peer a random sequence (tags 0..7, sizes from
 * 0 B to 200 KB, some express) that the receiver can regenerate from a
 * shared seed; receivers post their receives interleaving the flows at
 * random, keep up to 64 outstanding, and complete them with wait or test in
 * random order. Checks exactly-once and per-(gate, tag) order through the
 * content of every message. Both drivers, both strategies. CANAL_STRESS=1
 * (make stress) sends 10 times more. */
#include "engine_job.h"

#include "../src/engine/internal.h"

#define PEERS_MAX 4
#define TAGS 8
#define OUTSTANDING 64

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Message k from src to dst: its tag and size. */
static void msg_of(int src, int dst, int k, unsigned *tag, size_t *size)
{
	uint64_t h = mix(((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^ (uint64_t)k);
	*tag = (unsigned)(h % TAGS);
	int c = (int)((h >> 8) % 100);
	*size = c < 2 ? 0 : c < 85 ? (h >> 16) % 512 : c < 95 ? 1000 + (h >> 16) % 30000
								: 50000 + (h >> 16) % 150000;
}

static unsigned char byte_of(int src, unsigned tag, int k, size_t i)
{
	return (unsigned char)(mix(((uint64_t)src << 40) ^ ((uint64_t)tag << 32) ^ (uint64_t)k) + i);
}

struct slot {
	struct canal_engine_req *r;
	unsigned char *buf;
	int src, k;
	unsigned tag;
	size_t size;
	bool send;
};

static int complete(struct canal_engine *e, struct slot *s, bool wait)
{
	struct canal_engine_status st;
	int rc = wait ? canal_engine_wait(e, s->r, &st) : canal_engine_test(e, s->r, &st);
	if (rc == 0 && !wait)
		return 0; /* pending */
	if (rc < 0) {
		char why[160] = "";
		canal_engine_gate_error(e, s->send ? s->src : s->src, why, sizeof why);
		fprintf(stderr, "rank %d: %s of message %d (tag %u, %zu B) with %d: %s; gate: %s\n",
			canal_engine_rank(e), s->send ? "send" : "receive", s->k, s->tag,
			s->size, s->src, strerror(-rc), why);
		abort();
	}
	if (!s->send) {
		CHECK_EQ(st.gate, s->src);
		CHECK_EQ(st.tag, s->tag);
		CHECK_EQ(st.len, s->size);
		for (size_t i = 0; i < s->size; i++)
			if (s->buf[i] != byte_of(s->src, s->tag, s->k, i)) {
				fprintf(stderr, "message %d from %d tag %u: byte %zu wrong\n",
					s->k, s->src, s->tag, i);
				abort();
			}
	}
	free(s->buf);
	s->r = NULL;
	return 1;
}

static struct canal_engine *dbg_e;
static int *dbg_sent, *dbg_posted, *dbg_done, *dbg_out;

static size_t list_len(struct canal__list *l)
{
	size_t n = 0;
	for (struct canal__list *x = l->next; x != l; x = x->next)
		n++;
	return n;
}

/* On the job's alarm: where this rank stands (which gate waits on what). */
static void dump(int sig)
{
	(void)sig;
	struct canal_engine *e = dbg_e;
	fprintf(stderr, "rank %d: done %d, outstanding recv %d send %d\n", e->rank,
		*dbg_done, dbg_out[0], dbg_out[1]);
	for (int g = 0; g < e->size; g++) {
		if (g == e->rank)
			continue;
		struct canal__gate *gt = &e->gates[g];
		fprintf(stderr, "  gate %d: sent %d posted %d credits %lld owed %llu unexpected %u (%llu B) posted %u queues %zu+%zu err %d\n",
			g, dbg_sent[g], dbg_posted[g], (long long)gt->credits,
			(unsigned long long)gt->credit_owed, gt->unexpected.n,
			(unsigned long long)gt->unexpected_bytes, gt->posted.n,
			list_len(&gt->express), list_len(&gt->normal), gt->error);
	}
	_exit(14);
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	int n = *(int *)arg;
	uint64_t rng = mix((uint64_t)rank + 77);
	int sent[PEERS_MAX] = { 0 }, posted[PEERS_MAX] = { 0 };
	struct slot slots[OUTSTANDING] = { 0 };
	int total = 2 * n * (size - 1), done = 0;
	(void)total;
	/* Per peer and kind, a fixed share of the slots, and only
	 * non-blocking completion (test): with shared slots, rank 0's could
	 * all hold receives from 1 while 1's all held rendezvous sends to 2,
	 * and so on round the ring (seen: a cycle of 4). With a share per
	 * peer, the oldest unfinished message always finds its receive. */
	int outstanding[2] = { 0, 0 }; /* receives, sends */
	int per_peer[2][PEERS_MAX] = { { 0 } };
	int share = OUTSTANDING / 2 / (size - 1);
	dbg_e = e;
	dbg_sent = sent;
	dbg_posted = posted;
	dbg_done = &done;
	dbg_out = outstanding;
	signal(SIGALRM, dump);
	while (done < total) {
		rng = mix(rng);
		int free_slot = -1;
		for (int i = 0; i < OUTSTANDING; i++)
			if (!slots[i].r) {
				free_slot = i;
				break;
			}
		int peer = (int)(rng % (uint64_t)size);
		bool send = (rng >> 8) & 1;
		if (peer == rank)
			peer = (peer + 1) % size;
		struct slot *s = free_slot >= 0 ? &slots[free_slot] : NULL;
		if (s && send && sent[peer] < n && per_peer[1][peer] < share) {
			int k = sent[peer]++;
			msg_of(rank, peer, k, &s->tag, &s->size);
			s->buf = malloc(s->size + 1);
			for (size_t i = 0; i < s->size; i++)
				s->buf[i] = byte_of(rank, s->tag, k, i);
			s->send = true;
			s->src = peer;
			s->k = k;
			CHECK_EQ(canal_engine_isend(e, peer, s->tag, s->buf, s->size,
						    (rng >> 9) % 13 == 0 ? CANAL_ENGINE_EXPRESS : 0,
						    &s->r), 0);
			outstanding[1]++;
			per_peer[1][peer]++;
		} else if (s && !send && posted[peer] < n && per_peer[0][peer] < share) {
			int k = posted[peer]++;
			msg_of(peer, rank, k, &s->tag, &s->size);
			s->buf = malloc(s->size + 1);
			s->send = false;
			s->src = peer;
			s->k = k;
			CHECK_EQ(canal_engine_irecv(e, peer, s->tag, s->buf, s->size, &s->r), 0);
			outstanding[0]++;
			per_peer[0][peer]++;
		}
		/* test one slot at random, now and then all of them */
		int from = (int)((rng >> 16) % OUTSTANDING), count = (rng >> 24) % 8 ? 1 : OUTSTANDING;
		for (int c = 0; c < count; c++) {
			struct slot *t = &slots[(from + c) % OUTSTANDING];
			bool was_send = t->send;
			int who = t->src;
			if (t->r && complete(e, t, false)) {
				done++;
				outstanding[was_send]--;
				per_peer[was_send][who]--;
			}
		}
	}
	/* everyone done before anyone closes */
	int one = 1;
	struct canal_engine_req *r;
	for (int g = 0; g < size; g++)
		if (g != rank) {
			CHECK_EQ(canal_engine_isend(e, g, 100, &one, sizeof one, 0, &r), 0);
			CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		}
	for (int g = 0; g < size; g++)
		if (g != rank) {
			CHECK_EQ(canal_engine_irecv(e, g, 100, &one, sizeof one, &r), 0);
			CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
		}
	return 0;
}

int main(void)
{
	int n = (getenv("ENGINE_STRESS_N") ? atoi(getenv("ENGINE_STRESS_N")) : 1500) * stress_scale();
	const char *drivers[] = { "shm", "tcp" };
	const char *strategies[] = { "default", "aggregate" };
	for (int d = 0; d < 2; d++)
		for (int s = 0; s < 2; s++) {
			struct job j = { 4, drivers[d], strategies[s], getenv("ENGINE_STRESS_N") ? 30 : 300, -1, NULL };
			CHECK_EQ(job_run(&j, body, &n), 0);
			printf("%s/%s: %d messages each way per pair ok\n", drivers[d], strategies[s], n);
			fflush(stdout);
		}
	TEST_DONE("test_engine_stress");
}
