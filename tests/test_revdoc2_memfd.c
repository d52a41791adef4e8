/* test_revdoc2_memfd.c - channel.h: a CANAL_SHARED channel's memory is
 * committed at creation, as a thread channel's is: its memory file (a
 * memfd) has every page of the segment allocated (st_blocks), so that no
 * page has to be found while messages flow (one refused then, under
 * vm.overcommit_memory=2, is SIGBUS: mm/shmem.c turns the memfd's refused
 * page into -ENOSPC, and a fault into SIGBUS; a memory cgroup's charge
 * comes at creation too). The refusal itself cannot be provoked here
 * without changing the machine's overcommit policy or leaving the
 * process's memory cgroup; this checks the commitment it rests on, and
 * that the channel still works (sends through the whole ring, twice).
 *
 * Failed before its fix with: the memfd sparse (a few pages of a 16 MiB
 * segment allocated).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <sys/stat.h>

int main(void)
{
	alarm(30); /* a hang is a failure */
	const size_t elt = 4096 - 16, cap = 4096; /* ~16 MiB of slots */
	struct canal_chan *ch = canal_chan_create(elt, cap, CANAL_SHARED);
	CHECK(ch);
	struct stat sb;
	CHECK_EQ(fstat(canal_chan_fd(ch), &sb), 0);
	long long allocated = (long long)sb.st_blocks * 512;
	if (allocated < (long long)sb.st_size) {
		fprintf(stderr, "memfd of %lld bytes, %lld allocated\n",
			(long long)sb.st_size, allocated);
		CHECK(!"the segment is not committed");
	}
	static char buf[4096 - 16];
	for (size_t i = 0; i < 2 * cap; i++) {
		memset(buf, (int)(i & 0xff), sizeof buf);
		CHECK_EQ(canal_send(ch, buf), 0);
		CHECK_EQ(canal_recv(ch, buf), 0);
		CHECK_EQ((unsigned char)buf[elt - 1], i & 0xff);
	}
	/* Still all allocated, no more: the commitment was the whole. */
	struct stat after;
	CHECK_EQ(fstat(canal_chan_fd(ch), &after), 0);
	CHECK_EQ(after.st_blocks, sb.st_blocks);
	canal_chan_destroy(ch);
	TEST_DONE("test_revdoc2_memfd");
}
