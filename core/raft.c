/*
 * raft.c - the replica's lifecycle, its log window, the ready/advance loop
 * and the entry points that dispatch input to the role-specific files.
 *
 * The log lives in a ring of EL_LOG_WINDOW entries covering
 * (snap.index, last_index]. Entries up to persisted_index are durable; the
 * ready batch asks the caller to store (persisted_index, last_index].
 */
#include <stddef.h>
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_raft_internal.h"

/* ---- Randomness (xorshift64*, seeded through splitmix64) ---------------- */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 2685821657736338717ull;
}

/* x mod m by shift and subtract: the same value as x % m, without the 64-bit
 * division a 32-bit microcontroller would link from libgcc (1.6 KiB on RV32). */
uint32_t el_raft__mod_u64_u32(uint64_t x, uint32_t m)
{
	EL_ASSERT(m != 0);
	uint64_t rem = 0;
	for (int bit = 63; bit >= 0; bit--) {
		rem = (rem << 1) | ((x >> bit) & 1u);
		if (rem >= m)
			rem -= m;
	}
	return (uint32_t)rem;
}

void el_raft__reset_election_timer(struct el_raft *r)
{
	uint32_t min = r->cfg.election_ms_min;
	r->election_deadline_ms = r->now_ms + min + el_raft__mod_u64_u32(rng_next(&r->rng), min);
}

/* ---- Configuration ------------------------------------------------------ */

int el_raft__slot_of(const struct el_conf *c, el_id_t id)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->m[i].id == id)
			return (int)i;
	return -1;
}

const struct el_member *el_conf_find(const struct el_conf *c, el_id_t id)
{
	int slot = el_raft__slot_of(c, id);
	return slot < 0 ? NULL : &c->m[slot];
}

uint32_t el_raft__voters(const struct el_conf *c)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->n; i++)
		n += c->m[i].role == EL_MEMBER_VOTER;
	return n;
}

bool el_raft__is_voter(const struct el_raft *r, el_id_t id)
{
	const struct el_member *m = el_conf_find(&r->conf, id);
	return m != NULL && m->role == EL_MEMBER_VOTER;
}

bool el_raft__conf_valid(const struct el_conf *c)
{
	if (c->n > EL_NODES_MAX)
		return false;
	for (uint32_t i = 0; i < c->n; i++) {
		if (c->m[i].id == 0 || c->m[i].role < EL_MEMBER_VOTER ||
		    c->m[i].role > EL_MEMBER_CATCHING_UP)
			return false;
		for (uint32_t j = 0; j < i; j++)
			if (c->m[j].id == c->m[i].id)
				return false;
	}
	return true;
}

int el_conf_encode(const struct el_conf *c, uint8_t *buf, uint32_t cap)
{
	uint32_t len = 1u + 5u * c->n;
	if (!el_raft__conf_valid(c))
		return EL_EINVAL;
	if (cap < len)
		return EL_EFULL;
	buf[0] = c->n;
	for (uint32_t i = 0; i < c->n; i++) {
		uint8_t *p = buf + 1 + 5 * i;
		p[0] = (uint8_t)c->m[i].id;
		p[1] = (uint8_t)(c->m[i].id >> 8);
		p[2] = (uint8_t)(c->m[i].id >> 16);
		p[3] = (uint8_t)(c->m[i].id >> 24);
		p[4] = c->m[i].role;
	}
	return (int)len;
}

int el_conf_decode(struct el_conf *c, const uint8_t *buf, uint32_t len)
{
	struct el_conf tmp;
	if (len < 1 || buf[0] > EL_NODES_MAX || len != 1u + 5u * buf[0])
		return EL_EDECODE;
	memset(&tmp, 0, sizeof(tmp));
	tmp.n = buf[0];
	for (uint32_t i = 0; i < tmp.n; i++) {
		const uint8_t *p = buf + 1 + 5 * i;
		tmp.m[i].id = (el_id_t)p[0] | (el_id_t)p[1] << 8 | (el_id_t)p[2] << 16 |
			      (el_id_t)p[3] << 24;
		tmp.m[i].role = p[4];
	}
	if (!el_raft__conf_valid(&tmp))
		return EL_EDECODE;
	*c = tmp;
	return 0;
}

void el_raft__set_conf(struct el_raft *r, const struct el_conf *conf, uint64_t index)
{
	r->conf = *conf;
	r->conf_index = index;
	if (r->state == EL_LEADER)
		el_raft__remap_progress(r);
}

/* The configuration in force is the last one in the log, else the snapshot's.
 * Called after the log lost its suffix (truncation) or on load. */
void el_raft__refresh_conf(struct el_raft *r)
{
	for (uint64_t i = r->last_index; i > r->snap.index; i--) {
		const struct el_entry *e = el_raft__slot(r, i);
		struct el_conf c;
		if (e->type == EL_ENTRY_CONF && el_conf_decode(&c, e->data, e->len) == 0) {
			el_raft__set_conf(r, &c, i);
			return;
		}
	}
	el_raft__set_conf(r, &r->snap.conf, r->snap.index);
}

/* ---- Log window --------------------------------------------------------- */

struct el_entry *el_raft__slot(struct el_raft *r, uint64_t index)
{
	EL_ASSERT(index > r->snap.index);
	EL_ASSERT(index <= r->last_index);
	return &r->log[EL_RAFT_SLOT(index)];
}

const struct el_entry *el_raft_entry(const struct el_raft *r, uint64_t index)
{
	if (index <= r->snap.index || index > r->last_index)
		return NULL;
	return &r->log[EL_RAFT_SLOT(index)];
}

uint64_t el_raft_term_at(const struct el_raft *r, uint64_t index)
{
	if (index == r->snap.index)
		return r->snap.term;
	const struct el_entry *e = el_raft_entry(r, index);
	return e == NULL ? 0 : e->term;
}

/* No room for one more entry: the window is full, or the log has reached
 * EL_INDEX_MAX (el_config.h), beyond which no index is ever appended. */
bool el_raft__log_full(const struct el_raft *r)
{
	return r->last_index - r->snap.index >= EL_LOG_WINDOW || r->last_index >= EL_INDEX_MAX;
}

uint64_t el_raft__append_local(struct el_raft *r, uint8_t type, const uint8_t *data, uint16_t len)
{
	EL_ASSERT(!el_raft__log_full(r));
	EL_ASSERT(len <= EL_ENTRY_DATA_MAX);
	EL_ASSERT(r->term > 0);
	uint64_t index = r->last_index + 1;
	struct el_entry *e = &r->log[EL_RAFT_SLOT(index)];
	e->term = r->term;
	e->index = index;
	e->type = type;
	e->len = len;
	if (len > 0)
		memcpy(e->data, data, len);
	r->last_index = index;
	return index;
}

void el_raft__truncate_from(struct el_raft *r, uint64_t index)
{
	/* Committed entries are never overwritten: el_raft_step refuses an
	 * append that would (el_raft_append_overwrites_commit). */
	EL_ASSERT(index > r->commit);
	EL_ASSERT(index <= r->last_index);
	r->last_index = index - 1;
	if (r->persisted_index > index - 1)
		r->persisted_index = index - 1;
	if (r->conf_index >= index)
		el_raft__refresh_conf(r);
}

/* ---- Outbox ------------------------------------------------------------- */

struct el_msg *el_raft__msg(struct el_raft *r, uint8_t type, el_id_t to)
{
	EL_ASSERT(r->n_msgs <= EL_OUTBOX_MAX);
	EL_ASSERT(type >= EL_MSG_APPEND);
	EL_ASSERT(type <= EL_MSG_TYPE_MAX);
	if (r->n_msgs >= EL_OUTBOX_MAX) {
		/* Messages are unreliable anyway; Raft retries. */
		r->stats.msgs_dropped++;
		return NULL;
	}
	struct el_msg *m = &r->outbox[r->n_msgs++];
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->from = r->cfg.id;
	m->to = to;
	m->term = r->term;
	return m;
}

/* Drop queued messages that point into memory about to change: appends of
 * entries at or below compacted_through and snapshot chunks (the snapshot
 * buffer is being rewritten), or every leader message on a step-down. */
void el_raft__purge_outbox(struct el_raft *r, uint64_t compacted_through, bool leader_msgs)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < r->n_msgs; i++) {
		const struct el_msg *m = &r->outbox[i];
		bool leader_msg = m->type == EL_MSG_APPEND || m->type == EL_MSG_SNAPSHOT ||
				  m->type == EL_MSG_HEARTBEAT || m->type == EL_MSG_TIMEOUT_NOW;
		bool drop = (leader_msgs && leader_msg) || m->type == EL_MSG_SNAPSHOT ||
			    (m->type == EL_MSG_APPEND && m->n_entries > 0 &&
			     m->entries[0].index <= compacted_through);
		if (!drop)
			r->outbox[kept++] = *m;
	}
	r->n_msgs = kept;
}

/* Every input call starts here: none may come between el_raft_ready and
 * el_raft_advance, and the clock only moves forward (a port whose clock
 * stepped back is clamped rather than trusted). */
void el_raft__enter(struct el_raft *r, uint64_t now_ms)
{
	EL_ASSERT(!r->in_ready);
	if (now_ms > r->now_ms)
		r->now_ms = now_ms;
}

/* ---- Lifecycle ---------------------------------------------------------- */

int el_raft_init(struct el_raft *r, const struct el_raft_config *cfg, uint64_t seed)
{
	if (cfg->id == 0 || cfg->election_ms_min < 2 || cfg->heartbeat_ms == 0 ||
	    cfg->heartbeat_ms >= cfg->election_ms_min)
		return EL_EINVAL;
	/* Everything but the log ring and the snapshot buffer: a slot of the ring
	 * is read only once an entry was written to it (between the snapshot and
	 * last_index), the buffer only as far as a snapshot's length says. On a
	 * gateway they are tens of MB that a node in zeroed memory need not
	 * touch before traffic fills them. */
	memset(r, 0, offsetof(struct el_raft, log));
	memset(&r->snap, 0, offsetof(struct el_raft, snap_data) - offsetof(struct el_raft, snap));
	memset(&r->rx, 0, sizeof(*r) - offsetof(struct el_raft, rx));
	r->cfg = *cfg;
	r->rng = splitmix64(seed ^ ((uint64_t)cfg->id << 32));
	if (r->rng == 0)
		r->rng = 0x2545F4914F6CDD1Dull;
	return 0;
}

static bool raft_is_empty(const struct el_raft *r)
{
	return r->term == 0 && r->last_index == 0 && r->snap.index == 0 && r->conf.n == 0;
}

int el_raft_bootstrap(struct el_raft *r, const struct el_conf *conf)
{
	if (!raft_is_empty(r))
		return EL_EBUSY;
	if (!el_raft__conf_valid(conf) || el_raft__voters(conf) == 0)
		return EL_EINVAL;
	r->snap.conf = *conf;
	r->snap_dirty = true;
	r->snap_valid = true;
	el_raft__set_conf(r, conf, 0);
	return 0;
}

int el_raft_load_snapshot(struct el_raft *r, const struct el_snapshot_meta *meta,
			  const uint8_t *data)
{
	if (!raft_is_empty(r))
		return EL_EBUSY;
	if (meta->len > EL_SNAPSHOT_MAX || !el_raft__conf_valid(&meta->conf) ||
	    (meta->index == 0) != (meta->term == 0))
		return EL_ECORRUPT;
	if (meta->index > EL_INDEX_MAX || meta->term > EL_TERM_MAX)
		return EL_ECORRUPT;
	r->snap = *meta;
	if (meta->len > 0)
		memcpy(r->snap_data, data, meta->len);
	r->snap_valid = true;
	r->last_index = r->persisted_index = r->commit = meta->index;
	r->restore_pending = meta->index > 0 || meta->len > 0;
	el_raft__set_conf(r, &meta->conf, meta->index);
	return 0;
}

int el_raft_load_entry(struct el_raft *r, const struct el_entry *e)
{
	struct el_conf c;
	if (e->index != r->last_index + 1 || e->index > EL_INDEX_MAX)
		return EL_ECORRUPT;
	if (e->term < el_raft_term_at(r, r->last_index) || e->term == 0 || e->term > EL_TERM_MAX)
		return EL_ECORRUPT;
	if (e->len > EL_ENTRY_DATA_MAX || e->type > EL_ENTRY_CONF)
		return EL_ECORRUPT;
	if (e->type == EL_ENTRY_CONF && el_conf_decode(&c, e->data, e->len) != 0)
		return EL_ECORRUPT;
	if (el_raft__log_full(r))
		return EL_EFULL;
	r->log[EL_RAFT_SLOT(e->index)] = *e;
	r->last_index = r->persisted_index = e->index;
	if (e->type == EL_ENTRY_CONF)
		el_raft__set_conf(r, &c, e->index);
	return 0;
}

int el_raft_load_hard_state(struct el_raft *r, const struct el_hard_state *hs)
{
	if (hs->term < el_raft_term_at(r, r->last_index) || hs->term > EL_TERM_MAX)
		return EL_ECORRUPT;
	r->term = hs->term;
	r->vote = hs->vote;
	/* The snapshot is committed by definition, even if commit lagged; a
	 * commit beyond the stored log comes from a torn batch (see the ready
	 * loop) and is relearned from the leader. */
	uint64_t commit = hs->commit > r->snap.index ? hs->commit : r->snap.index;
	r->commit = commit < r->last_index ? commit : r->last_index;
	r->hs_persisted = *hs;
	r->hs_persisted.commit = r->commit;
	return 0;
}

void el_raft_start(struct el_raft *r, uint64_t now_ms)
{
	/* Storage without a hard state (never voted): the term is at least
	 * that of the last stored entry or snapshot. */
	if (r->term < el_raft_term_at(r, r->last_index))
		r->term = el_raft_term_at(r, r->last_index);
	r->now_ms = now_ms;
	r->state = EL_FOLLOWER;
	r->leader = 0;
	r->term_leader = 0;
	r->leader_contact_ms = 0;
	el_raft__reset_election_timer(r);
	el_raft__after_commit(r);
	el_raft__check_invariants(r);
}

/* ---- Ready loop --------------------------------------------------------- */

static bool hard_state_changed(const struct el_raft *r)
{
	return r->term != r->hs_persisted.term || r->vote != r->hs_persisted.vote ||
	       r->commit != r->hs_persisted.commit;
}

static uint64_t apply_from(const struct el_raft *r)
{
	uint64_t base = r->restore_pending && r->snap.index > r->applied ? r->snap.index : r->applied;
	return base + 1;
}

bool el_raft_has_ready(const struct el_raft *r)
{
	if (r->in_ready)
		return false;
	return r->snap_dirty || r->restore_pending || hard_state_changed(r) ||
	       r->persisted_index < r->last_index || r->n_msgs > 0 || r->n_reads > 0 ||
	       r->flush_pending || apply_from(r) <= r->commit;
}

void el_raft_ready(struct el_raft *r, struct el_ready *rd)
{
	EL_ASSERT(!r->in_ready);
	if (r->flush_pending && r->state == EL_LEADER)
		el_raft__broadcast_append(r, true);
	r->flush_pending = false;
	memset(rd, 0, sizeof(*rd));
	if (r->snap_dirty || r->restore_pending) {
		EL_ASSERT(r->snap_valid);
		rd->snapshot = &r->snap;
		rd->snapshot_data = r->snap_data;
	}
	rd->restore = r->restore_pending;
	rd->hard_state_changed = hard_state_changed(r);
	rd->hs.term = r->term;
	rd->hs.vote = r->vote;
	rd->hs.commit = r->commit;
	rd->persist_first = r->persisted_index + 1;
	rd->persist_last = r->last_index;
	rd->n_msgs = r->n_msgs;
	rd->msgs = r->outbox;
	rd->apply_first = apply_from(r);
	rd->apply_last = r->commit;
	rd->n_reads = r->n_reads;
	rd->reads = r->reads;
	r->in_ready = true;
}

void el_raft_advance(struct el_raft *r, const struct el_ready *rd, uint64_t now_ms)
{
	EL_ASSERT(r->in_ready);
	EL_ASSERT(rd->persist_last == r->last_index);
	EL_ASSERT(rd->hs.commit == r->commit);
	r->in_ready = false;
	el_raft__enter(r, now_ms);
	r->persisted_index = rd->persist_last;
	r->hs_persisted = rd->hs;
	r->snap_dirty = false;
	if (rd->restore && r->applied < r->snap.index)
		r->applied = r->snap.index;
	r->restore_pending = false;
	if (rd->apply_last >= rd->apply_first) {
		EL_ASSERT(rd->apply_last >= r->applied);
		r->applied = rd->apply_last;
	}
	r->n_msgs = 0;
	r->n_reads = 0;
	if (r->state == EL_LEADER && el_raft__maybe_commit(r))
		r->flush_pending = true;
	el_raft__after_commit(r);
	el_raft__maybe_noop(r);
	el_raft__check_invariants(r);
}

/* ---- Time --------------------------------------------------------------- */

/* Whether this node is a voter in the configuration before the latest one
 * in its log. A leader proposes a change only once the one before it has
 * committed, so that configuration did commit, even when this node's commit
 * index (volatile, behind after a restart) does not show it yet: looking
 * below the local commit index instead once left a removed leader, restarted
 * with a lagging commit index, unable to run while the only other voter
 * needed its vote (simulator, a two-node cluster). */
static bool voter_in_previous_conf(const struct el_raft *r)
{
	/* the caller's conf_index > commit >= snap.index: the entry is held */
	for (uint64_t i = r->conf_index - 1; i > r->snap.index; i--) {
		const struct el_entry *e = el_raft_entry(r, i);
		struct el_conf c;
		if (e->type == EL_ENTRY_CONF && el_conf_decode(&c, e->data, e->len) == 0) {
			const struct el_member *m = el_conf_find(&c, r->cfg.id);
			return m != NULL && m->role == EL_MEMBER_VOTER;
		}
	}
	const struct el_member *m = el_conf_find(&r->snap.conf, r->cfg.id);
	return m != NULL && m->role == EL_MEMBER_VOTER;
}

/* A voter campaigns. So does a node whose removal is appended but not yet
 * committed: otherwise, had it led and lost leadership before the removal
 * committed, no one could win (its log is the newest, it would refuse to
 * run, and it would refuse others its vote). As leader it then commits its
 * own removal without counting itself, and steps down. */
bool el_raft__can_campaign(const struct el_raft *r)
{
	if (r->term >= EL_TERM_MAX)
		return false; /* the term may not grow past its bound (el_config.h) */
	if (el_raft__is_voter(r, r->cfg.id))
		return true;
	return r->conf_index > r->commit && voter_in_previous_conf(r);
}

uint64_t el_raft_deadline(const struct el_raft *r)
{
	if (r->state == EL_LEADER) {
		uint64_t d = r->heartbeat_deadline_ms;
		if (r->cfg.check_quorum && r->quorum_check_ms < d)
			d = r->quorum_check_ms;
		if (r->transferee != 0 && r->transfer_deadline_ms < d)
			d = r->transfer_deadline_ms;
		return d;
	}
	return el_raft__can_campaign(r) ? r->election_deadline_ms : UINT64_MAX;
}

/* CheckQuorum (Raft thesis 6.2): a leader that has not heard from a quorum
 * within an election timeout steps down, so that a leader cut off from its
 * quorum stops serving; it is also what makes a leader's lease sound
 * (raft_step.c, in_leader_lease). */
static void leader_check_quorum(struct el_raft *r)
{
	uint32_t active = 0;
	EL_ASSERT(r->state == EL_LEADER);
	for (uint32_t i = 0; i < r->conf.n; i++) {
		if (r->conf.m[i].role != EL_MEMBER_VOTER)
			continue;
		if (r->conf.m[i].id == r->cfg.id || r->pr[i].active)
			active++;
		r->pr[i].active = false;
	}
	r->quorum_check_ms = r->now_ms + r->cfg.election_ms_min;
	if (active < el_raft__quorum(&r->conf)) {
		r->stats.stepdowns_quorum++;
		el_raft__become_follower(r, r->term, 0);
	}
}

static void tick_leader(struct el_raft *r)
{
	if (r->transferee != 0 && r->now_ms >= r->transfer_deadline_ms)
		r->transferee = 0; /* the target did not take over in time */
	if (r->cfg.check_quorum && r->now_ms >= r->quorum_check_ms) {
		leader_check_quorum(r);
		if (r->state != EL_LEADER)
			return;
	}
	if (r->now_ms >= r->heartbeat_deadline_ms) {
		r->heartbeat_deadline_ms = r->now_ms + r->cfg.heartbeat_ms;
		el_raft__maybe_noop(r);
		el_raft__broadcast_heartbeat(r);
		/* A promotion refused when the learner caught up (a transfer or
		 * another change in flight) is retried here: an idle cluster
		 * sends no acknowledgement that would retry it. */
		for (uint32_t i = 0; i < r->conf.n; i++)
			el_raft__maybe_promote(r, &r->pr[i]); /* skips voters (us too) */
	}
}

/* Failure detection by the transport (el_raft.h). Raft's safety never rests
 * on timing, so an early campaign cannot break it; what the election timeout
 * protects is availability, and a leader whose link to us closed and that
 * has said nothing since is not one to wait for. The loss is confirmed by a
 * heartbeat interval of silence: the follower's lease (raft_step.c) is cut
 * to end then, and its election timer to fire then, and any word from the
 * leader meanwhile (its other connection to us) restores both, so a link
 * that merely resets costs nothing. All the followers of a dead leader
 * confirm at about the same moment, so a random delay alone would often
 * start two pre-votes within one round trip: both win (a pre-candidate
 * grants pre-votes) and the real votes split, which costs a whole election
 * timeout. So they take turns by id: the k-th lowest of the voters left
 * campaigns k half heartbeat intervals later, with a random quarter
 * interval within its slot; a vote request from an earlier slot makes the
 * later ones followers of its term before their turn comes. */
static uint64_t peer_lost_delay(struct el_raft *r, el_id_t lost)
{
	uint32_t rank = 0;
	for (uint32_t i = 0; i < r->conf.n; i++) {
		const el_id_t id = r->conf.m[i].id;
		if (r->conf.m[i].role == EL_MEMBER_VOTER && id != lost && id < r->cfg.id)
			rank++;
	}
	EL_ASSERT(rank < EL_NODES_MAX);
	const uint32_t slot = r->cfg.heartbeat_ms / 2, jitter = r->cfg.heartbeat_ms / 4;
	return (uint64_t)rank * slot + (jitter > 0 ? el_raft__mod_u64_u32(rng_next(&r->rng), jitter) : 0);
}

bool el_raft_peer_lost(struct el_raft *r, el_id_t id, uint64_t now_ms)
{
	el_raft__enter(r, now_ms);
	const bool lost = id != 0 && id != r->cfg.id && r->state == EL_FOLLOWER &&
			  r->leader == id && el_raft__can_campaign(r);
	if (lost) {
		const uint32_t confirm = r->cfg.heartbeat_ms;
		EL_ASSERT(confirm < r->cfg.election_ms_min); /* el_raft_init */
		/* the lease (now - contact < election_ms_min) ends at now + confirm */
		const uint64_t back = r->cfg.election_ms_min - confirm;
		const uint64_t contact = r->now_ms > back ? r->now_ms - back : 0;
		if (r->leader_contact_ms > contact)
			r->leader_contact_ms = contact;
		const uint64_t soon = r->now_ms + confirm + peer_lost_delay(r, id);
		if (soon < r->election_deadline_ms)
			r->election_deadline_ms = soon;
	}
	el_raft__probe_lost(r, id);
	el_raft__check_invariants(r);
	return lost;
}

void el_raft_tick(struct el_raft *r, uint64_t now_ms)
{
	el_raft__enter(r, now_ms);
	if (r->state != EL_LEADER) {
		if (el_raft__can_campaign(r) && r->now_ms >= r->election_deadline_ms)
			el_raft__campaign(r, false);
	} else {
		tick_leader(r);
	}
	el_raft__check_invariants(r);
}

/* ---- Invariants --------------------------------------------------------- */

static void check_progress(const struct el_raft *r)
{
	for (uint32_t i = 0; i < r->conf.n; i++) {
		const struct el_progress *pr = &r->pr[i];
		EL_ASSERT(pr->id == r->conf.m[i].id);
		if (pr->id == r->cfg.id)
			continue;
		EL_ASSERT(pr->match <= r->last_index);
		EL_ASSERT(pr->inflight_n <= EL_INFLIGHT_MAX);
		EL_ASSERT(pr->state <= EL_PR_SNAPSHOT);
	}
}

/* What holds between any two calls, checked at the end of step, tick and
 * advance so that every caller (unit tests, simulator, fuzzers, a board)
 * checks the same things. */
void el_raft__check_invariants(const struct el_raft *r)
{
	EL_ASSERT(!r->in_ready);
	EL_ASSERT(r->term <= EL_TERM_MAX);
	EL_ASSERT(r->last_index <= EL_INDEX_MAX);
	EL_ASSERT(r->snap.index <= r->commit);
	EL_ASSERT(r->commit <= r->last_index);
	EL_ASSERT(r->applied <= r->commit);
	EL_ASSERT(r->persisted_index <= r->last_index);
	EL_ASSERT(r->last_index - r->snap.index <= EL_LOG_WINDOW);
	EL_ASSERT(el_raft_term_at(r, r->last_index) <= r->term);
	EL_ASSERT(r->conf_index <= r->last_index);
	EL_ASSERT(r->conf.n <= EL_NODES_MAX);
	EL_ASSERT(r->n_msgs <= EL_OUTBOX_MAX);
	EL_ASSERT(r->n_reads <= EL_READS_MAX);
	EL_ASSERT(r->n_pending_reads <= EL_READS_MAX);
	EL_ASSERT(r->state <= EL_LEADER);
	EL_ASSERT(!r->rx_active || r->rx_offset <= r->rx.len);
	if (r->state == EL_LEADER) {
		EL_ASSERT(r->leader == r->cfg.id);
		EL_ASSERT(r->vote == r->cfg.id);
		EL_ASSERT(r->term_leader == r->cfg.id);
		check_progress(r);
	}
}
