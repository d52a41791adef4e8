/* test_task_link.c - canal_io_submit_link, the generic primitive for a
 * chain of linked io_uring operations.
 *  A. a READ of a file linked to a WRITE of the same bytes into a pipe and
 *     a CLOSE of the file: every result, the bytes, the file closed;
 *  B. a short READ breaks the chain: the WRITE never runs (-ECANCELED, the
 *     pipe stays empty), the call still returns 0;
 *  C. a chain blocked in its first operation (a READ of an empty pipe) is
 *     cut by the timeout (-ETIMEDOUT) and by a condvar another task
 *     signals (-ECANCELED): both operations -ECANCELED, nothing written,
 *     and the task goes on (a later chain works);
 *  D. the race: RACES trials of READ(pipe a) -> WRITE(pipe b) with a short
 *     timeout while a thread writes one byte into a at a varying moment:
 *     each trial has exactly one outcome per operation and the pipes agree
 *     with it (the byte left a iff res[0] == 1, reached b iff res[1] == 1),
 *     both outcomes are seen;
 *  E. refusals: NULL, n = 0 or above CANAL_IO_LINK_MAX, an SQE with a
 *     linking, draining, CQE-dropping or buffer-selecting flag, a zero-copy send, a
 *     multishot poll, recv or accept, an opcode past IORING_OP_LAST
 *     (-EINVAL, even with timeout 0); outside a task (-EPERM); on the
 *     epoll backend (-EOPNOTSUPP); timeout 0: -ETIMEDOUT, nothing
 *     started, res untouched;
 *  F. TASKS tasks on two loops (spawned, yielding: they move between
 *     loops between chains) each run ROUNDS_F chains READ(own pipe) ->
 *     WRITE(own pipe): every byte arrives, in order;
 *  G. canal_io_submit_batch (the caller's links): READ linked to WRITE
 *     with the file's CLOSE apart (it runs even when a short READ breaks
 *     the chain, where linked it was -ECANCELED), a link on the last SQE
 *     refused, a hard link kept, a READ waiting on a pipe whose descriptor
 *     the batch closes beside it (it still reads), arguments, -EOPNOTSUPP
 *     on epoll, -EPERM outside a task.
 * -EBUSY (no room for the chain in a 256-entry ring) is not provoked: a
 * task cannot hold that many SQEs unsubmitted. */
#define _GNU_SOURCE
#include "check.h"

#include <canal/task.h>

#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#define RACES 2000

static int no_uring;
static char path[] = "/tmp/canal-link-XXXXXX";
static int race_in[2], race_out[2];
static _Atomic int race_go, race_stop;
static _Atomic uint32_t race_delay_ns;

static bool on_epoll(void)
{
	const char *e = getenv("CANAL_BACKEND");
	return e && strcmp(e, "epoll") == 0;
}

static size_t pipe_bytes(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t n = 0;
	char c;
	while (poll(&p, 1, 0) == 1 && read(fd, &c, 1) == 1)
		n++;
	return n;
}

/* READ(fd, len bytes at offset 0) -> WRITE(out) [-> CLOSE(fd)]. */
static void prep(struct io_uring_sqe *s, int fd, char *buf, unsigned len,
		 int out, bool close_it)
{
	memset(s, 0, 3 * sizeof(*s));
	io_uring_prep_read(&s[0], fd, buf, len, 0);
	io_uring_prep_write(&s[1], out, buf, len, (uint64_t)-1);
	if (close_it)
		io_uring_prep_close(&s[2], fd);
}

/*
 * READ(file, len bytes) -> WRITE(pipe p[1]) and the file's CLOSE, as a
 * chain (A, B: everything linked) or a batch (G1, G2: the READ linked to
 * the WRITE, the CLOSE apart). The file has 40 bytes: len 32 reads them
 * all (A, G1: every result, the bytes in the pipe, the file closed); len
 * 64 reads short (B, G2), which ends the chain: the WRITE never runs
 * (-ECANCELED, the pipe stays empty) and the call still returns 0; the
 * CLOSE is cancelled with it when linked (the file stays open), and runs
 * when apart.
 */
static void read_write_close(const int p[2], char *buf, bool batch,
			     unsigned len)
{
	struct io_uring_sqe s[3];
	int32_t res[3];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	memset(buf, 0, 64);
	prep(s, fd, buf, len, p[1], true);
	if (batch)
		s[0].flags |= IOSQE_IO_LINK;
	CHECK_EQ(batch ? canal_io_submit_batch(s, 3, res, -1, NULL)
		       : canal_io_submit_link(s, 3, res, -1, NULL),
		 0);
	bool whole = len <= 40;
	CHECK_EQ(res[0], whole ? (int32_t)len : 40);
	CHECK_EQ(res[1], whole ? (int32_t)len : -ECANCELED);
	CHECK_EQ(res[2], whole || batch ? 0 : -ECANCELED);
	if (whole || batch) {
		CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
	} else {
		CHECK(fcntl(fd, F_GETFD) >= 0); /* the CLOSE did not run */
		close(fd);
	}
	if (!whole) {
		CHECK_EQ(pipe_bytes(p[0]), 0);
		return;
	}
	char got[64];
	CHECK_EQ(read(p[0], got, len), (ssize_t)len);
	for (unsigned i = 0; i < len; i++)
		CHECK_EQ(got[i], 'a' + (int)(i % 26));
}

static _Atomic int race_written;

static void *race_writer(void *arg)
{
	(void)arg;
	for (;;) {
		while (!atomic_load(&race_go)) {
			if (atomic_load(&race_stop))
				return NULL;
			struct timespec idle = {0, 20000};
			nanosleep(&idle, NULL);
		}
		atomic_store(&race_go, 0);
		struct timespec ts = {0, atomic_load(&race_delay_ns)};
		nanosleep(&ts, NULL);
		CHECK_EQ(write(race_in[1], "r", 1), 1);
		atomic_fetch_add(&race_written, 1);
	}
}

/* One byte, 'z', into the pipe end *arg, 20 ms from now. */
static void *late_byte(void *arg)
{
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	CHECK_EQ(write(*(int *)arg, "z", 1), 1);
	return NULL;
}

static struct canal_cond *cond;
static void signaller(void *arg)
{
	(void)arg;
	canal_sleep_ns(3000000);
	canal_cond_signal(cond);
}

static void main_task(void *arg)
{
	(void)arg;
	struct io_uring_sqe s[CANAL_IO_LINK_MAX + 1];
	int32_t res[CANAL_IO_LINK_MAX + 1];
	static char buf[64];
	int p[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0); /* blocking: io_uring waits */

	/* E, the arguments (checked before the backend). */
	memset(s, 0, sizeof(s));
	for (unsigned i = 0; i <= CANAL_IO_LINK_MAX; i++)
		io_uring_prep_nop(&s[i]);
	CHECK_EQ(canal_io_submit_link(NULL, 1, res, -1, NULL), -EINVAL);
	CHECK_EQ(canal_io_submit_link(s, 1, NULL, -1, NULL), -EINVAL);
	CHECK_EQ(canal_io_submit_link(s, 0, res, -1, NULL), -EINVAL);
	CHECK_EQ(canal_io_submit_link(s, CANAL_IO_LINK_MAX + 1, res, -1, NULL),
		 -EINVAL);
	int r = canal_io_submit_link(s, CANAL_IO_LINK_MAX, res, -1, NULL);
	if (on_epoll() || r == -EOPNOTSUPP) {
		CHECK_EQ(r, -EOPNOTSUPP);
		CHECK_EQ(canal_io_submit_batch(s, 2, res, -1, NULL),
			 -EOPNOTSUPP);
		no_uring = 1;
		close(p[0]);
		close(p[1]);
		return;
	}
	CHECK_EQ(r, 0);
	for (unsigned i = 0; i < CANAL_IO_LINK_MAX; i++)
		CHECK_EQ(res[i], 0);
	unsigned bad[] = {IOSQE_IO_LINK, IOSQE_IO_HARDLINK, IOSQE_IO_DRAIN,
			  IOSQE_CQE_SKIP_SUCCESS, IOSQE_BUFFER_SELECT};
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		memset(s, 0, 2 * sizeof(s[0]));
		io_uring_prep_nop(&s[0]);
		io_uring_prep_nop(&s[1]);
		s[1].flags = (uint8_t)bad[k];
		CHECK_EQ(canal_io_submit_link(s, 2, res, -1, NULL), -EINVAL);
	}

	struct io_uring_sqe one;
	memset(&one, 0, sizeof(one));
	io_uring_prep_send_zc(&one, p[1], buf, 1, 0, 0);
	CHECK_EQ(canal_io_submit_link(&one, 1, res, -1, NULL), -EINVAL);
	memset(&one, 0, sizeof(one));
	io_uring_prep_poll_multishot(&one, p[0], POLLIN);
	CHECK_EQ(canal_io_submit_link(&one, 1, res, -1, NULL), -EINVAL);
	memset(&one, 0, sizeof(one));
	io_uring_prep_recv_multishot(&one, p[0], NULL, 0, 0);
	CHECK_EQ(canal_io_submit_link(&one, 1, res, -1, NULL), -EINVAL);
	memset(&one, 0, sizeof(one));
	io_uring_prep_multishot_accept(&one, p[0], NULL, NULL, 0);
	CHECK_EQ(canal_io_submit_link(&one, 1, res, -1, NULL), -EINVAL);
	memset(&one, 0, sizeof(one));
	io_uring_prep_nop(&one);
	one.opcode = IORING_OP_LAST;
	CHECK_EQ(canal_io_submit_link(&one, 1, res, -1, NULL), -EINVAL);
	/* Timeout 0: refused flags first, then nothing started. */
	memset(s, 0, 2 * sizeof(s[0]));
	io_uring_prep_nop(&s[0]);
	io_uring_prep_nop(&s[1]);
	s[1].flags = IOSQE_IO_DRAIN;
	CHECK_EQ(canal_io_submit_link(s, 2, res, 0, NULL), -EINVAL);
	s[1].flags = 0;
	res[0] = res[1] = 777;
	CHECK_EQ(canal_io_submit_link(s, 2, res, 0, NULL), -ETIMEDOUT);
	CHECK_EQ(res[0], 777);
	CHECK_EQ(res[1], 777);

	/* A and B as chains; G1 and G2 as batches. */
	read_write_close(p, buf, false, 32);
	read_write_close(p, buf, false, 64);

	/* G, canal_io_submit_batch: the links are the caller's. */
	read_write_close(p, buf, true, 32);
	read_write_close(p, buf, true, 64);

	/* G3: a link on the last SQE is refused, as are the other flags;
	 * a hard link between the others stands. */
	memset(s, 0, 2 * sizeof(s[0]));
	io_uring_prep_nop(&s[0]);
	io_uring_prep_nop(&s[1]);
	s[1].flags = IOSQE_IO_LINK;
	CHECK_EQ(canal_io_submit_batch(s, 2, res, -1, NULL), -EINVAL);
	s[1].flags = IOSQE_IO_HARDLINK;
	CHECK_EQ(canal_io_submit_batch(s, 2, res, -1, NULL), -EINVAL);
	s[1].flags = 0;
	s[0].flags = IOSQE_IO_DRAIN;
	CHECK_EQ(canal_io_submit_batch(s, 2, res, -1, NULL), -EINVAL);
	s[0].flags = IOSQE_IO_HARDLINK;
	res[0] = res[1] = 777;
	CHECK_EQ(canal_io_submit_batch(s, 2, res, -1, NULL), 0);
	CHECK_EQ(res[0], 0);
	CHECK_EQ(res[1], 0);
	/* G4: the READ waits (an empty pipe) while its descriptor is closed
	 * beside it; the kernel holds the file, and the byte written later
	 * is read and passed on. */
	int q[2];
	CHECK_EQ(pipe2(q, O_CLOEXEC), 0);
	memset(s, 0, 3 * sizeof(s[0]));
	io_uring_prep_read(&s[0], q[0], buf, 1, (uint64_t)-1);
	s[0].flags = IOSQE_IO_LINK;
	io_uring_prep_write(&s[1], p[1], buf, 1, (uint64_t)-1);
	io_uring_prep_close(&s[2], q[0]);
	pthread_t w;
	CHECK_EQ(pthread_create(&w, NULL, late_byte, &q[1]), 0);
	CHECK_EQ(canal_io_submit_batch(s, 3, res, 10000000000ll, NULL), 0);
	CHECK_EQ(pthread_join(w, NULL), 0);
	CHECK_EQ(res[0], 1);
	CHECK_EQ(res[1], 1);
	CHECK_EQ(res[2], 0);
	CHECK(fcntl(q[0], F_GETFD) < 0 && errno == EBADF);
	char z;
	CHECK_EQ(read(p[0], &z, 1), 1);
	CHECK_EQ(z, 'z');
	close(q[1]);
	CHECK_EQ(canal_io_submit_batch(NULL, 1, res, -1, NULL), -EINVAL);
	CHECK_EQ(canal_io_submit_batch(s, 0, res, -1, NULL), -EINVAL);

	/* C: p[0] is empty; the READ waits. */
	for (int round = 0; round < 2; round++) {
		prep(s, p[0], buf, 1, p[1], false);
		if (round == 0) {
			r = canal_io_submit_link(s, 2, res, 2000000, NULL);
			CHECK_EQ(r, -ETIMEDOUT);
		} else {
			cond = canal_cond_create();
			CHECK(cond);
			CHECK_EQ(canal_spawn(signaller, NULL), 0);
			r = canal_io_submit_link(s, 2, res, -1, cond);
			CHECK_EQ(r, -ECANCELED);
			canal_cond_destroy(cond);
		}
		CHECK_EQ(res[0], -ECANCELED);
		CHECK_EQ(res[1], -ECANCELED);
		CHECK_EQ(pipe_bytes(p[0]), 0);
	}
	close(p[0]);
	close(p[1]);

	/* D. */
	pthread_t th = spawn(race_writer, NULL);
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	int ran = 0, cut = 0;
	for (int i = 0; i < RACES; i++) {
		atomic_store(&race_delay_ns,
			     (uint32_t)(check_rand64(&rng) % 300000));
		atomic_store(&race_go, 1);
		prep(s, race_in[0], buf, 1, race_out[1], false);
		r = canal_io_submit_link(s, 2, res, 150000, NULL);
		/* Wait for the writer's byte, then look at the pipes. */
		while (atomic_load(&race_written) != i + 1)
			canal_sleep_ns(20000);
		size_t in_n = pipe_bytes(race_in[0]);
		size_t out_n = pipe_bytes(race_out[0]);
		if (res[0] == 1) {
			CHECK_EQ(in_n, 0);
			CHECK(res[1] == 1 || res[1] == -ECANCELED);
			CHECK_EQ(out_n, res[1] == 1 ? 1u : 0u);
			/* Complete: 0, or -ETIMEDOUT if the timeout came
			 * first and its cancel too late; cut: -ETIMEDOUT. */
			CHECK(res[1] == 1 ? (r == 0 || r == -ETIMEDOUT)
					  : r == -ETIMEDOUT);
			ran++;
		} else {
			CHECK_EQ(res[0], -ECANCELED);
			CHECK_EQ(res[1], -ECANCELED);
			CHECK_EQ(r, -ETIMEDOUT);
			CHECK_EQ(in_n, 1);
			CHECK_EQ(out_n, 0);
			cut++;
		}
	}
	atomic_store(&race_stop, 1);
	join(th);
	printf("race: %d trials, %d chains ran, %d cut\n", RACES, ran, cut);
	CHECK(ran > 0 && cut > 0);
}

#define TASKS 8
#define ROUNDS_F 300
static _Atomic int f_left;

static void f_task(void *arg)
{
	(void)arg;
	int a[2], b[2];
	CHECK_EQ(pipe2(a, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(b, O_CLOEXEC), 0);
	for (int i = 0; i < ROUNDS_F; i++) {
		char c = (char)i, d = 0, e = 0;
		CHECK_EQ(write(a[1], &c, 1), 1);
		struct io_uring_sqe s[2];
		int32_t res[2];
		memset(s, 0, sizeof(s));
		io_uring_prep_read(&s[0], a[0], &d, 1, (uint64_t)-1);
		io_uring_prep_write(&s[1], b[1], &d, 1, (uint64_t)-1);
		CHECK_EQ(canal_io_submit_link(s, 2, res, -1, NULL), 0);
		CHECK_EQ(res[0], 1);
		CHECK_EQ(res[1], 1);
		CHECK_EQ(read(b[0], &e, 1), 1);
		CHECK_EQ(e, c);
		canal_yield();
	}
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	atomic_fetch_sub(&f_left, 1);
}

static void f_main(void *arg)
{
	(void)arg;
	atomic_store(&f_left, TASKS);
	for (int i = 0; i < TASKS; i++)
		CHECK_EQ(canal_spawn(f_task, NULL), 0);
}

int main(void)
{
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	char data[40];
	for (int i = 0; i < 40; i++)
		data[i] = (char)('a' + i % 26);
	CHECK_EQ(write(fd, data, sizeof(data)), 40);
	close(fd);
	CHECK_EQ(pipe2(race_in, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(race_out, O_CLOEXEC), 0);
	/* E, outside a task. */
	struct io_uring_sqe s;
	int32_t res;
	memset(&s, 0, sizeof(s));
	io_uring_prep_nop(&s);
	CHECK_EQ(canal_io_submit_link(&s, 1, &res, -1, NULL), -EPERM);
	CHECK_EQ(canal_io_submit_batch(&s, 1, &res, -1, NULL), -EPERM);
	struct canal_run_options o = {.loops = 1};
	CHECK_EQ(canal_run(main_task, NULL, &o), 0);
	if (!no_uring) {
		struct canal_run_options two = {.loops = 2};
		CHECK_EQ(canal_run(f_main, NULL, &two), 0);
		CHECK_EQ(atomic_load(&f_left), 0);
	}
	unlink(path);
	if (no_uring)
		printf("epoll: canal_io_submit_link is -EOPNOTSUPP, arguments "
		       "checked\n");
	else
		printf("io_uring: chains run, broken by a short read, cut by "
		       "timeout and condvar, racing completion; refusals\n");
	return 0;
}
