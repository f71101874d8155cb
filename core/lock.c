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
	const uint64_t key = t->index_key;
	memset(t, 0, sizeof(*t));
	el_lock_init_zeroed(t, key);
}

void el_lock_init_zeroed(struct el_lock_table *t, uint64_t key)
{
	EL_ASSERT(t != NULL);
	EL_ASSERT(t->last_index == 0);
	EL_ASSERT(t->n_waiting == 0);
	t->index_key = key; /* every free record is all-zero: nothing else to do */
}

/* ---- Exactly-once --------------------------------------------------------- */

/* True when seq was handled before: res then holds the answer to give. */
static bool replayed(const struct el_lock_session *sess, uint64_t seq, struct el_lock_result *res)
{
	EL_ASSERT(seq != 0);
	if (seq > sess->last_seq)
		return false;
	if (seq < sess->last_seq) {
		res->err = EL_ESTALE;
		return true;
	}
	res->err = sess->last_reply.err;
	res->queued = sess->last_reply.queued != 0;
	res->count = sess->last_reply.count;
	res->token = sess->last_reply.token;
	return true;
}

static void remember(struct el_lock_session *sess, uint64_t seq, const struct el_lock_result *res)
{
	EL_ASSERT(seq > sess->last_seq);
	sess->last_seq = seq;
	sess->last_reply.err = res->err;
	sess->last_reply.queued = res->queued ? 1 : 0;
	sess->last_reply.count = res->count;
	sess->last_reply.token = res->token;
}

/* ---- Sessions ------------------------------------------------------------- */

static void open_session(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *cmd,
			 struct el_lock_result *res)
{
	const el_slot_t s = el_lock__lowest_free(t, EL_POOL_SESSIONS);
	if (s == EL_LOCK_NONE) {
		res->err = EL_EFULL;
		return;
	}
	EL_ASSERT(el_lock_session_slot(t, index) == EL_LOCK_NONE); /* indices are unique */
	el_lock__take_session(t, s, index);
	struct el_lock_session *sess = &t->sessions[s];
	sess->renew_index = index;
	sess->ttl_ms = cmd->ttl_ms;
	sess->client_len = cmd->client_len;
	memcpy(sess->client, cmd->client, cmd->client_len);
	res->session = index;
	res->armed_session = s;
}

/* The session's first watch / claim at or above from (the lists are in
 * ascending slot order; what comes before from has been freed). */
static el_slot_t next_watch(const struct el_lock_table *t, el_slot_t s, el_slot_t from)
{
	EL_LOCK_FOR_SESSION_WATCHES(t, s, w)
		if (w >= from)
			return w;
	return EL_LOCK_NONE;
}

static el_slot_t next_claim(const struct el_lock_table *t, el_slot_t s, el_slot_t from)
{
	EL_LOCK_FOR_SESSION_CLAIMS(t, s, c)
		if (c >= from)
			return c;
	return EL_LOCK_NONE;
}

/* End a session: remove its watches (it hears of no more changes), drop its
 * waits (telling its client), release its holds (into lock-delay when it
 * expired) and grant what that frees. Its claims go in ascending slot order. */
static void drop_session(struct el_lock_table *t, el_slot_t s, uint64_t index, uint64_t now_ms,
			 bool expired, struct el_lock_result *res)
{
	for (el_slot_t w = next_watch(t, s, 0); w != EL_LOCK_NONE; w = next_watch(t, s, w))
		el_lock__free_watch(t, w);
	for (el_slot_t c = next_claim(t, s, 0); c != EL_LOCK_NONE; c = next_claim(t, s, c)) {
		struct el_lock_claim *req = &t->claims[c];
		const el_slot_t lock = req->lock;
		struct el_lock_entry *entry = &t->locks[lock];
		const bool held = req->state == EL_CLAIM_HOLD;
		if (!held)
			el_lock__emit(t, res, EL_EV_CANCELED, s, req->seq, 0, lock);
		if (held && expired && req->mode == EL_LOCK_EXCLUSIVE && req->delay_ms > 0) {
			/* A lock was not delayed (it had a holder): delayed = 1. A
			 * semaphore counts its delayed permits; the delay restarts
			 * now with the longest any of them asked for. */
			entry->delayed++;
			if (req->delay_ms > entry->delay_ms)
				entry->delay_ms = req->delay_ms;
			entry->delay_token = req->token;
			el_lock__armed_delay(res, lock);
		}
		el_lock__free_claim(t, c);
		el_lock__settle(t, lock, index, now_ms, held, res);
	}
	el_lock__free_session(t, s);
}

static void renew_or_end_session(struct el_lock_table *t, uint64_t index,
				 const struct el_lock_cmd *cmd, struct el_lock_result *res)
{
	const el_slot_t s = el_lock_session_slot(t, cmd->session);
	if (s == EL_LOCK_NONE) {
		res->err = EL_EEXPIRED;
		return;
	}
	struct el_lock_session *sess = &t->sessions[s];
	if (cmd->type == EL_CMD_KEEPALIVE) {
		sess->renew_index = index;
		res->armed_session = s;
		return;
	}
	const bool expired = cmd->type == EL_CMD_EXPIRE_SESSION;
	if (expired && cmd->token != sess->renew_index) {
		res->err = EL_ESTALE; /* renewed after the leader decided */
		return;
	}
	drop_session(t, s, index, cmd->now_ms, expired, res);
}

/* ---- Acquire / campaign --------------------------------------------------- */

/* The session already holds or waits for the lock. */
static void acquire_again(struct el_lock_table *t, el_slot_t lock, el_slot_t s,
			  const struct el_lock_cmd *cmd, struct el_lock_result *res)
{
	if (el_lock__find_claim(t, lock, s, EL_CLAIM_WAIT) != EL_LOCK_NONE) {
		res->err = EL_EBUSY; /* one queued request per session and lock */
		return;
	}
	struct el_lock_claim *req = &t->claims[el_lock__find_claim(t, lock, s, EL_CLAIM_HOLD)];
	EL_ASSERT(req->state == EL_CLAIM_HOLD);
	if (req->mode != cmd->mode) {
		res->err = EL_EINVAL; /* no upgrade or downgrade */
	} else if (cmd->type == EL_CMD_CAMPAIGN) {
		/* already the leader; but a plain hold has no value to publish */
		res->err = req->value == EL_LOCK_NONE ? EL_EINVAL : EL_OK;
		res->count = req->count;
	} else if (req->count == UINT32_MAX) {
		res->err = EL_EFULL;
	} else {
		req->count++;
		res->count = req->count;
	}
	res->token = req->token;
}

/* A new claim for (lock, session), with its campaign value. */
static el_slot_t new_claim(struct el_lock_table *t, el_slot_t lock, el_slot_t s,
			   const struct el_lock_cmd *cmd)
{
	el_slot_t value = EL_LOCK_NONE;
	if (cmd->type == EL_CMD_CAMPAIGN) {
		value = el_lock__alloc_value(t, cmd->value, cmd->value_len);
		if (value == EL_LOCK_NONE)
			return EL_LOCK_NONE;
	}
	const el_slot_t claim = el_lock__alloc_claim(t, lock, s);
	if (claim == EL_LOCK_NONE) {
		if (value != EL_LOCK_NONE) {
			el_lock__mark(t, EL_POOL_VALUES, value, false);
			memset(&t->values[value], 0, sizeof(t->values[value]));
		}
		return EL_LOCK_NONE;
	}
	struct el_lock_claim *req = &t->claims[claim];
	req->value = value;
	req->mode = cmd->mode;
	req->delay_ms = cmd->delay_ms < EL_LOCK_DELAY_MAX_MS ? cmd->delay_ms : EL_LOCK_DELAY_MAX_MS;
	EL_ASSERT(req->state == EL_CLAIM_FREE);
	return claim;
}

#if EL_SEMAPHORES
/* A name in use (holders, waiters, delays) is a lock or a semaphore of one
 * limit: true, with res->err set, when the command asks for the other kind
 * or another limit. An unused name (watched only) takes the kind asked for. */
static bool kind_refused(struct el_lock_table *t, el_slot_t lock, const struct el_lock_cmd *cmd,
			 struct el_lock_result *res)
{
	struct el_lock_entry *entry = &t->locks[lock];
	if (entry->n_holders == 0 && entry->wait_head == EL_LOCK_NONE && !entry->delayed) {
		entry->limit = cmd->limit;
		return false;
	}
	if ((entry->limit == 0) != (cmd->limit == 0)) {
		res->err = EL_EKIND;
	} else if (entry->limit != cmd->limit) {
		res->err = EL_ELIMIT;
		res->count = entry->limit; /* the reply states both limits */
	}
	return res->err != EL_OK;
}
#else
#define kind_refused(t, lock, cmd, res) false
#endif

static void acquire(struct el_lock_table *t, uint64_t index, el_slot_t s,
		    const struct el_lock_cmd *cmd, struct el_lock_result *res)
{
	el_slot_t lock = el_lock__find(t, cmd->name, cmd->name_len);
	if (lock != EL_LOCK_NONE && kind_refused(t, lock, cmd, res))
		return;
	if (lock != EL_LOCK_NONE && (el_lock__find_claim(t, lock, s, EL_CLAIM_HOLD) != EL_LOCK_NONE ||
				     el_lock__find_claim(t, lock, s, EL_CLAIM_WAIT) != EL_LOCK_NONE)) {
		acquire_again(t, lock, s, cmd, res);
		return;
	}
	if (lock == EL_LOCK_NONE) {
		lock = el_lock__alloc_lock(t, cmd->name, cmd->name_len);
		if (lock == EL_LOCK_NONE) {
			res->err = EL_EFULL;
			return;
		}
		t->locks[lock].limit = cmd->limit;
	}
	const struct el_lock_entry *entry = &t->locks[lock];
	const bool now = entry->wait_head == EL_LOCK_NONE && el_lock__grantable(t, lock, cmd->mode);
	if (!now && cmd->wait_ms == 0) {
		res->err = entry->delayed ? EL_EDELAYED : EL_EBUSY;
	} else if (!now && t->n_waiting >= EL_WAITERS_MAX) {
		res->err = EL_EFULL;
	} else {
		const el_slot_t claim = new_claim(t, lock, s, cmd);
		if (claim == EL_LOCK_NONE) {
			res->err = EL_EFULL;
		} else if (now) {
			res->token = el_lock__grant(t, claim, index, cmd->now_ms);
			res->count = 1;
			el_lock__notify_watchers(t, lock, EL_EV_HOLDER_CHANGED, res);
		} else {
			t->claims[claim].seq = cmd->seq;
			t->claims[claim].wait_ms = cmd->wait_ms;
			el_lock__enqueue(t, claim);
			res->queued = true;
			res->armed_claim = claim;
		}
	}
	el_lock__maybe_free_lock(t, lock);
}

/* ---- Release / resign / proclaim ----------------------------------------- */

/* The hold of session s on the command's lock, checked against its token;
 * EL_LOCK_NONE with res->err set otherwise. */
static el_slot_t own_hold(const struct el_lock_table *t, el_slot_t s, const struct el_lock_cmd *cmd,
			 struct el_lock_result *res)
{
	const el_slot_t lock = el_lock__find(t, cmd->name, cmd->name_len);
	const el_slot_t claim =
		lock == EL_LOCK_NONE ? EL_LOCK_NONE : el_lock__find_claim(t, lock, s, EL_CLAIM_HOLD);
	if (claim == EL_LOCK_NONE) {
		res->err = EL_ENOTFOUND;
		return EL_LOCK_NONE;
	}
	if (t->claims[claim].token != cmd->token) {
		res->err = EL_ESTALE; /* an older grant of this lock */
		return EL_LOCK_NONE;
	}
	return claim;
}

static void release(struct el_lock_table *t, uint64_t index, el_slot_t s,
		    const struct el_lock_cmd *cmd, struct el_lock_result *res)
{
	const el_slot_t claim = own_hold(t, s, cmd, res);
	if (claim == EL_LOCK_NONE)
		return;
	struct el_lock_claim *req = &t->claims[claim];
	EL_ASSERT(req->count >= 1);
	res->token = req->token;
	req->count = cmd->type == EL_CMD_RESIGN ? 0 : req->count - 1;
	res->count = req->count;
	if (req->count == 0) {
		const el_slot_t lock = req->lock;
		el_lock__free_claim(t, claim);
		el_lock__settle(t, lock, index, cmd->now_ms, true, res);
	}
}

static void proclaim(struct el_lock_table *t, el_slot_t s, const struct el_lock_cmd *cmd,
		     struct el_lock_result *res)
{
	const el_slot_t claim = own_hold(t, s, cmd, res);
	if (claim == EL_LOCK_NONE)
		return;
	const struct el_lock_claim *req = &t->claims[claim];
	if (req->value == EL_LOCK_NONE) {
		res->err = EL_EINVAL; /* a plain lock, not an election */
		return;
	}
	struct el_lock_value *val = &t->values[req->value];
	EL_ASSERT(val->used);
	memset(val->data, 0, sizeof(val->data));
	memcpy(val->data, cmd->value, cmd->value_len);
	val->len = cmd->value_len;
	res->token = req->token;
	el_lock__notify_watchers(t, req->lock, EL_EV_VALUE_CHANGED, res);
}

/* ---- Watches -------------------------------------------------------------- */

static void watch(struct el_lock_table *t, el_slot_t s, const struct el_lock_cmd *cmd,
		  struct el_lock_result *res)
{
	el_slot_t lock = el_lock__find(t, cmd->name, cmd->name_len);
	const el_slot_t found = lock == EL_LOCK_NONE ? EL_LOCK_NONE : el_lock__find_watch(t, lock, s);
	if (cmd->type == EL_CMD_UNWATCH) {
		if (found == EL_LOCK_NONE)
			res->err = EL_ENOTFOUND;
		else
			el_lock__free_watch(t, found);
		return;
	}
	if (found != EL_LOCK_NONE)
		return; /* already watching */
	if (el_lock__lowest_free(t, EL_POOL_WATCHES) == EL_LOCK_NONE) {
		res->err = EL_EFULL;
		return;
	}
	if (lock == EL_LOCK_NONE)
		lock = el_lock__alloc_lock(t, cmd->name, cmd->name_len);
	if (lock == EL_LOCK_NONE) {
		res->err = EL_EFULL;
		return;
	}
	const el_slot_t w = el_lock__alloc_watch(t, lock, s);
	EL_ASSERT(w != EL_LOCK_NONE); /* a free slot was there a moment ago */
	(void)w; /* the reply carries no token: the holders come by QUERY */
}

/* ---- Leader timers -------------------------------------------------------- */

static void wait_timeout(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *cmd,
			 struct el_lock_result *res)
{
	const el_slot_t s = el_lock_session_slot(t, cmd->session);
	const el_slot_t lock = el_lock__find(t, cmd->name, cmd->name_len);
	const el_slot_t claim = (s == EL_LOCK_NONE || lock == EL_LOCK_NONE)
				       ? EL_LOCK_NONE
				       : el_lock__find_claim(t, lock, s, EL_CLAIM_WAIT);
	if (claim == EL_LOCK_NONE || t->claims[claim].seq != cmd->seq) {
		res->err = EL_ESTALE; /* granted, canceled or re-queued meanwhile */
		return;
	}
	struct el_lock_session *sess = &t->sessions[s];
	if (sess->last_seq == cmd->seq) {
		sess->last_reply.err = EL_ETIMEDOUT;
		sess->last_reply.queued = 0;
	}
	el_lock__emit(t, res, EL_EV_WAIT_TIMEOUT, s, cmd->seq, 0, lock);
	el_lock__free_claim(t, claim);
	el_lock__settle(t, lock, index, cmd->now_ms, false, res);
}

static void delay_end(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *cmd,
		      struct el_lock_result *res)
{
	const el_slot_t lock = el_lock__find(t, cmd->name, cmd->name_len);
	if (lock == EL_LOCK_NONE) {
		res->err = EL_ENOTFOUND;
		return;
	}
	struct el_lock_entry *entry = &t->locks[lock];
	if (!entry->delayed || entry->delay_token != cmd->token) {
		res->err = EL_ESTALE;
		return;
	}
	/* One permit per DELAY_END, so no entry grants two permits of a
	 * semaphore (its tokens stay strictly increasing); the others wait one
	 * more delay, keyed by this entry's index (a new key the leader's timer
	 * re-arms on). A lock's one delay simply ends. */
	if (--entry->delayed != 0) {
		entry->delay_token = index;
		el_lock__armed_delay(res, lock);
	} else {
		entry->delay_ms = 0;
		entry->delay_token = 0;
	}
	el_lock__settle(t, lock, index, cmd->now_ms, false, res);
}

/* ---- Dispatch ------------------------------------------------------------- */

/* Commands a client sends within its session, with exactly-once seq. */
static void session_request(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *cmd,
			    struct el_lock_result *res)
{
	const el_slot_t s = el_lock_session_slot(t, cmd->session);
	if (s == EL_LOCK_NONE) {
		res->err = EL_EEXPIRED;
		return;
	}
	struct el_lock_session *sess = &t->sessions[s];
	if (replayed(sess, cmd->seq, res))
		return;
	switch (cmd->type) {
	case EL_CMD_ACQUIRE:
	case EL_CMD_CAMPAIGN: acquire(t, index, s, cmd, res); break;
	case EL_CMD_RELEASE:
	case EL_CMD_RESIGN: release(t, index, s, cmd, res); break;
	case EL_CMD_PROCLAIM: proclaim(t, s, cmd, res); break;
	default: watch(t, s, cmd, res); break;
	}
	remember(sess, cmd->seq, res);
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
	res->armed_session = EL_LOCK_NONE;
	res->armed_claim = EL_LOCK_NONE;
	res->n_armed_delays = 0;
	res->armed_delays_lost = false;
}

/* After a command: the invariants of the lock it named (of the whole table
 * when EL_LOCK_AUDIT is 1). Cheap enough to stay on in production: one lock's
 * holders, queue and watches. */
static void check_after(const struct el_lock_table *t, const struct el_lock_cmd *cmd)
{
#if EL_LOCK_AUDIT
	(void)cmd;
	el_lock__check_invariants(t);
#else
	EL_ASSERT(t->n_waiting <= EL_WAITERS_MAX);
	const el_slot_t lock = el_lock__find(t, cmd->name, cmd->name_len);
	if (lock != EL_LOCK_NONE)
		el_lock__check_lock(t, lock);
#endif
}

void el_lock_apply_cmd(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *cmd,
		       struct el_lock_result *res)
{
	EL_ASSERT(t != NULL);
	EL_ASSERT(cmd != NULL);
	EL_ASSERT(res != NULL);
	EL_ASSERT(index > t->last_index); /* tokens rise only if indices do */
	t->last_index = index;
	result_reset(res, cmd->session);
	if (el_lock_cmd_check(cmd) != EL_OK) {
		res->err = EL_EINVAL;
		return;
	}
	switch (cmd->type) {
	case EL_CMD_OPEN_SESSION:
		if (!el_lock__open_replayed(t, cmd, res)) {
			open_session(t, index, cmd, res);
			el_lock__open_remember(t, cmd, res);
		}
		break;
	case EL_CMD_KEEPALIVE:
	case EL_CMD_CLOSE_SESSION:
	case EL_CMD_EXPIRE_SESSION: renew_or_end_session(t, index, cmd, res); break;
	case EL_CMD_WAIT_TIMEOUT: wait_timeout(t, index, cmd, res); break;
	case EL_CMD_DELAY_END: delay_end(t, index, cmd, res); break;
	default: session_request(t, index, cmd, res); break;
	}
	check_after(t, cmd);
}

void el_lock_apply(struct el_lock_table *t, uint64_t index, const uint8_t *data, uint32_t len,
		   struct el_lock_result *res)
{
	struct el_lock_cmd c;
	EL_ASSERT(t != NULL);
	EL_ASSERT(res != NULL);
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
