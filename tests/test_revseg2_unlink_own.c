/* SPDX-License-Identifier: MIT */
/*
 * test_revseg2_unlink_own - when canal_chan_create_named fails after its
 * file got the name, its cleanup removes its own file only: another
 * process that unlinked the name and made a file of its own under it in
 * between keeps that file. The cleanup unlinked by name (shm_unlink),
 * removing the other process's channel. Both ways of naming the file are
 * driven here through interposed system calls (the test's definitions
 * win over libc's for the static library):
 *  - O_TMPFILE + linkat: the interposed linkat links, then damages the
 *    new file's header (so that the open after it fails, -EBADMSG) and
 *    replaces the name with another file, as another process would;
 *  - without O_TMPFILE (open of it says EINVAL), the object is made by
 *    name and filled in place: the interposed fchmod replaces the name
 *    and fails (-EPERM).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int arm_link, arm_tmpfile, arm_chmod;
static char full[128];
static ino_t other_ino;

/* Another process's doing: the name now holds a file of its own. */
static void replace_name(void)
{
	CHECK_EQ(unlink(full), 0);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, full,
			      O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	struct stat sb;
	CHECK_EQ(fstat(fd, &sb), 0);
	other_ino = sb.st_ino;
	close(fd);
}

int linkat(int olddir, const char *oldpath, int newdir, const char *newpath,
	   int flags)
{
	int r = (int)syscall(SYS_linkat, olddir, oldpath, newdir, newpath,
			     flags);
	if (r == 0 && atomic_exchange(&arm_link, 0)) {
		/* oldpath is /proc/self/fd/<n>: break that file's header */
		const char *slash = strrchr(oldpath, '/');
		CHECK(slash);
		int fd = atoi(slash + 1);
		uint64_t zero = 0;
		CHECK_EQ(pwrite(fd, &zero, sizeof(zero), 0),
			 (ssize_t)sizeof(zero));
		replace_name();
	}
	return r;
}

static int open_common(const char *path, int flags, mode_t mode)
{
	if ((flags & O_TMPFILE) == O_TMPFILE && atomic_load(&arm_tmpfile)) {
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return open_common(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return open_common(path, flags, mode);
}

int fchmod(int fd, mode_t mode)
{
	if (atomic_exchange(&arm_chmod, 0)) {
		replace_name();
		errno = EPERM;
		return -1;
	}
	return (int)syscall(SYS_fchmod, fd, mode);
}

static void check_other_kept(void)
{
	struct stat sb;
	CHECK_EQ(lstat(full, &sb), 0);
	CHECK_EQ(sb.st_ino, other_ino);
	CHECK_EQ(unlink(full), 0);
}

int main(void)
{
	alarm(30);
	char name[64];
	snprintf(name, sizeof(name), "revseg2-own-%d", (int)getpid());
	snprintf(full, sizeof(full), "/dev/shm/%s", name);
	canal_chan_unlink(name);
	struct canal_chan *ch = NULL;

	/* O_TMPFILE (where /dev/shm has it) and linkat. */
	int probe = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (probe >= 0) {
		close(probe);
		atomic_store(&arm_link, 1);
		CHECK_EQ(canal_chan_create_named(name, sizeof(uint64_t), 4,
						 CANAL_SHARED, 0, &ch),
			 -EBADMSG);
		CHECK(!ch);
		CHECK_EQ(atomic_load(&arm_link), 0); /* the path was taken */
		check_other_kept();
	}

	/* Made by name and filled in place. */
	atomic_store(&arm_tmpfile, 1);
	atomic_store(&arm_chmod, 1);
	CHECK_EQ(canal_chan_create_named(name, sizeof(uint64_t), 4,
					 CANAL_SHARED, 0, &ch),
		 -EPERM);
	CHECK(!ch);
	CHECK_EQ(atomic_load(&arm_chmod), 0);
	check_other_kept();

	/* Unarmed, both still work. */
	CHECK_EQ(canal_chan_create_named(name, sizeof(uint64_t), 4,
					 CANAL_SHARED, 0, &ch),
		 0);
	canal_chan_destroy(ch);
	CHECK_EQ(canal_chan_unlink(name), 0);
	atomic_store(&arm_tmpfile, 0);
	CHECK_EQ(canal_chan_create_named(name, sizeof(uint64_t), 4,
					 CANAL_SHARED, 0, &ch),
		 0);
	canal_chan_destroy(ch);
	CHECK_EQ(canal_chan_unlink(name), 0);
	return 0;
}
