/*
 * sim_check.c - the invariants the simulator checks after every step:
 *  - election safety: at most one leader per term;
 *  - log matching: two logs holding an entry of one index and term hold the
 *    same entry and agree on the term before it (so, inductively, on the
 *    whole prefix);
 *  - leader completeness: a new leader holds every entry any node applied;
 *  - state-machine safety: no two nodes apply different entries at an index
 *    (checked in sim_sm.c on every apply);
 *  - the commitment rule: a leader's commit index moves only to an entry of
 *    its own term;
 *  - term, commit and applied never move back within a node's life, and on
 *    disk the term never moves back and a vote never changes within a term;
 * and, once faults heal, liveness within the stated bounds.
 */
#include "sim.h"

/* Every replica's lock table, serialized, must be byte-identical to every
 * other's at the same applied index: determinism, and correct restores. */
static void check_table(struct sim *s, struct sim_node *n)
{
	static uint8_t buf[EL_SNAPSHOT_MAX];
	uint64_t applied = n->node.raft.applied;
	if (applied == n->seen_applied || applied >= SIM_INDEX_MAX)
		return;
	int len = el_lock_snapshot(el_node_table(&n->node), buf, sizeof(buf));
	if (len < 0) {
		sim_fail(s, "node %u: lock table does not serialize (%d)", n->id, len);
		return;
	}
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < len; i++)
		h = (h ^ buf[i]) * 1099511628211ull;
	h |= 1;
	if (s->table_hash[applied] == 0)
		s->table_hash[applied] = h;
	else if (s->table_hash[applied] != h)
		sim_fail(s, "node %u: lock table differs from another replica's at index %llu", n->id,
			 (unsigned long long)applied);
}

static uint64_t hash_entry(const struct el_entry *e, uint64_t prev_term)
{
	uint64_t h = 1469598103934665603ull ^ prev_term;
	h = (h ^ e->type) * 1099511628211ull;
	for (uint32_t i = 0; i < e->len; i++)
		h = (h ^ e->data[i]) * 1099511628211ull;
	return h | 1; /* 0 marks an empty slot */
}

static void check_log_matching(struct sim *s, struct sim_node *n)
{
	const struct el_raft *r = &n->node.raft;
	uint64_t prev_term = el_raft_term_at(r, r->snap.index);
	for (uint64_t i = r->snap.index + 1; i <= r->last_index; i++) {
		const struct el_entry *e = el_raft_entry(r, i);
		if (e->index != i || e->term < prev_term || e->term > r->term) {
			sim_fail(s, "node %u: malformed log at %llu", n->id, (unsigned long long)i);
			return;
		}
		uint64_t key = i * SIM_TERMS_MAX + e->term, h = hash_entry(e, prev_term);
		uint32_t slot = (uint32_t)(key * 0x9E3779B97F4A7C15ull >> 49) & (SIM_LM_SLOTS - 1);
		for (uint32_t probe = 0; probe < SIM_LM_SLOTS; probe++) {
			struct sim_lm_slot *l = &s->lm[(slot + probe) & (SIM_LM_SLOTS - 1)];
			if (l->hash == 0) {
				l->key = key;
				l->hash = h;
				break;
			}
			if (l->key == key) {
				if (l->hash != h)
					sim_fail(s, "log matching: node %u differs at index %llu term %llu",
						 n->id, (unsigned long long)i,
						 (unsigned long long)e->term);
				break;
			}
		}
		prev_term = e->term;
	}
}

/* A leader records the term in which each index it commits became
 * committed (the earliest such term wins). */
static void record_commit_term(struct sim *s, const struct el_raft *r)
{
	for (uint64_t i = r->commit; i > 0 && i < SIM_INDEX_MAX; i--) {
		if (s->commit_term[i] != 0 && s->commit_term[i] <= r->term)
			break;
		s->commit_term[i] = r->term;
	}
}

/* Leader completeness (Raft paper, 5.4): an entry committed in a term is in
 * the log of every leader of a higher term. A leader of an older, stale term
 * (possible: late vote grants) need not hold it. */
static void check_leader_completeness(struct sim *s, struct sim_node *n)
{
	const struct el_raft *r = &n->node.raft;
	for (uint64_t i = r->snap.index + 1; i <= s->max_committed; i++) {
		if (s->committed_term[i] == 0 || s->commit_term[i] == 0 || s->commit_term[i] >= r->term)
			continue;
		if (el_raft_term_at(r, i) != s->committed_term[i]) {
			sim_fail(s, "leader completeness: leader %u of term %llu lacks committed entry %llu",
				 n->id, (unsigned long long)r->term, (unsigned long long)i);
			return;
		}
	}
}

/* Whether a node other than n ever held a commit index of at least at. */
static bool commit_told(const struct sim *s, const struct sim_node *n, uint64_t at)
{
	for (uint32_t i = 0; i < s->p.n_nodes; i++)
		if (&s->nodes[i] != n && s->nodes[i].ever_commit >= at)
			return true;
	return false;
}

/* Whether the disk of every voter of leader n's configuration holds entry at
 * with the term n's log has there (in its snapshot, or stored). */
static bool on_every_voter_disk(const struct sim *s, const struct sim_node *n, uint64_t at)
{
	const struct el_raft *r = &n->node.raft;
	const uint64_t term = el_raft_term_at(r, at);
	for (uint32_t k = 0; k < r->conf.n; k++) {
		const el_id_t id = r->conf.m[k].id;
		if (r->conf.m[k].role != EL_MEMBER_VOTER)
			continue;
		if (id == 0 || id > s->p.n_nodes)
			return false;
		const struct sim_disk *d = &s->nodes[id - 1].disk; /* node id i is nodes[i - 1] */
		if (d->has_snapshot && d->snap.index >= at)
			continue;
		const struct el_entry *e = &d->log[at & (EL_LOG_WINDOW - 1)];
		if (d->last < at || e->index != at || e->term != term)
			return false;
	}
	return true;
}

void sim_check_node(struct sim *s, struct sim_node *n)
{
	const struct el_raft *r = &n->node.raft;
	check_table(s, n);
	if (r->term < n->seen_term || r->commit < n->seen_commit || r->applied < n->seen_applied)
		sim_fail(s, "node %u: term/commit/applied moved back", n->id);
	if (r->commit > r->last_index || r->applied > r->commit || r->snap.index > r->applied)
		sim_fail(s, "node %u: applied <= commit <= last broken", n->id);
	/* The commitment rule (Raft paper 5.4.2): a leader moves its commit
	 * index only to an entry of its own term, found on a quorum; earlier
	 * entries commit with it, never by counting their own replicas. Or to
	 * a commit index another node held, which it told the leader
	 * (learn_commit, raft_replication.c), or to an entry the disk of every
	 * voter holds (commit_on_every_voter, the paper's own example there). */
	if (el_raft_state(r) == EL_LEADER && n->was_leader && n->seen_term == r->term &&
	    r->commit > n->seen_commit && el_raft_term_at(r, r->commit) != r->term &&
	    !commit_told(s, n, r->commit) && !on_every_voter_disk(s, n, r->commit))
		sim_fail(s, "commitment: leader %u of term %llu committed entry %llu of term %llu",
			 n->id, (unsigned long long)r->term, (unsigned long long)r->commit,
			 (unsigned long long)el_raft_term_at(r, r->commit));
	/* A leader's appends leave before its own write (el_raft.h, step 3), but
	 * it steps no acknowledgement before that write is done: it never
	 * commits past its own durable log (the disk, not its own bookkeeping). */
	if (el_raft_state(r) == EL_LEADER && r->commit > n->disk.last && r->commit > n->disk.snap.index)
		sim_fail(s, "durability: leader %u committed %llu, its disk holds up to %llu", n->id,
			 (unsigned long long)r->commit, (unsigned long long)n->disk.last);
	n->seen_term = r->term;
	n->seen_commit = r->commit;
	if (r->commit > n->ever_commit)
		n->ever_commit = r->commit;
	n->seen_applied = r->applied;
	bool leader = el_raft_state(r) == EL_LEADER;
	if (leader) {
		if (r->term >= SIM_TERMS_MAX) {
			sim_fail(s, "term %llu beyond the simulator's table", (unsigned long long)r->term);
			return;
		}
		el_id_t *who = &s->leader_of_term[r->term];
		if (*who == 0)
			*who = n->id;
		else if (*who != n->id)
			sim_fail(s, "election safety: nodes %u and %u both led term %llu", *who, n->id,
				 (unsigned long long)r->term);
		record_commit_term(s, r);
		if (!n->was_leader) {
			sim_log(s, "node %u leads term %llu (last %llu, commit %llu)", n->id,
				(unsigned long long)r->term, (unsigned long long)r->last_index,
				(unsigned long long)r->commit);
			check_leader_completeness(s, n);
		}
	}
	n->was_leader = leader;
	check_log_matching(s, n);
}

void sim_check_disk(struct sim *s, struct sim_node *n, const struct el_hard_state *before)
{
	const struct el_hard_state *hs = &n->disk.hs;
	if (hs->term < before->term)
		sim_fail(s, "node %u: durable term moved back", n->id);
	if (hs->term == before->term && before->vote != 0 && hs->vote != before->vote)
		sim_fail(s, "node %u: voted twice in term %llu", n->id, (unsigned long long)hs->term);
	if (hs->commit < before->commit)
		sim_fail(s, "node %u: durable commit moved back", n->id);
}

static void dump_clients(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_clients; i++) {
		const struct sim_client *c = &s->clients[i];
		sim_log(s, "client %u: alive %d role %u target %u session %llu lease_end %llu holding %d "
			   "main %d (type %u seq %llu queued %d sent %llu) ka %d",
			c->id, c->alive, c->role, c->target, (unsigned long long)c->session,
			(unsigned long long)c->lease_end_ms, c->holding, c->main.active, c->main.cmd.type,
			(unsigned long long)c->main.cmd.seq, c->main.queued,
			(unsigned long long)c->main.sent_ms, c->ka.active);
	}
}

void sim_dump_nodes(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_nodes; i++) {
		const struct el_raft *r = &s->nodes[i].node.raft;
		sim_log(s, "node %u: up %d state %u term %llu snap %llu applied %llu commit %llu "
			   "last %llu (term %llu) conf n %u (roles %u %u %u) conf_index %llu transferee %u",
			s->nodes[i].id, s->nodes[i].up, el_raft_state(r), (unsigned long long)r->term,
			(unsigned long long)r->snap.index, (unsigned long long)r->applied,
			(unsigned long long)r->commit, (unsigned long long)r->last_index,
			(unsigned long long)el_raft_term_at(r, r->last_index), r->conf.n, r->conf.m[0].role,
			r->conf.m[1].role, r->conf.m[2].role, (unsigned long long)r->conf_index,
			r->transferee);
	}
}

void sim_check_liveness(struct sim *s)
{
	if (s->failed)
		return;
	if (s->verbose && s->live_granted_ms == 0) {
		dump_clients(s);
		sim_dump_nodes(s);
	}
	if (s->heal_leader_ms == 0 || s->heal_leader_ms > s->p.heal_ms + SIM_LEADER_BOUND_MS)
		sim_fail(s, "liveness: no leader within %u ms of the heal", SIM_LEADER_BOUND_MS);
	else if (s->live_holder_dead_ms == 0)
		sim_fail(s, "liveness: the probe client never got the \"live\" lock after the heal");
	else if (s->live_granted_ms == 0 || s->live_granted_ms > s->live_bound_ms)
		sim_fail(s, "liveness: \"live\" not granted to the next waiter within TTL + lock-delay "
			    "+ election bound (holder died at %llu, waiter asked at %llu, bound %llu)",
			 (unsigned long long)s->live_holder_dead_ms, (unsigned long long)s->live_asked_ms,
			 (unsigned long long)s->live_bound_ms);
}

void sim_check_durable_before_send(struct sim *s, struct sim_node *n, const struct el_msg *m)
{
	const struct sim_disk *d = &n->disk;
	if (m->flags & EL_MSG_REJECT)
		return;
	if (m->type == EL_MSG_VOTE_RESP && (d->hs.term != m->term || d->hs.vote != m->to))
		sim_fail(s, "node %u granted its vote in term %llu before storing it", n->id,
			 (unsigned long long)m->term);
	if (m->type == EL_MSG_APPEND_RESP && m->index > d->last && m->index > d->snap.index)
		sim_fail(s, "node %u acknowledged index %llu before storing it", n->id,
			 (unsigned long long)m->index);
}

struct sim_log_mark sim_log_mark(const struct el_raft *r)
{
	struct sim_log_mark mark = { r->last_index, el_raft_term_at(r, r->last_index), r->snap.index };
	return mark;
}

void sim_check_log_unchanged(struct sim *s, struct sim_node *n, const struct sim_log_mark *mark)
{
	struct sim_log_mark now = sim_log_mark(&n->node.raft);
	if (now.last_index != mark->last_index || now.last_term != mark->last_term ||
	    now.snap_index != mark->snap_index)
		sim_fail(s, "node %u changed its log on a message from an older term", n->id);
}
