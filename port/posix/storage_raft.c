/*
 * storage_raft.c - el_storage driven by, and feeding, an el_raft replica.
 * Kept apart so storage itself builds and tests without the Raft core.
 */
#include "el_error.h"
#include "el_storage_impl.h"
#include "el_storage_raft.h"

static int load_snapshot(void *ctx, const struct el_snapshot_meta *meta, const uint8_t *data)
{
	return el_raft_load_snapshot(ctx, meta, data);
}

static int load_entry(void *ctx, const struct el_entry *e) { return el_raft_load_entry(ctx, e); }

static int load_hard_state(void *ctx, const struct el_hard_state *hs)
{
	return el_raft_load_hard_state(ctx, hs);
}

int el_storage_load_raft(struct el_storage *st, struct el_raft *r)
{
	const struct el_storage_visitor v = { r, load_snapshot, load_entry, load_hard_state };
	return el_storage_load(st, &v);
}

static const struct el_entry *raft_entry(void *ctx, uint64_t index)
{
	return el_raft_entry(ctx, index);
}

/*
 * A ready batch that moves nothing but the commit index is not written (no
 * write, no fdatasync). Raft's commit index is volatile state (Figure 2);
 * it is stored only so that a restart applies sooner, and it reaches the
 * disk with the next batch that writes anything. A node that restarts with
 * an older one learns it again from the leader's appends or, as the only
 * voter, commits its log again with its first entry of the new term
 * (el_raft_load_hard_state accepts a commit that lags the log). Entries,
 * terms and votes are still durable before anything that depends on them
 * leaves; what goes is the leader's second fsync per commit, which every
 * reply waited for.
 */
static bool commit_only(const struct el_storage *st, const struct el_ready *rd)
{
	return rd->hard_state_changed && rd->snapshot == NULL && !rd->restore &&
	       rd->persist_first > rd->persist_last &&
	       rd->persist_first > el_storage_last_index(st) && st->failed == 0 &&
	       rd->hs.term == st->hs.term && rd->hs.vote == st->hs.vote &&
	       rd->hs.commit >= st->hs.commit;
}

int el_storage_persist_ready(struct el_storage *st, const struct el_ready *rd,
			     const struct el_raft *r)
{
	if (commit_only(st, rd))
		return EL_OK;
	const struct el_storage_batch b = {
		.snapshot = rd->snapshot,
		.snapshot_data = rd->snapshot_data,
		.hs = rd->hard_state_changed ? &rd->hs : NULL,
		.first = rd->persist_first,
		.last = rd->persist_last,
		.entry = raft_entry,
		/* el_raft_entry only reads; the batch API is shared with callers
		 * whose context is mutable, hence the cast. */
		.ctx = (void *)(uintptr_t)r,
	};
	return el_storage_persist(st, &b);
}
