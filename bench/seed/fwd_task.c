/* SPDX-License-Identifier: MIT */
/*
 * fwd_task.c - fwd-canal-task: the seed's fwd program (fwd.c) on canal
 * tasks instead of threads (issue 13):
 *   fwd-canal-task <writers> <readers>
 * Same channels (the "canal" transport of fwd_canal.c: capacity
 * FWD_CAPACITY both ways), same counts, same output ("Working...",
 * "End of program") and the same check as fwd-canal; the readers, the
 * forwarder and the writers are tasks of one canal_run (one loop per CPU,
 * SEED_STACK_SIZE stacks as the threads of fwd-canal), started in the same
 * order as fwd.c starts its threads. Their blocking canal_send/canal_recv
 * park the task instead of the thread.
 */
#include "transport.h"

#include <canal/task.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const struct fwd_transport *t;
static struct fwd_shared *shared;
static long n_writers, n_readers;

static void writer(void *arg)
{
	int id = (int)(intptr_t)arg;

	t->writer(id, fwd_writer_quota(id, n_writers));
	if (atomic_fetch_sub(&shared->writers_left, 1) == 1)
		t->writers_done(0);
}

static void reader(void *arg)
{
	long bad = 0, got = t->reader(&bad);

	(void)arg;
	if (bad)
		bench_die("reader: %ld corrupted messages", bad);
	atomic_fetch_add(&shared->received, got);
}

static void forwarder(void *arg)
{
	(void)arg;
	atomic_store(&shared->forwarded, t->forward(FWD_FORWARD_MAX));
}

static void spawn(void (*fn)(void *), void *arg)
{
	int r = canal_spawn(fn, arg);

	if (r)
		bench_die("canal_spawn: %s", strerror(-r));
}

/* The first task: start the others; canal_run returns once all ended. */
static void start(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_readers; i++)
		spawn(reader, NULL);
	spawn(forwarder, NULL);
	for (long i = 0; i < n_writers; i++)
		spawn(writer, (void *)(intptr_t)i);
}

int main(int argc, char **argv)
{
	struct canal_run_options opts = { .stack_size = SEED_STACK_SIZE };

	t = fwd_transport_find("canal");
	if (!t)
		bench_die("no fwd transport 'canal'");
	fwd_parse_args(argc, argv, &n_writers, &n_readers);
	signal(SIGPIPE, SIG_IGN);
	int r = t->setup(0);
	if (r)
		return r;
	shared = fwd_shared_new(n_writers);
	seed_working();
	r = canal_run(start, NULL, &opts);
	if (r)
		bench_die("canal_run: %s", strerror(-r));
	t->teardown(0);
	long done = atomic_load(&shared->forwarded), got = atomic_load(&shared->received);
	if (got != done)
		bench_die("forwarded %ld messages but readers received %ld", done, got);
	seed_end();
	return 0;
}
