/*
 * admin_wait.c - a membership change (MEMBER_ADD, MEMBER_REMOVE,
 * MEMBER_PROMOTE) is answered once its configuration entry commits, not
 * when the leader appends it.
 *
 * Why: a leader cut off from the others (in a chaos run: an isolated
 * leader of a term the rest had already left) appended a removal, answered
 * "ok", and the CLI exited 0; the entry never committed, the new leader
 * never saw it, and the "removed" node was still a voter when the operator
 * wiped it. etcd's MemberRemove and consul's remove-peer answer once the
 * change is applied; so does this.
 *
 * The node that appended the entry keeps watching it, leader or not: it
 * commits with the term it was appended in (the answer is EL_OK), or
 * another entry takes its index (overwritten by a later leader: the change
 * did not happen, EL_ENOTLEADER, and a retry at the leader is safe), or
 * EL_D_ADMIN_WAIT_MS pass with neither known (a node cut off learns
 * nothing: EL_ETIMEDOUT, "check members list"). A request that repeats a
 * change still pending (libedgelock re-sends one unanswered for 1.5 s) or
 * just made (its answer lost, the leader moved) is watched the same way, on
 * the entry that makes it (el_d_change_made, diag.c), not refused as a
 * second change.
 */
#include <string.h>

#include "el_assert.h"
#include "el_daemon.h"
#include "el_error.h"

/* What became of w's entry: EL_OK committed, EL_ENOTLEADER replaced, 1
 * still open, EL_ETIMEDOUT not to be known here. An entry compacted before
 * this node looked is committed; it is w's when the snapshot's last entry
 * is of w's term (a later leader overwriting it writes a later term there
 * and after), else this node cannot tell. */
static int outcome(const struct el_raft *r, const struct el_d_admin_wait *w)
{
	if (w->applied)
		return EL_OK;
	const uint64_t t = el_raft_term_at(r, w->index); /* 0: compacted, or beyond the log */
	if (t != 0 && t != w->term)
		return EL_ENOTLEADER;
	if (el_raft_commit(r) < w->index)
		return 1;
	if (t == w->term)
		return EL_OK;
	return el_raft_snapshot(r)->term == w->term ? EL_OK : EL_ETIMEDOUT;
}

/* A slot for a new watch: a free one, else the one closest to its
 * deadline, answered now as not known (EL_ETIMEDOUT): the change being
 * added is already in the log and must be watched. */
static struct el_d_admin_wait *slot_for_add(struct el_daemon *d)
{
	struct el_d_admin_wait *soonest = &d->admin_waits[0];
	for (uint32_t i = 0; i < EL_D_ADMIN_WAITS; i++) {
		struct el_d_admin_wait *w = &d->admin_waits[i];
		if (w->id == 0)
			return w;
		if (w->deadline_ms < soonest->deadline_ms)
			soonest = w;
	}
	const struct el_d_admin_wait done = *soonest;
	soonest->id = 0;
	el_d_admin_answer(d, &done, EL_ETIMEDOUT);
	return soonest;
}

void el_d_admin_wait_on(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q,
			uint64_t index, uint64_t term)
{
	EL_ASSERT(index > 0 && term > 0);
	const struct el_raft *r = el_node_raft(d->node);
	struct el_d_admin_wait *w = slot_for_add(d);
	/* applied here already (a repeat of a change made): committed for good,
	 * even once compacted, where its term is no longer to be seen */
	const bool applied = index <= el_raft_applied(r) &&
			     el_raft_term_at(r, index) == term;
	*w = (struct el_d_admin_wait){ .conn = conn, .id = q->id, .index = index, .term = term,
				       .deadline_ms = d->now_ms + EL_D_ADMIN_WAIT_MS,
				       .node = q->node, .type = q->type, .applied = applied };
}

void el_d_admin_wait_add(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q,
			 uint64_t index)
{
	const struct el_raft *r = el_node_raft(d->node);
	EL_ASSERT(index > 0 && index <= el_raft_last_index(r));
	EL_ASSERT(el_raft_term_at(r, index) == el_raft_term(r)); /* appended just now */
	el_d_admin_wait_on(d, conn, q, index, el_raft_term(r));
}

/* Every watched change whose outcome is known (or whose time is up) is
 * answered, and its slot freed. */
void el_d_admin_wait_turn(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	for (uint32_t i = 0; i < EL_D_ADMIN_WAITS; i++) {
		struct el_d_admin_wait *w = &d->admin_waits[i];
		if (w->id == 0)
			continue;
		int rc = outcome(r, w);
		if (rc == 1 && d->now_ms < w->deadline_ms && !d->stopping)
			continue;
		if (rc == 1)
			rc = EL_ETIMEDOUT;
		const struct el_d_admin_wait done = *w;
		w->id = 0;
		el_d_admin_answer(d, &done, rc);
	}
}
