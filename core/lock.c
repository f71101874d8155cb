/*
 * lock.c - applying committed commands to the lock table: sessions,
 * acquire/release with fencing tokens and FIFO queues, lock-delay, elections,
 * watches, and the exactly-once replies.
 *
 * Every function here is a pure function of (table, entry index, command):
 * no clock, no randomness, no pointer values reach the table. The helpers it
 * shares with the snapshot code are in lock_table.c.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_lock_internal.h"

void el_lock_init(struct el_lock_table *t)
{
	EL_ASSERT(t != NULL);
	memset(t, 0, sizeof(*t));
	for (uint32_t l = 0; l < EL_LOCKS_MAX; l++) {
		t->locks[l].wait_head = EL_LOCK_NONE;
		t->locks[l].wait_tail = EL_LOCK_NONE;
	}
	for (uint32_t w = 0; w < EL_WATCHES_MAX; w++) {
		t->watches[w].lock = EL_LOCK_NONE;
		t->watches[w].session = EL_LOCK_NONE;
	}
	EL_ASSERT(t->n_waiting == 0 && t->last_index == 0);
}

/* ---- Exactly-once --------------------------------------------------------- */

/* True when seq was handled before: res then holds the answer to give. */
static bool replayed(const struct el_lock_session *S, uint64_t seq, struct el_lock_result *res)
{
	EL_ASSERT(seq != 0);
	if (seq > S->last_seq)
		return false;
	if (seq < S->last_seq) {
		res->err = EL_ESTALE;
		return true;
	}
	res->err = S->last_reply.err;
	res->queued = S->last_reply.queued != 0;
	res->count = S->last_reply.count;
	res->token = S->last_reply.token;
	return true;
}

static void remember(struct el_lock_session *S, uint64_t seq, const struct el_lock_result *res)
{
	EL_ASSERT(seq > S->last_seq);
	S->last_seq = seq;
	S->last_reply.err = res->err;
	S->last_reply.queued = res->queued ? 1 : 0;
	S->last_reply.count = res->count;
	S->last_reply.token = res->token;
}

/* ---- Sessions ------------------------------------------------------------- */

static void open_session(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *c,
			 struct el_lock_result *res)
{
	const uint16_t s = lk_alloc_session(t);
	if (s == EL_LOCK_NONE) {
		res->err = EL_EFULL;
		return;
	}
	struct el_lock_session *S = &t->sessions[s];
	EL_ASSERT(el_lock_session_slot(t, index) == EL_LOCK_NONE); /* indices are unique */
	S->id = index;
	S->renew_index = index;
	S->ttl_ms = c->ttl_ms;
	S->client_len = c->client_len;
	memcpy(S->client, c->client, c->client_len);
	res->session = index;
}

/* End a session: remove its watches (it hears of no more changes), drop its
 * waits (telling its client), release its holds (into lock-delay when it
 * expired) and grant what that frees. */
static void drop_session(struct el_lock_table *t, uint16_t s, uint64_t index, uint64_t now_ms,
			 bool expired, struct el_lock_result *res)
{
	for (uint16_t w = 0; w < EL_WATCHES_MAX; w++) {
		struct el_lock_watch *W = &t->watches[w];
		if (W->lock == EL_LOCK_NONE || W->session != s)
			continue;
		const uint16_t lock = W->lock;
		W->lock = EL_LOCK_NONE;
		W->session = EL_LOCK_NONE;
		EL_ASSERT(t->locks[lock].n_watches > 0);
		t->locks[lock].n_watches--;
		lk_maybe_free_lock(t, lock);
	}
	for (uint16_t c = 0; c < EL_CLAIMS_MAX; c++) {
		struct el_lock_claim *C = &t->claims[c];
		if (C->state == EL_CLAIM_FREE || C->session != s)
			continue;
		const uint16_t lock = C->lock;
		struct el_lock_entry *L = &t->locks[lock];
		const bool held = C->state == EL_CLAIM_HOLD;
		if (!held)
			lk_emit(t, res, EL_EV_CANCELED, s, C->seq, 0, lock);
		if (held && expired && C->mode == EL_LOCK_EXCLUSIVE && C->delay_ms > 0) {
			L->delayed = 1;
			L->delay_ms = C->delay_ms;
			L->delay_token = C->token;
		}
		lk_free_claim(t, c);
		lk_settle(t, lock, index, now_ms, held, res);
	}
	memset(&t->sessions[s], 0, sizeof(t->sessions[s]));
}

static void renew_or_end_session(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *c,
			struct el_lock_result *res)
{
	const uint16_t s = el_lock_session_slot(t, c->session);
	if (s == EL_LOCK_NONE) {
		res->err = EL_EEXPIRED;
		return;
	}
	struct el_lock_session *S = &t->sessions[s];
	if (c->type == EL_CMD_KEEPALIVE) {
		S->renew_index = index;
		return;
	}
	const bool expired = c->type == EL_CMD_EXPIRE_SESSION;
	if (expired && c->token != S->renew_index) {
		res->err = EL_ESTALE; /* renewed after the leader decided */
		return;
	}
	drop_session(t, s, index, c->now_ms, expired, res);
}

/* ---- Acquire / campaign --------------------------------------------------- */

/* The session already holds or waits for the lock. */
static void acquire_again(struct el_lock_table *t, uint16_t lock, uint16_t s,
			  const struct el_lock_cmd *c, struct el_lock_result *res)
{
	if (lk_find_claim(t, lock, s, EL_CLAIM_WAIT) != EL_LOCK_NONE) {
		res->err = EL_EBUSY; /* one queued request per session and lock */
		return;
	}
	struct el_lock_claim *C = &t->claims[lk_find_claim(t, lock, s, EL_CLAIM_HOLD)];
	EL_ASSERT(C->state == EL_CLAIM_HOLD);
	if (C->mode != c->mode) {
		res->err = EL_EINVAL; /* no upgrade or downgrade */
	} else if (c->type == EL_CMD_CAMPAIGN) {
		res->count = C->count; /* already the leader */
	} else if (C->count == UINT32_MAX) {
		res->err = EL_EFULL;
	} else {
		C->count++;
		res->count = C->count;
	}
	res->token = C->token;
}

/* A new claim for (lock, session), with its campaign value. */
static uint16_t new_claim(struct el_lock_table *t, uint16_t lock, uint16_t s,
			  const struct el_lock_cmd *c)
{
	const uint16_t claim = lk_alloc_claim(t, lock, s);
	if (claim == EL_LOCK_NONE)
		return EL_LOCK_NONE;
	struct el_lock_claim *C = &t->claims[claim];
	if (c->type == EL_CMD_CAMPAIGN) {
		C->value = lk_alloc_value(t, c->value, c->value_len);
		if (C->value == EL_LOCK_NONE) {
			memset(C, 0, sizeof(*C)); /* still free */
			return EL_LOCK_NONE;
		}
	}
	C->mode = c->mode;
	C->delay_ms = c->delay_ms < EL_LOCK_DELAY_MAX_MS ? c->delay_ms : EL_LOCK_DELAY_MAX_MS;
	EL_ASSERT(C->state == EL_CLAIM_FREE);
	return claim;
}

static void acquire(struct el_lock_table *t, uint64_t index, uint16_t s,
		    const struct el_lock_cmd *c, struct el_lock_result *res)
{
	uint16_t lock = lk_find(t, c->name, c->name_len);
	if (lock != EL_LOCK_NONE && (lk_find_claim(t, lock, s, EL_CLAIM_HOLD) != EL_LOCK_NONE ||
				     lk_find_claim(t, lock, s, EL_CLAIM_WAIT) != EL_LOCK_NONE)) {
		acquire_again(t, lock, s, c, res);
		return;
	}
	if (lock == EL_LOCK_NONE)
		lock = lk_alloc_lock(t, c->name, c->name_len);
	if (lock == EL_LOCK_NONE) {
		res->err = EL_EFULL;
		return;
	}
	const struct el_lock_entry *L = &t->locks[lock];
	const bool now = L->wait_head == EL_LOCK_NONE && lk_grantable(t, lock, c->mode);
	if (!now && c->wait_ms == 0) {
		res->err = L->delayed ? EL_EDELAYED : EL_EBUSY;
	} else if (!now && t->n_waiting >= EL_WAITERS_MAX) {
		res->err = EL_EFULL;
	} else {
		const uint16_t claim = new_claim(t, lock, s, c);
		if (claim == EL_LOCK_NONE) {
			res->err = EL_EFULL;
		} else if (now) {
			res->token = lk_grant(t, claim, index, c->now_ms);
			res->count = 1;
			lk_notify_watchers(t, lock, EL_EV_HOLDER_CHANGED, res);
		} else {
			t->claims[claim].seq = c->seq;
			t->claims[claim].wait_ms = c->wait_ms;
			lk_enqueue(t, claim);
			res->queued = true;
		}
	}
	lk_maybe_free_lock(t, lock);
}

/* ---- Release / resign / proclaim ----------------------------------------- */

/* The hold of session s on the command's lock, checked against its token;
 * EL_LOCK_NONE with res->err set otherwise. */
static uint16_t own_hold(const struct el_lock_table *t, uint16_t s, const struct el_lock_cmd *c,
			 struct el_lock_result *res)
{
	const uint16_t lock = lk_find(t, c->name, c->name_len);
	const uint16_t claim =
		lock == EL_LOCK_NONE ? EL_LOCK_NONE : lk_find_claim(t, lock, s, EL_CLAIM_HOLD);
	if (claim == EL_LOCK_NONE) {
		res->err = EL_ENOTFOUND;
		return EL_LOCK_NONE;
	}
	if (t->claims[claim].token != c->token) {
		res->err = EL_ESTALE; /* an older grant of this lock */
		return EL_LOCK_NONE;
	}
	return claim;
}

static void release(struct el_lock_table *t, uint64_t index, uint16_t s,
		    const struct el_lock_cmd *c, struct el_lock_result *res)
{
	const uint16_t claim = own_hold(t, s, c, res);
	if (claim == EL_LOCK_NONE)
		return;
	struct el_lock_claim *C = &t->claims[claim];
	EL_ASSERT(C->count >= 1);
	res->token = C->token;
	C->count = c->type == EL_CMD_RESIGN ? 0 : C->count - 1;
	res->count = C->count;
	if (C->count == 0) {
		const uint16_t lock = C->lock;
		lk_free_claim(t, claim);
		lk_settle(t, lock, index, c->now_ms, true, res);
	}
}

static void proclaim(struct el_lock_table *t, uint16_t s, const struct el_lock_cmd *c,
		     struct el_lock_result *res)
{
	const uint16_t claim = own_hold(t, s, c, res);
	if (claim == EL_LOCK_NONE)
		return;
	const struct el_lock_claim *C = &t->claims[claim];
	if (C->value == EL_LOCK_NONE) {
		res->err = EL_EINVAL; /* a plain lock, not an election */
		return;
	}
	struct el_lock_value *V = &t->values[C->value];
	EL_ASSERT(V->used);
	memset(V->data, 0, sizeof(V->data));
	memcpy(V->data, c->value, c->value_len);
	V->len = c->value_len;
	res->token = C->token;
	lk_notify_watchers(t, C->lock, EL_EV_VALUE_CHANGED, res);
}

/* ---- Watches -------------------------------------------------------------- */

static void watch(struct el_lock_table *t, uint16_t s, const struct el_lock_cmd *c,
		  struct el_lock_result *res)
{
	uint16_t lock = lk_find(t, c->name, c->name_len);
	uint16_t free_w = EL_LOCK_NONE, found = EL_LOCK_NONE;
	for (uint16_t w = 0; w < EL_WATCHES_MAX; w++) {
		const struct el_lock_watch *W = &t->watches[w];
		if (W->lock == EL_LOCK_NONE && free_w == EL_LOCK_NONE)
			free_w = w;
		if (lock != EL_LOCK_NONE && W->lock == lock && W->session == s)
			found = w;
	}
	if (c->type == EL_CMD_UNWATCH) {
		if (found == EL_LOCK_NONE) {
			res->err = EL_ENOTFOUND;
			return;
		}
		t->watches[found].lock = EL_LOCK_NONE;
		t->watches[found].session = EL_LOCK_NONE;
		t->locks[lock].n_watches--;
		lk_maybe_free_lock(t, lock);
		return;
	}
	if (found != EL_LOCK_NONE)
		return; /* already watching */
	if (lock == EL_LOCK_NONE && free_w != EL_LOCK_NONE)
		lock = lk_alloc_lock(t, c->name, c->name_len);
	if (lock == EL_LOCK_NONE || free_w == EL_LOCK_NONE) {
		res->err = EL_EFULL;
		return;
	}
	t->watches[free_w].lock = lock;
	t->watches[free_w].session = s;
	t->locks[lock].n_watches++;
	res->token = t->locks[lock].n_holders > 0 ? t->locks[lock].last_token : 0;
}

/* ---- Leader timers -------------------------------------------------------- */

static void wait_timeout(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *c,
			 struct el_lock_result *res)
{
	const uint16_t s = el_lock_session_slot(t, c->session);
	const uint16_t lock = lk_find(t, c->name, c->name_len);
	const uint16_t claim = (s == EL_LOCK_NONE || lock == EL_LOCK_NONE)
				       ? EL_LOCK_NONE
				       : lk_find_claim(t, lock, s, EL_CLAIM_WAIT);
	if (claim == EL_LOCK_NONE || t->claims[claim].seq != c->seq) {
		res->err = EL_ESTALE; /* granted, canceled or re-queued meanwhile */
		return;
	}
	struct el_lock_session *S = &t->sessions[s];
	if (S->last_seq == c->seq) {
		S->last_reply.err = EL_ETIMEDOUT;
		S->last_reply.queued = 0;
	}
	lk_emit(t, res, EL_EV_WAIT_TIMEOUT, s, c->seq, 0, lock);
	lk_free_claim(t, claim);
	lk_settle(t, lock, index, c->now_ms, false, res);
}

static void delay_end(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *c,
		      struct el_lock_result *res)
{
	const uint16_t lock = lk_find(t, c->name, c->name_len);
	if (lock == EL_LOCK_NONE) {
		res->err = EL_ENOTFOUND;
		return;
	}
	struct el_lock_entry *L = &t->locks[lock];
	if (!L->delayed || L->delay_token != c->token) {
		res->err = EL_ESTALE;
		return;
	}
	L->delayed = 0;
	L->delay_ms = 0;
	L->delay_token = 0;
	lk_settle(t, lock, index, c->now_ms, false, res);
}

/* ---- Dispatch ------------------------------------------------------------- */

/* Commands a client sends within its session, with exactly-once seq. */
static void session_request(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *c,
			    struct el_lock_result *res)
{
	const uint16_t s = el_lock_session_slot(t, c->session);
	if (s == EL_LOCK_NONE) {
		res->err = EL_EEXPIRED;
		return;
	}
	struct el_lock_session *S = &t->sessions[s];
	if (replayed(S, c->seq, res))
		return;
	switch (c->type) {
	case EL_CMD_ACQUIRE:
	case EL_CMD_CAMPAIGN: acquire(t, index, s, c, res); break;
	case EL_CMD_RELEASE:
	case EL_CMD_RESIGN: release(t, index, s, c, res); break;
	case EL_CMD_PROCLAIM: proclaim(t, s, c, res); break;
	default: watch(t, s, c, res); break;
	}
	remember(S, c->seq, res);
}

static void result_reset(struct el_lock_result *res, uint64_t session)
{
	res->err = EL_OK;
	res->queued = false;
	res->count = 0;
	res->token = 0;
	res->session = session;
	res->n_events = 0;
	res->events_dropped = 0;
}

void el_lock_apply_cmd(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *c,
		       struct el_lock_result *res)
{
	EL_ASSERT(t != NULL && c != NULL && res != NULL);
	EL_ASSERT(index > t->last_index); /* tokens rise only if indices do */
	t->last_index = index;
	result_reset(res, c->session);
	if (el_lock_cmd_check(c) != EL_OK) {
		res->err = EL_EINVAL;
		return;
	}
	switch (c->type) {
	case EL_CMD_OPEN_SESSION:
		if (!el_lock__open_replayed(t, c, res)) {
			open_session(t, index, c, res);
			el_lock__open_remember(t, c, res);
		}
		break;
	case EL_CMD_KEEPALIVE:
	case EL_CMD_CLOSE_SESSION:
	case EL_CMD_EXPIRE_SESSION: renew_or_end_session(t, index, c, res); break;
	case EL_CMD_WAIT_TIMEOUT: wait_timeout(t, index, c, res); break;
	case EL_CMD_DELAY_END: delay_end(t, index, c, res); break;
	default: session_request(t, index, c, res); break;
	}
}

void el_lock_apply(struct el_lock_table *t, uint64_t index, const uint8_t *data, uint32_t len,
		   struct el_lock_result *res)
{
	struct el_lock_cmd c;
	EL_ASSERT(t != NULL && res != NULL);
	const int err = el_lock_cmd_decode(&c, data, len);
	if (err != EL_OK) {
		/* Bad bytes in the log apply as a no-op: every replica agrees. */
		EL_ASSERT(index > t->last_index);
		t->last_index = index;
		result_reset(res, 0);
		res->err = err;
		return;
	}
	el_lock_apply_cmd(t, index, &c, res);
}
