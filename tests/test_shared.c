/* test_shared.c - channels between processes: every operation across
 * fork(), P producer processes x C consumer processes (exactly once,
 * per-producer FIFO), named channels, hand-over over a Unix socket, and
 * bad input: bad names, wrong sizes, foreign, truncated and corrupted
 * segments (including random bytes, thousands of times), permissions. */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void *shared_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	return p;
}

static int wait_child(pid_t pid)
{
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Every kind of operation, child -> parent and back, across fork(). */
static void test_fork_ops(size_t cap)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), cap,
						  CANAL_SHARED);
	struct canal_chan *back = canal_chan_create(sizeof(uint64_t), cap,
						    CANAL_SHARED);
	CHECK(ch && back);
	CHECK(canal_chan_fd(ch) >= 0);
	enum { N = 2000 };
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		for (uint64_t i = 0; i < N; i++) {
			struct canal_slot s;
			int r;
			switch (i % 5) {
			case 0:
				r = canal_send(ch, &i);
				break;
			case 1:
				while ((r = canal_try_send(ch, &i)) == -EAGAIN)
					sched_yield();
				break;
			case 2:
				while ((r = canal_send_timeout(ch, &i, 1000000)) ==
				       -ETIMEDOUT)
					;
				break;
			case 3:
				r = canal_send_reserve(ch, &s);
				if (!r) {
					memcpy(s.data, &i, 8);
					r = canal_send_commit(ch, &s);
				}
				break;
			default:
				r = (int)canal_send_batch(ch, &i, 1) - 1;
				break;
			}
			if (r)
				_exit(1);
		}
		uint64_t v;
		/* then echo until the parent closes `back` */
		while (canal_recv(back, &v) == 0)
			;
		_exit(0);
	}
	for (uint64_t i = 0; i < N; i++) {
		uint64_t v = UINT64_MAX;
		struct canal_slot s;
		int r;
		if (i % 3 == 0) {
			r = canal_recv(ch, &v);
		} else if (i % 3 == 1) {
			r = canal_recv_borrow(ch, &s);
			if (!r) {
				memcpy(&v, s.data, 8);
				CHECK_EQ(canal_recv_release(ch, &s), 0);
			}
		} else {
			struct canal_case c = { ch, CANAL_OP_RECV, &v, 0 };
			CHECK_EQ(canal_select(&c, 1, -1, 0), 0);
			r = c.result;
		}
		CHECK_EQ(r, 0);
		CHECK_EQ(v, i);
	}
	/* close from this side wakes the child blocked in recv */
	usleep(10000);
	CHECK_EQ(canal_close(back), 0);
	CHECK_EQ(wait_child(pid), 0);
	canal_chan_destroy(ch);
	canal_chan_destroy(back);
}

/* P producers x C consumers, all processes. */
struct pc_shared {
	_Atomic uint32_t sent[8];
	_Atomic uint8_t seen[8][4000];
	_Atomic int fifo_violations;
};

static void test_processes(size_t cap, int P, int C, uint32_t per)
{
	struct pc_shared *sh = shared_alloc(sizeof(*sh));
	struct canal_chan *ch = canal_chan_create(8, cap, CANAL_SHARED);
	pid_t prod[8], cons[8];
	CHECK(ch);
	for (int c = 0; c < C; c++) {
		cons[c] = test_fork();
		CHECK(cons[c] >= 0);
		if (cons[c] == 0) {
			uint32_t last[8];
			uint64_t v;
			memset(last, 0xff, sizeof(last));
			while (canal_recv(ch, &v) == 0) {
				uint32_t p = (uint32_t)(v >> 32), s = (uint32_t)v;
				if (p >= 8 || s >= 4000)
					_exit(3);
				if (last[p] != UINT32_MAX && s <= last[p])
					atomic_fetch_add(&sh->fifo_violations, 1);
				last[p] = s;
				atomic_fetch_add(&sh->seen[p][s], 1);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < P; p++) {
		prod[p] = test_fork();
		CHECK(prod[p] >= 0);
		if (prod[p] == 0) {
			for (uint32_t s = 0; s < per; s++) {
				uint64_t v = ((uint64_t)p << 32) | s;
				int r = canal_send(ch, &v);
				if (r) {
					fprintf(stderr, "producer %d: %s\n", p,
						canal_strerror(r));
					_exit(2);
				}
				atomic_store(&sh->sent[p], s + 1);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < P; p++)
		CHECK_EQ(wait_child(prod[p]), 0);
	CHECK_EQ(canal_close(ch), 0);
	for (int c = 0; c < C; c++)
		CHECK_EQ(wait_child(cons[c]), 0);
	for (int p = 0; p < P; p++)
		for (uint32_t s = 0; s < per; s++)
			CHECK_EQ(atomic_load(&sh->seen[p][s]), 1);
	CHECK_EQ(atomic_load(&sh->fifo_violations), 0);
	canal_chan_destroy(ch);
	munmap(sh, sizeof(*sh));
}

static char name_buf[64];

static const char *test_name(const char *what)
{
	snprintf(name_buf, sizeof(name_buf), "canal-test-%d-%s", getpid(), what);
	return name_buf;
}

static void test_named(void)
{
	struct canal_chan *a, *b;
	const char *name = test_name("named");
	char longname[300];

	canal_chan_unlink(name);
	CHECK_EQ(canal_chan_create_named(name, 16, 8, CANAL_SHARED, 0600, &a), 0);
	CHECK_EQ(canal_chan_create_named(name, 16, 8, CANAL_SHARED, 0600, &b),
		 -EEXIST);
	CHECK(b == NULL);
	/* bad names and arguments */
	CHECK_EQ(canal_chan_create_named("", 16, 8, CANAL_SHARED, 0, &b), -EINVAL);
	CHECK_EQ(canal_chan_create_named("a/b", 16, 8, CANAL_SHARED, 0, &b), -EINVAL);
	CHECK_EQ(canal_chan_create_named("..", 16, 8, CANAL_SHARED, 0, &b), -EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK_EQ(canal_chan_create_named(longname, 16, 8, CANAL_SHARED, 0, &b),
		 -EINVAL);
	CHECK_EQ(canal_chan_create_named(NULL, 16, 8, CANAL_SHARED, 0, &b), -EINVAL);
	CHECK_EQ(canal_chan_create_named("ok", 16, 8, 0, 0, &b), -EINVAL);
	CHECK_EQ(canal_chan_create_named("ok", 16, 8, CANAL_SHARED, 01000, &b),
		 -EINVAL);
	CHECK_EQ(canal_chan_create_named("ok", SIZE_MAX, 8, CANAL_SHARED, 0, &b),
		 -EINVAL);
	CHECK_EQ(canal_chan_open("a/b", CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EINVAL);
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, 0, &b), -EINVAL);
	CHECK_EQ(canal_chan_open(test_name("nope"), CANAL_ANY, CANAL_ANY,
				 CANAL_SHARED, &b), -ENOENT);
	name = test_name("named");
	/* wrong sizes */
	CHECK_EQ(canal_chan_open(name, 8, CANAL_ANY, CANAL_SHARED, &b), -ERANGE);
	CHECK_EQ(canal_chan_open(name, 16, 9, CANAL_SHARED, &b), -ERANGE);
	CHECK(strstr(canal_strerror(-ERANGE), "capacity"));
	/* an unrelated process opens it by name */
	char msg[16] = "hello, process";
	pid_t pid = test_fork();
	if (pid == 0) {
		struct canal_chan *c;
		if (canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &c))
			_exit(1);
		if (canal_chan_elt_size(c) != 16 || canal_chan_capacity(c) != 8)
			_exit(2);
		char got[16];
		if (canal_recv(c, got) || memcmp(got, "hello, process", 15))
			_exit(3);
		canal_chan_destroy(c);
		_exit(0);
	}
	CHECK_EQ(canal_send(a, msg), 0);
	CHECK_EQ(wait_child(pid), 0);
	CHECK_EQ(canal_chan_open(name, 16, 8, CANAL_SHARED, &b), 0);
	CHECK_EQ(canal_chan_unlink(name), 0);
	CHECK_EQ(canal_chan_unlink(name), -ENOENT);
	CHECK_EQ(canal_chan_unlink("a/b"), -EINVAL);
	/* still usable after unlink, by both handles */
	CHECK_EQ(canal_send(b, msg), 0);
	char got[16];
	CHECK_EQ(canal_recv(a, got), 0);
	CHECK(memcmp(got, msg, 16) == 0);
	canal_chan_destroy(a);
	canal_chan_destroy(b);

	/* thread channels have no memory file */
	struct canal_chan *t = canal_chan_create(8, 1, 0);
	CHECK_EQ(canal_chan_fd(t), -EINVAL);
	CHECK_EQ(canal_chan_send_handle(0, t), -EINVAL);
	canal_chan_destroy(t);
}

static void test_permission(void)
{
	const char *name = test_name("perm");
	struct canal_chan *a, *b;
	canal_chan_unlink(name);
	CHECK_EQ(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0600, &a), 0);
	pid_t pid = test_fork();
	if (pid == 0) {
		/* as another user (root can only be refused as someone else) */
		if (geteuid() == 0 && setuid(65534) != 0)
			_exit(9);
		if (geteuid() != 0 || getuid() != 0) {
			int r = canal_chan_open(name, CANAL_ANY, CANAL_ANY,
						CANAL_SHARED, &b);
			_exit(r == -EACCES ? 0 : 1);
		}
		_exit(0);
	}
	int st = wait_child(pid);
	if (st == 9)
		printf("permission test skipped: cannot change user\n");
	else
		CHECK_EQ(st, 0);
	CHECK_EQ(canal_chan_unlink(name), 0);
	canal_chan_destroy(a);
}

static void test_handover(void)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct canal_chan *ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	pid_t pid = test_fork();
	if (pid == 0) {
		struct canal_chan *c;
		close(sv[0]);
		if (canal_chan_recv_handle(sv[1], 8, 4, CANAL_SHARED, &c))
			_exit(1);
		uint64_t v = 77;
		if (canal_send(c, &v))
			_exit(2);
		canal_chan_destroy(c);
		/* what comes next is not a channel */
		if (canal_chan_recv_handle(sv[1], 8, 4, CANAL_SHARED, &c) !=
		    -EBADMSG)
			_exit(3);
		if (canal_chan_recv_handle(sv[1], 8, 4, CANAL_SHARED, &c) !=
		    -ECONNRESET)
			_exit(4);
		_exit(0);
	}
	close(sv[1]);
	CHECK_EQ(canal_chan_send_handle(sv[0], ch), 0);
	uint64_t v = 0;
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 77);
	CHECK_EQ(write(sv[0], "x", 1), 1); /* a byte without a descriptor */
	close(sv[0]);
	CHECK_EQ(wait_child(pid), 0);
	canal_chan_destroy(ch);
}

/* Segments that are not what they claim. */
static void test_bad_segments(void)
{
	struct canal_chan *b;
	const char *name = test_name("bad");
	char path[128];
	snprintf(path, sizeof(path), "/dev/shm/%s", name);

	/* a foreign file */
	canal_chan_unlink(name);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	/* empty: not a channel (canal's named channels appear complete) */
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG);
	CHECK_EQ(ftruncate(fd, 100), 0);
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG); /* too short for a header */
	CHECK_EQ(ftruncate(fd, 1 << 16), 0);
	char junk[4096];
	memset(junk, 'J', sizeof(junk));
	CHECK_EQ(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG);
	CHECK_EQ(canal_chan_open_fd(fd, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG);
	CHECK_EQ(canal_chan_open_fd(-1, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EINVAL);
	close(fd);
	CHECK_EQ(canal_chan_unlink(name), 0);

	/* a real channel, then damaged field by field */
	struct canal_chan *a;
	CHECK_EQ(canal_chan_create_named(name, 24, 640, CANAL_SHARED, 0600, &a), 0);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	struct stat sb;
	CHECK_EQ(fstat(fd, &sb), 0);
	size_t size = (size_t)sb.st_size;
	unsigned char *orig = malloc(size), *seg;
	CHECK(orig);
	CHECK_EQ(pread(fd, orig, size, 0), (ssize_t)size);
	seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(seg != MAP_FAILED);
	CHECK_EQ(canal_chan_open(name, 24, 640, CANAL_SHARED, &b), 0);
	canal_chan_destroy(b);
	seg[0] ^= 0xff; /* magic */
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG);
	memcpy(seg, orig, size);
	seg[8] ^= 0x40; /* layout version */
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EPROTONOSUPPORT);
	memcpy(seg, orig, size);
	seg[16] ^= 0x01; /* element size: geometry no longer adds up */
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG);
	memcpy(seg, orig, size);
	seg[24] ^= 0x80; /* capacity */
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG);
	memcpy(seg, orig, size);
	CHECK_EQ(ftruncate(fd, (off_t)size - 4096), 0); /* truncated */
	CHECK_EQ(canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b),
		 -EBADMSG);
	CHECK_EQ(ftruncate(fd, (off_t)size), 0);
	memcpy(seg, orig, size);
	CHECK_EQ(canal_chan_open(name, 24, 640, CANAL_SHARED, &b), 0);
	canal_chan_destroy(b);

	/* random bytes over the header, thousands of times: refused (or, if
	 * the bytes left it valid, opened and usable), never a crash */
	uint64_t x = 0x243f6a8885a308d3ull;
	int refused = 0, opened = 0;
	int rounds = 3000 * stress_scale();
	for (int i = 0; i < rounds; i++) {
		memcpy(seg, orig, 512);
		int nbytes = 1 + (int)(x % 64);
		for (int k = 0; k < nbytes; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			seg[x % 512] = (unsigned char)(x >> 24);
		}
		if (i % 3 == 0) /* sometimes random bytes everywhere */
			for (int k = 0; k < 512; k += 8)
				memcpy(seg + k, &x, 8), x = x * 6364136223846793005ull + 1;
		int r = canal_chan_open(name, CANAL_ANY, CANAL_ANY, CANAL_SHARED, &b);
		if (r == 0) {
			/* Operations on a damaged ring: an error or a repair
			 * (up to a second each), never a crash or a hang. A
			 * few suffice. */
			uint64_t v[8] = { 0 };
			if (opened < 3) {
				int e = canal_try_send(b, v);
				CHECK(e == 0 || e == -EAGAIN || e == -EPIPE ||
				      e == -EBADMSG || e == -EOWNERDEAD);
				e = canal_try_recv(b, v);
				CHECK(e == 0 || e == -EAGAIN || e == -EPIPE ||
				      e == -EBADMSG || e == -EOWNERDEAD);
			}
			canal_chan_destroy(b);
			opened++;
		} else {
			CHECK(r == -EBADMSG || r == -EPROTONOSUPPORT || r == -EAGAIN);
			refused++;
		}
	}
	printf("random segments: %d refused, %d opened\n", refused, opened);
	fflush(stdout);
	CHECK(refused > 0);
	memcpy(seg, orig, size);
	munmap(seg, size);
	free(orig);
	close(fd);
	CHECK_EQ(canal_chan_unlink(name), 0);
	canal_chan_destroy(a);
}

/* Select over a shared channel and a thread channel together. */
static void test_mixed_select(void)
{
	struct canal_chan *sh = canal_chan_create(8, 2, CANAL_SHARED);
	struct canal_chan *th = canal_chan_create(8, 2, 0);
	uint64_t v1 = 0, v2 = 0;
	CHECK(sh && th);
	pid_t pid = test_fork();
	if (pid == 0) {
		usleep(20000);
		uint64_t v = 5;
		_exit(canal_send(sh, &v) ? 1 : 0);
	}
	struct canal_case c[2] = {
		{ th, CANAL_OP_RECV, &v1, 0 },
		{ sh, CANAL_OP_RECV, &v2, 0 },
	};
	CHECK_EQ(canal_select(c, 2, -1, 0), 1); /* woken across processes */
	CHECK_EQ(c[1].result, 0);
	CHECK_EQ(v2, 5);
	CHECK_EQ(wait_child(pid), 0);
	canal_chan_destroy(sh);
	canal_chan_destroy(th);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	CHECK(canal_chan_create(8, (size_t)1 << 31, CANAL_SHARED) == NULL);
	CHECK_EQ(errno, EINVAL);
	test_fork_ops(0);
	test_fork_ops(1);
	test_fork_ops(7);
	test_fork_ops(1024);
	test_processes(0, 2, 2, 1000);
	test_processes(1, 3, 2, 2000);
	test_processes(7, 2, 3, 2000);
	test_processes(1024, 4, 4, 4000);
	test_named();
	test_permission();
	test_handover();
	test_bad_segments();
	test_mixed_select();
	TEST_DONE("test_shared");
}
