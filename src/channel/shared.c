/* SPDX-License-Identifier: MIT */
/*
 * shared.c - channels between processes: memory files, named segments,
 * hand-over of a channel over a Unix socket, validation of segments that
 * another (possibly buggy or hostile) process wrote, and repair of slots
 * whose claimer died.
 *
 * CRASH REPAIR. In a shared channel, a claimer writes its identity in the
 * slot's owner word right after its CAS of tail or head (pid, 31 bits of
 * the position, role), and publishes or releases the slot with a CAS on the
 * stamp instead of a store. A thread that finds a slot stuck (claimed but
 * not published, or taken but not released) for more than a millisecond
 * asks chan_repair_slot():
 *  - if the owner word names this position and role, and that process is
 *    gone (kill(pid, 0) says ESRCH, or it is a zombie), the slot is
 *    repaired at once;
 *  - if the owner word does not name this position (the claimer died
 *    between its CAS and writing its name, or is stopped right there), the
 *    slot is repaired once the waiter has been stuck REPAIR_ANONYMOUS_NS
 *    (long, so that a claimer merely descheduled in that window of a few
 *    instructions, on a machine with many more processes than cores, is
 *    not taken for dead).
 * Repairing a producer's slot withdraws it (receivers skip it: its send
 * never returned 0, so nothing sent is lost). Repairing a consumer's slot
 * frees it (the element that consumer had taken is lost with it). The
 * repair is a CAS on the stamp from the stuck value: if the claimer was
 * only slow and publishes or releases first, the repair does nothing; if
 * the repair wins, the slow claimer's CAS fails and its operation returns
 * -EOWNERDEAD. So every element is delivered at most once.
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* A stuck slot with no owner recorded is repaired after this long. */
#define REPAIR_ANONYMOUS_NS 900000000ull

int chan_create_shared_fd(size_t map_size, const char *name);

int chan_create_shared_fd(size_t map_size, const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)map_size) < 0) {
		int e = errno;
		close(fd);
		return e == EFBIG || e == EINVAL ? -ENOMEM : -e;
	}
	return fd;
}

/* ------------------------------------------------------------------ */
/* Validation                                                          */
/* ------------------------------------------------------------------ */

static int validate(const struct chan_state *st, uint64_t file_size,
		    size_t want_elt_size, size_t want_capacity)
{
	struct chan_geometry g;
	uint64_t magic = atomic_load_explicit((_Atomic uint64_t *)&st->magic,
					      memory_order_acquire);

	if (magic == 0)
		return -EAGAIN; /* being created: its creator has not finished */
	if (magic != CANAL_MAGIC)
		return -EBADMSG;
	if (st->version != CANAL_LAYOUT_VERSION)
		return -EPROTONOSUPPORT;
	if (st->flags != CANAL_SHARED)
		return -EBADMSG;
	if (st->elt_size > CANAL_ELT_SIZE_MAX ||
	    st->capacity > CANAL_CAPACITY_MAX ||
	    chan_geometry(st->elt_size, st->capacity, true, &g) < 0)
		return -EBADMSG;
	if (st->ring != g.ring || st->stride != g.stride ||
	    st->slot_hdr != g.slot_hdr || st->slots_offset != g.slots_offset ||
	    st->map_size != g.map_size)
		return -EBADMSG;
	if (g.map_size > file_size)
		return -EBADMSG; /* truncated */
	uint64_t head = atomic_load_explicit(&st->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&st->tail, memory_order_relaxed);
	if ((tail >> 1) < head || (tail >> 1) - head > g.ring)
		return -EBADMSG;
	if ((want_elt_size != CANAL_ANY && want_elt_size != st->elt_size) ||
	    (want_capacity != CANAL_ANY && want_capacity != st->capacity))
		return -ERANGE;
	return 0;
}

EXPORT int canal_chan_open_fd(int fd, size_t elt_size, size_t capacity,
			      unsigned flags, struct canal_chan **out)
{
	struct stat sb;

	if (!out || fd < 0 || flags != CANAL_SHARED)
		return -EINVAL;
	*out = NULL;
	if (fstat(fd, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -EBADMSG;
	if ((uint64_t)sb.st_size < sizeof(struct chan_state))
		return sb.st_size == 0 ? -EAGAIN : -EBADMSG;
	/* Map the header alone first: the file may be huge or hostile. */
	struct chan_state *hdr = mmap(NULL, sizeof(struct chan_state),
				      PROT_READ, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		return -errno;
	struct chan_state copy;
	memcpy(&copy, hdr, sizeof(copy));
	munmap(hdr, sizeof(struct chan_state));
	int err = validate(&copy, (uint64_t)sb.st_size, elt_size, capacity);
	if (err)
		return err;

	struct canal_chan *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	int myfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (myfd < 0) {
		err = -errno;
		free(ch);
		return err;
	}
	struct chan_state *st = mmap(NULL, copy.map_size, PROT_READ | PROT_WRITE,
				     MAP_SHARED, myfd, 0);
	if (st == MAP_FAILED) {
		err = -errno;
		close(myfd);
		free(ch);
		return err;
	}
	/* The handle's geometry comes from the validated copy, not from the
	 * live header (which a peer could change under us). */
	chan_handle_init(ch, &copy, myfd, true, true);
	ch->st = st;
	ch->slots = (char *)st + copy.slots_offset;
	*out = ch;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Named channels                                                      */
/* ------------------------------------------------------------------ */

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

EXPORT int canal_chan_create_named(const char *name, size_t elt_size,
				   size_t capacity, unsigned flags,
				   unsigned mode, struct canal_chan **out)
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
	if ((err = chan_geometry(elt_size, capacity, true, &g)))
		return err;
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  mode ? (mode_t)mode : 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)g.map_size) < 0) {
		err = errno == EFBIG || errno == EINVAL ? -ENOMEM : -errno;
		goto fail;
	}
	struct chan_state *st = mmap(NULL, g.map_size, PROT_READ | PROT_WRITE,
				     MAP_SHARED, fd, 0);
	if (st == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	chan_state_init(st, elt_size, capacity, flags, &g);
	munmap(st, g.map_size);
	err = canal_chan_open_fd(fd, elt_size, capacity, CANAL_SHARED, out);
	close(fd);
	if (err)
		shm_unlink(path);
	return err;
fail:
	close(fd);
	shm_unlink(path);
	return err;
}

EXPORT int canal_chan_open(const char *name, size_t elt_size, size_t capacity,
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
	int fd = shm_open(path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = canal_chan_open_fd(fd, elt_size, capacity, flags, out);
	close(fd);
	return err;
}

EXPORT int canal_chan_unlink(const char *name)
{
	char path[NAME_MAX_LEN + 2];
	int err = shm_path(name, path, sizeof(path));
	if (err)
		return err;
	return shm_unlink(path) < 0 ? -errno : 0;
}

EXPORT int canal_chan_fd(const struct canal_chan *ch)
{
	if (!ch || !ch->shared || ch->fd < 0)
		return -EINVAL;
	return ch->fd;
}

/* ------------------------------------------------------------------ */
/* Hand-over over a Unix socket                                        */
/* ------------------------------------------------------------------ */

EXPORT int canal_chan_send_handle(int sock, const struct canal_chan *ch)
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
	return r < 0 ? -errno : 0;
}

EXPORT int canal_chan_recv_handle(int sock, size_t elt_size, size_t capacity,
				  unsigned flags, struct canal_chan **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
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
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)) || (msg.msg_flags & MSG_CTRUNC))
		return -EBADMSG;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	int err = canal_chan_open_fd(fd, elt_size, capacity, flags, out);
	close(fd);
	return err;
}

/* ------------------------------------------------------------------ */
/* Crash repair                                                        */
/* ------------------------------------------------------------------ */

static bool process_gone(uint32_t pid)
{
	if (pid == 0 || pid > INT_MAX)
		return true;
	if (pid == chan_self_pid())
		return false;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return true;
	/* A killed child that its parent has not reaped yet is a zombie:
	 * dead for us. */
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

void chan_repair_slot(struct canal_chan *ch, uint64_t pos, uint64_t stuck_ns)
{
	struct canal_slot_hdr *s = slot_at(ch, pos);
	uint64_t st = atomic_load_explicit(&s->stamp, memory_order_acquire);
	uint64_t sp = (st >> 2) + ring_index(ch, pos);
	uint64_t repaired;
	unsigned role;

	if ((st & 3) == STAMP_FREE) {
		/* Position sp: claimed by a sender that has not published? */
		uint64_t t = atomic_load_explicit(&ch->st->tail,
						  memory_order_seq_cst);
		if ((t >> 1) <= sp)
			return;
		role = 0;
		repaired = stamp_for(ch, sp, STAMP_SKIP);
	} else {
		/* Taken by a receiver that has not released it? */
		uint64_t h = atomic_load_explicit(&ch->st->head,
						  memory_order_seq_cst);
		if (h <= sp)
			return;
		role = 1;
		repaired = stamp_next_lap(ch, sp, STAMP_FREE);
	}
	uint64_t owner = atomic_load_explicit(&s->owner[0],
					      memory_order_acquire);
	bool named = (owner & 1) == role &&
		     ((owner >> 1) & 0x7fffffffu) == (sp & 0x7fffffffu);
	if (named ? !process_gone((uint32_t)(owner >> 32))
		  : stuck_ns < REPAIR_ANONYMOUS_NS)
		return;
	if (atomic_compare_exchange_strong_explicit(&s->stamp, &st, repaired,
						    memory_order_seq_cst,
						    memory_order_relaxed)) {
		waitq_notify(&ch->st->recv_wq, 1, true);
		waitq_notify(&ch->st->send_wq, 1, true);
	}
}
