/* SPDX-License-Identifier: MIT */
/* hook.c - installing a progress hook on a thread channel (hook.h). */
#include "internal.h"
#include "hook.h"

#include <errno.h>

int canal__chan_set_hook(struct canal_chan *ch,
			 const struct canal__wait_hook *hook)
{
	if (!ch || ch->shared)
		return -EINVAL;
	if (hook && (!hook->begin || !hook->poll || !hook->end ||
		     hook->budget_ns == 0))
		return -EINVAL;
	ch->hook = hook;
	return 0;
}
