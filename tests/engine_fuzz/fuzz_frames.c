/* fuzz_frames.c - libFuzzer target: malformed frames into the engine's
 * receive path, over the shm and the TCP driver (issue 15, "Malformed
 * input").
 *
 * Two sessions of one process are connected (ranks 0 and 1, as in
 * test_engine_fuzz.c); rank 1's driver is used raw, as a hostile peer.
 * An input is
 *   byte 0   bit 0: driver (0 shm, 1 tcp); bit 1: the first frame goes in
 *            below the driver's framing (a ring record or a TCP length
 *            prefix of the fuzzer's choosing)
 *   then     frames, each a little-endian u16 length and that many bytes
 *            (a short last frame takes what is left)
 * Each frame is sent as one packet while rank 0 has receives posted on
 * tags 0-3 and makes progress. Whatever arrives, rank 0 must not crash or
 * touch memory out of bounds (ASan+UBSan), and once it closes the gate the
 * error is -EPROTO with a message naming peer 1, and every posted receive
 * completes (0, -EPROTO or -EMSGSIZE). A closed pair is replaced by a new
 * one for the next input; a pair that survived is kept (state carries over,
 * as a long-lived connection's would).
 *
 * Built with clang -fsanitize=fuzzer,address,undefined together with the
 * library's sources (tests/engine_fuzz/CMakeLists.txt); `make test` runs it
 * for a few seconds from the seed corpus beside this file.
 */
#define FUZZ_NAME "fuzz_frames"
#include "fuzz_pair.h"

#include <stdint.h>

#include "engine/transfer/driver.h"

#define NR 6

struct pair {
	struct canal_engine *e[2];
	char dir[64];
	struct canal_engine_req *r[NR];
	/* Each receive buffer its own allocation, so that ASan's red zones
	 * catch a write past any one of them (not into the next). */
	unsigned char *rb[NR];
};

#define RB_LEN 256

static struct pair *pairs[2]; /* by driver */
static const char *const driver_names[2] = { "shm", "tcp" };

static void post_receives(struct pair *p, int from)
{
	for (int i = from; i < NR; i++) {
		int err = canal_engine_irecv(p->e[0], 1, (unsigned)(i % 4),
					     p->rb[i], RB_LEN, &p->r[i]);
		if (err)
			die("irecv", err);
	}
}

static struct pair *pair_open(int drv)
{
	struct pair *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	snprintf(p->dir, sizeof p->dir, "/tmp/canal-fuzz-frames.XXXXXX");
	fuzz_open_pair(p->dir, driver_names[drv], NULL, p->e);
	for (int i = 0; i < NR; i++)
		if (!(p->rb[i] = malloc(RB_LEN)))
			abort();
	post_receives(p, 0);
	return p;
}

/* The gate was closed: check how, complete every receive, throw the pair
 * away. */
static void pair_close(struct pair *p, int drv)
{
	char why[160];
	fuzz_gate_check(p->e[0], driver_names[drv], why, sizeof why);
	for (int i = 0; i < NR; i++) {
		if (!p->r[i])
			continue;
		int err = canal_engine_wait(p->e[0], p->r[i], NULL);
		if (err != 0 && err != -EPROTO && err != -EMSGSIZE)
			die("receive on a closed gate", err);
	}
	canal_engine_close(p->e[1]);
	canal_engine_close(p->e[0]);
	fuzz_rmdir_all(p->dir);
	for (int i = 0; i < NR; i++)
		free(p->rb[i]);
	free(p);
}

/* Completed receives are posted again, so that data keeps finding both
 * posted receives and none (the unexpected path). */
static void repost(struct pair *p)
{
	for (int i = 0; i < NR; i++) {
		if (!p->r[i])
			continue;
		int done = canal_engine_test(p->e[0], p->r[i], NULL);
		if (done == 0)
			continue; /* pending */
		p->r[i] = NULL; /* completed (0 or an error) and freed */
		if (done < 0 && done != -EMSGSIZE && done != -EPROTO)
			die("receive", done);
		if (fuzz_closed(p->e))
			continue;
		if (canal_engine_irecv(p->e[0], 1, (unsigned)(i % 4), p->rb[i],
				       RB_LEN, &p->r[i]))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int drv = data[0] & 1;
	bool raw_first = data[0] & 2;
	data++;
	size--;
	if (!pairs[drv])
		pairs[drv] = pair_open(drv);
	struct pair *p = pairs[drv];
	struct canal__driver *fake = p->e[1]->gates[0].drv;
	bool first = true;
	while (size > 0 && !fuzz_closed(p->e)) {
		size_t n = size >= 2 ? (size_t)data[0] | (size_t)data[1] << 8 : 0;
		size_t hdr = size >= 2 ? 2 : size;
		data += hdr;
		size -= hdr;
		if (n > size)
			n = size;
		if (n == 0 && size == 0)
			break;
		if (first && raw_first) {
			if (drv == 0) {
				/* A ring record as the fuzzer wrote it,
				 * head advanced by its rounded length. */
				if (canal__shm_inject(fake, data, n,
						      (n + 7) & ~(size_t)7) != 0)
					break;
			} else {
				size_t off = 0;
				while (off < n && !fuzz_closed(p->e)) {
					int k = canal__tcp_inject(fake, data + off,
								  n - off);
					if (k < 0)
						break;
					off += (size_t)k;
					fuzz_progress(p->e, 1);
				}
			}
		} else if (n > 0) {
			struct iovec v = { (void *)data, n };
			int err;
			unsigned spins = 0;
			while ((err = fake->ops->send(fake, &v, 1, n)) ==
				       -EAGAIN &&
			       !fuzz_closed(p->e) && ++spins < 100000)
				fuzz_progress(p->e, 1);
			if (err && err != -EAGAIN)
				break; /* the fake's side failed: stop */
		}
		first = false;
		data += n;
		size -= n;
		fuzz_progress(p->e, 4);
		repost(p);
	}
	fuzz_progress(p->e, 8);
	if (fuzz_closed(p->e)) {
		pair_close(p, drv);
		pairs[drv] = NULL;
	}
	return 0;
}
