/* SPDX-License-Identifier: MIT */
/*
 * shm-spin, shm-futex, mmap-spin, eventfd - the ring of ring.h over:
 *   SHM_KIND 0  shm-spin:  POSIX shared memory (shm_open), busy polling;
 *   SHM_KIND 1  shm-futex: POSIX shared memory, futex wait;
 *   SHM_KIND 2  mmap-spin: a mapped regular file in $TMPDIR, busy polling;
 *   SHM_KIND 3  eventfd:   an anonymous shared mapping, an eventfd per
 *                          direction as the wake-up token.
 */
#define _GNU_SOURCE
#include "common.h"
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if SHM_KIND == 0
#define SHM_NAME "shm-spin"
#define SHM_WAIT RING_SPIN
#elif SHM_KIND == 1
#define SHM_NAME "shm-futex"
#define SHM_WAIT RING_FUTEX
#elif SHM_KIND == 2
#define SHM_NAME "mmap-spin"
#define SHM_WAIT RING_SPIN
#elif SHM_KIND == 3
#define SHM_NAME "eventfd"
#define SHM_WAIT RING_EVENTFD
#else
#error "SHM_KIND must be 0..3"
#endif

struct shm_shared {
	struct ipc_ring_shared ring;
	char path[PATH_MAX]; /* shm name or file path to remove at teardown */
};

/* Map len bytes of a new object: shm_open'ed (kind 0, 1), a file (2) or
 * anonymous (3). */
static void *map_backing(struct shm_shared *s, size_t len, char *why,
			 size_t whylen, int *err)
{
	void *p;

#if SHM_KIND == 0 || SHM_KIND == 1
	int fd;
	char name[64];
	ipc_unique_name(name, sizeof(name), SHM_NAME);
	snprintf(s->path, sizeof(s->path), "/%s", name);
	fd = shm_open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
#elif SHM_KIND == 2
	int fd;
	snprintf(s->path, sizeof(s->path), "%s/canal-ipc-mmap-XXXXXX",
		 ipc_tmpdir());
	fd = mkostemp(s->path, O_CLOEXEC);
#else
	(void)s;
	p = bench_shared_alloc(len);
	if (!p) {
		*err = errno;
		snprintf(why, whylen, "mmap of %zu bytes", len);
		return NULL;
	}
	memset(p, 0, len); /* fault the pages in now */
	return p;
#endif
#if SHM_KIND != 3
	if (fd < 0) {
		*err = errno;
		snprintf(why, whylen, "creating %s", s->path);
		s->path[0] = 0;
		return NULL;
	}
	if (ftruncate(fd, (off_t)len)) {
		*err = errno;
		snprintf(why, whylen, "ftruncate %s to %zu bytes", s->path, len);
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*err = errno;
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(why, whylen, "mmap of %s", s->path);
		return NULL;
	}
	/* Fault every page in now, not in the timed loop. */
	memset(p, 0, len);
	return p;
#endif
}

static void remove_backing(struct shm_shared *s)
{
	if (!s->path[0])
		return;
#if SHM_KIND == 0 || SHM_KIND == 1
	shm_unlink(s->path);
#else
	unlink(s->path);
#endif
}

static int shm_setup(const struct ipc_opts *o, void **shared, char *why,
		     size_t whylen)
{
	struct shm_shared *s = calloc(1, sizeof(*s));
	size_t len = ipc_ring_bytes(o->size);
	int err = 0, rc;

	if (!s)
		return -ENOMEM;
	void *base = map_backing(s, len, why, whylen, &err);
	if (!base) {
		remove_backing(s);
		free(s);
		return -err;
	}
	rc = ipc_ring_init(&s->ring, base, o->size, SHM_WAIT);
	if (rc) {
		munmap(base, len);
		remove_backing(s);
		free(s);
		snprintf(why, whylen, "eventfd");
		return rc;
	}
	*shared = s;
	return 0;
}

static int shm_open_side(void *shared, const struct ipc_opts *o, int side,
			 void **ctx)
{
	return ipc_ring_open(&((struct shm_shared *)shared)->ring, o, side, ctx);
}

static void shm_teardown(void *shared)
{
	struct shm_shared *s = shared;

	munmap(s->ring.base, s->ring.len);
	ipc_ring_fini(&s->ring);
	remove_backing(s);
	free(s);
}

static const struct ipc_method method = {
	.name = SHM_NAME,
	.setup = shm_setup,
	.open = shm_open_side,
	.send = ipc_ring_send,
	.recv = ipc_ring_recv,
	.close = ipc_ring_close,
	.teardown = shm_teardown,
};

int main(int argc, char **argv)
{
	return ipc_main(argc, argv, &method);
}
