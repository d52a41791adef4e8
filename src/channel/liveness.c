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
 * F_OFD_GETLK on that byte through the handle's fd: no conflicting lock
 * means the attacher is gone. The answer is complete: an OFD question
 * reports every lock not held through the asking description, and no OFD
 * lock is ever held through a handle's fd (record locks belong to
 * processes, not descriptions, and are all reported, the asker's own
 * process's included). Owner words name attacher ids.
 *
 * Two kinds of lock, by how the handle came to this process (lock_kind):
 *
 *  LIVE_OFD: a handle made here (create, open, open_fd, recv_handle) holds
 *    an open-file-description lock (F_OFD_SETLK) through a description of
 *    the memory file of its own, reopened through /proc/self/fd (never a
 *    dup()), then held by a one-page PROT_NONE mapping (lock_map, never
 *    touched) marked MADV_DONTFORK, and by no descriptor. The kernel drops
 *    the lock when the last reference to the description goes: at munmap
 *    (canal_chan_destroy), or when the process dies or execs, whatever the
 *    application does with its own descriptors of the file. A child made
 *    by fork() gets no copy of the mapping: it never holds its parent's
 *    lock (a descriptor would be copied, and would keep the parent looking
 *    alive as long as the child lives, unless every fork closed it, with a
 *    walk of the file's lock list each). The descriptor exists for a few
 *    system calls; fork() is kept out of that window: the prepare handler
 *    takes the registry lock, under which it runs (test_revlive_fork_window).
 *    A child made without fork()'s handlers (_Fork, a raw clone) by another
 *    thread in that window may copy the descriptor.
 *
 *  LIVE_POSIX: a handle inherited through fork() re-attaches in the child,
 *    at its first claim or its first question about liveness, with a
 *    process-associated record lock (F_SETLK) through the descriptor it
 *    inherited: record locks are not inherited, so the lock is the child's
 *    own without a description of its own, without /proc, and without a
 *    descriptor or a mapping more. That is the cost that matters for
 *    processes forked by the thousand: fwd between processes at 1000/1000
 *    (2 000 children, two channels; AMD EPYC, 2026-11-30, 11 rounds) takes
 *    220 ms of wall time and 390 of CPU, against 234 and 421 when each
 *    child reopened the file through /proc for an OFD lock of its own.
 *    The catch of record locks: the kernel drops all of a process's record
 *    locks on a file when the process closes ANY descriptor of that file.
 *    So canal never closes a descriptor of a file it holds record locks
 *    on: its closes go through canal__segment_close or close_or_park,
 *    which park such a descriptor (keep it open) and close the parked ones
 *    when the last record lock on the file goes; and a new handle of such
 *    a file takes a parked descriptor, or a dup of one the process has,
 *    instead of opening the file again (canal__segment_dup,
 *    canal__segment_reuse), so that opening and destroying handles does not
 *    pile descriptors up (test_revlive_park_leak). Only a descriptor
 *    received (canal_chan_recv_handle) is new: it stays open, the handle's,
 *    then parked, until the process's last record lock on the file goes.
 *    The application must not close, in a forked child, a descriptor of
 *    the memory file of an inherited handle the child has used
 *    (channel.h): the child would look dead to its peers.
 *
 * Which process attached: a handle records the token of the process that
 * attached it (attach_token), 64 random bits drawn at the process's first
 * use of the registry, which is in pages marked MADV_WIPEONFORK: every
 * child, however made (fork, _Fork, a raw clone without CLONE_VM), starts
 * with it zeroed, so with no token, no record lock counted and nothing
 * parked, and draws a token of its own. Not a pid: a pid is reused, and a
 * process that got a dead ancestor's pid took that ancestor's id
 * (test_revlive_pid_reuse); a cached pid outlives a fork made without
 * handlers (test_revlive_rawfork). A handle's lock_kind and lock_map are
 * this process's only when its token is this process's: in a child they
 * are the parent's (its mapping absent, its record locks not inherited)
 * until the handle re-attaches, and are never acted on (never unmapped:
 * the child may have mapped something else at that address). Where the
 * kernel refuses MADV_WIPEONFORK (before Linux 4.14), the registry is a
 * static one that the fork handler resets (fork() only).
 *
 * A process that holds record locks on a file takes no OFD lock there: a
 * new handle of it on that file takes a record lock too. So no parked
 * descriptor is a lock's description, and a child may forget its
 * parent's parked ones (they hold no lock; they are closed at exit or
 * exec).
 *
 * Without /proc, or without room for the mapping (vm.max_map_count), a
 * handle made here holds no lock (LIVE_NONE): its id is marked
 * ID_UNLOCKED and its claims are never taken for dead; only the
 * anonymous-claim delay applies (repair.c). A forked child needs neither.
 *
 * The registry (struct registry): the token, the files this process holds
 * record locks on (with how many handles hold them and one open
 * descriptor of each), and the parked descriptors, under one spin lock
 * taken by snoozing through the parker (never blocks a task's loop).
 * Attaching, re-attaching and closing run under it, so no record lock is
 * taken between another thread's look at the registry and its close, and
 * fork() takes it too (prepare handler; the child's copy is wiped). The
 * parent's release after fork() copies no page: fork() does not share
 * a wiped page with the child.
 */
#define _GNU_SOURCE 1
#include "internal.h"
#include "base/syscall.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Liveness bytes start here, past the largest segment (2^46 bytes). */
#define LIVENESS_BASE ((off_t)1 << 48)

/* An attacher id with this bit holds no lock (see above). */
#define ID_UNLOCKED 0x80000000u

/* The mapping that holds an OFD lock's description (rounded to a page). */
#define LOCK_MAP_LEN 1

/* What holds a handle's liveness lock (lock_kind). */
enum { LIVE_NONE, LIVE_OFD, LIVE_POSIX };

/* A file this process holds record locks on, and how many handles. */
struct rec_file {
	dev_t dev;
	ino_t ino;
	unsigned locks;
	int any_fd; /* an open descriptor of the file (a handle's or parked) */
};

struct parked_fd {
	int fd;
	dev_t dev;
	ino_t ino;
};

/* The registry's tables are fixed (no allocation: a child's copy is
 * wiped whole, and nothing it points to is left behind). Past REC_MAX
 * files a handle takes an OFD lock instead; past PARKED_MAX a descriptor
 * that would be parked stays open, forgotten. */
#define REC_MAX 1024
#define PARKED_MAX 1024

struct registry {
	_Atomic int lock;
	_Atomic uint64_t token; /* this process's, 0 until asked */
	unsigned nrec, nparked;
	struct rec_file rec[REC_MAX];
	struct parked_fd parked[PARKED_MAX];
};
/* The registry: in pages of its own marked MADV_WIPEONFORK (every child,
 * however made, starts with it zeroed), else in fallback_reg, which the
 * fork handler resets. Set once, before any handle is attached. */
static alignas(CANAL_CACHELINE) struct registry fallback_reg;
static struct registry *regp = &fallback_reg;
#define reg (*regp)

static void registry_take(void)
{
	struct canal__snooze sn = CANAL__SNOOZE_INIT;
	int z = 0;
	while (!atomic_compare_exchange_weak_explicit(&reg.lock, &z, 1,
						      memory_order_acquire,
						      memory_order_relaxed)) {
		z = 0;
		canal__snooze(&sn);
	}
}

static void registry_release(void)
{
	atomic_store_explicit(&reg.lock, 0, memory_order_release);
}

static void fork_prepare(void)
{
	registry_take();
}

static void fork_parent(void)
{
	registry_release();
}

/* In the child of fork(), its only thread, holding the registry
 * (fork_prepare). A wiped registry is already a fresh one; the fallback
 * is made one: no token yet, no record lock of the child's, and the
 * descriptors its parent had parked hold nothing of it (no lock
 * description is ever parked: see above). */
static void fork_child(void)
{
	if (regp != &fallback_reg) {
		/* Wiped: already a fresh registry. A store (of the 0 it
		 * holds) maps its first page at once, where the child's
		 * first look at its token (a read) would map the zero page
		 * and its first attach fault once more to write it. */
		atomic_store_explicit(&reg.lock, 0, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&reg.token, 0, memory_order_relaxed);
	reg.nrec = 0;
	for (unsigned i = 0; i < reg.nparked; i++)
		close(reg.parked[i].fd);
	reg.nparked = 0;
	registry_release();
}

static void registry_setup(void)
{
	void *p = mmap(NULL, sizeof(struct registry), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED &&
	    madvise(p, sizeof(struct registry), MADV_WIPEONFORK) < 0) {
		munmap(p, sizeof(struct registry));
		p = MAP_FAILED;
	}
	regp = p != MAP_FAILED ? p : &fallback_reg;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void registry_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, registry_setup);
}

/* Cold: this process's token, drawn at its first use (see above). */
static uint64_t new_token(void)
{
	uint64_t t = 0;
	/* Inline (base/syscall.h): a forked child's first attach. */
	if (canal__syscall(SYS_getrandom, &t, sizeof(t), GRND_NONBLOCK, 0, 0,
			   0) != (long)sizeof(t)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t = ((uint64_t)getpid() << 32) ^ ((uint64_t)ts.tv_sec << 30) ^
		    (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&ts;
	}
	t |= 1; /* never 0 */
	uint64_t none = 0;
	/* Two threads of a new process may draw at once: one token wins. */
	if (!atomic_compare_exchange_strong_explicit(&reg.token, &none, t,
						     memory_order_relaxed,
						     memory_order_relaxed))
		t = none;
	return t;
}

static inline uint64_t self_token(void)
{
	uint64_t t = atomic_load_explicit(&reg.token, memory_order_relaxed);
	return likely(t) ? t : new_token();
}

/* The handle's lock_kind and lock_map are this process's (see above). */
static bool attached_here(const struct canal_chan *ch)
{
	return atomic_load_explicit(&ch->attach_token, memory_order_acquire) ==
	       self_token();
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
#if __SIZEOF_LONG__ == 8
	/* Inline (base/syscall.h): a forked child's first attach. With
	 * 64-bit longs, fcntl's struct flock is the kernel's (64-bit
	 * offsets), passed as libc passes it. */
	long r = canal__syscall(SYS_fcntl, fd, cmd, &fl, 0, 0, 0);
#else
	long r = fcntl(fd, cmd, &fl) < 0 ? -errno : 0;
#endif
	if (r < 0)
		return (int)r;
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

/* Registry held: the record-locked file (dev, ino), or NULL. */
static struct rec_file *rec_find(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < reg.nrec; i++)
		if (reg.rec[i].dev == dev && reg.rec[i].ino == ino)
			return &reg.rec[i];
	return NULL;
}

/* Registry held: an entry for (dev, ino) with no lock counted yet, or
 * NULL when the table is full. */
static struct rec_file *rec_new(dev_t dev, ino_t ino)
{
	if (reg.nrec == REC_MAX)
		return NULL;
	reg.rec[reg.nrec] = (struct rec_file){ dev, ino, 0, -1 };
	return &reg.rec[reg.nrec++];
}

static void rec_remove(struct rec_file *r)
{
	*r = reg.rec[--reg.nrec];
}

/* Registry held: close fd, a descriptor of the file (dev, ino), unless
 * this process holds record locks on that file: then park it. Without
 * room to park it, it stays open, forgotten: a descriptor lost is
 * better than a live process taken for dead. */
static void close_or_park(int fd, dev_t dev, ino_t ino)
{
	if (!rec_find(dev, ino)) {
		close(fd);
		return;
	}
	if (reg.nparked == PARKED_MAX)
		return;
	reg.parked[reg.nparked++] = (struct parked_fd){ fd, dev, ino };
}

/* Registry held, no record lock left on (dev, ino): close the
 * descriptors parked for it. */
static void close_parked(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < reg.nparked;) {
		if (reg.parked[i].dev == dev && reg.parked[i].ino == ino) {
			close(reg.parked[i].fd);
			reg.parked[i] = reg.parked[--reg.nparked];
		} else {
			i++;
		}
	}
}

/* Registry held: a descriptor parked for (dev, ino), taken out of the
 * parked ones, or -1. */
static int take_parked(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < reg.nparked; i++) {
		if (reg.parked[i].dev == dev && reg.parked[i].ino == ino) {
			int fd = reg.parked[i].fd;
			reg.parked[i] = reg.parked[--reg.nparked];
			return fd;
		}
	}
	return -1;
}

/* Registry held, no record lock of ours on the file: an OFD lock on id,
 * through a description of our own held by a mapping that fork() does not
 * copy; or the id marked unlocked. */
static uint32_t lock_ofd(struct canal_chan *ch, uint32_t id)
{
	int lfd = canal__reopen_fd(ch->fd);
	if (lfd < 0)
		return id | ID_UNLOCKED;
	void *m = MAP_FAILED;
	if (lock_byte(lfd, id, F_OFD_SETLK, F_WRLCK, NULL) == 0) {
		m = mmap(NULL, LOCK_MAP_LEN, PROT_NONE, MAP_SHARED, lfd, 0);
		if (m != MAP_FAILED &&
		    madvise(m, LOCK_MAP_LEN, MADV_DONTFORK) < 0) {
			munmap(m, LOCK_MAP_LEN);
			m = MAP_FAILED;
		}
	}
	/* The mapping holds the description (and its lock) from here; the
	 * close drops no record lock (there is none on this file). */
	close(lfd);
	if (m == MAP_FAILED)
		return id | ID_UNLOCKED;
	ch->lock_map = m;
	ch->lock_kind = LIVE_OFD;
	return id;
}

/* Registry held: the lock of handle ch on id (see above), the id returned
 * marked unlocked if it has none. */
static uint32_t take_lock(struct canal_chan *ch, uint32_t id, bool inherited)
{
	ch->lock_map = NULL;
	ch->lock_kind = LIVE_NONE;
	struct rec_file *r = rec_find(ch->dev, ch->ino);
	if (!inherited && !r)
		return lock_ofd(ch, id);
	if (!r && !(r = rec_new(ch->dev, ch->ino)))
		return lock_ofd(ch, id);
	if (lock_byte(ch->fd, id, F_SETLK, F_WRLCK, NULL) == 0) {
		if (!r->locks++)
			r->any_fd = ch->fd;
		ch->lock_kind = LIVE_POSIX;
		return id;
	}
	if (r->locks)
		return id | ID_UNLOCKED; /* no OFD lock beside record locks */
	rec_remove(r);
	return lock_ofd(ch, id);
}

/* Whether id's byte is free of locks (of any process, this one's record
 * locks included: see the top), asked through the handle's fd. */
static bool id_free(struct canal_chan *ch, uint32_t id)
{
	struct flock fl = { .l_type = F_WRLCK };
	return lock_byte(ch->fd, id, F_OFD_GETLK, F_WRLCK, &fl) == 0 &&
	       fl.l_type == F_UNLCK;
}

/* Tries of attach_new before it settles for an unlocked id. */
#define ID_TRIES 64

/*
 * Registry held: a new id for handle ch and its lock (take_lock). The
 * counter next_attacher is in the shared header: a peer may set it back
 * to ids in use (or it wraps after 2^31 attaches), and an id whose byte
 * is already locked cannot be locked again (the lock fails: the id would
 * be marked unlocked, never taken for dead, the slots of its holder never
 * repaired; test_revseg2_attacher_collide). So an id whose lock failed
 * because its byte is locked (by another handle, or another attacher
 * given the same id meanwhile) is skipped; the byte free after a failed
 * lock means the lock cannot be had at all (no /proc, no room for the
 * mapping: LIVE_NONE), and the id stays unlocked, as before. A record
 * lock (LIVE_POSIX) is asked first instead when this process already
 * holds record locks on the file: one on a byte it holds succeeds (same
 * owner), and two handles would share the id; a first record lock that
 * meets another process's fails, as an OFD lock does. An OFD lock conflicts with every other lock, this process's too:
 * its failure tells, and the common case costs no system call more.
 * Bounded: after ID_TRIES ids a peer that keeps the counter on ids in use
 * gets this handle an unlocked id, as before. An id whose byte is free
 * may still be a dead attacher's (a counter set back, or wrapped): its
 * owner words then name a live handle and are not repaired; nothing a
 * peer with write access to the header cannot do to the ring anyway.
 */
static uint32_t attach_new(struct canal_chan *ch, bool inherited)
{
	for (unsigned tries = 0;; tries++) {
		uint32_t id = new_id(ch);
		bool last = tries + 1 >= ID_TRIES;
		/* Only where this process holds record locks on the file
		 * already (the registry is wiped in a child: a forked
		 * child's first attach asks nothing more, fwd's 2 000
		 * children each walking the file's list of locks once more
		 * otherwise). */
		struct rec_file *r = rec_find(ch->dev, ch->ino);
		bool posix = r && r->locks > 0;
		if (!last && posix && !id_free(ch, id))
			continue;
		uint32_t got = take_lock(ch, id, inherited);
		if (!(got & ID_UNLOCKED) || last || id_free(ch, id))
			return got;
	}
}

int canal__attach(struct canal_chan *ch)
{
	struct stat sb;
	if (fstat(ch->fd, &sb) < 0)
		return -errno;
	ch->dev = sb.st_dev;
	ch->ino = sb.st_ino;
	registry_init();
	registry_take();
	uint32_t id = attach_new(ch, false);
	atomic_store_explicit(&ch->attach_id, id, memory_order_relaxed);
	atomic_store_explicit(&ch->attach_token, self_token(),
			      memory_order_release);
	registry_release();
	return 0;
}

/* In a forked child: an id and a lock of our own. */
static void reattach(struct canal_chan *ch)
{
	registry_take();
	if (!attached_here(ch)) {
		/* The parent's mapping is not here: take_lock forgets its
		 * address. */
		uint32_t id = attach_new(ch, true);
		atomic_store_explicit(&ch->attach_id, id, memory_order_relaxed);
		atomic_store_explicit(&ch->attach_token, self_token(),
				      memory_order_release);
	}
	registry_release();
}

uint32_t canal__self_id(struct canal_chan *ch)
{
	if (unlikely(atomic_load_explicit(&ch->attach_token,
					  memory_order_acquire) != self_token()))
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
	bool here = attached_here(ch);
	struct rec_file *r = NULL;
	if (here && ch->lock_kind == LIVE_POSIX &&
	    (r = rec_find(ch->dev, ch->ino)))
		r->locks--;
	if (here && ch->lock_map)
		munmap(ch->lock_map, LOCK_MAP_LEN); /* the OFD lock goes */
	ch->lock_map = NULL;
	ch->lock_kind = LIVE_NONE;
	if (r && r->locks == 0) {
		/* the last record lock on the file: ours goes with the
		 * close, and the parked descriptors with it */
		rec_remove(r);
		close_parked(ch->dev, ch->ino);
	}
	if (ch->fd >= 0)
		close_or_park(ch->fd, ch->dev, ch->ino);
	ch->fd = -1;
	registry_release();
}

void canal__segment_close(int fd)
{
	if (fd < 0)
		return;
	registry_init();
	registry_take();
	struct stat sb;
	if (reg.nrec && fstat(fd, &sb) == 0)
		close_or_park(fd, sb.st_dev, sb.st_ino);
	else
		close(fd);
	registry_release();
}

int canal__segment_dup(int fd, dev_t dev, ino_t ino)
{
	registry_init();
	registry_take();
	int nfd = take_parked(dev, ino);
	if (nfd < 0 && (nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		nfd = -errno;
	registry_release();
	return nfd;
}

int canal__segment_reuse(const char *path)
{
	registry_init();
	registry_take();
	int fd = -ENOENT;
	struct stat sb;
	struct rec_file *r;
	/* Not following a symbolic link, as shm_open (O_NOFOLLOW) does not:
	 * a link planted under the name would give a descriptor of whatever
	 * file it points to that this process holds record locks on, where
	 * the open of the name itself is refused
	 * (test_revseg_reuse_symlink). */
	if (reg.nrec && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    (r = rec_find(sb.st_dev, sb.st_ino))) {
		fd = take_parked(sb.st_dev, sb.st_ino);
		if (fd < 0 && (fd = fcntl(r->any_fd, F_DUPFD_CLOEXEC, 0)) < 0)
			fd = -errno;
	}
	registry_release();
	return fd;
}
