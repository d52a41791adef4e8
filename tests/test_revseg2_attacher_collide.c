/* SPDX-License-Identifier: MIT */
/*
 * test_revseg2_attacher_collide - attacher ids come from next_attacher, a
 * word of the shared header that any peer can write. A peer that sets it
 * back to an id in use must not make a new handle share that id: the new
 * handle's lock on the id's byte fails, its id was marked unlocked
 * (never taken for dead, so a slot it held when it died was never
 * repaired). The id allocation now skips ids whose byte is locked and
 * takes a free one (liveness.c, new_id / take_lock).
 */
#include "check.h"

#include "../src/channel/internal.h"

#include <canal/channel.h>

#include <errno.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNLOCKED 0x80000000u /* liveness.c's ID_UNLOCKED */

int main(void)
{
	alarm(30);
	struct canal_chan *a = canal_chan_create(sizeof(uint64_t), 4,
						 CANAL_SHARED);
	CHECK(a);
	uint32_t ida = canal__self_id(a);
	CHECK(ida != 0 && !(ida & UNLOCKED));

	/* Several collisions in a row: next_attacher set back so that the
	 * next ids are the ones handles hold. */
	struct canal_chan *h[4] = { a };
	uint32_t ids[4] = { ida };
	for (int i = 1; i < 4; i++) {
		atomic_store(&a->st->next_attacher, ida - 1);
		CHECK_EQ(canal_chan_open_fd(canal_chan_fd(a), sizeof(uint64_t),
					    4, CANAL_SHARED, &h[i]),
			 0);
		ids[i] = canal__self_id(h[i]);
		CHECK(!(ids[i] & UNLOCKED));
		for (int j = 0; j < i; j++)
			CHECK(ids[i] != ids[j]);
		/* every other handle sees it alive */
		for (int j = 0; j < i; j++)
			CHECK(!canal__attacher_gone(h[j], ids[i]));
	}
	/* A forked child re-attaches with a record lock; a new handle of
	 * its own on the file takes a record lock too, which a byte the
	 * child already holds would grant again (same owner): the id must
	 * still be a free one. */
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		uint32_t cid = canal__self_id(a);
		if (cid == ida || (cid & UNLOCKED))
			_exit(1);
		atomic_store(&a->st->next_attacher, cid - 1);
		struct canal_chan *c2 = NULL;
		if (canal_chan_open_fd(canal_chan_fd(a), sizeof(uint64_t), 4,
				       CANAL_SHARED, &c2) != 0)
			_exit(2);
		uint32_t id2 = canal__self_id(c2);
		if (id2 == cid || (id2 & UNLOCKED))
			_exit(3);
		for (int j = 0; j < 4; j++)
			if (id2 == ids[j])
				_exit(4);
		canal_chan_destroy(c2);
		_exit(0);
	}
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);

	/* A handle destroyed is seen gone by the others; its byte is free
	 * again. */
	canal_chan_destroy(h[3]);
	CHECK(canal__attacher_gone(a, ids[3]));
	for (int i = 0; i < 3; i++)
		canal_chan_destroy(h[i]);
	return 0;
}
