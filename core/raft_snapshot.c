/*
 * raft_snapshot.c - log compaction and InstallSnapshot in chunks.
 *
 * One buffer holds the snapshot at the base of the log window. A follower
 * assembles an incoming snapshot in that same buffer (RAM is the scarce
 * resource on a microcontroller): its snapshot *meta* and log stay as they
 * were until the last chunk arrives, so a transfer cut short changes nothing
 * but the bytes, which are marked invalid. Only a leader needs the bytes (to
 * send them); one that finds them invalid regenerates them from the state
 * machine through the registered writer. Bytes not yet persisted are never
 * overwritten. The leader sends one chunk at a time and resends on each
 * heartbeat until acknowledged. Before an assembled snapshot replaces the
 * log, the state machine's validator checks its bytes: a snapshot that would
 * not restore is refused and installs nothing, so a node never persists
 * state it cannot load again on restart.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_raft_internal.h"

void el_raft_set_snapshot_writer(struct el_raft *r, el_snapshot_writer write, void *ctx)
{
	r->snap_writer = write;
	r->snap_writer_ctx = ctx;
}

void el_raft_set_snapshot_validator(struct el_raft *r, el_snapshot_validator check, void *ctx)
{
	r->snap_validator = check;
	r->snap_validator_ctx = ctx;
}

static int compact_to(struct el_raft *r, uint64_t index, el_snapshot_writer write, void *ctx)
{
	EL_ASSERT(!r->in_ready);
	if (index < r->snap.index || (index == r->snap.index && r->snap_valid))
		return 0;
	if (index > r->applied)
		return EL_EINVAL;
	if (r->snap_dirty || r->restore_pending)
		return EL_EBUSY; /* the held bytes are not persisted yet */
	/* The snapshot buffer is about to change under queued chunks and under
	 * a snapshot being received (the leader resends it from the start). */
	el_raft__purge_outbox(r, index, false);
	r->rx_active = false;
	r->snap_valid = false;
	int len = write(ctx, r->snap_data, EL_SNAPSHOT_MAX);
	if (len < 0)
		return len;
	if (len > EL_SNAPSHOT_MAX)
		return EL_EFULL;
	/* The configuration in force at index: the last one at or below it. */
	struct el_conf conf = r->snap.conf;
	for (uint64_t i = index; i > r->snap.index; i--) {
		const struct el_entry *e = el_raft__slot(r, i);
		if (e->type == EL_ENTRY_CONF && el_conf_decode(&conf, e->data, e->len) == 0)
			break;
	}
	r->snap.term = el_raft_term_at(r, index);
	r->snap.index = index;
	r->snap.conf = conf;
	r->snap.len = (uint32_t)len;
	r->snap_dirty = true;
	r->snap_valid = true;
	EL_ASSERT(r->snap.index <= r->applied);
	return 0;
}

int el_raft_compact(struct el_raft *r, uint64_t index, el_snapshot_writer write, void *ctx)
{
	int err = compact_to(r, index, write, ctx);
	if (err == 0)
		el_raft__maybe_noop(r); /* a slot may have freed for a waiting no-op */
	return err;
}

/* A leader without an entry of its own term appends its no-op as soon as the
 * window has a slot, compacting what it has applied if it must (the no-op
 * room rule in el_config.h says why a slot then exists). Called when elected,
 * after each ready round, after a compaction and on the heartbeat tick. */
void el_raft__maybe_noop(struct el_raft *r)
{
	if (r->state != EL_LEADER || r->in_ready || el_raft_term_at(r, r->last_index) == r->term)
		return;
	if (!el_raft__make_room(r))
		return; /* the next round retries */
	el_raft__append_local(r, EL_ENTRY_NOOP, NULL, 0);
	r->flush_pending = true;
}

/* A full window whose base is applied is compacted now rather than at the
 * threshold: a new leader's no-op, or a follower receiving it, must not wait
 * for a commit that only that entry can bring. Returns whether a slot is
 * free (not when the held snapshot bytes are not persisted yet). */
bool el_raft__make_room(struct el_raft *r)
{
	if (el_raft__log_full(r) && r->applied > r->snap.index && r->snap_writer != NULL &&
	    !r->in_ready)
		compact_to(r, r->applied, r->snap_writer, r->snap_writer_ctx);
	return !el_raft__log_full(r);
}

void el_raft__send_snapshot_chunk(struct el_raft *r, struct el_progress *pr)
{
	EL_ASSERT(pr->state == EL_PR_SNAPSHOT);
	EL_ASSERT(r->state == EL_LEADER);
	if (!r->snap_valid && r->snap_writer != NULL)
		compact_to(r, r->applied, r->snap_writer, r->snap_writer_ctx);
	if (!r->snap_valid)
		return; /* no bytes yet: retried on the next heartbeat */
	if (pr->snap_index != r->snap.index) { /* a newer snapshot: start over */
		pr->snap_index = r->snap.index;
		pr->snap_offset = 0;
	}
	struct el_msg *m = el_raft__msg(r, EL_MSG_SNAPSHOT, pr->id);
	if (m == NULL)
		return;
	uint32_t left = r->snap.len - pr->snap_offset;
	m->index = r->snap.index;
	m->log_term = r->snap.term;
	m->conf = r->snap.conf;
	m->offset = pr->snap_offset;
	m->total = r->snap.len;
	m->data_len = left < EL_SNAPSHOT_CHUNK ? left : EL_SNAPSHOT_CHUNK;
	m->data = r->snap_data + pr->snap_offset;
	m->commit = r->commit;
	pr->snap_sent_ms = r->now_ms;
}

/* The assembled snapshot replaces our state, unless our log already holds
 * its last entry, in which case only the commit index moves. Returns the
 * validator's refusal, in which case nothing changed but the bytes. */
static int install(struct el_raft *r)
{
	EL_ASSERT(r->rx_active);
	EL_ASSERT(r->rx_offset == r->rx.len);
	r->rx_active = false;
	if (el_raft_entry(r, r->rx.index) != NULL &&
	    el_raft_term_at(r, r->rx.index) == r->rx.term) {
		el_raft__commit_to(r, r->rx.index); /* our base stays; its bytes are gone */
		return 0;
	}
	EL_ASSERT(r->rx.index > r->commit);
	if (r->snap_validator != NULL) {
		int err = r->snap_validator(r->snap_validator_ctx, r->snap_data, r->rx.len, r->rx.index);
		if (err != 0)
			return err < 0 ? err : EL_EINVAL;
	}
	r->snap = r->rx;
	r->snap_valid = true;
	r->last_index = r->snap.index;
	r->persisted_index = r->snap.index;
	r->commit = r->snap.index;
	r->snap_dirty = true;
	r->restore_pending = true;
	el_raft__set_conf(r, &r->snap.conf, r->snap.index);
	return 0;
}

static void reply_snapshot(struct el_raft *r, const struct el_msg *m, uint32_t offset, bool reject)
{
	EL_ASSERT(offset <= m->total);
	struct el_msg *out = el_raft__msg(r, EL_MSG_SNAPSHOT_RESP, m->from);
	if (out == NULL)
		return;
	out->index = m->index;
	out->offset = offset;
	out->total = m->total;
	out->flags = reject ? EL_MSG_REJECT : 0;
}

int el_raft__handle_snapshot(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(r->state == EL_FOLLOWER);
	EL_ASSERT(m->offset <= m->total);
	if (m->index <= r->commit) {
		reply_snapshot(r, m, m->total, false); /* we already have all of it */
		return 0;
	}
	bool same = r->rx_active && r->rx.index == m->index && r->rx.term == m->log_term &&
		    r->rx.len == m->total;
	/* A first chunk starts a transfer, unless it is a duplicate of the first
	 * chunk of the one in progress (which must not move the offset back). */
	if (m->offset == 0 && !same) {
		if (r->snap_dirty || r->restore_pending) {
			reply_snapshot(r, m, 0, false); /* held bytes not yet persisted */
			return 0;
		}
		r->rx.index = m->index;
		r->rx.term = m->log_term;
		r->rx.conf = m->conf;
		r->rx.len = m->total;
		r->rx_offset = 0;
		r->rx_active = true;
		r->snap_valid = false; /* the buffer now assembles the new one */
	}
	same = r->rx_active && r->rx.index == m->index && r->rx.term == m->log_term &&
	       r->rx.len == m->total;
	if (!same || m->offset != r->rx_offset) {
		/* Out of order or another snapshot: tell the leader where we are. */
		reply_snapshot(r, m, same ? r->rx_offset : 0, false);
		return 0;
	}
	if (m->data_len > 0)
		memcpy(r->snap_data + m->offset, m->data, m->data_len);
	r->rx_offset += m->data_len;
	int err = r->rx_offset == r->rx.len ? install(r) : 0;
	reply_snapshot(r, m, err == 0 ? r->rx_offset : 0, err != 0);
	return err;
}

void el_raft__handle_snapshot_resp(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(m->term == r->term);
	struct el_progress *pr;
	if (r->state != EL_LEADER || (pr = el_raft__progress(r, m->from)) == NULL)
		return;
	pr->active = true;
	if (pr->state != EL_PR_SNAPSHOT || m->index != pr->snap_index)
		return; /* stale */
	if ((m->flags & EL_MSG_REJECT) || m->offset > r->snap.len) {
		pr->state = EL_PR_PROBE;
		pr->probe_sent = false;
		pr->next = pr->match + 1;
		return;
	}
	if (m->offset < r->snap.len) {
		/* The chunk at snap_offset went when snap_offset was set: a reply
		 * naming it again answers a duplicate or an out-of-order chunk.
		 * Sent again for it, each duplicate chunk in flight stayed in
		 * flight for the whole transfer; a lost one goes again on the
		 * heartbeat (el_raft__broadcast_heartbeat). */
		if (m->offset != pr->snap_offset) {
			pr->snap_offset = m->offset;
			el_raft__send_snapshot_chunk(r, pr);
		}
		return;
	}
	pr->snap_offset = m->offset;
	/* Done: the follower holds everything up to the snapshot. */
	if (pr->snap_index > pr->match)
		pr->match = pr->snap_index;
	pr->state = EL_PR_PROBE;
	pr->probe_sent = false;
	pr->inflight_n = 0;
	pr->next = pr->match + 1;
	el_raft__send_append(r, pr, true);
}
