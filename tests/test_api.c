/* test_api.c - every public function of channel.h and its error paths,
 * single-threaded where possible, with small helper threads otherwise. */
#include "check.h"

#include <canal/channel.h>

#include <stdint.h>
#include <unistd.h>

static void test_create_errors(void)
{
	errno = 0;
	CHECK(canal_chan_create(8, 4, 0x80) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(canal_chan_create(SIZE_MAX, 4, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(canal_chan_create(8, SIZE_MAX, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(canal_chan_create(SIZE_MAX / 2, SIZE_MAX / 2, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	/* elt_size x capacity overflows 64 bits */
	CHECK(canal_chan_create(CANAL_ELT_SIZE_MAX, CANAL_CAPACITY_MAX, 0) ==
	      NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(canal_chan_create(CANAL_ELT_SIZE_MAX + 1, 1, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(canal_chan_create(8, CANAL_CAPACITY_MAX + 1, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	canal_chan_destroy(NULL); /* accepted */

	/* A valid but impossible size (32 TiB, committed at creation): ENOMEM,
	 * not a crash. Only where the kernel refuses such a mapping up front
	 * (overcommit modes 0 and 2); in mode 1 it would be the OOM killer's. */
	FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
	int mode = 1;
	if (f) {
		if (fscanf(f, "%d", &mode) != 1)
			mode = 1;
		fclose(f);
	}
	if (mode != 1) {
		errno = 0;
		CHECK(canal_chan_create(CANAL_ELT_SIZE_MAX, (size_t)1 << 15, 0) ==
		      NULL);
		CHECK_EQ(errno, ENOMEM);
	} else {
		fprintf(stderr, "test_api: overcommit_memory is 1, "
				"ENOMEM check not run\n");
	}
}

/* A ring larger than the heap threshold is mapped and populated; it works
 * from its first slot to its last, across the wrap. */
static void test_big_ring(void)
{
	size_t cap = 100003; /* x 16 B: 1.6 MB, mmapped; not a power of two */
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), cap, 0);
	CHECK(ch);
	for (int lap = 0; lap < 2; lap++) {
		for (uint64_t i = 0; i < cap; i++)
			CHECK_EQ(canal_send(ch, &i), 0);
		CHECK_EQ(canal_try_send(ch, &cap), -EAGAIN);
		for (uint64_t i = 0; i < cap; i++) {
			uint64_t v;
			CHECK_EQ(canal_recv(ch, &v), 0);
			CHECK_EQ(v, i);
		}
	}
	canal_chan_destroy(ch);
}

static void test_basic_fifo(size_t cap)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), cap, 0);
	CHECK(ch);
	CHECK_EQ(canal_chan_elt_size(ch), 8);
	CHECK_EQ(canal_chan_capacity(ch), cap);
	CHECK_EQ(canal_chan_len(ch), 0);
	CHECK_EQ(canal_chan_is_closed(ch), 0);
	uint64_t v = 0;
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	for (uint64_t i = 0; i < cap; i++)
		CHECK_EQ(canal_send(ch, &i), 0);
	CHECK_EQ(canal_chan_len(ch), cap);
	uint64_t x = 99;
	CHECK_EQ(canal_try_send(ch, &x), -EAGAIN);
	CHECK_EQ(canal_send_timeout(ch, &x, 0), -ETIMEDOUT);
	CHECK_EQ(canal_send_timeout(ch, &x, 1000000), -ETIMEDOUT);
	for (uint64_t i = 0; i < cap; i++) {
		CHECK_EQ(canal_recv(ch, &v), 0);
		CHECK_EQ(v, i);
	}
	CHECK_EQ(canal_recv_timeout(ch, &v, 0), -ETIMEDOUT);
	CHECK_EQ(canal_recv_timeout(ch, &v, 2000000), -ETIMEDOUT);
	CHECK_EQ(canal_recv_deadline(ch, &v, canal_now_ns() + 1000000),
		 -ETIMEDOUT);
	CHECK_EQ(canal_recv_deadline(ch, &v, 0), -ETIMEDOUT);
	/* wrap around many times */
	for (uint64_t i = 0; i < 10 * cap + 3; i++) {
		CHECK_EQ(canal_try_send(ch, &i), 0);
		CHECK_EQ(canal_try_recv(ch, &v), 0);
		CHECK_EQ(v, i);
	}
	CHECK_EQ(canal_send_deadline(ch, &x, canal_now_ns() + 1000000), 0);
	CHECK_EQ(canal_close(ch), 0);
	CHECK_EQ(canal_chan_is_closed(ch), 1);
	CHECK_EQ(canal_close(ch), -EPIPE);
	CHECK_EQ(canal_send(ch, &x), -EPIPE);
	CHECK_EQ(canal_try_send(ch, &x), -EPIPE);
	CHECK_EQ(canal_send_timeout(ch, &x, 1000), -EPIPE);
	/* drained after close, then -EPIPE */
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 99);
	CHECK_EQ(canal_recv(ch, &v), -EPIPE);
	CHECK_EQ(canal_try_recv(ch, &v), -EPIPE);
	CHECK_EQ(canal_recv_timeout(ch, &v, 1000), -EPIPE);
	canal_chan_destroy(ch);
}

static void test_null_args(void)
{
	struct canal_chan *ch = canal_chan_create(4, 2, 0);
	struct canal_slot slot;
	CHECK(ch);
	CHECK_EQ(canal_send(NULL, "abcd"), -EINVAL);
	CHECK_EQ(canal_recv(NULL, &slot), -EINVAL);
	CHECK_EQ(canal_send(ch, NULL), -EINVAL);
	CHECK_EQ(canal_recv(ch, NULL), -EINVAL);
	CHECK_EQ(canal_try_send(ch, NULL), -EINVAL);
	CHECK_EQ(canal_try_recv(ch, NULL), -EINVAL);
	CHECK_EQ(canal_send_timeout(ch, NULL, 0), -EINVAL);
	CHECK_EQ(canal_recv_timeout(ch, NULL, 0), -EINVAL);
	CHECK_EQ(canal_close(NULL), -EINVAL);
	CHECK_EQ(canal_send_batch(ch, NULL, 2), -EINVAL);
	CHECK_EQ(canal_recv_batch(ch, NULL, 2), -EINVAL);
	CHECK_EQ(canal_send_batch(NULL, "abcd", 1), -EINVAL);
	CHECK_EQ(canal_send_reserve(ch, NULL), -EINVAL);
	CHECK_EQ(canal_recv_borrow(ch, NULL), -EINVAL);
	CHECK_EQ(canal_send_commit(ch, NULL), -EINVAL);
	CHECK_EQ(canal_recv_release(ch, NULL), -EINVAL);
	slot.data = &slot; /* not a slot of ch */
	slot.position = 0;
	CHECK_EQ(canal_send_commit(ch, &slot), -EINVAL);
	CHECK_EQ(canal_send_abort(ch, &slot), -EINVAL);
	CHECK_EQ(canal_recv_release(ch, &slot), -EINVAL);
	canal_chan_destroy(ch);
}

static void test_zero_size(void)
{
	struct canal_chan *ch = canal_chan_create(0, 3, 0);
	CHECK(ch);
	CHECK_EQ(canal_send(ch, NULL), 0);
	CHECK_EQ(canal_send(ch, NULL), 0);
	CHECK_EQ(canal_chan_len(ch), 2);
	CHECK_EQ(canal_recv(ch, NULL), 0);
	CHECK_EQ(canal_try_send_batch(ch, NULL, 5), 2);
	CHECK_EQ(canal_recv_batch(ch, NULL, 10), 3);
	CHECK_EQ(canal_try_recv(ch, NULL), -EAGAIN);
	canal_chan_destroy(ch);
}

static void test_batch(void)
{
	struct canal_chan *ch = canal_chan_create(sizeof(int), 7, 0);
	int in[20], out[20];
	CHECK(ch);
	for (int i = 0; i < 20; i++)
		in[i] = i;
	CHECK_EQ(canal_send_batch(ch, in, 0), 0);
	CHECK_EQ(canal_recv_batch(ch, out, 0), 0);
	CHECK_EQ(canal_try_recv_batch(ch, out, 5), -EAGAIN);
	CHECK_EQ(canal_try_send_batch(ch, in, 20), 7);
	CHECK_EQ(canal_try_send_batch(ch, in, 20), -EAGAIN);
	CHECK_EQ(canal_recv_batch(ch, out, 3), 3);
	CHECK_EQ(out[0], 0);
	CHECK_EQ(out[2], 2);
	CHECK_EQ(canal_try_recv_batch(ch, out, 20), 4);
	CHECK_EQ(out[0], 3);
	CHECK_EQ(out[3], 6);
	CHECK_EQ(canal_send_batch(ch, in + 7, 5), 5);
	CHECK_EQ(canal_close(ch), 0);
	CHECK_EQ(canal_send_batch(ch, in, 1), -EPIPE);
	CHECK_EQ(canal_recv_batch(ch, out, 20), 5);
	CHECK_EQ(out[4], 11);
	CHECK_EQ(canal_recv_batch(ch, out, 20), -EPIPE);
	CHECK_EQ(canal_try_recv_batch(ch, out, 20), -EPIPE);
	canal_chan_destroy(ch);
}

/* A blocking batch send larger than the channel: sent in groups while a
 * receiver drains; the receiver sees every element in order. */
struct batch_arg {
	struct canal_chan *ch;
	int n;
};

static void *batch_receiver(void *p)
{
	struct batch_arg *a = p;
	int buf[16], next = 0;
	for (;;) {
		ssize_t r = canal_recv_batch(a->ch, buf, 16);
		if (r == -EPIPE)
			break;
		CHECK(r >= 1 && r <= 16);
		for (ssize_t i = 0; i < r; i++)
			CHECK_EQ(buf[i], next++);
	}
	CHECK_EQ(next, a->n);
	return NULL;
}

static void test_batch_blocking(void)
{
	enum { N = 10000 };
	static int in[N];
	struct batch_arg a = { canal_chan_create(sizeof(int), 5, 0), N };
	CHECK(a.ch);
	for (int i = 0; i < N; i++)
		in[i] = i;
	pthread_t t = spawn(batch_receiver, &a);
	CHECK_EQ(canal_send_batch(a.ch, in, N), N);
	CHECK_EQ(canal_close(a.ch), 0);
	join(t);
	canal_chan_destroy(a.ch);
}

static void test_single_copy(void)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 2, 0);
	struct canal_slot s1, s2, s3, r;
	uint64_t v;
	CHECK(ch);
	CHECK_EQ(canal_try_recv_borrow(ch, &r), -EAGAIN);
	CHECK_EQ(canal_send_reserve(ch, &s1), 0);
	CHECK_EQ(canal_try_send_reserve(ch, &s2), 0);
	CHECK_EQ(canal_try_send_reserve(ch, &s3), -EAGAIN);
	CHECK(((uintptr_t)s1.data & 7) == 0);
	*(uint64_t *)s2.data = 2;
	*(uint64_t *)s1.data = 1;
	/* s2 committed first; receivers still get s1's position first */
	CHECK_EQ(canal_send_commit(ch, &s2), 0);
	CHECK_EQ(canal_send_commit(ch, &s2), -EINVAL); /* already committed */
	CHECK_EQ(canal_send_commit(ch, &s1), 0);
	CHECK_EQ(canal_recv_borrow(ch, &r), 0);
	CHECK_EQ(*(uint64_t *)r.data, 1);
	CHECK_EQ(canal_recv_release(ch, &r), 0);
	CHECK_EQ(canal_recv_release(ch, &r), -EINVAL);
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 2);
	/* abort: receivers skip the withdrawn element */
	CHECK_EQ(canal_send_reserve(ch, &s1), 0);
	CHECK_EQ(canal_send_abort(ch, &s1), 0);
	v = 3;
	CHECK_EQ(canal_send(ch, &v), 0);
	CHECK_EQ(canal_try_recv_borrow(ch, &r), 0);
	CHECK_EQ(*(uint64_t *)r.data, 3);
	CHECK_EQ(canal_recv_release(ch, &r), 0);
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	/* reserved before close: still delivered */
	CHECK_EQ(canal_send_reserve(ch, &s1), 0);
	CHECK_EQ(canal_close(ch), 0);
	CHECK_EQ(canal_send_reserve(ch, &s2), -EPIPE);
	*(uint64_t *)s1.data = 4;
	CHECK_EQ(canal_send_commit(ch, &s1), 0);
	CHECK_EQ(canal_recv_borrow(ch, &r), 0);
	CHECK_EQ(*(uint64_t *)r.data, 4);
	CHECK_EQ(canal_recv_release(ch, &r), 0);
	CHECK_EQ(canal_recv_borrow(ch, &r), -EPIPE);
	canal_chan_destroy(ch);
}

/* Blocking operations are woken by close. */
static void *blocked_recv(void *p)
{
	uint64_t v;
	return (void *)(intptr_t)canal_recv(p, &v);
}

static void *blocked_send(void *p)
{
	uint64_t v = 7;
	return (void *)(intptr_t)canal_send(p, &v);
}

static void test_close_wakes(size_t cap)
{
	struct canal_chan *ch = canal_chan_create(8, cap, 0);
	pthread_t r[3], s[3];
	CHECK(ch);
	for (int i = 0; i < 3; i++)
		r[i] = spawn(blocked_recv, ch);
	usleep(20000);
	CHECK_EQ(canal_close(ch), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ((intptr_t)join(r[i]), -EPIPE);
	canal_chan_destroy(ch);

	ch = canal_chan_create(8, cap, 0);
	uint64_t v = 1;
	for (size_t i = 0; i < cap; i++)
		CHECK_EQ(canal_send(ch, &v), 0);
	for (int i = 0; i < 3; i++)
		s[i] = spawn(blocked_send, ch);
	usleep(20000);
	CHECK_EQ(canal_close(ch), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ((intptr_t)join(s[i]), -EPIPE);
	for (size_t i = 0; i < cap; i++)
		CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(canal_recv(ch, &v), -EPIPE);
	canal_chan_destroy(ch);
}

/* Synchronous channels. */
static _Atomic int sync_taken;

static void *sync_receiver(void *p)
{
	uint64_t v;
	usleep(30000);
	atomic_store(&sync_taken, 1);
	CHECK_EQ(canal_recv(p, &v), 0);
	CHECK_EQ(v, 42);
	return NULL;
}

static void *sync_try_receiver(void *p)
{
	uint64_t v;
	int r;
	/* a sender is (or will be) blocked: poll until it is seen */
	while ((r = canal_try_recv(p, &v)) == -EAGAIN)
		usleep(1000);
	CHECK_EQ(r, 0);
	CHECK_EQ(v, 43);
	return NULL;
}

static void *sync_blocking_receiver(void *p)
{
	uint64_t v;
	CHECK_EQ(canal_recv(p, &v), 0);
	CHECK_EQ(v, 44);
	return NULL;
}

static void test_sync(void)
{
	struct canal_chan *ch = canal_chan_create(8, 0, 0);
	uint64_t v = 42;
	CHECK(ch);
	CHECK_EQ(canal_chan_capacity(ch), 0);
	/* nobody waiting: try ops fail, timed ops time out */
	CHECK_EQ(canal_try_send(ch, &v), -EAGAIN);
	CHECK_EQ(canal_try_recv(ch, &v), -EAGAIN);
	CHECK_EQ(canal_send_timeout(ch, &v, 2000000), -ETIMEDOUT);
	CHECK_EQ(canal_recv_timeout(ch, &v, 2000000), -ETIMEDOUT);
	CHECK_EQ(canal_try_send(ch, &v), -EAGAIN); /* timed out recv left */

	/* send returns only once the receiver has the element */
	atomic_store(&sync_taken, 0);
	pthread_t t = spawn(sync_receiver, ch);
	CHECK_EQ(canal_send(ch, &v), 0);
	CHECK_EQ(atomic_load(&sync_taken), 1);
	join(t);

	/* try_recv succeeds once a sender waits */
	t = spawn(sync_try_receiver, ch);
	v = 43;
	CHECK_EQ(canal_send(ch, &v), 0);
	join(t);

	/* try_send succeeds once a receiver waits */
	t = spawn(sync_blocking_receiver, ch);
	v = 44;
	int r;
	while ((r = canal_try_send(ch, &v)) == -EAGAIN)
		usleep(1000);
	CHECK_EQ(r, 0);
	join(t);

	/* single copy on a synchronous channel */
	struct canal_slot s;
	t = spawn(sync_blocking_receiver, ch);
	CHECK_EQ(canal_send_reserve(ch, &s), 0);
	*(uint64_t *)s.data = 44;
	CHECK_EQ(canal_send_commit(ch, &s), 0);
	join(t);

	/* close wakes a blocked synchronous sender */
	pthread_t b = spawn(blocked_send, ch);
	usleep(20000);
	CHECK_EQ(canal_close(ch), 0);
	CHECK_EQ((intptr_t)join(b), -EPIPE);
	CHECK_EQ(canal_recv(ch, &v), -EPIPE);
	canal_chan_destroy(ch);
}

static void test_strerror(void)
{
	CHECK(strcmp(canal_strerror(-EPIPE), "channel closed") == 0);
	CHECK(canal_strerror(-ETIMEDOUT) != NULL);
	CHECK(strcmp(canal_strerror(-12345), "unknown error") == 0);
	CHECK(strcmp(canal_strerror(0), "success") == 0);
}

int main(void)
{
	test_create_errors();
	test_big_ring();
	test_basic_fifo(1);
	test_basic_fifo(7);
	test_basic_fifo(1024);
	test_null_args();
	test_zero_size();
	test_batch();
	test_batch_blocking();
	test_single_copy();
	test_close_wakes(0);
	test_close_wakes(1);
	test_close_wakes(4);
	test_sync();
	test_strerror();
	TEST_DONE("test_api");
}
