/* SPDX-License-Identifier: MIT */
/*
 * dead_holder.h - tests of crash repair on shared channels: a forked child
 * that takes a slot (a send reserve, or a receive borrow) and is killed
 * holding it, the parent then finding the slot held by a dead process.
 */
#ifndef CANAL_TESTS_DEAD_HOLDER_H
#define CANAL_TESTS_DEAD_HOLDER_H

#include "check.h"

#include <canal/channel.h>

#include <signal.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

/* pid's exit status, or 128 + its signal. */
static inline int wait_child(pid_t pid)
{
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A child reserves the next send position (borrow: borrows the next
 * element) and is killed holding it; returns once it is dead. */
static inline void kill_holding(struct canal_chan *ch, bool borrow)
{
	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct canal_slot s;
		if ((borrow ? canal_recv_borrow(ch, &s)
			    : canal_send_reserve(ch, &s)) != 0)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	CHECK_EQ(wait_child(pid), 128 + SIGKILL);
}

/* A shared ring of capacity 2, full (1, then 2, uint64_t), whose first
 * element a killed receiver holds borrowed: the next send needs that
 * slot. */
static inline struct canal_chan *full_behind_dead_borrow(void)
{
	struct canal_chan *ch = canal_chan_create(sizeof(uint64_t), 2,
						  CANAL_SHARED);
	CHECK(ch);
	uint64_t v1 = 1, v2 = 2;
	CHECK_EQ(canal_send(ch, &v1), 0);
	CHECK_EQ(canal_send(ch, &v2), 0);
	kill_holding(ch, true);
	return ch;
}

#endif
