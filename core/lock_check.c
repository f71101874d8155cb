/*
 * lock_check.c - the lock table's invariants, checked in one place: after
 * every restore (the whole table), and after every command (the lock it
 * named; the whole table when EL_LOCK_AUDIT is 1, as the unit tests and the
 * simulator's audit builds run it). A broken invariant panics through
 * EL_ASSERT with the file and line of the rule that broke, one rule per
 * assertion.
 *
 * The rules are those of lock_table.c and lock.c: fencing tokens never pass
 * the lock's last token (which never passes the last applied index), a lock
 * in its lock-delay has no holder, an exclusive lock has at most one holder,
 * a queue's head could not be granted (else it would have been), every
 * counted field equals what it counts, and an unused lock is freed.
 */
#include "el_assert.h"
#include "el_lock_internal.h"

/* One hold: its session exists, its token fits its lock, its mode is the
 * lock's, its count is at least one. */
static void check_hold(const struct el_lock_table *t, const struct el_lock_entry *entry,
		       const struct el_lock_claim *req)
{
	EL_ASSERT(req->session < EL_SESSIONS_MAX);
	EL_ASSERT(t->sessions[req->session].id != 0);
	EL_ASSERT(req->token >= 1);
	EL_ASSERT(req->token <= entry->last_token); /* fencing never goes back */
	EL_ASSERT(req->mode == entry->mode);
	EL_ASSERT(req->count >= 1);
	EL_ASSERT(req->next == EL_LOCK_NONE);
	if (req->value != EL_LOCK_NONE) {
		EL_ASSERT(req->value < EL_VALUES_MAX);
		EL_ASSERT(t->values[req->value].used);
	}
}

/* The queue of lock: every member waits on lock, the tail is the last, the
 * walk ends within the pool; returns its length. */
static uint32_t check_queue(const struct el_lock_table *t, uint16_t lock)
{
	const struct el_lock_entry *entry = &t->locks[lock];
	uint32_t n = 0;
	uint16_t prev = EL_LOCK_NONE;
	for (uint16_t c = entry->wait_head; c != EL_LOCK_NONE; c = t->claims[c].next) {
		EL_ASSERT(c < EL_CLAIMS_MAX);
		EL_ASSERT(n < EL_WAITERS_MAX); /* no cycle */
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->state == EL_CLAIM_WAIT);
		EL_ASSERT(req->lock == lock);
		EL_ASSERT(req->session < EL_SESSIONS_MAX);
		EL_ASSERT(t->sessions[req->session].id != 0);
		EL_ASSERT(req->token == 0);
		prev = c;
		n++;
	}
	EL_ASSERT(entry->wait_tail == prev);
	/* A head that could be granted would have been, by the command that
	 * freed the room for it. */
	if (entry->wait_head != EL_LOCK_NONE)
		EL_ASSERT(!el_lock__grantable(t, lock, t->claims[entry->wait_head].mode));
	return n;
}

/* The fields of one lock in use, its holders and its queue. */
void el_lock__check_lock(const struct el_lock_table *t, uint16_t lock)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *entry = &t->locks[lock];
	EL_ASSERT(entry->name_len >= 1);
	EL_ASSERT(entry->name_len <= EL_NAME_MAX);
	EL_ASSERT(entry->last_token <= t->last_index);
	EL_ASSERT(entry->delay_token <= entry->last_token);
	if (entry->delayed) {
		EL_ASSERT(entry->n_holders == 0); /* nobody holds a lock in its delay */
		EL_ASSERT(entry->delay_ms >= 1);
		EL_ASSERT(entry->delay_ms <= EL_LOCK_DELAY_MAX_MS);
		EL_ASSERT(entry->delay_token >= 1);
	} else {
		EL_ASSERT(entry->delay_ms == 0);
		EL_ASSERT(entry->delay_token == 0);
	}
	EL_ASSERT(entry->n_holders <= EL_HOLDERS_MAX);
	if (entry->mode == EL_LOCK_EXCLUSIVE)
		EL_ASSERT(entry->n_holders <= 1);
	uint32_t holders = 0, watches = 0;
	for (uint16_t c = 0; c < EL_CLAIMS_MAX; c++) {
		const struct el_lock_claim *req = &t->claims[c];
		if (req->state != EL_CLAIM_HOLD || req->lock != lock)
			continue;
		check_hold(t, entry, req);
		holders++;
	}
	EL_ASSERT(holders == entry->n_holders);
	const uint32_t waiters = check_queue(t, lock);
	for (uint16_t w = 0; w < EL_WATCHES_MAX; w++)
		if (t->watches[w].lock == lock)
			watches++;
	EL_ASSERT(watches == entry->n_watches);
	/* an unused lock would have been freed */
	EL_ASSERT(holders + waiters + watches > 0 || entry->delayed);
	EL_ASSERT(el_lock__find(t, entry->name, entry->name_len) == lock); /* names unique */
}

/* A free lock slot is all empty (a new lock starts from nothing). */
static void check_free_lock(const struct el_lock_entry *entry)
{
	EL_ASSERT(entry->n_holders == 0);
	EL_ASSERT(entry->wait_head == EL_LOCK_NONE);
	EL_ASSERT(entry->wait_tail == EL_LOCK_NONE);
	EL_ASSERT(entry->n_watches == 0);
	EL_ASSERT(!entry->delayed);
	EL_ASSERT(entry->last_token == 0);
}

/* Claims, watches and values: each refers to records in use; the waiters
 * counted match n_waiting. */
static void check_pools(const struct el_lock_table *t)
{
	uint32_t waits = 0;
	for (uint16_t c = 0; c < EL_CLAIMS_MAX; c++) {
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->state <= EL_CLAIM_WAIT);
		if (req->state == EL_CLAIM_FREE)
			continue;
		EL_ASSERT(req->lock < EL_LOCKS_MAX);
		EL_ASSERT(t->locks[req->lock].name_len != 0);
		if (req->state == EL_CLAIM_WAIT)
			waits++;
	}
	EL_ASSERT(waits == t->n_waiting);
	EL_ASSERT(t->n_waiting <= EL_WAITERS_MAX);
	for (uint16_t w = 0; w < EL_WATCHES_MAX; w++) {
		const struct el_lock_watch *watcher = &t->watches[w];
		if (watcher->lock == EL_LOCK_NONE)
			continue;
		EL_ASSERT(watcher->lock < EL_LOCKS_MAX);
		EL_ASSERT(watcher->session < EL_SESSIONS_MAX);
		EL_ASSERT(t->sessions[watcher->session].id != 0);
	}
}

void el_lock__check_invariants(const struct el_lock_table *t)
{
	EL_ASSERT(t != NULL);
	for (uint16_t s = 0; s < EL_SESSIONS_MAX; s++) {
		const struct el_lock_session *sess = &t->sessions[s];
		if (sess->id == 0)
			continue;
		EL_ASSERT(sess->id <= t->last_index); /* a session id is its OPEN's index */
		EL_ASSERT(sess->renew_index >= sess->id);
		EL_ASSERT(sess->renew_index <= t->last_index);
		EL_ASSERT(sess->client_len <= EL_CLIENT_NAME_MAX);
		for (uint16_t o = (uint16_t)(s + 1); o < EL_SESSIONS_MAX; o++)
			EL_ASSERT(t->sessions[o].id != sess->id); /* ids unique */
	}
	for (uint16_t l = 0; l < EL_LOCKS_MAX; l++) {
		if (t->locks[l].name_len != 0)
			el_lock__check_lock(t, l);
		else
			check_free_lock(&t->locks[l]);
	}
	check_pools(t);
}
