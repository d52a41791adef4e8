/* SPDX-License-Identifier: MIT */
/*
 * test_revseg_shm_full - canal_chan_create_named on a /dev/shm without room
 * for the channel. A tmpfs file made by ftruncate() owns no pages yet: the
 * first write into a page the filesystem cannot supply raises SIGBUS. The
 * creator must get -ENOSPC, not die writing the header (a full /dev/shm),
 * and must not hand out a channel whose later pages cannot be backed (its
 * users would lose it, damaged, at the first send that reaches them).
 *
 * Each case runs in a child with a mount namespace of its own and a tiny
 * tmpfs on /dev/shm (root; skipped otherwise).
 */
#define _GNU_SOURCE
#include "check.h"
#include "dead_holder.h"

#include <canal/channel.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define SHM_PAGES 16

/* In the child: a private /dev/shm of SHM_PAGES pages; false if not
 * allowed here. */
static bool private_small_shm(void)
{
	char opts[64];
	snprintf(opts, sizeof(opts), "size=%ld",
		 SHM_PAGES * sysconf(_SC_PAGESIZE));
	return unshare(CLONE_NEWNS) == 0 &&
	       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	       mount("canal-test", "/dev/shm", "tmpfs", 0, opts) == 0;
}

/* Fill the filesystem, leaving free_pages pages. */
static void fill_shm(long free_pages)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = open("/dev/shm/filler", O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	char *buf = calloc(1, (size_t)page);
	CHECK(buf);
	memset(buf, 1, (size_t)page);
	while (write(fd, buf, (size_t)page) == page)
		;
	CHECK(errno == ENOSPC);
	for (long i = 0; i < free_pages; i++) {
		off_t end = lseek(fd, 0, SEEK_END);
		CHECK(end >= page);
		CHECK_EQ(ftruncate(fd, end - page), 0);
	}
	free(buf);
	close(fd);
}

enum { SKIPPED = 77 };

/* Create a named channel of capacity slots (8-byte elements) on a
 * /dev/shm with free_pages pages left: exits with 0 when it returns
 * expect (and a channel that works, if 0). */
static int create_case(long free_pages, size_t capacity, int expect)
{
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (!private_small_shm())
			_exit(SKIPPED);
		fill_shm(free_pages);
		struct canal_chan *ch = NULL;
		int r = canal_chan_create_named("revseg-full", sizeof(uint64_t),
						capacity, CANAL_SHARED, 0, &ch);
		if (r != expect) {
			fprintf(stderr, "create: %d, expected %d\n", r, expect);
			_exit(1);
		}
		if (r == 0) {
			/* Every slot can be written. */
			for (uint64_t v = 0; v < capacity; v++)
				if (canal_send(ch, &v) != 0)
					_exit(2);
			canal_chan_destroy(ch);
		}
		/* No name is left behind by a failed create. */
		if (r != 0 && access("/dev/shm/revseg-full", F_OK) == 0)
			_exit(3);
		_exit(0);
	}
	return wait_child(pid);
}

int main(void)
{
	alarm(60);
	/* No page left: the header itself cannot be backed. */
	int r = create_case(0, 16, -ENOSPC);
	if (r == SKIPPED) {
		printf("test_revseg_shm_full: skipped (no private tmpfs: "
		       "needs root)\n");
		return 0;
	}
	if (r != 0)
		fprintf(stderr, "no room: child ended with %d (%d: SIGBUS)\n",
			r, 128 + SIGBUS);
	CHECK_EQ(r, 0);
	/* Room for the header, not for the ring (1024 slots of 24 bytes:
	 * 6 pages more). */
	r = create_case(2, 1024, -ENOSPC);
	if (r != 0)
		fprintf(stderr, "room for the header only: child ended with "
			"%d (%d: SIGBUS)\n", r, 128 + SIGBUS);
	CHECK_EQ(r, 0);
	/* Room for all: created, and works. */
	r = create_case(12, 1024, 0);
	CHECK_EQ(r, 0);
	TEST_DONE("test_revseg_shm_full");
}
