/* test_revapi_close_packs - (review of engine.h against the code) closing
 * a session frees the packs that were begun and not ended.
 *
 * engine.h: canal_engine_close() "frees everything, including requests
 * not waited for". A pack (canal_engine_pack_begin, unpack_begin) is the
 * session's as much as a request is, and an application that gives up on
 * a message (an error elsewhere, a shutdown) closes the session without
 * ending it; but the session did not know its packs: each one begun and
 * not ended stayed allocated after the close, its pieces' arrays too.
 * Expected: a session closed with 2000 packs and 2000 unpacks still open
 * leaves no more heap in use than one closed without (mallinfo2, with a
 * margin of 64 bytes a pack, a fifth of what each took; the sanitizer
 * builds also report the leak at exit). */
#include "engine_job.h"

#include <malloc.h>

#define PACKS 2000

static size_t in_use(void)
{
	return mallinfo2().uordblks;
}

static void cycle(int packs)
{
	char dir[] = "/tmp/canal-test-packs.XXXXXX";
	CHECK(mkdtemp(dir));
	struct canal_engine *two[2];
	job_open_two(dir, "shm", two);
	for (int i = 0; i < packs; i++) {
		struct canal_engine_pack *p;
		CHECK_EQ(canal_engine_pack_begin(two[0], 1, 7, &p), 0);
		for (int k = 0; k < 8; k++)
			CHECK_EQ(canal_engine_pack(p, "x", 1, 0), 0);
		CHECK_EQ(canal_engine_unpack_begin(two[1], 0, 7, &p), 0);
	}
	CHECK_EQ(canal_engine_close(two[0]), 0);
	CHECK_EQ(canal_engine_close(two[1]), 0);
	job_rmdir(dir);
}

int main(void)
{
	cycle(PACKS); /* first-time allocations (stdio, threads) */
	size_t m0 = in_use();
	cycle(0);
	size_t m1 = in_use();
	cycle(PACKS);
	size_t m2 = in_use();
	long base = (long)m1 - (long)m0, packs = (long)m2 - (long)m1;
	fprintf(stderr, "heap in use after a close: %+ld bytes without packs, "
			"%+ld with %d packs left open\n", base, packs, PACKS);
	CHECK(packs < base + PACKS * 64);
	TEST_DONE("test_revapi_close_packs");
}
