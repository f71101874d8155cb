/*
 * serve.c - the client protocol on the daemon's side (docs/protocol.md).
 *
 * A request becomes a node call: commands (types 1..10) are submitted and
 * answered when their entry commits (el_node_reply), QUERY and LIST wait for
 * a linearizable read barrier and then read the table, STATUS and PING are
 * answered at once from this node's view, admin requests call the Raft
 * replica and answer with the configuration entry's index. Each request in
 * flight holds a slot of d->pending; the node sees its slot and generation
 * as the request id, so a reply finds its client in O(1).
 *
 * Events go to the connection that last sent a request for the session
 * (d->attach, indexed by the lock table's session slot; for a session the
 * batch ended, d->ending), and only from the leader (el_d_events_leader).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_assert.h"
#include "el_cbor.h"
#include "el_daemon.h"
#include "el_error.h"
#include "el_platform.h"
#include "el_url.h"

#define SLOT_BITS 16
_Static_assert(EL_D_PENDING < (1u << SLOT_BITS), "slot must fit the request id");

/* Request type names as docs/protocol.md spells them, for log lines. */
static const char *const request_names[EL_CW_REQUEST_MAX + 1] = {
	"?", "open-session", "keepalive", "close-session", "acquire", "release",
	"campaign", "resign", "proclaim", "watch", "unwatch", "query", "list", "status",
	"member-add", "member-remove", "member-promote", "transfer", "ping", "snapshot",
};

const char *el_d_request_name(uint32_t type)
{
	return type <= EL_CW_REQUEST_MAX ? request_names[type] : "?";
}

/* Every reply's outcome at debug level, named by its connection and the
 * client's request id, as the request's own line is: the two lines of one
 * request are found together in a busy log. */
static void log_reply(uint64_t conn, const struct el_cw_msg *m)
{
	if (m->type != EL_CW_ERROR && (m->type <= EL_CW_REPLY_BASE || m->type >= EL_CW_EVENT))
		return;
	const char *what = m->type == EL_CW_ERROR ? "undecodable frame"
						  : el_d_request_name(m->type - EL_CW_REPLY_BASE);
	el_log(EL_LOG_DEBUG, "conn %llu req %llu: %s: %s, token %llu", (unsigned long long)conn,
	       (unsigned long long)m->id, what, el_strerror(m->err), (unsigned long long)m->token);
}

static const char *client_name(const struct el_d_client *cl)
{
	return cl != NULL && cl->name[0] != '\0' ? cl->name : "anonymous";
}

/* A client that does not read what it is sent is closed by el_net once
 * [limits] client_queue frames or client_queue_bytes bytes wait for it
 * (EL_EFULL, once per connection: the connection is gone for every later
 * send), as Redis closes a client past its output buffer's hard limit.
 * Its sessions' events and replies are lost with it, so the operator and
 * the client's author must be able to tell: a line saying what waited, at
 * most one a second (a flood of such clients must not flood the log), the
 * closes held back counted in the next one; all are counted in
 * client_drops_total. A client closed as the largest queue over
 * client_queues_total_bytes is another limit: el_net says it (naming that
 * bound) and counts it in client_evictions_total, and the send that
 * closed it, when it was this client's own, answers EL_ENOTFOUND. */
static void queue_full(struct el_daemon *d, uint64_t conn)
{
	if (d->queue_full_ms != 0 && d->now_ms - d->queue_full_ms < 1000) {
		d->queue_full_held++;
		return;
	}
	char held[64] = "";
	if (d->queue_full_held > 0)
		snprintf(held, sizeof held, " (%llu more closed so since the last such line)",
			 (unsigned long long)d->queue_full_held);
	d->queue_full_ms = d->now_ms;
	d->queue_full_held = 0;
	uint32_t frames = 0;
	size_t bytes = 0;
	el_net_queued(d->net, conn, &frames, &bytes);
	el_log(EL_LOG_WARN, "client %s conn %llu: send queue full (%u frames, %zu bytes not read; "
	       "[limits] client_queue = %u frames, client_queue_bytes = %u bytes): closed%s",
	       client_name(el_d_client_of(d, conn)), (unsigned long long)conn, frames, bytes,
	       d->cfg.client_queue, d->cfg.client_queue_bytes, held);
}

void el_d_send(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *m, bool close_after)
{
	log_reply(conn, m);
	int n = el_cw_encode(m, d->buf, sizeof d->buf);
	if (n < 0) {
		el_log(EL_LOG_ERROR, "client: cannot encode a type %u message: %s", m->type,
		       el_strerror(n));
		return;
	}
	if (el_net_client_send(d->net, conn, d->buf, (uint32_t)n, close_after) == EL_EFULL)
		queue_full(d, conn);
}

static void begin_reply(struct el_daemon *d, uint8_t req_type, uint64_t id)
{
	memset(&d->rep, 0, sizeof d->rep);
	d->rep.type = (uint8_t)EL_CW_REPLY(req_type);
	d->rep.id = id;
}

static void redirect(struct el_daemon *d, el_id_t leader)
{
	d->rep.leader = leader;
	const struct el_d_book *b = leader != 0 ? el_d_book_find(d, leader) : NULL;
	if (b != NULL) {
		d->rep.leader_addr_len = (uint8_t)strlen(b->client_addr);
		memcpy(d->rep.leader_addr, b->client_addr, d->rep.leader_addr_len);
	}
}

/* A follower's ENOTLEADER names the leader's client address only while its
 * own link to the leader is up. Right after a leader dies, its followers
 * still believe in it for an election timeout; sending clients there costs
 * them a refused dial and a fresh TLS handshake elsewhere, in the very
 * milliseconds the election needs the CPU. Without an address a client asks
 * this node again shortly (libedgelock: every 20 ms), by when it names the
 * new leader or is it. */
static void redirect_client(struct el_daemon *d, el_id_t leader)
{
	if (leader != 0 && leader != d->cfg.id && !el_net_peer_up(d->net, leader))
		d->rep.leader = leader;
	else
		redirect(d, leader);
}

static void reply_err(struct el_daemon *d, uint64_t conn, uint8_t type, uint64_t id, int err,
		      el_id_t leader)
{
	begin_reply(d, type, id);
	d->rep.err = err;
	if (err == EL_ENOTLEADER)
		redirect_client(d, leader);
	el_d_send(d, conn, &d->rep, false);
}

static void send_error(struct el_daemon *d, uint64_t conn, uint64_t id, int err, bool close)
{
	memset(&d->rep, 0, sizeof d->rep);
	d->rep.type = EL_CW_ERROR;
	d->rep.id = id;
	d->rep.err = err;
	d->client_frames_refused++;
	el_d_send(d, conn, &d->rep, close);
}

/* ---- refusals in the log ------------------------------------------------------ */

/* Every refused frame gets a line at info level, naming what was wrong, so
 * that the operator and the client's author can tell. A flood of bad frames
 * must not fill the log, though: at most REFUSALS_PER_S lines a second per
 * connection; the lines held back are counted in its next one (or when it
 * closes). */
#define REFUSALS_PER_S 5u
struct refusal_note {
	char held[64]; /* "" or how many refusals before this line were not logged */
};

static bool refusal_may_log(struct el_daemon *d, struct el_d_client *cl, struct refusal_note *n)
{
	n->held[0] = '\0';
	if (cl == NULL)
		return true;
	if (d->now_ms - cl->refusals_ms >= 1000) {
		cl->refusals_ms = d->now_ms;
		cl->refusals_logged = 0;
	}
	if (cl->refusals_logged >= REFUSALS_PER_S) {
		cl->refusals_held++;
		return false;
	}
	cl->refusals_logged++;
	if (cl->refusals_held > 0)
		snprintf(n->held, sizeof n->held, " (%llu refusals before not logged: too many)",
			 (unsigned long long)cl->refusals_held);
	cl->refusals_held = 0;
	return true;
}

/* What an undecodable frame got wrong, as far as the decoder tells: it keeps
 * the type and id it read before the fault. */
static const char *decode_fault(int rc, const struct el_cw_msg *q)
{
	if (rc == EL_EVERSION)
		return "a protocol version other than 1";
	if (rc == EL_OK)
		return "a type that is not a request";
	if (q->type == 0)
		return "no {0: version, 1: type} map head (not CBOR, or keys out of order)";
	if (!el_cw_is_request(q->type))
		return "an unknown or non-request type";
	return "a field unknown to its type, out of range, out of order, or missing";
}

static void log_bad_frame(struct el_daemon *d, uint64_t conn, int rc, const struct el_cw_msg *q,
			  const uint8_t *buf, uint32_t len)
{
	struct el_d_client *cl = el_d_client_of(d, conn);
	struct refusal_note n;
	if (!refusal_may_log(d, cl, &n))
		return;
	char hex[3 * 16 + 1] = "";
	for (uint32_t i = 0; i < len && i < 16; i++)
		snprintf(hex + 3 * i, sizeof hex - 3 * i, " %02x", buf[i]);
	el_log(EL_LOG_INFO, "client %s conn %llu req %llu: frame of %u bytes refused, %s: "
	       "type %u (%s), %s; it starts%s%s%s", client_name(cl), (unsigned long long)conn,
	       (unsigned long long)q->id, len, el_strerror(rc != EL_OK ? rc : EL_EDECODE), q->type,
	       el_d_request_name(q->type), decode_fault(rc, q), hex, len > 16 ? " ..." : "",
	       n.held);
}

/* ---- requests in flight and attached sessions ----------------------------- */

/* A slot for q, or NULL: every slot is taken, or conn already has [limits]
 * requests_per_client in flight (so that one connection pipelining without
 * end cannot take the slots every other connection needs: it gets EL_EFULL
 * at once instead). Keepalives and session closes may go URGENT_EXTRA past
 * that: a client whose calls wait long on locks must still renew the
 * sessions they wait in (libedgelock keeps the same reserve). */
#define URGENT_EXTRA 8u
static struct el_d_pending *pend_new(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q)
{
	struct el_d_client *cl = el_d_client_of(d, conn);
	const bool urgent = q->type == EL_CW_KEEPALIVE || q->type == EL_CW_CLOSE_SESSION;
	if (cl != NULL && cl->pending >= d->cfg.requests_per_client + (urgent ? URGENT_EXTRA : 0))
		return NULL;
	for (uint32_t k = 0; k < EL_D_PENDING; k++) {
		uint32_t i = (uint32_t)((d->req_seq + k) % EL_D_PENDING);
		struct el_d_pending *p = &d->pending[i];
		if (p->req_id != 0)
			continue;
		d->req_seq++;
		p->req_id = (d->req_seq << SLOT_BITS) | i;
		p->conn = conn;
		p->client_id = q->id;
		p->type = q->type;
		p->cursor = q->cursor;
		p->limit = q->limit == 0 ? EL_CW_LIST_MAX : q->limit;
		p->name_len = q->name_len;
		memcpy(p->name, q->name, q->name_len);
		p->start_ns = d->metrics != NULL ? el_d_metrics_clock() : 0;
		p->owner_gen = 0; /* nothing charged ([limits], el_d_charge) */
		if (cl != NULL)
			cl->pending++;
		return p;
	}
	return NULL;
}

static void pend_free(struct el_daemon *d, struct el_d_pending *p)
{
	struct el_d_client *cl = p->conn != 0 ? el_d_client_of(d, p->conn) : NULL;
	if (cl != NULL && cl->pending > 0)
		cl->pending--;
	if (p->type == EL_CW_OPEN_SESSION)
		d->quota.valid = false; /* it counted this open; recount */
	el_d_uncharge(d, p);
	p->req_id = 0;
}

static struct el_d_pending *pend_find(struct el_daemon *d, uint64_t req_id)
{
	struct el_d_pending *p = &d->pending[(req_id & ((1u << SLOT_BITS) - 1)) % EL_D_PENDING];
	return p->req_id == req_id ? p : NULL;
}

static void attach(struct el_daemon *d, uint64_t session, uint64_t conn)
{
	if (!el_d_events_leader(d))
		return; /* a follower pushes no events: see el_d_events_leader */
	el_slot_t slot = el_lock_session_slot(el_node_table(d->node), session);
	if (slot != EL_LOCK_NONE) {
		if (d->attach[slot].session != session)
			d->attach[slot].warned = false;
		d->attach[slot].session = session;
		d->attach[slot].conn = conn;
	}
}

static uint64_t attached_conn(struct el_daemon *d, uint64_t session)
{
	el_slot_t slot = el_lock_session_slot(el_node_table(d->node), session);
	if (slot == EL_LOCK_NONE || d->attach[slot].session != session)
		return 0;
	return d->attach[slot].conn;
}

/* Is attach slot i's session still the one the lock table holds there, and
 * attached? A session that ended keeps its slot's entry (conn included)
 * until another session attaches there: the ids differ then. */
static bool attached_live(const struct el_daemon *d, uint32_t i)
{
	const struct el_lock_table *t = el_node_table(d->node);
	return d->attach[i].conn != 0 && d->attach[i].session != 0 &&
	       t->sessions[i].id == d->attach[i].session;
}

static void send_gap(struct el_daemon *d, uint32_t i)
{
	memset(&d->rep, 0, sizeof d->rep);
	d->rep.type = EL_CW_EVENT;
	d->rep.kind = EL_CW_EV_GAP;
	d->rep.session = d->attach[i].session;
	el_d_send(d, d->attach[i].conn, &d->rep, false);
}

/*
 * Events are the leader's, as a session is: only the leader serves its
 * requests, and only its clock says when a lease runs low. A follower
 * applies the same committed entries, later, and pushed their events too
 * to any connection that had sent it a request for the session, one it
 * answered ENOTLEADER: a client that kept that connection while it used
 * the leader's got each event twice, and a follower's late ones after the
 * leader's newer ones (protocol_test, test_events_leader_only). So a node
 * attaches sessions only while it leads, and once it stops leading (a
 * transfer, a newer term, its removal) it sends every attached session
 * still open a GAP and detaches them all: the GAP says what to do (retry
 * the last seq, QUERY), which here gets ENOTLEADER and the new leader, and
 * the request there attaches the session (as ZooKeeper closes the
 * sessions' connections of a server that lost its leader; etcd serves
 * watches from any member, but its watches are not a session's). Called
 * each turn after the role may have changed (daemon.c, log_role) and
 * before anything attaches or sends an event.
 */
bool el_d_events_leader(struct el_daemon *d)
{
	const bool leads = el_raft_state(el_node_raft(d->node)) == EL_LEADER;
	if (leads || !d->events_leader) {
		d->events_leader = leads;
		return leads;
	}
	d->events_leader = false;
	for (uint32_t i = 0; i < EL_SESSIONS_MAX; i++) {
		if (attached_live(d, i))
			send_gap(d, i);
		d->attach[i].conn = 0;
	}
	for (uint32_t i = 0; i < d->n_ending; i++)
		d->ending[i].conn = 0;
	return false;
}

/* ---- sessions ended by the batch being applied ----------------------------- */

/*
 * The core emits a session's last events (CANCELED for each of its waits)
 * as it drops it, and frees its slot in the same step; the events reach
 * el_d_event with the next batch, after that batch's replies. By then the
 * table no longer knows the session, and the slot may hold a session
 * opened in the same batch, whose OPEN_SESSION reply (delivered first) has
 * attached it there. So the connection is noted before the entries are
 * applied, while the table still holds the session (el_d_entries_ahead),
 * by session id, never by slot: an event goes only to a connection that
 * was attached to e->session itself. The list holds one batch: its events
 * are all delivered before the next batch's entries refill it.
 */
static void note_ending(struct el_daemon *d, const struct el_lock_cmd *c)
{
	if (c->type != EL_CMD_CLOSE_SESSION && c->type != EL_CMD_EXPIRE_SESSION)
		return;
	const uint64_t conn = attached_conn(d, c->session);
	/* Full only with repeated closes of the same sessions in one batch
	 * (a retried close): their first entry is what drops them. */
	if (conn != 0 && d->n_ending < EL_SESSIONS_MAX)
		d->ending[d->n_ending++] = (struct el_d_ending){ .session = c->session, .conn = conn };
}

/* The connection noted for an ended session, or 0. A session's events come
 * together and in the order of the entries, as the list is: the search
 * starts where the last one found its session, so it is O(1) for each but
 * the first of a session, and O(n) at worst. */
static uint64_t ending_conn(struct el_daemon *d, uint64_t session)
{
	for (uint32_t k = 0; k < d->n_ending; k++) {
		const uint32_t i = (d->ending_cursor + k) % d->n_ending;
		if (d->ending[i].session == session) {
			d->ending_cursor = i;
			return d->ending[i].conn;
		}
	}
	return 0;
}

void el_d_entries_ahead(struct el_daemon *d, const struct el_ready *rd)
{
	const struct el_raft *r = el_node_raft(d->node);
	struct el_lock_cmd c;
	d->n_ending = 0; /* the events of the last batch applied are delivered */
	d->ending_cursor = 0;
	for (uint64_t i = rd->apply_first; i <= rd->apply_last && i != 0; i++) {
		const struct el_entry *e = el_raft_entry(r, i);
		if (e == NULL || e->type != EL_ENTRY_NORMAL ||
		    el_lock_cmd_decode(&c, e->data, e->len) != EL_OK ||
		    el_lock_cmd_check(&c) != EL_OK)
			continue;
		el_d_seen_note(d, &c);
		note_ending(d, &c);
	}
}

/* Where session's events go: the connection attached to it, or, for a
 * session the table no longer holds, the one noted when it ended. */
static uint64_t event_conn(struct el_daemon *d, uint64_t session)
{
	el_slot_t slot = el_lock_session_slot(el_node_table(d->node), session);
	if (slot == EL_LOCK_NONE)
		return ending_conn(d, session);
	return d->attach[slot].session == session ? d->attach[slot].conn : 0;
}

void el_d_client_closed(struct el_daemon *d, uint64_t conn)
{
	const struct el_d_client *cl = el_d_client_of(d, conn);
	if (cl != NULL && cl->refusals_held > 0)
		el_log(EL_LOG_INFO, "client %s conn %llu closed: %llu more refusals not logged",
		       client_name(cl), (unsigned long long)conn,
		       (unsigned long long)cl->refusals_held);
	el_d_client_gone(d, conn);
	for (uint32_t i = 0; i < EL_SESSIONS_MAX; i++)
		if (d->attach[i].conn == conn)
			d->attach[i].conn = 0;
	for (uint32_t i = 0; i < EL_D_PENDING; i++)
		if (d->pending[i].conn == conn)
			d->pending[i].conn = 0; /* the reply has nowhere to go */
	for (uint32_t i = 0; i < d->n_ending; i++)
		if (d->ending[i].conn == conn)
			d->ending[i].conn = 0;
	d->quota.valid = false; /* its opens in flight are no longer counted as its */
}

void el_d_client_bad(struct el_daemon *d, uint64_t conn)
{
	struct el_d_client *cl = el_d_client_of(d, conn);
	struct refusal_note n;
	if (refusal_may_log(d, cl, &n))
		el_log(EL_LOG_INFO, "client %s conn %llu: a frame length of 0 or over %u bytes "
		       "refused, %s: closing%s", client_name(cl), (unsigned long long)conn,
		       (unsigned)EL_CW_FRAME_MAX, el_strerror(EL_EDECODE), n.held);
	send_error(d, conn, 0, EL_EDECODE, true);
}

/* ---- commands ----------------------------------------------------------------- */

static const uint8_t cmd_of[EL_CW_UNWATCH + 1] = {
	[EL_CW_OPEN_SESSION] = EL_CMD_OPEN_SESSION, [EL_CW_KEEPALIVE] = EL_CMD_KEEPALIVE,
	[EL_CW_CLOSE_SESSION] = EL_CMD_CLOSE_SESSION, [EL_CW_ACQUIRE] = EL_CMD_ACQUIRE,
	[EL_CW_RELEASE] = EL_CMD_RELEASE, [EL_CW_CAMPAIGN] = EL_CMD_CAMPAIGN,
	[EL_CW_RESIGN] = EL_CMD_RESIGN, [EL_CW_PROCLAIM] = EL_CMD_PROCLAIM,
	[EL_CW_WATCH] = EL_CMD_WATCH, [EL_CW_UNWATCH] = EL_CMD_UNWATCH,
};

/* The wire masks let through exactly the fields each command uses. */
static void to_cmd(const struct el_cw_msg *q, struct el_lock_cmd *c)
{
	memset(c, 0, sizeof *c);
	c->type = cmd_of[q->type];
	c->nonce = q->nonce; /* OPEN_SESSION: a retried open finds its session */
	c->mode = q->mode;
	c->limit = q->permits; /* ACQUIRE: a semaphore's limit (0: a lock) */
	c->ttl_ms = q->ttl_ms;
	c->wait_ms = q->wait_ms;
	c->delay_ms = q->delay_ms;
	c->session = q->session;
	c->seq = q->seq;
	c->token = q->token;
	c->name_len = q->name_len;
	memcpy(c->name, q->name, q->name_len);
	c->value_len = q->value_len;
	memcpy(c->value, q->value, q->value_len);
	c->client_len = q->client_len;
	memcpy(c->client, q->client, q->client_len);
}

/* A request whose seq the session cannot take (seen.c): EL_EINVAL, logged,
 * and nothing proposed, so nothing changes. */
static void seq_refused(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q,
			const char *why)
{
	struct el_d_client *cl = el_d_client_of(d, conn);
	struct refusal_note n;
	if (refusal_may_log(d, cl, &n)) {
		char name[EL_LOG_NAME_CAP(EL_NAME_MAX)];
		el_log(EL_LOG_INFO, "client %s conn %llu req %llu: %s %s session %llu seq %llu "
		       "refused, %s: %s%s", client_name(cl), (unsigned long long)conn,
		       (unsigned long long)q->id, el_d_request_name(q->type),
		       el_log_name(name, sizeof name, q->name, q->name_len),
		       (unsigned long long)q->session, (unsigned long long)q->seq,
		       el_strerror(EL_EINVAL), why, n.held);
	}
	reply_err(d, conn, q->type, q->id, EL_EINVAL, 0);
}

/* OPEN_SESSION from an identity too long for a session's owner field
 * (el_d_client_stamp): refused, and said, since nothing else tells. */
/*
 * Does q name a session this leader cannot yet tell from an unknown one?
 * A new leader applies what earlier terms committed only once an entry of
 * its own term commits (Raft thesis 3.6.2: its no-op). Until then its table
 * may lack a session opened in that backlog: el_d_authorize could not check
 * whose it is, and the request, proposed, would act in it once the open
 * applied, for any identity with the rights on the name (auth_test,
 * test_unsettled_leader); nor would the owner's own request attach the
 * session's events here. Such a request is answered "not the leader, none
 * known", which clients ask again shortly, until the backlog is applied.
 */
static bool session_unsettled(struct el_daemon *d, const struct el_cw_msg *q)
{
	if (q->session == 0 || q->type == EL_CW_OPEN_SESSION)
		return false;
	const struct el_raft *r = el_node_raft(d->node);
	if (el_raft_state(r) != EL_LEADER || el_raft_term_at(r, el_raft_applied(r)) == el_raft_term(r))
		return false;
	const struct el_lock_table *t = el_node_table(d->node);
	const el_slot_t slot = el_lock_session_slot(t, q->session);
	return slot == EL_LOCK_NONE || t->sessions[slot].id != q->session;
}

static void identity_too_long(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q)
{
	struct el_d_client *cl = el_d_client_of(d, conn);
	struct refusal_note n;
	if (refusal_may_log(d, cl, &n))
		el_log(EL_LOG_WARN, "client %s conn %llu req %llu: OPEN_SESSION refused (%s): the "
		       "identity (certificate CN) is %zu bytes, a session's owner holds at most "
		       "%d: give this client a certificate with a shorter CN%s", client_name(cl),
		       (unsigned long long)conn, (unsigned long long)q->id, el_strerror(EL_EINVAL),
		       strlen(client_name(cl)), EL_CLIENT_NAME_MAX - 1, n.held);
	reply_err(d, conn, q->type, q->id, EL_EINVAL, 0);
}

static void command(struct el_daemon *d, uint64_t conn, const struct el_d_client *cl,
		    const struct el_cw_msg *q)
{
	struct el_lock_cmd c;
	el_id_t leader = 0;
	if (q->type != EL_CW_OPEN_SESSION)
		attach(d, q->session, conn);
	to_cmd(q, &c);
	if (q->type == EL_CW_OPEN_SESSION && el_d_client_stamp(cl, &c) != EL_OK) {
		identity_too_long(d, conn, q);
		return;
	}
	if (el_lock_cmd_check(&c) != EL_OK) {
		reply_err(d, conn, q->type, q->id, EL_EINVAL, 0);
		return;
	}
	if (el_d_ttl_check(d, cl, q) != EL_OK) {
		reply_err(d, conn, q->type, q->id, EL_EINVAL, 0);
		return;
	}
	const char *why = el_d_seen_refusal(d, &c);
	if (why != NULL) {
		seq_refused(d, conn, q, why);
		return;
	}
	uint32_t charge;
	if ((q->type == EL_CW_OPEN_SESSION && el_d_session_quota(d, cl) != EL_OK) ||
	    el_d_use_quota(d, cl, q, &charge) != EL_OK) {
		reply_err(d, conn, q->type, q->id, EL_EFULL, 0);
		return;
	}
	struct el_d_pending *p = pend_new(d, conn, q);
	if (p == NULL) {
		if (q->type == EL_CW_OPEN_SESSION)
			d->quota.valid = false; /* the quota counted an open not made */
		reply_err(d, conn, q->type, q->id, EL_EFULL, 0);
		return;
	}
	el_d_charge(d, p, charge);
	int rc = el_node_submit(d->node, p->req_id, &c, d->now_ms, &leader);
	if (rc != EL_OK) {
		pend_free(d, p);
		reply_err(d, conn, q->type, q->id, rc, leader);
		return;
	}
	el_d_seen_note(d, &c);
}

static void read_barrier(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q)
{
	el_id_t leader = 0;
	struct el_d_pending *p = pend_new(d, conn, q);
	if (p == NULL) {
		reply_err(d, conn, q->type, q->id, EL_EFULL, 0);
		return;
	}
	int rc = el_node_read(d->node, p->req_id, d->now_ms, &leader);
	if (rc != EL_OK) {
		pend_free(d, p);
		reply_err(d, conn, q->type, q->id, rc, leader);
	}
}

/* ---- reads ----------------------------------------------------------------- */

static void fill_query(struct el_daemon *d, const struct el_lock_query *q)
{
	struct el_cw_msg *r = &d->rep;
	r->mode = q->mode;
	r->permits = q->limit;
	r->delayed = q->delayed;
	r->delay_token = q->delay_token;
	r->n_waiters = q->n_waiters;
	r->n_watches = q->n_watches;
	r->value_len = q->value_len;
	memcpy(r->value, q->value, q->value_len);
	r->n_holders = q->n_holders;
	for (uint32_t i = 0; i < q->n_holders; i++) {
		const struct el_lock_query_holder *h = &q->holders[i];
		/* "IDENTITY NAME", or the identity alone with no name (it
		 * showed "client ": an outside tester) */
		r->holders[i] = (struct el_cw_holder){
			.session = h->session, .token = h->token, .grant_ms = h->grant_ms,
			.count = h->count, .client_len = (uint8_t)el_d_client_shown(h->client,
										     h->client_len) };
		memcpy(r->holders[i].client, h->client, r->holders[i].client_len);
	}
	r->n_waiters_listed = (uint8_t)q->n_waiters_listed;
	for (uint32_t i = 0; i < q->n_waiters_listed; i++)
		r->waiters[i] = (struct el_cw_waiter){ .session = q->waiters[i].session,
						       .seq = q->waiters[i].seq,
						       .wait_ms = q->waiters[i].wait_ms,
						       .mode = q->waiters[i].mode };
}

/* LIST walks the lock table's slots (the cursor is the next slot + 1).
 * It reads the table's slot array directly: the one place the daemon knows
 * the table's layout, to be replaced by an iterator of the core. A cursor
 * past the table is its end, whatever its high bits: cut to 32 bits, 2^32
 * + 1 read as 1 and sent the listing back to its start.
 *
 * A reply looks at LIST_SCAN_MAX locks at most, and may so hold fewer
 * than limit (even none) with a cursor to go on: under an [acl] that lets
 * a client see few names, a page was filled only after a walk of the
 * whole table, 2.5 ms of the leader's turn per LIST with 30,000 locks, 64
 * at a time per connection (auth_test, test_list_bounded). */
#define LIST_SCAN_MAX 1024u
static void fill_list(struct el_daemon *d, const struct el_d_pending *p)
{
	const struct el_lock_table *t = el_node_table(d->node);
	const struct el_d_client *cl = el_d_client_of(d, p->conn);
	const uint64_t from = p->cursor > 0 ? p->cursor - 1 : 0;
	el_slot_t i = from < EL_LOCKS_MAX ? el_lock_next_lock(t, (uint32_t)from) : EL_LOCK_NONE;
	for (uint32_t seen = 0; i != EL_LOCK_NONE && d->rep.n_locks_listed < p->limit &&
				seen < LIST_SCAN_MAX;
	     i = el_lock_next_lock(t, (uint32_t)i + 1), seen++) {
		const struct el_lock_entry *e = &t->locks[i];
		if (cl == NULL || !el_d_client_may(d, cl, EL_ACL_OBSERVE, e->name, e->name_len) ||
		    el_lock_query(t, e->name, e->name_len, &d->q) != EL_OK)
			continue; /* LIST shows only the names the client may observe */
		struct el_cw_lock *l = &d->rep.locks[d->rep.n_locks_listed++];
		l->name_len = e->name_len;
		memcpy(l->name, e->name, e->name_len);
		l->mode = d->q.mode;
		l->permits = d->q.limit;
		l->n_holders = d->q.n_holders;
		l->n_waiters = d->q.n_waiters;
		l->delayed = d->q.delayed;
		for (uint32_t h = 0; h < d->q.n_holders; h++)
			if (d->q.holders[h].token > l->token)
				l->token = d->q.holders[h].token;
	}
	if (i != EL_LOCK_NONE)
		d->rep.cursor = (uint64_t)i + 1;
}

/* ---- SNAPSHOT (backup) ------------------------------------------------------ */

/* The reply's chunk of the kept snapshot at offset: EL_ESTALE when the
 * client names another snapshot than the one kept (taken again meanwhile,
 * or on another leader: it starts over), EL_EINVAL past its end. */
static void snapshot_chunk(struct el_daemon *d, uint64_t index, uint32_t offset)
{
	if (index == 0 || index != d->snap_index) {
		d->rep.err = EL_ESTALE;
		return;
	}
	if (offset > d->snap_len) {
		d->rep.err = EL_EINVAL;
		return;
	}
	const uint32_t n = d->snap_len - offset < EL_CW_CHUNK_MAX ? d->snap_len - offset
								  : EL_CW_CHUNK_MAX;
	d->rep.index = d->snap_index;
	d->rep.total = d->snap_len;
	d->rep.offset = offset;
	d->rep.chunk_len = (uint16_t)n;
	memcpy(d->rep.chunk, d->snap_buf + offset, n);
}

/*
 * The snapshot's bytes [version, last_index, ...] say the index it was
 * read at (index, the applied one) instead of the table's last command
 * when that is older: the same table, as of a later index. A restore
 * starts its log there (restore.c), so every token granted after it is
 * above index. Read at the table's own index, a backup of a cluster
 * restored with --token-floor N, taken before its first command, held an
 * index far below N, and the cluster restored from it granted tokens
 * below N again (a million below: recovery_test, token floor). The new
 * length, or an error: buf holds the table's bytes whole either way.
 */
static int snapshot_at(uint8_t *buf, uint32_t len, uint32_t cap, uint64_t index)
{
	struct el_cbor_dec dec;
	uint32_t items = 0;
	uint64_t version = 0, last = 0;
	el_cbor_dec_init(&dec, buf, len);
	el_cbor_get_array(&dec, &items, UINT32_MAX);
	el_cbor_get_uint(&dec, &version);
	const uint32_t at = dec.pos; /* where last_index begins */
	el_cbor_get_uint(&dec, &last);
	if (el_cbor_dec_error(&dec) != 0)
		return EL_EDECODE;
	if (index <= last)
		return (int)len;
	uint8_t head[9];
	struct el_cbor_enc e;
	el_cbor_enc_init(&e, head, sizeof head);
	el_cbor_put_uint(&e, index);
	const int n = el_cbor_enc_finish(&e);
	const uint32_t rest = len - dec.pos;
	if (n < 0 || at + (uint32_t)n + rest > cap)
		return EL_EFULL;
	memmove(buf + at + n, buf + dec.pos, rest);
	memcpy(buf + at, head, (size_t)n);
	return (int)(at + (uint32_t)n + rest);
}

/* After the read barrier: the table now is at least as new as every write
 * acknowledged before the request; write it once and serve its first chunk. */
static void snapshot_take(struct el_daemon *d, uint64_t conn)
{
	if (d->snap_buf == NULL)
		d->snap_buf = malloc(EL_SNAPSHOT_MAX);
	if (d->snap_buf == NULL) {
		d->rep.err = EL_EFULL;
		return;
	}
	const struct el_lock_table *t = el_node_table(d->node);
	/* Named by the applied index, never 0 once a leader serves (its
	 * configuration and no-op entries count): the table's own last index
	 * is 0 until its first entry, and 0 asks for a new snapshot. */
	const uint64_t applied = el_raft_applied(el_node_raft(d->node));
	const uint64_t index = applied > t->last_index ? applied : t->last_index;
	int n = el_lock_snapshot(t, d->snap_buf, EL_SNAPSHOT_MAX);
	if (n > 0)
		n = snapshot_at(d->snap_buf, (uint32_t)n, EL_SNAPSHOT_MAX, index);
	if (n <= 0) {
		d->rep.err = n < 0 ? n : EL_EFULL;
		d->snap_index = 0;
		return;
	}
	d->snap_len = (uint32_t)n;
	d->snap_index = index;
	el_log(EL_LOG_INFO, "client %s conn %llu req %llu: snapshot for a backup: index %llu, "
	       "%u bytes", client_name(el_d_client_of(d, conn)), (unsigned long long)conn,
	       (unsigned long long)d->rep.id, (unsigned long long)d->snap_index, d->snap_len);
	snapshot_chunk(d, d->snap_index, 0);
}

static void snapshot_request(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q)
{
	if (q->index == 0) { /* a new snapshot: after a read barrier */
		read_barrier(d, conn, q);
		return;
	}
	begin_reply(d, q->type, q->id);
	snapshot_chunk(d, q->index, q->offset);
	el_d_send(d, conn, &d->rep, false);
}

static void answer_read(struct el_daemon *d, const struct el_d_pending *p)
{
	begin_reply(d, p->type, p->client_id);
	if (p->type == EL_CW_SNAPSHOT) {
		snapshot_take(d, p->conn);
	} else if (p->type == EL_CW_QUERY) {
		int rc = el_node_query(d->node, p->name, p->name_len, &d->q);
		d->rep.err = rc;
		d->rep.name_len = p->name_len;
		memcpy(d->rep.name, p->name, p->name_len);
		if (rc == EL_OK)
			fill_query(d, &d->q);
	} else {
		fill_list(d, p);
	}
	el_d_send(d, p->conn, &d->rep, false);
}

/* The lock table's counts for STATUS. Counting walks every pool, at the
 * cost of the table's size, so a flood of STATUS must not count each time:
 * the counts are kept and counted again only when the applied index has
 * moved since (the node changes the table only when it applies an entry or
 * installs a snapshot, and both move it) and at most every USAGE_EVERY_MS.
 * A STATUS then costs O(1) whatever the table holds, and its counts are
 * exact while the table is still and at most USAGE_EVERY_MS old while it
 * changes: they are a view for operators, not a read. */
#define USAGE_EVERY_MS 100u
static const struct el_lock_usage *usage(struct el_daemon *d)
{
	const uint64_t applied = el_raft_applied(el_node_raft(d->node));
	if (!d->usage_valid ||
	    (applied != d->usage_applied && d->now_ms - d->usage_ms >= USAGE_EVERY_MS)) {
		el_lock_usage(el_node_table(d->node), &d->usage);
		d->usage_valid = true;
		d->usage_applied = applied;
		d->usage_ms = d->now_ms;
	}
	return &d->usage;
}

static void status(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q)
{
	const struct el_raft *r = el_node_raft(d->node);
	const struct el_lock_usage *u = usage(d);
	begin_reply(d, q->type, q->id);
	d->rep.node = d->cfg.id;
	d->rep.role = (uint8_t)el_raft_state(r);
	d->rep.term = el_raft_term(r);
	redirect(d, el_raft_leader(r));
	d->rep.commit = el_raft_commit(r);
	d->rep.applied = el_raft_applied(r);
	d->rep.last_index = el_raft_last_index(r);
	d->rep.n_sessions = u->sessions;
	d->rep.n_locks = u->locks;
	const struct el_conf *c = el_raft_conf(r);
	d->rep.n_members = c->n;
	for (uint32_t i = 0; i < c->n; i++) {
		struct el_cw_member *m = &d->rep.members[i];
		const struct el_d_book *b = el_d_book_find(d, c->m[i].id);
		m->node = c->m[i].id;
		m->role = c->m[i].role;
		m->reachable = m->node == d->cfg.id || (el_net_peer_up(d->net, m->node) &&
							 !el_d_peer_silent(d, m->node));
		if (b != NULL) {
			m->peer_addr_len = (uint8_t)strlen(b->peer_addr);
			memcpy(m->peer_addr, b->peer_addr, m->peer_addr_len);
			m->client_addr_len = (uint8_t)strlen(b->client_addr);
			memcpy(m->client_addr, b->client_addr, m->client_addr_len);
		}
	}
	el_d_send(d, conn, &d->rep, false);
}

/* The voter to hand leadership to: the first other voter with a live link
 * that has answered within an election timeout. A link stays up to a board
 * that is paused (SIGSTOP, a wedged loop): picked because it came first, it
 * got a TRANSFER naming no node answered EBUSY ("has not answered") and a
 * stopping leader's handover, which then ran out, while another voter
 * was healthy. */
el_id_t el_d_transfer_target(struct el_daemon *d)
{
	const struct el_conf *c = el_raft_conf(el_node_raft(d->node));
	for (uint32_t i = 0; i < c->n; i++)
		if (c->m[i].id != d->cfg.id && c->m[i].role == EL_MEMBER_VOTER &&
		    el_net_peer_up(d->net, c->m[i].id) && !el_d_peer_silent(d, c->m[i].id))
			return c->m[i].id;
	return 0;
}

/* TRANSFER to target, unless the leader has not heard from it for an
 * election timeout (stopped, paused, cut off): the core would hold new
 * proposals for the transfer's timeout, and a TimeoutNow left queued to it
 * would start an election when it wakes (an outside tester: a transfer to
 * a paused board stalled locks for a second, then cost two elections).
 * EL_EBUSY with why, as for a transfer already under way. */
static int transfer_to(struct el_daemon *d, el_id_t target, char *why, size_t cap)
{
	struct el_raft *r = el_node_raft(d->node);
	if (el_raft_state(r) == EL_LEADER && target != d->cfg.id &&
	    el_conf_find(el_raft_conf(r), target) != NULL &&
	    (el_d_peer_silent(d, target) || !el_net_peer_up(d->net, target))) {
		snprintf(why, cap, " (node %u has not answered the leader for %u ms, or its link is "
			 "down)", target, d->cfg.election_ms);
		return EL_EBUSY;
	}
	return el_raft_transfer(r, target, d->now_ms);
}

/* An address a new member is given: empty (not known yet) or one the
 * dialer can use, tls+tcp://HOST:PORT, as the config file requires, and no
 * wildcard (0.0.0.0, [::], *: every address of whoever dials it; members
 * add took it while [peers] refused it: an outside tester). A bad one is
 * refused before it reaches the address book or the log. */
static bool member_addr_ok(const char *a, uint8_t len)
{
	char url[EL_CW_ADDR_MAX + 1], host[EL_CW_ADDR_MAX], port[8];
	if (len == 0)
		return true;
	EL_ASSERT(len <= EL_CW_ADDR_MAX);
	memcpy(url, a, len);
	url[len] = '\0';
	return strlen(url) == len && strncmp(url, "tls+tcp://", 10) == 0 &&
	       el_url_parse(url, host, sizeof host, port, sizeof port) == EL_OK &&
	       !el_dcfg_wildcard_addr(url);
}

/* Whether a member's address (book) and a requested one (len bytes) name
 * one endpoint, as the config check compares [peers] (an outside tester's
 * localhost:9122 was let in beside 127.0.0.1:9122). */
static bool same_addr(const char *book, const char *a, uint8_t len)
{
	char url[EL_CW_ADDR_MAX + 1];
	if (len == 0 || len > EL_CW_ADDR_MAX)
		return false;
	memcpy(url, a, len);
	url[len] = '\0';
	return el_dcfg_same_endpoint(book, url);
}

/* The current member (other than the one added) that already has one of the
 * addresses a new member is given, or 0. Two members at one address make the
 * new one a learner that is never reached (its traffic goes to the other),
 * so such an add is refused before anything is proposed. Addresses compare
 * by port and host (same_addr): a name other than localhost only as
 * written, since resolving it would stall the loop. */
static el_id_t addr_taken(struct el_daemon *d, const struct el_cw_msg *q)
{
	const struct el_conf *c = el_raft_conf(el_node_raft(d->node));
	for (uint32_t i = 0; i < c->n; i++) {
		const struct el_d_book *b =
			c->m[i].id != q->node ? el_d_book_find(d, c->m[i].id) : NULL;
		if (b == NULL)
			continue;
		if (same_addr(b->peer_addr, q->peer_addr, q->peer_addr_len) ||
		    same_addr(b->client_addr, q->peer_addr, q->peer_addr_len) ||
		    same_addr(b->peer_addr, q->client_addr, q->client_addr_len) ||
		    same_addr(b->client_addr, q->client_addr, q->client_addr_len))
			return c->m[i].id;
	}
	return 0;
}

/* MEMBER_PROMOTE or TRANSFER naming a node that is not a member. The core
 * answers those EINVAL, as it does a voter promoted or a transfer to itself
 * or to a learner, while MEMBER_REMOVE of a non-member is ENOTFOUND: the
 * leader answers ENOTFOUND for all three alike, from the configuration the
 * core checks (its latest). Not on a follower, whose configuration may lag:
 * the core tells it ENOTLEADER. */
static bool names_non_member(struct el_daemon *d, const struct el_cw_msg *q)
{
	const struct el_raft *r = el_node_raft(d->node);
	return (q->type == EL_CW_MEMBER_PROMOTE || q->type == EL_CW_TRANSFER) && q->node != 0 &&
	       el_raft_state(r) == EL_LEADER && el_conf_find(el_raft_conf(r), q->node) == NULL;
}

/* An administration request's reply: rc, the node it is about and the
 * entry of the change (0: none); "not the leader" names the leader. */
static void admin_reply(struct el_daemon *d, uint64_t conn, uint8_t type, uint64_t id, int rc,
			el_id_t node, uint64_t index)
{
	begin_reply(d, type, id);
	d->rep.err = rc;
	d->rep.node = node;
	d->rep.index = index;
	if (rc == EL_ENOTLEADER)
		redirect_client(d, el_raft_leader(el_node_raft(d->node)));
	el_d_send(d, conn, &d->rep, false);
}

void el_d_admin_answer(struct el_daemon *d, const struct el_d_admin_wait *w, int rc)
{
	el_log(rc == EL_OK ? EL_LOG_INFO : EL_LOG_WARN,
	       "client %s conn %llu req %llu: admin %s for node %u: %s (entry %llu of term %llu %s)",
	       client_name(el_d_client_of(d, w->conn)), (unsigned long long)w->conn,
	       (unsigned long long)w->id, el_d_request_name(w->type), w->node, el_strerror(rc),
	       (unsigned long long)w->index, (unsigned long long)w->term,
	       rc == EL_OK		? "committed"
	       : rc == EL_ENOTLEADER	? "replaced by another leader's: not applied"
					: "not seen committed in time: `edgelock members list` says "
					  "whether it took effect");
	admin_reply(d, w->conn, w->type, w->id, rc, w->node, w->index);
}

/* Why the addresses of MEMBER_ADD q are refused, into why (cap bytes), or
 * false when they may be taken. Besides a bad address and one a member
 * has: one address for both (the new node cannot listen twice on one port,
 * and its peers would dial its client port, so it would be a learner no
 * one reaches: an outside tester), and a client address without a peer
 * address, which the leader had nowhere to keep (its book holds a node's
 * addresses once it can dial it) and dropped without a word. An add with
 * neither address is still taken: both then come from the node's hello. */
static bool add_refused(struct el_daemon *d, const struct el_cw_msg *q, char *why, size_t cap)
{
	char peer[EL_CW_ADDR_MAX + 1], swapped[4 * EL_CW_ADDR_MAX + 240];
	EL_ASSERT(q->peer_addr_len <= EL_CW_ADDR_MAX);
	memcpy(peer, q->peer_addr, q->peer_addr_len);
	peer[q->peer_addr_len] = '\0';
	const el_id_t taken = addr_taken(d, q);
	if (!member_addr_ok(q->peer_addr, q->peer_addr_len) ||
	    !member_addr_ok(q->client_addr, q->client_addr_len))
		snprintf(why, cap, " (an address not tls+tcp://HOST:PORT, or 0.0.0.0/[::]: "
			 "give the node's LAN address)");
	else if (q->peer_addr_len == 0 && q->client_addr_len > 0)
		snprintf(why, cap, " (a client address without a peer address: give both, or "
			 "neither to take them from the node's hello)");
	else if (q->peer_addr_len > 0 && same_addr(peer, q->client_addr, q->client_addr_len))
		snprintf(why, cap, " (PEER_ADDR and CLIENT_ADDR are one address, %s: a node "
			 "needs a port for each)", peer);
	else if (taken != 0)
		snprintf(why, cap, " (an address of member %u)", taken);
	else if (el_d_joiner_swapped(d, q->node, q->peer_addr, q->peer_addr_len, q->client_addr,
				     q->client_addr_len, swapped, sizeof swapped))
		snprintf(why, cap, " (%s)", swapped); /* its hello said so just now */
	else
		return false;
	return true;
}

static void admin(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q)
{
	struct el_raft *r = el_node_raft(d->node);
	uint64_t index = 0;
	char why[4 * EL_CW_ADDR_MAX + 280] = "";
	const bool add = q->type == EL_CW_MEMBER_ADD;
	const bool addr_bad = add && add_refused(d, q, why, sizeof why);
	int rc = addr_bad ? EL_EINVAL : EL_OK;
	el_id_t target = q->node;
	if (rc != EL_OK) {
		target = 0;
	} else if (names_non_member(d, q)) {
		rc = EL_ENOTFOUND;
	} else if (q->type == EL_CW_TRANSFER && el_raft_state(r) != EL_LEADER) {
		rc = EL_ENOTLEADER; /* before a target: a follower alone found none and said
				     * "not found", which the CLI took for a bad id (an outside tester) */
	} else if (q->type == EL_CW_TRANSFER) {
		if (target == 0)
			target = el_d_transfer_target(d);
		rc = target == 0 ? EL_ENOTFOUND : transfer_to(d, target, why, sizeof why);
	} else {
		enum el_conf_op op = q->type == EL_CW_MEMBER_REMOVE ? EL_CONF_REMOVE
				     : q->type == EL_CW_MEMBER_PROMOTE ? EL_CONF_PROMOTE
				     : q->learner ? EL_CONF_ADD_LEARNER : EL_CONF_ADD_VOTER;
		rc = el_raft_propose_conf(r, op, q->node, d->now_ms, &index);
		uint64_t term = 0;
		if (rc != EL_OK && rc != EL_ENOTLEADER && el_d_change_made(d, q, &index, &term)) {
			el_log(EL_LOG_INFO, "client %s conn %llu req %llu: admin %s for node %u: "
			       "already made by entry %llu of term %llu: answering with it",
			       client_name(el_d_client_of(d, conn)), (unsigned long long)conn,
			       (unsigned long long)q->id, el_d_request_name(q->type), q->node,
			       (unsigned long long)index, (unsigned long long)term);
			el_d_admin_wait_on(d, conn, q, index, term);
			return;
		}
		if (rc == EL_EINVAL && add && el_conf_find(el_raft_conf(r), q->node) != NULL)
			snprintf(why, sizeof why, " (node %u is already a member)", q->node);
	}
	/* The new member's addresses only once the leader took the change: a
	 * refused add (already a member, not the leader) rewrote a member's
	 * addresses on every node it reached, cutting that member off until
	 * they restarted (an outside tester). */
	if (rc == EL_OK && add && q->peer_addr_len > 0)
		el_d_book_set(d, q->node, q->peer_addr, q->peer_addr_len, q->client_addr,
			      q->client_addr_len);
	/* A change the leader took is answered once it commits (admin_wait.c). */
	if (rc == EL_OK && q->type != EL_CW_TRANSFER) {
		el_d_admin_wait_add(d, conn, q, index);
		el_log(EL_LOG_INFO, "client %s conn %llu req %llu: admin %s for node %u: proposed "
		       "at entry %llu; answering once it commits",
		       client_name(el_d_client_of(d, conn)), (unsigned long long)conn,
		       (unsigned long long)q->id, el_d_request_name(q->type), q->node,
		       (unsigned long long)index);
		return;
	}
	el_log(EL_LOG_INFO, "client %s conn %llu req %llu: admin %s for node %u: %s%s",
	       client_name(el_d_client_of(d, conn)), (unsigned long long)conn,
	       (unsigned long long)q->id, el_d_request_name(q->type),
	       q->type == EL_CW_TRANSFER ? target : q->node, el_strerror(rc), why);
	admin_reply(d, conn, q->type, q->id, rc, target, index);
}

/* ---- entry points ----------------------------------------------------------- */

void el_d_client_frame(struct el_daemon *d, uint64_t conn, const uint8_t *buf, uint32_t len)
{
	struct el_cw_msg *q = &d->req;
	struct el_d_client *cl = el_d_client_of(d, conn);
	if (cl == NULL || cl->auth == EL_D_AUTH_REFUSED || cl->auth == EL_D_AUTH_NONE)
		return; /* refused and closing (or never challenged): nothing more */
	int rc = el_cw_decode(q, buf, len);
	if (cl->auth == EL_D_AUTH_CHALLENGED) {
		/* the first frame: a PROOF, or a request from an anonymous client */
		if (rc == EL_EVERSION) {
			el_d_client_wrong_version(d, cl, q->id);
			return;
		}
		if (rc != EL_OK) {
			el_d_client_prove(d, cl, buf, len);
			return;
		}
		if (!el_d_client_anonymous(d, cl))
			return;
	}
	if (rc != EL_OK || !el_cw_is_request(q->type)) {
		log_bad_frame(d, conn, rc, q, buf, len);
		send_error(d, conn, q->id, rc != EL_OK ? rc : EL_EDECODE, false);
		return;
	}
	char name[EL_LOG_NAME_CAP(EL_NAME_MAX)];
	el_log(EL_LOG_DEBUG, "client %s conn %llu req %llu: %s %s session %llu seq %llu",
	       cl->name[0] != '\0' ? cl->name : "anonymous", (unsigned long long)conn,
	       (unsigned long long)q->id, el_d_request_name(q->type),
	       el_log_name(name, sizeof name, q->name, q->name_len),
	       (unsigned long long)q->session, (unsigned long long)q->seq);
	if (session_unsettled(d, q)) { /* asked again 20 ms later (libedgelock) */
		reply_err(d, conn, q->type, q->id, EL_ENOTLEADER, 0);
		return;
	}
	if (el_d_authorize(d, cl, q) != EL_OK) {
		d->client_frames_refused++;
		reply_err(d, conn, q->type, q->id, EL_EPERM, 0);
		return;
	}
	switch (q->type) {
	case EL_CW_PING:
		reply_err(d, conn, q->type, q->id, EL_OK, 0);
		break;
	case EL_CW_STATUS:
		status(d, conn, q);
		break;
	case EL_CW_QUERY:
	case EL_CW_LIST:
		read_barrier(d, conn, q);
		break;
	case EL_CW_SNAPSHOT:
		snapshot_request(d, conn, q);
		break;
	case EL_CW_MEMBER_ADD:
	case EL_CW_MEMBER_REMOVE:
	case EL_CW_MEMBER_PROMOTE:
	case EL_CW_TRANSFER:
		admin(d, conn, q);
		break;
	default:
		command(d, conn, cl, q);
		break;
	}
}

/* OPEN_SESSION applied: a new session, or the one an earlier open with the
 * same nonce created. That one is given back only to its own identity; any
 * other gets EPERM and nothing is attached to its connection. */
static void opened(struct el_daemon *d, const struct el_d_pending *p, uint64_t session)
{
	const struct el_d_client *cl = el_d_client_of(d, p->conn);
	if (cl != NULL && el_d_client_owns(d, cl, session)) {
		d->rep.session = session;
		attach(d, session, p->conn);
		return;
	}
	d->rep.err = EL_EPERM;
	d->rep.index = 0;
	el_log(EL_LOG_WARN, "client %s conn %llu req %llu: OPEN_SESSION with the nonce of "
	       "another client's session refused", cl != NULL && cl->name[0] != '\0' ? cl->name
	       : "anonymous", (unsigned long long)p->conn,
	       (unsigned long long)p->client_id);
}

/* The core refused a committed command EL_EFULL: a table of the lock table
 * (sessions, locks, holds, waiters) is full, for everyone. The client's
 * message cannot say which, and the per-identity [limits] refusals have
 * lines of their own; this one says which table, at most once each
 * TABLE_FULL_LOG_MS with a count (an outside tester saw 230,000 such
 * refusals and no line). Counted in table_full_total. */
#define TABLE_FULL_LOG_MS 10000u
static void table_full(struct el_daemon *d, const struct el_d_pending *p)
{
	d->table_full_total++;
	if (d->table_full_ms != 0 && d->now_ms - d->table_full_ms < TABLE_FULL_LOG_MS) {
		d->table_full_held++;
		return;
	}
	struct el_lock_usage u;
	el_lock_usage(el_node_table(d->node), &u);
	el_log(EL_LOG_WARN, "lock table full: %s refused (%s) with %u of %u sessions, %u of %u "
	       "locks, %u of %u holds, %u of %u waiters, %u of %u watches in use (%llu more "
	       "refused so since the last such line): the cluster's capacity, not one "
	       "client's [limits]", el_d_request_name(p->type), el_strerror(EL_EFULL),
	       u.sessions, (unsigned)EL_SESSIONS_MAX, u.locks, (unsigned)EL_LOCKS_MAX, u.holds,
	       (unsigned)EL_HOLDS_MAX, u.waits, (unsigned)EL_WAITERS_MAX, u.watches,
	       (unsigned)EL_WATCHES_MAX, (unsigned long long)d->table_full_held);
	d->table_full_ms = d->now_ms > 0 ? d->now_ms : 1;
	d->table_full_held = 0;
}

void el_d_serve_turn(struct el_daemon *d)
{
	if (d->queue_full_held > 0 && (d->stopping || d->now_ms - d->queue_full_ms >= 1000)) {
		el_log(EL_LOG_WARN, "%llu more client connection(s) closed for a full send queue "
		       "([limits] client_queue = %u frames, client_queue_bytes = %u bytes not "
		       "read) in the last second", (unsigned long long)d->queue_full_held,
		       d->cfg.client_queue, d->cfg.client_queue_bytes);
		d->queue_full_held = 0;
		d->queue_full_ms = d->now_ms;
	}
	if (d->table_full_held > 0 &&
	    (d->stopping || d->now_ms - d->table_full_ms >= TABLE_FULL_LOG_MS)) {
		el_log(EL_LOG_WARN, "lock table full: %llu more command(s) refused (%s) in the last "
		       "%u s", (unsigned long long)d->table_full_held, el_strerror(EL_EFULL),
		       TABLE_FULL_LOG_MS / 1000u);
		d->table_full_held = 0;
		d->table_full_ms = d->now_ms;
	}
}

void el_d_reply(struct el_daemon *d, const struct el_node_reply *r)
{
	struct el_d_pending *p = pend_find(d, r->req_id);
	if (p == NULL)
		return;
	if (p->conn != 0 && r->kind == EL_REPLY_READ && r->err == EL_OK) {
		answer_read(d, p);
	} else if (p->conn != 0) {
		begin_reply(d, p->type, p->client_id);
		d->rep.err = r->err;
		if (r->err == EL_ENOTLEADER)
			redirect_client(d, r->leader);
		if (r->kind == EL_REPLY_CMD) {
			d->rep.token = r->token;
			d->rep.count = r->count;
			if (r->err == EL_ELIMIT) { /* the core's count is the semaphore's limit */
				d->rep.permits = (uint8_t)r->count;
				d->rep.count = 0;
			}
			d->rep.queued = r->queued;
			d->rep.index = r->index;
			if (p->type == EL_CW_OPEN_SESSION && r->err == EL_OK)
				opened(d, p, r->session);
		}
		el_d_send(d, p->conn, &d->rep, false);
	}
	if (r->kind == EL_REPLY_CMD && r->err == EL_EFULL)
		table_full(d, p);
	el_d_metrics_reply(d, p->start_ns, r->err);
	pend_free(d, p);
}

void el_d_event(struct el_daemon *d, const struct el_lock_event *e)
{
	if (!el_d_events_leader(d))
		return;
	uint64_t conn = event_conn(d, e->session);
	if (conn == 0 || e->kind == 0 || e->kind > EL_EV_VALUE_CHANGED)
		return;
	memset(&d->rep, 0, sizeof d->rep);
	d->rep.type = EL_CW_EVENT;
	d->rep.kind = e->kind;
	d->rep.session = e->session;
	d->rep.seq = e->seq;
	d->rep.token = e->token;
	d->rep.name_len = e->name_len;
	memcpy(d->rep.name, e->name, e->name_len);
	el_d_send(d, conn, &d->rep, false);
}

/* Events were lost in the core: every attached session hears of it, but
 * not one that has ended: its slot's entry stays until another session
 * attaches there, and a GAP named it to its old connection, each time
 * (protocol_test, test_gap_live_sessions). */
void el_d_gap(struct el_daemon *d)
{
	if (!el_d_events_leader(d))
		return;
	for (uint32_t i = 0; i < EL_SESSIONS_MAX; i++)
		if (attached_live(d, i))
			send_gap(d, i);
}

/* Attach slots looked at per turn (a turn comes at least every 100 ms, so
 * every slot at least every EL_SESSIONS_MAX / EXPIRING_BATCH turns). */
#define EXPIRING_BATCH 512u

/*
 * The leader warns a client whose session has a third of its lease or less
 * left on the leader's clock (SESSION_EXPIRING, once per lease: a committed
 * keepalive that restores the lease re-arms it). It reads the session's TTL
 * from the lock table's slot (the attach table shares its indexing).
 */
void el_d_expiring(struct el_daemon *d)
{
	if (!el_d_events_leader(d))
		return;
	const struct el_lock_table *t = el_node_table(d->node);
	for (uint32_t k = 0; k < EXPIRING_BATCH && k < EL_SESSIONS_MAX; k++) {
		struct el_d_attach *a = &d->attach[d->expiring_cursor];
		uint32_t ttl = t->sessions[d->expiring_cursor].id == a->session
				       ? t->sessions[d->expiring_cursor].ttl_ms : 0;
		d->expiring_cursor = (d->expiring_cursor + 1) % EL_SESSIONS_MAX;
		uint64_t left;
		if (a->conn == 0 || ttl == 0 ||
		    el_node_lease_left(d->node, a->session, d->now_ms, &left) != EL_OK)
			continue;
		if (left * 3 > ttl) {
			a->warned = false;
			continue;
		}
		if (a->warned)
			continue;
		a->warned = true;
		memset(&d->rep, 0, sizeof d->rep);
		d->rep.type = EL_CW_EVENT;
		d->rep.kind = EL_CW_EV_SESSION_EXPIRING;
		d->rep.session = a->session;
		d->rep.lease_ms = (uint32_t)left;
		el_d_send(d, a->conn, &d->rep, false);
	}
}
