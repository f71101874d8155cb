/*
 * raft_replication.c - log replication: the leader's per-peer progress
 * (probe one message at a time, then pipeline up to EL_INFLIGHT_MAX batched
 * appends), the follower's consistency check with fast backtracking hints,
 * the commit rule (a quorum of voters and an entry of the current term,
 * Raft paper 5.4.2), heartbeats and ReadIndex rounds.
 */
#include "el_assert.h"
#include "el_error.h"
#include "el_raft_internal.h"

struct el_progress *el_raft__progress(struct el_raft *r, el_id_t id)
{
	int slot = el_raft__slot_of(&r->conf, id);
	EL_ASSERT(r->state == EL_LEADER);
	if (slot < 0 || id == r->cfg.id)
		return NULL;
	EL_ASSERT(r->pr[slot].id == id);
	return &r->pr[slot];
}

bool el_raft__committed_in_term(const struct el_raft *r)
{
	EL_ASSERT(r->commit <= r->last_index);
	return el_raft_term_at(r, r->commit) == r->term;
}

/* ---- Leader: sending ---------------------------------------------------- */

static void inflight_add(struct el_progress *pr, uint64_t last)
{
	EL_ASSERT(pr->inflight_n < EL_INFLIGHT_MAX);
	EL_ASSERT(pr->state == EL_PR_REPLICATE);
	pr->inflight[(pr->inflight_head + pr->inflight_n) % EL_INFLIGHT_MAX] = last;
	pr->inflight_n++;
}

static void inflight_free_through(struct el_progress *pr, uint64_t index)
{
	EL_ASSERT(pr->inflight_n <= EL_INFLIGHT_MAX);
	EL_ASSERT(pr->inflight_head < EL_INFLIGHT_MAX);
	while (pr->inflight_n > 0 && pr->inflight[pr->inflight_head] <= index) {
		pr->inflight_head = (uint8_t)((pr->inflight_head + 1) % EL_INFLIGHT_MAX);
		pr->inflight_n--;
	}
}

static void become_probe(struct el_progress *pr)
{
	EL_ASSERT(pr->id != 0);
	EL_ASSERT(pr->state == EL_PR_REPLICATE);
	pr->state = EL_PR_PROBE;
	pr->probe_sent = false;
	pr->inflight_n = 0;
	pr->inflight_head = 0;
	pr->next = pr->match + 1;
}

/* A follower's link closed (el_raft_peer_lost): its process may be back
 * with less than it acknowledged (a board wiped and started again), which
 * an idle cluster never saw, since heartbeats carry no log position: the
 * leader's loss then found it empty and not voting (an outside tester).
 * Probe it: its next heartbeat reply gets an append (empty when it is up
 * to date) whose previous entry it must hold, or refuse with a hint. */
void el_raft__probe_lost(struct el_raft *r, el_id_t id)
{
	struct el_progress *pr = r->state == EL_LEADER ? el_raft__progress(r, id) : NULL;
	if (pr != NULL && pr->state == EL_PR_REPLICATE)
		become_probe(pr);
}

void el_raft__send_append(struct el_raft *r, struct el_progress *pr, bool allow_empty)
{
	EL_ASSERT(r->state == EL_LEADER);
	EL_ASSERT(pr->next >= 1);
	if (pr->state == EL_PR_SNAPSHOT ||
	    (pr->state == EL_PR_PROBE && pr->probe_sent) ||
	    (pr->state == EL_PR_REPLICATE && pr->inflight_n >= EL_INFLIGHT_MAX))
		return;
	uint64_t prev = pr->next - 1;
	if (prev < r->snap.index) {
		/* The entries it needs are compacted: send the snapshot. */
		pr->state = EL_PR_SNAPSHOT;
		pr->snap_index = 0;
		el_raft__send_snapshot_chunk(r, pr);
		return;
	}
	uint64_t n = pr->next <= r->last_index ? r->last_index - pr->next + 1 : 0;
	if (n > EL_MSG_ENTRIES_MAX)
		n = EL_MSG_ENTRIES_MAX;
	/* Entries travel as one contiguous run of the ring: stop at its end. */
	uint64_t to_ring_end = EL_LOG_WINDOW - EL_RAFT_SLOT(pr->next);
	if (n > to_ring_end)
		n = to_ring_end;
	if (n == 0 && !allow_empty && pr->state == EL_PR_REPLICATE)
		return;
	struct el_msg *m = el_raft__msg(r, EL_MSG_APPEND, pr->id);
	if (m == NULL)
		return;
	m->index = prev;
	m->log_term = el_raft_term_at(r, prev);
	m->commit = r->commit;
	m->n_entries = (uint32_t)n;
	m->entries = n > 0 ? el_raft_entry(r, pr->next) : NULL;
	if (pr->state == EL_PR_PROBE) {
		pr->probe_sent = true;
	} else if (n > 0) {
		pr->next += n;
		inflight_add(pr, pr->next - 1);
	}
}

void el_raft__broadcast_append(struct el_raft *r, bool allow_empty)
{
	EL_ASSERT(r->state == EL_LEADER);
	for (uint32_t i = 0; i < r->conf.n; i++)
		if (r->conf.m[i].id != r->cfg.id)
			el_raft__send_append(r, &r->pr[i], allow_empty);
}

void el_raft__broadcast_heartbeat(struct el_raft *r)
{
	EL_ASSERT(r->state == EL_LEADER);
	for (uint32_t i = 0; i < r->conf.n; i++) {
		struct el_progress *pr = &r->pr[i];
		if (pr->id == r->cfg.id)
			continue;
		if (pr->state == EL_PR_SNAPSHOT) {
			/* Resend a chunk lost on the way, once it has been out a
			 * heartbeat interval: not at every read round (each sends
			 * heartbeats), which to a follower that had stopped
			 * reading queued a 32 KiB chunk per read at the leader. */
			if (r->now_ms - pr->snap_sent_ms >= r->cfg.heartbeat_ms)
				el_raft__send_snapshot_chunk(r, pr);
			continue;
		}
		struct el_msg *m = el_raft__msg(r, EL_MSG_HEARTBEAT, pr->id);
		if (m == NULL)
			continue;
		/* Only what this peer is known to share with us may commit there. */
		m->commit = pr->match < r->commit ? pr->match : r->commit;
		m->ctx = r->read_round;
	}
}

/* ---- Leader: commit ----------------------------------------------------- */

/* An entry durable on every voter commits whatever its term: the Raft paper
 * (5.4.2) names it as the case where a leader may safely conclude that an
 * older entry is committed. Counting a quorum cannot (its Figure 8: a voter
 * without the entry, holding a later term's at that index, could still be
 * elected and overwrite it); with every voter holding it, no voter has
 * another entry there, and no leader creates one below its own log. Only
 * with this leader's configuration committed, so that no voter of an older
 * one (removed since, perhaps without the entry) can still be elected.
 * This is what frees a leader elected with a window full of earlier terms'
 * entries that no survivor knows committed (their leader crashed before
 * saying so) and no slot for its no-op (the configuration matrix, window 8;
 * learn_commit below covers a survivor that knows). all_index is the lowest
 * durable index over the voters (their match, our persisted index). */
static bool commit_on_every_voter(struct el_raft *r, uint64_t all_index)
{
	if (all_index <= r->commit || r->conf_index > r->commit)
		return false;
	el_raft__commit_to(r, all_index);
	return true;
}

bool el_raft__maybe_commit(struct el_raft *r)
{
	uint64_t matches[EL_NODES_MAX];
	uint32_t n = 0;
	EL_ASSERT(r->state == EL_LEADER);
	for (uint32_t i = 0; i < r->conf.n; i++) {
		if (r->conf.m[i].role != EL_MEMBER_VOTER)
			continue;
		matches[n++] = r->conf.m[i].id == r->cfg.id ? r->persisted_index : r->pr[i].match;
	}
	if (n == 0)
		return false;
	for (uint32_t i = 1; i < n; i++) { /* insertion sort, descending; n <= 15 */
		uint64_t v = matches[i];
		uint32_t j = i;
		for (; j > 0 && matches[j - 1] < v; j--)
			matches[j] = matches[j - 1];
		matches[j] = v;
	}
	EL_ASSERT(el_raft__quorum(&r->conf) <= n);
	uint64_t index = matches[el_raft__quorum(&r->conf) - 1];
	if (index <= r->commit || el_raft_term_at(r, index) != r->term)
		/* only current-term entries commit by counting a quorum */
		return EL_LEARN_COMMIT && commit_on_every_voter(r, matches[n - 1]);
	el_raft__commit_to(r, index);
	el_raft__start_reads(r);
	return true;
}

void el_raft__commit_to(struct el_raft *r, uint64_t commit)
{
	if (commit <= r->commit)
		return;
	EL_ASSERT(commit <= r->last_index);
	EL_ASSERT(el_raft_term_at(r, commit) <= r->term);
	r->commit = commit;
}

/* ---- Follower: receiving appends --------------------------------------- */

static bool match_term(const struct el_raft *r, uint64_t index, uint64_t term)
{
	if (index > r->last_index || index < r->snap.index)
		return false;
	return el_raft_term_at(r, index) == term;
}

/* The largest index <= index whose term is <= term: where our logs may agree. */
static uint64_t find_conflict_by_term(const struct el_raft *r, uint64_t index, uint64_t term)
{
	if (index > r->last_index)
		index = r->last_index;
	while (index > r->snap.index && el_raft_term_at(r, index) > term)
		index--;
	return index;
}

static void reply_append(struct el_raft *r, const struct el_msg *m, uint64_t index, bool reject)
{
	EL_ASSERT(m->type == EL_MSG_APPEND);
	struct el_msg *out = el_raft__msg(r, EL_MSG_APPEND_RESP, m->from);
	if (out == NULL)
		return;
	out->index = index;
	if (reject) {
		out->flags = EL_MSG_REJECT;
		out->hint_index = find_conflict_by_term(r, m->index, m->log_term);
		out->hint_term = el_raft_term_at(r, out->hint_index);
	}
}

/* Whether an append disagrees with an entry this node has committed (and
 * still holds): its previous entry or one of its entries has another term.
 * A leader of our term or a newer one never sends that (Leader
 * Completeness), so el_raft_step refuses it before anything changes; a
 * stale leader may, and is answered with our term instead. */
bool el_raft_append_overwrites_commit(const struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(m->type == EL_MSG_APPEND);
	EL_ASSERT(m->n_entries <= EL_MSG_ENTRIES_MAX);
	if (m->index <= r->commit && m->index >= r->snap.index &&
	    el_raft_term_at(r, m->index) != m->log_term)
		return true;
	for (uint32_t k = 0; k < m->n_entries; k++) {
		const struct el_entry *e = &m->entries[k];
		if (e->index > r->commit)
			break;
		if (e->index > r->snap.index && el_raft_term_at(r, e->index) != e->term)
			return true;
	}
	return false;
}

/* Returns how many of the message's entries the log now holds in order.
 * The entries agree with every committed entry we hold (checked in
 * el_raft_step), so a conflict lies above the commit index. */
static uint32_t append_entries(struct el_raft *r, const struct el_msg *m)
{
	uint32_t k = 0;
	EL_ASSERT(m->index >= r->commit);
	for (; k < m->n_entries; k++) { /* skip what we already hold */
		const struct el_entry *e = &m->entries[k];
		if (e->index > r->last_index || el_raft_term_at(r, e->index) != e->term)
			break;
	}
	if (k < m->n_entries && m->entries[k].index <= r->last_index)
		el_raft__truncate_from(r, m->entries[k].index);
	for (; k < m->n_entries; k++) {
		const struct el_entry *e = &m->entries[k];
		if (!el_raft__make_room(r))
			break; /* accept what fits; the leader resends the rest */
		r->log[EL_RAFT_SLOT(e->index)] = *e;
		r->last_index = e->index;
		if (e->type == EL_ENTRY_CONF) {
			struct el_conf c;
			int err = el_conf_decode(&c, e->data, e->len);
			EL_ASSERT(err == 0); /* validated in el_raft_step */
			el_raft__set_conf(r, &c, e->index);
		}
	}
	return k;
}

void el_raft__handle_append(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(r->state == EL_FOLLOWER);
	EL_ASSERT(m->term == r->term);
	if (m->index < r->commit) {
		reply_append(r, m, r->commit, false); /* already committed here */
		return;
	}
	if (!match_term(r, m->index, m->log_term)) {
		reply_append(r, m, m->index, true);
		return;
	}
	uint32_t accepted = append_entries(r, m);
	/* Commit no further than this message verified: beyond last_new our log
	 * may hold a stale suffix of an older term (Raft paper, figure 2). */
	uint64_t last_new = m->index + accepted;
	el_raft__commit_to(r, m->commit < last_new ? m->commit : last_new);
	reply_append(r, m, last_new, false);
}

void el_raft__handle_heartbeat(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(r->state == EL_FOLLOWER);
	EL_ASSERT(m->term == r->term);
	/* The leader caps a heartbeat's commit at what it knows we match. */
	el_raft__commit_to(r, m->commit < r->last_index ? m->commit : r->last_index);
	struct el_msg *out = el_raft__msg(r, EL_MSG_HEARTBEAT_RESP, m->from);
	if (out != NULL) {
		out->ctx = m->ctx;
		if (EL_LEARN_COMMIT)
			out->commit = r->commit; /* for a leader that has not learnt it */
	}
}

/* ---- Leader: responses -------------------------------------------------- */

static bool maybe_decrease(struct el_raft *r, struct el_progress *pr, const struct el_msg *m)
{
	EL_ASSERT(m->flags & EL_MSG_REJECT);
	EL_ASSERT(m->index <= r->last_index);
	/* A hint below match: the follower either no longer holds entries it
	 * acknowledged (its data wiped, or a disk that lost synced writes) or
	 * the rejection is stale, sent before the acknowledgement that raised
	 * match and delivered after it (a fresh one from an honest follower
	 * never is below match: it holds the leader's entries up to there).
	 * Taking every such reply as stale kept a wiped follower empty,
	 * counted reachable, for good (an outside tester); lowering match on
	 * any of them sent snapshots for entries the follower held, so often,
	 * under reordering and frequent compaction, that sessions ran out (the
	 * simulator's configuration matrix, compaction at every entry). So:
	 * probe at match, and lower match only when the probe itself is
	 * refused (below), which an honest follower never does. */
	const bool below_match = m->hint_index < pr->match;
	if (pr->state == EL_PR_REPLICATE) {
		if (m->index <= pr->match && !below_match)
			return false; /* stale */
		become_probe(pr);
		return true;
	}
	if (pr->state != EL_PR_PROBE || m->index != pr->next - 1)
		return false; /* stale */
	/* The probe at match refused: replicate from the follower's hint; commit
	 * never goes back. The daemon says so (diag.c). */
	if (below_match)
		pr->match = m->hint_index;
	uint64_t hint = m->hint_index;
	if (m->hint_term > 0)
		hint = find_conflict_by_term(r, m->hint_index, m->hint_term);
	uint64_t next = hint + 1 < m->index ? hint + 1 : m->index;
	pr->next = next > pr->match + 1 ? next : pr->match + 1;
	pr->probe_sent = false;
	return true;
}

/* An acknowledgement of index: below match it is stale and changes nothing
 * (a reply to it could start an endless exchange). At or above match it ends
 * a probe, as in etcd: an ack equal to match (the empty append after a
 * snapshot, or a probe of an idle follower) proves the follower's log agrees
 * up to match, so it replicates from there and, having nothing new, is sent
 * nothing more until there is. */
static void on_ack(struct el_raft *r, struct el_progress *pr, uint64_t index)
{
	EL_ASSERT(index <= r->last_index);
	if (index < pr->match)
		return;
	if (index > pr->match)
		pr->match = index;
	if (pr->state == EL_PR_PROBE) {
		pr->state = EL_PR_REPLICATE;
		pr->inflight_n = 0;
		pr->inflight_head = 0;
		pr->next = pr->match + 1;
	}
	if (pr->next <= pr->match)
		pr->next = pr->match + 1;
	pr->probe_sent = false;
	inflight_free_through(pr, index);
	/* A new commit index travels with the next append (entries waiting now
	 * go at once) or the next heartbeat, within heartbeat_ms: an empty append
	 * to every follower per commit, and its acknowledgement, doubled the
	 * peer messages of a commit for nothing a follower needs at once (only
	 * the leader answers clients). Small windows still get it at once
	 * (EL_COMMIT_LAZY_WINDOW_MIN, el_config.h). */
	if (el_raft__maybe_commit(r))
		el_raft__broadcast_append(r, EL_LOG_WINDOW < EL_COMMIT_LAZY_WINDOW_MIN);
	el_raft__send_append(r, pr, false);
	el_raft__maybe_finish_transfer(r, pr);
	el_raft__maybe_promote(r, pr);
}

/* A commit index a follower learnt from an earlier leader, told with its
 * heartbeat reply (within heartbeat_ms; EL_LEARN_COMMIT, off on boards),
 * taken as ours:
 * a leader holds every entry committed in an earlier term, at the same
 * index and term (Leader Completeness, Raft paper 5.4.3), so the entries up
 * to it are committed here too. Without it, a leader elected with a window
 * full of earlier terms' entries, committed by a leader it never heard
 * commit them, had no slot for its no-op and so could commit nothing, for
 * good: a run of leaders deposed in turn (the simulator's configuration
 * matrix, window 8). An index of our own term commits by counting only:
 * ignored. */
static void learn_commit(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(r->state == EL_LEADER);
	/* no further than our own durable log (so never beyond our log), as a
	 * commit by counting; el_raft__commit_to ignores one not above ours */
	const uint64_t c = m->commit < r->persisted_index ? m->commit : r->persisted_index;
	if (EL_LEARN_COMMIT && el_raft_term_at(r, c) < r->term)
		el_raft__commit_to(r, c);
}

void el_raft__handle_append_resp(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(m->term == r->term);
	struct el_progress *pr;
	if (r->state != EL_LEADER || (pr = el_raft__progress(r, m->from)) == NULL)
		return;
	if (m->index > r->last_index)
		return; /* acknowledges what we never sent: refuse */
	pr->active = true;
	if (m->flags & EL_MSG_REJECT) {
		if (maybe_decrease(r, pr, m))
			el_raft__send_append(r, pr, true);
		return;
	}
	if (pr->state == EL_PR_SNAPSHOT)
		return; /* wait for the snapshot to finish */
	on_ack(r, pr, m->index);
}

static void confirm_reads(struct el_raft *r)
{
	uint32_t kept = 0, quorum = el_raft__quorum(&r->conf);
	EL_ASSERT(r->state == EL_LEADER);
	for (uint32_t k = 0; k < r->n_pending_reads; k++) {
		struct el_pending_read *p = &r->pending_reads[k];
		uint32_t acks = 0;
		for (uint32_t i = 0; p->round > 0 && i < r->conf.n; i++)
			acks += r->conf.m[i].role == EL_MEMBER_VOTER &&
				(r->conf.m[i].id == r->cfg.id || r->pr[i].read_acked >= p->round);
		if (p->round > 0 && acks >= quorum && r->n_reads < EL_READS_MAX) {
			r->reads[r->n_reads].ctx = p->ctx;
			r->reads[r->n_reads].index = p->index;
			r->n_reads++;
		} else {
			r->pending_reads[kept++] = *p;
		}
	}
	EL_ASSERT(kept <= r->n_pending_reads);
	r->n_pending_reads = kept;
}

void el_raft__handle_heartbeat_resp(struct el_raft *r, const struct el_msg *m)
{
	EL_ASSERT(m->term == r->term);
	struct el_progress *pr;
	if (r->state != EL_LEADER || (pr = el_raft__progress(r, m->from)) == NULL)
		return;
	pr->active = true;
	learn_commit(r, m);
	if (m->ctx > pr->read_acked && m->ctx <= r->read_round)
		pr->read_acked = m->ctx;
	confirm_reads(r);
	if ((pr->match < r->last_index || pr->state == EL_PR_PROBE) && pr->state != EL_PR_SNAPSHOT) {
		/* A lost append must not stall the pipeline forever; a probe
		 * (el_raft__probe_lost) goes out even with nothing to send. */
		if (pr->state == EL_PR_REPLICATE && pr->inflight_n >= EL_INFLIGHT_MAX)
			inflight_free_through(pr, pr->inflight[pr->inflight_head]);
		pr->probe_sent = false;
		el_raft__send_append(r, pr, true);
	}
}

/* ---- ReadIndex ---------------------------------------------------------- */

/* ReadIndex (Raft thesis 6.4): reads wait until the leader has committed
 * in its own term (only then is its commit index known to be the
 * cluster's); then one heartbeat round confirms it is still the leader, and
 * the read is served once the state machine has applied that index. */
void el_raft__start_reads(struct el_raft *r)
{
	EL_ASSERT(r->n_pending_reads <= EL_READS_MAX);
	if (r->state != EL_LEADER || !el_raft__committed_in_term(r))
		return;
	bool started = false;
	for (uint32_t k = 0; k < r->n_pending_reads; k++) {
		struct el_pending_read *p = &r->pending_reads[k];
		if (p->round != 0)
			continue;
		if (!started) {
			r->read_round++;
			started = true;
		}
		p->index = r->commit;
		p->round = r->read_round;
	}
	if (!started)
		return;
	confirm_reads(r); /* a single voter needs no round */
	if (r->n_pending_reads > 0)
		el_raft__broadcast_heartbeat(r);
}

int el_raft_read_index(struct el_raft *r, uint64_t ctx, uint64_t now_ms)
{
	el_raft__enter(r, now_ms);
	if (r->state != EL_LEADER)
		return EL_ENOTLEADER;
	if (r->n_pending_reads >= EL_READS_MAX)
		return EL_EFULL;
	EL_ASSERT(r->n_pending_reads < EL_READS_MAX);
	struct el_pending_read *p = &r->pending_reads[r->n_pending_reads++];
	p->ctx = ctx;
	p->index = 0;
	p->round = 0;
	el_raft__start_reads(r);
	return 0;
}

int el_raft_propose(struct el_raft *r, const uint8_t *data, uint16_t len, uint64_t now_ms,
		    uint64_t *index_out, uint64_t *term_out)
{
	el_raft__enter(r, now_ms);
	if (r->state != EL_LEADER)
		return EL_ENOTLEADER;
	if (r->transferee != 0)
		return EL_EBUSY;
	if (len > EL_ENTRY_DATA_MAX || (len > 0 && data == NULL))
		return EL_EINVAL;
	/* At most EL_UNCOMMITTED_MAX entries stand uncommitted: with the
	 * compaction threshold this keeps the no-op room rule of el_config.h,
	 * so every later leader finds a slot for its no-op. */
	if (el_raft__log_full(r) || r->last_index - r->commit >= EL_UNCOMMITTED_MAX)
		return EL_EFULL;
	uint64_t index = el_raft__append_local(r, EL_ENTRY_NORMAL, data, len);
	EL_ASSERT(index == r->last_index);
	r->flush_pending = true;
	if (index_out != NULL)
		*index_out = index;
	if (term_out != NULL)
		*term_out = r->term;
	return 0;
}
