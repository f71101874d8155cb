/*
 * lock_open.c - exactly-once OPEN_SESSION: a bounded table of recent opens.
 *
 * Every other command carries (session, seq), but an open has no session
 * yet. So the client draws a random 64-bit nonce for each new session and
 * sends it with every attempt of that open; the table remembers, for the last
 * EL_OPENS_MAX opens that carried a nonce, which session each one created. A
 * retry (after a timeout, a leader change, a snapshot or a restart) finds its
 * nonce and gets that session back instead of creating a second one, so a
 * flaky link can no longer fill the session table with orphans.
 *
 * The table is a ring in apply order: the oldest open is forgotten first, so
 * a retry must come within EL_OPENS_MAX opens of its first attempt (a client
 * retries within seconds; the table holds the last EL_OPENS_MAX opens of the
 * whole cluster). A nonce whose session has ended since (expired or closed)
 * answers EL_EEXPIRED: the client opens again with a new nonce. A nonce of 0
 * asks for no deduplication (kept for callers that open once, such as tests).
 *
 * Like the rest of the table it is a pure function of the applied commands,
 * and it travels in snapshots as its own section: [next, [[nonce, session],
 * ...]] with the records in slot order.
 */
#include <string.h>

#include "el_cbor.h"
#include "el_error.h"
#include "el_lock_internal.h"

bool el_lock__open_replayed(const struct el_lock_table *t, const struct el_lock_cmd *c,
			    struct el_lock_result *res)
{
	const struct el_lock_opens *o = &t->opens;
	for (uint32_t i = 0; c->nonce != 0 && i < o->n; i++) {
		if (o->nonce[i] != c->nonce)
			continue;
		res->session = o->session[i];
		res->err = el_lock_session_slot(t, o->session[i]) == EL_LOCK_NONE ? EL_EEXPIRED : EL_OK;
		return true;
	}
	return false;
}

void el_lock__open_remember(struct el_lock_table *t, const struct el_lock_cmd *c,
			    const struct el_lock_result *res)
{
	struct el_lock_opens *o = &t->opens;
	if (c->nonce == 0 || res->err != EL_OK || res->session == 0)
		return; /* a refused open created nothing: a retry may succeed */
	o->nonce[o->next] = c->nonce;
	o->session[o->next] = res->session;
	if (++o->next == EL_OPENS_MAX)
		o->next = 0;
	if (o->n < EL_OPENS_MAX)
		o->n++;
}

/* Records go in slot order; next says which is the oldest once the ring has
 * wrapped (until then it equals the count). */
void el_lock__opens_put(struct el_cbor_enc *e, const struct el_lock_table *t)
{
	const struct el_lock_opens *o = &t->opens;
	el_cbor_put_array(e, 2);
	el_cbor_put_uint(e, o->next);
	el_cbor_put_array(e, o->n);
	for (uint32_t i = 0; i < o->n; i++) {
		el_cbor_put_array(e, 2);
		el_cbor_put_uint(e, o->nonce[i]);
		el_cbor_put_uint(e, o->session[i]);
	}
}

/* Reads the section; fills out unless it is NULL (the validating pass).
 * Session ids are entry indices, so none may exceed last_index. */
bool el_lock__opens_get(struct el_cbor_dec *d, struct el_lock_opens *out, uint64_t last_index)
{
	uint32_t items = 0, n = 0;
	uint64_t next = 0;
	el_cbor_get_array(d, &items, 2);
	el_cbor_get_uint_max(d, EL_OPENS_MAX - 1, &next);
	el_cbor_get_array(d, &n, EL_OPENS_MAX);
	if (items != 2 || (n < EL_OPENS_MAX && next != n))
		return false;
	for (uint32_t i = 0; i < n && el_cbor_dec_error(d) == 0; i++) {
		uint32_t rec = 0;
		uint64_t nonce = 0, session = 0;
		el_cbor_get_array(d, &rec, 2);
		el_cbor_get_uint(d, &nonce);
		el_cbor_get_uint(d, &session);
		if (rec != 2 || nonce == 0 || session == 0 || session > last_index)
			return false;
		if (out != NULL) {
			out->nonce[i] = nonce;
			out->session[i] = session;
		}
	}
	if (out != NULL) {
		out->n = (uint16_t)n;
		out->next = (uint16_t)next;
	}
	return el_cbor_dec_error(d) == 0;
}
