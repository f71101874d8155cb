/*
 * el_bm_store.c - the RAM storage backend: persist a ready batch, reload it.
 *
 * Everything is copied (the batch's pointers die at el_raft_advance). The
 * stored entries stay contiguous: a batch may overwrite a suffix (a follower
 * whose uncommitted tail lost to a new leader), never leave a gap.
 */
#include <string.h>

#include "el_bm_store.h"
#include "el_error.h"

#define RING_MASK ((uint64_t)EL_LOG_WINDOW - 1u)

void el_bm_store_init(struct el_bm_store *s)
{
	memset(s, 0, sizeof *s);
	s->first = 1;
	s->last = 0;
}

/* Step 1: keep the snapshot, drop the entries it covers. (Entries after
 * it that the replica dropped with its log, when the snapshot came from the
 * leader, go in step 2: persist_first is then just above the snapshot.) */
static int persist_snapshot(struct el_bm_store *s, const struct el_ready *rd)
{
	const struct el_snapshot_meta *m = rd->snapshot;
	if (m->len > EL_SNAPSHOT_MAX)
		return EL_ENOSPC;
	s->snap = *m;
	memcpy(s->snap_data, rd->snapshot_data, m->len);
	s->has_snapshot = true;
	if (s->first <= m->index)
		s->first = m->index + 1u;
	if (s->last < m->index)
		s->last = m->index;
	return EL_OK;
}

/* Step 2a: drop entries >= first_new (also when nothing follows: a
 * replica that replaced its log by a snapshot drops its old tail this way),
 * then append first_new..last_new. */
static int persist_entries(struct el_bm_store *s, const struct el_raft *r, uint64_t first_new,
			   uint64_t last_new)
{
	if (first_new < s->first || first_new > s->last + 1u)
		return EL_ECORRUPT; /* would leave a gap or rewrite the snapshot */
	if (last_new >= first_new && last_new - s->first + 1u > EL_LOG_WINDOW)
		return EL_ENOSPC;
	s->last = first_new - 1u;
	for (uint64_t i = first_new; i <= last_new; i++) {
		const struct el_entry *e = el_raft_entry(r, i);
		if (e == NULL || e->index != i)
			return EL_ECORRUPT;
		s->log[i & RING_MASK] = *e;
		s->last = i;
	}
	return EL_OK;
}

int el_bm_store_persist(struct el_bm_store *s, const struct el_raft *r, const struct el_ready *rd)
{
	if (s->fail_next_persist != 0) {
		int err = s->fail_next_persist;
		s->fail_next_persist = 0;
		return err;
	}
	if (rd->snapshot != NULL) {
		int err = persist_snapshot(s, rd);
		if (err != EL_OK)
			return err;
	}
	int err = persist_entries(s, r, rd->persist_first, rd->persist_last);
	if (err != EL_OK)
		return err;
	if (rd->hard_state_changed) {
		s->hs = rd->hs;
		s->has_hard_state = true;
	}
	s->syncs++; /* the one "fsync" of the batch */
	return EL_OK;
}

int el_bm_store_load(const struct el_bm_store *s, struct el_raft *r)
{
	if (s->has_snapshot) {
		int err = el_raft_load_snapshot(r, &s->snap, s->snap_data);
		if (err != EL_OK)
			return err;
	}
	for (uint64_t i = s->first; i <= s->last; i++) {
		int err = el_raft_load_entry(r, &s->log[i & RING_MASK]);
		if (err != EL_OK)
			return err;
	}
	if (s->has_hard_state)
		return el_raft_load_hard_state(r, &s->hs);
	return EL_OK;
}
