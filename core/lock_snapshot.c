/*
 * lock_snapshot.c - the whole lock table as deterministic CBOR bytes, and a
 * strict restore that leaves the table untouched on any error.
 *
 * Layout (every record carries its slot, so a restored table is laid out,
 * and so behaves, exactly like the original):
 *   [version, last_index,
 *    sessions: [[slot, id, ttl_ms, renew_index, last_seq, err, token, count,
 *                queued, client], ...]                    slots ascending
 *    values:   [[slot, bytes], ...]                       slots ascending
 *    locks:    [[slot, name, mode, limit, delayed, delay_ms, delay_token, last_token,
 *                holders: [[claim, session, token, count, grant_ms, delay_ms,
 *                           value|null], ...]            claims ascending
 *                waiters: [[claim, session, seq, wait_ms, delay_ms, mode,
 *                           value|null], ...]            queue order
 *                watches: [[watch, session], ...]], ...]  slots ascending
 *    opens:    [next, [[nonce, session], ...]]            slot order (lock_open.c)
 *   ]
 * limit is 0 for a lock, N for a semaphore; delayed counts the permits in
 * lock-delay (a lock's is 0 or 1). Version 3 (2 had no limit and a boolean
 * delayed; it is still read, with every lock a plain one, when
 * EL_SNAPSHOT_READS_V2: backups and data directories of that release).
 * Holds and waits reference sessions and values by slot, so the decoder
 * checks every reference against what it has already read.
 *
 * Restore runs the decoder twice over the bytes: a validating pass that
 * writes nothing, then (only if it passed) a pass that fills the table. This
 * costs a second parse but no second table in RAM.
 */
#include <string.h>

#include "el_assert.h"
#include "el_cbor.h"
#include "el_error.h"
#include "el_lock_internal.h"

#define BITS(n) (((n) + 7) / 8)

/* What the decoder has read so far, to check uniqueness and references. */
struct seen {
	uint8_t sessions[BITS(EL_SESSIONS_MAX)];
	uint8_t values[BITS(EL_VALUES_MAX)];
	uint8_t values_used[BITS(EL_VALUES_MAX)];
	uint8_t claims[BITS(EL_CLAIMS_MAX)];
	uint8_t watches[BITS(EL_WATCHES_MAX)];
	uint8_t lock_sessions[BITS(EL_SESSIONS_MAX)]; /* claims of the current lock */
	uint8_t lock_watchers[BITS(EL_SESSIONS_MAX)]; /* watches of the current lock */
	uint32_t n_waiting;
};

static bool bit_get(const uint8_t *set, uint32_t i) { return (set[i / 8] >> (i % 8)) & 1u; }
static void bit_set(uint8_t *set, uint32_t i) { set[i / 8] = (uint8_t)(set[i / 8] | (1u << (i % 8))); }

/* ---- Writing ---------------------------------------------------------------- */

static void put_value_ref(struct el_cbor_enc *e, el_slot_t value)
{
	if (value == EL_LOCK_NONE)
		el_cbor_put_null(e);
	else
		el_cbor_put_uint(e, value);
}

static void put_sessions(struct el_cbor_enc *e, const struct el_lock_table *t)
{
	uint32_t n = 0;
	EL_LOCK_FOR_EACH(t, EL_POOL_SESSIONS, s)
		n++;
	el_cbor_put_array(e, n);
	EL_LOCK_FOR_EACH(t, EL_POOL_SESSIONS, s) {
		const struct el_lock_session *sess = &t->sessions[s];
		EL_ASSERT(sess->id != 0);
		el_cbor_put_array(e, 10);
		el_cbor_put_uint(e, s);
		el_cbor_put_uint(e, sess->id);
		el_cbor_put_uint(e, sess->ttl_ms);
		el_cbor_put_uint(e, sess->renew_index);
		el_cbor_put_uint(e, sess->last_seq);
		el_cbor_put_int(e, sess->last_reply.err);
		el_cbor_put_uint(e, sess->last_reply.token);
		el_cbor_put_uint(e, sess->last_reply.count);
		el_cbor_put_bool(e, sess->last_reply.queued != 0);
		el_cbor_put_text(e, sess->client, sess->client_len);
	}
}

static void put_values(struct el_cbor_enc *e, const struct el_lock_table *t)
{
	uint32_t n = 0;
	EL_LOCK_FOR_EACH(t, EL_POOL_VALUES, v)
		n++;
	el_cbor_put_array(e, n);
	EL_LOCK_FOR_EACH(t, EL_POOL_VALUES, v) {
		EL_ASSERT(t->values[v].used);
		el_cbor_put_array(e, 2);
		el_cbor_put_uint(e, v);
		el_cbor_put_bytes(e, t->values[v].data, t->values[v].len);
	}
}

static void put_claims(struct el_cbor_enc *e, const struct el_lock_table *t, el_slot_t lock)
{
	const struct el_lock_entry *entry = &t->locks[lock];
	uint32_t holders = 0;
	el_cbor_put_array(e, entry->n_holders);
	EL_LOCK_FOR_HOLDERS(t, lock, c) {
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->state == EL_CLAIM_HOLD);
		EL_ASSERT(req->lock == lock);
		EL_ASSERT(holders < entry->n_holders); /* the list has no cycle */
		holders++;
		el_cbor_put_array(e, 7);
		el_cbor_put_uint(e, c);
		el_cbor_put_uint(e, req->session);
		el_cbor_put_uint(e, req->token);
		el_cbor_put_uint(e, req->count);
		el_cbor_put_uint(e, req->grant_ms);
		el_cbor_put_uint(e, req->delay_ms);
		put_value_ref(e, req->value);
	}
	EL_ASSERT(holders == entry->n_holders); /* the derived count matches the pool */
	uint32_t n = 0;
	for (el_slot_t c = entry->wait_head; c != EL_LOCK_NONE && n < EL_CLAIMS_MAX; c = t->claims[c].next)
		n++;
	EL_ASSERT(n < EL_CLAIMS_MAX); /* a queue has no cycle */
	el_cbor_put_array(e, n);
	el_slot_t c = entry->wait_head;
	for (uint32_t i = 0; i < n; i++, c = t->claims[c].next) {
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->state == EL_CLAIM_WAIT);
		EL_ASSERT(req->lock == lock);
		el_cbor_put_array(e, 7);
		el_cbor_put_uint(e, c);
		el_cbor_put_uint(e, req->session);
		el_cbor_put_uint(e, req->seq);
		el_cbor_put_uint(e, req->wait_ms);
		el_cbor_put_uint(e, req->delay_ms);
		el_cbor_put_uint(e, req->mode);
		put_value_ref(e, req->value);
	}
}

static void put_lock(struct el_cbor_enc *e, const struct el_lock_table *t, el_slot_t lock)
{
	const struct el_lock_entry *entry = &t->locks[lock];
	el_cbor_put_array(e, 11);
	el_cbor_put_uint(e, lock);
	el_cbor_put_text(e, entry->name, entry->name_len);
	el_cbor_put_uint(e, entry->mode);
	el_cbor_put_uint(e, entry->limit);
	el_cbor_put_uint(e, entry->delayed);
	el_cbor_put_uint(e, entry->delay_ms);
	el_cbor_put_uint(e, entry->delay_token);
	el_cbor_put_uint(e, entry->last_token);
	put_claims(e, t, lock);
	uint32_t watches = 0;
	el_cbor_put_array(e, entry->n_watches);
	EL_LOCK_FOR_LOCK_WATCHES(t, lock, w) {
		EL_ASSERT(t->watches[w].lock == lock);
		EL_ASSERT(watches < entry->n_watches); /* the list has no cycle */
		watches++;
		el_cbor_put_array(e, 2);
		el_cbor_put_uint(e, w);
		el_cbor_put_uint(e, t->watches[w].session);
	}
	EL_ASSERT(watches == entry->n_watches);
}

int el_lock_snapshot(const struct el_lock_table *t, uint8_t *buf, uint32_t cap)
{
	EL_ASSERT(t != NULL);
	EL_ASSERT(buf != NULL);
	struct el_cbor_enc e;
	el_cbor_enc_init(&e, buf, cap);
	el_cbor_put_array(&e, 6);
	el_cbor_put_uint(&e, EL_LOCK_SNAPSHOT_VERSION);
	el_cbor_put_uint(&e, t->last_index);
	put_sessions(&e, t);
	put_values(&e, t);
	uint32_t n = 0;
	EL_LOCK_FOR_EACH(t, EL_POOL_LOCKS, l)
		n++;
	el_cbor_put_array(&e, n);
	EL_LOCK_FOR_EACH(t, EL_POOL_LOCKS, l)
		put_lock(&e, t, l);
	el_lock__opens_put(&e, t);
	const int len = el_cbor_enc_finish(&e);
	EL_ASSERT(len < 0 || (uint32_t)len <= EL_LOCK_SNAPSHOT_BOUND);
	return len;
}

/* ---- Reading ---------------------------------------------------------------- */

/* ---- Uniqueness ----------------------------------------------------------------- */

/* Session ids and lock names must be unique: a table with two sessions of
 * one id, or two locks of one name, is no table history can make, and the
 * indexes (and the invariant check) would refuse it after the fact. The
 * validating pass collects them here and sorts them (heapsort: no
 * recursion, no allocation). Static, so a board pays it in RAM, not stack;
 * the decoder is not reentrant (the node that runs it is one thread). */
#define UNIQ_MAX (EL_SESSIONS_MAX > EL_LOCKS_MAX ? EL_SESSIONS_MAX : EL_LOCKS_MAX)
static struct {
	uint64_t keys[UNIQ_MAX];         /* session ids; then name hash << 32 | lock */
	uint32_t name_off[EL_LOCKS_MAX]; /* a lock name's offset in the bytes */
	uint8_t name_len[EL_LOCKS_MAX];
	uint32_t n;
} uniq;

static void sift_down(uint64_t *a, uint32_t i, uint32_t n)
{
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (a[i] >= a[c])
			return;
		const uint64_t x = a[i];
		a[i] = a[c];
		a[c] = x;
		i = c;
	}
}

static void sort_keys(uint64_t *a, uint32_t n)
{
	for (uint32_t i = n / 2; i-- > 0;)
		sift_down(a, i, n);
	for (uint32_t end = n; end-- > 1;) {
		const uint64_t x = a[0];
		a[0] = a[end];
		a[end] = x;
		sift_down(a, 0, end);
	}
}

/* FNV-1a: equal names hash alike; a collision only costs a comparison. */
static uint32_t name_hash(const uint8_t *p, uint32_t n)
{
	uint32_t h = 2166136261u;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static bool ids_unique(void)
{
	sort_keys(uniq.keys, uniq.n);
	for (uint32_t i = 1; i < uniq.n; i++)
		if (uniq.keys[i] == uniq.keys[i - 1])
			return false;
	return true;
}

static bool names_unique(const uint8_t *buf)
{
	sort_keys(uniq.keys, uniq.n);
	for (uint32_t i = 1; i < uniq.n; i++) {
		if (uniq.keys[i] >> 32 != uniq.keys[i - 1] >> 32)
			continue;
		const uint32_t a = (uint32_t)uniq.keys[i], b = (uint32_t)uniq.keys[i - 1];
		if (uniq.name_len[a] == uniq.name_len[b] &&
		    memcmp(buf + uniq.name_off[a], buf + uniq.name_off[b], uniq.name_len[a]) == 0)
			return false;
	}
	return true;
}

/* One decoding pass; out is NULL in the validating pass. */
struct restore {
	struct el_cbor_dec d;
	struct el_lock_table *out;
	struct seen seen;
	uint64_t last_index;
	bool sem; /* the lock being read is a semaphore: no values, no shared mode */
	bool v2;  /* a version 2 snapshot (EL_SNAPSHOT_READS_V2): locks have no limit */
};

static bool rec_head(struct restore *r, uint32_t items)
{
	uint32_t n = 0;
	el_cbor_get_array(&r->d, &n, items);
	return el_cbor_dec_error(&r->d) == 0 && n == items;
}

static uint64_t get_u(struct restore *r, uint64_t max)
{
	uint64_t v = 0;
	el_cbor_get_uint_max(&r->d, max, &v);
	return v;
}

static bool get_session(struct restore *r, int64_t *prev_slot)
{
	if (!rec_head(r, 10))
		return false;
	const uint64_t slot = get_u(r, EL_SESSIONS_MAX - 1), id = get_u(r, UINT64_MAX);
	const uint64_t ttl_ms = get_u(r, UINT32_MAX), renew = get_u(r, UINT64_MAX);
	const uint64_t seq = get_u(r, UINT64_MAX);
	int64_t err = 0;
	el_cbor_get_int(&r->d, &err);
	const uint64_t token = get_u(r, UINT64_MAX), count = get_u(r, UINT32_MAX);
	bool queued = false;
	el_cbor_get_bool(&r->d, &queued);
	const char *client = NULL;
	uint32_t client_len = 0;
	el_cbor_get_text(&r->d, &client, &client_len, EL_CLIENT_NAME_MAX);
	if (el_cbor_dec_error(&r->d) != 0 || (int64_t)slot <= *prev_slot || id == 0 ||
	    id > r->last_index || ttl_ms == 0 || renew < id || renew > r->last_index || err > 0 ||
	    err < EL_ERROR_MIN)
		return false;
	*prev_slot = (int64_t)slot;
	bit_set(r->seen.sessions, (uint32_t)slot);
	if (!r->out) {
		EL_ASSERT(uniq.n < UNIQ_MAX);
		uniq.keys[uniq.n++] = id;
	}
	if (r->out) {
		el_lock__take_session(r->out, (el_slot_t)slot, id);
		struct el_lock_session *sess = &r->out->sessions[slot];
		sess->ttl_ms = (uint32_t)ttl_ms;
		sess->renew_index = renew;
		sess->last_seq = seq;
		sess->last_reply.err = (int32_t)err;
		sess->last_reply.token = token;
		sess->last_reply.count = (uint32_t)count;
		sess->last_reply.queued = queued ? 1 : 0;
		sess->client_len = (uint8_t)client_len;
		memcpy(sess->client, client, client_len);
	}
	return true;
}

static bool get_value(struct restore *r, int64_t *prev_slot)
{
	if (!rec_head(r, 2))
		return false;
	const uint64_t slot = get_u(r, EL_VALUES_MAX - 1);
	const uint8_t *data = NULL;
	uint32_t len = 0;
	el_cbor_get_bytes(&r->d, &data, &len, EL_VALUE_MAX);
	if (el_cbor_dec_error(&r->d) != 0 || (int64_t)slot <= *prev_slot)
		return false;
	*prev_slot = (int64_t)slot;
	bit_set(r->seen.values, (uint32_t)slot);
	if (r->out)
		el_lock__take_value(r->out, (el_slot_t)slot, data, len);
	return true;
}

/* A claim's slot and session: each claim once, each session once per lock. */
static bool get_claim_refs(struct restore *r, uint64_t claim, el_slot_t *session)
{
	const uint64_t s = get_u(r, EL_SESSIONS_MAX - 1);
	*session = (el_slot_t)s;
	if (el_cbor_dec_error(&r->d) != 0 || claim >= EL_CLAIMS_MAX ||
	    bit_get(r->seen.claims, (uint32_t)claim) || !bit_get(r->seen.sessions, (uint32_t)s) ||
	    bit_get(r->seen.lock_sessions, (uint32_t)s))
		return false;
	bit_set(r->seen.claims, (uint32_t)claim);
	bit_set(r->seen.lock_sessions, (uint32_t)s);
	return true;
}

/* The trailing value reference (null or a slot) of a claim record. */
static bool get_value_ref(struct restore *r, uint8_t mode, el_slot_t *value)
{
	*value = EL_LOCK_NONE;
	if (el_cbor_peek(&r->d) == EL_CBOR_NULL) {
		el_cbor_get_null(&r->d);
		return el_cbor_dec_error(&r->d) == 0;
	}
	const uint64_t v = get_u(r, EL_VALUES_MAX - 1);
	if (el_cbor_dec_error(&r->d) != 0 || mode != EL_LOCK_EXCLUSIVE || r->sem ||
	    !bit_get(r->seen.values, (uint32_t)v) || bit_get(r->seen.values_used, (uint32_t)v))
		return false;
	bit_set(r->seen.values_used, (uint32_t)v);
	*value = (el_slot_t)v;
	return true;
}

static bool get_holder(struct restore *r, el_slot_t lock, uint8_t mode, uint64_t last_token,
		       int64_t *prev_claim)
{
	el_slot_t s = 0, value = EL_LOCK_NONE;
	if (!rec_head(r, 7))
		return false;
	const uint64_t claim = get_u(r, EL_CLAIMS_MAX - 1);
	if (!get_claim_refs(r, claim, &s))
		return false;
	const uint64_t token = get_u(r, UINT64_MAX), count = get_u(r, UINT32_MAX);
	const uint64_t grant_ms = get_u(r, UINT64_MAX), delay_ms = get_u(r, EL_LOCK_DELAY_MAX_MS);
	if (!get_value_ref(r, mode, &value) || (int64_t)claim <= *prev_claim || token == 0 ||
	    token > last_token || count == 0)
		return false;
	*prev_claim = (int64_t)claim;
	if (r->out) {
		el_lock__take_claim(r->out, (el_slot_t)claim, lock, s);
		struct el_lock_claim *req = &r->out->claims[claim];
		req->state = EL_CLAIM_HOLD;
		req->value = value;
		req->mode = mode;
		req->token = token;
		req->count = (uint32_t)count;
		req->grant_ms = grant_ms;
		req->delay_ms = (uint32_t)delay_ms;
		el_lock__link_holder(r->out, (el_slot_t)claim);
	}
	return true;
}

static bool get_waiter(struct restore *r, el_slot_t lock, uint8_t *mode_out)
{
	el_slot_t s = 0, value = EL_LOCK_NONE;
	if (!rec_head(r, 7))
		return false;
	const uint64_t claim = get_u(r, EL_CLAIMS_MAX - 1);
	if (!get_claim_refs(r, claim, &s))
		return false;
	const uint64_t seq = get_u(r, UINT64_MAX), wait_ms = get_u(r, UINT32_MAX);
	const uint64_t delay_ms = get_u(r, EL_LOCK_DELAY_MAX_MS), mode = get_u(r, EL_LOCK_SHARED);
	if (!get_value_ref(r, (uint8_t)mode, &value) || seq == 0 || wait_ms == 0 ||
	    (r->sem && mode != EL_LOCK_EXCLUSIVE) ||
	    r->seen.n_waiting >= EL_WAITERS_MAX)
		return false;
	r->seen.n_waiting++;
	*mode_out = (uint8_t)mode;
	if (r->out) {
		el_lock__take_claim(r->out, (el_slot_t)claim, lock, s);
		struct el_lock_claim *req = &r->out->claims[claim];
		req->value = value;
		req->mode = (uint8_t)mode;
		req->seq = seq;
		req->wait_ms = (uint32_t)wait_ms;
		req->delay_ms = (uint32_t)delay_ms;
		el_lock__enqueue(r->out, (el_slot_t)claim);
	}
	return true;
}

static bool get_watch(struct restore *r, el_slot_t lock, int64_t *prev_watch)
{
	if (!rec_head(r, 2))
		return false;
	const uint64_t w = get_u(r, EL_WATCHES_MAX - 1), s = get_u(r, EL_SESSIONS_MAX - 1);
	if (el_cbor_dec_error(&r->d) != 0 || (int64_t)w <= *prev_watch ||
	    !bit_get(r->seen.sessions, (uint32_t)s) || bit_get(r->seen.lock_watchers, (uint32_t)s))
		return false;
	*prev_watch = (int64_t)w;
	bit_set(r->seen.watches, (uint32_t)w);
	bit_set(r->seen.lock_watchers, (uint32_t)s);
	if (r->out)
		el_lock__take_watch(r->out, (el_slot_t)w, lock, (el_slot_t)s);
	return true;
}

/* What a lock's claims are checked against. */
struct lock_head {
	uint8_t mode;
	uint8_t limit;   /* 0: a lock */
	uint8_t delayed; /* permits in lock-delay */
	uint64_t last_token;
};

/* A lock's fixed fields into h. */
static bool get_lock_head(struct restore *r, int64_t *prev_slot, struct lock_head *h)
{
	const bool v2 = EL_SNAPSHOT_READS_V2 && r->v2;
	if (!rec_head(r, v2 ? 10 : 11))
		return false;
	const uint64_t slot = get_u(r, EL_LOCKS_MAX - 1);
	const char *name = NULL;
	uint32_t name_len = 0;
	el_cbor_get_text(&r->d, &name, &name_len, EL_NAME_MAX);
	h->mode = (uint8_t)get_u(r, EL_LOCK_SHARED);
	if (v2) { /* no limit, and lock-delay as a boolean */
		bool delayed = false;
		el_cbor_get_bool(&r->d, &delayed);
		h->limit = 0;
		h->delayed = delayed ? 1 : 0;
	} else {
		h->limit = (uint8_t)get_u(r, EL_SEM_LIMIT_MAX);
		h->delayed = (uint8_t)get_u(r, h->limit == 0 ? 1 : h->limit);
	}
	const uint64_t delay_ms = get_u(r, EL_LOCK_DELAY_MAX_MS), delay_token = get_u(r, UINT64_MAX);
	h->last_token = get_u(r, UINT64_MAX);
	/* a semaphore's later delays are keyed by an index, not a token */
	const uint64_t delay_key_max = h->limit == 0 ? h->last_token : r->last_index;
	if (el_cbor_dec_error(&r->d) != 0 || (int64_t)slot <= *prev_slot || name_len == 0 ||
	    h->last_token > r->last_index || delay_token > delay_key_max ||
	    (h->delayed ? (delay_ms == 0 || delay_token == 0) : (delay_ms != 0 || delay_token != 0)))
		return false;
	*prev_slot = (int64_t)slot;
	if (!r->out) {
		EL_ASSERT(uniq.n < EL_LOCKS_MAX);
		uniq.name_off[uniq.n] = (uint32_t)((const uint8_t *)name - r->d.buf);
		uniq.name_len[uniq.n] = (uint8_t)name_len;
		uniq.keys[uniq.n] = (uint64_t)name_hash((const uint8_t *)name, name_len) << 32 | uniq.n;
		uniq.n++;
	}
	if (r->out) {
		el_lock__take_lock(r->out, (el_slot_t)slot, name, name_len);
		struct el_lock_entry *entry = &r->out->locks[slot];
		entry->mode = h->mode;
		entry->limit = h->limit;
		entry->delayed = h->delayed;
		entry->delay_ms = (uint32_t)delay_ms;
		entry->delay_token = delay_token;
		entry->last_token = h->last_token;
	}
	return true;
}

static bool get_lock(struct restore *r, int64_t *prev_slot)
{
	struct lock_head h = {0};
	uint8_t head_mode = 0;
	uint32_t n_holders = 0, n_waiters = 0, n_watches = 0;
	int64_t prev_claim = -1, prev_watch = -1;
	if (!get_lock_head(r, prev_slot, &h))
		return false;
	const el_slot_t lock = (el_slot_t)*prev_slot;
	const uint8_t mode = h.mode;
	r->sem = h.limit != 0;
	memset(r->seen.lock_sessions, 0, sizeof(r->seen.lock_sessions));
	memset(r->seen.lock_watchers, 0, sizeof(r->seen.lock_watchers));
	/* a semaphore's permits not in their delay (get_lock_head: delayed <= limit) */
	const uint32_t cap = h.limit ? (uint32_t)(h.limit - h.delayed)
			     : h.mode == EL_LOCK_EXCLUSIVE ? 1u : EL_HOLDERS_MAX;
	el_cbor_get_array(&r->d, &n_holders, cap);
	if (r->sem && n_holders > 0 && mode != EL_LOCK_EXCLUSIVE)
		return false; /* a semaphore's permits are exclusive holds */
	for (uint32_t i = 0; i < n_holders && el_cbor_dec_error(&r->d) == 0; i++)
		if (!get_holder(r, lock, mode, h.last_token, &prev_claim))
			return false;
	el_cbor_get_array(&r->d, &n_waiters, EL_WAITERS_MAX);
	for (uint32_t i = 0; i < n_waiters && el_cbor_dec_error(&r->d) == 0; i++)
		if (!get_waiter(r, lock, i == 0 ? &head_mode : &(uint8_t){0}))
			return false;
	el_cbor_get_array(&r->d, &n_watches, EL_WATCHES_MAX);
	for (uint32_t i = 0; i < n_watches && el_cbor_dec_error(&r->d) == 0; i++)
		if (!get_watch(r, lock, &prev_watch))
			return false;
	/* A head that could be granted would have been: the queue must be blocked. */
	const bool head_grantable =
		h.limit ? n_holders < cap
			: !h.delayed && (n_holders == 0 ||
					 (head_mode == EL_LOCK_SHARED && h.mode == EL_LOCK_SHARED &&
					  n_holders < EL_HOLDERS_MAX));
	if (n_waiters > 0 && head_grantable)
		return false;
	/* Nobody holds a lock during its delay (a semaphore's holders and
	 * delays were bounded above); an unused lock would have been freed. */
	return el_cbor_dec_error(&r->d) == 0 && !(h.limit == 0 && h.delayed && n_holders > 0) &&
	       (n_holders + n_waiters + n_watches > 0 || h.delayed);
}

/* One pass over the bytes; 0, EL_EDECODE or EL_EVERSION. */
static int decode(struct restore *r, const uint8_t *buf, uint32_t len)
{
	uint32_t n = 0;
	int64_t prev = -1;
	el_cbor_dec_init(&r->d, buf, len);
	if (!rec_head(r, 6))
		return EL_EDECODE;
	const uint64_t version = get_u(r, UINT64_MAX);
	if (el_cbor_dec_error(&r->d) != 0)
		return EL_EDECODE;
	if (version != EL_LOCK_SNAPSHOT_VERSION && !(EL_SNAPSHOT_READS_V2 && version == 2))
		return EL_EVERSION;
#if EL_SNAPSHOT_READS_V2
	r->v2 = version == 2;
#endif
	r->last_index = get_u(r, UINT64_MAX);
	el_cbor_get_array(&r->d, &n, EL_SESSIONS_MAX);
	uniq.n = 0;
	for (uint32_t i = 0; i < n && el_cbor_dec_error(&r->d) == 0; i++)
		if (!get_session(r, &prev))
			return EL_EDECODE;
	if (!r->out && !ids_unique())
		return EL_EDECODE;
	prev = -1;
	el_cbor_get_array(&r->d, &n, EL_VALUES_MAX);
	for (uint32_t i = 0; i < n && el_cbor_dec_error(&r->d) == 0; i++)
		if (!get_value(r, &prev))
			return EL_EDECODE;
	prev = -1;
	el_cbor_get_array(&r->d, &n, EL_LOCKS_MAX);
	uniq.n = 0;
	for (uint32_t i = 0; i < n && el_cbor_dec_error(&r->d) == 0; i++)
		if (!get_lock(r, &prev))
			return EL_EDECODE;
	if (!r->out && !names_unique(buf))
		return EL_EDECODE;
	/* Every stored value belongs to exactly one claim. */
	if (memcmp(r->seen.values, r->seen.values_used, sizeof(r->seen.values)) != 0)
		return EL_EDECODE;
	if (!el_lock__opens_get(&r->d, r->out != NULL ? &r->out->opens : NULL, r->last_index))
		return EL_EDECODE;
	return el_cbor_dec_finish(&r->d) == 0 ? EL_OK : EL_EDECODE;
}

int el_lock_snapshot_check(const uint8_t *buf, uint32_t len, uint64_t index)
{
	struct restore r;
	EL_ASSERT(buf != NULL || len == 0);
	memset(&r, 0, sizeof(r));
	const int err = decode(&r, buf, len); /* the validating pass: writes nothing */
	if (err != EL_OK)
		return err;
	/* A table that has applied past the snapshot's own index would see the
	 * next committed entry as a replay (and refuse to apply it). */
	return r.last_index <= index ? EL_OK : EL_EINVAL;
}

int el_lock_restore(struct el_lock_table *t, const uint8_t *buf, uint32_t len)
{
	struct restore r;
	EL_ASSERT(t != NULL);
	memset(&r, 0, sizeof(r));
	const int err = decode(&r, buf, len); /* validate: writes nothing */
	if (err != EL_OK)
		return err;
	el_lock__clear(t);
	memset(&r, 0, sizeof(r));
	r.out = t;
	const int again = decode(&r, buf, len);
	EL_ASSERT(again == EL_OK); /* the same bytes passed a moment ago */
	t->last_index = r.last_index;
	el_lock__check_invariants(t); /* what the decoder accepted is a table history can make */
	return EL_OK;
}
