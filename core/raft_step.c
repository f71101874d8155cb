/*
 * raft_step.c - el_raft_step(): validate a peer message, apply the term
 * rules every Raft message obeys, then dispatch it by type.
 *
 * Everything a peer sends is outside input: a message that is malformed or
 * impossible (entries out of order, lengths over the limits, a term or an
 * index beyond EL_TERM_MAX / EL_INDEX_MAX, an entry of term 0, a second
 * leader in one term, an append that would overwrite a committed entry) is
 * refused with an error before anything changes. Asserts stay for our own
 * invariants.
 */
#include "el_assert.h"
#include "el_error.h"
#include "el_raft_internal.h"

static int validate_entries(const struct el_msg *m)
{
	uint64_t prev_term = m->log_term;
	if (m->n_entries > EL_MSG_ENTRIES_MAX || (m->n_entries > 0 && m->entries == NULL))
		return EL_EDECODE;
	if (m->n_entries > 0 && m->type != EL_MSG_APPEND)
		return EL_EDECODE;
	/* m->index <= EL_INDEX_MAX (validate), so this cannot wrap. */
	if (m->index + m->n_entries > EL_INDEX_MAX)
		return EL_EDECODE;
	for (uint32_t k = 0; k < m->n_entries; k++) {
		const struct el_entry *e = &m->entries[k];
		struct el_conf c;
		if (e->index != m->index + 1 + k)
			return EL_EDECODE;
		/* Term 0 belongs to no leader: only the bootstrap snapshot has it. */
		if (e->term == 0 || e->term < prev_term || e->term > m->term)
			return EL_EDECODE;
		if (e->len > EL_ENTRY_DATA_MAX || e->type > EL_ENTRY_CONF)
			return EL_EDECODE;
		if (e->type == EL_ENTRY_CONF && el_conf_decode(&c, e->data, e->len) != 0)
			return EL_EDECODE;
		prev_term = e->term;
	}
	return 0;
}

static int validate_snapshot(const struct el_msg *m)
{
	if (m->type != EL_MSG_SNAPSHOT)
		return m->data_len == 0 ? 0 : EL_EDECODE;
	if (m->total > EL_SNAPSHOT_MAX || m->data_len > EL_SNAPSHOT_CHUNK)
		return EL_EDECODE;
	if (m->offset > m->total || m->data_len > m->total - m->offset)
		return EL_EDECODE;
	if (m->data_len > 0 && m->data == NULL)
		return EL_EDECODE;
	if (m->index == 0 || m->log_term == 0 || m->log_term > m->term)
		return EL_EDECODE;
	return el_raft__conf_valid(&m->conf) ? 0 : EL_EDECODE;
}

/* What a message says on its own, before it is compared with our state.
 * The bounds keep every term and index this node adopts far below 2^64
 * (el_config.h), so that term + 1 and index + 1 never wrap anywhere. */
static int validate(const struct el_raft *r, const struct el_msg *m)
{
	if (m->type == 0 || m->type > EL_MSG_TYPE_MAX)
		return EL_EDECODE;
	if (m->term == 0 || m->term > EL_TERM_MAX)
		return EL_EDECODE;
	if (m->index > EL_INDEX_MAX || m->commit > EL_INDEX_MAX || m->hint_index > EL_INDEX_MAX)
		return EL_EDECODE;
	if (m->to != r->cfg.id || m->from == 0 || m->from == r->cfg.id)
		return EL_EINVAL;
	if (m->log_term > m->term && m->type != EL_MSG_APPEND_RESP)
		return EL_EDECODE;
	int err = validate_entries(m);
	return err != 0 ? err : validate_snapshot(m);
}

/* The leader lease (Raft thesis 4.2.3, "disruptive servers"): a server that
 * believes a current leader exists ignores a PreVote or RequestVote for a
 * higher term, so a node that was cut off and comes back cannot depose a
 * leader that still reaches its quorum. A follower is in the lease while it
 * has heard the leader within the minimum election timeout. A leader with
 * CheckQuorum is in its lease for as long as it leads: it steps down at the
 * first quorum check (thesis 6.2) that finds less than a quorum heard from
 * within an election timeout, so leading means a live quorum. */
static bool in_leader_lease(const struct el_raft *r)
{
	if (!r->cfg.check_quorum)
		return false;
	if (r->state == EL_LEADER)
		return true;
	return r->leader != 0 && r->now_ms - r->leader_contact_ms < r->cfg.election_ms_min;
}

static bool is_leader_msg(uint8_t type)
{
	return type == EL_MSG_APPEND || type == EL_MSG_HEARTBEAT || type == EL_MSG_SNAPSHOT;
}

/* A message from a higher term. Returns false when it is to be ignored. */
static bool higher_term(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(m->term > r->term);
	bool vote_req = m->type == EL_MSG_VOTE || m->type == EL_MSG_PREVOTE;
	/* EL_MSG_FORCE: the leader itself asked for this election (a
	 * leadership transfer, thesis 3.10), so the lease does not apply. */
	if (vote_req && !(m->flags & EL_MSG_FORCE) && in_leader_lease(r))
		return false; /* a live leader exists: do not let a stray node disrupt it */
	if (m->type == EL_MSG_PREVOTE)
		return true; /* never change term for a pre-vote (thesis 9.6) */
	if (m->type == EL_MSG_PREVOTE_RESP && !(m->flags & EL_MSG_REJECT))
		return true; /* granted pre-votes carry the term we would take */
	el_raft__become_follower(r, m->term, is_leader_msg(m->type) ? m->from : 0);
	EL_ASSERT(r->term == m->term);
	return true;
}

static void lower_term(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(m->term < r->term);
	if (is_leader_msg(m->type)) {
		/* Tell a stale leader about the newer term so it steps down. */
		el_raft__msg(r, EL_MSG_APPEND_RESP, m->from);
	} else if (m->type == EL_MSG_PREVOTE) {
		struct el_msg *out = el_raft__msg(r, EL_MSG_PREVOTE_RESP, m->from);
		if (out != NULL)
			out->flags = EL_MSG_REJECT;
	}
}

/* A leader message of our term or a newer one, checked against what this
 * node already knows before anything changes. Election safety as this node
 * saw it: the leader it followed in its current term is the only one (a
 * second would truncate entries this node acknowledged to the first, which
 * that one may have counted as committed). And no leader of our term or a
 * newer one holds a log that disagrees with our committed entries (Leader
 * Completeness, Raft paper 5.4), so such an append is hostile. */
static int check_leader_msg(const struct el_raft *r, const struct el_msg *m)
{
	if (!is_leader_msg(m->type) || m->term < r->term)
		return 0;
	if (m->term == r->term && r->state == EL_LEADER)
		return EL_EINVAL; /* two leaders in one term */
	if (m->term == r->term && r->term_leader != 0 && r->term_leader != m->from)
		return EL_EINVAL;
	if (m->type == EL_MSG_APPEND && el_raft_append_overwrites_commit(r, m))
		return EL_EINVAL;
	return 0;
}

/* A current-term message from the leader: follow it. */
static void follow(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(r->state != EL_LEADER);
	EL_ASSERT(m->term == r->term);
	if (r->state != EL_FOLLOWER || r->leader != m->from)
		el_raft__become_follower(r, m->term, m->from);
	r->term_leader = m->from;
	r->leader_contact_ms = r->now_ms;
	el_raft__reset_election_timer(r);
}

static int dispatch(struct el_raft *r, const struct el_msg *m)
{
	/* Only a pre-vote and a granted pre-vote answer leave a newer term. */
	EL_ASSERT(m->term >= r->term);
	EL_ASSERT(m->to == r->cfg.id);
	switch (m->type) {
	case EL_MSG_VOTE:
	case EL_MSG_PREVOTE:
		el_raft__handle_vote(r, m);
		return 0;
	case EL_MSG_VOTE_RESP:
	case EL_MSG_PREVOTE_RESP:
		el_raft__handle_vote_resp(r, m);
		return 0;
	case EL_MSG_APPEND:
		follow(r, m);
		el_raft__handle_append(r, m);
		return 0;
	case EL_MSG_HEARTBEAT:
		follow(r, m);
		el_raft__handle_heartbeat(r, m);
		return 0;
	case EL_MSG_SNAPSHOT:
		follow(r, m);
		return el_raft__handle_snapshot(r, m);
	case EL_MSG_APPEND_RESP:
		el_raft__handle_append_resp(r, m);
		return 0;
	case EL_MSG_HEARTBEAT_RESP:
		el_raft__handle_heartbeat_resp(r, m);
		return 0;
	case EL_MSG_SNAPSHOT_RESP:
		el_raft__handle_snapshot_resp(r, m);
		return 0;
	case EL_MSG_TIMEOUT_NOW:
		/* Leadership transfer (thesis 3.10): campaign now, past any lease. */
		if (r->state == EL_FOLLOWER && m->from == r->leader && el_raft__can_campaign(r))
			el_raft__campaign(r, true);
		return 0;
	default:
		return EL_EDECODE;
	}
}

static int step(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(m != NULL);
	int err = validate(r, m);
	if (err == 0)
		err = check_leader_msg(r, m);
	if (err != 0)
		return err;
	if (m->term > r->term) {
		if (!higher_term(r, m))
			return 0;
	} else if (m->term < r->term) {
		lower_term(r, m);
		return 0;
	}
	return dispatch(r, m);
}

int el_raft_step(struct el_raft *r, const struct el_msg *m, uint64_t now_ms)
{
	el_raft__enter(r, now_ms);
	uint64_t term_before = r->term, commit_before = r->commit;
	int err = step(r, m);
	if (err != 0)
		r->stats.msgs_rejected++;
	EL_ASSERT(r->term >= term_before);
	EL_ASSERT(r->commit >= commit_before);
	el_raft__check_invariants(r);
	return err;
}
