/*
 * raft_election.c - roles and votes: follower, pre-candidate, candidate,
 * leader; PreVote (Raft thesis 9.6: a node first asks whether it could win,
 * without raising its term, so a partitioned node cannot disrupt a healthy
 * cluster when it returns) and the vote rules of the Raft paper (section
 * 5.2, 5.4.1). The lease that makes voters ignore a stray candidate while a
 * leader is alive (thesis 4.2.3) is applied in raft_step.c, before a vote
 * request can change the term.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_raft_internal.h"

void el_raft__become_follower(struct el_raft *r, uint64_t term, el_id_t leader)
{
	EL_ASSERT(term >= r->term);
	EL_ASSERT(term <= EL_TERM_MAX);
	bool was_leader = r->state == EL_LEADER;
	if (term > r->term) {
		r->term = term;
		r->vote = 0;
		r->term_leader = 0;
	}
	r->state = EL_FOLLOWER;
	r->leader = leader;
	r->transferee = 0;
	r->n_pending_reads = 0;
	r->flush_pending = false;
	if (was_leader)
		el_raft__purge_outbox(r, 0, true);
	el_raft__reset_election_timer(r);
}

static void become_leader(struct el_raft *r)
{
	EL_ASSERT(r->state == EL_CANDIDATE);
	EL_ASSERT(r->vote == r->cfg.id);
	r->state = EL_LEADER;
	r->leader = r->cfg.id;
	r->term_leader = r->cfg.id;
	r->rx_active = false; /* a leader receives no snapshot */
	r->transferee = 0;
	r->read_round = 0;
	r->n_pending_reads = 0;
	memset(r->pr, 0, sizeof(r->pr));
	el_raft__remap_progress(r);
	r->heartbeat_deadline_ms = r->now_ms + r->cfg.heartbeat_ms;
	r->quorum_check_ms = r->now_ms + r->cfg.election_ms_min;
	/* A no-op in the new term lets the leader commit (and so learn) what
	 * earlier terms left behind. The no-op room rule (el_config.h) keeps a
	 * slot for it; if entries committed but not yet applied hold that slot,
	 * it follows as soon as they are applied and compacted. */
	el_raft__maybe_noop(r);
	r->flush_pending = true;
}

static void send_vote_requests(struct el_raft *r, uint8_t type, uint64_t term, bool forced)
{
	uint64_t last = r->last_index;
	EL_ASSERT(term == r->term + (type == EL_MSG_PREVOTE));
	EL_ASSERT(term <= EL_TERM_MAX);
	for (uint32_t i = 0; i < r->conf.n; i++) {
		if (r->conf.m[i].role != EL_MEMBER_VOTER || r->conf.m[i].id == r->cfg.id)
			continue;
		struct el_msg *m = el_raft__msg(r, type, r->conf.m[i].id);
		if (m == NULL)
			continue;
		m->term = term;
		m->index = last;
		m->log_term = el_raft_term_at(r, last);
		m->flags = forced ? EL_MSG_FORCE : 0;
	}
}

static void start_round(struct el_raft *r, uint8_t state)
{
	int self = el_raft__slot_of(&r->conf, r->cfg.id);
	EL_ASSERT(state == EL_PRECANDIDATE || state == EL_CANDIDATE);
	r->state = state;
	r->leader = 0;
	/* A candidate being removed runs without counting its own vote. */
	r->votes_granted = self >= 0 ? 1u << self : 0;
	r->votes_rejected = 0;
	el_raft__reset_election_timer(r);
}

static void campaign_for_real(struct el_raft *r, bool forced)
{
	EL_ASSERT(r->term < EL_TERM_MAX); /* el_raft__can_campaign */
	r->term++;
	r->vote = r->cfg.id;
	r->term_leader = 0;
	start_round(r, EL_CANDIDATE);
	send_vote_requests(r, EL_MSG_VOTE, r->term, forced);
}

/* Counts the votes of this round; wins or loses once a quorum has spoken.
 * A won pre-vote starts the real election, which a single voter wins at
 * once: hence a second pass, and no more (no recursion). */
static void tally(struct el_raft *r)
{
	for (int pass = 0; pass < 2; pass++) {
		uint32_t granted = 0, rejected = 0, quorum = el_raft__quorum(&r->conf);
		for (uint32_t i = 0; i < r->conf.n; i++) {
			if (r->conf.m[i].role != EL_MEMBER_VOTER)
				continue;
			granted += (r->votes_granted >> i) & 1u;
			rejected += (r->votes_rejected >> i) & 1u;
		}
		if (rejected >= quorum) {
			el_raft__become_follower(r, r->term, 0);
			return;
		}
		if (granted < quorum)
			return;
		if (r->state != EL_PRECANDIDATE) {
			become_leader(r);
			return;
		}
		campaign_for_real(r, false);
	}
}

/* Start an election round: a pre-vote first unless PreVote is off or this is
 * a leadership transfer (the old leader asked us to take over). */
void el_raft__campaign(struct el_raft *r, bool forced)
{
	EL_ASSERT(el_raft__can_campaign(r));
	EL_ASSERT(r->state != EL_LEADER);
	r->stats.elections++;
	if (!r->cfg.prevote || forced) {
		campaign_for_real(r, forced);
	} else {
		start_round(r, EL_PRECANDIDATE);
		send_vote_requests(r, EL_MSG_PREVOTE, r->term + 1, false);
	}
	tally(r); /* a single voter wins at once */
}

static bool log_up_to_date(const struct el_raft *r, uint64_t index, uint64_t term)
{
	uint64_t last_term = el_raft_term_at(r, r->last_index);
	return term > last_term || (term == last_term && index >= r->last_index);
}

/* A vote request at our term (a real vote) or above it (a pre-vote, whose
 * term is the one the candidate would take; a pre-vote not above our term
 * comes from a node behind us and is refused). A real vote goes to at most
 * one candidate per term, and never to a candidate other than the leader
 * this node already follows in the term. */
void el_raft__handle_vote(struct el_raft *r, const struct el_msg *m)
{
	bool pre = m->type == EL_MSG_PREVOTE;
	EL_ASSERT(m->term >= r->term);
	bool can_vote = pre ? m->term > r->term
			    : r->vote == m->from || (r->vote == 0 && r->leader == 0);
	uint8_t resp_type = pre ? EL_MSG_PREVOTE_RESP : EL_MSG_VOTE_RESP;
	struct el_msg *out;
	if (can_vote && log_up_to_date(r, m->index, m->log_term)) {
		out = el_raft__msg(r, resp_type, m->from);
		if (out != NULL)
			out->term = m->term;
		if (!pre) {
			EL_ASSERT(m->term == r->term);
			r->vote = m->from; /* persisted before the reply leaves */
			el_raft__reset_election_timer(r);
		}
	} else {
		out = el_raft__msg(r, resp_type, m->from);
		if (out != NULL)
			out->flags = EL_MSG_REJECT;
	}
}

void el_raft__handle_vote_resp(struct el_raft *r, const struct el_msg *m)
{
	bool pre = m->type == EL_MSG_PREVOTE_RESP;
	EL_ASSERT(m->term >= r->term);
	if ((pre && r->state != EL_PRECANDIDATE) || (!pre && r->state != EL_CANDIDATE))
		return;
	/* A granted pre-vote carries the term we asked about. */
	if (pre && !(m->flags & EL_MSG_REJECT) && m->term != r->term + 1)
		return;
	int slot = el_raft__slot_of(&r->conf, m->from);
	if (slot < 0)
		return;
	if (m->flags & EL_MSG_REJECT)
		r->votes_rejected |= 1u << slot;
	else
		r->votes_granted |= 1u << slot;
	tally(r);
}
