/*
 * client_session.c - libedgelock's sessions (edgelock.h): opening with a
 * nonce, the keepalive thread and the local lease deadline (the jeopardy
 * rule), and the lock, election and query calls that run in a session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "el_cbor.h"
#include "el_client_impl.h"

/* Clocks drift: the local deadline gives up 1% of the TTL plus 50 ms. */
static uint64_t margin_ms(uint32_t ttl_ms)
{
	return ttl_ms / 100u + 50u;
}

static uint64_t lease_end(uint64_t sent_ms, uint32_t ttl_ms)
{
	const uint64_t m = margin_ms(ttl_ms);
	return ttl_ms > m ? sent_ms + ttl_ms - m : sent_ms;
}

static void cw_name(struct el_cw_msg *m, const char *name)
{
	const size_t n = strlen(name);
	m->name_len = (uint8_t)(n < sizeof m->name ? n : sizeof m->name);
	memcpy(m->name, name, m->name_len);
}

/* A name the cluster can take: 1 to EL_NAME_MAX bytes of UTF-8 (the wire
 * carries it as CBOR text, which must be UTF-8: the daemon would refuse
 * the frame, and its EL_EINVAL reads as another error). */
static int name_ok(const char *name)
{
	const size_t n = name != NULL ? strlen(name) : 0;
	if (n == 0 || n > EL_NAME_MAX) {
		el_client__fail("a lock name is 1 to %d bytes", EL_NAME_MAX);
		return EL_EINVAL;
	}
	if (!el_cbor_utf8_valid((const uint8_t *)name, (uint32_t)n)) {
		el_client__fail("a lock name is UTF-8 text; this one is not");
		return EL_EINVAL;
	}
	return 0;
}

uint64_t el_session_id(const el_session *s)
{
	return s != NULL ? s->id : 0;
}

void el_session_set_lock_delay(el_session *s, uint32_t delay_ms)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->client->mu);
	s->lock_delay_ms = delay_ms;
	pthread_mutex_unlock(&s->client->mu);
}

/* s's lock-delay (el_session_set_lock_delay may change it from another
 * thread). */
static uint32_t lock_delay(el_session *s)
{
	pthread_mutex_lock(&s->client->mu);
	const uint32_t ms = s->lock_delay_ms;
	pthread_mutex_unlock(&s->client->mu);
	return ms;
}

/* ---- Opening, renewing, closing ------------------------------------------ */

/* Has s's local lease run out? Final once it has. Under c->mu. */
static bool lost_now(el_session *s)
{
	if (el_client__now_ms() >= s->deadline_ms)
		s->lost = true;
	return s->lost;
}

/* CLOSE_SESSION for id, best-effort, by deadline_ms: EL_OK when the cluster
 * closed it or had already expired it. Also for a session the client sees
 * as lost: the cluster may still hold it (its deadline is later than ours),
 * and a close releases its locks now, without their lock-delay. */
static int close_on_server(el_client *c, uint64_t id, uint64_t deadline_ms)
{
	struct el_cw_msg *req = calloc(2, sizeof(*req));
	if (req == NULL)
		return EL_EFULL;
	req->type = EL_CW_CLOSE_SESSION;
	req->session = id;
	int rc = el_client__request_until(c, req, req + 1, deadline_ms);
	if (rc == EL_OK && req[1].err != EL_OK && req[1].err != EL_EEXPIRED)
		rc = req[1].err;
	free(req);
	return rc;
}

/* OPEN_SESSION for s (s->ttl_ms): its id, and its local lease counted from
 * the send, so time spent dialing counts against it. */
static int open_on_server(el_client *c, el_session *s)
{
	/* The daemon writes "<CN> <label>" into the session's owner field, the
	 * CN whole (ownership rests on it), and refuses one that cannot fit:
	 * say why here, not as a guess about the ttl (an outside tester). */
	const size_t cn = c->ident != NULL ? strlen(el_ident_name(c->ident)) : 0;
	if (cn + 1 > EL_CLIENT_NAME_MAX) {
		el_client__fail("open session: %s: this client's certificate CN is %zu bytes, and "
				"a session's owner holds at most %d; use a certificate with a "
				"shorter CN (docs/security.md)", el_strerror(EL_EINVAL), cn,
				EL_CLIENT_NAME_MAX - 1);
		return EL_EINVAL;
	}
	struct el_cw_msg *req = calloc(2, sizeof(*req));
	if (req == NULL)
		return EL_EFULL;
	struct el_cw_msg *rep = req + 1;
	req->type = EL_CW_OPEN_SESSION;
	req->ttl_ms = s->ttl_ms;
	/* A retried open finds the session the first attempt made. */
	while (req->nonce == 0)
		if (getrandom(&req->nonce, sizeof req->nonce, 0) != sizeof req->nonce)
			req->nonce = el_client__now_ms() ^ (uint64_t)(uintptr_t)s;
	req->client_len = (uint8_t)strlen(c->name);
	memcpy(req->client, c->name, req->client_len);
	const uint64_t sent = el_client__now_ms();
	int rc = el_client_request(c, req, rep);
	if (rc == EL_OK && rep->err != EL_OK) {
		rc = rep->err;
		if (rc == EL_EFULL) /* the leader's log says which */
			el_client__fail("open session: %s: the cluster's session table is full, or "
					"this client's identity has reached its [limits] "
					"sessions_per_client; close a session or retry later",
					el_strerror(rc));
		else if (rc == EL_EINVAL) /* the reply cannot say which: the server's log does */
			el_client__fail("open session: %s: is the ttl over the cluster's [limits] "
					"max_session_ttl_ms, or this certificate's CN longer than "
					"a session's owner holds (7 bytes on a mixed cluster)?",
					el_strerror(rc));
		else if (rc == EL_EPERM) /* the [acl] (auth.c); a bare "permission denied" named nothing */
			el_client__fail("open session: %s: the server's [acl] grants %s%s none of "
					"lock, elect and observe, one of which a session needs "
					"(docs/security.md)", el_strerror(rc),
					c->ident != NULL ? "this client's CN " : "an anonymous client",
					c->ident != NULL ? el_ident_name(c->ident) : "");
		else
			el_client__fail("open session: %s", el_strerror(rc));
	}
	if (rc == EL_OK) {
		s->id = rep->session;
		s->deadline_ms = lease_end(sent, s->ttl_ms);
		s->next_renew_ms = sent + s->ttl_ms / 3u;
	}
	free(req);
	return rc;
}

/* Hand s to the keepers: EL_ETIMEDOUT when its lease ran out before the
 * reply came (a slow dial: an endpoint that accepts TCP and never answers
 * TLS costs up to 2 s), EL_EFULL when the client has no room for it. */
static int adopt(el_client *c, el_session *s)
{
	int rc = EL_OK;
	pthread_mutex_lock(&c->mu);
	s->ev_seen = c->ev_count;
	s->seen_reconnects = c->reconnects;
	unsigned i = 0;
	while (i < EL_CLIENT_SESSIONS_MAX && c->sessions[i] != NULL)
		i++;
	if (lost_now(s)) {
		rc = EL_ETIMEDOUT;
	} else if (i == EL_CLIENT_SESSIONS_MAX) {
		rc = EL_EFULL;
	} else {
		c->sessions[i] = s;
		pthread_cond_signal(&c->keeper_cv); /* it may be due first */
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int el_session_open(el_client *c, uint32_t ttl_ms, el_session **out)
{
	if (c == NULL || out == NULL)
		return el_client__null("el_session_open");
	*out = NULL;
	if (ttl_ms < 200) {
		el_client__fail("a session's TTL is at least 200 ms");
		return EL_EINVAL;
	}
	el_session *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return EL_EFULL;
	s->client = c;
	s->ttl_ms = ttl_ms;
	int rc = open_on_server(c, s);
	if (rc == EL_OK)
		rc = adopt(c, s);
	if (rc != EL_OK && s->id != 0) {
		/* Opened on the cluster but not handed out: nobody would close
		 * it, and a session lost on arrival must not be used at all. */
		(void)close_on_server(c, s->id, el_client__now_ms() + c->timeout_ms);
		if (rc == EL_ETIMEDOUT)
			el_client__fail("open session: its %u ms lease ran out before the "
					"reply came (a slow cluster, or this process starved of CPU or "
					"stopped; a longer ttl helps); closed it", (unsigned)ttl_ms);
		else
			el_client__fail("more than %d sessions on one client",
					EL_CLIENT_SESSIONS_MAX);
	}
	if (rc != EL_OK) {
		free(s);
		return rc;
	}
	*out = s;
	return EL_OK;
}

/* ---- Renewing --------------------------------------------------------------
 *
 * Keepers (threads) renew the sessions, each one renewal at a time. The
 * client starts with one and starts another (up to EL_CLIENT_KEEPERS_MAX)
 * when a session comes due while every keeper is busy: a renewal waits
 * for the cluster's sync, and renewals sent together share one (group
 * commit), where one keeper made 64 sessions on an SD card's disk cost 64
 * syncs in a row, longer than their TTL (client_safety.c, many-sessions).
 * A client with one session, or a fast cluster, keeps one thread.
 */

/* One renewal of s, without c->mu. */
static void renew(el_client *c, el_session *s)
{
	struct el_cw_msg *req = calloc(2, sizeof(*req));
	if (req == NULL) { /* try again soon: retire waits while it stays in flight */
		pthread_mutex_lock(&c->mu);
		s->next_renew_ms = el_client__now_ms() + 500u;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		return;
	}
	req->type = EL_CW_KEEPALIVE;
	req->session = s->id;
	const uint64_t sent = el_client__now_ms();
	const int rc = el_client__renew(c, s, req, req + 1, s->ttl_ms / 3u);
	const int32_t err = rc == EL_OK ? req[1].err : rc;
	free(req);
	pthread_mutex_lock(&c->mu);
	if (err == EL_OK) {
		const uint64_t end = lease_end(sent, s->ttl_ms);
		if (end > s->deadline_ms && !s->lost)
			s->deadline_ms = end;
		s->in_doubt = false;
		s->next_renew_ms = sent + s->ttl_ms / 3u;
	} else {
		s->lost |= err == EL_EEXPIRED;
		s->in_doubt = true;
		s->next_renew_ms = el_client__now_ms() + (s->ttl_ms / 10u > 500u ? 500u : s->ttl_ms / 10u);
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* The session due first and not in flight, or NULL; *due_ms its time.
 * Under c->mu. */
static el_session *next_due(el_client *c, uint64_t *due_ms)
{
	el_session *best = NULL;
	for (unsigned i = 0; i < EL_CLIENT_SESSIONS_MAX; i++) {
		el_session *s = c->sessions[i];
		if (s == NULL || s->lost || s->closed || s->next_renew_ms == UINT64_MAX)
			continue;
		if (best == NULL || s->next_renew_ms < best->next_renew_ms)
			best = s;
	}
	*due_ms = best != NULL ? best->next_renew_ms : el_client__now_ms() + 1000u;
	return best;
}

/* A keeper just took a session: if another is due already, wake an idle
 * keeper for it, or start one (none once the client closes). A keeper that
 * cannot start leaves the renewals to the others. Under c->mu. */
static void more_keepers(el_client *c)
{
	uint64_t due;
	if (c->closing || next_due(c, &due) == NULL || el_client__now_ms() < due)
		return;
	if (c->keepers_idle > 0)
		pthread_cond_signal(&c->keeper_cv);
	else if (c->n_keepers < EL_CLIENT_KEEPERS_MAX &&
		 pthread_create(&c->keepers[c->n_keepers], NULL, el_client__keeper_main, c) == 0)
		c->n_keepers++;
}

void *el_client__keeper_main(void *arg)
{
	el_client *c = arg;
	pthread_mutex_lock(&c->mu);
	while (!c->closing) {
		uint64_t due;
		el_session *s = next_due(c, &due);
		if (s == NULL || el_client__now_ms() < due) {
			/* its own condvar: replies and events do not wake it */
			c->keepers_idle++;
			el_client__wait_on(&c->keeper_cv, &c->mu, due);
			c->keepers_idle--;
			continue;
		}
		if (el_client__now_ms() >= s->deadline_ms)
			s->lost = true; /* final: the cluster may have moved on */
		if (s->lost)
			continue;
		s->next_renew_ms = UINT64_MAX; /* in flight: ours */
		more_keepers(c);
		pthread_mutex_unlock(&c->mu);
		renew(c, s);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

enum el_lease_state el_session_state(el_session *s, uint64_t *left_ms)
{
	if (s == NULL) { /* no session holds nothing */
		if (left_ms != NULL)
			*left_ms = 0;
		return EL_LEASE_LOST;
	}
	el_client *c = s->client;
	pthread_mutex_lock(&c->mu);
	const uint64_t now = el_client__now_ms();
	(void)lost_now(s);
	const enum el_lease_state st = s->lost ? EL_LEASE_LOST
				       : s->in_doubt ? EL_LEASE_IN_DOUBT : EL_LEASE_OK;
	if (left_ms != NULL)
		*left_ms = s->lost ? 0 : s->deadline_ms - now;
	pthread_mutex_unlock(&c->mu);
	return st;
}

/* Take s off the keepers' list and wait out a renewal in flight (which
 * gives up at its next try once s is closed: abandoned). Under c->mu. */
static void retire(el_client *c, el_session *s)
{
	s->closed = true;
	pthread_cond_broadcast(&c->cv); /* el_next_event on s returns */
	for (unsigned i = 0; i < EL_CLIENT_SESSIONS_MAX; i++)
		if (c->sessions[i] == s)
			c->sessions[i] = NULL;
	while (s->next_renew_ms == UINT64_MAX) /* a renewal in flight */
		el_client__wait(c, el_client__now_ms() + 50u);
}

/* Wait until no el_next_event is inside s (each returns once it sees
 * s->closed, within a second when it reads the connection itself), so s
 * can be freed. Under c->mu. */
static void drain_users(el_client *c, const el_session *s)
{
	while (s->users > 0)
		el_client__wait(c, el_client__now_ms() + 50u);
}

/* How long el_session_close tries to close a session already lost here. */
#define LOST_CLOSE_MS 1000u

int el_session_close(el_session *s)
{
	if (s == NULL)
		return EL_OK;
	el_client *c = s->client;
	const uint64_t start = el_client__now_ms(); /* a renewal waited out counts */
	pthread_mutex_lock(&c->mu);
	/* Claim s as a call does: a call (or a second close) that comes while
	 * this one is under way gets EL_EBUSY instead of a session freed under
	 * it. closed: a close already began. */
	const bool busy = s->busy || s->closed, lost = lost_now(s);
	if (!busy) {
		s->busy = true;
		retire(c, s);
	}
	pthread_mutex_unlock(&c->mu);
	if (busy) { /* freeing s would pull it from under that call */
		el_client__fail("close session %llu: another call on it is in progress (one call "
				"at a time per session)", (unsigned long long)s->id);
		return EL_EBUSY;
	}
	/* A session lost here is about to expire on the cluster too (its
	 * deadline there is at most the drift margin later): a close then only
	 * spares its locks their lock-delay, worth a short try, not a whole
	 * timeout_ms with the cluster unreachable (a CLI lingered 5 s so,
	 * found by an outside tester). */
	const uint64_t budget = lost && c->timeout_ms > LOST_CLOSE_MS ? LOST_CLOSE_MS : c->timeout_ms;
	const int rc = close_on_server(c, s->id, start + budget);
	pthread_mutex_lock(&c->mu);
	drain_users(c, s);
	pthread_mutex_unlock(&c->mu);
	free(s);
	return rc;
}

/* el_client_close: close every session still open, within one timeout in
 * all, so their locks are released now rather than after TTL + lock-delay,
 * and free them (a call still running on one is the caller's bug: the
 * client goes too). The keepers stop first: a renewal in flight gives up at
 * its next try (request_until), where waiting it out before the closes
 * added up to TTL/3 to the timeout. */
void el_client__close_sessions(el_client *c)
{
	el_session *open[EL_CLIENT_SESSIONS_MAX];
	unsigned n = 0;
	pthread_mutex_lock(&c->mu);
	c->closing = true;
	pthread_cond_broadcast(&c->keeper_cv);
	pthread_cond_broadcast(&c->cv);
	for (unsigned i = 0; i < EL_CLIENT_SESSIONS_MAX; i++)
		if (c->sessions[i] != NULL) {
			open[n++] = c->sessions[i];
			c->sessions[i]->closed = true;
			c->sessions[i] = NULL;
		}
	pthread_mutex_unlock(&c->mu);
	const uint64_t deadline_ms = el_client__now_ms() + c->timeout_ms;
	for (unsigned i = 0; i < n; i++)
		(void)close_on_server(c, open[i]->id, deadline_ms);
	pthread_mutex_lock(&c->mu);
	for (unsigned i = 0; i < n; i++) {
		retire(c, open[i]); /* waits out a renewal still in flight */
		drain_users(c, open[i]);
	}
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < n; i++)
		free(open[i]);
}

/* ---- Locks and elections ---------------------------------------------------- */

/*
 * One call at a time per session. The cluster keeps only the last seq of a
 * session, to answer a re-sent request from its stored reply: two calls in
 * flight at once on one session would make a re-send of the first one
 * stale while its wait stays queued on the cluster (wait_grant then has to
 * learn its end from the lock's holders and waiters), and a request
 * overtaken on the wire by a newer seq gets EL_ESTALE without acting, a
 * false failure. Serializing the
 * calls could deadlock (a call waiting for a lock that only a later call of
 * the same session frees, through another session's wait), so a second
 * call fails at once. Keepalives are the keeper's and carry no seq.
 */
static int begin_call(el_session *s)
{
	if (s == NULL)
		return el_client__null("a session call");
	el_client *c = s->client;
	pthread_mutex_lock(&c->mu);
	const bool busy = s->busy, closed = s->closed; /* closed: being closed */
	if (!busy && !closed)
		s->busy = true;
	pthread_mutex_unlock(&c->mu);
	if (busy || closed)
		el_client__fail("session %llu: %s", (unsigned long long)s->id,
				busy ? "another call on it (or its close) is in progress: one call "
				       "at a time per session (use a session per thread)"
				     : "it is being closed");
	return busy || closed ? EL_EBUSY : EL_OK;
}

static void end_call(el_session *s)
{
	pthread_mutex_lock(&s->client->mu);
	s->busy = false;
	pthread_mutex_unlock(&s->client->mu);
}

/* An event that ends (session, seq)'s wait, from the queue; under c->mu. */
static const struct el_cw_msg *find_end(el_client *c, uint64_t session, uint64_t seq)
{
	for (unsigned i = 0; i < c->n_events; i++) {
		const struct el_cw_msg *e = &c->events[(c->ev_head + i) % EL_CLIENT_EVENTS_MAX];
		if (e->session == session && e->seq == seq &&
		    (e->kind == EL_CW_EV_GRANTED || e->kind == EL_CW_EV_WAIT_TIMEOUT ||
		     e->kind == EL_CW_EV_CANCELED))
			return e;
	}
	return NULL;
}

/* The deadline of a re-sent request of s: timeout_ms, cut at the lease's
 * local end. Past that end the call returns EL_EEXPIRED whatever the
 * answer (a grant is then no success, a release is the cluster's to do as
 * it expires the session), so a re-send that outlived it only made the
 * caller learn of the loss late: by up to timeout_ms when a re-send went
 * unanswered (a stalled leader, every node stopped). */
static uint64_t within_lease(el_session *s)
{
	el_client *c = s->client;
	const uint64_t bound = el_client__now_ms() + c->timeout_ms;
	pthread_mutex_lock(&c->mu);
	const uint64_t end = s->deadline_ms;
	pthread_mutex_unlock(&c->mu);
	return end < bound ? end : bound;
}

/* How req's wait ended, asked by QUERY of its name (linearizable: the
 * leader answers after a read barrier) once its seq can no longer be asked:
 * a newer seq of the session has acted, so req can never act again and
 * the lock's holders and waiters hold its outcome. EL_OK with *token: the
 * session holds it (req's grant; a session has one claim per lock);
 * EL_ETIMEDOUT: neither holding nor waiting with req's seq, never to be
 * granted now; 1: still waiting, or not known yet (no leader, or the
 * session may wait beyond the listed first waiters): ask again later;
 * EL_EPERM: the ACL allows no QUERY of the name (observe). */
static int settle_by_query(el_session *s, const struct el_cw_msg *req, uint64_t *token)
{
	struct el_cw_msg *q = calloc(2, sizeof(*q));
	if (q == NULL)
		return 1;
	const struct el_cw_msg *rep = q + 1;
	q->type = EL_CW_QUERY;
	q->name_len = req->name_len;
	memcpy(q->name, req->name, req->name_len);
	int rc = el_client__request_until(s->client, q, q + 1, within_lease(s));
	if (rc == EL_OK && rep->err != EL_ENOTFOUND) /* ENOTFOUND: nobody holds or waits */
		rc = rep->err;
	if (rc == EL_OK) {
		rc = rep->n_waiters > rep->n_waiters_listed ? 1 : EL_ETIMEDOUT;
		for (unsigned i = 0; i < rep->n_waiters_listed; i++)
			if (rep->waiters[i].session == s->id && rep->waiters[i].seq == req->seq)
				rc = 1;
		for (unsigned i = 0; i < rep->n_holders; i++)
			if (rep->holders[i].session == s->id) {
				*token = rep->holders[i].token;
				rc = EL_OK;
			}
	} else if (rc != EL_EPERM) {
		rc = 1;
	}
	free(q);
	if (rc == EL_ETIMEDOUT || rc == EL_EPERM)
		el_client__fail("%s: request seq %llu of session %llu can no longer be asked about "
				"(a newer seq of the session acted meanwhile) and %s", el_strerror(rc),
				(unsigned long long)req->seq, (unsigned long long)s->id,
				rc == EL_EPERM ? "the ACL allows no query of the name: its outcome is "
						 "unknown, the session may hold it (close it to be sure)"
					       : "the session neither holds nor waits for it: it will "
						 "never be granted");
	return rc;
}

/* Wait for the end of a queued request, or of one whose fate is unknown (sent,
 * never answered: it may be queued, or granted, on the cluster), req being
 * it, to re-send: the event, or, every second and after a reconnect or a
 * gap in the events, the same seq again, whose stored reply says how it
 * ended (or that it never arrived: then it acts now, once). A re-send that
 * finds a newer seq of the session (EL_ESTALE; the library makes one call
 * at a time per session, so only a request numbered outside it, through
 * el_client_request) asks no more by seq: from then on the lock's holders
 * and waiters say how it ended (settle_by_query), on the same beats, and an
 * event still ends it. It returns only when the cluster said how the
 * request ended, or once the session's lease ran out here (the cluster then
 * drops its locks and waits with it), never at a deadline of its own: a
 * grant nobody knows of would stay held, and the same session asking again
 * would only count it twice. */
static int wait_grant(el_session *s, struct el_cw_msg *req, struct el_cw_msg *rep,
		      uint64_t *token, bool *told)
{
	el_client *c = s->client;
	bool by_seq = true;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		const uint64_t seen_gaps = c->gaps, seen_conn = c->reconnects;
		const uint64_t beat = el_client__now_ms() + 1000u;
		const uint64_t until = s->deadline_ms < beat ? s->deadline_ms : beat;
		const struct el_cw_msg *e;
		while ((e = find_end(c, s->id, req->seq)) == NULL && !lost_now(s) &&
		       c->gaps == seen_gaps && c->reconnects == seen_conn &&
		       el_client__wait_conn(c, until))
			;
		int rc = 1;
		if (e != NULL) {
			rc = e->kind == EL_CW_EV_GRANTED ? EL_OK
			     : e->kind == EL_CW_EV_WAIT_TIMEOUT ? EL_ETIMEDOUT : EL_ECANCELED;
			*token = e->token;
		} else if (lost_now(s)) { /* no re-send either: see still_leased */
			rc = EL_EEXPIRED;
		}
		pthread_mutex_unlock(&c->mu);
		if (rc <= 0)
			return rc;
		if (by_seq) {
			req->id = 0; /* a new request id, the same seq */
			const bool got = el_client__request_until(c, req, rep, within_lease(s)) ==
					 EL_OK;
			if (got && rep->err != EL_ESTALE && (rep->err != EL_OK || !rep->queued)) {
				*token = rep->token;
				return rep->err;
			}
			by_seq = !(got && rep->err == EL_ESTALE);
		}
		if (!by_seq && (rc = settle_by_query(s, req, token)) <= 0) {
			*told = true; /* how it learned the end is in the message */
			return rc;
		}
	}
}

/* A grant is a success only while the session's local lease holds: one
 * that reaches a process resumed past its deadline (SIGSTOP, a suspended VM)
 * may already belong to someone else, so it is EL_EEXPIRED, never EL_OK
 * (the chaos suite saw el_lock return a token its own lease had outlived). */
static int granted_in_lease(el_session *s)
{
	el_client *c = s->client;
	pthread_mutex_lock(&c->mu);
	const bool lost = lost_now(s);
	pthread_mutex_unlock(&c->mu);
	if (lost)
		el_client__fail("%s", el_strerror(EL_EEXPIRED));
	return lost ? EL_EEXPIRED : EL_OK;
}

/* Before a call that takes or keeps something (a lock, a permit, an
 * election, a watch): EL_EEXPIRED, with nothing sent, once the session's
 * local lease has run out. Sent anyway, the cluster could grant it to a
 * session that still lives there (its deadline is later than ours) but that
 * nobody uses: held until TTL + lock-delay. Calls that give back (unlock,
 * resign, close) go out best-effort. */
static int still_leased(el_session *s, const char *what, const char *name)
{
	if (granted_in_lease(s) == EL_OK)
		return EL_OK;
	el_client__fail("%s %s: session %llu's lease ran out (as this client sees it): "
			"not sent", what, name, (unsigned long long)s->id);
	return EL_EEXPIRED;
}

/* How long a release or resign is tried: while the lease lasts here, at
 * most timeout_ms. Past the lease the cluster gives the holds up itself as
 * it expires the session, so a minority leader that cannot commit the
 * release no longer keeps the caller for the whole timeout (a CLI ran on
 * 10 s past its command's end, found by an outside tester). A lease already
 * lost here still gets a best-effort try of timeout_ms: the cluster may
 * hold it longer than this client counts. */
static uint64_t give_deadline(el_session *s)
{
	el_client *c = s->client;
	pthread_mutex_lock(&c->mu);
	const bool leased = !lost_now(s);
	pthread_mutex_unlock(&c->mu);
	return leased ? within_lease(s) : el_client__now_ms() + c->timeout_ms;
}

/* A release or resign that got no answer in time may have acted or not: ask
 * the same seq again (it acts at most once; the stored reply says how it
 * ended) until the cluster answers, or until the lease ran out here, when
 * the cluster drops the session's holds as it expires it (EL_EEXPIRED).
 * Returned as EL_ETIMEDOUT, the hold stayed until the session ended (a
 * leader SIGKILLed under a release, found by a soak test), and its caller
 * could not tell whether to unlock again. */
static int settle_release(el_session *s, struct el_cw_msg *req, struct el_cw_msg *rep,
			  bool *told)
{
	el_client *c = s->client;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		const bool lost = lost_now(s);
		pthread_mutex_unlock(&c->mu);
		if (lost) {
			el_client__fail("no answer before the session's lease ran out; the "
					"cluster gives the session's holds up as it expires it");
			*told = true;
			return EL_EEXPIRED;
		}
		req->id = 0; /* a new request id, the same seq */
		if (el_client__request_until(c, req, rep, within_lease(s)) == EL_OK)
			return rep->err;
		const struct timespec pause = { 0, 200 * 1000000L }; /* no leader yet */
		nanosleep(&pause, NULL);
	}
}

static int locked_request(el_session *s, struct el_cw_msg *req, struct el_cw_msg *rep,
			  uint64_t *token)
{
	el_client *c = s->client;
	pthread_mutex_lock(&c->mu);
	req->session = s->id;
	req->seq = ++s->seq;
	pthread_mutex_unlock(&c->mu);
	bool unanswered = false, told = false; /* told: wait_grant said why itself */
	const bool takes = req->type == EL_CW_ACQUIRE || req->type == EL_CW_CAMPAIGN;
	const bool gives = req->type == EL_CW_RELEASE || req->type == EL_CW_RESIGN;
	int rc = gives ? el_client__request_until(c, req, rep, give_deadline(s))
		       : el_client__request_unsure(c, req, rep, &unanswered);
	if (rc == EL_ETIMEDOUT && unanswered && takes) { /* it may act yet: learn how */
		rc = wait_grant(s, req, rep, token, &told);
	} else if (rc == EL_ETIMEDOUT && gives) { /* sent or not: see it through */
		rc = settle_release(s, req, rep, &told);
		*token = rep->token;
	} else if (rc != EL_OK) {
		return rc; /* its message says more (no leader: the endpoints tried) */
	} else {
		rc = rep->err;
		*token = rep->token;
		if (rc == EL_OK && rep->queued)
			rc = wait_grant(s, req, rep, token, &told);
	}
	if (rc == EL_EFULL && (req->type == EL_CW_ACQUIRE || req->type == EL_CW_CAMPAIGN ||
			       req->type == EL_CW_WATCH)) /* the leader's log says which */
		el_client__fail("%s: the cluster's %s table is full, or this client's identity "
				"has reached its [limits] %s; %s or retry later", el_strerror(rc),
				req->type == EL_CW_WATCH ? "watch" : "lock",
				req->type == EL_CW_WATCH ? "watches_per_client" : "claims_per_client",
				req->type == EL_CW_WATCH ? "unwatch something" : "release something");
	else if (rc != EL_OK && !told)
		el_client__fail("%s", el_strerror(rc));
	return rc;
}

/* ACQUIRE of a lock (permits 0) or of one permit of a semaphore. */
static int acquire(el_session *s, const char *name, bool shared, uint32_t permits,
		   uint32_t wait_ms, uint64_t *token)
{
	int rc = name_ok(name);
	if (rc == 0)
		rc = still_leased(s, permits > 0 ? "semaphore" : "lock", name);
	struct el_cw_msg *req = rc == 0 ? calloc(2, sizeof(*req)) : NULL;
	if (req == NULL)
		return rc != 0 ? rc : EL_EFULL;
	req->type = EL_CW_ACQUIRE;
	cw_name(req, name);
	req->mode = shared ? EL_LOCK_SHARED : EL_LOCK_EXCLUSIVE;
	req->permits = (uint8_t)permits;
	req->wait_ms = wait_ms;
	req->delay_ms = lock_delay(s);
	*token = 0;
	rc = locked_request(s, req, req + 1, token);
	if (rc == EL_OK)
		rc = granted_in_lease(s);
	if (rc == EL_ELIMIT) /* the reply names the semaphore's own limit */
		el_client__fail("semaphore %s has %u permit%s, not %u", name,
				(unsigned)req[1].permits, req[1].permits == 1 ? "" : "s",
				(unsigned)permits);
	else if (rc == EL_EKIND)
		el_client__fail("%s is a %s", name, permits > 0 ? "lock, not a semaphore"
								: "semaphore, not a lock");
	else if (rc == EL_EINVAL) /* the cluster's: the library checked the rest */
		el_client__fail("lock %s: %s: this session holds it in the other mode (%s); "
				"unlock that first", name, el_strerror(rc),
				shared ? "exclusive" : "shared");
	else if (rc != EL_OK)
		el_client__context("lock %s", name);
	if (rc != EL_OK && rc != EL_EEXPIRED)
		*token = 0; /* no grant to fence with (EL_EEXPIRED: the one that came late) */
	free(req);
	return rc;
}

int el_lock(el_session *s, const char *name, bool shared, uint32_t wait_ms, uint64_t *token)
{
	if (token == NULL)
		return el_client__null("el_lock's token");
	*token = 0; /* also on the errors found before anything is sent */
	int rc = begin_call(s);
	if (rc == EL_OK) {
		rc = acquire(s, name, shared, 0, wait_ms, token);
		end_call(s);
	}
	return rc;
}

int el_semaphore_acquire(el_session *s, const char *name, uint32_t permits, uint32_t wait_ms,
			 uint64_t *token)
{
	if (token != NULL)
		*token = 0; /* also on the errors found before anything is sent */
	if (permits == 0 || permits > EL_SEM_LIMIT_MAX) {
		el_client__fail("a semaphore has 1 to %u permits, not %u", (unsigned)EL_SEM_LIMIT_MAX,
				(unsigned)permits);
		return EL_EINVAL;
	}
	if (token == NULL)
		return el_client__null("el_semaphore_acquire's token");
	int rc = begin_call(s);
	if (rc == EL_OK) {
		rc = acquire(s, name, false, permits, wait_ms, token);
		end_call(s);
	}
	return rc;
}

/* What a request of type is called in messages. */
static const char *verb(uint8_t type)
{
	switch (type) {
	case EL_CW_RELEASE: return "unlock";
	case EL_CW_RESIGN: return "resign";
	case EL_CW_PROCLAIM: return "proclaim";
	case EL_CW_WATCH: return "watch";
	default: return "unwatch";
	}
}

/* A request that answers at once: release, resign, proclaim, (un)watch.
 * Those that assert or extend what the session has (proclaim, watch) are
 * not sent once its lease ran out here; those that give back always are. */
static int simple(el_session *s, uint8_t type, const char *name, uint64_t token,
		  const void *value, uint32_t len)
{
	int rc = name_ok(name);
	if (rc == 0 && token == 0 && type != EL_CW_WATCH && type != EL_CW_UNWATCH) {
		/* no grant has token 0 (tokens are log indexes, from 1), and the
		 * wire leaves 0 out: the request would not even encode */
		el_client__fail("%s %s: token 0 is no grant's: pass the token the grant "
				"returned", verb(type), name);
		rc = EL_EINVAL;
	}
	if (rc == 0 && (type == EL_CW_PROCLAIM || type == EL_CW_WATCH))
		rc = still_leased(s, verb(type), name);
	struct el_cw_msg *req = rc == 0 ? calloc(2, sizeof(*req)) : NULL;
	if (req == NULL)
		return rc != 0 ? rc : EL_EFULL;
	req->type = type;
	cw_name(req, name);
	req->token = token;
	req->value_len = (uint8_t)len;
	if (len > 0)
		memcpy(req->value, value, len);
	uint64_t ignored;
	rc = locked_request(s, req, req + 1, &ignored);
	if (rc != EL_OK)
		el_client__context("%s %s", verb(type), name);
	free(req);
	return rc;
}

static int simple_call(el_session *s, uint8_t type, const char *name, uint64_t token,
		       const void *value, uint32_t len)
{
	int rc = begin_call(s);
	if (rc == EL_OK) {
		rc = simple(s, type, name, token, value, len);
		end_call(s);
	}
	return rc;
}

int el_unlock(el_session *s, const char *name, uint64_t token)
{
	return simple_call(s, EL_CW_RELEASE, name, token, NULL, 0);
}

int el_resign(el_session *s, const char *name, uint64_t token)
{
	return simple_call(s, EL_CW_RESIGN, name, token, NULL, 0);
}

int el_proclaim(el_session *s, const char *name, uint64_t token, const void *value, uint32_t len)
{
	if (value == NULL && len > 0)
		return el_client__null("el_proclaim's value");
	if (len > EL_VALUE_MAX) {
		el_client__fail("an election value is at most %d bytes", EL_VALUE_MAX);
		return EL_EINVAL;
	}
	return simple_call(s, EL_CW_PROCLAIM, name, token, value, len);
}

static int campaign(el_session *s, const char *name, const void *value, uint32_t len,
		    uint32_t wait_ms, uint64_t *token)
{
	if (len > EL_VALUE_MAX) {
		el_client__fail("an election value is at most %d bytes", EL_VALUE_MAX);
		return EL_EINVAL;
	}
	int rc = name_ok(name);
	if (rc == 0)
		rc = still_leased(s, "campaign", name);
	struct el_cw_msg *req = rc == 0 ? calloc(2, sizeof(*req)) : NULL;
	if (req == NULL)
		return rc != 0 ? rc : EL_EFULL;
	req->type = EL_CW_CAMPAIGN;
	cw_name(req, name);
	req->wait_ms = wait_ms;
	req->delay_ms = lock_delay(s);
	req->value_len = (uint8_t)len;
	if (len > 0)
		memcpy(req->value, value, len);
	*token = 0;
	rc = locked_request(s, req, req + 1, token);
	if (rc == EL_OK)
		rc = granted_in_lease(s);
	if (rc == EL_EKIND)
		el_client__fail("campaign %s: %s is a semaphore, not an election", name, name);
	else if (rc != EL_OK)
		el_client__context("campaign %s", name);
	free(req);
	return rc;
}

int el_campaign(el_session *s, const char *name, const void *value, uint32_t len,
		uint32_t wait_ms, uint64_t *token)
{
	if (token == NULL || (value == NULL && len > 0))
		return el_client__null(token == NULL ? "el_campaign's token" : "el_campaign's value");
	*token = 0; /* also on the errors found before anything is sent */
	int rc = begin_call(s);
	if (rc == EL_OK) {
		rc = campaign(s, name, value, len, wait_ms, token);
		end_call(s);
	}
	return rc;
}

int el_watch(el_session *s, const char *name)
{
	return simple_call(s, EL_CW_WATCH, name, 0, NULL, 0);
}

int el_unwatch(el_session *s, const char *name)
{
	return simple_call(s, EL_CW_UNWATCH, name, 0, NULL, 0);
}

int el_next_event(el_session *s, struct el_event *ev, uint32_t timeout_ms)
{
	if (s == NULL || ev == NULL)
		return el_client__null("el_next_event");
	el_client *c = s->client;
	const uint64_t until = el_client__now_ms() + timeout_ms;
	memset(ev, 0, sizeof(*ev));
	int rc = EL_OK;
	pthread_mutex_lock(&c->mu);
	s->users++; /* el_session_close frees s only once we are out */
	for (;;) {
		if (s->closed) { /* el_session_close is under way */
			rc = EL_ECANCELED;
			break;
		}
		if (c->reconnects != s->seen_reconnects) {
			s->seen_reconnects = c->reconnects;
			ev->kind = EL_EVENT_GAP;
			break;
		}
		const uint64_t first = c->ev_count - c->n_events; /* oldest kept */
		if (s->ev_seen < first) {
			s->ev_seen = first;
			ev->kind = EL_EVENT_GAP;
			break;
		}
		if (s->ev_seen < c->ev_count) {
			const struct el_cw_msg *e =
				&c->events[(c->ev_head + (s->ev_seen - first)) % EL_CLIENT_EVENTS_MAX];
			s->ev_seen++;
			if (e->session != 0 && e->session != s->id)
				continue;
			ev->kind = e->kind;
			ev->token = e->token;
			snprintf(ev->name, sizeof ev->name, "%.*s", (int)e->name_len, e->name);
			break;
		}
		if (!el_client__wait_conn(c, until)) {
			rc = EL_ETIMEDOUT;
			break;
		}
	}
	s->users--;
	pthread_cond_broadcast(&c->cv); /* a close may wait for us */
	pthread_mutex_unlock(&c->mu);
	if (rc == EL_ECANCELED)
		el_client__fail("next event: %s: the session is being closed", el_strerror(rc));
	return rc;
}

/* ---- Reads -------------------------------------------------------------- */

int el_query(el_client *c, const char *name, struct el_lock_info *out)
{
	if (c == NULL || out == NULL)
		return el_client__null("el_query");
	memset(out, 0, sizeof(*out));
	int rc = name_ok(name);
	struct el_cw_msg *req = rc == 0 ? calloc(2, sizeof(*req)) : NULL;
	if (req == NULL)
		return rc != 0 ? rc : EL_EFULL;
	const struct el_cw_msg *rep = req + 1;
	req->type = EL_CW_QUERY;
	cw_name(req, name);
	rc = el_client_request(c, req, req + 1);
	if (rc == EL_OK && rep->err != EL_OK) {
		rc = rep->err;
		el_client__fail("query %s: %s", name, el_strerror(rc));
	} /* else a failed request's own message stands: it says more (which
	   * endpoints, a refused certificate) */
	if (rc == EL_OK) {
		out->n_holders = rep->n_holders;
		out->held = rep->n_holders > 0;
		out->shared = rep->mode == EL_LOCK_SHARED;
		out->delayed = rep->delayed;
		out->permits = rep->permits;
		out->n_waiters = rep->n_waiters;
		for (unsigned i = 0; i < rep->n_holders; i++)
			if (rep->holders[i].token >= out->token) {
				out->token = rep->holders[i].token;
				out->holder_session = rep->holders[i].session;
				snprintf(out->holder, sizeof out->holder, "%.*s",
					 (int)rep->holders[i].client_len, rep->holders[i].client);
			}
		if (out->permits == 0 && !out->held && out->delayed)
			out->token = rep->delay_token; /* whose expiry began the delay */
		out->value_len = rep->value_len < sizeof out->value ? rep->value_len : sizeof out->value;
		memcpy(out->value, rep->value, out->value_len);
	}
	free(req);
	return rc;
}
