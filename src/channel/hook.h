/* SPDX-License-Identifier: MIT */
/*
 * hook.h - a progress hook on a thread channel (base/wait.h, struct
 * canal__wait_hook), for a layer above the channels that feeds a channel
 * by polling: canal's remote channels (engine/remote.c). A thread blocked
 * in a send into the full channel or a receive from the empty one (plain,
 * timed, batch; not a select, not a task) runs the hook's rounds before
 * it waits as usual, and every send that publishes into the channel calls
 * the hook's published() when it has one (wake.h). The channel layer
 * knows the hook only as functions to call: layers still point one way.
 */
#ifndef CANAL_CHANNEL_HOOK_H
#define CANAL_CHANNEL_HOOK_H

#include "base/wait.h"

#include <canal/channel.h>

/* Install hook (NULL: remove it) on ch. Call it before ch is given to
 * other threads; the hook must outlive ch's operations. 0, or -EINVAL
 * (ch NULL, a channel in shared memory, a hook without begin, poll or
 * end, or with budget_ns 0; published may be NULL). Not thread-safe
 * against ch's operations. */
int canal__chan_set_hook(struct canal_chan *ch,
			 const struct canal__wait_hook *hook);

#endif /* CANAL_CHANNEL_HOOK_H */
