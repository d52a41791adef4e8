/* SPDX-License-Identifier: MIT */
/*
 * test_revuring_short_file_read - a task's read of a regular file whose
 * first page is in the page cache and the rest is not returns the whole
 * count, as read(2) does, with or without the synchronous-completion
 * shortcut (hostile review of the io_uring backend and its I/O paths,
 * branch rev-uring).
 *
 * task.h: canal_io_read "returns what the system call returns", and the
 * shortcut (a try with RWF_NOWAIT first) changes "the cost, never the
 * outcome". preadv2(RWF_NOWAIT) of a regular file stops at the first page
 * not cached and returns what it copied: the task got 4096 bytes of a
 * 65536-byte file (a short read of a regular file, which read(2) never
 * gives before the end of the file), where CANAL_RUN_NO_SYNC_SHORTCUT
 * (io_uring reads the rest in its worker; epoll's read(2)) gave 65536.
 *
 * Deterministic: the page cache is set up before each read (written,
 * fsync'd, dropped with POSIX_FADV_DONTNEED, readahead off with
 * POSIX_FADV_RANDOM, the first page read back), and mincore(2) checks
 * that state first. The file is made in the working directory (the build
 * tree, on a disk), not in /tmp, which may be tmpfs: a file system that
 * keeps every page cached cannot show the bug, and the test says so and
 * exits 0 then (it has nothing to check there).
 */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define FILE_SIZE 65536
#define PAGE 4096

static int fd;
static char want_data[FILE_SIZE];
static char buf[FILE_SIZE];
static ssize_t got_read, got_readv;

static unsigned char *map; /* the file, mapped: mincore(2) says what is
			    * cached without reading anything in */

/* Page 0 cached, page 1 not; the file position at 0. 1 if so (a few tries:
 * a page still being read in by an earlier try's readahead is not
 * dropped). */
static int prime(void)
{
	for (int i = 0; i < 200; i++) {
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
		char page[PAGE];
		CHECK_EQ(pread(fd, page, PAGE, 0), PAGE);
		CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
		unsigned char vec[FILE_SIZE / PAGE];
		CHECK_EQ(mincore(map, FILE_SIZE, vec), 0);
		if ((vec[0] & 1) && !(vec[1] & 1))
			return 1;
		usleep(1000);
	}
	return 0;
}

static void reader(void *arg)
{
	(void)arg;
	memset(buf, 0, sizeof buf);
	got_read = canal_io_read(fd, buf, sizeof buf, -1, NULL);
	if (got_read == FILE_SIZE)
		CHECK(memcmp(buf, want_data, FILE_SIZE) == 0);

	CHECK(prime());
	memset(buf, 0, sizeof buf);
	struct iovec iov[2] = {{buf, 1000}, {buf + 1000, FILE_SIZE - 1000}};
	got_readv = canal_io_readv(fd, iov, 2, -1, NULL);
	if (got_readv == FILE_SIZE)
		CHECK(memcmp(buf, want_data, FILE_SIZE) == 0);
}

static int run(unsigned flags, const char *what)
{
	if (!prime())
		return 0;
	got_read = got_readv = -1000;
	struct canal_run_options o = {.loops = 1, .flags = flags};
	CHECK_EQ(canal_run(reader, NULL, &o), 0);
	printf("%s: canal_io_read %zd, canal_io_readv %zd (want %d)\n", what,
	       got_read, got_readv, FILE_SIZE);
	return 1;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	alarm(60); /* hang guard */
	char path[] = "canal_revuring_XXXXXX";
	fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	for (size_t i = 0; i < FILE_SIZE; i++)
		want_data[i] = (char)('a' + i % 26);
	CHECK_EQ(write(fd, want_data, FILE_SIZE), FILE_SIZE);
	CHECK_EQ(fsync(fd), 0);
	map = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED);
	if (!prime()) {
		printf("test_revuring_short_file_read: this file system keeps "
		       "every page cached: skipped\n");
		return 0;
	}

	CHECK(run(CANAL_RUN_NO_SYNC_SHORTCUT, "no shortcut"));
	CHECK_EQ(got_read, FILE_SIZE);
	CHECK_EQ(got_readv, FILE_SIZE);
	CHECK(run(0, "shortcut"));
	CHECK_EQ(got_read, FILE_SIZE);
	CHECK_EQ(got_readv, FILE_SIZE);
	close(fd);
	printf("test_revuring_short_file_read: ok\n");
	return 0;
}
