/*
 * test_liveness_fork - liveness of the processes attached to a shared
 * channel across fork() (liveness.c).
 *
 *  1. A process's death is seen although a child it forked, which never
 *     used the channel, still lives: the child must not keep its parent's
 *     lock description (its lock) open. Before the fork handler closed
 *     those copies, the parent looked alive until the child exited.
 *  2. A forked child that has used inherited handles (record locks) stays
 *     alive in its peers' eyes while canal closes other descriptors of the
 *     same memory file in that child: a second handle opened by
 *     descriptor and destroyed, a named open and destroy, one of two
 *     inherited handles destroyed. The kernel drops all of a process's
 *     record locks on a file at any close of a descriptor of it; without
 *     the registry's parking, each of these made the child look dead.
 *     Once the child is killed, it is seen dead.
 *
 * Each child is bounded by alarm(); every wait has a deadline.
 */
#define _GNU_SOURCE 1
#include "liveness_check.h"

#include <sys/wait.h>
#include <time.h>

static void parent_death_seen(void)
{
	struct canal_chan *ch = canal_chan_create(8, 4, CANAL_SHARED);
	CHECK(ch);
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t mid = test_fork();
	CHECK(mid >= 0);
	if (mid == 0) {
		alarm(20);
		/* a handle made here: its own lock */
		struct canal_chan *h;
		CHECK_EQ(canal_chan_open_fd(canal_chan_fd(ch), 8, 4,
					    CANAL_SHARED, &h),
			 0);
		uint32_t id = self_id(h);
		/* a child that never uses the channel, and outlives us
		 * (plain fork: not killed with us) */
		pid_t c = fork();
		CHECK(c >= 0);
		if (c == 0) {
			alarm(20);
			pause();
			_exit(0);
		}
		report_and_wait(p[1], id, c);
	}
	uint32_t id;
	pid_t c;
	read_report(p[0], &id, &c);
	bool dead = kill_seen_dead(ch, id, mid, 5000);
	CHECK(kill(c, 0) == 0); /* the child still lives */
	kill(c, SIGKILL);
	if (!dead)
		fprintf(stderr, "a killed process looked alive while a child "
				"it forked (which never used the channel) "
				"lived\n");
	CHECK(dead);
	close(p[0]);
	close(p[1]);
	canal_chan_destroy(ch);
}

static void child_alive_through_closes(void)
{
	char name[64];
	snprintf(name, sizeof name, "canal-test-live-%d", (int)getpid());
	struct canal_chan *ch, *ch2;
	CHECK_EQ(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0600, &ch),
		 0);
	CHECK_EQ(canal_chan_open_fd(canal_chan_fd(ch), 8, 4, CANAL_SHARED,
				    &ch2),
		 0);
	int p[2], q[2];
	CHECK(pipe(p) == 0 && pipe(q) == 0);
	pid_t c = test_fork();
	CHECK(c >= 0);
	if (c == 0) {
		alarm(20);
		char go;
		uint32_t id = self_id(ch);
		uint32_t id2 = self_id(ch2);
		write_all(p[1], &id, sizeof id);
		write_all(p[1], &id2, sizeof id2);
		/* step 1: a handle opened by descriptor, destroyed */
		read_all(q[0], &go, 1);
		struct canal_chan *h;
		CHECK_EQ(canal_chan_open_fd(canal_chan_fd(ch), 8, 4,
					    CANAL_SHARED, &h),
			 0);
		(void)self_id(h);
		canal_chan_destroy(h);
		write_all(p[1], "1", 1);
		/* step 2: opened by name, destroyed */
		read_all(q[0], &go, 1);
		CHECK_EQ(canal_chan_open(name, 8, 4, CANAL_SHARED, &h), 0);
		canal_chan_destroy(h);
		write_all(p[1], "2", 1);
		/* step 3: one of the two inherited handles destroyed */
		read_all(q[0], &go, 1);
		canal_chan_destroy(ch2);
		write_all(p[1], "3", 1);
		(void)self_id(ch); /* still usable */
		pause();
		_exit(0);
	}
	uint32_t id, id2;
	char step;
	read_all(p[0], &id, sizeof id);
	read_all(p[0], &id2, sizeof id2);
	CHECK(id != id2);
	CHECK(!canal__attacher_gone(ch, id));
	CHECK(!canal__attacher_gone(ch, id2));
	for (char s = '1'; s <= '3'; s++) {
		write_all(q[1], "g", 1);
		read_all(p[0], &step, 1);
		CHECK_EQ(step, s);
		bool gone = canal__attacher_gone(ch, id);
		if (gone)
			fprintf(stderr, "step %c: a live child looked dead "
					"(its record lock was dropped by a "
					"close)\n", s);
		CHECK(!gone);
		if (s < '3')
			CHECK(!canal__attacher_gone(ch, id2));
	}
	CHECK(kill(c, SIGKILL) == 0);
	int st;
	CHECK(waitpid(c, &st, 0) == c);
	CHECK(seen_dead(ch, id, 5000));
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	canal_chan_destroy(ch2);
	canal_chan_destroy(ch);
	CHECK_EQ(canal_chan_unlink(name), 0);
}

int main(void)
{
	parent_death_seen();
	child_alive_through_closes();
	TEST_DONE("test_liveness_fork");
}
