/* SPDX-License-Identifier: MIT */
/*
 * test_revseg_reuse_symlink - canal_chan_open of a name that is a symbolic
 * link is refused (-EBADMSG: shm_open's O_NOFOLLOW says ELOOP), also in a
 * process that holds record locks on the link's target (a forked child
 * that used an inherited handle). There canal_chan_open first looks for a
 * descriptor it already has of the file under the name (liveness.c,
 * canal__segment_reuse): that look must not follow the link either, or
 * anyone who can write in /dev/shm redirects the open of one name to
 * another channel of the process's.
 */
#include "check.h"
#include "dead_holder.h"

#include <canal/channel.h>

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	alarm(60);
	char target[64], link_name[64], path_t[96], path_l[96];
	snprintf(target, sizeof(target), "revseg-target-%d", (int)getpid());
	snprintf(link_name, sizeof(link_name), "revseg-link-%d", (int)getpid());
	snprintf(path_t, sizeof(path_t), "/dev/shm/%s", target);
	snprintf(path_l, sizeof(path_l), "/dev/shm/%s", link_name);
	canal_chan_unlink(target);
	unlink(path_l);

	struct canal_chan *ch = NULL, *other = NULL;
	CHECK_EQ(canal_chan_create_named(target, sizeof(uint64_t), 4,
					 CANAL_SHARED, 0, &ch),
		 0);
	CHECK_EQ(symlink(path_t, path_l), 0);
	/* This process holds an OFD lock: the open goes to shm_open. */
	CHECK_EQ(canal_chan_open(link_name, CANAL_ANY, CANAL_ANY, CANAL_SHARED,
				 &other),
		 -EBADMSG);
	CHECK(!other);

	pid_t pid = test_fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* The inherited handle, used: a record lock of the child's. */
		uint64_t v = 1;
		if (canal_send(ch, &v) != 0)
			_exit(1);
		int r = canal_chan_open(link_name, CANAL_ANY, CANAL_ANY,
					CANAL_SHARED, &other);
		if (r != -EBADMSG) {
			fprintf(stderr, "open of the link in the child: %d\n",
				r);
			_exit(2);
		}
		/* The name itself is still found through the parked or
		 * duplicated descriptor. */
		if (canal_chan_open(target, sizeof(uint64_t), 4, CANAL_SHARED,
				    &other) != 0)
			_exit(3);
		if (canal_recv(other, &v) != 0 || v != 1)
			_exit(4);
		canal_chan_destroy(other);
		_exit(0);
	}
	int r = wait_child(pid);
	unlink(path_l);
	canal_chan_unlink(target);
	canal_chan_destroy(ch);
	CHECK_EQ(r, 0);
	TEST_DONE("test_revseg_reuse_symlink");
}
