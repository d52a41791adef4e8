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
 * The lock must belong to this handle alone: it is taken through a
 * description of the memory file that the handle opened for it (lock_fd,
 * reopened through /proc/self/fd, never a dup(), and never mapped). After
 * fork() the child shares that description with its parent, so a child
 * re-attaches at its first claim (or the first time it asks about
 * liveness): it closes its copy (the parent keeps the lock) and takes a
 * description, an id and a lock of its own. A child that never uses the
 * channel keeps its copy until it exits or execs (close-on-exec): until
 * then its parent's death is not detected. Without /proc (no way to get a
 * description of one's own) a handle has no lock, and its named claims are
 * never taken for dead: only the anonymous-claim delay applies.
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* Liveness bytes start here, past the largest segment (2^46 bytes). */
#define LIVENESS_BASE ((off_t)1 << 48)

/* An attacher id with this bit holds no lock (see above). */
#define ID_UNLOCKED 0x80000000u

static _Atomic uint32_t cached_pid;

/* Serializes re-attachment in a forked child: a spin lock that the child
 * of a fork resets (the thread that held it does not exist there), taken
 * by snoozing through the parker (never blocks a task's loop). */
static _Atomic int reattach_lock;

static void forget_pid(void)
{
	atomic_store_explicit(&cached_pid, 0, memory_order_relaxed);
	atomic_store_explicit(&reattach_lock, 0, memory_order_relaxed);
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

/* "/proc/self/fd/<fd>" into path (32 bytes), without snprintf: a forked
 * child re-attaches on its first claim (reattach), and printf's code and
 * tables are pages it would fault in just for this (fwd between
 * processes: 6 page faults per child, 2 000 children). */
static void proc_fd_path(char path[32], int fd)
{
	static const char prefix[] = "/proc/self/fd/";
	char digits[12];
	int n = 0;
	unsigned v = (unsigned)fd;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	memcpy(path, prefix, sizeof(prefix) - 1);
	char *p = path + sizeof(prefix) - 1;
	while (n > 0)
		*p++ = digits[--n];
	*p = '\0';
}

int canal__reopen_fd(int fd)
{
	char path[32];
	if (fd < 0)
		return -EBADF;
	proc_fd_path(path, fd);
	int nfd = open(path, O_RDWR | O_CLOEXEC);
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
		id = (atomic_fetch_add_explicit(&ch->st->next_attacher, 1,
						memory_order_relaxed) + 1) &
		     ~ID_UNLOCKED;
	while (id == 0);
	int lfd = canal__reopen_fd(ch->fd);
	if (lfd >= 0 && lock_byte(lfd, id, F_OFD_SETLK, F_WRLCK, NULL) < 0) {
		close(lfd);
		lfd = -1;
	}
	if (lfd < 0)
		id |= ID_UNLOCKED;
	ch->lock_fd = lfd;
	atomic_store_explicit(&ch->attach_id, id, memory_order_relaxed);
	atomic_store_explicit(&ch->attach_pid, self_pid(), memory_order_release);
	return 0;
}

/* In a forked child: a lock description and an id of our own. */
static void reattach(struct canal_chan *ch)
{
	struct canal__snooze sn = CANAL__SNOOZE_INIT;
	int z = 0;
	while (!atomic_compare_exchange_weak_explicit(&reattach_lock, &z, 1,
						      memory_order_acquire,
						      memory_order_relaxed)) {
		z = 0;
		canal__snooze(&sn);
	}
	if (atomic_load_explicit(&ch->attach_pid, memory_order_acquire) !=
	    self_pid()) {
		if (ch->lock_fd >= 0)
			close(ch->lock_fd); /* the parent's stays open */
		ch->lock_fd = -1;
		canal__attach(ch);
	}
	atomic_store_explicit(&reattach_lock, 0, memory_order_release);
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
	if (id == 0 || (id & ID_UNLOCKED) || id == canal__self_id(ch))
		return false; /* not told by a lock: never taken for dead */
	/* Any description of ours may ask (F_OFD_GETLK reports the locks
	 * of other descriptions); the lock's own is preferred, the
	 * mapping's serves a handle without one. */
	int fd = ch->lock_fd >= 0 ? ch->lock_fd : ch->fd;
	struct flock fl = { .l_type = F_WRLCK };
	if (lock_byte(fd, id, F_OFD_GETLK, F_WRLCK, &fl) < 0)
		return false; /* cannot tell: assume alive */
	return fl.l_type == F_UNLCK;
}
