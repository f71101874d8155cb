/*
 * raft_step.c - el_raft_step(): validate a peer message, apply the term
 * rules every Raft message obeys, then dispatch it by type.
 *
 * Everything a peer sends is outside input: a message that is malformed or
 * impossible (entries out of order, lengths over the limits, a second leader
 * in one term) is refused with an error before anything changes. Asserts
 * stay for our own invariants.
 */
#include "el_assert.h"
#include "el_error.h"
#include "el_raft_internal.h"

static int validate_entries(const struct el_msg *m)
{
	uint64_t prev_term = m->log_term;
	if (m->n_entries > EL_MSG_ENTRIES_MAX || (m->n_entries > 0 && m->entries == NULL))
		return EL_EDECODE;
	if (m->index > UINT64_MAX - EL_LOG_WINDOW)
		return EL_EDECODE;
	if (m->n_entries > 0 && m->type != EL_MSG_APPEND)
		return EL_EDECODE;
	for (uint32_t k = 0; k < m->n_entries; k++) {
		const struct el_entry *e = &m->entries[k];
		struct el_conf c;
		if (e->index != m->index + 1 + k || e->term < prev_term || e->term > m->term ||
		    e->len > EL_ENTRY_DATA_MAX || e->type > EL_ENTRY_CONF)
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
	if (m->total > EL_SNAPSHOT_MAX || m->data_len > EL_SNAPSHOT_CHUNK ||
	    m->offset > m->total || m->data_len > m->total - m->offset ||
	    (m->data_len > 0 && m->data == NULL))
		return EL_EDECODE;
	if (m->index == 0 || m->log_term == 0 || m->log_term > m->term ||
	    !el_raft__conf_valid(&m->conf))
		return EL_EDECODE;
	return 0;
}

static int validate(const struct el_raft *r, const struct el_msg *m)
{
	if (m->type == 0 || m->type > EL_MSG_TYPE_MAX || m->term == 0)
		return EL_EDECODE;
	if (m->to != r->cfg.id || m->from == 0 || m->from == r->cfg.id)
		return EL_EINVAL;
	if (m->log_term > m->term && m->type != EL_MSG_APPEND_RESP)
		return EL_EDECODE;
	int err = validate_entries(m);
	return err != 0 ? err : validate_snapshot(m);
}

static bool in_leader_lease(const struct el_raft *r)
{
	return r->cfg.check_quorum && r->leader != 0 &&
	       r->now_ms - r->leader_contact_ms < r->cfg.election_ms_min;
}

static bool is_leader_msg(uint8_t type)
{
	return type == EL_MSG_APPEND || type == EL_MSG_HEARTBEAT || type == EL_MSG_SNAPSHOT;
}

/* A message from a higher term. Returns false when it is to be ignored. */
static bool higher_term(struct el_raft *r, const struct el_msg *m)
{
	bool vote_req = m->type == EL_MSG_VOTE || m->type == EL_MSG_PREVOTE;
	if (vote_req && !(m->flags & EL_MSG_FORCE) && in_leader_lease(r))
		return false; /* a live leader exists: do not let a stray node disrupt it */
	if (m->type == EL_MSG_PREVOTE)
		return true; /* never change term for a pre-vote */
	if (m->type == EL_MSG_PREVOTE_RESP && !(m->flags & EL_MSG_REJECT))
		return true; /* granted pre-votes carry the term we would take */
	el_raft__become_follower(r, m->term, is_leader_msg(m->type) ? m->from : 0);
	return true;
}

static void lower_term(struct el_raft *r, const struct el_msg *m)
{
	if (is_leader_msg(m->type)) {
		/* Tell a stale leader about the newer term so it steps down. */
		el_raft__msg(r, EL_MSG_APPEND_RESP, m->from);
	} else if (m->type == EL_MSG_PREVOTE) {
		struct el_msg *out = el_raft__msg(r, EL_MSG_PREVOTE_RESP, m->from);
		if (out != NULL)
			out->flags = EL_MSG_REJECT;
	}
}

/* A current-term message from the leader: follow it. */
static int follow(struct el_raft *r, const struct el_msg *m)
{
	if (r->state == EL_LEADER)
		return EL_EINVAL; /* two leaders in one term: impossible, refuse */
	if (r->state != EL_FOLLOWER || r->leader != m->from)
		el_raft__become_follower(r, m->term, m->from);
	r->leader_contact_ms = r->now_ms;
	el_raft__reset_election_timer(r);
	return 0;
}

static int dispatch(struct el_raft *r, const struct el_msg *m)
{
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
	case EL_MSG_HEARTBEAT:
	case EL_MSG_SNAPSHOT: {
		int err = follow(r, m);
		if (err != 0)
			return err;
		if (m->type == EL_MSG_APPEND)
			el_raft__handle_append(r, m);
		else if (m->type == EL_MSG_HEARTBEAT)
			el_raft__handle_heartbeat(r, m);
		else
			el_raft__handle_snapshot(r, m);
		return 0;
	}
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
		if (r->state == EL_FOLLOWER && m->from == r->leader && el_raft__can_campaign(r))
			el_raft__campaign(r, true);
		return 0;
	default:
		return EL_EDECODE;
	}
}

int el_raft_step(struct el_raft *r, const struct el_msg *m, uint64_t now_ms)
{
	el_raft__enter(r, now_ms);
	int err = validate(r, m);
	if (err != 0) {
		r->stats.msgs_rejected++;
		return err;
	}
	uint64_t term_before = r->term;
	if (m->term > r->term) {
		if (!higher_term(r, m))
			return 0;
	} else if (m->term < r->term) {
		lower_term(r, m);
		return 0;
	}
	err = dispatch(r, m);
	if (err != 0)
		r->stats.msgs_rejected++;
	EL_ASSERT(r->term >= term_before);
	return err;
}
