/* SPDX-License-Identifier: MIT */
/*
 * segment.c - the memory of shared channels: memory files (sealed so that
 * no peer can shrink or grow them under the others), and validation of a
 * segment that another (possibly buggy or hostile) process wrote, before a
 * handle trusts it. The handle keeps its own copy of the geometry; nothing
 * read from shared memory later indexes memory unchecked (internal.h).
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Seals of the memory files of anonymous shared channels: a peer holding
 * the fd cannot truncate it (its partners would die of SIGBUS on their next
 * access) nor grow it, nor remove the seals. */
#define SEGMENT_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

int canal__segment_back(int fd, size_t map_size)
{
	/* A file of tmpfs (a memfd, /dev/shm) made by ftruncate() owns no
	 * pages: the first write into a page that the filesystem cannot
	 * supply (full, its size limit, the memory's accounting) raises
	 * SIGBUS in whoever writes, the creator writing the header first.
	 * fallocate() takes them all now, or fails (test_revseg_shm_full). */
	int r;
	do
		r = fallocate(fd, 0, 0, (off_t)map_size);
	while (r < 0 && errno == EINTR);
	if (r < 0 && errno != EOPNOTSUPP && errno != ENOSYS)
		return errno == EFBIG ? -ENOMEM : -errno;
	return 0; /* (a filesystem without fallocate: as before) */
}

int canal__segment_create_fd(size_t map_size, const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)map_size) < 0) {
		int e = errno;
		close(fd);
		return e == EFBIG || e == EINVAL ? -ENOMEM : -e;
	}
	/* Its pages are allocated now (fallocate), as a thread channel's are
	 * touched (channel.h): a memfd is charged page by page as it is first
	 * touched, and a page refused then (vm.overcommit_memory=2: shmem
	 * reports it -ENOSPC, which a fault turns into SIGBUS, mm/shmem.c)
	 * killed the process in the middle of a send; the segment is sealed
	 * against shrinking, so no SIGBUS guard is in place (open_segment).
	 * Now it is -ENOMEM here. Under a memory cgroup's limit the page is
	 * charged here too, and the cgroup's OOM killer, if it acts, acts at
	 * creation rather than at a send. A file system without fallocate
	 * (none backs a memfd today) keeps the file sparse. */
	int err = canal__segment_back(fd, map_size);
	if (err) {
		close(fd);
		/* The memory of a memfd: its "space" is memory. */
		return err == -ENOSPC ? -ENOMEM : err;
	}
	if (fcntl(fd, F_ADD_SEALS, SEGMENT_SEALS) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int validate(const struct chan_state *st, uint64_t file_size,
		    size_t want_elt_size, size_t want_capacity)
{
	struct chan_geometry g;
	uint64_t magic = atomic_load_explicit((_Atomic uint64_t *)&st->magic,
					      memory_order_acquire);

	/* Named channels appear only once complete (names.c), and anonymous
	 * ones are handed over once made: a zero header is not a channel. */
	if (magic != CANAL_MAGIC)
		return -EBADMSG;
	if (st->version != CANAL_LAYOUT_VERSION)
		return -EPROTONOSUPPORT;
	if (st->flags != CANAL_SHARED)
		return -EBADMSG;
	if (st->elt_size > CANAL_ELT_SIZE_MAX ||
	    st->capacity > CANAL_CAPACITY_MAX ||
	    canal__chan_geometry(st->elt_size, st->capacity, true, &g) < 0)
		return -EBADMSG;
	if (st->ring != g.ring || st->stride != g.stride ||
	    st->slot_hdr != g.slot_hdr || st->slots_offset != g.slots_offset ||
	    st->map_size != g.map_size)
		return -EBADMSG;
	if (g.map_size > file_size)
		return -EBADMSG; /* truncated */
	uint64_t head = atomic_load_explicit(&st->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&st->tail, memory_order_relaxed);
	if (tail_position(tail) < head || tail_position(tail) - head > g.ring)
		return -EBADMSG;
	if ((want_elt_size != CANAL_ANY && want_elt_size != st->elt_size) ||
	    (want_capacity != CANAL_ANY && want_capacity != st->capacity))
		return -ERANGE;
	return 0;
}

/* canal_chan_open_fd's checks, on fd: 0 with *sb and *copy filled, or
 * -errno. */
static int check_segment(int fd, size_t elt_size, size_t capacity,
			 struct stat *sb, struct chan_state *copy)
{
	if (fstat(fd, sb) < 0)
		return -errno;
	if (!S_ISREG(sb->st_mode))
		return -EBADMSG;
	if ((uint64_t)sb->st_size < sizeof(struct chan_state))
		return -EBADMSG;
	/* Read the header alone first: the file may be huge or hostile. A
	 * read, not a mapping: a peer may truncate the file after fstat, and
	 * a read then comes back short where a mapped access would raise
	 * SIGBUS before any guard is in place. */
	ssize_t got = pread(fd, copy, sizeof(*copy), 0);
	/* EBADF after fstat succeeded: fd is open, but not for reading
	 * (O_WRONLY, O_PATH): as a read-only one, a descriptor the channel
	 * cannot be used through, -EACCES; -EBADF says "not open"
	 * (channel.h, test_revdoc3_open_fd_mode). */
	if (got < 0)
		return errno == EBADF ? -EACCES : -errno;
	if ((size_t)got != sizeof(*copy))
		return -EBADMSG;
	return validate(copy, (uint64_t)sb->st_size, elt_size, capacity);
}

static int open_fd_impl(int fd, size_t elt_size, size_t capacity,
			unsigned flags, struct canal_chan **out)
{
	if (!out || fd < 0 || flags != CANAL_SHARED)
		return -EINVAL;
	*out = NULL;
	return canal__chan_open_segment(fd, false, elt_size, capacity, out);
}

int canal__chan_open_segment(int fd, bool own, size_t elt_size,
			     size_t capacity, struct canal_chan **out)
{
	struct stat sb;
	struct chan_state copy;
	int err = check_segment(fd, elt_size, capacity, &sb, &copy);
	if (err) {
		if (own)
			canal__segment_close(fd);
		return err;
	}
	struct canal_chan *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		if (own)
			canal__segment_close(fd);
		return -ENOMEM;
	}
	/* The handle's descriptor: fd itself, or one of its own (a parked
	 * one where this process holds record locks on the file: liveness.c) */
	int myfd = own ? fd : canal__segment_dup(fd, sb.st_dev, sb.st_ino);
	if (myfd < 0) {
		free(ch);
		return myfd;
	}
	struct chan_state *st = mmap(NULL, copy.map_size, PROT_READ | PROT_WRITE,
				     MAP_SHARED, myfd, 0);
	if (st == MAP_FAILED) {
		/* EPERM: a file sealed against writing (F_SEAL_WRITE, or
		 * F_SEAL_FUTURE_WRITE): this process may never write into it,
		 * as with a read-only descriptor: -EACCES (channel.h). */
		err = errno == EPERM ? -EACCES : -errno;
		canal__segment_close(myfd);
		free(ch);
		return err;
	}
	/* The handle's geometry comes from the validated copy, not from the
	 * live header (which a peer could change under us). */
	canal__chan_handle_init(ch, &copy, myfd, true, true);
	ch->st = st;
	ch->slots = (char *)st + copy.slots_offset;
	/* A file that can still shrink (a named one) is guarded, before the
	 * first access to the mapping (canal__attach writes the header): a
	 * truncation from then on makes the handle damaged, not the process
	 * killed. */
	int seals = fcntl(myfd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		canal__sigbus_guard(ch);
	if ((err = canal__attach(ch))) {
		canal_chan_destroy(ch);
		return err;
	}
	if (chan_damaged(ch)) {
		canal_chan_destroy(ch);
		return -EBADMSG; /* cut short while we attached */
	}
	*out = ch;
	return 0;
}

CANAL_EXPORT int canal_chan_open_fd(int fd, size_t elt_size, size_t capacity,
				 unsigned flags, struct canal_chan **out)
{
	int saved = errno; /* channel.h: errno is not touched */
	int r = open_fd_impl(fd, elt_size, capacity, flags, out);
	errno = saved;
	return r;
}
