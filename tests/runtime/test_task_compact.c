/* test_task_compact.c - stack compaction of parked tasks (compact.c,
 * CANAL_RUN_COMPACT_STACKS), with its epoch at 1 ms
 * (CANAL_STACK_COMPACT_MS=1) so that it happens often; and a runtime
 * without the flag never compacts (part 4).
 *
 * 1. Restore. 1000 tasks fill a 512-byte array on their stack with a
 *    pattern of their own, note its address and park in a channel
 *    receive. The main task waits until the pages holding 90 % of those
 *    arrays are not resident (mincore): compaction gave them back (it
 *    fails without compaction). Then it sends each a value: every task
 *    must find its array intact at the same address, and every value
 *    must be received once.
 * 2. Wakes racing the sweep's hold. 256 tasks receive from a channel of
 *    their own, round after round, checking that the values come in
 *    order (1, 2, 3, ...) and that a stack array refilled with the round's
 *    value each time is intact; a plain thread sends to random tasks at
 *    random intervals (0-0.3 ms: each task waits ~40 ms, dozens of epochs, between its values) for 1.5 s, then closes
 *    every channel. Every value sent must be received, in order; the
 *    sweep must have compacted tasks meanwhile; odd tasks wait with
 *    timeouts, so timers race the hold too. Rounds are repeated (at
 *    most 5) until a wake has come during a hold at least once.
 * 3. Waits that must not be compacted. 64 tasks wait in canal_select on
 *    two channels (nodes on their stacks, written by their wakers) for
 *    many epochs: their arrays' pages must stay resident, and each must
 *    then receive its value with its array intact.
 *    Part 3 runs with CANAL_STACK_COMPACT_MAX at 64 KiB (select frames
 *    are larger than the default): with the one-word check removed from
 *    park.c, it fails.
 * Bounded: every wait for the sweep gives up after 10 s.
 */
#define _GNU_SOURCE
#include "check.h"
#include "runtime/internal.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#define WORDS 64

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	x ^= x >> 29;
	return x * 0xbf58476d1ce4e5b9ull;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether the page holding addr is resident. */
static bool resident(uintptr_t addr)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char v = 0;
	CHECK(mincore((void *)(addr & ~(uintptr_t)(page - 1)), 1, &v) == 0);
	return v & 1;
}

/* How many of the n arrays at addr[] sit on pages that are not resident. */
static int stacks_gone(const uintptr_t *addr, int n)
{
	int gone = 0;
	for (int i = 0; i < n; i++)
		gone += !resident(addr[i]);
	return gone;
}

/* Wait (in a task) until n tasks have said they are about to park. */
static void wait_parked(_Atomic int *parked, int n)
{
	while (atomic_load(parked) < n)
		canal_sleep_ns(1000000);
}

/* Parts whose stacks must stay in place: once n tasks are about to park,
 * let 50 compaction epochs pass, then none of their arrays may be gone. */
static void expect_none_gone(_Atomic int *parked, const uintptr_t *addr,
			     int n, const char *what)
{
	wait_parked(parked, n);
	canal_sleep_ns(50000000); /* 50 epochs */
	int gone = stacks_gone(addr, n);
	printf("%s: %d of %d stacks given back (must be 0)\n", what, gone, n);
	CHECK_EQ(gone, 0);
}

static void fill(volatile uint64_t *a, uint64_t id, uint64_t round)
{
	for (int i = 0; i < WORDS; i++)
		a[i] = mix(id * 1000003 + round, (uint64_t)i);
}

static bool intact(volatile uint64_t *a, uint64_t id, uint64_t round)
{
	for (int i = 0; i < WORDS; i++)
		if (a[i] != mix(id * 1000003 + round, (uint64_t)i))
			return false;
	return true;
}

/* ---- 1. restore ---- */
#define N1 1000
static struct canal_chan *ch1;
static uintptr_t addr1[N1];
static _Atomic int parked1, ok1, fake1;
static _Atomic long sum1;

static void task1(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	volatile uint64_t a[WORDS];
	fill(a, id, 0);
	addr1[id] = (uintptr_t)a;
	/* ASan with detect_stack_use_after_return puts the array in a fake
	 * stack frame on the heap, far from the real frame. */
	uintptr_t fa = (uintptr_t)__builtin_frame_address(0);
	if (addr1[id] > fa || fa - addr1[id] > 16384)
		atomic_fetch_add(&fake1, 1);
	atomic_fetch_add(&parked1, 1);
	int v = -1;
	CHECK_EQ(canal_recv(ch1, &v), 0);
	CHECK(addr1[id] == (uintptr_t)a);
	if (intact(a, id, 0))
		atomic_fetch_add(&ok1, 1);
	atomic_fetch_add(&sum1, v);
}

static void main1(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; i < N1; i++)
		CHECK_EQ(canal_spawn(task1, (void *)i), 0);
	wait_parked(&parked1, N1);
	uint64_t t0 = now_ns();
	int gone = 0;
	while (now_ns() - t0 < 10000000000ull) {
		canal_sleep_ns(5000000);
		if ((gone = stacks_gone(addr1, N1)) >= N1 * 9 / 10)
			break;
	}
	printf("restore: %d of %d parked stacks given back\n", gone, N1);
	if (atomic_load(&fake1))
		printf("restore: %d arrays in ASan's fake stacks "
		       "(detect_stack_use_after_return): not counted\n",
		       atomic_load(&fake1));
	else
		CHECK(gone >= N1 * 9 / 10);
	for (int i = 0; i < N1; i++)
		CHECK_EQ(canal_send(ch1, &i), 0);
}

/* ---- 2. wakes racing the hold ---- */
#define N2 256
static struct canal_chan *ch2[N2];
static _Atomic long received2, bad2;
static long sent2;

static void task2(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	volatile uint64_t a[WORDS];
	long expect = 1;
	fill(a, id, 0);
	uint64_t seed = id + 1;
	for (;;) {
		long v;
		/* Odd tasks wait with timeouts (0.5-3.5 ms): their timers
		 * race the sweep's hold too. */
		int r = id % 2 ? canal_recv_timeout(
					 ch2[id], &v,
					 500000 + (int64_t)(check_rand64(&seed) %
							    3000000))
			       : canal_recv(ch2[id], &v);
		if (r == -ETIMEDOUT)
			continue;
		if (r == -EPIPE)
			break;
		CHECK_EQ(r, 0);
		if (v != expect || !intact(a, id, (uint64_t)expect - 1))
			atomic_fetch_add(&bad2, 1);
		fill(a, id, (uint64_t)v);
		expect = v + 1;
		atomic_fetch_add(&received2, 1);
	}
}

static void *waker2(void *arg)
{
	(void)arg;
	uint64_t seed = 0x1234567, t0 = now_ns();
	long next[N2];
	for (int i = 0; i < N2; i++)
		next[i] = 1;
	while (now_ns() - t0 < 1500000000ull) {
		int i = (int)(check_rand64(&seed) % N2);
		CHECK_EQ(canal_send(ch2[i], &next[i]), 0);
		next[i]++;
		sent2++;
		struct timespec d = {0, (long)(check_rand64(&seed) % 300000)};
		if (check_rand64(&seed) % 4 == 0)
			d.tv_nsec = 0;
		nanosleep(&d, NULL);
	}
	for (int i = 0; i < N2; i++)
		canal_close(ch2[i]);
	return NULL;
}

static void main2(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; i < N2; i++)
		CHECK_EQ(canal_spawn(task2, (void *)i), 0);
}

/* ---- 3. select waits stay in place ---- */
#define N3 64
static struct canal_chan *ch3a[N3], *ch3b[N3];
static uintptr_t addr3[N3];
static _Atomic int parked3, ok3;

static void task3(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	volatile uint64_t a[WORDS];
	fill(a, id, 7);
	addr3[id] = (uintptr_t)a;
	int va = -1, vb = -1;
	struct canal_case cs[2] = {
		{.ch = ch3a[id], .op = CANAL_OP_RECV, .elt = &va},
		{.ch = ch3b[id], .op = CANAL_OP_RECV, .elt = &vb},
	};
	atomic_fetch_add(&parked3, 1);
	int idx = canal_select(cs, 2, -1, 0);
	CHECK(idx == 0 || idx == 1);
	int v = idx == 0 ? va : vb;
	if (v == (int)id && intact(a, id, 7))
		atomic_fetch_add(&ok3, 1);
}

static void main3(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; i < N3; i++)
		CHECK_EQ(canal_spawn(task3, (void *)i), 0);
	expect_none_gone(&parked3, addr3, N3, "select");
	for (int i = 0; i < N3; i++)
		CHECK_EQ(canal_send(i % 2 ? ch3a[i] : ch3b[i], &i), 0);
}

/* ---- 4. without the flag, nothing is compacted ---- */
#define N4 200
static struct canal_chan *ch4;
static uintptr_t addr4[N4];
static _Atomic int parked4, ok4;

static void task4(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	volatile uint64_t a[WORDS];
	fill(a, id, 3);
	addr4[id] = (uintptr_t)a;
	atomic_fetch_add(&parked4, 1);
	int v;
	CHECK_EQ(canal_recv(ch4, &v), 0);
	if (intact(a, id, 3))
		atomic_fetch_add(&ok4, 1);
}

static void main4(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; i < N4; i++)
		CHECK_EQ(canal_spawn(task4, (void *)i), 0);
	expect_none_gone(&parked4, addr4, N4, "no flag");
	for (int i = 0; i < N4; i++)
		CHECK_EQ(canal_send(ch4, &i), 0);
}

int main(void)
{
	setenv("CANAL_STACK_COMPACT_MS", "1", 1);
	struct canal_run_options two = {.loops = 2,
					 .flags = CANAL_RUN_COMPACT_STACKS};

	ch1 = canal_chan_create(sizeof(int), 0, 0);
	CHECK(ch1);
	CHECK_EQ(canal_run(main1, NULL, &two), 0);
	CHECK_EQ(atomic_load(&ok1), N1);
	CHECK_EQ(atomic_load(&sum1), (long)N1 * (N1 - 1) / 2);
	canal_chan_destroy(ch1);

	/* Until a wake has come during a hold at least once (each round
	 * sees several, usually), at most 5 rounds. */
	uint64_t c0, n0, c1, n1, interrupted = 0;
	for (int round = 0; round < 5 && !interrupted; round++) {
		canal__compact_stats(&c0, &n0);
		sent2 = 0;
		atomic_store(&received2, 0);
		for (int i = 0; i < N2; i++)
			CHECK((ch2[i] = canal_chan_create(sizeof(long), 1, 0)));
		pthread_t th;
		CHECK_EQ(pthread_create(&th, NULL, waker2, NULL), 0);
		CHECK_EQ(canal_run(main2, NULL, &two), 0);
		CHECK_EQ(pthread_join(th, NULL), 0);
		canal__compact_stats(&c1, &n1);
		interrupted = n1 - n0;
		printf("race: %ld sent, %ld received, %llu compacted, %llu "
		       "holds interrupted by a wake\n",
		       sent2, (long)atomic_load(&received2),
		       (unsigned long long)(c1 - c0),
		       (unsigned long long)interrupted);
		CHECK_EQ(atomic_load(&received2), sent2);
		CHECK_EQ(atomic_load(&bad2), 0);
		CHECK(c1 > c0);
		for (int i = 0; i < N2; i++)
			canal_chan_destroy(ch2[i]);
	}
	CHECK(interrupted > 0);

	for (int i = 0; i < N3; i++) {
		CHECK((ch3a[i] = canal_chan_create(sizeof(int), 0, 0)));
		CHECK((ch3b[i] = canal_chan_create(sizeof(int), 0, 0)));
	}
	/* Any stack size may be compacted here: what keeps select waits in
	 * place must be that they are not one-word waits. */
	setenv("CANAL_STACK_COMPACT_MAX", "65536", 1);
	canal__compact_stats(&c0, &n0);
	CHECK_EQ(canal_run(main3, NULL, &two), 0);
	canal__compact_stats(&c1, &n1);
	unsetenv("CANAL_STACK_COMPACT_MAX");
	CHECK_EQ(c1, c0);
	CHECK_EQ(atomic_load(&ok3), N3);
	for (int i = 0; i < N3; i++) {
		canal_chan_destroy(ch3a[i]);
		canal_chan_destroy(ch3b[i]);
	}
	struct canal_run_options plain = {.loops = 2};
	CHECK((ch4 = canal_chan_create(sizeof(int), 0, 0)));
	canal__compact_stats(&c0, &n0);
	CHECK_EQ(canal_run(main4, NULL, &plain), 0);
	canal__compact_stats(&c1, &n1);
	CHECK_EQ(c1, c0);
	CHECK_EQ(atomic_load(&ok4), N4);
	canal_chan_destroy(ch4);
	printf("ok\n");
	return 0;
}
