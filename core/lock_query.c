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

static void query_holder(const struct el_lock_table *t, const struct el_lock_claim *C,
			 struct el_lock_query_holder *h)
{
	const struct el_lock_session *S = &t->sessions[C->session];
	EL_ASSERT(S->id != 0); /* a hold always belongs to a live session */
	h->session = S->id;
	h->token = C->token;
	h->grant_ms = C->grant_ms;
	h->count = C->count;
	h->client_len = S->client_len;
	memcpy(h->client, S->client, S->client_len);
}

int el_lock_query(const struct el_lock_table *t, const char *name, uint32_t name_len,
		  struct el_lock_query *q)
{
	EL_ASSERT(t != NULL && q != NULL);
	memset(q, 0, sizeof(*q));
	if (name_len == 0 || name_len > EL_NAME_MAX)
		return EL_EINVAL;
	const uint16_t lock = lk_find(t, name, name_len);
	if (lock == EL_LOCK_NONE)
		return EL_ENOTFOUND;
	const struct el_lock_entry *L = &t->locks[lock];
	q->mode = L->mode;
	q->delayed = L->delayed != 0;
	q->delay_token = L->delay_token;
	q->n_watches = L->n_watches;
	for (uint16_t c = 0; c < EL_CLAIMS_MAX && q->n_holders < L->n_holders; c++) {
		const struct el_lock_claim *C = &t->claims[c];
		if (C->state != EL_CLAIM_HOLD || C->lock != lock)
			continue;
		query_holder(t, C, &q->holders[q->n_holders++]);
		if (C->value != EL_LOCK_NONE) {
			q->value_len = t->values[C->value].len;
			memcpy(q->value, t->values[C->value].data, q->value_len);
		}
	}
	EL_ASSERT(q->n_holders == L->n_holders);
	uint16_t w = L->wait_head;
	for (uint32_t i = 0; i < EL_CLAIMS_MAX && w != EL_LOCK_NONE; i++) {
		const struct el_lock_claim *C = &t->claims[w];
		if (q->n_waiters_listed < EL_QUERY_WAITERS_MAX) {
			struct el_lock_query_waiter *qw = &q->waiters[q->n_waiters_listed++];
			qw->session = t->sessions[C->session].id;
			qw->seq = C->seq;
			qw->wait_ms = C->wait_ms;
			qw->mode = C->mode;
		}
		q->n_waiters++;
		w = C->next;
	}
	return EL_OK;
}

void el_lock_usage(const struct el_lock_table *t, struct el_lock_usage *u)
{
	EL_ASSERT(t != NULL && u != NULL);
	memset(u, 0, sizeof(*u));
	for (uint32_t s = 0; s < EL_SESSIONS_MAX; s++)
		u->sessions += t->sessions[s].id != 0;
	for (uint32_t l = 0; l < EL_LOCKS_MAX; l++)
		u->locks += t->locks[l].name_len != 0;
	for (uint32_t c = 0; c < EL_CLAIMS_MAX; c++) {
		u->holds += t->claims[c].state == EL_CLAIM_HOLD;
		u->waits += t->claims[c].state == EL_CLAIM_WAIT;
	}
	for (uint32_t w = 0; w < EL_WATCHES_MAX; w++)
		u->watches += t->watches[w].lock != EL_LOCK_NONE;
	for (uint32_t v = 0; v < EL_VALUES_MAX; v++)
		u->values += t->values[v].used != 0;
	EL_ASSERT(u->waits == t->n_waiting);
}
