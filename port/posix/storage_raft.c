/*
 * storage_raft.c - el_storage driven by, and feeding, an el_raft replica.
 * Kept apart so storage itself builds and tests without the Raft core.
 */
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

int el_storage_persist_ready(struct el_storage *st, const struct el_ready *rd,
			     const struct el_raft *r)
{
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
