/*
 * test_review_batch_overflow - a batch whose count cannot describe an
 * array (count * elt_size overflows size_t, or the count does not fit
 * the ssize_t the call returns) is bad input and must be refused with
 * -EINVAL, not taken as an array of that many elements.
 *
 * Defect: send_batch and recv_batch (src/channel/batch.c) check only that
 * elts is not NULL; canal_try_send_batch(ch, elts, SIZE_MAX / 8 + 1) on a
 * channel of 16-byte elements claims every free slot and copies from elts
 * as if the array were that long, returning a count (here 4). A blocking
 * canal_send_batch with such a count reads past the caller's array for as
 * long as receivers make room (the address elts + i * elt_size wraps
 * nowhere useful). include/canal/channel.h defines the array as
 * "n * elt_size bytes", which no n past SIZE_MAX / elt_size can be.
 * Deterministic (try forms only: nothing is read past the test's array).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <limits.h>

struct big {
	long a, b;
};

int main(void)
{
	alarm(20);
	struct canal_chan *ch = canal_chan_create(sizeof(struct big), 4, 0);
	CHECK(ch);
	struct big arr[4] = { { 1, 1 }, { 2, 2 }, { 3, 3 }, { 4, 4 } };
	size_t bad = SIZE_MAX / sizeof(struct big) + 1; /* n * 16 wraps */

	ssize_t r = canal_try_send_batch(ch, arr, bad);
	if (r != -EINVAL)
		fprintf(stderr, "canal_try_send_batch(n = SIZE_MAX/16 + 1) "
				"-> %zd (n * elt_size overflows)\n", r);
	CHECK_EQ(r, -EINVAL);
	CHECK_EQ(canal_chan_len(ch), 0);

	/* The receiving side: a count no array of 16-byte elements has. */
	CHECK_EQ(canal_try_send_batch(ch, arr, 4), 4);
	struct big out[4];
	r = canal_try_recv_batch(ch, out, bad);
	if (r != -EINVAL)
		fprintf(stderr, "canal_try_recv_batch(max = SIZE_MAX/16 + 1) "
				"-> %zd\n", r);
	CHECK_EQ(r, -EINVAL);
	CHECK_EQ(canal_chan_len(ch), 4);
	CHECK_EQ(canal_try_recv_batch(ch, out, 4), 4);
	CHECK_EQ(out[3].a, 4);
	canal_chan_destroy(ch);

	/* Signal-only channels: any count is an array of 0-byte elements,
	 * but the count sent is returned as an ssize_t. */
	ch = canal_chan_create(0, 4, 0);
	CHECK(ch);
	r = canal_try_send_batch(ch, NULL, (size_t)SSIZE_MAX + 1);
	if (r != -EINVAL)
		fprintf(stderr, "canal_try_send_batch(n = SSIZE_MAX + 1) on a "
				"signal channel -> %zd\n", r);
	CHECK_EQ(r, -EINVAL);
	canal_chan_destroy(ch);
	TEST_DONE("test_review_batch_overflow");
}
