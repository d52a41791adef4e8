/* remote_error.h - the wait for a remote channel's error, shared by the
 * tests of remote channels that break a channel on purpose. */
#ifndef CANAL_TEST_REMOTE_ERROR_H
#define CANAL_TEST_REMOTE_ERROR_H

#include <canal/remote.h>
#include <unistd.h>

/* The channel's error once it has one (canal_remote_error), polled every
 * millisecond for up to 10 s; 0 if none came. */
static inline int remote_wait_error(struct canal_remote *r)
{
	for (int i = 0; i < 10000; i++) {
		int err = canal_remote_error(r, NULL, 0);
		if (err)
			return err;
		usleep(1000);
	}
	return 0;
}

#endif
