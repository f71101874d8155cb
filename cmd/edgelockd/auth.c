/*
 * auth.c - who a client is and what it may do (docs/security.md).
 *
 * Identity: every client connection is challenged when it opens
 * (net/el_ident.h). Its first frame is either a PROOF, checked against this
 * connection's nonce with role client (the proven name is the certificate's
 * CN), or a request: the client chose not to prove, and is anonymous, which
 * is refused outright when [tls] client_auth = required. A connection that
 * sends neither within PROOF_MS of its challenge is closed: otherwise one
 * that finished its TLS handshake and went quiet would hold a max_clients
 * slot for ever, and max_clients of them would lock every other client out.
 *
 * Ownership: the daemon writes the opener's identity into the client field
 * of OPEN_SESSION ("<identity> <label>", or " <label>" for anonymous: a CN
 * holds no space, so the two never collide). That field is replicated with
 * the session, so every node, after any failover, knows who owns it; a
 * request naming a session (keepalive, close, locks, elections, watches)
 * from anyone else is refused with EL_EPERM.
 *
 * Access: every request type is checked against the [acl] section
 * (net/el_acl.h) with the operation it needs and its lock name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_daemon.h"
#include "el_error.h"
#include "el_platform.h"
#include "el_url.h"

#define PROOF_MS EL_D_PROOF_MS
/* Client slots el_d_clients_unproven looks at every PROOF_SWEEP_MS: those
 * of the default max_clients (1024, 2048 slots) at once, of the largest
 * (65000) within 1.6 s. */
#define PROOF_SWEEP_BATCH 4096u
#define PROOF_SWEEP_MS 100u

int el_d_clients_open(struct el_daemon *d)
{
	d->clients = calloc(el_net_slots(d->net), sizeof *d->clients);
	if (d->clients == NULL)
		return EL_EFULL;
	if (!d->cfg.acl.configured)
		el_log(EL_LOG_WARN, "no [acl] section: every client with a proven identity may do "
		       "everything, anonymous clients nothing");
	return EL_OK;
}

struct el_d_client *el_d_client_of(struct el_daemon *d, uint64_t conn)
{
	struct el_d_client *cl = &d->clients[el_net_slot(d->net, conn)];
	return cl->conn == conn ? cl : NULL;
}

/* ERROR err (with the request id, 0: none), and the connection closed. */
static void refuse_as(struct el_daemon *d, struct el_d_client *cl, const char *why, int err,
		      uint64_t id)
{
	char from[EL_ADDR_NAME_MAX];
	el_net_conn_name(d->net, cl->conn, from, sizeof from);
	if (why != NULL) /* NULL: the caller's rate-limited line said it */
		el_log(EL_LOG_WARN, "client connection from %s: %s; closed", from, why);
	d->rep = (struct el_cw_msg){ .type = EL_CW_ERROR, .id = id, .err = err };
	d->client_frames_refused++;
	el_d_send(d, cl->conn, &d->rep, true);
	cl->auth = EL_D_AUTH_REFUSED;
}

static void refuse(struct el_daemon *d, struct el_d_client *cl, const char *why)
{
	refuse_as(d, cl, why, EL_EPERM, 0);
}

/* The first frame has a {0: version, 1: type} head of another version: a
 * PROOF or a request, it cannot be told which, and neither can be read.
 * Every message of another version is answered EVERSION (docs/protocol.md),
 * this one too, and the connection is closed: nothing after it can be
 * served on a connection whose identity is still unknown. */
void el_d_client_wrong_version(struct el_daemon *d, struct el_d_client *cl, uint64_t id)
{
	refuse_as(d, cl, "first frame (proof or request) of a protocol version other than 1",
		  EL_EVERSION, id);
}

/* A client connection was accepted: challenge it. */
void el_d_client_opened(struct el_daemon *d, uint64_t conn)
{
	struct el_d_client *cl = &d->clients[el_net_slot(d->net, conn)];
	memset(cl, 0, sizeof *cl);
	cl->conn = conn;
	uint8_t ch[EL_IDENT_CHALLENGE_MAX];
	int n = el_ident_challenge(d->ident, cl->nonce, ch, sizeof ch);
	if (n < 0 || el_net_conn_send(d->net, conn, ch, (uint32_t)n) != EL_OK) {
		el_net_close(d->net, conn);
		cl->conn = 0;
		return;
	}
	cl->auth = EL_D_AUTH_CHALLENGED;
	cl->opened_ms = d->now_ms;
}

void el_d_clients_unproven(struct el_daemon *d)
{
	/* Every PROOF_SWEEP_MS, not every turn: a sweep is work that follows
	 * max_clients, and a 10 s bound has no need of a turn's precision. */
	if (d->now_ms < d->proof_sweep_ms)
		return;
	d->proof_sweep_ms = d->now_ms + PROOF_SWEEP_MS;
	const uint32_t slots = el_net_slots(d->net);
	for (uint32_t k = 0; k < PROOF_SWEEP_BATCH && k < slots; k++) {
		struct el_d_client *cl = &d->clients[d->proof_cursor];
		d->proof_cursor = (d->proof_cursor + 1) % slots;
		if (cl->conn == 0 || cl->auth != EL_D_AUTH_CHALLENGED ||
		    d->now_ms - cl->opened_ms < PROOF_MS)
			continue;
		el_log(EL_LOG_WARN, "client connection %llu: no identity proof or request in %u s; "
		       "closed", (unsigned long long)cl->conn, PROOF_MS / 1000u);
		cl->auth = EL_D_AUTH_REFUSED;
		el_net_close(d->net, cl->conn);
	}
}

void el_d_client_gone(struct el_daemon *d, uint64_t conn)
{
	struct el_d_client *cl = el_d_client_of(d, conn);
	if (cl != NULL)
		memset(cl, 0, sizeof *cl);
}

/*
 * [limits] connections_per_client: cl, just proven (or anonymous: all of
 * them are one identity), is refused EL_EFULL and closed when its identity
 * holds that many other client connections here. Without it one identity
 * held every max_clients slot of the leader, proven and idle, and no other
 * client could reach the cluster (an outside security tester; anonymous
 * clients could too, a PING being allowed to all). A scan of the client
 * table per new identity: connections are opened far less often than
 * requests are sent. True when refused; one line a second at most.
 */
static bool over_connections(struct el_daemon *d, struct el_d_client *cl)
{
	const uint32_t max = d->cfg.connections_per_client, slots = el_net_slots(d->net);
	uint32_t n = 0;
	for (uint32_t k = 0; k < slots && n < max && max != 0; k++) {
		const struct el_d_client *o = &d->clients[k];
		n += o != cl && o->conn != 0 && o->auth == cl->auth &&
		     (cl->auth == EL_D_AUTH_ANONYMOUS || strcmp(o->name, cl->name) == 0);
	}
	if (max == 0 || n < max)
		return false;
	const char *who = cl->auth == EL_D_AUTH_PROVEN ? cl->name : "";
	const uint64_t held = el_d_refusal(d, &d->quota.conn_refusals, who,
					   "connections_per_client", max);
	char from[EL_ADDR_NAME_MAX];
	el_net_conn_name(d->net, cl->conn, from, sizeof from);
	if (held != 0)
		el_log(EL_LOG_WARN, "client connection from %s: client %s holds %u connections to "
		       "this node, [limits] connections_per_client = %u: refused (EL_EFULL), closed "
		       "(%llu refused in the last second)", from, d->quota.conn_refusals.who, n, max,
		       (unsigned long long)held);
	refuse_as(d, cl, NULL, EL_EFULL, 0);
	return true;
}

/* A node's certificate proven on the client port (err from el_ident_verify)
 * is a node dialing this node's client_addr as its peer address, given so
 * to members add: it redials every 2 s for good, so its line is rate
 * limited (el_d_refusal_logs, one a minute, its end said) and says what to
 * check. True when it was that, said or counted. */
static bool node_dialing(struct el_daemon *d, const char *err)
{
	static const char node_cert[] = "a node certificate (";
	if (strncmp(err, node_cert, sizeof node_cert - 1) != 0)
		return false;
	char why[420];
	uint64_t held = 0;
	snprintf(why, sizeof why, "identity not proven: %s: a node dials this client port as "
		 "this node's peer address (given to members add as PEER_ADDR? `edgelock members "
		 "list`)", err);
	if (!el_d_refusal_logs(d, EL_D_REFUSED_CLIENT, 0, why, &held))
		return true;
	char more[80] = "";
	if (held > 0)
		snprintf(more, sizeof more, " (%llu more alike since the last such line)",
			 (unsigned long long)held);
	el_log(EL_LOG_WARN, "client connection: %s; closed%s", why, more);
	return true;
}

/* The first frame was not a request: it must be a valid client PROOF. */
void el_d_client_prove(struct el_daemon *d, struct el_d_client *cl, const uint8_t *buf,
		       uint32_t len)
{
	char err[256];
	int rc = el_ident_verify(d->ident, cl->nonce, EL_IDENT_CLIENT, buf, len, cl->name, err,
				 sizeof err);
	if (rc != EL_OK) {
		char why[300];
		snprintf(why, sizeof why, "identity not proven: %s", err);
		refuse_as(d, cl, node_dialing(d, err) ? NULL : why, EL_EPERM, 0);
		return;
	}
	cl->auth = EL_D_AUTH_PROVEN;
	if (over_connections(d, cl))
		return;
	el_log(EL_LOG_DEBUG, "client connection: proven as %s", cl->name);
}

/* The first frame is a request without a proof: anonymous, if allowed. */
bool el_d_client_anonymous(struct el_daemon *d, struct el_d_client *cl)
{
	if (d->cfg.client_cert_required) {
		refuse(d, cl, "no identity proof, and [tls] client_auth = required");
		return false;
	}
	cl->auth = EL_D_AUTH_ANONYMOUS;
	return !over_connections(d, cl);
}

static const char *identity(const struct el_d_client *cl)
{
	return cl->auth == EL_D_AUTH_PROVEN ? cl->name : NULL;
}

const char *el_d_identity(const struct el_d_client *cl)
{
	return identity(cl) != NULL ? identity(cl) : "";
}

/* Does the session's client field say id (NULL: anonymous) opened it? */
static bool owns(const char *field, uint32_t len, const char *id)
{
	if (id == NULL)
		return len > 0 && field[0] == ' ';
	const size_t n = strlen(id);
	return n <= len && memcmp(field, id, n) == 0 && (n == len || field[n] == ' ');
}

/* Write the opener's identity into OPEN_SESSION's client field. */
int el_d_client_stamp(const struct el_d_client *cl, struct el_lock_cmd *c)
{
	const char *id = identity(cl);
	const size_t n = id != NULL ? strlen(id) : 0;
	if (n + 1 > EL_CLIENT_NAME_MAX)
		return EL_EINVAL; /* the identity must fit whole: ownership rests on it */
	char label[EL_CLIENT_NAME_MAX];
	const uint32_t label_len = c->client_len;
	memcpy(label, c->client, label_len);
	memcpy(c->client, id != NULL ? id : "", n);
	c->client[n] = ' ';
	uint32_t keep = label_len;
	if (n + 1 + keep > EL_CLIENT_NAME_MAX)
		keep = (uint32_t)(EL_CLIENT_NAME_MAX - n - 1);
	memcpy(c->client + n + 1, label, keep);
	c->client_len = (uint8_t)(n + 1 + keep);
	return EL_OK;
}

/* The field keeps its space when the label is empty ("IDENTITY "): the
 * owner rule and [limits] read the identity up to it, on every node of
 * any release. Only what is shown drops it. */
uint32_t el_d_client_shown(const char *field, uint32_t len)
{
	while (len > 0 && field[len - 1] == ' ')
		len--;
	return len;
}

/* True unless the live session names another identity than cl's. An
 * OPEN_SESSION retried with its nonce gets the session that nonce opened
 * (core/lock_open.c); the core knows no owners, so the nonce of another
 * identity's open would hand over its session and its events. */
bool el_d_client_owns(const struct el_daemon *d, const struct el_d_client *cl, uint64_t session)
{
	const struct el_lock_table *t = el_node_table(d->node);
	el_slot_t slot = el_lock_session_slot(t, session);
	return slot == EL_LOCK_NONE || t->sessions[slot].id != session ||
	       owns(t->sessions[slot].client, t->sessions[slot].client_len, identity(cl));
}

bool el_d_client_may(const struct el_daemon *d, const struct el_d_client *cl, enum el_acl_op op,
		     const char *name, size_t name_len)
{
	return el_acl_allows(&d->cfg.acl, identity(cl), op, name, name_len);
}

/* The operation a request type needs (0: none) and whether it names a
 * session the requester must own. */
static uint32_t op_of(uint8_t type, bool *session)
{
	*session = false;
	switch (type) {
	case EL_CW_PING: return 0;
	case EL_CW_OPEN_SESSION: return EL_ACL_LOCK | EL_ACL_ELECT | EL_ACL_OBSERVE;
	case EL_CW_KEEPALIVE:
	case EL_CW_CLOSE_SESSION: *session = true; return 0;
	case EL_CW_ACQUIRE:
	case EL_CW_RELEASE: *session = true; return EL_ACL_LOCK;
	case EL_CW_CAMPAIGN:
	case EL_CW_RESIGN:
	case EL_CW_PROCLAIM: *session = true; return EL_ACL_ELECT;
	case EL_CW_WATCH:
	case EL_CW_UNWATCH: *session = true; return EL_ACL_OBSERVE;
	case EL_CW_QUERY:
	case EL_CW_LIST:
	case EL_CW_STATUS: return EL_ACL_OBSERVE;
	default: return EL_ACL_ADMIN; /* members, transfer */
	}
}

/* A client the [acl] refuses may retry for as long as it runs (a device
 * retried 5 times a second): one line a minute per client, request and
 * name, with the count held back since (el_d_refusal_logs); the conn and req
 * of the first are named, the rest are alike. */
static void acl_refused(struct el_daemon *d, const struct el_d_client *cl,
			const struct el_cw_msg *q, const char *who, const char *what)
{
	char key[512]; /* cut if need be: the line is told whole, the key need not be */
	if (snprintf(key, sizeof key, "client %s: %s%s", who, el_d_request_name(q->type), what) < 0)
		key[0] = '\0';
	uint64_t held = 0;
	if (!el_d_refusal_logs(d, EL_D_REFUSED_ACL, 0, key, &held))
		return;
	char more[80] = "";
	if (held > 0)
		snprintf(more, sizeof more, " (%llu more alike since the last such line)",
			 (unsigned long long)held);
	el_log(EL_LOG_WARN, "client %s conn %llu req %llu: %s%s refused by [acl]%s", who,
	       (unsigned long long)cl->conn, (unsigned long long)q->id,
	       el_d_request_name(q->type), what, more);
}

/* EL_OK, or EL_EPERM (logged, acl_refused) when cl may not make request q. */
int el_d_authorize(struct el_daemon *d, const struct el_d_client *cl, const struct el_cw_msg *q)
{
	bool session;
	const uint32_t ops = op_of(q->type, &session);
	const char *who = identity(cl) != NULL ? identity(cl) : "anonymous";
	if (session) {
		const struct el_lock_table *t = el_node_table(d->node);
		el_slot_t slot = el_lock_session_slot(t, q->session);
		if (slot != EL_LOCK_NONE && t->sessions[slot].id == q->session &&
		    !owns(t->sessions[slot].client, t->sessions[slot].client_len, identity(cl))) {
			el_log(EL_LOG_WARN, "client %s conn %llu req %llu: %s on session %llu of "
			       "another client refused", who, (unsigned long long)cl->conn,
			       (unsigned long long)q->id, el_d_request_name(q->type),
			       (unsigned long long)q->session);
			return EL_EPERM;
		}
	}
	if (ops == 0)
		return EL_OK;
	const bool named = q->type != EL_CW_OPEN_SESSION && q->type != EL_CW_LIST &&
			   q->type != EL_CW_STATUS && (ops & EL_ACL_ADMIN) == 0;
	for (uint32_t op = 1; op <= EL_ACL_ADMIN; op <<= 1)
		if ((ops & op) != 0 && el_d_client_may(d, cl, (enum el_acl_op)op,
						       named ? q->name : NULL, q->name_len))
			return EL_OK;
	/* what was asked: the name, or an admin request's node and addresses */
	char what[3 * EL_LOG_NAME_CAP(EL_CW_ADDR_MAX) + 64];
	char a[EL_LOG_NAME_CAP(EL_CW_ADDR_MAX)], b[EL_LOG_NAME_CAP(EL_CW_ADDR_MAX)];
	if (named)
		snprintf(what, sizeof what, " %s", el_log_name(a, sizeof a, q->name, q->name_len));
	else if (q->type == EL_CW_MEMBER_ADD)
		snprintf(what, sizeof what, " for node %u (peer %s, client %s)", q->node,
			 el_log_name(a, sizeof a, q->peer_addr, q->peer_addr_len),
			 el_log_name(b, sizeof b, q->client_addr, q->client_addr_len));
	else if (q->type >= EL_CW_MEMBER_ADD && q->type <= EL_CW_TRANSFER)
		snprintf(what, sizeof what, " for node %u", q->node);
	else
		what[0] = '\0';
	acl_refused(d, cl, q, who, what);
	return EL_EPERM;
}

/* ---- [limits] sessions_per_client ------------------------------------------ */

static bool same_identity(const struct el_d_client *cl, const char *key)
{
	const char *id = identity(cl);
	return strcmp(id != NULL ? id : "", key) == 0;
}

/* The live sessions key ("" = anonymous) owns, plus its opens in flight on
 * this node (submitted, not yet answered: the limit would let a burst of
 * pipelined opens through otherwise). */
static uint32_t count_sessions(struct el_daemon *d, const char *key)
{
	const struct el_lock_table *t = el_node_table(d->node);
	const char *id = key[0] != '\0' ? key : NULL;
	uint32_t n = 0;
	for (uint32_t i = 0; i < EL_SESSIONS_MAX; i++)
		if (t->sessions[i].id != 0 && owns(t->sessions[i].client, t->sessions[i].client_len, id))
			n++;
	for (uint32_t i = 0; i < EL_D_PENDING; i++) {
		const struct el_d_pending *p = &d->pending[i];
		if (p->req_id == 0 || p->type != EL_CW_OPEN_SESSION || p->conn == 0)
			continue;
		const struct el_d_client *o = el_d_client_of(d, p->conn);
		if (o != NULL && same_identity(o, key))
			n++;
	}
	return n;
}

static void quota_refused(struct el_daemon *d, const char *key, uint32_t count)
{
	struct el_d_refusals *r = &d->quota.refusals;
	const uint64_t n = el_d_refusal(d, r, key, "sessions_per_client", d->cfg.sessions_per_client);
	if (n != 0) /* else held back for a line a second at most (limits.c) */
		el_log(EL_LOG_WARN, "client %s: OPEN_SESSION refused (EL_EFULL): %u sessions open "
		       "or opening, [limits] sessions_per_client = %u (%llu refused in the last "
		       "second)", r->who, count, d->cfg.sessions_per_client, (unsigned long long)n);
}

/*
 * EL_OK when cl's identity may open one more session, else EL_EFULL
 * (logged). Counted on the leader only, where opens are submitted (a
 * follower redirects them); opens in flight on an earlier leader are not
 * seen, so a failover may let that many through. The count is cached for
 * the last identity while the table stays at one index, and counts the
 * open it allows, so refusing a flood walks the session table once per
 * committed entry at most.
 */
int el_d_session_quota(struct el_daemon *d, const struct el_d_client *cl)
{
	const uint32_t max = d->cfg.sessions_per_client;
	if (max == 0 || el_raft_state(el_node_raft(d->node)) != EL_LEADER)
		return EL_OK;
	struct el_d_quota *qt = &d->quota;
	const char *key = identity(cl) != NULL ? identity(cl) : "";
	const uint64_t index = el_node_table(d->node)->last_index;
	if (!qt->valid || qt->index != index || strcmp(qt->name, key) != 0) {
		snprintf(qt->name, sizeof qt->name, "%s", key);
		qt->index = index;
		qt->count = count_sessions(d, key);
		qt->valid = true;
	}
	if (qt->count >= max) {
		quota_refused(d, key, qt->count);
		return EL_EFULL;
	}
	qt->count++; /* the caller submits it now (or forgets the cache) */
	return EL_OK;
}
