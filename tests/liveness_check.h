/* liveness_check.h - helpers of the tests of shared channels' liveness
 * (who is alive among the attached processes, liveness.c): pipes between
 * a test's processes, a handle's attacher id, and waiting for a death to
 * be seen. */
#ifndef CANAL_TEST_LIVENESS_CHECK_H
#define CANAL_TEST_LIVENESS_CHECK_H

#include "check.h"

#include "../src/channel/internal.h"

#include <canal/channel.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

static inline void write_all(int fd, const void *p, size_t n)
{
	CHECK(write(fd, p, n) == (ssize_t)n);
}

static inline void read_all(int fd, void *p, size_t n)
{
	CHECK(read(fd, p, n) == (ssize_t)n);
}

/* This process's attacher id on ch, after a claim (the handle attaches,
 * or re-attaches in a forked child, at its first claim). ch must have
 * room for one element and hold none. */
static inline uint32_t self_id(struct canal_chan *ch)
{
	uint64_t x = 1;
	CHECK_EQ(canal_try_send(ch, &x), 0);
	CHECK_EQ(canal_try_recv(ch, &x), 0);
	return atomic_load(&ch->attach_id);
}

/* id's process seen dead within ms milliseconds (a killed process's
 * locks go once its descriptors are closed, before it is reaped). */
static inline bool seen_dead(struct canal_chan *ch, uint32_t id, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (canal__attacher_gone(ch, id))
			return true;
		usleep(1000);
	}
	return false;
}

/* The middle process of a test (one with an attacher id on the channel,
 * that forked a process of its own): report both to the test over fd,
 * then wait to be killed. */
static inline _Noreturn void report_and_wait(int fd, uint32_t id, pid_t pid)
{
	write_all(fd, &id, sizeof id);
	write_all(fd, &pid, sizeof pid);
	pause();
	_exit(0);
}

static inline void read_report(int fd, uint32_t *id, pid_t *pid)
{
	read_all(fd, id, sizeof *id);
	read_all(fd, pid, sizeof *pid);
}

/* Kill the middle process mid (attacher id on ch, alive until now) and
 * reap it: whether its death is seen within ms milliseconds. */
static inline bool kill_seen_dead(struct canal_chan *ch, uint32_t id,
				  pid_t mid, int ms)
{
	CHECK(!canal__attacher_gone(ch, id));
	CHECK(kill(mid, SIGKILL) == 0);
	CHECK(waitpid(mid, NULL, 0) == mid);
	return seen_dead(ch, id, ms);
}

#endif
