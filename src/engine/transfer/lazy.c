/* SPDX-License-Identifier: MIT */
/*
 * transfer/lazy.c - gates connected on first use (shm sessions; issue 15:
 * "the engine connects gates lazily on first use").
 *
 * At open, each rank creates its inbox (<dir>/inbox.<rank>: its pid, a
 * doorbell counter and one flag per rank), then maps every peer's inbox,
 * waiting for them to appear (that is all open waits for: n small files,
 * not n^2 segments). A gate gets its driver the first time something is
 * sent on it (canal__sched_send): canal__shm_attach() creates the pair's
 * segment or attaches to the peer's, then the peer's inbox is rung. The
 * peer's progress sees its doorbell move and attaches too; until then the
 * records wait in the ring. A gate on which nothing is ever sent costs
 * nothing: no segment, no mapping.
 *
 * Doorbell ordering: the ringer has built (or attached to) the segment
 * before it sets flag[its rank] (relaxed) and increments count (release);
 * the owner loads count (acquire) and, when it moved, exchanges each flag
 * of a gate it has no driver for: a flag seen set means the segment is
 * linked under the pair's name (or already attached by us). A ring the
 * owner has already taken is harmless (attaching finds its driver there).
 *
 * Death before connection: the peers' pids come from their inboxes;
 * canal__lazy_health() watches the unconnected ones through pidfds (where
 * pidfd_open() failed: kill(pid, 0) and /proc, canal__pid_gone()), so an
 * any-gate receive still fails once every peer is gone.
 *
 * Close: a session's close marks its inbox closed (release), after its
 * drivers are closed (each marks its segment: shm.c, CLOSE). A peer whose
 * inbox says closed (acquire: its segments' marks are visible then) is
 * gone: a gate it rang is attached and drained by the driver's health as
 * at death; a gate not connected, or connected by us to a segment the
 * peer never attached (it closed first: nothing of it to drain), fails
 * with -ECONNRESET (test_reveng2_shm_peer_close). The inboxes are
 * the processes' own files in the job's private directory (0600): a peer
 * is trusted with them as with the segments themselves; a size or magic
 * that does not match is -EPROTO at open, before any access.
 */
#define _GNU_SOURCE
#include "../internal.h"

#include "driver.h"
#include "lazy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define INBOX_MAGIC 0x63616e616c696e62ULL /* "canalinb" */

struct inbox_file {
	uint64_t magic;
	int32_t size;
	int32_t pid;
	_Atomic uint32_t closed; /* the owner's session has closed */
	_Alignas(64) _Atomic uint32_t count;
	_Alignas(64) _Atomic uint8_t flag[];
};

struct canal__lazy {
	int rank, size;
	char dir[512];
	size_t len;                 /* bytes of every inbox mapping */
	struct inbox_file **box;    /* [size]: box[rank] is ours */
	int *pidfd;                 /* [size], -1 where none */
	uint32_t seen;              /* our count when last looked at */
	bool shm_read;              /* the session's shm rendezvous mode */
};

static size_t inbox_len(int size)
{
	size_t l = sizeof(struct inbox_file) + (size_t)size;
	return (l + 4095) & ~(size_t)4095;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void canal__lazy_close(struct canal__lazy *z)
{
	if (!z)
		return;
	/* Pairs with the acquire load in canal__lazy_health(): after the
	 * session's drivers have marked their segments. */
	if (z->box && z->box[z->rank])
		atomic_store_explicit(&z->box[z->rank]->closed, 1,
				      memory_order_release);
	for (int i = 0; i < z->size; i++) {
		if (z->box && z->box[i])
			munmap(z->box[i], z->len);
		if (z->pidfd && z->pidfd[i] >= 0)
			close(z->pidfd[i]);
	}
	free(z->box);
	free(z->pidfd);
	free(z);
}

/* Ours: built under a temporary name, renamed when complete. */
static int inbox_create(struct canal__lazy *z)
{
	char path[600], tmp[620];
	snprintf(path, sizeof path, "%s/inbox.%d", z->dir, z->rank);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int err = ftruncate(fd, (off_t)z->len) < 0 ? -errno : 0;
	void *m = err ? MAP_FAILED
		      : mmap(NULL, z->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);
	if (!err && m == MAP_FAILED)
		err = -errno;
	close(fd);
	if (!err) {
		struct inbox_file *b = m;
		b->magic = INBOX_MAGIC;
		b->size = z->size;
		b->pid = (int32_t)getpid();
		z->box[z->rank] = b;
		if (rename(tmp, path) < 0)
			err = -errno;
	}
	if (err)
		unlink(tmp);
	return err;
}

/* A peer's, waiting for it until deadline. */
static int inbox_map(struct canal__lazy *z, int peer, uint64_t deadline)
{
	char path[600];
	snprintf(path, sizeof path, "%s/inbox.%d", z->dir, peer);
	int fd;
	while ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		if (errno != ENOENT)
			return -errno;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	struct stat st;
	int err = fstat(fd, &st) < 0 ? -errno : 0;
	if (!err && (size_t)st.st_size < z->len)
		err = -EPROTO;
	void *m = err ? MAP_FAILED
		      : mmap(NULL, z->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			     fd, 0);
	if (!err && m == MAP_FAILED)
		err = -errno;
	close(fd);
	if (err)
		return err;
	struct inbox_file *b = m;
	if (b->magic != INBOX_MAGIC || b->size != z->size || b->pid <= 0) {
		munmap(m, z->len);
		return -EPROTO;
	}
	z->box[peer] = b;
	z->pidfd[peer] = (int)syscall(SYS_pidfd_open, (pid_t)b->pid, 0);
	return 0;
}

int canal__lazy_open(const char *dir, int rank, int size, int timeout_ms,
		     bool shm_read, struct canal__lazy **out)
{
	struct canal__lazy *z = calloc(1, sizeof *z);
	if (!z)
		return -ENOMEM;
	z->shm_read = shm_read;
	z->rank = rank;
	z->size = size;
	snprintf(z->dir, sizeof z->dir, "%s", dir);
	z->len = inbox_len(size);
	z->box = calloc((size_t)size, sizeof *z->box);
	z->pidfd = malloc((size_t)size * sizeof *z->pidfd);
	int err = z->box && z->pidfd ? 0 : -ENOMEM;
	for (int i = 0; !err && i < size; i++)
		z->pidfd[i] = -1;
	if (!err)
		err = inbox_create(z);
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	for (int i = 0; !err && i < size; i++)
		if (i != rank)
			err = inbox_map(z, i, deadline);
	if (err) {
		canal__lazy_close(z);
		return err;
	}
	*out = z;
	return 0;
}

int canal__lazy_connect(struct canal_engine *e, int gi)
{
	struct canal__gate *g = &e->gates[gi];
	if (g->drv || g->error)
		return g->error;
	struct canal__lazy *z = e->lazy;
	if (!z)
		return -ENOTCONN; /* not a lazy session: cannot happen */
	int err = canal__shm_attach(z->dir, z->rank, gi,
				    (pid_t)z->box[gi]->pid, z->shm_read, &g->drv);
	if (err)
		return canal__gate_fail(e, gi, err, "peer %d: cannot connect: %s",
					gi, strerror(-err));
	struct inbox_file *b = z->box[gi];
	atomic_store_explicit(&b->flag[z->rank], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->count, 1, memory_order_release);
	return 0;
}

int canal__lazy_poll(struct canal_engine *e)
{
	struct canal__lazy *z = e->lazy;
	struct inbox_file *b = z->box[z->rank];
	uint32_t c = atomic_load_explicit(&b->count, memory_order_acquire);
	if (c == z->seen)
		return 0;
	z->seen = c;
	int n = 0;
	for (int gi = 0; gi < z->size; gi++) {
		if (gi == z->rank || e->gates[gi].drv || e->gates[gi].error)
			continue;
		if (atomic_exchange_explicit(&b->flag[gi], 0,
					     memory_order_relaxed)) {
			canal__lazy_connect(e, gi);
			n++;
		}
	}
	return n;
}

/* driver.h. Without either check, such a peer's death was never seen
 * (a gate not connected) or not until its parent reaped it (kill alone),
 * and receives from it waited (test_revapi_lazy_nopidfd). */
bool canal__pid_gone(pid_t pid)
{
	if (kill(pid, 0) < 0)
		return errno == ESRCH;
	char path[64], stat[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	ssize_t n = read(fd, stat, sizeof stat - 1);
	close(fd);
	if (n <= 0)
		return false;
	stat[n] = 0;
	/* "pid (comm) S ...": the state follows the last ')' (comm may
	 * hold one). */
	const char *p = strrchr(stat, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

void canal__lazy_health(struct canal_engine *e)
{
	struct canal__lazy *z = e->lazy;
	for (int gi = 0; gi < z->size; gi++) {
		struct canal__gate *g = &e->gates[gi];
		if (gi == z->rank || g->error)
			continue;
		bool closed = atomic_load_explicit(&z->box[gi]->closed,
						   memory_order_acquire);
		if (g->drv) {
			if (!closed)
				continue;
			/* Its segment's mark, if it had attached: drained
			 * and failed there. */
			canal__gate_check(e, gi);
			if (!g->error)
				canal__gate_fail(e, gi, -ECONNRESET,
						 "peer %d (pid %d) closed its "
						 "session", gi,
						 (int)z->box[gi]->pid);
			continue;
		}
		if (!closed) {
			if (z->pidfd[gi] < 0) {
				if (!canal__pid_gone((pid_t)z->box[gi]->pid))
					continue;
			} else {
				struct pollfd p = { .fd = z->pidfd[gi],
						    .events = POLLIN };
				if (poll(&p, 1, 0) <= 0)
					continue;
			}
		}
		/* It may have rung and sent its last words before dying (or
		 * closing): then attach, and the driver's own health drains
		 * and fails it. */
		if (atomic_exchange_explicit(&z->box[z->rank]->flag[gi], 0,
					     memory_order_relaxed))
			canal__lazy_connect(e, gi);
		else
			canal__gate_fail(e, gi, -ECONNRESET, "peer %d (pid %d) %s",
					 gi, (int)z->box[gi]->pid,
					 closed ? "closed its session" : "died");
	}
}
