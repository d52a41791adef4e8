/* test_task_park_stress.c - 100 000 tasks (1 M with CANAL_STRESS=1) parked
 * on channels at once, then woken: each task receives one element from a
 * shared channel and sends it to a results channel; every element comes
 * back exactly once. Prints the resident memory per parked task. */
#include "check.h"

#include <canal/channel.h>
#include <canal/task.h>

#include <stdint.h>
#include <stdlib.h>

struct park {
	struct canal_chan *in, *out;
	uint32_t n;
	_Atomic uint32_t parked;
	long rss_before, rss_parked;
};

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void waiter(void *arg)
{
	struct park *p = arg;
	uint32_t v;
	atomic_fetch_add_explicit(&p->parked, 1, memory_order_relaxed);
	CHECK_EQ(canal_recv(p->in, &v), 0);
	CHECK_EQ(canal_send(p->out, &v), 0);
}

static void park_main(void *arg)
{
	struct park *p = arg;
	p->rss_before = rss_kib();
	for (uint32_t i = 0; i < p->n; i++)
		CHECK_EQ(canal_spawn(waiter, p), 0);
	/* Let them all run to their recv and park. */
	while (atomic_load_explicit(&p->parked, memory_order_relaxed) < p->n)
		canal_sleep_ns(1000000);
	canal_sleep_ns(5000000);
	p->rss_parked = rss_kib();
	uint8_t *seen = calloc(p->n, 1);
	CHECK(seen);
	for (uint32_t i = 0; i < p->n; i++)
		CHECK_EQ(canal_send(p->in, &i), 0);
	for (uint32_t i = 0; i < p->n; i++) {
		uint32_t v;
		CHECK_EQ(canal_recv(p->out, &v), 0);
		CHECK(v < p->n);
		CHECK_EQ(seen[v]++, 0);
	}
	free(seen);
}

int main(void)
{
	struct park p = {0};
	p.n = 100000u * (uint32_t)stress_scale();
#if defined(__SANITIZE_THREAD__)
	/* TSan keeps about 700 KiB of state per fiber (one per live task,
	 * measured): 10k of them exhaust its allocator. The same test with
	 * 100x fewer tasks. */
	p.n /= 100;
#endif
	/* Capacity 0 in: every waiter is a parked receiver of a synchronous
	 * channel; out is large enough never to block. */
	p.in = canal_chan_create(sizeof(uint32_t), 0, 0);
	p.out = canal_chan_create(sizeof(uint32_t), 1024, 0);
	CHECK(p.in && p.out);
	struct canal_run_options o = {.stack_size = 64 * 1024};
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_run(park_main, &p, &o), 0);
	double s = (double)(canal_now_ns() - t0) / 1e9;
	printf("test_task_park_stress: %u tasks parked on a channel, woken; "
	       "%.0f bytes resident per parked task, %.2f s in all\n",
	       p.n, (double)(p.rss_parked - p.rss_before) * 1024.0 / p.n, s);
	canal_chan_destroy(p.in);
	canal_chan_destroy(p.out);
	return 0;
}
