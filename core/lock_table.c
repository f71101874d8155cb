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

uint16_t lk_find(const struct el_lock_table *t, const char *name, uint32_t name_len)
{
	EL_ASSERT(name_len <= EL_NAME_MAX);
	if (name_len == 0)
		return EL_LOCK_NONE;
	for (uint16_t l = 0; l < EL_LOCKS_MAX; l++) {
		const struct el_lock_entry *L = &t->locks[l];
		if (L->name_len == name_len && memcmp(L->name, name, name_len) == 0)
			return l;
	}
	return EL_LOCK_NONE;
}

uint16_t lk_find_claim(const struct el_lock_table *t, uint16_t lock, uint16_t session,
		       uint8_t state)
{
	EL_ASSERT(lock < EL_LOCKS_MAX && session < EL_SESSIONS_MAX);
	for (uint16_t c = 0; c < EL_CLAIMS_MAX; c++) {
		const struct el_lock_claim *C = &t->claims[c];
		if (C->state == state && C->lock == lock && C->session == session)
			return c;
	}
	return EL_LOCK_NONE;
}

uint16_t lk_alloc_lock(struct el_lock_table *t, const char *name, uint32_t name_len)
{
	EL_ASSERT(name_len >= 1 && name_len <= EL_NAME_MAX);
	for (uint16_t l = 0; l < EL_LOCKS_MAX; l++) {
		struct el_lock_entry *L = &t->locks[l];
		if (L->name_len != 0)
			continue;
		EL_ASSERT(L->n_holders == 0 && L->wait_head == EL_LOCK_NONE);
		L->name_len = (uint8_t)name_len;
		memcpy(L->name, name, name_len);
		return l;
	}
	return EL_LOCK_NONE;
}

uint16_t lk_alloc_claim(struct el_lock_table *t, uint16_t lock, uint16_t session)
{
	EL_ASSERT(lock < EL_LOCKS_MAX && session < EL_SESSIONS_MAX);
	for (uint16_t c = 0; c < EL_CLAIMS_MAX; c++) {
		struct el_lock_claim *C = &t->claims[c];
		if (C->state != EL_CLAIM_FREE)
			continue;
		C->lock = lock;
		C->session = session;
		C->next = EL_LOCK_NONE;
		C->value = EL_LOCK_NONE;
		return c;
	}
	return EL_LOCK_NONE;
}

uint16_t lk_alloc_value(struct el_lock_table *t, const uint8_t *data, uint32_t len)
{
	EL_ASSERT(len <= EL_VALUE_MAX);
	for (uint16_t v = 0; v < EL_VALUES_MAX; v++) {
		struct el_lock_value *V = &t->values[v];
		if (V->used)
			continue;
		V->used = 1;
		V->len = (uint8_t)len;
		if (len > 0)
			memcpy(V->data, data, len);
		return v;
	}
	return EL_LOCK_NONE;
}

uint16_t lk_alloc_session(struct el_lock_table *t)
{
	for (uint16_t s = 0; s < EL_SESSIONS_MAX; s++)
		if (t->sessions[s].id == 0)
			return s;
	return EL_LOCK_NONE;
}

void lk_maybe_free_lock(struct el_lock_table *t, uint16_t lock)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	struct el_lock_entry *L = &t->locks[lock];
	EL_ASSERT(L->name_len != 0);
	if (L->n_holders != 0 || L->wait_head != EL_LOCK_NONE || L->delayed || L->n_watches != 0)
		return;
	memset(L, 0, sizeof(*L));
	L->wait_head = EL_LOCK_NONE;
	L->wait_tail = EL_LOCK_NONE;
}

/* Remove a waiting claim from its lock's queue (a bounded walk from the head). */
static void unlink_waiter(struct el_lock_table *t, uint16_t claim)
{
	struct el_lock_claim *C = &t->claims[claim];
	struct el_lock_entry *L = &t->locks[C->lock];
	uint16_t prev = EL_LOCK_NONE, cur = L->wait_head;
	for (uint32_t i = 0; i < EL_CLAIMS_MAX && cur != EL_LOCK_NONE && cur != claim; i++) {
		prev = cur;
		cur = t->claims[cur].next;
	}
	EL_ASSERT(cur == claim); /* a waiting claim is always in its queue */
	if (prev == EL_LOCK_NONE)
		L->wait_head = C->next;
	else
		t->claims[prev].next = C->next;
	if (L->wait_tail == claim)
		L->wait_tail = prev;
	C->next = EL_LOCK_NONE;
	EL_ASSERT(t->n_waiting > 0);
	t->n_waiting--;
}

void lk_free_claim(struct el_lock_table *t, uint16_t claim)
{
	EL_ASSERT(claim < EL_CLAIMS_MAX);
	struct el_lock_claim *C = &t->claims[claim];
	EL_ASSERT(C->state != EL_CLAIM_FREE);
	if (C->state == EL_CLAIM_WAIT) {
		unlink_waiter(t, claim);
	} else {
		struct el_lock_entry *L = &t->locks[C->lock];
		EL_ASSERT(L->n_holders > 0);
		L->n_holders--;
	}
	if (C->value != EL_LOCK_NONE)
		memset(&t->values[C->value], 0, sizeof(t->values[C->value]));
	memset(C, 0, sizeof(*C));
}

void lk_emit(const struct el_lock_table *t, struct el_lock_result *res, uint8_t kind,
	     uint16_t session, uint64_t seq, uint64_t token, uint16_t lock)
{
	EL_ASSERT(session < EL_SESSIONS_MAX && lock < EL_LOCKS_MAX);
	if (res->n_events >= EL_LOCK_EVENTS_MAX) {
		if (res->events_dropped < UINT16_MAX)
			res->events_dropped++;
		return;
	}
	struct el_lock_event *ev = &res->events[res->n_events++];
	const struct el_lock_entry *L = &t->locks[lock];
	ev->kind = kind;
	ev->session = t->sessions[session].id;
	ev->seq = seq;
	ev->token = token;
	ev->name_len = L->name_len;
	memcpy(ev->name, L->name, L->name_len);
}

void lk_notify_watchers(const struct el_lock_table *t, uint16_t lock, uint8_t kind,
			struct el_lock_result *res)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *L = &t->locks[lock];
	const uint64_t token = L->n_holders > 0 ? L->last_token : 0;
	uint32_t seen = 0;
	for (uint16_t w = 0; w < EL_WATCHES_MAX && seen < L->n_watches; w++) {
		if (t->watches[w].lock != lock || t->watches[w].session == EL_LOCK_NONE)
			continue;
		seen++;
		lk_emit(t, res, kind, t->watches[w].session, 0, token, lock);
	}
	EL_ASSERT(seen == L->n_watches);
}

bool lk_grantable(const struct el_lock_table *t, uint16_t lock, uint8_t mode)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *L = &t->locks[lock];
	if (L->delayed)
		return false;
	if (L->n_holders == 0)
		return true;
	return mode == EL_LOCK_SHARED && L->mode == EL_LOCK_SHARED && L->n_holders < EL_HOLDERS_MAX;
}

uint64_t lk_grant(struct el_lock_table *t, uint16_t claim, uint64_t index, uint64_t now_ms)
{
	struct el_lock_claim *C = &t->claims[claim];
	struct el_lock_entry *L = &t->locks[C->lock];
	const uint64_t token = index;
	/* Fencing: successive grants of one lock get strictly larger tokens;
	 * shared holders granted by one entry share that entry's token. */
	EL_ASSERT(token > L->last_token ||
		  (token == L->last_token && C->mode == EL_LOCK_SHARED));
	EL_ASSERT(lk_grantable(t, C->lock, C->mode));
	C->state = EL_CLAIM_HOLD;
	C->token = token;
	C->grant_ms = now_ms;
	C->count = 1;
	C->seq = 0;
	C->wait_ms = 0;
	L->mode = C->mode;
	L->n_holders++;
	L->last_token = token;
	return token;
}

void lk_enqueue(struct el_lock_table *t, uint16_t claim)
{
	struct el_lock_claim *C = &t->claims[claim];
	struct el_lock_entry *L = &t->locks[C->lock];
	EL_ASSERT(t->n_waiting < EL_WAITERS_MAX);
	C->state = EL_CLAIM_WAIT;
	C->next = EL_LOCK_NONE;
	if (L->wait_tail == EL_LOCK_NONE) {
		EL_ASSERT(L->wait_head == EL_LOCK_NONE);
		L->wait_head = claim;
	} else {
		t->claims[L->wait_tail].next = claim;
	}
	L->wait_tail = claim;
	t->n_waiting++;
}

/* Grant the head of the queue while it fits: one exclusive waiter, or a run
 * of consecutive shared waiters. Nobody behind an ungrantable head moves. */
static bool grant_waiters(struct el_lock_table *t, uint16_t lock, uint64_t index,
			  uint64_t now_ms, struct el_lock_result *res)
{
	struct el_lock_entry *L = &t->locks[lock];
	bool granted = false;
	for (uint32_t i = 0; i < EL_HOLDERS_MAX && L->wait_head != EL_LOCK_NONE; i++) {
		const uint16_t c = L->wait_head;
		struct el_lock_claim *C = &t->claims[c];
		if (!lk_grantable(t, lock, C->mode))
			break;
		const uint64_t seq = C->seq;
		unlink_waiter(t, c);
		const uint64_t token = lk_grant(t, c, index, now_ms);
		granted = true;
		struct el_lock_session *S = &t->sessions[C->session];
		if (S->last_seq == seq) { /* a retry of that request now learns the grant */
			S->last_reply.err = 0;
			S->last_reply.queued = 0;
			S->last_reply.count = 1;
			S->last_reply.token = token;
		}
		lk_emit(t, res, EL_EV_GRANTED, C->session, seq, token, lock);
	}
	return granted;
}

void lk_settle(struct el_lock_table *t, uint16_t lock, uint64_t index, uint64_t now_ms,
	       bool holders_changed, struct el_lock_result *res)
{
	EL_ASSERT(lock < EL_LOCKS_MAX && t->locks[lock].name_len != 0);
	if (grant_waiters(t, lock, index, now_ms, res))
		holders_changed = true;
	if (holders_changed)
		lk_notify_watchers(t, lock, EL_EV_HOLDER_CHANGED, res);
	lk_maybe_free_lock(t, lock);
}
