/*
 * node_timer.c - the leader's volatile timer table: session leases, bounded
 * waits and lock-delays, each counted on this leader's own clock.
 *
 * The table is never replicated and never snapshotted. After every applied
 * batch the leader re-derives it from the lock table (sync): a deadline whose
 * subject changed (a new session, a keepalive, a new wait, a new delay) is
 * re-armed at now + its length; one whose subject is gone is disarmed. A node
 * that just became leader starts from an empty table, so every deadline
 * restarts from its own now: leases never shorten on a leader change.
 *
 * Keys say what a deadline is about, so it re-arms exactly when that changes:
 *   session: key_a = renew_index (the OPEN or last KEEPALIVE entry);
 *   wait:    key_a = session id, key_b = seq of the queued request;
 *   delay:   key_a = delay_token (the token of the expired hold).
 * When a deadline passes, its command is proposed once (proposed = 1); the
 * command names the key, so one that raced with a renewal applies as stale.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_lock_internal.h"
#include "el_node_internal.h"

void el_node__timers_clear(struct el_node *n)
{
	memset(n->session_timers, 0, sizeof(n->session_timers));
	memset(n->wait_timers, 0, sizeof(n->wait_timers));
	memset(n->delay_timers, 0, sizeof(n->delay_timers));
}

/* Arm tm for (a, b) unless it already is; disarm when !live. */
static void sync_one(struct el_node_timer *tm, bool live, uint64_t a, uint64_t b,
		     uint64_t now_ms, uint32_t len_ms)
{
	if (!live) {
		memset(tm, 0, sizeof(*tm));
		return;
	}
	if (tm->armed && tm->key_a == a && tm->key_b == b)
		return;
	tm->armed = 1;
	tm->proposed = 0;
	tm->key_a = a;
	tm->key_b = b;
	tm->deadline_ms = now_ms + len_ms;
	EL_ASSERT(tm->deadline_ms >= now_ms);
}

void el_node__timers_sync(struct el_node *n, uint64_t now_ms)
{
	EL_ASSERT(n->leader_term != 0);
	const struct el_lock_table *t = &n->table;
	for (uint32_t s = 0; s < EL_SESSIONS_MAX; s++) {
		const struct el_lock_session *S = &t->sessions[s];
		sync_one(&n->session_timers[s], S->id != 0, S->renew_index, 0, now_ms, S->ttl_ms);
	}
	for (uint32_t c = 0; c < EL_CLAIMS_MAX; c++) {
		const struct el_lock_claim *C = &t->claims[c];
		const bool live = C->state == EL_CLAIM_WAIT && C->wait_ms != EL_WAIT_FOREVER;
		const uint64_t id = live ? t->sessions[C->session].id : 0;
		sync_one(&n->wait_timers[c], live, id, C->seq, now_ms, C->wait_ms);
	}
	for (uint32_t l = 0; l < EL_LOCKS_MAX; l++) {
		const struct el_lock_entry *L = &t->locks[l];
		sync_one(&n->delay_timers[l], L->delayed != 0, L->delay_token, 0, now_ms, L->delay_ms);
	}
}

static bool due(const struct el_node_timer *tm, uint64_t now_ms)
{
	return tm->armed && !tm->proposed && tm->deadline_ms <= now_ms;
}

/* Propose c; true when it went into the log. When the log window is full,
 * wait a heartbeat before trying again rather than spinning on the tick. */
static bool propose(struct el_node *n, struct el_lock_cmd *c, uint64_t now_ms)
{
	uint8_t buf[EL_LOCK_CMD_ENCODED_MAX];
	c->now_ms = now_ms;
	const int len = el_lock_cmd_encode(c, buf, sizeof(buf));
	EL_ASSERT(len > 0); /* built from our own table: always valid */
	if (el_raft_propose(&n->raft, buf, (uint16_t)len, now_ms, NULL, NULL) == EL_OK)
		return true;
	n->timers_retry_ms = now_ms + n->heartbeat_ms;
	return false;
}

static void set_name(struct el_lock_cmd *c, const struct el_lock_entry *L)
{
	c->name_len = L->name_len;
	memcpy(c->name, L->name, L->name_len);
}

void el_node__timers_fire(struct el_node *n, uint64_t now_ms)
{
	if (n->leader_term == 0 || now_ms < n->timers_retry_ms)
		return;
	const struct el_lock_table *t = &n->table;
	for (uint32_t s = 0; s < EL_SESSIONS_MAX; s++) {
		struct el_node_timer *tm = &n->session_timers[s];
		if (!due(tm, now_ms))
			continue;
		struct el_lock_cmd c = {.type = EL_CMD_EXPIRE_SESSION, .session = t->sessions[s].id,
					.token = tm->key_a};
		if (!propose(n, &c, now_ms))
			return; /* log full or not leader: retried on the next tick */
		tm->proposed = 1;
		n->stats.expiries_proposed++;
	}
	for (uint32_t i = 0; i < EL_CLAIMS_MAX; i++) {
		struct el_node_timer *tm = &n->wait_timers[i];
		if (!due(tm, now_ms))
			continue;
		struct el_lock_cmd c = {.type = EL_CMD_WAIT_TIMEOUT, .session = tm->key_a,
					.seq = tm->key_b};
		set_name(&c, &t->locks[t->claims[i].lock]);
		if (!propose(n, &c, now_ms))
			return;
		tm->proposed = 1;
		n->stats.wait_timeouts_proposed++;
	}
	for (uint32_t l = 0; l < EL_LOCKS_MAX; l++) {
		struct el_node_timer *tm = &n->delay_timers[l];
		if (!due(tm, now_ms))
			continue;
		struct el_lock_cmd c = {.type = EL_CMD_DELAY_END, .token = tm->key_a};
		set_name(&c, &t->locks[l]);
		if (!propose(n, &c, now_ms))
			return;
		tm->proposed = 1;
		n->stats.delay_ends_proposed++;
	}
}

uint64_t el_node__timers_next(const struct el_node *n)
{
	uint64_t next = UINT64_MAX;
	if (n->leader_term == 0)
		return next;
	for (uint32_t s = 0; s < EL_SESSIONS_MAX; s++) {
		const struct el_node_timer *tm = &n->session_timers[s];
		if (tm->armed && !tm->proposed && tm->deadline_ms < next)
			next = tm->deadline_ms;
	}
	for (uint32_t c = 0; c < EL_CLAIMS_MAX; c++) {
		const struct el_node_timer *tm = &n->wait_timers[c];
		if (tm->armed && !tm->proposed && tm->deadline_ms < next)
			next = tm->deadline_ms;
	}
	for (uint32_t l = 0; l < EL_LOCKS_MAX; l++) {
		const struct el_node_timer *tm = &n->delay_timers[l];
		if (tm->armed && !tm->proposed && tm->deadline_ms < next)
			next = tm->deadline_ms;
	}
	return next < n->timers_retry_ms ? n->timers_retry_ms : next;
}

int el_node_lease_left(const struct el_node *n, uint64_t session, uint64_t now_ms,
		       uint64_t *left_ms)
{
	EL_ASSERT(n != NULL);
	EL_ASSERT(left_ms != NULL);
	*left_ms = 0;
	if (n->leader_term == 0)
		return EL_ENOTLEADER;
	const uint16_t s = el_lock_session_slot(&n->table, session);
	if (s == EL_LOCK_NONE || !n->session_timers[s].armed)
		return EL_ENOTFOUND;
	const uint64_t deadline = n->session_timers[s].deadline_ms;
	*left_ms = deadline > now_ms ? deadline - now_ms : 0;
	return EL_OK;
}
