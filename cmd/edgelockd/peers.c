/*
 * peers.c - frames from and to other nodes, and the address book.
 *
 * Every peer connection opens with the identity exchange of el_ident.h:
 * the accepting node sends a CHALLENGE (a fresh nonce and its own name), the
 * dialing node answers with a PROOF (its certificate and its signature over
 * both names, the direction and the nonce) and then its hello. The dialer
 * proves only to the node it dialed (the challenge must name node<N>, the
 * name TLS checked), so a member cannot relay another node's challenge.
 * The acceptor binds the connection to the proven certificate: its role
 * must be node and its CN node<N> where N is the id the hello claims; a
 * client certificate, another node's name, a hello from another cluster or
 * profile, a second hello, or anything before the proof and the hello
 * closes the connection with a log line saying why; so does no proof and
 * hello within EL_D_PROOF_MS, and a full table closes the oldest connection
 * without them for a new one (el_d_peer_opened). So does a hello from a
 * node this one does not know as a member (el_d_peer_known): any node
 * certificate of the cluster CA proves a name, not membership, and a
 * non-member's Raft messages (a higher term) would disrupt the members.
 * Raft messages must say they come from the proven node and are addressed
 * to us; anything else is dropped and counted.
 */
#include <stdio.h>
#include <string.h>

#include "el_d_metrics.h"
#include "el_daemon.h"
#include "el_error.h"
#include "el_peer_hello.h"
#include "el_platform.h"
#include "el_url.h"
#include "el_wire.h"

const struct el_d_book *el_d_book_find(const struct el_daemon *d, el_id_t id)
{
	for (int i = 0; i < EL_DCFG_PEERS_MAX; i++)
		if (d->book[i].id == id)
			return &d->book[i];
	return NULL;
}

bool el_d_peer_silent(const struct el_daemon *d, el_id_t id)
{
	const struct el_raft *r = el_node_raft(d->node);
	uint64_t start, window;
	if (id == d->cfg.id) {
		return false;
	} else if (el_raft_state(r) == EL_LEADER) {
		start = d->leader_since_ms; /* heartbeats are answered at once */
		window = d->cfg.election_ms;
	} else if (el_raft_leader(r) == 0 && d->leaderless_since_ms != 0) {
		/* campaigning: a live member answers each (pre)vote, sent at
		 * least every two election timeouts; a stopped one does not
		 * (with no quorum, every member showed reachable on its link
		 * alone, found by an outside tester) */
		start = d->leaderless_since_ms;
		window = 5u * (uint64_t)d->cfg.election_ms / 2u;
	} else {
		return false; /* a follower hears from the leader only */
	}
	return el_d_heard_none(d, id, start, window);
}

bool el_d_heard_none(const struct el_daemon *d, el_id_t id, uint64_t start, uint64_t window)
{
	const struct el_d_book *b = el_d_book_find(d, id);
	/* counted from the role's start, not from what it heard before */
	uint64_t since = b != NULL ? b->heard_ms : 0;
	if (since < start)
		since = start;
	return d->now_ms - since >= window;
}

static void copy_addr(char *dst, const char *src, uint32_t len)
{
	if (len >= EL_CW_ADDR_MAX)
		len = EL_CW_ADDR_MAX - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* The entry a full book may reuse: of a node that may no longer speak Raft
 * to this one (el_d_peer_known: in neither the latest nor the previous
 * configuration, nor in [peers]), not this node nor the leader it knows,
 * touched longest ago. NULL: none. */
static struct el_d_book *book_stale(struct el_daemon *d)
{
	const el_id_t leader = el_raft_leader(el_node_raft(d->node));
	struct el_d_book *oldest = NULL;
	for (int i = 0; i < EL_DCFG_PEERS_MAX; i++) {
		struct el_d_book *b = &d->book[i];
		if (b->id == d->cfg.id || b->id == leader || el_d_peer_known(d, b->id))
			continue;
		if (oldest == NULL || b->touched_ms < oldest->touched_ms)
			oldest = b;
	}
	return oldest;
}

/* A slot for node id, which the book does not hold: a free one, else a
 * stale one (book_stale). The book never forgot an id: once 16 had passed
 * through a daemon's life (members added and removed, boards replaced) it
 * dropped a new member's addresses without a word, and the leader never
 * dialed that member, which never caught up. NULL: no slot, said at
 * warning once a minute at most (a configuration holds EL_NODES_MAX
 * members, fewer than the book's slots, so only a [peers] of 16 others
 * can leave none). */
static struct el_d_book *book_slot(struct el_daemon *d, el_id_t id)
{
	struct el_d_book *b = NULL;
	for (int i = 0; i < EL_DCFG_PEERS_MAX && b == NULL; i++)
		b = d->book[i].id == 0 ? &d->book[i] : NULL;
	if (b == NULL && d->node != NULL)
		b = book_stale(d);
	if (b == NULL) {
		if (d->book_full_logged_ms == 0 || d->now_ms - d->book_full_logged_ms >= 60000) {
			d->book_full_logged_ms = d->now_ms > 0 ? d->now_ms : 1;
			el_log(EL_LOG_WARN, "address book full (%d nodes, all members or in "
			       "[peers]): node %u's addresses not kept; it is not dialed",
			       EL_DCFG_PEERS_MAX, id);
		}
		return NULL;
	}
	if (b->id != 0)
		el_log(EL_LOG_INFO, "address book full: node %u (no longer a member) forgotten "
		       "for node %u", b->id, id);
	memset(b, 0, sizeof *b);
	b->id = id;
	return b;
}

/* Record what we know of node id (empty strings keep what was known) and
 * dial it when it is another node with a peer address. */
void el_d_book_set(struct el_daemon *d, el_id_t id, const char *peer, uint32_t peer_len,
		   const char *client, uint32_t client_len)
{
	struct el_d_book *b = (struct el_d_book *)el_d_book_find(d, id);
	if (b == NULL)
		b = book_slot(d, id);
	if (b == NULL)
		return;
	b->touched_ms = d->now_ms;
	if (peer_len > 0)
		copy_addr(b->peer_addr, peer, peer_len);
	if (client_len > 0)
		copy_addr(b->client_addr, client, client_len);
	if (id != d->cfg.id && b->peer_addr[0] != '\0' && d->net != NULL)
		el_net_peer_set(d->net, id, b->peer_addr);
}

int el_d_hello(const struct el_daemon *d, uint8_t *buf, uint32_t cap)
{
	struct el_peer_hello h = { .node = d->cfg.id, .cluster = d->cluster,
				   .profile = el_peer_profile() };
	const size_t name_len = strlen(d->cfg.cluster);
	h.cluster_name_len = (uint8_t)(name_len < sizeof h.cluster_name ? name_len
								  : sizeof h.cluster_name);
	memcpy(h.cluster_name, d->cfg.cluster, h.cluster_name_len);
	h.peer_addr_len = (uint8_t)strlen(d->cfg.peer_addr);
	h.client_addr_len = (uint8_t)strlen(d->cfg.client_addr);
	memcpy(h.peer_addr, d->cfg.peer_addr, h.peer_addr_len);
	memcpy(h.client_addr, d->cfg.client_addr, h.client_addr_len);
	h.has_incarnation = d->inc.known;
	h.generation = d->inc.generation;
	h.nonce = d->inc.nonce;
	return el_peer_hello_encode(&h, buf, cap);
}

static struct el_d_inbound *inbound(struct el_daemon *d, uint64_t conn, bool add)
{
	struct el_d_inbound *free_slot = NULL;
	for (int i = 0; i < EL_D_INBOUND_MAX; i++) {
		if (d->inbound[i].conn == conn)
			return &d->inbound[i];
		if (d->inbound[i].conn == 0 && free_slot == NULL)
			free_slot = &d->inbound[i];
	}
	if (add && free_slot != NULL) {
		memset(free_slot, 0, sizeof *free_slot);
		free_slot->conn = conn;
		return free_slot;
	}
	return NULL;
}

/* Whether a refusal of node for why is logged now, and how many alike were
 * held back since the last line (*held). A node refused for one reason
 * redials every 1 to 2 s for as long as it runs (one never added, one
 * removed and started again on its old data, another cluster's, one dialed
 * at its client port), and so does a client [acl] refuses (a device
 * retried 5 times a second): one line a minute per kind, node (or client)
 * and reason, with that count, says as much as a line a second would. A
 * new reason, or one past the table's size, takes the slot logged longest
 * ago. */
#define PEER_REFUSAL_LOG_MS 60000u
bool el_d_refusal_logs(struct el_daemon *d, enum el_d_refused kind, el_id_t node,
		       const char *why, uint64_t *held)
{
	uint32_t hash = (2166136261u ^ (uint32_t)kind) * 16777619u; /* FNV-1a */
	for (const char *c = why; *c != '\0'; c++)
		hash = (hash ^ (uint8_t)*c) * 16777619u;
	const bool acl = kind == EL_D_REFUSED_ACL; /* a table of their own: many clients */
	struct el_d_peer_refusal *tab = acl ? d->acl_refusals : d->peer_refusals;
	const int n = acl ? EL_D_ACL_REFUSALS : EL_D_PEER_REFUSALS;
	struct el_d_peer_refusal *slot = NULL, *oldest = &tab[0];
	for (int i = 0; i < n; i++) {
		struct el_d_peer_refusal *p = &tab[i];
		if (p->logged_ms != 0 && p->node == node && p->why_hash == hash)
			slot = p;
		if (p->logged_ms < oldest->logged_ms)
			oldest = p;
	}
	const uint64_t now = d->now_ms > 0 ? d->now_ms : 1;
	if (slot != NULL && d->now_ms - slot->logged_ms < PEER_REFUSAL_LOG_MS) {
		slot->held++;
		slot->total++;
		slot->repeated = true;
		slot->last_ms = now;
		return false;
	}
	if (slot == NULL) {
		slot = oldest;
		*slot = (struct el_d_peer_refusal){ .node = node, .kind = (uint8_t)kind,
						    .why_hash = hash };
		snprintf(slot->why, sizeof slot->why, "%s", why);
	} else {
		slot->repeated = true;
	}
	*held = slot->held;
	slot->held = 0;
	slot->total++;
	slot->logged_ms = slot->last_ms = now;
	return true;
}

/* The head of a refusal slot's later lines, as its first line had it. */
static void refusal_head(const struct el_d_peer_refusal *p, char *out, size_t cap)
{
	if (p->kind == EL_D_REFUSED_DIAL)
		snprintf(out, cap, "peer: our connection to node %u", p->node);
	else if (p->kind == EL_D_REFUSED_CLIENT)
		snprintf(out, cap, "client connection");
	else
		snprintf(out, cap, "peer connection (node %u)", p->node);
}

/* The refusals held back, once their minute is over; and, for one that
 * repeated, its end once none came for EL_D_REFUSAL_QUIET_MS (the node
 * was added, its addresses mended, or it stopped dialing): an operator
 * who saw the warnings sees them end, not just stop. */
static void refusals_turn(struct el_daemon *d, struct el_d_peer_refusal *tab, int n)
{
	for (int i = 0; i < n; i++) {
		struct el_d_peer_refusal *p = &tab[i];
		const bool acl = p->kind == EL_D_REFUSED_ACL; /* why begins "client NAME: " */
		char head[64];
		refusal_head(p, head, sizeof head);
		const bool quiet = p->logged_ms != 0 && p->repeated &&
				   d->now_ms - p->last_ms >= EL_D_REFUSAL_QUIET_MS;
		if (p->logged_ms != 0 && p->held != 0 &&
		    (d->stopping || quiet || d->now_ms - p->logged_ms >= PEER_REFUSAL_LOG_MS)) {
			if (acl)
				el_log(EL_LOG_WARN, "%s: %llu more refused by [acl] in the last minute",
				       p->why, (unsigned long long)p->held);
			else
				el_log(EL_LOG_WARN, "%s: %llu more refused in the last minute: %s",
				       head, (unsigned long long)p->held, p->why);
			p->held = 0;
			p->logged_ms = d->now_ms > 0 ? d->now_ms : 1;
		}
		if (quiet && !d->stopping) {
			if (acl)
				el_log(EL_LOG_INFO, "%s: none refused by [acl] for %u s now (%llu in "
				       "all): ended", p->why, EL_D_REFUSAL_QUIET_MS / 1000u,
				       (unsigned long long)p->total);
			else
				el_log(EL_LOG_INFO, "%s: none refused for %u s now (%llu in all): "
				       "ended: %s", head, EL_D_REFUSAL_QUIET_MS / 1000u,
				       (unsigned long long)p->total, p->why);
			memset(p, 0, sizeof *p);
		}
	}
}

void el_d_peers_turn(struct el_daemon *d)
{
	refusals_turn(d, d->peer_refusals, EL_D_PEER_REFUSALS);
	refusals_turn(d, d->acl_refusals, EL_D_ACL_REFUSALS);
}

static void refuse(struct el_daemon *d, uint64_t conn, const char *why, el_id_t node)
{
	uint64_t held = 0;
	d->peer_frames_refused++;
	if (el_d_refusal_logs(d, EL_D_REFUSED_PEER, node, why, &held)) {
		char more[80] = "";
		if (held > 0)
			snprintf(more, sizeof more, " (%llu more alike since the last such line)",
				 (unsigned long long)held);
		char from[EL_ADDR_NAME_MAX];
		el_net_conn_name(d->net, conn, from, sizeof from);
		el_log(EL_LOG_WARN, "peer connection from %s (node %u): %s; closed%s", from, node,
		       why, more);
	}
	struct el_d_inbound *in = inbound(d, conn, false);
	if (in != NULL)
		in->conn = 0;
	el_net_close(d->net, conn);
}

/* The configuration before the latest one in the log (the snapshot's when
 * the log holds no earlier one). */
void el_d_previous_conf(const struct el_raft *r, struct el_conf *out)
{
	const struct el_snapshot_meta *snap = el_raft_snapshot(r);
	for (uint64_t i = r->conf_index; i > snap->index + 1; i--) {
		const struct el_entry *e = el_raft_entry(r, i - 1);
		if (e != NULL && e->type == EL_ENTRY_CONF && el_conf_decode(out, e->data, e->len) == 0)
			return;
	}
	*out = snap->conf;
}

/* Whether id is in the configuration before the latest one in the log: a
 * leader removing itself leads until its removal commits (thesis 4.2.2),
 * so a follower that already appended the removal must still take it back
 * when its link is dialed again. */
static bool in_previous_conf(const struct el_raft *r, el_id_t id)
{
	struct el_conf c;
	el_d_previous_conf(r, &c);
	return el_conf_find(&c, id) != NULL;
}

/* Whether node id is out of the configuration by a committed entry: its
 * removal is the latest change, and committed (a leader removing itself
 * leads until then, so its followers must still dial it). Its hello is
 * still taken (in_previous_conf), but this node no longer dials it. */
static bool removed_for_good(const struct el_daemon *d, el_id_t id)
{
	const struct el_raft *r = el_node_raft(d->node);
	return r->conf_index != 0 && el_raft_commit(r) >= r->conf_index &&
	       el_conf_find(el_raft_conf(r), id) == NULL && in_previous_conf(r, id);
}

/* Whether node id may speak Raft to this node: a member (voter or learner)
 * of its configuration or of the one before, or one of its [peers] (the
 * operator's word: a --join node knows no configuration until the leader
 * that dials it has sent one). A node being added is known to the leader
 * from the append of its MEMBER_ADD and to the others from theirs; its
 * dials before that are refused and retried with net.c's backoff. */
bool el_d_peer_known(const struct el_daemon *d, el_id_t id)
{
	const struct el_raft *r = el_node_raft(d->node);
	if (el_conf_find(el_raft_conf(r), id) != NULL || in_previous_conf(r, id))
		return true;
	for (uint32_t i = 0; i < d->cfg.n_peers; i++)
		if (d->cfg.peers[i].id == id)
			return true;
	return false;
}

/* A hello of another cluster: both names in the line, so that the one
 * that is wrong (a typo, quotes kept from the ini) can be seen. Theirs
 * comes from outside: shown by el_log_name, whole or as hex. */
static void refuse_cluster(struct el_daemon *d, uint64_t conn, const struct el_peer_hello *h)
{
	char ours[2 * sizeof d->cfg.cluster + 8], theirs[2 * EL_PEER_HELLO_CLUSTER_MAX + 8];
	char why[sizeof ours + sizeof theirs + 160];
	el_log_name(ours, sizeof ours, d->cfg.cluster, strlen(d->cfg.cluster));
	if (h->cluster_name_len > 0)
		el_log_name(theirs, sizeof theirs, h->cluster_name, h->cluster_name_len);
	else /* an older release's hello carries only the digest */
		snprintf(theirs, sizeof theirs, "unknown (digest %016llx)",
			 (unsigned long long)h->cluster);
	snprintf(why, sizeof why, "hello from another cluster: it is of cluster %s, this node "
		 "of %s ([node] cluster must be the same on every node)", theirs, ours);
	refuse(d, conn, why, h->node);
}

/* The hello's incarnation against ours (incarnation.c): true when the
 * connection may go on. A stale sender is refused; a sender newer than us
 * makes this node stop for good (its data must not serve); one without
 * any, or ours adopted from it, goes on; one that shares our nonce but not
 * our generation is a damaged file on one side: refused, by both. */
static bool incarnation_ok(struct el_daemon *d, uint64_t conn, const struct el_peer_hello *h)
{
	const struct el_d_incarnation theirs = { .known = true, .generation = h->generation,
						 .nonce = h->nonce };
	char ours_s[48], theirs_s[48], why[600];
	el_d_incarnation_name(&d->inc, ours_s, sizeof ours_s);
	el_d_incarnation_name(&theirs, theirs_s, sizeof theirs_s);
	switch (el_d_incarnation_judge(&d->inc, h)) {
	case EL_D_INC_SAME:
		return true;
	case EL_D_INC_ADOPT:
		if (el_d_incarnation_save(d->cfg.data_dir, &theirs) != EL_OK)
			break; /* said why; the next hello tries again */
		d->inc = theirs;
		el_log(EL_LOG_INFO, "node %u: joins incarnation %s of the cluster (node %u's)",
		       d->cfg.id, theirs_s, h->node);
		return true;
	case EL_D_INC_THEY_STALE:
		snprintf(why, sizeof why, "its data predates this cluster's --force-new-cluster or "
			 "restore (incarnation %s, this node's %s): it must not rejoin with it: stop "
			 "it, wipe its data_dir, start it with --join and `edgelock members add` it "
			 "(unless this node was restored or forced alone while that node's cluster "
			 "still ran: then stop this node instead)", theirs_s, ours_s);
		refuse(d, conn, why, h->node);
		return false;
	case EL_D_INC_WE_STALE:
		snprintf(why, sizeof why, "node %u's data predates a --force-new-cluster or restore "
			 "of its cluster: node %u is of incarnation %s, this data of %s", d->cfg.id,
			 h->node, theirs_s, ours_s);
		if (d->stopping) /* said on the first such hello */
			break;
		el_log(EL_LOG_ERROR, "%s: stopping for good (it must not serve)", why);
		d->stale_stop = true;
		el_d_retire(d, why);
		el_d_retire_advice(d);
		break;
	case EL_D_INC_OTHER:
		/* both bootstrapped, or restored from one backup (incarnation.c) */
		if (h->generation == 0 ||
		    el_d_incarnation_restored_apart(&d->inc, h->generation, h->nonce))
			snprintf(why, sizeof why, "it was %s with another [peers] list of "
				 "voters than this node (incarnation %s, this node's %s): two clusters. "
				 "Keep one; wipe the other's nodes, give them its [peers], start them with "
				 "--join and `edgelock members add` them (`members remove` first an id "
				 "it lists)", h->generation == 0 ? "bootstrapped" :
				 "restored from the same backup", theirs_s, ours_s);
		else
			snprintf(why, sizeof why, "its data is of another cluster made from this one "
				 "(incarnation %s, this node's %s: --force-new-cluster or restore run "
				 "twice, or restored with another --token-floor?): keep one, wipe the "
				 "other's nodes and --join them", theirs_s, ours_s);
		refuse(d, conn, why, h->node);
		return false;
	case EL_D_INC_DAMAGED:
		snprintf(why, sizeof why, "node %u's incarnation %s and node %u's %s share a nonce "
			 "but not a generation, which no --force-new-cluster or restore makes: one of "
			 "the two incarnation files is damaged or tampered with: compare the members' "
			 "DATA_DIR/incarnation files and copy a good one over the odd one (its node "
			 "stopped)", h->node, theirs_s, d->cfg.id, ours_s);
		refuse(d, conn, why, h->node);
		return false;
	}
	refuse(d, conn, "incarnation not settled", h->node);
	return false;
}

/* Whether a member told peer and client (members add) is the node that
 * announces their_peer and their_client the other way round: given as
 * `members add ID CLIENT PEER`. Its dial reaches its client port, which
 * refuses a node's certificate, every 2 s for good. */
static bool addrs_swapped(const char *peer, const char *client, const char *their_peer,
			  const char *their_client)
{
	return peer[0] != '\0' && client[0] != '\0' && their_peer[0] != '\0' &&
	       their_client[0] != '\0' && !el_dcfg_same_endpoint(peer, their_peer) &&
	       el_dcfg_same_endpoint(peer, their_client) && el_dcfg_same_endpoint(client, their_peer);
}

/* The words for addresses given swapped (why, cap bytes): what members add
 * was given, what the node says, and the two commands that mend it. */
static void swapped_words(el_id_t node, const char *peer, const char *their_peer,
			  const char *their_client, char *why, size_t cap)
{
	snprintf(why, cap, "node %u's peer and client addresses look swapped: members add was "
		 "given %s as its peer address, but node %u announces it as its client address "
		 "and %s as its peer address: run `edgelock members remove %u`, then `edgelock "
		 "members add %u %s %s`", node, peer, node,
		 their_peer, node, node, their_peer, their_client);
}

/* A refused hello of a node not a member (yet): its addresses, for
 * members add to compare with what it is given (el_d_joiner_swapped). */
static void joiner_heard(struct el_daemon *d, const struct el_peer_hello *h)
{
	struct el_d_joiner *j = &d->joiners[0];
	for (int i = 0; i < EL_D_JOINERS; i++) {
		if (d->joiners[i].node == h->node) {
			j = &d->joiners[i];
			break;
		}
		if (d->joiners[i].heard_ms < j->heard_ms)
			j = &d->joiners[i];
	}
	*j = (struct el_d_joiner){ .node = h->node, .heard_ms = d->now_ms > 0 ? d->now_ms : 1 };
	copy_addr(j->peer_addr, h->peer_addr, h->peer_addr_len);
	copy_addr(j->client_addr, h->client_addr, h->client_addr_len);
}

/* A refused joiner redials every 1 to 2 s: a hello older than this is of a
 * node that stopped, or may since have been given other addresses. */
#define JOINER_FRESH_MS 10000u

bool el_d_joiner_swapped(const struct el_daemon *d, el_id_t node, const char *peer,
			 uint32_t peer_len, const char *client, uint32_t client_len, char *why,
			 size_t cap)
{
	char p[EL_CW_ADDR_MAX], c[EL_CW_ADDR_MAX];
	copy_addr(p, peer, peer_len);
	copy_addr(c, client, client_len);
	for (int i = 0; i < EL_D_JOINERS; i++) {
		const struct el_d_joiner *j = &d->joiners[i];
		if (j->heard_ms != 0 && j->node == node && d->now_ms - j->heard_ms < JOINER_FRESH_MS &&
		    addrs_swapped(p, c, j->peer_addr, j->client_addr)) {
			/* short: it ends the admin line, el_log's 512 bytes */
			snprintf(why, cap, "PEER_ADDR and CLIENT_ADDR given swapped: node %u announces "
				 "peer address %s, client address %s: members add %u %s %s", node,
				 j->peer_addr, j->client_addr, node, j->peer_addr, j->client_addr);
			return true;
		}
	}
	return false;
}

/* A hello's addresses into the book. Its peer address only for a node the
 * book has none for (added at runtime, known from its hello alone): one
 * this node already dials, from [peers] or `members add`, is kept. A
 * single stray hello with a member's certificate (a leftover second copy
 * of a node, say) used to move this node's dial of that member to the
 * stray's address: the link stayed down until a restart, this node could
 * no longer answer the member, and nothing said so (found by an outside
 * tester: a follower's commit froze while the cluster ran on 2 of 3). The
 * one exception said plainly: addresses given to members add the other
 * way round (kept too: a hello proves a certificate, not an address). */
static void book_heard(struct el_daemon *d, const struct el_peer_hello *h)
{
	const struct el_d_book *b = el_d_book_find(d, h->node);
	uint32_t peer_len = h->peer_addr_len;
	if (b != NULL && b->peer_addr[0] != '\0' && peer_len > 0 &&
	    (strlen(b->peer_addr) != peer_len || memcmp(b->peer_addr, h->peer_addr, peer_len))) {
		char why[4 * EL_CW_ADDR_MAX + 240], hp[EL_CW_ADDR_MAX], hc[EL_CW_ADDR_MAX];
		uint64_t held = 0;
		copy_addr(hp, h->peer_addr, peer_len);
		copy_addr(hc, h->client_addr, h->client_addr_len);
		if (addrs_swapped(b->peer_addr, b->client_addr, hp, hc))
			swapped_words(h->node, b->peer_addr, hp, hc, why, sizeof why);
		else if (snprintf(why, sizeof why, "its hello gives peer address %s, this node dials "
				  "%s ([peers] or members add): kept (if node %u moved, change [peers] "
				  "here)", hp, b->peer_addr, h->node) < 0)
			why[0] = '\0';
		if (el_d_refusal_logs(d, EL_D_REFUSED_PEER, h->node, why, &held))
			el_log(EL_LOG_WARN, "peer connection (node %u): %s", h->node, why);
		peer_len = 0;
	}
	el_d_book_set(d, h->node, h->peer_addr, peer_len, h->client_addr, h->client_addr_len);
	if (removed_for_good(d, h->node)) /* its hello must not revive our dial */
		el_d_peer_retire(d, h->node);
}

static void on_hello(struct el_daemon *d, struct el_d_inbound *in, const uint8_t *buf,
		     uint32_t len)
{
	struct el_peer_hello h;
	int rc = el_peer_hello_decode(&h, buf, len);
	if (rc != EL_OK) {
		refuse(d, in->conn, el_strerror(rc), 0);
		return;
	}
	if (h.cluster != d->cluster) {
		refuse_cluster(d, in->conn, &h);
		return;
	}
	if (h.profile != el_peer_profile()) {
		refuse(d, in->conn, "hello with other capacity limits", h.node);
		return;
	}
	if (h.node == d->cfg.id) {
		refuse(d, in->conn, "hello claiming this node's id", h.node);
		return;
	}
	char want[32];
	snprintf(want, sizeof want, "node%u", h.node);
	if (strcmp(in->name, want) != 0) {
		char why[EL_IDENT_NAME_MAX + 96];
		snprintf(why, sizeof why, "the certificate proven on it is %s's, the hello claims %s",
			 in->name, want);
		refuse(d, in->conn, why, h.node);
		return;
	}
	if (!el_d_peer_known(d, h.node)) {
		joiner_heard(d, &h);
		refuse(d, in->conn, "not a member of this node's configuration (current or "
				    "previous) nor of its [peers]", h.node);
		return;
	}
	if (!incarnation_ok(d, in->conn, &h))
		return;
	in->node = h.node;
	copy_addr(in->hello_peer, h.peer_addr, h.peer_addr_len);
	for (int i = 0; i < EL_D_INBOUND_MAX; i++) { /* older ones of the node: dead, or not */
		struct el_d_inbound *o = &d->inbound[i];
		if (o != in && o->conn != 0 && o->node == h.node && o->shadowed_ms == 0)
			o->shadowed_ms = d->now_ms > 0 ? d->now_ms : 1;
	}
	book_heard(d, &h);
	el_log(EL_LOG_INFO, "peer: node %u connected", h.node);
}

/* A node dials this one on one connection at a time: once it dials anew,
 * its older connection is dead, and a frame still in flight on it arrives
 * within milliseconds. Frames on the older one a second after the newer one
 * said hello mean two processes present node in's certificate at once: a
 * replacement board given it while the old board still runs (an outside
 * tester saw the second taken, said only as a moved address). Two voters
 * under one id can each grant its vote in one term: two leaders. */
static void two_dialers(struct el_daemon *d, struct el_d_inbound *in)
{
	if (in->shadowed_ms == 0 || d->now_ms - in->shadowed_ms < 1000)
		return;
	const char *other = NULL;
	for (int i = 0; i < EL_D_INBOUND_MAX; i++) {
		const struct el_d_inbound *o = &d->inbound[i];
		if (o != in && o->conn > in->conn && o->node == in->node)
			other = o->hello_peer;
	}
	if (other == NULL) { /* the newer one closed: this is the node's one connection again */
		in->shadowed_ms = 0;
		return;
	}
	if (d->two_dialers_said_ms != 0 && d->now_ms - d->two_dialers_said_ms < 10000)
		return; /* said every 10 s while it lasts, as the other safety lines */
	d->two_dialers_said_ms = d->now_ms;
	el_log(EL_LOG_ERROR, "safety: two connections present node %u's certificate at once, their "
	       "hellos giving peer addresses %s and %s: two boards hold node %u's certificate? "
	       "Two voters under one id can elect two leaders: stop the board that is not node "
	       "%u now (a node's certificate and data belong on one board only)", in->node,
	       in->hello_peer, other, in->node, in->node);
}

/* The table is full: free the slot of the oldest connection bound to a node
 * that is bound on a newer one too. A node dials us once at a time, so the
 * older one is dead, though its end may never have been seen (see
 * el_d_peer_link_lost). NULL if no such slot. */
static struct el_d_inbound *inbound_evict_stale(struct el_daemon *d)
{
	struct el_d_inbound *stale = NULL;
	for (int i = 0; i < EL_D_INBOUND_MAX; i++) {
		struct el_d_inbound *a = &d->inbound[i];
		for (int j = 0; j < EL_D_INBOUND_MAX && a->node != 0; j++) {
			const struct el_d_inbound *b = &d->inbound[j];
			if (b->node == a->node && b->conn > a->conn && (stale == NULL || a->conn < stale->conn))
				stale = a;
		}
	}
	if (stale != NULL) {
		el_log(EL_LOG_WARN, "peer: inbound table full; closing an older connection of node %u",
		       stale->node);
		el_net_close(d->net, stale->conn);
		memset(stale, 0, sizeof *stale);
	}
	return stale;
}

/* The table is full and holds no stale connection: close the oldest one
 * that has not yet proven a node and said hello, and free its slot. Any
 * client certificate of the CA passes TLS on the peer port, so a device
 * could fill the table with silent connections and keep a restarted member
 * out of the cluster (an outside security tester); a member proves and
 * says hello within milliseconds of its challenge, so it is never the
 * oldest for long. NULL if every connection is bound to a node. */
static struct el_d_inbound *inbound_evict_unbound(struct el_daemon *d)
{
	struct el_d_inbound *oldest = NULL;
	for (int i = 0; i < EL_D_INBOUND_MAX; i++) {
		struct el_d_inbound *a = &d->inbound[i];
		if (a->conn != 0 && a->node == 0 &&
		    (oldest == NULL || a->opened_ms < oldest->opened_ms ||
		     (a->opened_ms == oldest->opened_ms && a->conn < oldest->conn)))
			oldest = a;
	}
	if (oldest != NULL)
		refuse(d, oldest->conn, "inbound table full: the oldest connection without an "
		       "identity proof and hello makes room for a new one", 0);
	return oldest;
}

/* Close the accepted connections that have not proven a node and said
 * hello within EL_D_PROOF_MS of their challenge, as the client port does
 * (auth.c): such a connection held its slot for ever. */
void el_d_peers_unproven(struct el_daemon *d)
{
	for (int i = 0; i < EL_D_INBOUND_MAX; i++) {
		const struct el_d_inbound *in = &d->inbound[i];
		if (in->conn == 0 || in->node != 0 || d->now_ms - in->opened_ms < EL_D_PROOF_MS)
			continue;
		char why[80];
		snprintf(why, sizeof why, "no identity proof and hello within %u s of the challenge",
			 EL_D_PROOF_MS / 1000u);
		refuse(d, in->conn, why, 0);
	}
}

/* A peer connection was accepted: challenge it. */
void el_d_peer_opened(struct el_daemon *d, uint64_t conn)
{
	struct el_d_inbound *in = inbound(d, conn, true);
	if (in == NULL && (in = inbound_evict_stale(d)) == NULL)
		in = inbound_evict_unbound(d);
	if (in == NULL) {
		refuse(d, conn, "too many peer connections", 0);
		return;
	}
	memset(in, 0, sizeof *in);
	in->conn = conn;
	in->opened_ms = d->now_ms;
	uint8_t ch[EL_IDENT_CHALLENGE_MAX];
	int n = el_ident_challenge(d->ident, in->nonce, ch, sizeof ch);
	int rc = n < 0 ? n : el_net_conn_send(d->net, conn, ch, (uint32_t)n);
	if (rc != EL_OK)
		refuse(d, conn, "cannot send the challenge", 0);
}

/* The first frame of an accepted connection: the PROOF of a node. */
static void on_proof(struct el_daemon *d, struct el_d_inbound *in, const uint8_t *buf,
		     uint32_t len)
{
	char err[256];
	int rc = el_ident_verify(d->ident, in->nonce, EL_IDENT_NODE, buf, len, in->name, err,
				 sizeof err);
	if (rc != EL_OK) {
		char why[300];
		snprintf(why, sizeof why, "identity not proven: %s", err);
		refuse(d, in->conn, why, 0);
		return;
	}
	in->proven = true;
}

void el_d_peer_frame(struct el_daemon *d, uint64_t conn, const uint8_t *buf, uint32_t len)
{
	struct el_d_inbound *in = inbound(d, conn, false);
	if (in == NULL) {
		/* Every accepted connection is challenged or refused when it
		 * opens (el_d_peer_opened), so this is a frame read before a
		 * refusal closed its connection: already said, and logging it
		 * again as "not challenged" suggested a second connection. */
		d->peer_frames_refused++;
		el_net_close(d->net, conn);
		return;
	}
	if (!in->proven) {
		on_proof(d, in, buf, len);
		return;
	}
	if (in->node == 0) {
		if (!el_peer_hello_is(buf, len)) {
			refuse(d, conn, "first frame is not a hello", 0);
			return;
		}
		on_hello(d, in, buf, len);
		return;
	}
	struct el_msg m;
	int rc = el_wire_decode_msg(buf, len, &m, d->entries);
	if (rc != EL_OK) {
		refuse(d, conn, el_strerror(rc), in->node);
		return;
	}
	if (m.from != in->node || m.to != d->cfg.id) {
		d->peer_frames_refused++;
		el_log(EL_LOG_WARN, "peer: node %u sent a message from %u to %u; dropped", in->node,
		       m.from, m.to);
		return;
	}
	two_dialers(d, in);
	el_d_metrics_peer_heard(d, &m);
	struct el_d_book *b = (struct el_d_book *)el_d_book_find(d, in->node);
	if (b != NULL)
		b->heard_ms = b->touched_ms = d->now_ms;
	el_d_diag_peer_msg(d, &m);
	if (el_d_diag_vote_refused(d, &m))
		return;
	rc = el_node_step(d->node, &m, d->now_ms);
	if (rc != EL_OK && rc != EL_ESTOPPED) {
		d->peer_frames_refused++;
		el_d_diag_refused(d, &m, rc);
	}
}

/* An accepted connection ended. */
void el_d_peer_closed(struct el_daemon *d, uint64_t conn)
{
	struct el_d_inbound *in = inbound(d, conn, false);
	if (in != NULL)
		in->conn = 0;
}

/* The connection this node dialed to peer broke. Most often its process is
 * gone (a crash closes every socket it had), so the core hears of it: a
 * follower of that node then need not wait out a whole election timeout
 * (el_raft_peer_lost; a hint, never a safety input). The connection this
 * node dialed is the one watched because it carries our replies to the
 * leader, so a dead leader shows on it at once. An accepted connection
 * carries no writes of ours, and under load one was seen never to report
 * its end after the far end was SIGKILLed: across three kills of its peer
 * it kept a receive pending inside nng (rx_busy, nothing queued, not
 * paused), as if nng 1.5's TLS stream lost a TCP error that came while no
 * receive was posted. Closing a peer's connections to us whenever ours to
 * it breaks would reap those at once, but it turns one node's link reset
 * into its peer's, and so a live leader into a lost one (daemon-certs: a
 * SIGHUP reload and a restarted follower then elected a new leader): the
 * full-table eviction in el_d_peer_opened reaps them instead. */
void el_d_peer_link_lost(struct el_daemon *d, el_id_t peer)
{
	if (!el_node_peer_lost(d->node, peer, d->now_ms))
		return;
	d->leader_links_lost++;
	el_log(EL_LOG_INFO, "peer: the link to node %u, the leader, closed: "
			    "campaigning within a heartbeat interval", peer);
}

void el_d_peer_send(struct el_daemon *d, const struct el_msg *m)
{
	el_d_metrics_peer_sent(d, m);
	int n = el_wire_encode_msg(m, d->buf, sizeof d->buf);
	if (n < 0) {
		el_log(EL_LOG_ERROR, "peer: cannot encode a message to %u: %s", m->to, el_strerror(n));
		return;
	}
	/* dropped when the link is down or its queue full: Raft retransmits */
	(void)el_net_peer_send(d->net, m->to, d->buf, (uint32_t)n);
}

static struct el_d_outbound *outbound(struct el_daemon *d, el_id_t peer, bool add)
{
	struct el_d_outbound *free_slot = NULL;
	for (int i = 0; i < EL_DCFG_PEERS_MAX; i++) {
		if (d->outbound[i].conn != 0 && d->outbound[i].peer == peer)
			return &d->outbound[i];
		if (d->outbound[i].conn == 0 && free_slot == NULL)
			free_slot = &d->outbound[i];
	}
	return add ? free_slot : NULL;
}

static void out_refuse(struct el_daemon *d, struct el_d_outbound *o, uint64_t conn, el_id_t peer,
		       const char *why)
{
	uint64_t held = 0;
	d->peer_frames_refused++;
	if (el_d_refusal_logs(d, EL_D_REFUSED_DIAL, peer, why, &held)) {
		char more[80] = "";
		if (held > 0)
			snprintf(more, sizeof more, " (%llu more alike since the last such line)",
				 (unsigned long long)held);
		el_log(EL_LOG_WARN, "peer: our connection to node %u: %s; closed%s", peer, why, more);
	}
	if (o != NULL && o->conn == conn)
		o->conn = 0;
	el_net_close(d->net, conn);
}

/* A connection this node dialed is up: wait for the listener's challenge
 * (the previous connection to the same peer, if any, is gone: net.c dials
 * one at a time). */
void el_d_peer_dialed(struct el_daemon *d, uint64_t conn, el_id_t peer)
{
	struct el_d_outbound *o = outbound(d, peer, true);
	if (o == NULL) {
		out_refuse(d, NULL, conn, peer, "no room to track it");
		return;
	}
	*o = (struct el_d_outbound){ .conn = conn, .peer = peer };
}

/* On a dialed connection the listener sends one frame, its CHALLENGE: prove
 * our name to node<peer> only, then say hello, then Raft may use it. */
void el_d_peer_out_frame(struct el_daemon *d, uint64_t conn, el_id_t peer, const uint8_t *buf,
			 uint32_t len)
{
	struct el_d_outbound *o = outbound(d, peer, false);
	if (o != NULL && o->conn == conn && o->proved) {
		/* A peer port says nothing after its challenge; a client port
		 * answers our proof (a node's certificate) with a refusal: this
		 * node dials node peer's client port, redialed every 2 s */
		const struct el_d_book *b = el_d_book_find(d, peer);
		char why[EL_CW_ADDR_MAX + 200];
		snprintf(why, sizeof why, "a frame after our proof, which a node's peer port never "
			 "sends: is %s, dialed as its peer address, its client port (members add "
			 "given PEER_ADDR and CLIENT_ADDR swapped? `edgelock members list`)",
			 b != NULL ? b->peer_addr : "?");
		out_refuse(d, o, conn, peer, why);
		return;
	}
	if (o == NULL || o->conn != conn) {
		out_refuse(d, o, conn, peer, "a frame after the challenge");
		return;
	}
	char expect[32];
	snprintf(expect, sizeof expect, "node%u", peer);
	uint8_t proof[EL_IDENT_PROOF_MAX], hello[EL_PEER_HELLO_MAX];
	int n = el_ident_prove(d->ident, buf, len, expect, proof, sizeof proof);
	if (n < 0) {
		char why[96];
		if (n == EL_EPERM)
			snprintf(why, sizeof why, "the challenge is not %s's (relayed?)", expect);
		else
			snprintf(why, sizeof why, "bad challenge (%s)", el_strerror(n));
		out_refuse(d, o, conn, peer, why);
		return;
	}
	int rc = el_net_conn_send(d->net, conn, proof, (uint32_t)n);
	int h = rc == EL_OK ? el_d_hello(d, hello, sizeof hello) : rc;
	rc = h < 0 ? h : el_net_conn_send(d->net, conn, hello, (uint32_t)h);
	if (rc != EL_OK) {
		out_refuse(d, o, conn, peer, el_strerror(rc));
		return;
	}
	o->proved = true;
	el_net_peer_ready(d->net, conn);
}
