/* SPDX-License-Identifier: MIT */
/*
 * test_revdoc3_len_hostile - canal_chan_len of a shared channel whose
 * indices a peer scribbled on: channel.h says it is the number of
 * elements in the channel (which holds at most its capacity), and
 * GUARANTEES.md that a peer writing the header cannot make this process
 * trust it. A caller sizing a receive buffer by it (len * elt_size) was
 * handed any count the peer liked.
 *
 * Failed before its fix with: 1000 from a channel of capacity 4 (tail
 * written 1000 positions past head), and 2^62 - 1 from a synchronous
 * channel.
 */
#define _GNU_SOURCE 1
#include "check.h"

#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <sys/mman.h>

/* The peer: its own mapping of the segment. */
static struct chan_state *peer_map(struct canal_chan *ch)
{
	void *p = mmap(NULL, sizeof(struct chan_state), PROT_READ | PROT_WRITE,
		       MAP_SHARED, canal_chan_fd(ch), 0);
	CHECK(p != MAP_FAILED);
	return p;
}

int main(void)
{
	alarm(20); /* a hang is a failure */
	struct canal_chan *ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	uint64_t v = 5;
	CHECK_EQ(canal_send(ch, &v), 0);
	CHECK_EQ(canal_chan_len(ch), 1);
	struct chan_state *st = peer_map(ch);
	atomic_store(&st->tail, (uint64_t)1000 << 1);
	size_t len = canal_chan_len(ch);
	if (len > canal_chan_capacity(ch))
		fprintf(stderr, "len %zu, capacity %zu\n", len,
			canal_chan_capacity(ch));
	CHECK(len <= canal_chan_capacity(ch));
	munmap(st, sizeof(struct chan_state));
	canal_chan_destroy(ch);

	/* Synchronous: at most the elements being handed over, which the
	 * internal ring bounds. */
	struct canal_chan *z = canal_chan_create(8, 0, CANAL_SHARED);
	CHECK(z);
	st = peer_map(z);
	atomic_store(&st->tail, (UINT64_MAX >> 2) << 1);
	len = canal_chan_len(z);
	if (len > CANAL_SYNC_RING)
		fprintf(stderr, "len %zu on a synchronous channel\n", len);
	CHECK(len <= CANAL_SYNC_RING);
	munmap(st, sizeof(struct chan_state));
	canal_chan_destroy(z);
	TEST_DONE("test_revdoc3_len_hostile");
}
