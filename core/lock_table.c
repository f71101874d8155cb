/*
 * lock_table.c - the lock table's pools (sessions, locks, claims, values,
 * watches) and the FIFO grant logic every command shares.
 *
 * Every pool is a fixed array; a new record takes the lowest free slot
 * (lock_index.c), so two replicas applying the same commands lay out their
 * tables identically (and write identical snapshots). Records link to each
 * other by slot: a lock to its holders, its queue and its watches; a session
 * to its claims and its watches; so a command walks only what it touches.
 */
#include <stddef.h>
#include <string.h>

#include "el_assert.h"
#include "el_lock_internal.h"

#if EL_INDEXED
/* ---- Sorted lists -------------------------------------------------------------- */

/* A list of slots in ascending order, singly linked through a field of each
 * record: a session's claims, a session's watches, a lock's watches. */
struct slist {
	uint8_t *base;  /* the pool */
	uint32_t stride; /* sizeof one record */
	uint32_t off;    /* offsetof its link field */
	uint32_t max;    /* the pool's size: no walk is longer */
};

#define SLIST(pool, type, field) \
	((struct slist){(uint8_t *)(pool), sizeof(type), offsetof(type, field), \
			sizeof(pool) / sizeof(type)})

static el_slot_t *link_of(const struct slist *l, el_slot_t item)
{
	return (el_slot_t *)(void *)(l->base + (size_t)item * l->stride + l->off);
}

static void slist_insert(const struct slist *l, el_slot_t *head, el_slot_t item)
{
	el_slot_t *link = head;
	for (uint32_t n = 0; *link != EL_LOCK_NONE && *link < item; n++) {
		EL_ASSERT(n < l->max);
		link = link_of(l, *link);
	}
	*link_of(l, item) = *link;
	*link = item;
}

static void slist_remove(const struct slist *l, el_slot_t *head, el_slot_t item)
{
	el_slot_t *link = head;
	for (uint32_t n = 0; *link != item; n++) {
		EL_ASSERT(n < l->max);
		EL_ASSERT(*link != EL_LOCK_NONE); /* item is in the list */
		link = link_of(l, *link);
	}
	*link = *link_of(l, item);
}
#endif

/* ---- Sessions ------------------------------------------------------------------ */

void el_lock__take_session(struct el_lock_table *t, el_slot_t s, uint64_t id)
{
	EL_ASSERT(s < EL_SESSIONS_MAX);
	EL_ASSERT(id != 0);
	struct el_lock_session *sess = &t->sessions[s];
	EL_ASSERT(sess->id == 0);
	sess->id = id;
#if EL_INDEXED
	sess->claims = EL_LOCK_NONE;
	sess->watches = EL_LOCK_NONE;
#endif
	el_lock__mark(t, EL_POOL_SESSIONS, s, true);
	el_lock__index_session(t, s, true);
}

void el_lock__free_session(struct el_lock_table *t, el_slot_t s)
{
	struct el_lock_session *sess = &t->sessions[s];
#if EL_INDEXED
	EL_ASSERT(sess->claims == EL_LOCK_NONE); /* its claims and watches went first */
	EL_ASSERT(sess->watches == EL_LOCK_NONE);
#endif
	el_lock__index_session(t, s, false);
	el_lock__mark(t, EL_POOL_SESSIONS, s, false);
	memset(sess, 0, sizeof(*sess));
}

/* ---- Locks --------------------------------------------------------------------- */

void el_lock__take_lock(struct el_lock_table *t, el_slot_t lock, const char *name,
			uint32_t name_len)
{
	EL_ASSERT(name_len >= 1);
	EL_ASSERT(name_len <= EL_NAME_MAX);
	struct el_lock_entry *entry = &t->locks[lock];
	EL_ASSERT(entry->name_len == 0);
	entry->name_len = (uint8_t)name_len;
	memcpy(entry->name, name, name_len);
#if EL_INDEXED
	entry->holders = EL_LOCK_NONE;
#endif
	entry->wait_head = EL_LOCK_NONE;
	entry->wait_tail = EL_LOCK_NONE;
#if EL_INDEXED
	entry->watches = EL_LOCK_NONE;
#endif
	el_lock__mark(t, EL_POOL_LOCKS, lock, true);
	el_lock__index_lock(t, lock, true);
}

el_slot_t el_lock__alloc_lock(struct el_lock_table *t, const char *name, uint32_t name_len)
{
	const el_slot_t lock = el_lock__lowest_free(t, EL_POOL_LOCKS);
	if (lock != EL_LOCK_NONE)
		el_lock__take_lock(t, lock, name, name_len);
	return lock;
}

void el_lock__maybe_free_lock(struct el_lock_table *t, el_slot_t lock)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	struct el_lock_entry *entry = &t->locks[lock];
	EL_ASSERT(entry->name_len != 0);
	if (entry->n_holders != 0 || entry->wait_head != EL_LOCK_NONE || entry->delayed ||
	    entry->n_watches != 0)
		return;
	el_lock__index_lock(t, lock, false);
	el_lock__mark(t, EL_POOL_LOCKS, lock, false);
	memset(entry, 0, sizeof(*entry));
}

/* ---- Values -------------------------------------------------------------------- */

void el_lock__take_value(struct el_lock_table *t, el_slot_t v, const uint8_t *data, uint32_t len)
{
	EL_ASSERT(len <= EL_VALUE_MAX);
	struct el_lock_value *val = &t->values[v];
	EL_ASSERT(!val->used);
	val->used = 1;
	val->len = (uint8_t)len;
	if (len > 0)
		memcpy(val->data, data, len);
	el_lock__mark(t, EL_POOL_VALUES, v, true);
}

el_slot_t el_lock__alloc_value(struct el_lock_table *t, const uint8_t *data, uint32_t len)
{
	const el_slot_t v = el_lock__lowest_free(t, EL_POOL_VALUES);
	if (v != EL_LOCK_NONE)
		el_lock__take_value(t, v, data, len);
	return v;
}

static void free_value(struct el_lock_table *t, el_slot_t v)
{
	EL_ASSERT(t->values[v].used);
	el_lock__mark(t, EL_POOL_VALUES, v, false);
	memset(&t->values[v], 0, sizeof(t->values[v]));
}

/* ---- Claims -------------------------------------------------------------------- */

/* A session's claims chain by sess_next in ascending slot order, so that
 * ending a session visits them in the order a scan of the pool would. */
void el_lock__take_claim(struct el_lock_table *t, el_slot_t claim, el_slot_t lock,
			 el_slot_t session)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	EL_ASSERT(t->sessions[session].id != 0);
	struct el_lock_claim *req = &t->claims[claim];
	EL_ASSERT(req->state == EL_CLAIM_FREE);
	req->lock = lock;
	req->session = session;
	req->next = EL_LOCK_NONE;
	req->prev = EL_LOCK_NONE;
	req->value = EL_LOCK_NONE;
#if EL_INDEXED
	slist_insert(&SLIST(t->claims, struct el_lock_claim, sess_next),
		     &t->sessions[session].claims, claim);
#endif
	el_lock__mark(t, EL_POOL_CLAIMS, claim, true);
}

el_slot_t el_lock__alloc_claim(struct el_lock_table *t, el_slot_t lock, el_slot_t session)
{
	const el_slot_t claim = el_lock__lowest_free(t, EL_POOL_CLAIMS);
	if (claim != EL_LOCK_NONE)
		el_lock__take_claim(t, claim, lock, session);
	return claim;
}

el_slot_t el_lock__find_claim(const struct el_lock_table *t, el_slot_t lock, el_slot_t session,
			      uint8_t state)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	EL_ASSERT(session < EL_SESSIONS_MAX);
	EL_LOCK_FOR_SESSION_CLAIMS(t, session, c) {
		const struct el_lock_claim *req = &t->claims[c];
		if (req->state == state && req->lock == lock)
			return c;
	}
	return EL_LOCK_NONE;
}

/* Take claim out of the list whose first element is *head (holders or queue). */
static void unlink_claim(struct el_lock_table *t, el_slot_t claim, el_slot_t *head)
{
	struct el_lock_claim *req = &t->claims[claim];
	if (req->prev == EL_LOCK_NONE) {
		EL_ASSERT(*head == claim);
		*head = req->next;
	} else {
		t->claims[req->prev].next = req->next;
	}
	if (req->next != EL_LOCK_NONE)
		t->claims[req->next].prev = req->prev;
	req->next = EL_LOCK_NONE;
	req->prev = EL_LOCK_NONE;
}

static void unlink_waiter(struct el_lock_table *t, el_slot_t claim)
{
	struct el_lock_entry *entry = &t->locks[t->claims[claim].lock];
	if (entry->wait_tail == claim)
		entry->wait_tail = t->claims[claim].prev;
	unlink_claim(t, claim, &entry->wait_head);
	EL_ASSERT(t->n_waiting > 0);
	t->n_waiting--;
}

void el_lock__free_claim(struct el_lock_table *t, el_slot_t claim)
{
	EL_ASSERT(claim < EL_CLAIMS_MAX);
	struct el_lock_claim *req = &t->claims[claim];
	EL_ASSERT(req->state != EL_CLAIM_FREE);
	if (req->state == EL_CLAIM_WAIT) {
		unlink_waiter(t, claim);
	} else {
		struct el_lock_entry *entry = &t->locks[req->lock];
		EL_ASSERT(entry->n_holders > 0);
#if EL_INDEXED
		unlink_claim(t, claim, &entry->holders);
#endif
		entry->n_holders--;
	}
#if EL_INDEXED
	slist_remove(&SLIST(t->claims, struct el_lock_claim, sess_next),
		     &t->sessions[req->session].claims, claim);
#endif
	if (req->value != EL_LOCK_NONE)
		free_value(t, req->value);
	el_lock__mark(t, EL_POOL_CLAIMS, claim, false);
	memset(req, 0, sizeof(*req));
}

/* ---- Watches ------------------------------------------------------------------- */

/* A lock's watches chain by next, a session's by sess_next, both in
 * ascending slot order (the order watchers are told in; and a restored
 * table's lists are the same as the original's, record for record). */
void el_lock__take_watch(struct el_lock_table *t, el_slot_t w, el_slot_t lock, el_slot_t session)
{
	struct el_lock_watch *watcher = &t->watches[w];
	EL_ASSERT(!watcher->used);
	EL_ASSERT(t->sessions[session].id != 0);
	watcher->used = 1;
	watcher->lock = lock;
	watcher->session = session;
#if EL_INDEXED
	slist_insert(&SLIST(t->watches, struct el_lock_watch, next), &t->locks[lock].watches, w);
	slist_insert(&SLIST(t->watches, struct el_lock_watch, sess_next),
		     &t->sessions[session].watches, w);
#endif
	t->locks[lock].n_watches++;
	el_lock__mark(t, EL_POOL_WATCHES, w, true);
}

el_slot_t el_lock__alloc_watch(struct el_lock_table *t, el_slot_t lock, el_slot_t session)
{
	const el_slot_t w = el_lock__lowest_free(t, EL_POOL_WATCHES);
	if (w != EL_LOCK_NONE)
		el_lock__take_watch(t, w, lock, session);
	return w;
}

el_slot_t el_lock__find_watch(const struct el_lock_table *t, el_slot_t lock, el_slot_t session)
{
	EL_LOCK_FOR_SESSION_WATCHES(t, session, w)
		if (t->watches[w].lock == lock)
			return w;
	return EL_LOCK_NONE;
}

void el_lock__free_watch(struct el_lock_table *t, el_slot_t w)
{
	struct el_lock_watch *watcher = &t->watches[w];
	EL_ASSERT(watcher->used);
	const el_slot_t lock = watcher->lock;
#if EL_INDEXED
	slist_remove(&SLIST(t->watches, struct el_lock_watch, next), &t->locks[lock].watches, w);
	slist_remove(&SLIST(t->watches, struct el_lock_watch, sess_next),
		     &t->sessions[watcher->session].watches, w);
#endif
	EL_ASSERT(t->locks[lock].n_watches > 0);
	t->locks[lock].n_watches--;
	el_lock__mark(t, EL_POOL_WATCHES, w, false);
	memset(watcher, 0, sizeof(*watcher));
	el_lock__maybe_free_lock(t, lock);
}

void el_lock__emit(const struct el_lock_table *t, struct el_lock_result *res, uint8_t kind,
		   el_slot_t session, uint64_t seq, uint64_t token, el_slot_t lock)
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

void el_lock__armed_delay(struct el_lock_result *res, el_slot_t lock)
{
	if (res->n_armed_delays < EL_LOCK_ARMED_DELAYS_MAX)
		res->armed_delays[res->n_armed_delays++] = lock;
	else
		res->armed_delays_lost = true;
}

/* The newest token among the lock's holders (0: free). Not last_token:
 * once the newest permit or shared hold is released, its token is held by
 * no one, and a watcher told it (an outside tester) took a released grant
 * for the newest holder, where el_query names the hold that remains. */
uint64_t el_lock__newest_hold(const struct el_lock_table *t, el_slot_t lock)
{
	uint64_t token = 0;
	EL_LOCK_FOR_HOLDERS(t, lock, c) {
		if (t->claims[c].token > token)
			token = t->claims[c].token;
	}
	return token;
}

void el_lock__notify_watchers(const struct el_lock_table *t, el_slot_t lock, uint8_t kind,
			      struct el_lock_result *res)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *entry = &t->locks[lock];
	const uint64_t token = el_lock__newest_hold(t, lock);
	uint32_t seen = 0;
	EL_LOCK_FOR_LOCK_WATCHES(t, lock, w) {
		EL_ASSERT(seen < entry->n_watches); /* the list has no cycle */
		EL_ASSERT(t->watches[w].lock == lock);
		seen++;
		el_lock__emit(t, res, kind, t->watches[w].session, 0, token, lock);
	}
	EL_ASSERT(seen == entry->n_watches);
}

bool el_lock__grantable(const struct el_lock_table *t, el_slot_t lock, uint8_t mode)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	const struct el_lock_entry *entry = &t->locks[lock];
#if EL_SEMAPHORES
	if (entry->limit != 0) /* a free permit: neither held nor in its delay */
		return entry->n_holders + entry->delayed < entry->limit;
#endif
	if (entry->delayed)
		return false;
	if (entry->n_holders == 0)
		return true;
	return mode == EL_LOCK_SHARED && entry->mode == EL_LOCK_SHARED &&
	       entry->n_holders < EL_HOLDERS_MAX;
}

/* Put a claim into its lock's holders, kept in ascending slot order (the
 * order queries and snapshots list them); at most EL_HOLDERS_MAX to pass. */
void el_lock__link_holder(struct el_lock_table *t, el_slot_t claim)
{
	struct el_lock_claim *req = &t->claims[claim];
	struct el_lock_entry *entry = &t->locks[req->lock];
#if EL_INDEXED
	el_slot_t prev = EL_LOCK_NONE, next = entry->holders;
	for (uint32_t n = 0; next != EL_LOCK_NONE && next < claim; n++) {
		EL_ASSERT(n < EL_HOLDERS_MAX);
		prev = next;
		next = t->claims[next].next;
	}
	req->prev = prev;
	req->next = next;
	if (prev == EL_LOCK_NONE)
		entry->holders = claim;
	else
		t->claims[prev].next = claim;
	if (next != EL_LOCK_NONE)
		t->claims[next].prev = claim;
#endif
	entry->n_holders++;
	EL_ASSERT(entry->n_holders <= EL_HOLDERS_MAX);
}

uint64_t el_lock__grant(struct el_lock_table *t, el_slot_t claim, uint64_t index, uint64_t now_ms)
{
	struct el_lock_claim *req = &t->claims[claim];
	struct el_lock_entry *entry = &t->locks[req->lock];
	const uint64_t token = index;
	/* Fencing: successive grants of one lock get strictly larger tokens;
	 * shared holders granted by one entry share that entry's token (a
	 * semaphore's permits never do: no entry grants two). */
	EL_ASSERT(token > entry->last_token ||
		  (token == entry->last_token && req->mode == EL_LOCK_SHARED && entry->limit == 0));
	EL_ASSERT(el_lock__grantable(t, req->lock, req->mode));
	EL_ASSERT(req->next == EL_LOCK_NONE); /* in no list yet */
	EL_ASSERT(req->prev == EL_LOCK_NONE);
	req->state = EL_CLAIM_HOLD;
	req->token = token;
	req->grant_ms = now_ms;
	req->count = 1;
	req->seq = 0;
	req->wait_ms = 0;
	entry->mode = req->mode;
	el_lock__link_holder(t, claim);
	entry->last_token = token;
	return token;
}

void el_lock__enqueue(struct el_lock_table *t, el_slot_t claim)
{
	struct el_lock_claim *req = &t->claims[claim];
	struct el_lock_entry *entry = &t->locks[req->lock];
	EL_ASSERT(t->n_waiting < EL_WAITERS_MAX);
	req->state = EL_CLAIM_WAIT;
	req->next = EL_LOCK_NONE;
	req->prev = entry->wait_tail;
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
static bool grant_waiters(struct el_lock_table *t, el_slot_t lock, uint64_t index,
			  uint64_t now_ms, struct el_lock_result *res)
{
	struct el_lock_entry *entry = &t->locks[lock];
	bool granted = false;
	for (uint32_t i = 0; i < EL_HOLDERS_MAX && entry->wait_head != EL_LOCK_NONE; i++) {
		const el_slot_t c = entry->wait_head;
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

void el_lock__settle(struct el_lock_table *t, el_slot_t lock, uint64_t index, uint64_t now_ms,
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
