/*
 * node_timer.c - the leader's volatile timer table: session leases, bounded
 * waits and lock-delays, each counted on this leader's own clock.
 *
 * The table is never replicated and never snapshotted. A node that becomes
 * leader arms a deadline for every live subject at its own now (a pass over
 * the slots in use), so leases never shorten on a leader change. After that
 * it follows the commands: each applied command reports what it armed (a
 * session opened or kept alive, a request queued with a bound, locks put into
 * lock-delay: el_lock_result), and only those deadlines are (re)armed, at
 * now + their length. A subject that ends needs no disarming: its deadline
 * stays where it is and is dropped as stale when it comes due, because a
 * timer's key must still match its subject then:
 *   session: key = renew_index (the OPEN or last KEEPALIVE entry);
 *   wait:    key = seq of the queued request (the claim still waits);
 *   delay:   key = delay_token (the token of the expired hold).
 * A slot reused by a new subject is re-armed by the command that made it.
 *
 * With EL_INDEXED every armed timer sits in a binary min-heap ordered by
 * (deadline, timer id), those already proposed last, so el_node_deadline()
 * is O(1), arming and firing O(log n), and timers fire in one deterministic
 * order. Without it (the microcontroller config, 48 timers) the same records
 * are scanned. When a deadline passes, its command is proposed once
 * (proposed = 1); the command names the key, so one that raced with a
 * renewal applies as stale. A proposed timer stays in the heap so that a
 * lost leadership clears it too: its proposal may never commit, and the next
 * term's leader must arm it afresh (a lock-delay whose DELAY_END was lost
 * with a leader change once stayed in lock-delay for good: its timer still
 * said "armed, proposed" and el_node__timers_arm_all took it as armed).
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_lock_internal.h"
#include "el_node_internal.h"

#define SESSION_BASE 0u
#define CLAIM_BASE ((uint32_t)EL_SESSIONS_MAX)
#define LOCK_BASE ((uint32_t)EL_SESSIONS_MAX + EL_CLAIMS_MAX)

/* ---- The heap ------------------------------------------------------------------ */

#if EL_INDEXED
/* A proposed timer sorts after every timer still to fire. */
static uint64_t heap_key(const struct el_node_timer *tm)
{
	return tm->proposed ? UINT64_MAX : tm->deadline_ms;
}

static bool before(const struct el_node *n, uint32_t a, uint32_t b)
{
	const uint64_t da = heap_key(&n->timers[a]), db = heap_key(&n->timers[b]);
	return da < db || (da == db && a < b);
}

static void heap_put(struct el_node *n, uint32_t pos, uint32_t id)
{
	n->heap[pos] = id;
	n->timers[id].heap_pos = pos + 1;
}

/* Move the entry at pos up, then down, to where it belongs. */
static void heap_fix(struct el_node *n, uint32_t pos)
{
	const uint32_t id = n->heap[pos];
	while (pos > 0) {
		const uint32_t parent = (pos - 1) / 2;
		if (!before(n, id, n->heap[parent]))
			break;
		heap_put(n, pos, n->heap[parent]);
		pos = parent;
	}
	for (;;) {
		uint32_t child = 2 * pos + 1;
		if (child >= n->heap_len)
			break;
		if (child + 1 < n->heap_len && before(n, n->heap[child + 1], n->heap[child]))
			child++;
		if (!before(n, n->heap[child], id))
			break;
		heap_put(n, pos, n->heap[child]);
		pos = child;
	}
	heap_put(n, pos, id);
}

static void heap_remove(struct el_node *n, uint32_t id)
{
	struct el_node_timer *tm = &n->timers[id];
	if (tm->heap_pos == 0)
		return;
	const uint32_t pos = tm->heap_pos - 1;
	EL_ASSERT(n->heap[pos] == id);
	tm->heap_pos = 0;
	const uint32_t last = n->heap[--n->heap_len];
	if (pos < n->heap_len) {
		heap_put(n, pos, last);
		heap_fix(n, pos);
	}
}

static void heap_update(struct el_node *n, uint32_t id)
{
	struct el_node_timer *tm = &n->timers[id];
	if (tm->heap_pos == 0) {
		EL_ASSERT(n->heap_len < EL_TIMERS_MAX);
		heap_put(n, n->heap_len++, id);
	}
	heap_fix(n, tm->heap_pos - 1);
}
#endif

/* ---- Arming ---------------------------------------------------------------------- */

static void arm(struct el_node *n, uint32_t id, uint64_t key, uint64_t now_ms, uint32_t len_ms)
{
	EL_ASSERT(id < EL_TIMERS_MAX);
	struct el_node_timer *tm = &n->timers[id];
	tm->armed = 1;
	tm->proposed = 0;
	tm->key = key;
	tm->deadline_ms = now_ms + len_ms;
	EL_ASSERT(tm->deadline_ms >= now_ms);
#if EL_INDEXED
	heap_update(n, id);
#endif
}

static void disarm(struct el_node *n, uint32_t id)
{
#if EL_INDEXED
	heap_remove(n, id);
#endif
	n->timers[id].armed = 0;
	n->timers[id].proposed = 0;
}

void el_node__timers_clear(struct el_node *n)
{
#if EL_INDEXED
	while (n->heap_len > 0)
		disarm(n, n->heap[n->heap_len - 1]);
#else
	memset(n->timers, 0, sizeof(n->timers));
#endif
}

static void arm_claim(struct el_node *n, el_slot_t c, uint64_t now_ms)
{
	const struct el_lock_claim *req = &n->table.claims[c];
	if (req->state == EL_CLAIM_WAIT && req->wait_ms != EL_WAIT_FOREVER)
		arm(n, CLAIM_BASE + c, req->seq, now_ms, req->wait_ms);
	else
		disarm(n, CLAIM_BASE + c);
}

static void arm_delay(struct el_node *n, el_slot_t l, uint64_t now_ms)
{
	const struct el_lock_entry *entry = &n->table.locks[l];
	const struct el_node_timer *tm = &n->timers[LOCK_BASE + l];
	if (entry->delayed && !(tm->armed && tm->key == entry->delay_token))
		arm(n, LOCK_BASE + l, entry->delay_token, now_ms, entry->delay_ms);
}

static void arm_session(struct el_node *n, el_slot_t s, uint64_t now_ms)
{
	const struct el_lock_session *sess = &n->table.sessions[s];
	arm(n, SESSION_BASE + s, sess->renew_index, now_ms, sess->ttl_ms);
}

void el_node__timers_arm_all(struct el_node *n, uint64_t now_ms)
{
	EL_ASSERT(n->leader_term != 0);
	const struct el_lock_table *t = &n->table;
	EL_LOCK_FOR_EACH(t, EL_POOL_SESSIONS, s)
		arm_session(n, s, now_ms);
	EL_LOCK_FOR_EACH(t, EL_POOL_CLAIMS, c)
		arm_claim(n, c, now_ms);
	EL_LOCK_FOR_EACH(t, EL_POOL_LOCKS, l)
		arm_delay(n, l, now_ms);
}

void el_node__timers_follow(struct el_node *n, const struct el_lock_result *res, uint64_t now_ms)
{
	EL_ASSERT(n->leader_term != 0);
	if (res->armed_session != EL_LOCK_NONE)
		arm_session(n, res->armed_session, now_ms);
	if (res->armed_claim != EL_LOCK_NONE)
		arm_claim(n, res->armed_claim, now_ms);
	for (uint32_t i = 0; i < res->n_armed_delays; i++)
		arm_delay(n, res->armed_delays[i], now_ms);
	if (res->armed_delays_lost) {
		EL_LOCK_FOR_EACH(&n->table, EL_POOL_LOCKS, l)
			arm_delay(n, l, now_ms);
	}
}

/* ---- Firing ---------------------------------------------------------------------- */

/* The command timer id asks for, when its subject still matches its key;
 * false when the timer is stale (its subject ended or changed). */
static bool command_of(const struct el_node *n, uint32_t id, struct el_lock_cmd *c)
{
	const struct el_lock_table *t = &n->table;
	const uint64_t key = n->timers[id].key;
	const struct el_lock_entry *entry = NULL;
	memset(c, 0, sizeof(*c));
	c->token = key;
	if (id < CLAIM_BASE) {
		const struct el_lock_session *sess = &t->sessions[id];
		c->type = EL_CMD_EXPIRE_SESSION;
		c->session = sess->id;
		return sess->id != 0 && sess->renew_index == key;
	}
	if (id < LOCK_BASE) {
		const struct el_lock_claim *req = &t->claims[id - CLAIM_BASE];
		if (req->state != EL_CLAIM_WAIT || req->seq != key || req->wait_ms == EL_WAIT_FOREVER)
			return false;
		c->type = EL_CMD_WAIT_TIMEOUT;
		c->session = t->sessions[req->session].id;
		c->seq = key;
		c->token = 0;
		entry = &t->locks[req->lock];
	} else {
		entry = &t->locks[id - LOCK_BASE];
		if (entry->name_len == 0 || !entry->delayed || entry->delay_token != key)
			return false;
		c->type = EL_CMD_DELAY_END;
	}
	c->name_len = entry->name_len;
	memcpy(c->name, entry->name, entry->name_len);
	return true;
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

static void count_proposal(struct el_node *n, uint8_t type)
{
	if (type == EL_CMD_EXPIRE_SESSION)
		n->stats.expiries_proposed++;
	else if (type == EL_CMD_WAIT_TIMEOUT)
		n->stats.wait_timeouts_proposed++;
	else
		n->stats.delay_ends_proposed++;
}

/* Timer id is due: propose its command (or drop it when stale). False when
 * the log took nothing (full, or not leader): try again later. */
static bool fire_one(struct el_node *n, uint32_t id, uint64_t now_ms)
{
	struct el_lock_cmd c;
	if (!command_of(n, id, &c)) {
		disarm(n, id);
		return true;
	}
	if (!propose(n, &c, now_ms))
		return false;
	n->timers[id].proposed = 1;
#if EL_INDEXED
	heap_fix(n, n->timers[id].heap_pos - 1); /* to the end of the order */
#endif
	count_proposal(n, c.type);
	return true;
}

static bool due(const struct el_node_timer *tm, uint64_t now_ms)
{
	return tm->armed && !tm->proposed && tm->deadline_ms <= now_ms;
}

void el_node__timers_fire(struct el_node *n, uint64_t now_ms)
{
	if (n->leader_term == 0 || now_ms < n->timers_retry_ms)
		return;
#if EL_INDEXED
	while (n->heap_len > 0 && due(&n->timers[n->heap[0]], now_ms))
		if (!fire_one(n, n->heap[0], now_ms))
			return;
#else
	for (uint32_t id = 0; id < EL_TIMERS_MAX; id++)
		if (due(&n->timers[id], now_ms) && !fire_one(n, id, now_ms))
			return;
#endif
}

uint64_t el_node__timers_next(const struct el_node *n)
{
	uint64_t next = UINT64_MAX;
	if (n->leader_term == 0)
		return next;
#if EL_INDEXED
	if (n->heap_len > 0 && !n->timers[n->heap[0]].proposed)
		next = n->timers[n->heap[0]].deadline_ms;
#else
	for (uint32_t id = 0; id < EL_TIMERS_MAX; id++) {
		const struct el_node_timer *tm = &n->timers[id];
		if (tm->armed && !tm->proposed && tm->deadline_ms < next)
			next = tm->deadline_ms;
	}
#endif
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
	const el_slot_t s = el_lock_session_slot(&n->table, session);
	if (s == EL_LOCK_NONE || !n->timers[SESSION_BASE + s].armed)
		return EL_ENOTFOUND;
	const uint64_t deadline = n->timers[SESSION_BASE + s].deadline_ms;
	*left_ms = deadline > now_ms ? deadline - now_ms : 0;
	return EL_OK;
}
