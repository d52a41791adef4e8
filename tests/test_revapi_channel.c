/* test_revapi_channel.c - channel.h's documented errors, table-driven, on
 * the cases test_api.c and test_holes.c leave out: opening what is not a
 * channel, handing channels over, select's argument errors, batch edges
 * and extreme timeouts; each checked for the exact value.
 *
 * Failed before its fix with:
 *  - canal_chan_open of a name that is a directory: -EINVAL (glibc's
 *    shm_open turns EISDIR into EINVAL; the header's -EINVAL is "bad name
 *    or flags", and the name was fine), a symbolic link: -ELOOP, a socket:
 *    -ENXIO, none of them listed; canal_chan_unlink of a directory:
 *    -EISDIR, not listed nor described by canal_strerror;
 *  - canal_chan_open_fd of a valid segment in a write-sealed memfd: -EPERM
 *    (mmap's), not listed;
 *  - canal_chan_recv_handle with bad flags: -EINVAL, but only after it had
 *    taken the handle from the socket and closed it: the channel was lost
 *    (the next, correct call got -EAGAIN).
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "expect.h"

/* A name under /dev/shm for this process. */
static void shm_name(char *name, size_t size, const char *what)
{
	snprintf(name, size, "canal-revapi-%s-%d", what, (int)getpid());
}

static void shm_full(char *path, size_t size, const char *name)
{
	snprintf(path, size, "/dev/shm/%s", name);
}

/* Names that are there but are not channels: -EBADMSG ("not a canal
 * channel"), whatever kind of file it is; the handle stays NULL. */
static void test_open_not_a_channel(void)
{
	char name[64], path[96];
	struct canal_chan *o = (struct canal_chan *)1;

	shm_name(name, sizeof name, "dir");
	shm_full(path, sizeof path, name);
	CHECK_EQ(mkdir(path, 0700), 0);
	int open_dir = canal_chan_open(name, CANAL_ANY, CANAL_ANY,
				       CANAL_SHARED, &o);
	CHECK(o == NULL);
	int unlink_dir = canal_chan_unlink(name);
	int create_dir = canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0,
						 &o);
	CHECK(o == NULL);
	rmdir(path);

	shm_name(name, sizeof name, "link");
	shm_full(path, sizeof path, name);
	CHECK_EQ(symlink("/dev/null", path), 0);
	int open_link = canal_chan_open(name, CANAL_ANY, CANAL_ANY,
					CANAL_SHARED, &o);
	unlink(path);

	shm_name(name, sizeof name, "sock");
	shm_full(path, sizeof path, name);
	int us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(us >= 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	CHECK_EQ(bind(us, (struct sockaddr *)&a, sizeof a), 0);
	int open_sock = canal_chan_open(name, CANAL_ANY, CANAL_ANY,
					CANAL_SHARED, &o);
	unlink(path);
	close(us);

	shm_name(name, sizeof name, "fifo");
	shm_full(path, sizeof path, name);
	CHECK_EQ(mkfifo(path, 0600), 0);
	int open_fifo = canal_chan_open(name, CANAL_ANY, CANAL_ANY,
					CANAL_SHARED, &o);
	unlink(path);

	shm_name(name, sizeof name, "none");
	EXPECT_V("open(directory)", open_dir, -EBADMSG);
	EXPECT_V("unlink(directory)", unlink_dir, -EBADMSG);
	EXPECT_V("create_named(directory)", create_dir, -EEXIST);
	EXPECT_V("open(symlink)", open_link, -EBADMSG);
	EXPECT_V("open(socket)", open_sock, -EBADMSG);
	EXPECT_V("open(fifo)", open_fifo, -EBADMSG);
	EXPECT(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &o),
		  -ENOENT);
	EXPECT(canal_chan_unlink(name), -ENOENT);
	EXPECT(canal_chan_open(NULL, 8, 4, CANAL_SHARED, &o), -EINVAL);
	EXPECT(canal_chan_open("", 8, 4, CANAL_SHARED, &o), -EINVAL);
	EXPECT(canal_chan_open("a/b", 8, 4, CANAL_SHARED, &o), -EINVAL);
	EXPECT(canal_chan_open("..", 8, 4, CANAL_SHARED, &o), -EINVAL);
	EXPECT(canal_chan_open(name, 8, 4, 0, &o), -EINVAL);
	EXPECT(canal_chan_open(name, 8, 4, CANAL_SHARED, NULL), -EINVAL);
	EXPECT(canal_chan_unlink(NULL), -EINVAL);
	EXPECT(canal_chan_unlink("."), -EINVAL);
	EXPECT(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 01600, &o),
		  -EINVAL);
	EXPECT(canal_chan_create_named(name, 8, 4, 0, 0, &o), -EINVAL);
	EXPECT(canal_chan_create_named(name, 8, (size_t)1 << 31,
					  CANAL_SHARED, 0, &o),
		  -EINVAL);
	EXPECT(canal_chan_create_named(name, CANAL_ELT_SIZE_MAX + 1, 4,
					  CANAL_SHARED, 0, &o),
		  -EINVAL);
	EXPECT(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0, NULL),
		  -EINVAL);
	CHECK_EQ(expect_failures, 0);
	CHECK(o == NULL);
}

/* canal_chan_open_fd on descriptors that are not a usable channel. */
static void test_open_fd_errors(void)
{
	struct canal_chan *s = canal_chan_create(8, 4, CANAL_SHARED);
	struct canal_chan *o = NULL;
	CHECK(s);
	int fd = canal_chan_fd(s);
	CHECK(fd >= 0);

	/* A faithful copy of the segment in a memfd of our own: opens. */
	struct stat sb;
	CHECK_EQ(fstat(fd, &sb), 0);
	char *copy = malloc((size_t)sb.st_size);
	CHECK(copy);
	CHECK_EQ(pread(fd, copy, (size_t)sb.st_size, 0), sb.st_size);
	int mfd = memfd_create("revapi", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(mfd >= 0);
	CHECK_EQ(pwrite(mfd, copy, (size_t)sb.st_size, 0), sb.st_size);
	free(copy);
	CHECK_EQ(canal_chan_open_fd(mfd, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				    &o),
		 0);
	canal_chan_destroy(o);
	o = NULL;
	/* Sealed against writing: a channel this process can never write
	 * into (as a read-only descriptor). */
	CHECK_EQ(fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE), 0);
	int sealed = canal_chan_open_fd(mfd, CANAL_ANY, CANAL_ANY,
					CANAL_SHARED, &o);
	CHECK(o == NULL);

	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	int rofd = open(proc, O_RDONLY | O_CLOEXEC);
	CHECK(rofd >= 0);
	/* A number no descriptor has (far above the ones made here). */
	int closed = fcntl(rofd, F_DUPFD_CLOEXEC, 900);
	CHECK(closed >= 0);
	close(closed);
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	int empty = memfd_create("revapi-empty", MFD_CLOEXEC);
	CHECK(empty >= 0);

	EXPECT_V("open_fd(write-sealed)", sealed, -EACCES);
	EXPECT(canal_chan_open_fd(rofd, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				     &o),
		  -EACCES);
	EXPECT(canal_chan_open_fd(closed, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				     &o),
		  -EBADF);
	EXPECT(canal_chan_open_fd(-1, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				     &o),
		  -EINVAL);
	EXPECT(canal_chan_open_fd(fd, CANAL_ANY, CANAL_ANY, 0, &o), -EINVAL);
	EXPECT(canal_chan_open_fd(fd, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				     NULL),
		  -EINVAL);
	EXPECT(canal_chan_open_fd(p[0], CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				     &o),
		  -EBADMSG);
	EXPECT(canal_chan_open_fd(empty, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				     &o),
		  -EBADMSG);
	EXPECT(canal_chan_open_fd(fd, 4, CANAL_ANY, CANAL_SHARED, &o),
		  -ERANGE);
	EXPECT(canal_chan_open_fd(fd, CANAL_ANY, 5, CANAL_SHARED, &o),
		  -ERANGE);
	CHECK_EQ(expect_failures, 0);
	CHECK(o == NULL);
	close(rofd);
	close(p[0]);
	close(p[1]);
	close(empty);
	close(mfd);
	canal_chan_destroy(s);
}

/* Hand-over: argument errors leave the socket's message in place. */
static void test_handles(void)
{
	struct canal_chan *s = canal_chan_create(8, 4, CANAL_SHARED);
	struct canal_chan *t = canal_chan_create(8, 4, 0);
	struct canal_chan *o = (struct canal_chan *)1;
	int sv[2];
	CHECK(s && t);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(canal_chan_send_handle(sv[0], s), 0);
	/* Never blocks below: the socket is non-blocking. */
	CHECK_EQ(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY, 0, &o),
		  -EINVAL);
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY, 3, &o),
		  -EINVAL);
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					 CANAL_SHARED, NULL),
		  -EINVAL);
	/* The handle is still there for a correct call. */
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					 CANAL_SHARED, &o),
		  0);
	CHECK_EQ(expect_failures, 0);
	CHECK(o != NULL && o != (struct canal_chan *)1);
	uint64_t v = 7;
	CHECK_EQ(canal_send(o, &v), 0);
	v = 0;
	CHECK_EQ(canal_recv(s, &v), 0);
	CHECK_EQ(v, 7);
	canal_chan_destroy(o);
	o = NULL;
	EXPECT(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					 CANAL_SHARED, &o),
		  -EAGAIN);
	EXPECT(canal_chan_send_handle(sv[0], t), -EINVAL);
	EXPECT(canal_chan_send_handle(sv[0], NULL), -EINVAL);
	EXPECT(canal_chan_send_handle(-1, s), -EBADF);
	EXPECT(canal_chan_recv_handle(-1, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
					 &o),
		  -EBADF);
	EXPECT(canal_chan_fd(t), -EINVAL);
	EXPECT(canal_chan_fd(NULL), -EINVAL);
	CHECK_EQ(expect_failures, 0);
	/* A peer that closed: -ECONNRESET. */
	close(sv[0]);
	CHECK_EQ(canal_chan_recv_handle(sv[1], CANAL_ANY, CANAL_ANY,
					CANAL_SHARED, &o),
		 -ECONNRESET);
	close(sv[1]);
	canal_chan_destroy(s);
	canal_chan_destroy(t);
}

static void test_select_errors(void)
{
	struct canal_chan *t = canal_chan_create(8, 4, 0);
	struct canal_case cs[CANAL_SELECT_MAX + 1];
	memset(cs, 0, sizeof cs);
	for (size_t i = 0; i < CANAL_SELECT_MAX + 1; i++)
		cs[i].op = CANAL_OP_RECV;
	struct canal_case bad_op[2] = {{NULL, 3, NULL, 0},
				       {NULL, CANAL_OP_RECV, NULL, 0}};
	struct canal_case null_elt = {t, CANAL_OP_RECV, NULL, 0};
	EXPECT(canal_select(cs, CANAL_SELECT_MAX + 1, 0, 0), -EINVAL);
	EXPECT(canal_select(NULL, 1, 0, 0), -EINVAL);
	EXPECT(canal_select(cs, 2, 0, 2), -EINVAL);
	/* An op that is not a canal_op, even on a NULL channel. */
	EXPECT(canal_select(bad_op, 2, 0, 0), -EINVAL);
	EXPECT(canal_select(&null_elt, 1, 0, 0), -EINVAL);
	/* Only NULL channels: poll, wait, or forever. */
	EXPECT(canal_select(cs, 2, 0, 0), -EAGAIN);
	EXPECT(canal_select(cs, 2, 1000, 0), -ETIMEDOUT);
	EXPECT(canal_select(cs, 2, -1, 0), -ENOENT);
	EXPECT(canal_select(NULL, 0, -1, 0), -ENOENT);
	EXPECT(canal_select(NULL, 0, 0, 0), -EAGAIN);
	EXPECT(canal_select(cs, CANAL_SELECT_MAX, 0, 0), -EAGAIN);
	CHECK_EQ(expect_failures, 0);
	canal_chan_destroy(t);
}

/* Batches at the edges: counts that cannot be arrays, n == 0 on a closed
 * channel, capacity 0. */
static void test_batch_edges(void)
{
	struct canal_chan *z = canal_chan_create(0, 4, 0);
	struct canal_chan *t = canal_chan_create(8, 4, 0);
	struct canal_chan *s = canal_chan_create(8, 0, 0);
	uint64_t v[4] = {0};
	struct canal_slot sl;
	CHECK(z && t && s);
	EXPECT(canal_send_batch(z, NULL, (size_t)SSIZE_MAX + 1), -EINVAL);
	EXPECT(canal_recv_batch(z, NULL, (size_t)SSIZE_MAX + 1), -EINVAL);
	EXPECT(canal_send_batch(t, v, SIZE_MAX / 4), -EINVAL);
	EXPECT(canal_try_recv_batch(t, v, SIZE_MAX / 4), -EINVAL);
	EXPECT(canal_recv_batch(t, NULL, 0), 0);
	EXPECT(canal_recv_batch(NULL, v, 0), -EINVAL);
	EXPECT(canal_try_send_batch(NULL, v, 0), -EINVAL);
	EXPECT(canal_try_recv_batch(t, v, 4), -EAGAIN);
	EXPECT(canal_try_send_batch(s, v, 1), -EAGAIN);
	EXPECT(canal_try_recv_batch(s, v, 1), -EAGAIN);
	EXPECT(canal_send_batch(s, v, 0), 0);
	EXPECT(canal_try_send_reserve(s, &sl), -EAGAIN);
	EXPECT(canal_try_recv_borrow(t, &sl), -EAGAIN);
	EXPECT(canal_try_send_reserve(NULL, &sl), -EINVAL);
	EXPECT(canal_try_recv_borrow(t, NULL), -EINVAL);
	EXPECT(canal_send_abort(NULL, &sl), -EINVAL);
	EXPECT(canal_send_deadline(s, v, 0), -ETIMEDOUT);
	EXPECT(canal_recv_deadline(s, v, 0), -ETIMEDOUT);
	EXPECT(canal_send_timeout(s, v, 0), -ETIMEDOUT);
	EXPECT(canal_recv_timeout(s, v, 0), -ETIMEDOUT);
	EXPECT(canal_send_deadline(NULL, v, 0), -EINVAL);
	EXPECT(canal_recv_timeout(t, NULL, 0), -EINVAL);
	CHECK_EQ(expect_failures, 0);
	CHECK_EQ(canal_close(t), 0);
	CHECK_EQ(canal_close(s), 0);
	EXPECT(canal_send_batch(t, v, 0), 0);
	EXPECT(canal_recv_batch(t, v, 0), 0);
	EXPECT(canal_send_batch(t, v, 2), -EPIPE);
	EXPECT(canal_try_send_batch(t, v, 2), -EPIPE);
	EXPECT(canal_recv_batch(t, v, 2), -EPIPE);
	EXPECT(canal_try_recv_batch(t, v, 2), -EPIPE);
	EXPECT(canal_send_reserve(t, &sl), -EPIPE);
	EXPECT(canal_try_send_reserve(t, &sl), -EPIPE);
	EXPECT(canal_recv_borrow(t, &sl), -EPIPE);
	EXPECT(canal_try_recv_borrow(t, &sl), -EPIPE);
	EXPECT(canal_send_batch(s, v, 1), -EPIPE);
	EXPECT(canal_send_batch(s, v, 0), 0);
	EXPECT(canal_recv_batch(s, v, 1), -EPIPE);
	EXPECT(canal_try_send_batch(s, v, 1), -EPIPE);
	EXPECT(canal_try_recv_batch(s, v, 1), -EPIPE);
	EXPECT(canal_send_reserve(s, &sl), -EPIPE);
	EXPECT(canal_recv_borrow(s, &sl), -EPIPE);
	EXPECT(canal_send_timeout(s, v, 0), -EPIPE);
	EXPECT(canal_recv_deadline(s, v, 0), -EPIPE);
	EXPECT(canal_close(s), -EPIPE);
	CHECK_EQ(expect_failures, 0);
	canal_chan_destroy(z);
	canal_chan_destroy(t);
	canal_chan_destroy(s);
}

/* The longest timeouts and deadlines wait like "forever": a close ends
 * them with -EPIPE (not an early -ETIMEDOUT from an overflow). */
static void *close_later(void *p)
{
	usleep(20000);
	canal_close(p);
	return NULL;
}

static void test_huge_timeouts(void)
{
	for (size_t cap = 0; cap <= 1; cap++) {
		for (int k = 0; k < 4; k++) {
			struct canal_chan *ch = canal_chan_create(8, cap, 0);
			uint64_t v = 1;
			CHECK(ch);
			if (cap) /* full, so that a send waits */
				CHECK_EQ(canal_send(ch, &v), 0);
			pthread_t th = spawn(close_later, ch);
			int r = k == 0	 ? canal_recv_timeout(ch, &v, INT64_MAX)
				: k == 1 ? canal_recv_deadline(ch, &v,
								 UINT64_MAX)
				: k == 2 ? canal_send_timeout(ch, &v, INT64_MAX)
					 : canal_send_deadline(ch, &v,
								 UINT64_MAX);
			join(th);
			if (cap && k < 2)
				CHECK_EQ(r, 0); /* the element was there */
			else
				CHECK_EQ(r, -EPIPE);
			canal_chan_destroy(ch);
		}
	}
}

int main(void)
{
	alarm(20); /* a hang is a failure */
	test_open_not_a_channel();
	test_open_fd_errors();
	test_handles();
	test_select_errors();
	test_batch_edges();
	test_huge_timeouts();
	TEST_DONE("test_revapi_channel");
}
