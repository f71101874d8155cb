/*
 * limits.c - [limits] that keep one client identity from taking the lock
 * table from the others (cmd/edgelockd/README.md, "Limits"):
 *
 *   claims_per_client   locks, semaphore permits and campaigns an identity
 *                       holds or waits for (the claims of its sessions);
 *   watches_per_client  the watches of its sessions;
 *   max_session_ttl_ms  the longest lease an OPEN_SESSION may ask for, so a
 *                       client gone for good frees its locks in minutes.
 *
 * The leader checks ACQUIRE, CAMPAIGN and WATCH before proposing them: a
 * request over the limit is answered EL_EFULL and nothing is proposed.
 * Renewals, releases, resigns, unwatches and closes are never checked.
 *
 * Counting: d->owners knows which sessions each identity owns (the owner is
 * the first word of the session's client field, stamped by auth.c), and an
 * identity's count walks its own sessions' claim and watch lists
 * (el_lock.h): O(that identity's sessions and claims), never the table's
 * size. The count is kept while the table's index stays the same, so a
 * flood of refused requests costs one walk per applied entry at most. The
 * requests in flight (submitted, not answered) count too, so a pipelined
 * burst cannot overshoot; for a moment after its entry applies a request
 * counts twice, which only errs on the side of refusing.
 *
 * Who owns what is rebuilt from the table (one walk of the session slots)
 * when this node starts leading, and once more when it has applied every
 * entry of earlier leaders (those may open sessions and take claims this
 * node never saw requested). Between those, a session joins its identity
 * when a request names it, and one that has ended leaves it when a walk
 * finds its slot holding another session. A rebuild forgets the requests
 * in flight; they count once their entries apply.
 */
#include <stdio.h>
#include <string.h>

#include "el_daemon.h"
#include "el_error.h"
#include "el_platform.h"

static const char *const use_key[EL_D_USES] = { "claims_per_client", "watches_per_client" };
static const char *const use_what[EL_D_USES] = { "claims held or waited for", "watches" };

static enum el_d_use use_of(uint8_t type)
{
	return type == EL_CW_WATCH ? EL_D_WATCHES : EL_D_CLAIMS;
}

static uint32_t limit_of(const struct el_daemon *d, enum el_d_use u)
{
	return u == EL_D_WATCHES ? d->cfg.watches_per_client : d->cfg.claims_per_client;
}

/* ---- refusals in the log ----------------------------------------------------- */

#define REFUSAL_LOG_MS 1000u

/* A flood of requests must not become a flood of lines: one a second per
 * limit, the rest counted. */
uint64_t el_d_refusal(struct el_daemon *d, struct el_d_refusals *r, const char *who,
		      const char *key, uint32_t limit)
{
	r->refused++;
	r->key = key;
	r->limit = limit;
	snprintf(r->who, sizeof r->who, "%s", who[0] != '\0' ? who : "anonymous");
	if (r->logged_ms != 0 && d->now_ms < r->logged_ms + REFUSAL_LOG_MS)
		return 0;
	const uint64_t n = r->refused;
	r->logged_ms = d->now_ms;
	r->refused = 0;
	return n;
}

/* The refusals held back, once their second is over (or the node stops):
 * a burst's first refusal got its line at once, the rest used to wait for
 * the next refusal's line, minutes later or never. */
static void refusals_flush(struct el_daemon *d, struct el_d_refusals *r)
{
	if (r->refused == 0 || (!d->stopping && d->now_ms < r->logged_ms + REFUSAL_LOG_MS))
		return;
	el_log(EL_LOG_WARN, "[limits] %s = %u: %llu more refused in the last second (the last of "
	       "client %s)", r->key, r->limit, (unsigned long long)r->refused, r->who);
	r->logged_ms = d->now_ms;
	r->refused = 0;
}

void el_d_limits_turn(struct el_daemon *d)
{
	for (uint32_t u = 0; u <= EL_D_USES; u++)
		refusals_flush(d, &d->owners.refusals[u]);
	refusals_flush(d, &d->quota.refusals);
	refusals_flush(d, &d->quota.conn_refusals);
}

int el_d_ttl_check(struct el_daemon *d, const struct el_d_client *cl, const struct el_cw_msg *q)
{
	if (q->type != EL_CW_OPEN_SESSION || q->ttl_ms <= d->cfg.max_session_ttl_ms)
		return EL_OK;
	struct el_d_refusals *r = &d->owners.refusals[EL_D_USES];
	const uint64_t n = el_d_refusal(d, r, el_d_identity(cl), "max_session_ttl_ms",
					d->cfg.max_session_ttl_ms);
	if (n != 0)
		el_log(EL_LOG_WARN, "client %s: OPEN_SESSION refused (EL_EINVAL): ttl_ms %u is over "
		       "[limits] max_session_ttl_ms = %u (%llu refused in the last second)", r->who,
		       q->ttl_ms, d->cfg.max_session_ttl_ms, (unsigned long long)n);
	return EL_EINVAL;
}

/* ---- who owns which sessions ------------------------------------------------ */

/* The identity named, found or taken; UINT32_MAX if none is free (never
 * while at most 3/4 are in use, which el_d_use_quota keeps). */
static uint32_t owner_find(struct el_d_owners *o, const char *name, uint32_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	for (uint32_t k = 0; k < EL_D_OWNERS; k++) {
		const uint32_t i = (h + k) % EL_D_OWNERS;
		struct el_d_owner *w = &o->owner[i];
		if (w->gen == o->gen && w->name_len == len && memcmp(w->name, name, len) == 0)
			return i;
		if (w->gen != o->gen) {
			memset(w, 0, sizeof *w);
			w->gen = o->gen;
			w->name_len = (uint8_t)len;
			memcpy(w->name, name, len);
			w->first = EL_LOCK_NONE;
			o->n++;
			return i;
		}
	}
	return UINT32_MAX;
}

static void disown(struct el_d_owners *o, el_slot_t s)
{
	struct el_d_owned *x = &o->owned[s];
	struct el_d_owner *w = &o->owner[x->owner];
	if (x->prev == EL_LOCK_NONE)
		w->first = x->next;
	else
		o->owned[x->prev].next = x->next;
	if (x->next != EL_LOCK_NONE)
		o->owned[x->next].prev = x->prev;
	x->gen = 0;
}

/* Session id in slot s is owner i's (a session's owner never changes). */
static void own(struct el_d_owners *o, el_slot_t s, uint64_t id, uint32_t i)
{
	struct el_d_owned *x = &o->owned[s];
	if (x->gen == o->gen && x->session == id)
		return;
	if (x->gen == o->gen)
		disown(o, s); /* the slot's former session ended */
	struct el_d_owner *w = &o->owner[i];
	*x = (struct el_d_owned){ .session = id, .gen = o->gen, .owner = i, .next = w->first,
				  .prev = EL_LOCK_NONE };
	if (w->first != EL_LOCK_NONE)
		o->owned[w->first].prev = s;
	w->first = s;
	w->counted_at = 0; /* it may bring claims of its own */
}

/* The identity a session's client field names: up to its first space
 * (auth.c writes "<identity> <label>"); false for a field without one. */
static bool owner_name(const struct el_lock_session *sess, uint32_t *len)
{
	const char *sp = memchr(sess->client, ' ', sess->client_len);
	*len = sp != NULL ? (uint32_t)(sp - sess->client) : 0;
	return sp != NULL;
}

/* Forget every record (a new gen) and learn the table's sessions again. */
static void rebuild(struct el_daemon *d)
{
	struct el_d_owners *o = &d->owners;
	const struct el_lock_table *t = el_node_table(d->node);
	if (++o->gen == 0)
		o->gen = 1; /* 0 marks records never used */
	o->n = 0;
	for (uint32_t s = 0; s < EL_SESSIONS_MAX; s++) {
		uint32_t len, i;
		if (t->sessions[s].id != 0 && owner_name(&t->sessions[s], &len) &&
		    (i = owner_find(o, t->sessions[s].client, len)) != UINT32_MAX)
			own(o, (el_slot_t)s, t->sessions[s].id, i);
	}
}

/* Built for this term, and settled once the entries of earlier leaders
 * (all at or below the log's last index when this node began to lead)
 * are applied. */
static void keep_current(struct el_daemon *d)
{
	struct el_d_owners *o = &d->owners;
	const struct el_raft *r = el_node_raft(d->node);
	if (o->term != el_raft_term(r)) {
		o->term = el_raft_term(r);
		o->settle_index = el_raft_last_index(r);
		rebuild(d);
	} else if (o->settle_index != 0 && el_raft_applied(r) >= o->settle_index) {
		o->settle_index = 0;
		rebuild(d);
	} else if (o->n >= EL_D_OWNERS / 4 * 3) {
		rebuild(d); /* drops the identities left without sessions */
	}
}

/* ---- counting ------------------------------------------------------------------ */

void el_d_session_uses(const struct el_lock_table *t, el_slot_t s, uint32_t n[EL_D_USES])
{
#if EL_INDEXED
	for (el_slot_t c = t->sessions[s].claims; c != EL_LOCK_NONE; c = t->claims[c].sess_next)
		n[EL_D_CLAIMS]++;
	for (el_slot_t w = t->sessions[s].watches; w != EL_LOCK_NONE; w = t->watches[w].sess_next)
		n[EL_D_WATCHES]++;
#else /* the small profile: no per-session lists, pools of a few records */
	for (uint32_t c = 0; c < EL_CLAIMS_MAX; c++)
		n[EL_D_CLAIMS] += t->claims[c].state != EL_CLAIM_FREE && t->claims[c].session == s;
	for (uint32_t w = 0; w < EL_WATCHES_MAX; w++)
		n[EL_D_WATCHES] += t->watches[w].used != 0 && t->watches[w].session == s;
#endif
}

static bool lock_named(const struct el_lock_table *t, el_slot_t lock, const struct el_cw_msg *q)
{
	return t->locks[lock].name_len == q->name_len &&
	       memcmp(t->locks[lock].name, q->name, q->name_len) == 0;
}

/* Whether session slot s already claims (u: watches) q's name: then q
 * takes no new record (a re-acquire counts up, a second wait is EL_EBUSY). */
static bool session_has(const struct el_lock_table *t, el_slot_t s, enum el_d_use u,
			const struct el_cw_msg *q)
{
#if EL_INDEXED
	if (u == EL_D_CLAIMS) {
		for (el_slot_t c = t->sessions[s].claims; c != EL_LOCK_NONE; c = t->claims[c].sess_next)
			if (lock_named(t, t->claims[c].lock, q))
				return true;
	} else {
		for (el_slot_t w = t->sessions[s].watches; w != EL_LOCK_NONE; w = t->watches[w].sess_next)
			if (lock_named(t, t->watches[w].lock, q))
				return true;
	}
#else
	for (uint32_t c = 0; u == EL_D_CLAIMS && c < EL_CLAIMS_MAX; c++)
		if (t->claims[c].state != EL_CLAIM_FREE && t->claims[c].session == s &&
		    lock_named(t, t->claims[c].lock, q))
			return true;
	for (uint32_t w = 0; u == EL_D_WATCHES && w < EL_WATCHES_MAX; w++)
		if (t->watches[w].used != 0 && t->watches[w].session == s &&
		    lock_named(t, t->watches[w].lock, q))
			return true;
#endif
	return false;
}

/* Owner i's claims and watches in the table (kept while its index stays). */
static const uint32_t *owner_count(struct el_daemon *d, uint32_t i)
{
	struct el_d_owners *o = &d->owners;
	struct el_d_owner *w = &o->owner[i];
	const struct el_lock_table *t = el_node_table(d->node);
	if (w->counted_at == t->last_index + 1)
		return w->count;
	memset(w->count, 0, sizeof w->count);
	for (el_slot_t s = w->first, next; s != EL_LOCK_NONE; s = next) {
		next = o->owned[s].next;
		if (t->sessions[s].id != o->owned[s].session)
			disown(o, s); /* ended */
		else
			el_d_session_uses(t, s, w->count);
	}
	w->counted_at = t->last_index + 1;
	return w->count;
}

static void refused(struct el_daemon *d, const struct el_cw_msg *q, const char *id,
		    enum el_d_use u, uint32_t count)
{
	struct el_d_refusals *r = &d->owners.refusals[u];
	const uint64_t n = el_d_refusal(d, r, id, use_key[u], limit_of(d, u));
	if (n == 0)
		return;
	char name[EL_LOG_NAME_CAP(EL_NAME_MAX)];
	el_log(EL_LOG_WARN, "client %s: %s %s refused (EL_EFULL): %u %s or requested, "
	       "[limits] %s = %u (%llu refused in the last second)", r->who,
	       el_d_request_name(q->type), el_log_name(name, sizeof name, q->name, q->name_len),
	       count, use_what[u], use_key[u], limit_of(d, u), (unsigned long long)n);
}

int el_d_use_quota(struct el_daemon *d, const struct el_d_client *cl, const struct el_cw_msg *q,
		   uint32_t *charge)
{
	*charge = 0;
	const enum el_d_use u = use_of(q->type);
	const char *id = el_d_identity(cl);
	const uint32_t len = (uint32_t)strlen(id);
	if ((q->type != EL_CW_ACQUIRE && q->type != EL_CW_CAMPAIGN && q->type != EL_CW_WATCH) ||
	    limit_of(d, u) == 0 || el_raft_state(el_node_raft(d->node)) != EL_LEADER ||
	    len >= EL_CLIENT_NAME_MAX) /* an identity that long opens no session */
		return EL_OK;
	keep_current(d);
	struct el_d_owners *o = &d->owners;
	const uint32_t i = owner_find(o, id, len);
	if (i == UINT32_MAX)
		return EL_OK;
	const struct el_lock_table *t = el_node_table(d->node);
	el_slot_t s = el_lock_session_slot(t, q->session);
	if (s != EL_LOCK_NONE && t->sessions[s].id != q->session)
		s = EL_LOCK_NONE;
	if (s != EL_LOCK_NONE) /* el_d_authorize made sure it is this identity's */
		own(o, s, q->session, i);
	const uint32_t n = owner_count(d, i)[u] + o->owner[i].flight[u];
	if (n >= limit_of(d, u) && (s == EL_LOCK_NONE || !session_has(t, s, u, q))) {
		refused(d, q, id, u, n);
		return EL_EFULL;
	}
	*charge = i + 1;
	return EL_OK;
}

void el_d_charge(struct el_daemon *d, struct el_d_pending *p, uint32_t charge)
{
	p->owner_gen = 0;
	if (charge == 0)
		return;
	p->owner = charge - 1;
	p->owner_gen = d->owners.gen;
	d->owners.owner[p->owner].flight[use_of(p->type)]++;
}

void el_d_uncharge(struct el_daemon *d, struct el_d_pending *p)
{
	struct el_d_owner *w = &d->owners.owner[p->owner];
	if (p->owner_gen != 0 && p->owner_gen == d->owners.gen && w->flight[use_of(p->type)] > 0)
		w->flight[use_of(p->type)]--;
	p->owner_gen = 0;
}
