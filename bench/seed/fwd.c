/* SPDX-License-Identifier: MIT */
/*
 * fwd.c - the seed's fwd program, for every transport (transport.h):
 *   fwd-<transport>[-proc] <writers> <readers>
 * <writers> writers -> 1 forwarder -> <readers> readers. Writers together
 * send at most FWD_TOTAL messages; the forwarder forwards at most
 * FWD_FORWARD_MAX, then closes both channels; readers read until closed.
 * The last writer to finish closes the input, so the forwarder also stops
 * when fewer messages come. Prints only "Working..." and "End of program";
 * fails when the readers did not receive exactly what was forwarded.
 *
 * Threads (default): readers, the forwarder and writers are threads with
 * SEED_STACK_SIZE stacks. -proc: readers and writers are processes forked
 * from the forwarder. Every transport runs this same code around its
 * channels, so that none is given an advantage.
 */
#include "transport.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#ifndef SEED_PROGRAM
#error "SEED_PROGRAM (fwd-<transport>[-proc]) must be defined"
#endif

static const struct fwd_transport *t;
static struct fwd_shared *shared;
static long n_writers;
static int proc;

static void *writer(void *arg)
{
	int id = (int)(intptr_t)arg;

	t->writer(id, fwd_writer_quota(id, n_writers));
	if (atomic_fetch_sub(&shared->writers_left, 1) == 1)
		t->writers_done(proc);
	return NULL;
}

static void *reader(void *arg)
{
	long bad = 0, got = t->reader(&bad);

	(void)arg;
	if (bad)
		bench_die("reader: %ld corrupted messages", bad);
	atomic_fetch_add(&shared->received, got);
	return NULL;
}

static void *forwarder(void *arg)
{
	(void)arg;
	atomic_store(&shared->forwarded, t->forward(FWD_FORWARD_MAX));
	return NULL;
}

static void run_processes(long n_readers)
{
	for (long i = 0; i < n_readers; i++)
		if (seed_fork() == 0) {
			if (t->keep_only)
				t->keep_only(SEED_READER);
			reader(NULL);
			_exit(0);
		}
	for (long i = 0; i < n_writers; i++)
		if (seed_fork() == 0) {
			if (t->keep_only)
				t->keep_only(SEED_WRITER);
			writer((void *)(intptr_t)i);
			_exit(0);
		}
	if (t->keep_only)
		t->keep_only(SEED_FORWARDER);
	forwarder(NULL);
	long bad = seed_wait_children(n_readers + n_writers);
	if (bad)
		bench_die("%ld children failed", bad);
}

static void run_threads(long n_readers)
{
	pthread_t *r = seed_spawn((size_t)n_readers, reader, NULL, 0);
	pthread_t *f = seed_spawn(1, forwarder, NULL, 0);
	pthread_t *w = seed_spawn((size_t)n_writers, writer, NULL, 0);

	seed_join(w, (size_t)n_writers);
	seed_join(f, 1);
	seed_join(r, (size_t)n_readers);
}

int main(int argc, char **argv)
{
	char name[64];
	long n_readers;

	seed_program_name(SEED_PROGRAM, "fwd", name, sizeof(name), &proc);
	t = fwd_transport_find(name);
	if (!t)
		bench_die("no fwd transport '%s'", name);
	fwd_parse_args(argc, argv, &n_writers, &n_readers);
	signal(SIGPIPE, SIG_IGN);
	int r = t->setup(proc);
	if (r)
		return r;
	shared = fwd_shared_new(n_writers);
	seed_working();
	if (proc)
		run_processes(n_readers);
	else
		run_threads(n_readers);
	if (t->teardown)
		t->teardown(proc);
	long done = atomic_load(&shared->forwarded), got = atomic_load(&shared->received);
	if (got != done)
		bench_die("forwarded %ld messages but readers received %ld", done, got);
	seed_end();
	return 0;
}
