/*
 * lock_query.c - read-only views of the lock table: one lock's holders,
 * queue and election value (el_lock_query), and pool usage for metrics.
 *
 * The node serves a query only after a ReadIndex round, so the answer is
 * linearizable; the remaining lease of each holder comes from the leader's
 * timer table, not from here.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_lock_internal.h"

static void query_holder(const struct el_lock_table *t, const struct el_lock_claim *req,
			 struct el_lock_query_holder *h)
{
	const struct el_lock_session *sess = &t->sessions[req->session];
	EL_ASSERT(sess->id != 0); /* a hold always belongs to a live session */
	h->session = sess->id;
	h->token = req->token;
	h->grant_ms = req->grant_ms;
	h->count = req->count;
	h->client_len = sess->client_len;
	memcpy(h->client, sess->client, sess->client_len);
}

int el_lock_query(const struct el_lock_table *t, const char *name, uint32_t name_len,
		  struct el_lock_query *q)
{
	EL_ASSERT(t != NULL);
	EL_ASSERT(q != NULL);
	memset(q, 0, sizeof(*q));
	if (name_len == 0 || name_len > EL_NAME_MAX)
		return EL_EINVAL;
	const el_slot_t lock = el_lock__find(t, name, name_len);
	if (lock == EL_LOCK_NONE)
		return EL_ENOTFOUND;
	const struct el_lock_entry *entry = &t->locks[lock];
	q->mode = entry->mode;
	q->limit = entry->limit;
	q->n_delayed = entry->delayed;
	q->delayed = entry->delayed != 0;
	q->delay_token = entry->delay_token;
	q->n_watches = entry->n_watches;
	EL_LOCK_FOR_HOLDERS(t, lock, c) {
		const struct el_lock_claim *req = &t->claims[c];
		EL_ASSERT(req->state == EL_CLAIM_HOLD);
		EL_ASSERT(q->n_holders < entry->n_holders); /* the list has no cycle */
		query_holder(t, req, &q->holders[q->n_holders++]);
		if (req->value != EL_LOCK_NONE) {
			q->value_len = t->values[req->value].len;
			memcpy(q->value, t->values[req->value].data, q->value_len);
		}
	}
	EL_ASSERT(q->n_holders == entry->n_holders);
	el_slot_t w = entry->wait_head;
	for (uint32_t i = 0; i < EL_CLAIMS_MAX && w != EL_LOCK_NONE; i++) {
		const struct el_lock_claim *req = &t->claims[w];
		if (q->n_waiters_listed < EL_QUERY_WAITERS_MAX) {
			struct el_lock_query_waiter *qw = &q->waiters[q->n_waiters_listed++];
			qw->session = t->sessions[req->session].id;
			qw->seq = req->seq;
			qw->wait_ms = req->wait_ms;
			qw->mode = req->mode;
		}
		q->n_waiters++;
		w = req->next;
	}
	return EL_OK;
}

el_slot_t el_lock_next_lock(const struct el_lock_table *t, uint32_t from)
{
	EL_ASSERT(t != NULL);
	return el_lock__next_used(t, EL_POOL_LOCKS, from);
}

void el_lock_usage(const struct el_lock_table *t, struct el_lock_usage *u)
{
	EL_ASSERT(t != NULL);
	EL_ASSERT(u != NULL);
	memset(u, 0, sizeof(*u));
	EL_LOCK_FOR_EACH(t, EL_POOL_SESSIONS, s)
		u->sessions++;
	EL_LOCK_FOR_EACH(t, EL_POOL_LOCKS, l)
		u->locks++;
	EL_LOCK_FOR_EACH(t, EL_POOL_CLAIMS, c) {
		u->holds += t->claims[c].state == EL_CLAIM_HOLD;
		u->waits += t->claims[c].state == EL_CLAIM_WAIT;
	}
	EL_LOCK_FOR_EACH(t, EL_POOL_WATCHES, w)
		u->watches++;
	EL_LOCK_FOR_EACH(t, EL_POOL_VALUES, v)
		u->values++;
	EL_ASSERT(u->waits == t->n_waiting);
}
