/* SPDX-License-Identifier: MIT */
/*
 * liveness.c - who is alive among the processes attached to a shared
 * channel, told by what the kernel releases with a process, never by pid.
 *
 * A pid says nothing reliable: it is reused once its process is reaped,
 * and a process in another PID namespace (a container sharing the segment)
 * has another number there. Instead, each handle of a shared channel takes
 * an attacher id (a counter in the segment) and holds an open-file-
 * description lock (F_OFD_SETLK, write) on one byte of the memory file at
 * LIVENESS_BASE + id, far past its end (locks past the end of a file are
 * allowed and cost no memory). The kernel drops the lock when the last
 * reference to that open file description goes: when the process dies,
 * whatever killed it. Anyone asks F_OFD_GETLK on that byte: no conflicting
 * lock means the attacher is gone. Owner words name attacher ids.
 *
 * The lock must belong to this handle alone, so a handle never shares its
 * open file description: it reopens the memory file through
 * /proc/self/fd (a new description of the same file) instead of dup().
 * After fork() the child shares the parent's description (the fd and the
 * mapping both refer to it), so a child re-attaches at its first claim: a
 * new description, the mapping replaced by one of it (MAP_FIXED, same file,
 * same contents), a new id and lock. A child that never uses the channel
 * keeps its parent's description referenced until it exits or execs (the
 * fd is close-on-exec): until then the parent's death is not detected.
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Liveness bytes start here, past the largest segment (2^46 bytes). */
#define LIVENESS_BASE ((off_t)1 << 48)

static _Atomic uint32_t cached_pid;

static void forget_pid(void)
{
	atomic_store_explicit(&cached_pid, 0, memory_order_relaxed);
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_pid);
}

static uint32_t self_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	uint32_t pid = atomic_load_explicit(&cached_pid, memory_order_relaxed);
	if (likely(pid))
		return pid;
	pthread_once(&once, register_atfork);
	pid = (uint32_t)getpid();
	atomic_store_explicit(&cached_pid, pid, memory_order_relaxed);
	return pid;
}

int canal__reopen_fd(int fd)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int nfd = open(path, O_RDWR | O_CLOEXEC);
	if (nfd >= 0)
		return nfd;
	/* No /proc: share the description (liveness then follows whoever
	 * else holds it: documented in docs/GUARANTEES.md). */
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return nfd >= 0 ? nfd : -errno;
}

static int lock_byte(int fd, uint32_t id, int cmd, short type,
		     struct flock *out)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = LIVENESS_BASE + (off_t)id,
		.l_len = 1,
	};
	if (fcntl(fd, cmd, &fl) < 0)
		return -errno;
	if (out)
		*out = fl;
	return 0;
}

int canal__attach(struct canal_chan *ch)
{
	uint32_t id;
	/* 0 is never an id (owner words of a fresh ring are 0). */
	do
		id = atomic_fetch_add_explicit(&ch->st->next_attacher, 1,
					       memory_order_relaxed) + 1;
	while (id == 0);
	int err = lock_byte(ch->fd, id, F_OFD_SETLK, F_WRLCK, NULL);
	if (err)
		return err;
	atomic_store_explicit(&ch->attach_id, id, memory_order_relaxed);
	atomic_store_explicit(&ch->attach_pid, self_pid(), memory_order_release);
	return 0;
}

/* In a forked child: a description, a mapping and an id of our own. */
static pthread_mutex_t reattach_lock = PTHREAD_MUTEX_INITIALIZER;

static void reattach(struct canal_chan *ch)
{
	pthread_mutex_lock(&reattach_lock);
	if (atomic_load_explicit(&ch->attach_pid, memory_order_acquire) !=
	    self_pid()) {
		int nfd = canal__reopen_fd(ch->fd);
		if (nfd >= 0) {
			void *m = mmap(ch->st, ch->map_size,
				       PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_FIXED, nfd, 0);
			if (m == ch->st) {
				close(ch->fd);
				ch->fd = nfd;
			} else {
				close(nfd);
			}
		}
		/* On failure the child keeps the inherited description: its
		 * liveness is then its parent's (never a false death). */
		if (canal__attach(ch) < 0)
			atomic_store_explicit(&ch->attach_pid, self_pid(),
					      memory_order_release);
	}
	pthread_mutex_unlock(&reattach_lock);
}

uint32_t canal__self_id(struct canal_chan *ch)
{
	if (unlikely(atomic_load_explicit(&ch->attach_pid,
					  memory_order_acquire) != self_pid()))
		reattach(ch);
	return atomic_load_explicit(&ch->attach_id, memory_order_relaxed);
}

bool canal__attacher_gone(struct canal_chan *ch, uint32_t id)
{
	if (id == 0)
		return true; /* never attached: no live claimer wrote it */
	if (id == canal__self_id(ch))
		return false;
	struct flock fl = { .l_type = F_WRLCK };
	if (lock_byte(ch->fd, id, F_OFD_GETLK, F_WRLCK, &fl) < 0)
		return false; /* cannot tell: assume alive */
	return fl.l_type == F_UNLCK;
}
