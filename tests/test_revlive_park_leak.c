/*
 * test_revlive_park_leak - a forked child that uses an inherited shared
 * channel, then opens and destroys handles of that same channel again and
 * again (by name, by descriptor), must not run out of descriptors.
 *
 * Defect (hostile review of branch live): once such a child holds a
 * record lock on the memory file (its inherited handle, re-attached at its
 * first claim), every descriptor of that file canal would close is parked
 * instead (close_or_park, liveness.c), and parked descriptors are closed
 * only "when the last such lock goes" (canal__detach: close_parked when
 * r->locks reaches 0). The inherited handle's lock never goes while the
 * child keeps using the channel, so each open + destroy cycle leaks
 * descriptors for good: canal_chan_open leaks two (shm_open's and the
 * handle's dup), canal_chan_open_fd one (the handle's dup),
 * canal_chan_recv_handle two. A long-lived worker that reopens a channel
 * per job reaches RLIMIT_NOFILE and every open (and any other descriptor
 * the application needs) fails with -EMFILE. Nothing documents a cost per
 * open; channel.h says canal's closes "keep the lock", not that they keep
 * the descriptors.
 *
 * The child runs under RLIMIT_NOFILE = 64 and cycles 300 times (each cycle
 * ends with no handle open but the inherited one); a bounded library
 * passes. Bounded by alarm().
 */
#define _GNU_SOURCE 1
#include "check.h"

#include <canal/channel.h>

#include <sys/resource.h>
#include <sys/wait.h>

#define CYCLES 300

int main(void)
{
	char name[64];
	snprintf(name, sizeof name, "canal-test-revlive-park-%d", (int)getpid());
	struct canal_chan *ch;
	CHECK_EQ(canal_chan_create_named(name, 8, 4, CANAL_SHARED, 0600, &ch),
		 0);
	pid_t c = test_fork();
	CHECK(c >= 0);
	if (c == 0) {
		alarm(20);
		struct rlimit rl = { 64, 64 };
		CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
		uint64_t x = 1;
		/* first use of the inherited handle: its record lock */
		CHECK_EQ(canal_try_send(ch, &x), 0);
		CHECK_EQ(canal_try_recv(ch, &x), 0);
		for (int i = 0; i < CYCLES; i++) {
			struct canal_chan *h;
			int r = i % 2 ? canal_chan_open(name, 8, 4,
							CANAL_SHARED, &h)
				      : canal_chan_open_fd(canal_chan_fd(ch), 8,
							   4, CANAL_SHARED,
							   &h);
			if (r != 0) {
				fprintf(stderr,
					"cycle %d: %s: %s (descriptors leak "
					"at each open + destroy)\n",
					i,
					i % 2 ? "canal_chan_open"
					      : "canal_chan_open_fd",
					strerror(-r));
				_exit(1);
			}
			CHECK_EQ(canal_try_send(h, &x), 0);
			CHECK_EQ(canal_try_recv(h, &x), 0);
			canal_chan_destroy(h);
		}
		_exit(0);
	}
	int st;
	CHECK(waitpid(c, &st, 0) == c);
	CHECK_EQ(canal_chan_unlink(name), 0);
	canal_chan_destroy(ch);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	TEST_DONE("test_revlive_park_leak");
}
