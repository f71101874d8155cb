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
 * a semaphore's holders and delayed permits together at most its limit,
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
	EL_ASSERT(req->state == EL_CLAIM_HOLD);
	EL_ASSERT(req->session < EL_SESSIONS_MAX);
	EL_ASSERT(t->sessions[req->session].id != 0);
	EL_ASSERT(req->token >= 1);
	EL_ASSERT(req->token <= entry->last_token); /* fencing never goes back */
	EL_ASSERT(req->mode == entry->mode);
	EL_ASSERT(req->count >= 1);
	EL_ASSERT(entry->limit == 0 || req->value == EL_LOCK_NONE); /* no semaphore campaigns */
	if (req->value != EL_LOCK_NONE) {
		EL_ASSERT(req->value < EL_VALUES_MAX);
		EL_ASSERT(t->values[req->value].used);
	}
}

/* The holders of lock: a list in ascending slot order with consistent back
 * links, each a valid hold of lock; returns their number. */
static uint32_t check_holders(const struct el_lock_table *t, el_slot_t lock)
{
	const struct el_lock_entry *entry = &t->locks[lock];
	uint32_t n = 0;
	el_slot_t prev = EL_LOCK_NONE;
	EL_LOCK_FOR_HOLDERS(t, lock, c) {
		EL_ASSERT(c < EL_CLAIMS_MAX);
		EL_ASSERT(n < EL_HOLDERS_MAX); /* no cycle */
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->lock == lock);
#if EL_INDEXED
		EL_ASSERT(req->prev == prev);
#endif
		EL_ASSERT(prev == EL_LOCK_NONE || prev < c); /* ascending */
		check_hold(t, entry, req);
		prev = c;
		n++;
	}
	return n;
}

/* The queue of lock: every member waits on lock, back links and tail agree,
 * the walk ends within the pool; returns its length. */
static uint32_t check_queue(const struct el_lock_table *t, el_slot_t lock)
{
	const struct el_lock_entry *entry = &t->locks[lock];
	uint32_t n = 0;
	el_slot_t prev = EL_LOCK_NONE;
	for (el_slot_t c = entry->wait_head; c != EL_LOCK_NONE; c = t->claims[c].next) {
		EL_ASSERT(c < EL_CLAIMS_MAX);
		EL_ASSERT(n < EL_WAITERS_MAX); /* no cycle */
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->state == EL_CLAIM_WAIT);
		EL_ASSERT(req->lock == lock);
		EL_ASSERT(req->prev == prev);
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

/* The watches of lock, in ascending slot order; returns their number. */
static uint32_t check_watches(const struct el_lock_table *t, el_slot_t lock)
{
	uint32_t n = 0;
	el_slot_t prev = EL_LOCK_NONE;
	EL_LOCK_FOR_LOCK_WATCHES(t, lock, w) {
		EL_ASSERT(w < EL_WATCHES_MAX);
		EL_ASSERT(n < EL_WATCHES_MAX); /* no cycle */
		EL_ASSERT(prev == EL_LOCK_NONE || prev < w);
		EL_ASSERT(t->watches[w].used);
		EL_ASSERT(t->watches[w].lock == lock);
		EL_ASSERT(t->sessions[t->watches[w].session].id != 0);
		prev = w;
		n++;
	}
	return n;
}

/* The fields of one lock in use, its holders, queue and watches: what every
 * command checks of the lock it named, at the cost of that lock's lists. */
void el_lock__check_lock(const struct el_lock_table *t, el_slot_t lock)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *entry = &t->locks[lock];
	EL_ASSERT(el_lock__slot_used(t, EL_POOL_LOCKS, lock));
	EL_ASSERT(entry->name_len >= 1);
	EL_ASSERT(entry->name_len <= EL_NAME_MAX);
	EL_ASSERT(entry->last_token <= t->last_index);
	EL_ASSERT(entry->limit <= EL_SEM_LIMIT_MAX);
	/* A semaphore's holders and delayed permits are at most its limit; a
	 * lock in its (one) delay has no holder. A semaphore's later delays
	 * are keyed by the DELAY_END before, a lock's by the expired token. */
	const uint32_t cap = entry->limit ? entry->limit : entry->delayed ? 1u : EL_HOLDERS_MAX;
	EL_ASSERT(entry->n_holders + entry->delayed <= cap);
	EL_ASSERT(entry->delay_token <= (entry->limit ? t->last_index : entry->last_token));
	if (entry->delayed) {
		EL_ASSERT(entry->delay_ms >= 1);
		EL_ASSERT(entry->delay_ms <= EL_LOCK_DELAY_MAX_MS);
		EL_ASSERT(entry->delay_token >= 1);
	} else {
		EL_ASSERT(entry->delay_ms == 0);
		EL_ASSERT(entry->delay_token == 0);
	}
	EL_ASSERT(entry->n_holders <= EL_HOLDERS_MAX);
	/* an exclusive lock has one holder (a semaphore's permits are exclusive holds) */
	EL_ASSERT(entry->mode != EL_LOCK_EXCLUSIVE || entry->limit != 0 || entry->n_holders <= 1);
	const uint32_t holders = check_holders(t, lock);
	EL_ASSERT(holders == entry->n_holders);
	const uint32_t waiters = check_queue(t, lock);
	const uint32_t watches = check_watches(t, lock);
	EL_ASSERT(watches == entry->n_watches);
	/* an unused lock would have been freed */
	EL_ASSERT(holders + waiters + watches > 0 || entry->delayed);
	EL_ASSERT(el_lock__find(t, entry->name, entry->name_len) == lock); /* indexed, unique */
}

/* A free record is all-zero bytes (a table in zeroed memory is empty): what
 * lets a gateway-sized table start without a pass over it. The scans of the
 * microcontroller config read only each record's own marker. */
#if EL_INDEXED
static void check_zero(const void *rec, uint32_t size)
{
	const uint8_t *p = rec;
	for (uint32_t i = 0; i < size; i++)
		EL_ASSERT(p[i] == 0);
}
#else
#define check_zero(rec, size) ((void)0)
#endif

/* One session: its fields, its index entry, its claims (ascending, each its
 * own) and its watches; adds what it counted to *claims and *watches. */
static void check_session(const struct el_lock_table *t, el_slot_t s, uint32_t *claims,
			  uint32_t *watches)
{
	const struct el_lock_session *sess = &t->sessions[s];
	EL_ASSERT(sess->id <= t->last_index); /* a session id is its OPEN's index */
	EL_ASSERT(sess->renew_index >= sess->id);
	EL_ASSERT(sess->renew_index <= t->last_index);
	EL_ASSERT(sess->client_len <= EL_CLIENT_NAME_MAX);
	EL_ASSERT(el_lock_session_slot(t, sess->id) == s); /* indexed, ids unique */
	el_slot_t prev = EL_LOCK_NONE;
	EL_LOCK_FOR_SESSION_CLAIMS(t, s, c) {
		EL_ASSERT(c < EL_CLAIMS_MAX);
		EL_ASSERT(prev == EL_LOCK_NONE || prev < c); /* ascending: no cycle */
		EL_ASSERT(t->claims[c].state != EL_CLAIM_FREE);
		EL_ASSERT(t->claims[c].session == s);
		prev = c;
		(*claims)++;
	}
	prev = EL_LOCK_NONE;
	EL_LOCK_FOR_SESSION_WATCHES(t, s, w) {
		EL_ASSERT(w < EL_WATCHES_MAX);
		EL_ASSERT(prev == EL_LOCK_NONE || prev < w); /* ascending: no cycle */
		prev = w;
		EL_ASSERT(t->watches[w].used);
		EL_ASSERT(t->watches[w].session == s);
		(*watches)++;
	}
}

/* Every slot of every pool: the bitmap (or the record's own marker) says in
 * use exactly when the record is; free records are all-zero. Returns the
 * claims, waits and watches in use through the pointers. */
static void check_pools(const struct el_lock_table *t, uint32_t *claims, uint32_t *waits,
			uint32_t *watches)
{
	for (el_slot_t s = 0; s < EL_SESSIONS_MAX; s++) {
		EL_ASSERT(el_lock__slot_used(t, EL_POOL_SESSIONS, s) == (t->sessions[s].id != 0));
		if (t->sessions[s].id == 0)
			check_zero(&t->sessions[s], sizeof(t->sessions[s]));
	}
	for (el_slot_t l = 0; l < EL_LOCKS_MAX; l++) {
		EL_ASSERT(el_lock__slot_used(t, EL_POOL_LOCKS, l) == (t->locks[l].name_len != 0));
		if (t->locks[l].name_len == 0)
			check_zero(&t->locks[l], sizeof(t->locks[l]));
	}
	for (el_slot_t c = 0; c < EL_CLAIMS_MAX; c++) {
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->state <= EL_CLAIM_WAIT);
		EL_ASSERT(el_lock__slot_used(t, EL_POOL_CLAIMS, c) == (req->state != EL_CLAIM_FREE));
		if (req->state == EL_CLAIM_FREE) {
			check_zero(req, sizeof(*req));
			continue;
		}
		EL_ASSERT(req->lock < EL_LOCKS_MAX);
		EL_ASSERT(t->locks[req->lock].name_len != 0);
		(*claims)++;
		*waits += req->state == EL_CLAIM_WAIT;
	}
	for (el_slot_t w = 0; w < EL_WATCHES_MAX; w++) {
		EL_ASSERT(el_lock__slot_used(t, EL_POOL_WATCHES, w) == (t->watches[w].used != 0));
		if (!t->watches[w].used)
			check_zero(&t->watches[w], sizeof(t->watches[w]));
		*watches += t->watches[w].used != 0;
	}
	for (el_slot_t v = 0; v < EL_VALUES_MAX; v++) {
		EL_ASSERT(el_lock__slot_used(t, EL_POOL_VALUES, v) == (t->values[v].used != 0));
		if (!t->values[v].used)
			check_zero(&t->values[v], sizeof(t->values[v]));
	}
}

void el_lock__check_invariants(const struct el_lock_table *t)
{
	EL_ASSERT(t != NULL);
	uint32_t claims = 0, waits = 0, watches = 0, chained_claims = 0, chained_watches = 0;
	check_pools(t, &claims, &waits, &watches);
	EL_ASSERT(waits == t->n_waiting);
	EL_ASSERT(t->n_waiting <= EL_WAITERS_MAX);
	EL_LOCK_FOR_EACH(t, EL_POOL_SESSIONS, s)
		check_session(t, s, &chained_claims, &chained_watches);
	/* every claim and watch in use is in its session's list */
	EL_ASSERT(chained_claims == claims);
	EL_ASSERT(chained_watches == watches);
	uint32_t listed = 0;
	EL_LOCK_FOR_EACH(t, EL_POOL_LOCKS, l) {
		el_lock__check_lock(t, l);
		listed += t->locks[l].n_holders;
	}
	/* every claim is in its lock's holders or queue (their lengths are
	 * checked against n_holders and n_waiting) */
	EL_ASSERT(listed + t->n_waiting == claims);
}
