/* SPDX-License-Identifier: MIT */
/*
 * repair.c - repair of shared slots whose claimer died.
 *
 * In a shared channel, a claimer writes its identity in the slot's owner
 * word right after its CAS of tail or head (owner_word(): who, 31 bits of
 * the position, role), and publishes or releases the slot with a CAS on
 * the stamp instead of a store. A thread that finds a slot held for more
 * than a millisecond (counted per slot) asks canal__repair_slot(), with
 * the stamp it saw the slot held with and how long it has seen it; a
 * stamp that has changed since is a new holder, whose time has not been
 * counted (the sender waited for has published, and the receiver that claimed
 * the slot right after may not have written its owner word yet: judged by
 * the sender's time, it read as anonymous past its grace and lost the
 * element it had taken; test_holes' test_repair_new_holder and
 * test_wait_slot_new_holder). Else:
 *  - if the owner word names this position and role, and that attacher is
 *    gone (liveness.c: its lock was released with its process), the slot
 *    is repaired at once;
 *  - if the owner word does not name this position (the claimer died
 *    between its CAS and writing its name, or is stopped right there), the
 *    slot is repaired once the waiter has been held REPAIR_ANONYMOUS_NS on
 *    it (long, so that a claimer merely descheduled in that window of a
 *    few instructions, on a machine with many more processes than cores,
 *    is not taken for dead).
 * Repairing a producer's slot withdraws it (receivers skip it: its send
 * never returned 0, so nothing sent is lost); on a synchronous channel the
 * unit of demand that producer had taken is given back (rendezvous.c, R2),
 * else the receiver it matched and every later sender would wait for ever.
 * Repairing a consumer's slot frees it (the element that consumer had taken
 * is lost with it). The repair is a CAS on the stamp from the held value:
 * if the claimer was only slow and publishes or releases first, the repair
 * does nothing; if the repair wins, the slow claimer's CAS fails and its
 * operation returns -EOWNERDEAD. A sender looks before it writes its
 * element in (canal__ring_fill): a claim withdrawn while its sender was
 * stopped may be reused by the time it resumes. So every element is
 * delivered at most once.
 */
#define _GNU_SOURCE 1
#include "internal.h"

#include <errno.h>

/* A held slot with no owner recorded is repaired after this long. */
#define REPAIR_ANONYMOUS_NS 900000000ull

void canal__repair_slot(struct canal_chan *ch, uint64_t pos, uint64_t seen,
			uint64_t held_ns)
{
	struct canal_slot_hdr *s = slot_at(ch, pos);
	uint64_t st = atomic_load_explicit(&s->stamp, memory_order_acquire);
	if (st != seen)
		return; /* a new holder (or none): its time starts now */
	uint64_t sp = stamp_position(ch, pos, st);
	uint64_t repaired;
	unsigned role;

	if (stamp_state(st) == STAMP_FREE) {
		/* Position sp: claimed by a sender that has not published? */
		uint64_t t = atomic_load_explicit(&ch->st->tail,
						  memory_order_seq_cst);
		if (tail_position(t) <= sp)
			return;
		role = OWNER_SENDER;
		repaired = stamp_for(ch, sp, STAMP_SKIP);
	} else {
		/* Taken by a receiver that has not released it? */
		uint64_t h = atomic_load_explicit(&ch->st->head,
						  memory_order_seq_cst);
		if (h <= sp)
			return;
		role = OWNER_RECEIVER;
		repaired = stamp_next_lap(ch, sp, STAMP_FREE);
	}
	uint64_t owner = atomic_load_explicit(&s->owner[0],
					      memory_order_acquire);
	/* Id 0 is nobody: a fresh ring's owner words are 0, and must not
	 * read as a claim of position 0. */
	bool named = owner_id(owner) != 0 && owner_names(owner, sp, role);
	if (named ? !canal__attacher_gone(ch, owner_id(owner))
		  : held_ns < REPAIR_ANONYMOUS_NS)
		return;
	if (atomic_compare_exchange_strong_explicit(&s->stamp, &st, repaired,
						    memory_order_seq_cst,
						    memory_order_relaxed)) {
		if (ch->sync && role == OWNER_SENDER)
			canal__sync_give_back(ch, false);
		waitq_notify(&ch->st->recv_wq, 1, true);
		waitq_notify(&ch->st->send_wq, 1, true);
	}
}
