/*
 * node.c - the edgelock node: feeds committed Raft entries to the lock table,
 * matches results to the client requests in flight, serves linearizable
 * reads, runs the leader's timers (node_timer.c) and compacts the log.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_node_internal.h"

/* Raft's check of a snapshot received from a leader, before it replaces the
 * log: bytes the lock table would not restore as its state at index are
 * refused, so nothing is persisted that could not be loaded on restart. An
 * empty snapshot is the empty table (see restore() in node_apply.c). */
static int check_snapshot(void *ctx, const uint8_t *buf, uint32_t len, uint64_t index)
{
	(void)ctx;
	return len == 0 ? EL_OK : el_lock_snapshot_check(buf, len, index);
}

int el_node_init(struct el_node *n, const struct el_node_config *cfg, uint64_t seed)
{
	EL_ASSERT(n != NULL);
	EL_ASSERT(cfg != NULL);
	if (!cfg->zeroed)
		memset(n, 0, sizeof(*n));
	const int err = el_raft_init(&n->raft, &cfg->raft, seed);
	if (err != EL_OK)
		return err;
#if EL_INDEXED
	/* The hash key of the table's indexes: this node's own, from its seed
	 * (splitmix64), so clients cannot aim names at one bucket. */
	uint64_t key = seed + UINT64_C(0x9E3779B97F4A7C15);
	key = (key ^ (key >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	key = (key ^ (key >> 27)) * UINT64_C(0x94D049BB133111EB);
	el_lock_init_zeroed(&n->table, key ^ (key >> 31));
#else
	el_lock_init_zeroed(&n->table, 0); /* scans: no hash */
#endif
	el_raft_set_snapshot_writer(&n->raft, el_node__write_snapshot, n);
	el_raft_set_snapshot_validator(&n->raft, check_snapshot, NULL);
	n->next_read_ctx = 1;
	n->heartbeat_ms = cfg->raft.heartbeat_ms;
	EL_ASSERT(n->leader_term == 0);
	EL_ASSERT(n->n_pending == 0);
	return EL_OK;
}

struct el_raft *el_node_raft(struct el_node *n) { return &n->raft; }

/* ---- Replies ------------------------------------------------------------- */

/* Queue the reply of pending slot p and free the slot. */
struct el_node_reply *el_node__finish(struct el_node *n, uint32_t p, int32_t err)
{
	struct el_node_pending *P = &n->pending[p];
	EL_ASSERT(P->kind != 0);
	EL_ASSERT(n->n_replies < EL_PENDING_MAX); /* pending + replies <= EL_PENDING_MAX */
	struct el_node_reply *rep = &n->replies[n->n_replies++];
	memset(rep, 0, sizeof(*rep));
	rep->req_id = P->req_id;
	rep->kind = P->kind;
	rep->index = P->index;
	rep->err = err;
	if (err == EL_ENOTLEADER)
		rep->leader = el_raft_leader(&n->raft);
	memset(P, 0, sizeof(*P));
	n->n_pending--;
	return rep;
}

/* Every request in flight fails: this node no longer leads. */
static void fail_pending(struct el_node *n)
{
	for (uint32_t p = 0; p < EL_PENDING_MAX && n->n_pending > 0; p++)
		if (n->pending[p].kind != 0)
			el_node__finish(n, p, EL_ENOTLEADER);
	EL_ASSERT(n->n_pending == 0);
}

/* Notice a lost or gained leadership; a new leader restarts every timer. */
void el_node__check_leadership(struct el_node *n, uint64_t now_ms)
{
	const bool leading = el_raft_state(&n->raft) == EL_LEADER;
	if (n->leader_term != 0 && (!leading || el_raft_term(&n->raft) != n->leader_term)) {
		fail_pending(n);
		n->leader_term = 0;
		el_node__timers_clear(n);
	}
	if (leading && n->leader_term == 0) {
		n->leader_term = el_raft_term(&n->raft);
		el_node__timers_clear(n);
		el_node__timers_arm_all(n, now_ms);
	}
}

/* ---- Input --------------------------------------------------------------- */

void el_node_start(struct el_node *n, uint64_t now_ms)
{
	el_raft_start(&n->raft, now_ms);
	el_node__check_leadership(n, now_ms);
}

int el_node_step(struct el_node *n, const struct el_msg *m, uint64_t now_ms)
{
	EL_ASSERT(!n->in_ready);
	if (n->failed)
		return EL_ESTOPPED;
	const int err = el_raft_step(&n->raft, m, now_ms);
	el_node__check_leadership(n, now_ms);
	return err;
}

void el_node_tick(struct el_node *n, uint64_t now_ms)
{
	EL_ASSERT(!n->in_ready);
	if (n->failed)
		return;
	el_raft_tick(&n->raft, now_ms);
	el_node__check_leadership(n, now_ms);
	el_node__timers_fire(n, now_ms);
}

bool el_node_peer_lost(struct el_node *n, el_id_t id, uint64_t now_ms)
{
	EL_ASSERT(!n->in_ready);
	if (n->failed)
		return false;
	const bool lost = el_raft_peer_lost(&n->raft, id, now_ms);
	el_node__check_leadership(n, now_ms);
	return lost;
}

uint64_t el_node_deadline(const struct el_node *n)
{
	if (n->failed)
		return UINT64_MAX;
	const uint64_t raft = el_raft_deadline(&n->raft);
	const uint64_t timers = el_node__timers_next(n);
	return raft < timers ? raft : timers;
}

/* A free pending slot, or EL_PENDING_MAX when requests and undelivered
 * replies already use the whole budget. */
static uint32_t pending_slot(const struct el_node *n)
{
	if (n->n_pending + n->n_replies >= EL_PENDING_MAX)
		return EL_PENDING_MAX;
	for (uint32_t p = 0; p < EL_PENDING_MAX; p++)
		if (n->pending[p].kind == 0)
			return p;
	return EL_PENDING_MAX;
}

static bool client_command(uint8_t type)
{
	return type != EL_CMD_EXPIRE_SESSION && type != EL_CMD_WAIT_TIMEOUT &&
	       type != EL_CMD_DELAY_END;
}

int el_node_submit(struct el_node *n, uint64_t req_id, const struct el_lock_cmd *cmd,
		   uint64_t now_ms, el_id_t *leader)
{
	EL_ASSERT(!n->in_ready);
	EL_ASSERT(cmd != NULL);
	EL_ASSERT(leader != NULL);
	*leader = el_raft_leader(&n->raft);
	if (n->failed)
		return EL_ESTOPPED;
	if (n->leader_term == 0)
		return EL_ENOTLEADER;
	if (!client_command(cmd->type))
		return EL_EINVAL;
	/* A retry of a request still in flight here is not proposed again:
	 * under a backlog every timed-out retry would add an entry and so
	 * lengthen the backlog it timed out in. Its one reply answers it. */
	for (uint32_t q = 0, seen = 0; q < EL_PENDING_MAX && seen < n->n_pending; q++) {
		seen += n->pending[q].kind != 0;
		if (n->pending[q].kind == EL_REPLY_CMD && n->pending[q].req_id == req_id)
			return EL_OK;
	}
	const uint32_t p = pending_slot(n);
	if (p == EL_PENDING_MAX)
		return EL_EFULL;
	struct el_lock_cmd c = *cmd;
	c.now_ms = now_ms; /* the grant time operators see: information only */
	uint8_t buf[EL_LOCK_CMD_ENCODED_MAX];
	const int len = el_lock_cmd_encode(&c, buf, sizeof(buf));
	if (len < 0)
		return EL_EINVAL;
	uint64_t index = 0, term = 0;
	const int err = el_raft_propose(&n->raft, buf, (uint16_t)len, now_ms, &index, &term);
	if (err == EL_EBUSY) {
		/* Handing leadership over (el_raft_transfer): nothing was proposed,
		 * so the client may send the same seq again, shortly or to the next
		 * leader. Never EL_EBUSY, which a client reads as "the lock is busy"
		 * while an acquire it queued before still waits (chaos: that acquire
		 * was granted later and the session held the lock twice). */
		*leader = 0;
		return EL_ENOTLEADER;
	}
	if (err != EL_OK)
		return err;
	struct el_node_pending *P = &n->pending[p];
	P->kind = EL_REPLY_CMD;
	P->req_id = req_id;
	P->index = index;
	P->term = term;
	n->n_pending++;
	return EL_OK;
}

int el_node_read(struct el_node *n, uint64_t req_id, uint64_t now_ms, el_id_t *leader)
{
	EL_ASSERT(!n->in_ready);
	EL_ASSERT(leader != NULL);
	*leader = el_raft_leader(&n->raft);
	if (n->failed)
		return EL_ESTOPPED;
	if (n->leader_term == 0)
		return EL_ENOTLEADER;
	const uint32_t p = pending_slot(n);
	if (p == EL_PENDING_MAX)
		return EL_EFULL;
	const uint64_t ctx = n->next_read_ctx++;
	const int err = el_raft_read_index(&n->raft, ctx, now_ms);
	if (err != EL_OK)
		return err;
	struct el_node_pending *P = &n->pending[p];
	P->kind = EL_REPLY_READ;
	P->req_id = req_id;
	P->ctx = ctx;
	n->n_pending++;
	return EL_OK;
}

/* ---- Output -------------------------------------------------------------- */

bool el_node_has_ready(const struct el_node *n)
{
	if (n->in_ready || n->failed)
		return false;
	return el_raft_has_ready(&n->raft) || n->n_replies > 0 || n->n_events > 0 ||
	       n->events_dropped > 0;
}

void el_node_ready(struct el_node *n, struct el_node_ready *rd)
{
	EL_ASSERT(!n->in_ready);
	EL_ASSERT(!n->failed);
	memset(rd, 0, sizeof(*rd));
	el_raft_ready(&n->raft, &rd->raft);
	rd->n_replies = n->n_replies;
	rd->replies = n->replies;
	rd->n_events = n->n_events;
	rd->events = n->events;
	rd->events_dropped = n->events_dropped;
	n->in_ready = true;
}

int el_node_query(const struct el_node *n, const char *name, uint32_t name_len,
		  struct el_lock_query *q)
{
	return el_lock_query(&n->table, name, name_len, q);
}
