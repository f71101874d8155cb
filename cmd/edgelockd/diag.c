/*
 * diag.c - the log lines an operator diagnoses a node by (found missing by
 * an outside SRE tester, who could not tell from the logs why things
 * happened; docs/operations.md, "Watching it"):
 *
 *   - why a role changed: a follower that campaigns says it heard nothing
 *     from its leader (WARN), a leader that steps down on CheckQuorum says
 *     it lost its quorum and which voters were silent (WARN), one that
 *     steps down for a higher term says whose (WARN; INFO for a transfer),
 *     a node moved to a new term by another's election says whose (INFO);
 *   - every membership change as it applies, on every node (INFO), and the
 *     dial of a removed node retired (net.c says so when its link closes);
 *   - a session expiry the leader proposes (INFO), with the client's name;
 *   - a slow storage write + fdatasync (WARN, one line per 10 s at most).
 *
 * The core is freestanding and says none of this itself: the reasons are
 * inferred from the role, leader, counters and entries it exposes. The state
 * is file-local, as notify.c's: one daemon, one thread, per process.
 */
#include <stdio.h>
#include <string.h>

#include "el_d_metrics.h"
#include "el_daemon.h"
#include "el_error.h"
#include "el_platform.h"

#define SLOW_PERSIST_MS 1000u    /* or half the election timeout, if smaller */
#define NOTICE_ELECTIONS 5u      /* daemon.c's REMOVED_QUIET_ELECTIONS (notify_removed) */
#define SLOW_LOG_EVERY_MS 10000u /* at most one slow-persist line per this */
#define SAFETY_LOG_EVERY_MS 10000u /* and one of each lost-state line */
#define CUT_OR_STOPPED "it stopped, or this node is cut off from it"

static struct {
	bool started;
	uint8_t state;            /* role, leader and term at the last change seen */
	el_id_t leader;
	uint64_t term;
	struct {                  /* the last message of a term above ours (el_d_diag_peer_msg) */
		uint64_t term;
		el_id_t from;
		uint8_t type, flags;
	} raised;
	uint64_t stepdowns;       /* el_raft_stats: stepdowns_quorum seen */
	uint64_t expiries;        /* el_node stats: expiries_proposed seen */
	uint64_t replayed;        /* entries up to here applied before this start */
	struct el_conf conf;      /* as of the last entry applied */
	uint64_t slow_logged_ms;  /* last slow-persist line; 0: none yet */
	uint64_t slow_held;       /* slow persists since, not logged */
	uint64_t slow_held_max_ms;
	struct { el_id_t id; uint64_t due_ms; } retiring[EL_NODES_MAX]; /* el_d_peer_retire */
	uint64_t overwrite_logged_ms; /* last "contradicts committed entries" line */
	uint64_t lost_logged_ms;      /* last "lost entries it acknowledged" line */
	uint64_t novote_logged_ms;    /* last "knows no configuration: not voting" line */
	/* The last removal and the last addition applied (el_d_change_made):
	 * an addition is followed at once by its promotion, so each keeps its
	 * own. */
	struct made {
		el_id_t node;
		uint64_t index, term;
		uint64_t applied_ms; /* when this node applied it */
	} removed, added;
} dg;

static void start(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	if (dg.started)
		return;
	dg.started = true;
	dg.state = (uint8_t)el_raft_state(r);
	dg.leader = el_raft_leader(r);
	dg.term = el_raft_term(r);
	dg.stepdowns = el_raft_stats(r)->stepdowns_quorum;
	dg.expiries = d->node->stats.expiries_proposed;
	dg.replayed = el_raft_commit(r);
	dg.conf = el_raft_snapshot(r)->conf;
}

/* ---- role changes ------------------------------------------------------------ */

/* CheckQuorum stepped this leader down. The core keeps which voters it
 * heard from only until that check; the voters named are those this node
 * has had no Raft message from for an election timeout (the same window). */
static void lost_quorum(struct el_daemon *d)
{
	const struct el_conf *c = el_raft_conf(el_node_raft(d->node));
	char silent[EL_NODES_MAX * 12 + 1] = "";
	size_t len = 0;
	uint32_t voters = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		const el_id_t id = c->m[i].id;
		if (c->m[i].role != EL_MEMBER_VOTER)
			continue;
		voters++;
		if (id != d->cfg.id && len < sizeof silent - 12 &&
		    el_d_heard_none(d, id, d->leader_since_ms, d->cfg.election_ms))
			len += (size_t)snprintf(silent + len, sizeof silent - len, "%s%u",
						len > 0 ? ", " : "", id);
	}
	el_log(EL_LOG_WARN, "node %u: lost quorum: heard from fewer than a majority of the %u "
	       "voters within an election timeout (%u ms), stepped down (check_quorum)%s%s%s",
	       d->cfg.id, voters, d->cfg.election_ms, len > 0 ? "; not heard from: node " : "",
	       silent, len > 0 ? "" : "; fewer than a majority answered");
}

/* A follower of leader stopped following it and campaigns (a pre-vote
 * first: a leadership transfer campaigns as a candidate at once). */
static void leader_lost(struct el_daemon *d, el_id_t leader, enum el_state now)
{
	if (now == EL_CANDIDATE) {
		el_log(EL_LOG_INFO, "node %u: campaigning at once: leader %u hands leadership to "
		       "it (transfer)", d->cfg.id, leader);
		return;
	}
	const struct el_d_book *b = el_d_book_find(d, leader);
	const uint64_t heard = b != NULL ? b->heard_ms : 0;
	const unsigned long long quiet = heard != 0 && d->now_ms > heard ? d->now_ms - heard : 0;
	/* Either may be this node's side: a cut that drops only what the
	 * leader sends reads the same from here (the words blamed the leader,
	 * which an operator took for a crash: an outside tester). */
	if (heard == 0 || quiet >= d->cfg.election_ms)
		el_log(EL_LOG_WARN, "node %u: heard nothing from leader %u for %s%llu ms (election "
		       "timeout %u ms; " CUT_OR_STOPPED "): campaigning for its place", d->cfg.id,
		       leader, heard == 0 ? "over " : "",
		       heard == 0 ? (unsigned long long)d->cfg.election_ms : quiet,
		       d->cfg.election_ms);
	else /* el_raft_peer_lost: a heartbeat interval of silence confirms it */
		el_log(EL_LOG_WARN, "node %u: its link to leader %u closed and nothing heard from "
		       "it for %llu ms since (" CUT_OR_STOPPED "): campaigning for its place",
		       d->cfg.id, leader, quiet);
}

/* Whose message moved this node to term (it did not campaign for it), in
 * why: "node N's election (...)", or "" when no message of it was seen
 * (a restart, el_raft_peer_lost). */
static void term_source(const struct el_raft *r, uint64_t term, char *why, size_t cap)
{
	why[0] = '\0';
	if (dg.raised.term != term || dg.raised.from == 0)
		return;
	if (dg.raised.type == EL_MSG_VOTE)
		snprintf(why, cap, "node %u's election%s (this node %s it)", dg.raised.from,
			 dg.raised.flags & EL_MSG_FORCE ? ", a leadership transfer" : "",
			 el_raft_vote(r) == dg.raised.from ? "voted for" : "did not vote for");
	else
		snprintf(why, cap, "a message from node %u", dg.raised.from);
}

/* This leader is no longer one, and not on CheckQuorum: a higher term
 * (it said nothing but its new role: an outside tester). */
static void stepped_down(struct el_daemon *d, const struct el_raft *r)
{
	char why[96];
	term_source(r, el_raft_term(r), why, sizeof why);
	const bool transfer = dg.raised.type == EL_MSG_VOTE && (dg.raised.flags & EL_MSG_FORCE);
	if (el_raft_leader(r) != 0 && el_raft_leader(r) != d->cfg.id)
		el_log(transfer ? EL_LOG_INFO : EL_LOG_WARN, "node %u: stepping down: node %u is "
		       "leading term %llu", d->cfg.id, el_raft_leader(r),
		       (unsigned long long)el_raft_term(r));
	else
		el_log(transfer ? EL_LOG_INFO : EL_LOG_WARN, "node %u: stepping down: term %llu "
		       "began with %s", d->cfg.id, (unsigned long long)el_raft_term(r),
		       why[0] != '\0' ? why : "another node's election");
}

/* A node that did not campaign is in a new term with no leader yet. */
static void new_term(struct el_daemon *d, const struct el_raft *r)
{
	char why[96];
	term_source(r, el_raft_term(r), why, sizeof why);
	if (why[0] != '\0')
		el_log(EL_LOG_INFO, "node %u: term %llu began with %s", d->cfg.id,
		       (unsigned long long)el_raft_term(r), why);
}

void el_d_diag_role(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	if (!dg.started) {
		start(d);
		return;
	}
	const enum el_state s = el_raft_state(r);
	const uint64_t stepdowns = el_raft_stats(r)->stepdowns_quorum;
	if (stepdowns != dg.stepdowns && s != EL_LEADER)
		lost_quorum(d);
	else if (dg.state == EL_LEADER && s != EL_LEADER)
		stepped_down(d, r);
	else if (dg.state == EL_FOLLOWER && dg.leader != 0 && dg.leader != d->cfg.id &&
		 el_raft_leader(r) == 0 && (s == EL_PRECANDIDATE || s == EL_CANDIDATE))
		leader_lost(d, dg.leader, s);
	else if (el_raft_term(r) > dg.term && s == EL_FOLLOWER && el_raft_leader(r) == 0)
		new_term(d, r);
	dg.state = (uint8_t)s;
	dg.leader = el_raft_leader(r);
	dg.term = el_raft_term(r);
	dg.stepdowns = stepdowns;
}

/* ---- membership ---------------------------------------------------------------- */

/* "voters 1, 2, 3; learners 4" (catching up or not) */
static void conf_text(const struct el_conf *c, char *out, size_t cap)
{
	size_t len = 0;
	out[0] = '\0';
	for (int k = 0; k < 2; k++) {
		bool first = true;
		for (uint32_t i = 0; i < c->n; i++) {
			if ((c->m[i].role == EL_MEMBER_VOTER) != (k == 0) || len + 1 >= cap)
				continue;
			const char *sep = !first ? ", " : k == 0 ? "voters " : len > 0 ? "; learners "
											 : "learners ";
			const int n = snprintf(out + len, cap - len, "%s%u", sep, c->m[i].id);
			len = n < 0 ? len : len + (size_t)n < cap ? len + (size_t)n : cap - 1;
			first = false;
		}
	}
	if (len == 0)
		snprintf(out, cap, "no members");
}

static bool conf_same(const struct el_conf *a, const struct el_conf *b)
{
	bool same = a->n == b->n;
	for (uint32_t i = 0; i < a->n && same; i++) {
		const struct el_member *m = el_conf_find(b, a->m[i].id);
		same = m != NULL && m->role == a->m[i].role;
	}
	return same;
}

/* What happened to member m, was before (NULL: not a member), or NULL. */
static const char *member_change(const struct el_member *m, const struct el_member *was)
{
	if (was == NULL)
		return m->role == EL_MEMBER_VOTER ? "added as a voter"
		       : m->role == EL_MEMBER_CATCHING_UP ? "added as a learner (a voter once "
							    "caught up)"
		       : "added as a learner";
	if (was->role == m->role)
		return NULL;
	return m->role == EL_MEMBER_VOTER ? "promoted to voter" : "made a learner";
}

/* Node id left the configuration for good: stop dialing it. Its link, if
 * up, stays until it closes (net.c then says it is not redialed, where it
 * said "redialing", found by an outside tester). A leader whose link to it
 * is down keeps dialing it for notify_removed's window first (daemon.c),
 * so that the node hears that its removal committed. */
void el_d_peer_retire(struct el_daemon *d, el_id_t id)
{
	int slot = -1, free_slot = -1;
	for (int i = 0; i < (int)EL_NODES_MAX; i++) {
		slot = dg.retiring[i].id == id ? i : slot;
		free_slot = dg.retiring[i].id == 0 && free_slot < 0 ? i : free_slot;
	}
	if (d->net == NULL || id == d->cfg.id)
		return;
	if (slot < 0 && free_slot >= 0 && el_raft_state(el_node_raft(d->node)) == EL_LEADER &&
	    !el_net_peer_up(d->net, id)) {
		dg.retiring[free_slot].id = id;
		dg.retiring[free_slot].due_ms = el_now_ms() + NOTICE_ELECTIONS * d->cfg.election_ms;
		return;
	}
	if (slot >= 0 && el_now_ms() < dg.retiring[slot].due_ms)
		return; /* its notice window first */
	if (slot >= 0)
		dg.retiring[slot].id = 0;
	(void)el_net_peer_retire(d->net, id);
}

/* The retirements a leader put off, once due (or moot: added back). */
static void retire_due(struct el_daemon *d)
{
	const struct el_conf *c = el_raft_conf(el_node_raft(d->node));
	for (uint32_t i = 0; i < EL_NODES_MAX; i++) {
		const el_id_t id = dg.retiring[i].id;
		if (id != 0 && el_conf_find(c, id) != NULL)
			dg.retiring[i].id = 0;
		else if (id != 0 && el_now_ms() >= dg.retiring[i].due_ms)
			el_d_peer_retire(d, id);
	}
}

/* The dials a change from before to after (applied) calls for: a node out
 * for good (not in the latest configuration either) is retired, one added
 * back (its removal may have retired it) is dialed again. */
static void redial(struct el_daemon *d, const struct el_conf *before, const struct el_conf *after)
{
	const struct el_conf *latest = el_raft_conf(el_node_raft(d->node));
	for (uint32_t i = 0; i < before->n; i++)
		if (el_conf_find(after, before->m[i].id) == NULL &&
		    el_conf_find(latest, before->m[i].id) == NULL)
			el_d_peer_retire(d, before->m[i].id);
	for (uint32_t i = 0; i < after->n; i++) {
		const el_id_t id = after->m[i].id;
		if (id != d->cfg.id && el_conf_find(before, id) == NULL &&
		    el_conf_find(latest, id) != NULL && el_d_book_find(d, id) != NULL)
			el_d_book_set(d, id, "", 0, "", 0); /* dials it if its address is known */
	}
}

/* Entry index (applied) changed member m (was: before it; m NULL: removed
 * was): remembered for a request that repeats it (el_d_change_made). */
static void note_change(const struct el_daemon *d, const struct el_member *m,
			const struct el_member *was, uint64_t index)
{
	struct made *mk = m == NULL ? &dg.removed : was == NULL ? &dg.added : NULL;
	if (mk == NULL)
		return; /* a promotion: repeated, still "not a learner" */
	mk->node = m != NULL ? m->id : was->id;
	mk->index = index;
	mk->term = el_raft_term_at(el_node_raft(d->node), index);
	mk->applied_ms = d->now_ms;
}

/* Does the configuration c hold what q asks for? */
static bool conf_has(const struct el_conf *c, const struct el_cw_msg *q)
{
	const struct el_member *m = el_conf_find(c, q->node);
	if (q->type == EL_CW_MEMBER_REMOVE)
		return m == NULL;
	if (q->type == EL_CW_MEMBER_PROMOTE)
		return m != NULL && m->role == EL_MEMBER_VOTER;
	return m != NULL;
}

/* An add repeats a change made only with the addresses it was made with
 * (the leader's book holds them): another pair is another request, refused
 * as "already a member". */
static bool same_addrs(const struct el_daemon *d, const struct el_cw_msg *q)
{
	if (q->type != EL_CW_MEMBER_ADD || q->peer_addr_len == 0)
		return true;
	const struct el_d_book *b = el_d_book_find(d, q->node);
	return b != NULL && strnlen(b->peer_addr, sizeof b->peer_addr) == q->peer_addr_len &&
	       memcmp(b->peer_addr, q->peer_addr, q->peer_addr_len) == 0 &&
	       strnlen(b->client_addr, sizeof b->client_addr) == q->client_addr_len &&
	       memcmp(b->client_addr, q->client_addr, q->client_addr_len) == 0;
}

/*
 * q (MEMBER_ADD, _REMOVE, _PROMOTE), which the leader refused, repeats a
 * change already made: by the latest configuration entry, not yet applied
 * here (*index and *term: watch it), or, for a removal or an addition
 * (with the same addresses: same_addrs), by the last one applied, within
 * EL_D_ADMIN_WAIT_MS. A request whose answer was lost is sent again, by
 * libedgelock elsewhere once the leader moved, or by an operator's script
 * after the CLI said the outcome was unknown (exit 69). It was answered
 * "not a member" for a removal that had committed, and "already a member"
 * for an addition that had (two chaos runs): the operator read a failure,
 * and kept the board it meant to wipe, or retried for a minute. Not a
 * promotion (the leader promotes a learner it added by itself), and only
 * so soon: a person who adds or promotes a node again later is told it
 * already is one.
 */
bool el_d_change_made(const struct el_daemon *d, const struct el_cw_msg *q, uint64_t *index,
		      uint64_t *term)
{
	const struct el_raft *r = el_node_raft(d->node);
	if (!conf_has(el_raft_conf(r), q) || !same_addrs(d, q))
		return false;
	if (!conf_has(&dg.conf, q)) { /* the latest entry makes it, not applied yet */
		*index = r->conf_index;
		*term = el_raft_term_at(r, *index);
		return *index > 0 && *term > 0;
	}
	const struct made *mk = q->type == EL_CW_MEMBER_REMOVE ? &dg.removed
				: q->type == EL_CW_MEMBER_ADD  ? &dg.added
							       : NULL;
	if (mk == NULL || mk->node != q->node || d->now_ms - mk->applied_ms >= EL_D_ADMIN_WAIT_MS)
		return false;
	*index = mk->index;
	*term = mk->term;
	return *index > 0;
}

/* One line per member the configuration of entry index changed. */
static void conf_changed(struct el_daemon *d, const struct el_conf *next, uint64_t index)
{
	const enum el_log_level lvl = index <= dg.replayed ? EL_LOG_DEBUG : EL_LOG_INFO;
	const char *again = index <= dg.replayed ? " (replayed at start)" : "";
	char now[EL_NODES_MAX * 12 + 32];
	conf_text(next, now, sizeof now);
	/* The first configuration a joining node applies is the one that adds
	 * it: said as the others say it, "node 4 (this node) added as a
	 * learner" (docs/operations.md), not as a bare list. */
	const struct el_member *self = el_conf_find(next, d->cfg.id);
	if (dg.conf.n == 0 && self != NULL)
		el_log(lvl, "membership (entry %llu): node %u (this node) %s; now %s%s",
		       (unsigned long long)index, self->id, member_change(self, NULL), now, again);
	else if (dg.conf.n == 0)
		el_log(lvl, "membership (entry %llu): %s%s", (unsigned long long)index, now, again);
	for (uint32_t i = 0; i < next->n && dg.conf.n > 0; i++) {
		const struct el_member *m = &next->m[i];
		const char *what = member_change(m, el_conf_find(&dg.conf, m->id));
		if (what == NULL)
			continue;
		note_change(d, m, el_conf_find(&dg.conf, m->id), index);
		el_log(lvl, "membership (entry %llu): node %u%s %s; now %s%s",
		       (unsigned long long)index, m->id, m->id == d->cfg.id ? " (this node)" : "",
		       what, now, again);
	}
	for (uint32_t i = 0; i < dg.conf.n; i++) {
		if (el_conf_find(next, dg.conf.m[i].id) != NULL)
			continue;
		note_change(d, NULL, &dg.conf.m[i], index);
		el_log(lvl, "membership (entry %llu): node %u%s removed; now %s%s",
		       (unsigned long long)index, dg.conf.m[i].id,
		       dg.conf.m[i].id == d->cfg.id ? " (this node)" : "", now, again);
	}
	redial(d, &dg.conf, next);
}

/* The committed entries of a batch: configurations, as they apply. */
static void members_applied(struct el_daemon *d, const struct el_ready *rd)
{
	const struct el_raft *r = el_node_raft(d->node);
	struct el_conf next;
	if (rd->restore && rd->snapshot != NULL) {
		if (!conf_same(&rd->snapshot->conf, &dg.conf)) {
			char now[EL_NODES_MAX * 12 + 32];
			conf_text(&rd->snapshot->conf, now, sizeof now);
			el_log(EL_LOG_INFO, "membership (snapshot at entry %llu): %s",
			       (unsigned long long)rd->snapshot->index, now);
		}
		redial(d, &dg.conf, &rd->snapshot->conf);
		dg.conf = rd->snapshot->conf;
	}
	for (uint64_t i = rd->apply_first; i <= rd->apply_last && i != 0; i++) {
		const struct el_entry *e = el_raft_entry(r, i);
		if (e == NULL || e->type != EL_ENTRY_CONF || el_conf_decode(&next, e->data, e->len) != 0)
			continue;
		conf_changed(d, &next, i);
		dg.conf = next;
	}
}

/* ---- sessions and storage --------------------------------------------------------- */

/* The session expiries this leader proposed since the last batch: they are
 * among the entries this batch persisted, and the table still holds them. */
static void expiries_proposed(struct el_daemon *d, const struct el_ready *rd)
{
	const struct el_raft *r = el_node_raft(d->node);
	const struct el_lock_table *t = el_node_table(d->node);
	if (d->node->stats.expiries_proposed == dg.expiries)
		return;
	dg.expiries = d->node->stats.expiries_proposed;
	for (uint64_t i = rd->persist_first; i <= rd->persist_last && i != 0; i++) {
		const struct el_entry *e = el_raft_entry(r, i);
		struct el_lock_cmd c;
		if (e == NULL || e->type != EL_ENTRY_NORMAL ||
		    el_lock_cmd_decode(&c, e->data, e->len) != EL_OK || c.type != EL_CMD_EXPIRE_SESSION)
			continue;
		const el_slot_t s = el_lock_session_slot(t, c.session);
		char name[EL_LOG_NAME_CAP(EL_CLIENT_NAME_MAX)] = "?";
		uint32_t uses[EL_D_USES] = { 0 };
		uint32_t ttl = 0;
		if (s != EL_LOCK_NONE) {
			el_log_name(name, sizeof name, t->sessions[s].client,
				    el_d_client_shown(t->sessions[s].client,
						      t->sessions[s].client_len));
			ttl = t->sessions[s].ttl_ms;
			el_d_session_uses(t, s, uses);
		}
		el_log(EL_LOG_INFO, "session %llu of client %s expired: no keepalive within its "
		       "%u ms lease; ending it (entry %llu), with its %u lock claim(s) (held or "
		       "waited for) and %u watch(es)", (unsigned long long)c.session, name, ttl,
		       (unsigned long long)i, uses[EL_D_CLAIMS], uses[EL_D_WATCHES]);
	}
}

/* A persist (WAL write + fdatasync, a received snapshot too) slower than
 * SLOW_PERSIST_MS or half the election timeout: followers and clients
 * wait on it, and a leader's heartbeats may too. */
static void slow_persist(struct el_daemon *d, const struct el_ready *rd, uint64_t ns)
{
	const uint64_t ms = ns / 1000000u, now = el_now_ms();
	const uint64_t over = d->cfg.election_ms / 2 < SLOW_PERSIST_MS ? d->cfg.election_ms / 2
								      : SLOW_PERSIST_MS;
	if (ms <= over)
		return;
	if (dg.slow_logged_ms != 0 && now - dg.slow_logged_ms < SLOW_LOG_EVERY_MS) {
		dg.slow_held++;
		dg.slow_held_max_ms = ms > dg.slow_held_max_ms ? ms : dg.slow_held_max_ms;
		return;
	}
	char more[96] = "";
	if (dg.slow_held > 0)
		snprintf(more, sizeof more, "; %llu more since the last such line (slowest %llu ms)",
			 (unsigned long long)dg.slow_held, (unsigned long long)dg.slow_held_max_ms);
	const uint64_t n = rd->persist_first <= rd->persist_last
				   ? rd->persist_last - rd->persist_first + 1 : 0;
	el_log(EL_LOG_WARN, "storage: a write + fdatasync of %llu entr%s%s took %llu ms (over "
	       "%llu ms: the disk stalls this node, and every reply and vote waits for it)%s",
	       (unsigned long long)n, n == 1 ? "y" : "ies", rd->snapshot != NULL ? " and a snapshot" : "",
	       (unsigned long long)ms, (unsigned long long)over, more);
	dg.slow_logged_ms = now;
	dg.slow_held = 0;
	dg.slow_held_max_ms = 0;
}

/* A leader's append that contradicts entries this node knew committed.
 * Raft never sends one (Leader Completeness, paper 5.4): it comes only when
 * a member lost state it had acknowledged and then voted (storage that does
 * not survive power loss, a board's RAM store re-bootstrapped, a data_dir
 * wiped or replaced and started without --join), so a quorum elected a
 * leader without those entries. The core refuses the append and keeps its
 * log (this node then follows nobody); the counter alone said nothing (an
 * outside tester). At error, at most one line each 10 s. */
/* Whether a safety line last said at *said_ms (0: never) may be said
 * again now: at most one each SAFETY_LOG_EVERY_MS; if so, now is noted. */
static bool safety_line_due(uint64_t *said_ms, uint64_t now_ms)
{
	if (*said_ms != 0 && now_ms - *said_ms < SAFETY_LOG_EVERY_MS)
		return false;
	*said_ms = now_ms > 0 ? now_ms : 1;
	return true;
}

void el_d_diag_refused(struct el_daemon *d, const struct el_msg *m, int rc)
{
	const struct el_raft *r = el_node_raft(d->node);
	if (rc != EL_EINVAL || m->type != EL_MSG_APPEND || m->term < el_raft_term(r) ||
	    !el_raft_append_overwrites_commit(r, m))
		return;
	if (!safety_line_due(&dg.overwrite_logged_ms, d->now_ms))
		return;
	el_log(EL_LOG_ERROR, "safety: leader %u (term %llu) sent entries that contradict what "
	       "this node knew committed (up to %llu); refused, this node keeps its log and "
	       "follows no one. A member lost state it had acknowledged and voted (storage that "
	       "does not survive power loss, a data_dir wiped or replaced and started again "
	       "under its id): writes this node committed after %llu are missing from that "
	       "leader's log", m->from, (unsigned long long)m->term,
	       (unsigned long long)el_raft_commit(r), (unsigned long long)(m->index));
	/* a line of its own: one would pass el_log's 512 bytes and lose it */
	el_log(EL_LOG_ERROR, "safety: find the member that lost state (its log), stop it, "
	       "`edgelock members remove` it, wipe it, start it with --join and `edgelock "
	       "members add` it");
}

/* A follower's append rejection, before the core takes it, that hints
 * below what the follower acknowledged: it lost entries it had stored (its
 * data_dir wiped or replaced and started again under its id, or a disk
 * that lost synced writes). The core replicates to it again (its reply
 * was taken as stale before, and it stayed empty while counted reachable:
 * an outside tester), but its lost vote may have counted twice, and the
 * entries it acknowledged were on fewer disks than the quorum thought. At
 * error, at most one line each 10 s. */
void el_d_diag_peer_msg(struct el_daemon *d, const struct el_msg *m)
{
	const struct el_raft *r = el_node_raft(d->node);
	/* a message that may move this node to a higher term: el_d_diag_role
	 * names its sender (a pre-vote asks without moving anyone) */
	if (m->term > el_raft_term(r) && m->type != EL_MSG_PREVOTE) {
		dg.raised.term = m->term;
		dg.raised.from = m->from;
		dg.raised.type = m->type;
		dg.raised.flags = m->flags;
	}
	if (m->type != EL_MSG_APPEND_RESP || !(m->flags & EL_MSG_REJECT) ||
	    el_raft_state(r) != EL_LEADER || m->term != el_raft_term(r))
		return;
	uint64_t match = 0;
	for (uint32_t i = 0; i < r->conf.n && i < EL_NODES_MAX; i++)
		if (r->conf.m[i].id == m->from)
			match = r->pr[i].match;
	if (m->hint_index >= match || !safety_line_due(&dg.lost_logged_ms, d->now_ms))
		return;
	el_log(EL_LOG_ERROR, "safety: node %u acknowledged entries up to %llu but its log now "
	       "ends before them (at %llu): it lost state it had stored (a data_dir wiped or "
	       "replaced and started again under its id, or a disk that lost synced writes); "
	       "sending it the log again. Its lost vote may have counted twice: stop it, "
	       "`edgelock members remove %u`, wipe it, start it with --join and `edgelock "
	       "members add` it", m->from, (unsigned long long)match,
	       (unsigned long long)m->hint_index, m->from);
}

/* A vote (or pre-vote) request to a node that knows no configuration: it
 * started empty (--join) and has had no snapshot nor configuration entry
 * yet, so it cannot know whether it is a voter. A legitimate voter always
 * knows one: bootstrapped, forced, restored, or added as a learner that
 * catches up before its promotion. An empty node that grants votes is a
 * member's id whose data was wiped: with a stale member it elected a
 * leader without the newest entries, whose tokens went backwards (an
 * outside tester). So it does not vote (the request is dropped, not
 * stepped) until it holds a configuration. Said at warning, at most once
 * each 10 s. True when m must be dropped. Here, not in the core's vote
 * rule, where it would belong: the boards' core has 40 B of M0+ flash
 * left, and a board never starts empty as a joiner (its RAM store is
 * bootstrapped at power-up, with a configuration). */
bool el_d_diag_vote_refused(struct el_daemon *d, const struct el_msg *m)
{
	const struct el_raft *r = el_node_raft(d->node);
	if ((m->type != EL_MSG_VOTE && m->type != EL_MSG_PREVOTE) || el_raft_conf(r)->n > 0)
		return false;
	if (safety_line_due(&dg.novote_logged_ms, d->now_ms))
		el_log(EL_LOG_WARN, "node %u asks for a vote (term %llu), but this node knows no "
		       "configuration yet (started empty, with --join, and not yet sent the "
		       "cluster's state): not voting. If this node's id is a member whose data was "
		       "wiped, `edgelock members remove %u` first, then add it back", m->from,
		       (unsigned long long)m->term, d->cfg.id);
	return true;
}

void el_d_diag_batch(struct el_daemon *d, const struct el_node_ready *rd, uint64_t t0_ns)
{
	slow_persist(d, &rd->raft, el_d_metrics_clock() - t0_ns);
	start(d);
	expiries_proposed(d, &rd->raft);
	members_applied(d, &rd->raft);
	retire_due(d);
}
