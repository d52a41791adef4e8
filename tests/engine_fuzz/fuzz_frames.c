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
#include <canal/base.h>
#include <canal/engine.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/internal.h"
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

static void die(const char *what, int err)
{
	fprintf(stderr, "fuzz_frames: %s: %s\n", what, canal_strerror(err));
	abort();
}

struct opener {
	struct pair *p;
	int rank;
	const char *driver;
	int err;
};

static void *open_rank(void *arg)
{
	struct opener *o = arg;
	struct canal_engine_options opt;
	canal_engine_options_init(&opt);
	opt.rank = o->rank;
	opt.size = 2;
	opt.dir = o->p->dir;
	opt.driver = o->driver;
	opt.strategy = "default";
	opt.connect = "eager"; /* the fake peer's driver exists from the start */
	opt.connect_timeout_ms = 20000;
	o->err = canal_engine_open(&opt, &o->p->e[o->rank]);
	return NULL;
}

static void rmdir_all(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char path[512];
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(dir);
}

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
	if (!mkdtemp(p->dir))
		die("mkdtemp", -errno);
	struct opener o[2] = { { p, 0, driver_names[drv], 0 },
			       { p, 1, driver_names[drv], 0 } };
	pthread_t t;
	if (pthread_create(&t, NULL, open_rank, &o[1]))
		abort();
	open_rank(&o[0]);
	pthread_join(t, NULL);
	if (o[0].err || o[1].err)
		die("canal_engine_open", o[0].err ? o[0].err : o[1].err);
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
	int gerr = canal_engine_gate_error(p->e[0], 1, why, sizeof why);
	if (gerr != -EPROTO || !strstr(why, "peer 1")) {
		fprintf(stderr, "fuzz_frames (%s): gate error %d \"%s\"\n",
			driver_names[drv], gerr, why);
		abort();
	}
	for (int i = 0; i < NR; i++) {
		if (!p->r[i])
			continue;
		int err = canal_engine_wait(p->e[0], p->r[i], NULL);
		if (err != 0 && err != -EPROTO && err != -EMSGSIZE)
			die("receive on a closed gate", err);
	}
	canal_engine_close(p->e[1]);
	canal_engine_close(p->e[0]);
	rmdir_all(p->dir);
	for (int i = 0; i < NR; i++)
		free(p->rb[i]);
	free(p);
}

static bool closed(const struct pair *p)
{
	return p->e[0]->gates[1].error != 0;
}

static void progress(struct pair *p, int rounds)
{
	for (int k = 0; k < rounds; k++) {
		canal_engine_progress(p->e[0]);
		canal_engine_progress(p->e[1]);
	}
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
		if (closed(p))
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
	while (size > 0 && !closed(p)) {
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
				while (off < n && !closed(p)) {
					int k = canal__tcp_inject(fake, data + off,
								  n - off);
					if (k < 0)
						break;
					off += (size_t)k;
					progress(p, 1);
				}
			}
		} else if (n > 0) {
			struct iovec v = { (void *)data, n };
			int err;
			unsigned spins = 0;
			while ((err = fake->ops->send(fake, &v, 1, n)) ==
				       -EAGAIN &&
			       !closed(p) && ++spins < 100000)
				progress(p, 1);
			if (err && err != -EAGAIN)
				break; /* the fake's side failed: stop */
		}
		first = false;
		data += n;
		size -= n;
		progress(p, 4);
		repost(p);
	}
	progress(p, 8);
	if (closed(p)) {
		pair_close(p, drv);
		pairs[drv] = NULL;
	}
	return 0;
}
