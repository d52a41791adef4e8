/* SPDX-License-Identifier: MIT */
/*
 * names.c - shared channels that unrelated processes find: named channels
 * (POSIX shared-memory objects "/<name>") and the hand-over of a channel's
 * memory file over a Unix socket (SCM_RIGHTS).
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_MAX_LEN 200

static int shm_path(const char *name, char *path, size_t size)
{
	if (!name)
		return -EINVAL;
	size_t n = strnlen(name, NAME_MAX_LEN + 1);
	if (n == 0 || n > NAME_MAX_LEN || strchr(name, '/') ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	snprintf(path, size, "/%s", name);
	return 0;
}

/* err, of shm_open or shm_unlink on a well-formed name: what is under the
 * name and cannot be opened as a file (a directory: EISDIR, which glibc's
 * shm_open turns into EINVAL; a symbolic link, refused by its O_NOFOLLOW:
 * ELOOP; a socket: ENXIO) is no channel: -EBADMSG, as a regular file that
 * is not a channel (channel.h). The caller's -EINVAL means its own
 * arguments, and these errnos are not canal's. */
static int not_a_file(int err)
{
	return err == -EINVAL || err == -EISDIR || err == -ELOOP ||
			       err == -ENXIO
		       ? -EBADMSG
		       : err;
}

/* Where Linux keeps POSIX shared-memory objects (glibc's shm_open). */
#define SHM_DIR "/dev/shm"

/* Give fd (a new, empty memory file) mode, the channel's size and a fresh
 * header. Returns 0 or -errno.
 *
 * The file's blocks are reserved here (fallocate): /dev/shm is a tmpfs of
 * bounded size (64 MiB in a container by default), and a page of a
 * sparse file that the tmpfs has no room for raises SIGBUS when touched.
 * Left sparse, a channel larger than the space left was made all the
 * same: its header's write killed the creator when /dev/shm was full,
 * and otherwise the first send into a slot past the space left damaged
 * the channel (sigbus.c: -EBADMSG, its elements lost). Reserved, it is
 * -ENOSPC now, and no access to the segment can fault for want of space
 * later. A file system without fallocate (EOPNOTSUPP) keeps the file
 * sparse, as before. */
static int fill_segment(int fd, size_t elt_size, size_t capacity,
			unsigned mode, const struct chan_geometry *g)
{
	if (fchmod(fd, (mode_t)mode) < 0)
		return -errno;
	if (ftruncate(fd, (off_t)g->map_size) < 0)
		return errno == EFBIG || errno == EINVAL ? -ENOMEM : -errno;
	/* Before the first write into the mapping: a /dev/shm without room
	 * is -ENOSPC here, not SIGBUS there. */
	int err = canal__segment_back(fd, g->map_size);
	if (err)
		return err;
	struct chan_state *st = mmap(NULL, g->map_size, PROT_READ | PROT_WRITE,
				     MAP_SHARED, fd, 0);
	if (st == MAP_FAILED)
		return -errno;
	canal__chan_state_init(st, elt_size, capacity, CANAL_SHARED, g);
	munmap(st, g->map_size);
	return 0;
}

/* A memory file of the channel's size with a fresh header, not yet named:
 * an O_TMPFILE in SHM_DIR, so that a creator that dies before the end
 * leaves nothing behind. Its mode is exactly mode (not reduced by the
 * umask). Returns the fd or -errno; -EOPNOTSUPP where O_TMPFILE is not
 * supported there. */
static int make_unnamed(size_t elt_size, size_t capacity, unsigned mode,
			const struct chan_geometry *g)
{
	int fd = open(SHM_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EISDIR || errno == EINVAL || errno == ENOENT
			       ? -EOPNOTSUPP
			       : -errno;
	int err = fill_segment(fd, elt_size, capacity, mode, g);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/*
 * Remove the name path ("/<name>") if it still names the file mine (its
 * fstat), a file this call created under it, after a failure. Not
 * shm_unlink(path) alone: between the creation and the failure another
 * process may have unlinked the name and made a channel of its own under
 * it, and that one is not ours to remove (test_revseg2_unlink_own). A name that no longer names
 * our file is left alone. What remains is the window between the lstat
 * and the unlink (a few instructions, where the unlink by name had the
 * whole creation). The caller holds the file open, so that its inode
 * cannot be another file's meanwhile.
 */
static void unlink_own(const char *path, const struct stat *mine)
{
	char full[sizeof(SHM_DIR) + NAME_MAX_LEN + 2];
	struct stat now;
	snprintf(full, sizeof(full), SHM_DIR "%s", path);
	if (lstat(full, &now) == 0 && now.st_dev == mine->st_dev &&
	    now.st_ino == mine->st_ino)
		unlink(full);
}

/* Without O_TMPFILE: create the object by name and fill it in place (an
 * opener may then see it before its header: -EBADMSG, and a creator that
 * dies there leaves a name to unlink by hand). */
static int make_named_in_place(const char *path, size_t elt_size,
			       size_t capacity, unsigned mode,
			       const struct chan_geometry *g)
{
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int err = fill_segment(fd, elt_size, capacity, mode, g);
	if (err) {
		struct stat mine;
		if (fstat(fd, &mine) == 0) /* else: leave the name */
			unlink_own(path, &mine);
		close(fd);
		return err;
	}
	return fd;
}

static int create_named_impl(const char *name, size_t elt_size, size_t capacity,
			     unsigned flags, unsigned mode,
			     struct canal_chan **out)
{
	char path[NAME_MAX_LEN + 2];
	struct chan_geometry g;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if ((err = shm_path(name, path, sizeof(path))))
		return err;
	if (flags != CANAL_SHARED || (mode & ~0777u))
		return -EINVAL;
	if (mode == 0)
		mode = 0600;
	if ((err = canal__chan_geometry(elt_size, capacity, true, &g)))
		return err;
	/* The name appears only once the channel is complete: linking the
	 * unnamed file is atomic, and fails with EEXIST if the name is
	 * taken. */
	int fd = make_unnamed(elt_size, capacity, mode, &g);
	if (fd >= 0) {
		char proc[64], named[sizeof(SHM_DIR) + NAME_MAX_LEN + 2];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		snprintf(named, sizeof(named), SHM_DIR "%s", path);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, named,
			   AT_SYMLINK_FOLLOW) < 0) {
			err = -errno;
			close(fd);
			if (err != -ENOENT)
				return err;
			/* no /proc: fall back below */
			fd = -EOPNOTSUPP;
		}
	}
	if (fd == -EOPNOTSUPP)
		fd = make_named_in_place(path, elt_size, capacity, mode, &g);
	if (fd < 0)
		return fd;
	/* Which file is ours under the name, asked before open_segment
	 * takes fd (it closes it on failure), and a descriptor that keeps
	 * its inode from being reused until the cleanup (without one, a
	 * reuse needs the name replaced and our file freed in between). */
	struct stat mine;
	bool known = fstat(fd, &mine) == 0;
	int keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	err = canal__chan_open_segment(fd, true, elt_size, capacity, out);
	if (err && known)
		unlink_own(path, &mine);
	if (keep >= 0)
		canal__segment_close(keep);
	return err;
}

static int open_impl(const char *name, size_t elt_size, size_t capacity,
		     unsigned flags, struct canal_chan **out)
{
	char path[NAME_MAX_LEN + 2];
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if ((err = shm_path(name, path, sizeof(path))))
		return err;
	if (flags != CANAL_SHARED)
		return -EINVAL;
	/* A file this process holds record locks on is not opened again (a
	 * descriptor it could not close without dropping them): one of its
	 * descriptors serves (liveness.c). */
	char full[sizeof(SHM_DIR) + NAME_MAX_LEN + 2];
	snprintf(full, sizeof(full), SHM_DIR "%s", path);
	int fd = canal__segment_reuse(full);
	if (fd == -ENOENT && (fd = shm_open(path, O_RDWR | O_CLOEXEC, 0)) < 0)
		fd = not_a_file(-errno);
	if (fd < 0)
		return fd;
	return canal__chan_open_segment(fd, true, elt_size, capacity, out);
}

static int unlink_impl(const char *name)
{
	char path[NAME_MAX_LEN + 2];
	int err = shm_path(name, path, sizeof(path));
	if (err)
		return err;
	return shm_unlink(path) < 0 ? not_a_file(-errno) : 0;
}

CANAL_EXPORT int canal_chan_fd(const struct canal_chan *ch)
{
	if (!ch || !ch->shared || ch->fd < 0)
		return -EINVAL;
	return ch->fd;
}

static int send_handle_impl(int sock, const struct canal_chan *ch)
{
	int fd = canal_chan_fd(ch);
	if (fd < 0)
		return fd;
	char byte = 'c';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t r;
	do
		r = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r >= 0)
		return 0;
	/* A peer that closed its end: sendmsg says EPIPE, which is canal's
	 * "channel closed" (and not this channel's state); the header's
	 * value for it is -ECONNRESET, as canal_chan_recv_handle's. */
	return errno == EPIPE ? -ECONNRESET : -errno;
}

static int recv_handle_impl(int sock, size_t elt_size, size_t capacity,
			    unsigned flags, struct canal_chan **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	/* The arguments first: a call refused for them takes nothing from
	 * the socket (the handle stays there for a correct call). */
	if (flags != CANAL_SHARED)
		return -EINVAL;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	/* Room for a few descriptors, so that extra ones are received (and
	 * closed) rather than left to MSG_CTRUNC. */
	union {
		char buf[CMSG_SPACE(16 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	ssize_t r;
	do
		r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ECONNRESET;
	/* Every descriptor that came is ours to close, whatever else is
	 * wrong with the message: exactly one is a channel. */
	int fd = -1, nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c;
	     c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int got;
			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfds++ == 0)
				fd = got;
			else
				canal__segment_close(got);
		}
	}
	if (nfds != 1 || (msg.msg_flags & MSG_CTRUNC)) {
		canal__segment_close(fd);
		return -EBADMSG;
	}
	/* The descriptor received becomes the handle's (closing it would
	 * drop this process's record locks on the file, if any). */
	return canal__chan_open_segment(fd, true, elt_size, capacity, out);
}

CANAL_EXPORT int canal_chan_create_named(const char *name, size_t elt_size,
					 size_t capacity, unsigned flags,
					 unsigned mode, struct canal_chan **out)
{
	int saved = errno; /* channel.h: errno is not touched */
	int r = create_named_impl(name, elt_size, capacity, flags, mode, out);
	errno = saved;
	return r;
}

CANAL_EXPORT int canal_chan_open(const char *name, size_t elt_size,
				 size_t capacity, unsigned flags,
				 struct canal_chan **out)
{
	int saved = errno; /* channel.h: errno is not touched */
	int r = open_impl(name, elt_size, capacity, flags, out);
	errno = saved;
	return r;
}

CANAL_EXPORT int canal_chan_unlink(const char *name)
{
	int saved = errno; /* channel.h: errno is not touched */
	int r = unlink_impl(name);
	errno = saved;
	return r;
}

CANAL_EXPORT int canal_chan_send_handle(int sock, const struct canal_chan *ch)
{
	int saved = errno; /* channel.h: errno is not touched */
	int r = send_handle_impl(sock, ch);
	errno = saved;
	return r;
}

CANAL_EXPORT int canal_chan_recv_handle(int sock, size_t elt_size,
					size_t capacity, unsigned flags,
					struct canal_chan **out)
{
	int saved = errno; /* channel.h: errno is not touched */
	int r = recv_handle_impl(sock, elt_size, capacity, flags, out);
	errno = saved;
	return r;
}
