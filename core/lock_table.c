/*
 * lock_table.c - the lock table's pools (sessions, locks, claims, values,
 * watches) and the FIFO grant logic every command shares.
 *
 * Every pool is a fixed array scanned in slot order; a new record takes the
 * lowest free slot, so two replicas applying the same commands lay out their
 * tables identically (and write identical snapshots).
 */
#include <string.h>

#include "el_assert.h"
#include "el_lock_internal.h"

uint16_t el_lock_session_slot(const struct el_lock_table *t, uint64_t id)
{
	EL_ASSERT(t != NULL);
	if (id == 0)
		return EL_LOCK_NONE;
	for (uint16_t s = 0; s < EL_SESSIONS_MAX; s++)
		if (t->sessions[s].id == id)
			return s;
	return EL_LOCK_NONE;
}

uint16_t el_lock__find(const struct el_lock_table *t, const char *name, uint32_t name_len)
{
	EL_ASSERT(name_len <= EL_NAME_MAX);
	if (name_len == 0)
		return EL_LOCK_NONE;
	for (uint16_t l = 0; l < EL_LOCKS_MAX; l++) {
		const struct el_lock_entry *entry = &t->locks[l];
		if (entry->name_len == name_len && memcmp(entry->name, name, name_len) == 0)
			return l;
	}
	return EL_LOCK_NONE;
}

uint16_t el_lock__find_claim(const struct el_lock_table *t, uint16_t lock, uint16_t session,
			     uint8_t state)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	EL_ASSERT(session < EL_SESSIONS_MAX);
	for (uint16_t c = 0; c < EL_CLAIMS_MAX; c++) {
		const struct el_lock_claim *req = &t->claims[c];
		if (req->state == state && req->lock == lock && req->session == session)
			return c;
	}
	return EL_LOCK_NONE;
}

uint16_t el_lock__alloc_lock(struct el_lock_table *t, const char *name, uint32_t name_len)
{
	EL_ASSERT(name_len >= 1);
	EL_ASSERT(name_len <= EL_NAME_MAX);
	for (uint16_t l = 0; l < EL_LOCKS_MAX; l++) {
		struct el_lock_entry *entry = &t->locks[l];
		if (entry->name_len != 0)
			continue;
		EL_ASSERT(entry->n_holders == 0);
		EL_ASSERT(entry->wait_head == EL_LOCK_NONE);
		entry->name_len = (uint8_t)name_len;
		memcpy(entry->name, name, name_len);
		return l;
	}
	return EL_LOCK_NONE;
}

uint16_t el_lock__alloc_claim(struct el_lock_table *t, uint16_t lock, uint16_t session)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	EL_ASSERT(session < EL_SESSIONS_MAX);
	for (uint16_t c = 0; c < EL_CLAIMS_MAX; c++) {
		struct el_lock_claim *req = &t->claims[c];
		if (req->state != EL_CLAIM_FREE)
			continue;
		req->lock = lock;
		req->session = session;
		req->next = EL_LOCK_NONE;
		req->value = EL_LOCK_NONE;
		return c;
	}
	return EL_LOCK_NONE;
}

uint16_t el_lock__alloc_value(struct el_lock_table *t, const uint8_t *data, uint32_t len)
{
	EL_ASSERT(len <= EL_VALUE_MAX);
	for (uint16_t v = 0; v < EL_VALUES_MAX; v++) {
		struct el_lock_value *val = &t->values[v];
		if (val->used)
			continue;
		val->used = 1;
		val->len = (uint8_t)len;
		if (len > 0)
			memcpy(val->data, data, len);
		return v;
	}
	return EL_LOCK_NONE;
}

uint16_t el_lock__alloc_session(struct el_lock_table *t)
{
	for (uint16_t s = 0; s < EL_SESSIONS_MAX; s++)
		if (t->sessions[s].id == 0)
			return s;
	return EL_LOCK_NONE;
}

void el_lock__maybe_free_lock(struct el_lock_table *t, uint16_t lock)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	struct el_lock_entry *entry = &t->locks[lock];
	EL_ASSERT(entry->name_len != 0);
	if (entry->n_holders != 0 || entry->wait_head != EL_LOCK_NONE || entry->delayed ||
	    entry->n_watches != 0)
		return;
	memset(entry, 0, sizeof(*entry));
	entry->wait_head = EL_LOCK_NONE;
	entry->wait_tail = EL_LOCK_NONE;
}

/* Remove a waiting claim from its lock's queue (a bounded walk from the head). */
static void unlink_waiter(struct el_lock_table *t, uint16_t claim)
{
	struct el_lock_claim *req = &t->claims[claim];
	struct el_lock_entry *entry = &t->locks[req->lock];
	uint16_t prev = EL_LOCK_NONE, cur = entry->wait_head;
	for (uint32_t i = 0; i < EL_CLAIMS_MAX && cur != EL_LOCK_NONE && cur != claim; i++) {
		prev = cur;
		cur = t->claims[cur].next;
	}
	EL_ASSERT(cur == claim); /* a waiting claim is always in its queue */
	if (prev == EL_LOCK_NONE)
		entry->wait_head = req->next;
	else
		t->claims[prev].next = req->next;
	if (entry->wait_tail == claim)
		entry->wait_tail = prev;
	req->next = EL_LOCK_NONE;
	EL_ASSERT(t->n_waiting > 0);
	t->n_waiting--;
}

void el_lock__free_claim(struct el_lock_table *t, uint16_t claim)
{
	EL_ASSERT(claim < EL_CLAIMS_MAX);
	struct el_lock_claim *req = &t->claims[claim];
	EL_ASSERT(req->state != EL_CLAIM_FREE);
	if (req->state == EL_CLAIM_WAIT) {
		unlink_waiter(t, claim);
	} else {
		struct el_lock_entry *entry = &t->locks[req->lock];
		EL_ASSERT(entry->n_holders > 0);
		entry->n_holders--;
	}
	if (req->value != EL_LOCK_NONE)
		memset(&t->values[req->value], 0, sizeof(t->values[req->value]));
	memset(req, 0, sizeof(*req));
}

void el_lock__emit(const struct el_lock_table *t, struct el_lock_result *res, uint8_t kind,
		   uint16_t session, uint64_t seq, uint64_t token, uint16_t lock)
{
	EL_ASSERT(session < EL_SESSIONS_MAX);
	EL_ASSERT(lock < EL_LOCKS_MAX);
	if (res->n_events >= EL_LOCK_EVENTS_MAX) {
		if (res->events_dropped < UINT16_MAX)
			res->events_dropped++;
		return;
	}
	struct el_lock_event *ev = &res->events[res->n_events++];
	const struct el_lock_entry *entry = &t->locks[lock];
	ev->kind = kind;
	ev->session = t->sessions[session].id;
	ev->seq = seq;
	ev->token = token;
	ev->name_len = entry->name_len;
	memcpy(ev->name, entry->name, entry->name_len);
}

void el_lock__notify_watchers(const struct el_lock_table *t, uint16_t lock, uint8_t kind,
			      struct el_lock_result *res)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *entry = &t->locks[lock];
	const uint64_t token = entry->n_holders > 0 ? entry->last_token : 0;
	uint32_t seen = 0;
	for (uint16_t w = 0; w < EL_WATCHES_MAX && seen < entry->n_watches; w++) {
		if (t->watches[w].lock != lock || t->watches[w].session == EL_LOCK_NONE)
			continue;
		seen++;
		el_lock__emit(t, res, kind, t->watches[w].session, 0, token, lock);
	}
	EL_ASSERT(seen == entry->n_watches);
}

bool el_lock__grantable(const struct el_lock_table *t, uint16_t lock, uint8_t mode)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *entry = &t->locks[lock];
	if (entry->delayed)
		return false;
	if (entry->n_holders == 0)
		return true;
	return mode == EL_LOCK_SHARED && entry->mode == EL_LOCK_SHARED &&
	       entry->n_holders < EL_HOLDERS_MAX;
}

uint64_t el_lock__grant(struct el_lock_table *t, uint16_t claim, uint64_t index, uint64_t now_ms)
{
	struct el_lock_claim *req = &t->claims[claim];
	struct el_lock_entry *entry = &t->locks[req->lock];
	const uint64_t token = index;
	/* Fencing: successive grants of one lock get strictly larger tokens;
	 * shared holders granted by one entry share that entry's token. */
	EL_ASSERT(token > entry->last_token ||
		  (token == entry->last_token && req->mode == EL_LOCK_SHARED));
	EL_ASSERT(el_lock__grantable(t, req->lock, req->mode));
	req->state = EL_CLAIM_HOLD;
	req->token = token;
	req->grant_ms = now_ms;
	req->count = 1;
	req->seq = 0;
	req->wait_ms = 0;
	entry->mode = req->mode;
	entry->n_holders++;
	entry->last_token = token;
	return token;
}

void el_lock__enqueue(struct el_lock_table *t, uint16_t claim)
{
	struct el_lock_claim *req = &t->claims[claim];
	struct el_lock_entry *entry = &t->locks[req->lock];
	EL_ASSERT(t->n_waiting < EL_WAITERS_MAX);
	req->state = EL_CLAIM_WAIT;
	req->next = EL_LOCK_NONE;
	if (entry->wait_tail == EL_LOCK_NONE) {
		EL_ASSERT(entry->wait_head == EL_LOCK_NONE);
		entry->wait_head = claim;
	} else {
		t->claims[entry->wait_tail].next = claim;
	}
	entry->wait_tail = claim;
	t->n_waiting++;
}

/* Grant the head of the queue while it fits: one exclusive waiter, or a run
 * of consecutive shared waiters. Nobody behind an ungrantable head moves. */
static bool grant_waiters(struct el_lock_table *t, uint16_t lock, uint64_t index,
			  uint64_t now_ms, struct el_lock_result *res)
{
	struct el_lock_entry *entry = &t->locks[lock];
	bool granted = false;
	for (uint32_t i = 0; i < EL_HOLDERS_MAX && entry->wait_head != EL_LOCK_NONE; i++) {
		const uint16_t c = entry->wait_head;
		struct el_lock_claim *req = &t->claims[c];
		if (!el_lock__grantable(t, lock, req->mode))
			break;
		const uint64_t seq = req->seq;
		unlink_waiter(t, c);
		const uint64_t token = el_lock__grant(t, c, index, now_ms);
		granted = true;
		struct el_lock_session *sess = &t->sessions[req->session];
		if (sess->last_seq == seq) { /* a retry of that request now learns the grant */
			sess->last_reply.err = 0;
			sess->last_reply.queued = 0;
			sess->last_reply.count = 1;
			sess->last_reply.token = token;
		}
		el_lock__emit(t, res, EL_EV_GRANTED, req->session, seq, token, lock);
	}
	return granted;
}

void el_lock__settle(struct el_lock_table *t, uint16_t lock, uint64_t index, uint64_t now_ms,
		     bool holders_changed, struct el_lock_result *res)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	EL_ASSERT(t->locks[lock].name_len != 0);
	if (grant_waiters(t, lock, index, now_ms, res))
		holders_changed = true;
	if (holders_changed)
		el_lock__notify_watchers(t, lock, EL_EV_HOLDER_CHANGED, res);
	el_lock__maybe_free_lock(t, lock);
}
