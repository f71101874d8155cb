/*
 * node_apply.c - el_node_advance(): restore a snapshot, apply committed
 * entries to the lock table, answer the requests they carry, serve reads
 * whose index is applied, then let Raft advance, run the leader's timers and
 * compact the log when enough has been applied since the last snapshot.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_lock_internal.h"
#include "el_node_internal.h"

static void collect_events(struct el_node *n, const struct el_lock_result *res)
{
	for (uint32_t i = 0; i < res->n_events; i++) {
		if (n->n_events < EL_NODE_EVENTS_MAX)
			n->events[n->n_events++] = res->events[i];
		else
			n->events_dropped++;
	}
	n->events_dropped += res->events_dropped;
	n->stats.events_dropped += res->events_dropped;
}

/* The pending command at index (if any) gets its answer: the result when
 * the entry is the one it proposed, EL_ENOTLEADER when another leader's
 * entry took that index. */
static void answer(struct el_node *n, uint64_t index, uint64_t term,
		   const struct el_lock_result *res)
{
	for (uint32_t p = 0, seen = 0; p < EL_PENDING_MAX && seen < n->n_pending; p++) {
		const struct el_node_pending *P = &n->pending[p];
		seen += P->kind != 0;
		if (P->kind != EL_REPLY_CMD || P->index != index)
			continue;
		if (P->term != term || res == NULL) {
			el_node__finish(n, p, EL_ENOTLEADER);
			return;
		}
		struct el_node_reply *rep = el_node__finish(n, p, res->err);
		rep->token = res->token;
		rep->session = res->session;
		rep->count = res->count;
		rep->queued = res->queued;
		return;
	}
}

static void apply_entry(struct el_node *n, uint64_t index, uint64_t now_ms)
{
	const struct el_entry *e = el_raft_entry(&n->raft, index);
	EL_ASSERT(e != NULL);
	EL_ASSERT(e->index == index); /* committed entries are in the window */
	n->log_bytes += e->len;
	if (e->type != EL_ENTRY_NORMAL) {
		answer(n, index, e->term, NULL);
		return;
	}
	el_lock_apply(&n->table, index, e->data, e->len, &n->result);
	if (n->leader_term != 0)
		el_node__timers_follow(n, &n->result, now_ms);
	collect_events(n, &n->result);
	answer(n, index, e->term, &n->result);
}

/* Load the lock table from the snapshot; requests at or below it can no
 * longer be matched to their entries and fail (clients retry). */
static int restore(struct el_node *n, const struct el_snapshot_meta *meta, const uint8_t *data)
{
	EL_ASSERT(meta != NULL);
	int err = EL_OK;
	if (meta->len == 0)
		el_lock__clear(&n->table);
	else
		err = el_lock_restore(&n->table, data, meta->len);
	if (err != EL_OK)
		return EL_ECORRUPT;
	for (uint32_t p = 0; p < EL_PENDING_MAX; p++) {
		struct el_node_pending *P = &n->pending[p];
		if (P->kind == EL_REPLY_CMD && P->index <= meta->index)
			answer(n, P->index, 0, NULL);
	}
	n->stats.restores++;
	n->log_bytes = 0;
	return EL_OK;
}

static void confirm_reads(struct el_node *n, const struct el_ready *rd)
{
	for (uint32_t i = 0; i < rd->n_reads; i++) {
		for (uint32_t p = 0; p < EL_PENDING_MAX; p++) {
			struct el_node_pending *P = &n->pending[p];
			if (P->kind == EL_REPLY_READ && !P->confirmed && P->ctx == rd->reads[i].ctx) {
				P->confirmed = true;
				P->index = rd->reads[i].index;
			}
		}
	}
}

static void serve_reads(struct el_node *n)
{
	const uint64_t applied = el_raft_applied(&n->raft);
	const uint32_t in_flight = n->n_pending; /* finishing one lowers n_pending */
	for (uint32_t p = 0, seen = 0; p < EL_PENDING_MAX && seen < in_flight; p++) {
		struct el_node_pending *P = &n->pending[p];
		seen += P->kind != 0;
		if (P->kind != EL_REPLY_READ || !P->confirmed || P->index > applied)
			continue;
		el_node__finish(n, p, EL_OK);
	}
}

int el_node__write_snapshot(void *ctx, uint8_t *buf, uint32_t cap)
{
	const struct el_node *n = ctx;
	return el_lock_snapshot(&n->table, buf, cap);
}

/* Compact when the log since the snapshot has outgrown it (EL_COMPACT_RATIO
 * times its bytes, at least EL_COMPACT_MIN entries), or at the latest at
 * EL_COMPACT_THRESHOLD entries, the bound the log window needs. A gateway's
 * big table is then written once per thousands of entries, not per hundred.
 *
 * And once, at the first applied entry, while the snapshot is the one at
 * index 0: a bootstrapped cluster's configuration is there and in no entry,
 * and that snapshot is never sent, since an empty log matches index 0. A
 * member started empty again (wiped, then --join without members remove)
 * took the log from entry 1, never learnt it is a voter, never voted: with
 * the leader lost, the cluster stopped (an outside tester). A snapshot at
 * index >= 1 is sent to any follower needing the log's start, with the
 * configuration in it. */
static void maybe_compact(struct el_node *n)
{
	const uint64_t applied = el_raft_applied(&n->raft);
	const uint64_t above = applied - el_raft_snapshot(&n->raft)->index;
	const uint64_t snap_bytes = el_raft_snapshot(&n->raft)->len;
	if (above <= EL_COMPACT_THRESHOLD &&
	    (above == 0 || (above != applied && (above < EL_COMPACT_MIN ||
						 n->log_bytes < EL_COMPACT_RATIO * snap_bytes))))
		return;
	const int err = el_raft_compact(&n->raft, applied, el_node__write_snapshot, n);
	EL_ASSERT(err == EL_OK); /* the snapshot bound is checked at compile time */
	n->stats.compactions++;
	n->log_bytes = 0;
}

int el_node_advance(struct el_node *n, const struct el_node_ready *rd, uint64_t now_ms)
{
	EL_ASSERT(n->in_ready);
	n->in_ready = false;
	/* the caller delivered what this batch handed out */
	n->n_replies = 0;
	n->n_events = 0;
	n->events_dropped = 0;
	int err = EL_OK;
	if (rd->raft.restore)
		err = restore(n, rd->raft.snapshot, rd->raft.snapshot_data);
	for (uint64_t i = rd->raft.apply_first; err == EL_OK && i <= rd->raft.apply_last; i++)
		apply_entry(n, i, now_ms);
	confirm_reads(n, &rd->raft);
	el_raft_advance(&n->raft, &rd->raft, now_ms);
	if (err != EL_OK) {
		n->failed = true;
		return err;
	}
	serve_reads(n);
	el_node__check_leadership(n, now_ms);
	el_node__timers_fire(n, now_ms);
	maybe_compact(n);
	return EL_OK;
}
