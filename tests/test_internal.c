/* test_internal.c - internal arithmetic that the public API exercises only
 * for small positions: ring_index (pos % ring without a division) over the
 * whole 64-bit range of positions, for rings that are and are not powers of
 * two, against the % operator. */
#include "check.h"

#include "../src/channel/internal.h"

#include <stdint.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	return check_rand64(&rng);
}

static void check_ring(uint64_t ring)
{
	struct canal_chan ch = { 0 };
	struct chan_state st = { 0 };

	st.ring = ring;
	st.capacity = ring;
	canal__chan_handle_init(&ch, &st, -1, false, false);
	CHECK_EQ(ch.ring, ring);
	static const uint64_t edges[] = { 0, 1, 2, UINT64_MAX, UINT64_MAX - 1,
					  UINT64_MAX / 2, (uint64_t)1 << 63 };
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		uint64_t p = edges[i];
		CHECK_EQ(ring_index(&ch, p), p % ring);
		if (p >= ring)
			CHECK_EQ(ring_index(&ch, p - 1), (p - 1) % ring);
	}
	for (uint64_t k = 0; k < 4; k++) {
		/* around multiples of ring, low and high */
		uint64_t m = (UINT64_MAX / ring - k) * ring;
		for (uint64_t d = 0; d < 3; d++) {
			CHECK_EQ(ring_index(&ch, k * ring + d), d % ring);
			CHECK_EQ(ring_index(&ch, m + d), (m + d) % ring);
			CHECK_EQ(ring_index(&ch, m - d - 1), (m - d - 1) % ring);
		}
	}
	for (int i = 0; i < 2000; i++) {
		uint64_t p = next() >> (next() % 64);
		CHECK_EQ(ring_index(&ch, p), p % ring);
		CHECK_EQ(stamp_next_lap(&ch, p, STAMP_FREE),
			 stamp_for(&ch, p + ring, STAMP_FREE));
	}
}

int main(void)
{
	static const uint64_t rings[] = { 1, 2, 3, 5, 7, 16, 1000, 1024,
					  1000000, 1048575, 1048577,
					  (uint64_t)1 << 31, ((uint64_t)1 << 32) - 1,
					  (uint64_t)1 << 32 };
	for (size_t i = 0; i < sizeof(rings) / sizeof(rings[0]); i++)
		check_ring(rings[i]);
	for (int i = 0; i < 300; i++)
		check_ring(1 + next() % ((uint64_t)1 << 32));
	printf("test_internal: all checks passed\n");
	return 0;
}
