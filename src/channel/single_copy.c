/* SPDX-License-Identifier: MIT */
/*
 * single_copy.c - slots lent to the caller ("une seule copie"): reserve and
 * commit or abort on the sending side, borrow and release on the receiving
 * side. A lent slot is identified by its position; the stamp and the index
 * say whether the loan is still live, so that a stale copy of a slot handle
 * is refused (-EINVAL) instead of moving a stamp backwards.
 */
#include "internal.h"
#include "wake.h"

#include <errno.h>

/* Single copy                                                         */
/* ------------------------------------------------------------------ */

CANAL_EXPORT int canal_send_reserve(struct canal_chan *ch, struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return canal__send(ch, NULL, slot, CANAL_NO_DEADLINE, false);
}

CANAL_EXPORT int canal_try_send_reserve(struct canal_chan *ch,
				  struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return canal__send(ch, NULL, slot, 0, true);
}

/* slot is a live reserve (claimed, not published) of ch: a stale copy of
 * a slot already committed, aborted or received is not. */
static bool slot_is_reserved(struct canal_chan *ch,
			     const struct canal_slot *slot)
{
	return slot && slot->data &&
	       slot->data == slot_data(ch, slot_at(ch, slot->position)) &&
	       canal__ring_holds_claimed(ch, slot->position);
}

/* slot is a live borrow (taken, not released) of ch. */
static bool slot_is_borrowed(struct canal_chan *ch,
			     const struct canal_slot *slot)
{
	return slot && slot->data &&
	       slot->data == slot_data(ch, slot_at(ch, slot->position)) &&
	       canal__ring_holds_taken(ch, slot->position);
}

CANAL_EXPORT int canal_send_commit(struct canal_chan *ch, struct canal_slot *slot)
{
	if (ch && chan_damaged(ch))
		return -EBADMSG;
	if (unlikely(!ch || !slot_is_reserved(ch, slot)))
		return -EINVAL;
	uint64_t pos = slot->position;
	slot->data = NULL;
	if (!canal__ring_publish(ch, pos, STAMP_FULL))
		return -EOWNERDEAD;
	wake_receivers(ch, pos, 1);
	if (ch->sync)
		canal__sync_wait_ack(ch, pos);
	return chan_damaged(ch) ? -EBADMSG : 0;
}

CANAL_EXPORT int canal_send_abort(struct canal_chan *ch, struct canal_slot *slot)
{
	if (ch && chan_damaged(ch))
		return -EBADMSG;
	if (unlikely(!ch || !slot_is_reserved(ch, slot)))
		return -EINVAL;
	slot->data = NULL;
	canal__ring_publish(ch, slot->position, STAMP_SKIP);
	/* Receivers may wait on this position: let one skip it. */
	wake_receivers(ch, slot->position, 1);
	if (ch->sync)
		canal__sync_give_back(ch, false);
	return 0;
}

CANAL_EXPORT int canal_recv_borrow(struct canal_chan *ch, struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return canal__recv(ch, NULL, slot, CANAL_NO_DEADLINE, false);
}

CANAL_EXPORT int canal_try_recv_borrow(struct canal_chan *ch,
				 struct canal_slot *slot)
{
	if (unlikely(!ch || !slot))
		return -EINVAL;
	return canal__recv(ch, NULL, slot, 0, true);
}

CANAL_EXPORT int canal_recv_release(struct canal_chan *ch, struct canal_slot *slot)
{
	if (ch && chan_damaged(ch))
		return -EBADMSG;
	if (unlikely(!ch || !slot_is_borrowed(ch, slot)))
		return -EINVAL;
	slot->data = NULL;
	if (!canal__ring_release(ch, slot->position))
		return -EOWNERDEAD;
	wake_senders(ch, slot->position, 1);
	return 0;
}
