/* test_engine_shm_map - an shm gate's segment is mapped with every page
 * present (transfer/shm.c, map_segment): the first lap of each ring must
 * not take a page fault every 4 KiB on the message path. Two ranks, lazy
 * connect (the default) and eager: after one message each way, each rank
 * reads its own /proc/self/smaps and checks that the pair's segment
 * mapping is fully resident (Rss == Size). Without MAP_POPULATE, Rss is the
 * header page and the few ring pages one message touched, and the check
 * fails. */
#include "engine_job.h"

#include <stdlib.h>
#include <string.h>

/* Size and Rss (kB) of the mapping whose path holds "/shm.0.1"; 0 if the
 * mapping is not found (then *size stays 0). */
static void segment_kb(unsigned long *size, unsigned long *rss)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	CHECK(f != NULL);
	char line[1024];
	bool in = false;
	*size = *rss = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long v, lo, hi;
		/* a mapping's first line: "lo-hi perms offset dev inode path" */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = strstr(line, "/shm.0.1") != NULL;
		if (!in)
			continue;
		if (sscanf(line, "Size: %lu kB", &v) == 1)
			*size += v;
		else if (sscanf(line, "Rss: %lu kB", &v) == 1)
			*rss += v;
	}
	fclose(f);
}

static int body(struct canal_engine *e, int rank, int size, void *arg)
{
	(void)size;
	(void)arg;
	int peer = 1 - rank;
	uint64_t out = 0x1234u + (uint64_t)rank, in = 0;
	struct canal_engine_req *s, *r;
	CHECK_EQ(canal_engine_isend(e, peer, 7, &out, sizeof out, 0, &s), 0);
	CHECK_EQ(canal_engine_irecv(e, peer, 7, &in, sizeof in, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
	CHECK_EQ(in, 0x1234u + (uint64_t)peer);
	unsigned long kb, rss;
	segment_kb(&kb, &rss);
	/* the header page and two rings of 1 MiB */
	CHECK(kb >= 2048);
	if (rss != kb) {
		fprintf(stderr, "rank %d: segment %lu kB, resident %lu kB\n",
			rank, kb, rss);
		return 1;
	}
	/* Both ranks stay until both have looked (the peer's exit would not
	 * unmap our pages, but keep the check about the live session). */
	CHECK_EQ(canal_engine_isend(e, peer, 8, &out, sizeof out, 0, &s), 0);
	CHECK_EQ(canal_engine_irecv(e, peer, 8, &in, sizeof in, &r), 0);
	CHECK_EQ(canal_engine_wait(e, r, NULL), 0);
	CHECK_EQ(canal_engine_wait(e, s, NULL), 0);
	return 0;
}

int main(void)
{
	const char *modes[] = { "lazy", "eager" };
	for (int m = 0; m < 2; m++) {
		setenv("CANAL_ENGINE_CONNECT", modes[m], 1);
		struct job j = { .n = 2, .driver = "shm", .strategy = "default",
				 .timeout_s = 60, .killed_rank = -1 };
		CHECK_EQ(job_run(&j, body, NULL), 0);
		printf("%s: segment resident on both ranks\n", modes[m]);
	}
	TEST_DONE("test_engine_shm_map");
}
