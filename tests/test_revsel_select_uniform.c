/*
 * test_revsel_select_uniform - canal_select chooses uniformly at random
 * among the cases ready at once (channel.h: "Among cases ready at once,
 * one is chosen uniformly at random (as Go does)").
 *
 * Defect (hostile review of the channel layer): the poll tried the cases
 * from one random start, in array order, and completed the first ready
 * one. A ready case right after a case that is not ready (or a NULL one)
 * is then chosen for every start that lands on that case as well as its
 * own: with cases {ready, ready, empty}, the first was chosen 2/3 of the
 * time (20108 of 30000), not 1/2.
 *
 * Single thread, buffered channels kept with an element in exactly the
 * ready cases: no timing. The bound (10 standard deviations of a fair
 * binomial) fails a fair select with a probability below 1e-20; the
 * defect is 47 deviations out.
 */
#include "check.h"

#include <canal/channel.h>

#define ROUNDS 20000

/* n cases; ready[i]: case i's channel holds an element; null[i]: case i
 * has no channel. Returns how often each case was chosen in counts[]. */
static void run(size_t n, const int *ready, const int *null, long *counts)
{
	struct canal_chan *ch[8];
	struct canal_case cs[8];
	long x = 7, y = 0;

	CHECK(n <= 8);
	for (size_t i = 0; i < n; i++) {
		ch[i] = null[i] ? NULL : canal_chan_create(sizeof(long), 2, 0);
		CHECK(null[i] || ch[i]);
		if (ready[i])
			CHECK_EQ(canal_send(ch[i], &x), 0);
		counts[i] = 0;
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (size_t i = 0; i < n; i++)
			cs[i] = (struct canal_case){ ch[i], CANAL_OP_RECV, &y,
						     1 };
		int k = canal_select(cs, n, 0, 0);
		CHECK(k >= 0 && (size_t)k < n);
		CHECK(ready[k]);
		CHECK_EQ(cs[k].result, 0);
		CHECK_EQ(y, 7);
		counts[k]++;
		/* Ready again for the next round. */
		CHECK_EQ(canal_send(ch[k], &x), 0);
	}
	for (size_t i = 0; i < n; i++)
		canal_chan_destroy(ch[i]);
}

static void check_uniform(const char *what, size_t n, const int *ready,
			  const long *counts)
{
	int k = 0;
	for (size_t i = 0; i < n; i++)
		k += ready[i];
	double p = 1.0 / k, mean = ROUNDS * p;
	double var = ROUNDS * p * (1 - p);
	for (size_t i = 0; i < n; i++) {
		if (!ready[i]) {
			CHECK_EQ(counts[i], 0);
			continue;
		}
		double d = (double)counts[i] - mean;
		if (d * d > 100 * var) {
			fprintf(stderr,
				"%s: case %zu chosen %ld times of %d, "
				"expected %.0f (variance %.0f: uniform among "
				"%d ready)\n",
				what, i, counts[i], ROUNDS, mean, var, k);
			CHECK(!"select not uniform among ready cases");
		}
	}
}

int main(void)
{
	alarm(60);
	long counts[8];
	static const int none[8];

	/* Two ready, then one empty. */
	static const int r1[] = { 1, 1, 0 };
	run(3, r1, none, counts);
	check_uniform("{ready, ready, empty}", 3, r1, counts);

	/* A NULL case between two ready ones. */
	static const int r2[] = { 1, 0, 1 }, n2[] = { 0, 1, 0 };
	run(3, r2, n2, counts);
	check_uniform("{ready, NULL, ready}", 3, r2, counts);

	/* Three ready of five, with empty ones in between. */
	static const int r3[] = { 1, 0, 0, 1, 1 };
	run(5, r3, none, counts);
	check_uniform("{ready, empty, empty, ready, ready}", 5, r3, counts);

	/* Biased: always the first ready. */
	{
		struct canal_chan *a = canal_chan_create(sizeof(long), 1, 0);
		struct canal_chan *b = canal_chan_create(sizeof(long), 1, 0);
		long x = 1, y;
		CHECK(a && b);
		CHECK_EQ(canal_send(a, &x), 0);
		CHECK_EQ(canal_send(b, &x), 0);
		for (int r = 0; r < 100; r++) {
			struct canal_case cs[3] = {
				{ NULL, CANAL_OP_RECV, &y, 0 },
				{ b, CANAL_OP_RECV, &y, 0 },
				{ a, CANAL_OP_RECV, &y, 0 },
			};
			CHECK_EQ(canal_select(cs, 3, 0, CANAL_SELECT_BIASED),
				 1);
			CHECK_EQ(canal_send(b, &x), 0);
		}
		canal_chan_destroy(a);
		canal_chan_destroy(b);
	}
	TEST_DONE("test_revsel_select_uniform");
}
