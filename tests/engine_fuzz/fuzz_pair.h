/* fuzz_pair.h - what the engine's fuzz targets (fuzz_frames.c,
 * fuzz_rails.c) share: ranks 0 and 1 of a 2-rank session opened in this
 * process, progress on both, whether rank 0's gate to rank 1 closed and
 * how it must have closed. FUZZ_NAME (the target's name, for messages) is
 * defined before this header. */
#ifndef CANAL_FUZZ_PAIR_H
#define CANAL_FUZZ_PAIR_H

#include <canal/base.h>
#include <canal/engine.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/internal.h"

static void die(const char *what, int err)
{
	fprintf(stderr, FUZZ_NAME ": %s: %s\n", what, canal_strerror(err));
	abort();
}

struct fuzz_opener {
	struct canal_engine **e;
	const char *dir, *driver, *bind;
	int rank;
	int err;
};

static void *fuzz_open_rank(void *arg)
{
	struct fuzz_opener *o = arg;
	struct canal_engine_options opt;
	canal_engine_options_init(&opt);
	opt.rank = o->rank;
	opt.size = 2;
	opt.dir = o->dir;
	opt.driver = o->driver;
	opt.bind = o->bind;
	opt.strategy = "default";
	opt.connect = "eager"; /* the fake peer's driver exists from the start */
	opt.connect_timeout_ms = 20000;
	o->err = canal_engine_open(&opt, &o->e[o->rank]);
	return NULL;
}

/* Ranks 0 and 1 into e[], each open waiting for the other (rank 1 on a
 * thread), in a fresh directory made from the mkdtemp template dir, with
 * driver and bind (NULL: the default). Aborts on failure. */
static void fuzz_open_pair(char *dir, const char *driver, const char *bind,
			   struct canal_engine *e[2])
{
	if (!mkdtemp(dir))
		die("mkdtemp", -errno);
	struct fuzz_opener o[2] = { { e, dir, driver, bind, 0, 0 },
				    { e, dir, driver, bind, 1, 0 } };
	pthread_t t;
	if (pthread_create(&t, NULL, fuzz_open_rank, &o[1]))
		abort();
	fuzz_open_rank(&o[0]);
	pthread_join(t, NULL);
	if (o[0].err || o[1].err)
		die("canal_engine_open", o[0].err ? o[0].err : o[1].err);
}

static void fuzz_rmdir_all(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char path[512];
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(dir);
}

/* Whether rank 0's gate to rank 1 closed. */
static bool fuzz_closed(struct canal_engine *const e[2])
{
	return e[0]->gates[1].error != 0;
}

static void fuzz_progress(struct canal_engine *const e[2], int rounds)
{
	for (int k = 0; k < rounds; k++) {
		canal_engine_progress(e[0]);
		canal_engine_progress(e[1]);
	}
}

/* Rank 0's gate to rank 1 closed: its error must be -EPROTO with a
 * message naming peer 1 (into why, cap bytes), else abort (kind: the
 * pair's driver, for the message). */
static void fuzz_gate_check(struct canal_engine *e0, const char *kind,
			    char *why, size_t cap)
{
	int gerr = canal_engine_gate_error(e0, 1, why, cap);
	if (gerr != -EPROTO || !strstr(why, "peer 1")) {
		fprintf(stderr, FUZZ_NAME " (%s): gate error %d \"%s\"\n",
			kind, gerr, why);
		abort();
	}
}

#endif
