/*
 * node_apply.c - el_node_advance(): restore a snapshot, apply committed
 * entries to the lock table, answer the requests they carry, serve reads
 * whose index is applied, then let Raft advance, run the leader's timers and
 * compact the log when enough has been applied since the last snapshot.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
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
	for (uint32_t p = 0; p < EL_PENDING_MAX; p++) {
		const struct el_node_pending *P = &n->pending[p];
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

static void apply_entry(struct el_node *n, uint64_t index)
{
	const struct el_entry *e = el_raft_entry(&n->raft, index);
	EL_ASSERT(e != NULL);
	EL_ASSERT(e->index == index); /* committed entries are in the window */
	if (e->type != EL_ENTRY_NORMAL) {
		answer(n, index, e->term, NULL);
		return;
	}
	el_lock_apply(&n->table, index, e->data, e->len, &n->result);
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
		el_lock_init(&n->table);
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
	for (uint32_t p = 0; p < EL_PENDING_MAX; p++) {
		struct el_node_pending *P = &n->pending[p];
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

static void maybe_compact(struct el_node *n)
{
	const uint64_t applied = el_raft_applied(&n->raft);
	if (applied - el_raft_snapshot(&n->raft)->index <= EL_COMPACT_THRESHOLD)
		return;
	const int err = el_raft_compact(&n->raft, applied, el_node__write_snapshot, n);
	EL_ASSERT(err == EL_OK); /* the snapshot bound is checked at compile time */
	n->stats.compactions++;
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
		apply_entry(n, i);
	confirm_reads(n, &rd->raft);
	el_raft_advance(&n->raft, &rd->raft, now_ms);
	if (err != EL_OK) {
		n->failed = true;
		return err;
	}
	serve_reads(n);
	el_node__check_leadership(n, now_ms);
	if (n->leader_term != 0) {
		el_node__timers_sync(n, now_ms);
		el_node__timers_fire(n, now_ms);
	}
	maybe_compact(n);
	return EL_OK;
}
