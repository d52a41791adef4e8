/* test_chan_hook.c - a progress hook on a thread channel (channel/hook.h,
 * base/wait.h struct canal__wait_hook): a thread blocked in a receive or
 * a send runs the hook's rounds itself, in its own thread, until the
 * round makes it ready (begin once, end(satisfied) once); a hook that
 * does nothing is given up after its budget and the ordinary wait takes
 * over (another thread's send still wakes it); deadlines hold during the
 * hook phase; a begin that says no skips the phase; published is called
 * once by every send form after its publication, never by a receive; a
 * task does not run the hook; bad calls are refused.
 * Every wait here is bounded (2-10 s): a hook that is not run shows as
 * -ETIMEDOUT, never as a hang. */
#include "check.h"

#include "base/clock.h"
#include "channel/hook.h"

#include <canal/task.h>

#include <pthread.h>
#include <time.h>

struct feeder {
	struct canal_chan *ch;
	int mode;	  /* 0 nothing, 1 push one element, 2 take one */
	int after;	  /* polls before acting */
	_Atomic int polls, begins, ends, ends_satisfied;
	_Atomic int polls_at_end;
	_Atomic int published;
	bool refuse;	  /* begin says no */
	pthread_t waiter; /* the thread expected to poll */
	_Atomic int foreign; /* polls from another thread */
	uint64_t value;
};

static bool f_begin(void *arg)
{
	struct feeder *f = arg;
	atomic_fetch_add(&f->begins, 1);
	return !f->refuse;
}

static void f_published(void *arg)
{
	struct feeder *f = arg;
	atomic_fetch_add(&f->published, 1);
}

static int f_poll(void *arg)
{
	struct feeder *f = arg;
	if (!pthread_equal(pthread_self(), f->waiter))
		atomic_fetch_add(&f->foreign, 1);
	int n = atomic_fetch_add(&f->polls, 1) + 1;
	if (n != f->after)
		return 0;
	if (f->mode == 1) {
		CHECK_EQ(canal_try_send(f->ch, &f->value), 0);
		return 1;
	}
	if (f->mode == 2) {
		uint64_t v;
		CHECK_EQ(canal_try_recv(f->ch, &v), 0);
		f->value = v;
		return 1;
	}
	return 0;
}

static void f_end(void *arg, bool satisfied)
{
	struct feeder *f = arg;
	atomic_store(&f->polls_at_end, atomic_load(&f->polls));
	atomic_fetch_add(&f->ends, 1);
	if (satisfied)
		atomic_fetch_add(&f->ends_satisfied, 1);
}

static struct canal__wait_hook hook_of(struct feeder *f, uint64_t budget)
{
	return (struct canal__wait_hook){ f_begin, f_poll, f_end, f_published,
					  f, budget };
}

/* A feeder and its thread channel of 8-byte elements, capacity cap. */
static struct feeder *feeder_new(size_t cap, int mode, int after)
{
	struct feeder *f = calloc(1, sizeof *f);
	CHECK(f);
	f->ch = canal_chan_create(8, cap, 0);
	CHECK(f->ch);
	f->mode = mode;
	f->after = after;
	f->waiter = pthread_self();
	return f;
}

static void feeder_free(struct feeder *f)
{
	canal_chan_destroy(f->ch);
	free(f);
}

static void test_refusals(void)
{
	struct feeder *f = feeder_new(4, 0, 0);
	struct canal_chan *ch = f->ch;
	struct canal__wait_hook h = hook_of(f, 1000000);
	CHECK_EQ(canal__chan_set_hook(NULL, &h), -EINVAL);
	struct canal__wait_hook bad = h;
	bad.poll = NULL;
	CHECK_EQ(canal__chan_set_hook(ch, &bad), -EINVAL);
	bad = h;
	bad.begin = NULL;
	CHECK_EQ(canal__chan_set_hook(ch, &bad), -EINVAL);
	bad = h;
	bad.end = NULL;
	CHECK_EQ(canal__chan_set_hook(ch, &bad), -EINVAL);
	bad = h;
	bad.budget_ns = 0;
	CHECK_EQ(canal__chan_set_hook(ch, &bad), -EINVAL);
	struct canal_chan *sh = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(sh);
	CHECK_EQ(canal__chan_set_hook(sh, &h), -EINVAL);
	canal_chan_destroy(sh);
	CHECK_EQ(canal__chan_set_hook(ch, &h), 0);
	CHECK_EQ(canal__chan_set_hook(ch, NULL), 0);
	/* Removed: a receive on the empty channel just times out. */
	uint64_t v;
	CHECK_EQ(canal_recv_timeout(ch, &v, 20000000), -ETIMEDOUT);
	CHECK_EQ(atomic_load(&f->polls), 0);
	feeder_free(f);
}

/* Receives fed only by the hook: nobody else sends. */
static void test_recv_fed(void)
{
	struct feeder *f = feeder_new(4, 1, 5);
	struct canal_chan *ch = f->ch;
	f->value = 42;
	struct canal__wait_hook h = hook_of(f, 10000000000ull);
	CHECK_EQ(canal__chan_set_hook(ch, &h), 0);
	uint64_t v = 0;
	CHECK_EQ(canal_recv_timeout(ch, &v, 2000000000), 0);
	CHECK_EQ(v, 42);
	CHECK_EQ(atomic_load(&f->polls), 5);
	CHECK_EQ(atomic_load(&f->begins), 1);
	CHECK_EQ(atomic_load(&f->ends), 1);
	CHECK_EQ(atomic_load(&f->ends_satisfied), 1);
	CHECK_EQ(atomic_load(&f->foreign), 0);
	/* The same through canal_recv (no deadline) and a batch. */
	atomic_store(&f->polls, 0);
	f->value = 43;
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 43);
	atomic_store(&f->polls, 0);
	f->value = 44;
	uint64_t b[4];
	CHECK_EQ(canal_recv_batch(ch, b, 4), 1);
	CHECK_EQ(b[0], 44);
	CHECK_EQ(atomic_load(&f->begins), 3);
	CHECK_EQ(atomic_load(&f->ends_satisfied), 3);
	/* An element already there: no hook phase. */
	uint64_t x = 7;
	CHECK_EQ(canal_try_send(ch, &x), 0);
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 7);
	CHECK_EQ(atomic_load(&f->begins), 3);
	feeder_free(f);
}

/* A send into the full channel made possible by the hook's round. */
static void test_send_drained(void)
{
	struct feeder *f = feeder_new(2, 2, 3);
	struct canal_chan *ch = f->ch;
	uint64_t a = 1, b = 2, c = 3;
	CHECK_EQ(canal_try_send(ch, &a), 0);
	CHECK_EQ(canal_try_send(ch, &b), 0);
	struct canal__wait_hook h = hook_of(f, 10000000000ull);
	CHECK_EQ(canal__chan_set_hook(ch, &h), 0);
	CHECK_EQ(canal_send_timeout(ch, &c, 2000000000), 0);
	CHECK_EQ(f->value, 1); /* the hook took the oldest */
	CHECK_EQ(atomic_load(&f->ends_satisfied), 1);
	CHECK_EQ(canal__chan_set_hook(ch, NULL), 0);
	uint64_t v;
	CHECK_EQ(canal_try_recv(ch, &v), 0);
	CHECK_EQ(v, 2);
	CHECK_EQ(canal_try_recv(ch, &v), 0);
	CHECK_EQ(v, 3);
	feeder_free(f);
}

struct late {
	struct canal_chan *ch;
	struct feeder *f;
};

static void *late_sender(void *arg)
{
	struct late *l = arg;
	/* Only once the waiter gave the hook up. */
	while (atomic_load(&l->f->ends) == 0)
		sched_yield();
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	uint64_t v = 99;
	CHECK_EQ(canal_send(l->ch, &v), 0);
	return NULL;
}

/* A hook that never helps: given up after its budget, end(false) once,
 * no poll after it, and the ordinary wait is woken by a plain send. */
static void test_budget(void)
{
	struct feeder *f = feeder_new(4, 0, 0);
	struct canal_chan *ch = f->ch;
	struct canal__wait_hook h = hook_of(f, 2000000); /* 2 ms */
	CHECK_EQ(canal__chan_set_hook(ch, &h), 0);
	struct late l = { ch, f };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, late_sender, &l), 0);
	uint64_t v = 0;
	CHECK_EQ(canal_recv_timeout(ch, &v, 10000000000ll), 0);
	CHECK_EQ(v, 99);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(atomic_load(&f->begins), 1);
	CHECK_EQ(atomic_load(&f->ends), 1);
	CHECK_EQ(atomic_load(&f->ends_satisfied), 0);
	CHECK(atomic_load(&f->polls) > 0);
	CHECK_EQ(atomic_load(&f->polls), atomic_load(&f->polls_at_end));
	feeder_free(f);
}

/* The deadline ends the hook phase though the budget is far. */
static void test_deadline(void)
{
	struct feeder *f = feeder_new(4, 0, 0);
	struct canal_chan *ch = f->ch;
	struct canal__wait_hook h = hook_of(f, 60000000000ull); /* 60 s */
	CHECK_EQ(canal__chan_set_hook(ch, &h), 0);
	uint64_t v;
	uint64_t t0 = canal_now_ns();
	CHECK_EQ(canal_recv_timeout(ch, &v, 30000000), -ETIMEDOUT);
	CHECK(canal_now_ns() - t0 < 5000000000ull); /* not the budget */
	CHECK_EQ(atomic_load(&f->ends), 1);
	CHECK_EQ(atomic_load(&f->ends_satisfied), 0);
	feeder_free(f);
}

/* begin says no (another thread polls): no poll, no end, the ordinary
 * wait; a hook without published works as well. */
static void test_refused_begin(void)
{
	struct feeder *f = feeder_new(4, 1, 1);
	struct canal_chan *ch = f->ch;
	f->refuse = true;
	struct canal__wait_hook h = hook_of(f, 10000000000ull);
	h.published = NULL;
	CHECK_EQ(canal__chan_set_hook(ch, &h), 0);
	uint64_t v;
	CHECK_EQ(canal_recv_timeout(ch, &v, 20000000), -ETIMEDOUT);
	CHECK(atomic_load(&f->begins) >= 1);
	CHECK_EQ(atomic_load(&f->polls), 0);
	CHECK_EQ(atomic_load(&f->ends), 0);
	v = 5;
	CHECK_EQ(canal_send(ch, &v), 0);
	CHECK_EQ(canal_recv(ch, &v), 0);
	CHECK_EQ(v, 5);
	feeder_free(f);
}

/* published: once per publication by every send form, never by a
 * receive; after the element is in the channel. */
static void pub_check(void *arg)
{
	struct feeder *f = arg;
	atomic_fetch_add(&f->published, 1);
	CHECK(canal_chan_len(f->ch) > 0);
}

static void test_published(void)
{
	struct feeder *f = feeder_new(16, 0, 0);
	struct canal_chan *ch = f->ch;
	struct canal__wait_hook h = hook_of(f, 1000000);
	h.published = pub_check;
	CHECK_EQ(canal__chan_set_hook(ch, &h), 0);
	uint64_t v = 1, b[3] = { 2, 3, 4 }, out[16];
	CHECK_EQ(canal_send(ch, &v), 0);
	CHECK_EQ(atomic_load(&f->published), 1);
	CHECK_EQ(canal_try_send(ch, &v), 0);
	CHECK_EQ(atomic_load(&f->published), 2);
	CHECK_EQ(canal_send_timeout(ch, &v, 1000000), 0);
	CHECK_EQ(atomic_load(&f->published), 3);
	CHECK_EQ(canal_send_batch(ch, b, 3), 3);
	CHECK_EQ(atomic_load(&f->published), 4);
	CHECK_EQ(canal_try_send_batch(ch, b, 3), 3);
	CHECK_EQ(atomic_load(&f->published), 5);
	struct canal_slot sl;
	CHECK_EQ(canal_send_reserve(ch, &sl), 0);
	memcpy(sl.data, &v, sizeof v);
	CHECK_EQ(atomic_load(&f->published), 5); /* reserved, not published */
	CHECK_EQ(canal_send_commit(ch, &sl), 0);
	CHECK_EQ(atomic_load(&f->published), 6);
	CHECK_EQ(canal_recv_batch(ch, out, 16), 10);
	CHECK_EQ(canal_try_recv(ch, out), -EAGAIN);
	CHECK_EQ(atomic_load(&f->published), 6);
	CHECK_EQ(atomic_load(&f->polls), 0); /* never waited */
	feeder_free(f);
}

/* A task parks at once: the hook is not run on its loop's thread. */
static struct canal_chan *task_ch;
static struct feeder *task_f;

static void task_main(void *arg)
{
	(void)arg;
	uint64_t v;
	CHECK_EQ(canal_recv_timeout(task_ch, &v, 20000000), -ETIMEDOUT);
}

static void test_task(void)
{
	task_f = feeder_new(4, 1, 1);
	task_ch = task_f->ch;
	struct canal__wait_hook h = hook_of(task_f, 10000000000ull);
	CHECK_EQ(canal__chan_set_hook(task_ch, &h), 0);
	struct canal_run_options o = { .loops = 1 };
	CHECK_EQ(canal_run(task_main, NULL, &o), 0);
	CHECK_EQ(atomic_load(&task_f->polls), 0);
	CHECK_EQ(atomic_load(&task_f->begins), 0);
	feeder_free(task_f);
}

int main(void)
{
	test_refusals();
	test_recv_fed();
	test_send_drained();
	test_budget();
	test_deadline();
	test_refused_begin();
	test_published();
	test_task();
	printf("channel progress hooks: receives and sends fed by the hook "
	       "in the waiting thread, budget, deadline, a refused begin, "
	       "published by every send form, tasks, refusals\n");
	return 0;
}
