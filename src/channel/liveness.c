/* SPDX-License-Identifier: MIT */
/*
 * liveness.c - who is alive among the processes attached to a shared
 * channel, told by what the kernel releases with a process, never by pid.
 *
 * A pid says nothing reliable: it is reused once its process is reaped,
 * and a process in another PID namespace (a container sharing the segment)
 * has another number there. Instead, each handle of a shared channel takes
 * an attacher id (a counter in the segment) and holds a write lock on one
 * byte of the memory file at LIVENESS_BASE + id, far past its end (locks
 * past the end of a file are allowed and cost no memory). Anyone asks
 * F_OFD_GETLK on that byte through a description of the file: no
 * conflicting lock means the attacher is gone (an OFD question is answered
 * with every lock not held through the asking description, including the
 * asker's own process's record locks; no lock is ever held through a
 * handle's fd, so the answer is complete). Owner words name attacher ids.
 *
 * Two kinds of lock, by how the handle came to this process (lock_kind):
 *
 *  LIVE_OFD: a handle made here (create, open, open_fd, recv_handle) holds
 *    an open-file-description lock (F_OFD_SETLK) through a description of
 *    the memory file of its own (lock_fd: reopened through /proc/self/fd,
 *    never a dup(), never mapped, never shown to the application). The
 *    kernel drops it when the last reference to that description goes,
 *    that is when the process dies, and whatever the application does with
 *    its own descriptors of the file.
 *
 *  LIVE_POSIX: a handle inherited through fork() re-attaches in the child,
 *    at its first claim or its first question about liveness, with a
 *    process-associated record lock (F_SETLK) through the descriptor it
 *    inherited: record locks are not inherited, so the lock is the child's
 *    own without a description of its own, and without /proc. That is the
 *    cost that matters for processes forked by the thousand (fwd between
 *    processes, 2 000 children on one channel, AMD EPYC 2026-11-30): a
 *    reopen through /proc costs a new process about 28 us of CPU, and the
 *    release of an OFD lock at exit walks the file's list of locks twice
 *    more than a record lock's; 113 ms of CPU a run against 52.
 *    The catch of record locks: the kernel drops all of a process's record
 *    locks on a file when the process closes ANY descriptor of that file.
 *    So every close by canal of a descriptor that may name a memory file
 *    goes through canal__segment_close, which parks the descriptor (keeps
 *    it open) while a record lock of this process is on that file, and
 *    closes the parked ones when the last such lock goes. The application
 *    must not close, in a forked child, a descriptor of the memory file of
 *    an inherited handle the child has used (channel.h): the child would
 *    look dead to its peers.
 *
 * Fork. The child starts without record locks, holding copies of its
 * parent's lock descriptions, which would keep the parent's locks held
 * (its death unseen) as long as the child lives. The fork handler closes
 * them in the child at once (before the child has any record lock, so the
 * closes drop nothing of its own) and forgets the parked descriptors'
 * reasons (the parent's record locks): it closes them too. Each inherited
 * handle then re-attaches at its first use (attach_pid differs from the
 * child's pid). A child made without fork()'s handlers (a raw clone) keeps
 * its parent's id and locks: it is the parent, for liveness.
 *
 * Without /proc (no description of one's own) a handle made here holds no
 * lock (LIVE_NONE): its id is marked ID_UNLOCKED and its claims are never
 * taken for dead; only the anonymous-claim delay applies (repair.c).
 *
 * The registry: the process's shared handles (chained through
 * live_prev/live_next), the count of those holding record locks, and the
 * parked descriptors, under one spin lock (registry_lock, taken by snoozing
 * through the parker: never blocks a task's loop). Everything above runs
 * under it: attaching, re-attaching, closing, and fork() itself (taken by
 * the prepare handler, released in parent and child), so the child's copy
 * is whole and unlocked, and no record lock is taken between another
 * thread's look at the registry and its close.
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Liveness bytes start here, past the largest segment (2^46 bytes). */
#define LIVENESS_BASE ((off_t)1 << 48)

/* An attacher id with this bit holds no lock (see above). */
#define ID_UNLOCKED 0x80000000u

/* What holds a handle's liveness lock (lock_kind). */
enum { LIVE_NONE, LIVE_OFD, LIVE_POSIX };

static _Atomic uint32_t cached_pid;

static _Atomic int registry_lock;
static struct canal_chan *handles;
static unsigned record_locks; /* handles in the chain with LIVE_POSIX */

struct parked_fd {
	int fd;
	dev_t dev;
	ino_t ino;
};
static struct parked_fd *parked;
static unsigned nparked, parked_cap;

static void registry_take(void)
{
	struct canal__snooze sn = CANAL__SNOOZE_INIT;
	int z = 0;
	while (!atomic_compare_exchange_weak_explicit(&registry_lock, &z, 1,
						      memory_order_acquire,
						      memory_order_relaxed)) {
		z = 0;
		canal__snooze(&sn);
	}
}

static void registry_release(void)
{
	atomic_store_explicit(&registry_lock, 0, memory_order_release);
}

static void fork_prepare(void)
{
	registry_take();
}

static void fork_parent(void)
{
	registry_release();
}

/* In the child, the only thread, holding the registry (fork_prepare). */
static void fork_child(void)
{
	atomic_store_explicit(&cached_pid, 0, memory_order_relaxed);
	for (struct canal_chan *c = handles; c; c = c->live_next) {
		if (c->lock_fd >= 0)
			close(c->lock_fd); /* the parent's lock: its copy stays */
		c->lock_fd = -1;
		c->lock_kind = LIVE_NONE;
	}
	record_locks = 0;
	for (unsigned i = 0; i < nparked; i++)
		close(parked[i].fd);
	nparked = 0;
	registry_release();
}

static void register_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static uint32_t self_pid(void)
{
	uint32_t pid = atomic_load_explicit(&cached_pid, memory_order_relaxed);
	if (likely(pid))
		return pid;
	pid = (uint32_t)getpid();
	atomic_store_explicit(&cached_pid, pid, memory_order_relaxed);
	return pid;
}

/* "/proc/self/fd/<fd>" into path (32 bytes), without snprintf (printf's
 * code and tables are pages a process would fault in just for this). */
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

static uint32_t new_id(struct canal_chan *ch)
{
	uint32_t id;
	/* 0 is never an id (owner words of a fresh ring are 0). */
	do
		id = (atomic_fetch_add_explicit(&ch->st->next_attacher, 1,
						memory_order_relaxed) + 1) &
		     ~ID_UNLOCKED;
	while (id == 0);
	return id;
}

/* Registry held: does a record lock of this process, other than skip's,
 * lie on the file (dev, ino)? */
static bool record_locked(dev_t dev, ino_t ino, const struct canal_chan *skip)
{
	if (!record_locks)
		return false;
	for (const struct canal_chan *c = handles; c; c = c->live_next)
		if (c != skip && c->lock_kind == LIVE_POSIX && c->dev == dev &&
		    c->ino == ino)
			return true;
	return false;
}

/* Registry held: close fd, a descriptor of the file (dev, ino), unless a
 * record lock of this process (other than skip's) lies on that file: then
 * park it. Without memory to park it, it stays open, forgotten: a
 * descriptor lost is better than a live process taken for dead. */
static void close_or_park(int fd, dev_t dev, ino_t ino,
			  const struct canal_chan *skip)
{
	if (!record_locked(dev, ino, skip)) {
		close(fd);
		return;
	}
	if (nparked == parked_cap) {
		unsigned cap = parked_cap ? 2 * parked_cap : 8;
		struct parked_fd *p = realloc(parked, cap * sizeof(*p));
		if (!p)
			return;
		parked = p;
		parked_cap = cap;
	}
	parked[nparked++] = (struct parked_fd){ fd, dev, ino };
}

/* Registry held: the last record lock on (dev, ino) is gone; close the
 * descriptors parked for it. */
static void close_parked(dev_t dev, ino_t ino)
{
	if (record_locked(dev, ino, NULL))
		return;
	for (unsigned i = 0; i < nparked;) {
		if (parked[i].dev == dev && parked[i].ino == ino) {
			close(parked[i].fd);
			parked[i] = parked[--nparked];
		} else {
			i++;
		}
	}
}

static void chain(struct canal_chan *ch)
{
	ch->live_prev = NULL;
	ch->live_next = handles;
	if (handles)
		handles->live_prev = ch;
	handles = ch;
}

static void unchain(struct canal_chan *ch)
{
	if (ch->live_prev)
		ch->live_prev->live_next = ch->live_next;
	else if (handles == ch)
		handles = ch->live_next;
	else
		return; /* never chained (its attach failed) */
	if (ch->live_next)
		ch->live_next->live_prev = ch->live_prev;
	ch->live_prev = ch->live_next = NULL;
}

/* Registry held: an OFD lock on id through a description of our own, or
 * the id marked unlocked. */
static uint32_t lock_ofd(struct canal_chan *ch, uint32_t id)
{
	int lfd = canal__reopen_fd(ch->fd);
	if (lfd >= 0 && lock_byte(lfd, id, F_OFD_SETLK, F_WRLCK, NULL) < 0) {
		close_or_park(lfd, ch->dev, ch->ino, NULL);
		lfd = -1;
	}
	ch->lock_fd = lfd;
	ch->lock_kind = lfd >= 0 ? LIVE_OFD : LIVE_NONE;
	return lfd >= 0 ? id : id | ID_UNLOCKED;
}

int canal__attach(struct canal_chan *ch)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct stat sb;
	if (fstat(ch->fd, &sb) < 0)
		return -errno;
	ch->dev = sb.st_dev;
	ch->ino = sb.st_ino;
	pthread_once(&once, register_atfork);
	registry_take();
	uint32_t id = lock_ofd(ch, new_id(ch));
	chain(ch);
	atomic_store_explicit(&ch->attach_id, id, memory_order_relaxed);
	atomic_store_explicit(&ch->attach_pid, self_pid(), memory_order_release);
	registry_release();
	return 0;
}

/* In a forked child: an id and a record lock of our own (an OFD lock if
 * the kernel refuses the record lock). */
static void reattach(struct canal_chan *ch)
{
	registry_take();
	if (atomic_load_explicit(&ch->attach_pid, memory_order_acquire) !=
	    self_pid()) {
		/* A child made without the fork handler still holds its
		 * parent's description: let it go first (it would keep
		 * the parent looking alive). */
		if (ch->lock_fd >= 0)
			close_or_park(ch->lock_fd, ch->dev, ch->ino, NULL);
		ch->lock_fd = -1;
		uint32_t id = new_id(ch);
		if (lock_byte(ch->fd, id, F_SETLK, F_WRLCK, NULL) == 0) {
			ch->lock_kind = LIVE_POSIX;
			record_locks++;
		} else {
			id = lock_ofd(ch, id);
		}
		atomic_store_explicit(&ch->attach_id, id, memory_order_relaxed);
		atomic_store_explicit(&ch->attach_pid, self_pid(),
				      memory_order_release);
	}
	registry_release();
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
	/* Through the handle's own fd: no lock is ever held through it, so
	 * every lock on the byte answers (see the top). */
	struct flock fl = { .l_type = F_WRLCK };
	if (lock_byte(ch->fd, id, F_OFD_GETLK, F_WRLCK, &fl) < 0)
		return false; /* cannot tell: assume alive */
	return fl.l_type == F_UNLCK;
}

void canal__detach(struct canal_chan *ch)
{
	registry_take();
	unchain(ch);
	bool recorded = ch->lock_kind == LIVE_POSIX;
	if (recorded)
		record_locks--;
	ch->lock_kind = LIVE_NONE;
	if (ch->lock_fd >= 0)
		close_or_park(ch->lock_fd, ch->dev, ch->ino, NULL);
	if (ch->fd >= 0)
		close_or_park(ch->fd, ch->dev, ch->ino, NULL);
	if (recorded)
		close_parked(ch->dev, ch->ino);
	ch->lock_fd = ch->fd = -1;
	registry_release();
}

void canal__segment_close(int fd)
{
	if (fd < 0)
		return;
	registry_take();
	struct stat sb;
	if (record_locks && fstat(fd, &sb) == 0)
		close_or_park(fd, sb.st_dev, sb.st_ino, NULL);
	else
		close(fd);
	registry_release();
}
