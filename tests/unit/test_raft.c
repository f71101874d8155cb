/*
 * test_raft.c - unit tests of the Raft replica: each feature driven by hand
 * through a tiny in-test cluster whose network the test controls message by
 * message. Static buffers only: these tests also run on a Cortex-M.
 */
#include <string.h>

#include "el_error.h"
#include "el_raft.h"
#include "el_raft_internal.h"
#include "el_test.h"

#define N 3
#define QMAX 64
#define ELECTION_MS 100
#define HEARTBEAT_MS 20

struct qmsg {
	struct el_msg m;
	struct el_entry entries[EL_MSG_ENTRIES_MAX];
	uint8_t data[EL_SNAPSHOT_CHUNK];
};

static struct el_raft nodes[N + 1]; /* ids 1..N; node[0] unused */
static struct qmsg queue[QMAX];
static uint32_t queued;
static bool cut[N + 1][N + 1];
static uint64_t now;
static uint64_t applied_count[N + 1];

static struct el_raft *node(el_id_t id) { return &nodes[id]; }

static uint32_t empty_appends; /* APPENDs without entries put on the wire */

static void enqueue(const struct el_msg *m)
{
	if (queued >= QMAX || cut[m->from][m->to])
		return;
	empty_appends += m->type == EL_MSG_APPEND && m->n_entries == 0;
	struct qmsg *q = &queue[queued++];
	q->m = *m;
	if (m->n_entries > 0)
		memcpy(q->entries, m->entries, m->n_entries * sizeof(struct el_entry));
	if (m->data_len > 0)
		memcpy(q->data, m->data, m->data_len);
}

/* The ready loop, with "persisting" implicit (the test's nodes never crash). */
static void drain(el_id_t id)
{
	struct el_raft *r = node(id);
	while (el_raft_has_ready(r)) {
		struct el_ready rd;
		el_raft_ready(r, &rd);
		for (uint32_t i = 0; i < rd.n_msgs; i++)
			enqueue(&rd.msgs[i]);
		if (rd.apply_last >= rd.apply_first)
			applied_count[id] += rd.apply_last - rd.apply_first + 1;
		el_raft_advance(r, &rd, now);
	}
}

/* Deliver every queued message (and the replies they cause). */
static void deliver_all(void)
{
	for (int rounds = 0; rounds < 200 && queued > 0; rounds++) {
		struct qmsg q = queue[0];
		memmove(queue, queue + 1, (queued - 1) * sizeof(queue[0]));
		queued--;
		q.m.entries = q.entries;
		q.m.data = q.data;
		el_raft_step(node(q.m.to), &q.m, now);
		drain(q.m.to);
	}
}

static void tick_all(uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t++) {
		now++;
		for (el_id_t id = 1; id <= N; id++) {
			if (el_raft_deadline(node(id)) <= now) {
				el_raft_tick(node(id), now);
				drain(id);
			}
		}
		deliver_all();
	}
}

static void setup_seeded(uint32_t voters, bool prevote, uint64_t seed)
{
	memset(nodes, 0, sizeof(nodes));
	memset(cut, 0, sizeof(cut));
	memset(applied_count, 0, sizeof(applied_count));
	queued = 0;
	now = 1000;
	struct el_conf conf = { .n = (uint8_t)voters };
	for (uint32_t i = 0; i < voters; i++) {
		conf.m[i].id = i + 1;
		conf.m[i].role = EL_MEMBER_VOTER;
	}
	for (el_id_t id = 1; id <= N; id++) {
		struct el_raft_config cfg = { id, ELECTION_MS, HEARTBEAT_MS, prevote, true };
		el_raft_init(node(id), &cfg, seed + id);
		if (id <= voters)
			el_raft_bootstrap(node(id), &conf);
		el_raft_start(node(id), now);
		drain(id);
	}
}

static void setup(uint32_t voters, bool prevote)
{
	setup_seeded(voters, prevote, 42);
}

static el_id_t leader_id(void)
{
	el_id_t found = 0;
	for (el_id_t id = 1; id <= N; id++)
		if (el_raft_state(node(id)) == EL_LEADER && (found == 0 || el_raft_term(node(id)) > el_raft_term(node(found))))
			found = id;
	return found;
}

/* Three voters with PreVote, run until they have elected a leader. */
static el_id_t start_three(void)
{
	setup(3, true);
	tick_all(3 * ELECTION_MS);
	return leader_id();
}

static void isolate(el_id_t id, bool on)
{
	for (el_id_t j = 1; j <= N; j++)
		cut[id][j] = cut[j][id] = on;
}

static int propose_str(el_id_t id, const char *s, uint64_t *index)
{
	return el_raft_propose(node(id), (const uint8_t *)s, (uint16_t)strlen(s), now, index, NULL);
}

/* ---- Tests -------------------------------------------------------------- */

static void test_init_rejects_bad_config(void)
{
	struct el_raft_config bad_id = { 0, 100, 10, true, true };
	struct el_raft_config bad_hb = { 1, 100, 100, true, true };
	EL_CHECK_EQ(el_raft_init(node(1), &bad_id, 1), EL_EINVAL);
	EL_CHECK_EQ(el_raft_init(node(1), &bad_hb, 1), EL_EINVAL);
}

static void test_single_node_elects_itself_and_commits(void)
{
	setup(1, true);
	EL_CHECK_EQ(el_raft_deadline(node(1)) >= now + ELECTION_MS, 1);
	tick_all(2 * ELECTION_MS);
	EL_CHECK_EQ(leader_id(), 1);
	uint64_t index;
	EL_CHECK_EQ(propose_str(1, "hello", &index), 0);
	drain(1);
	EL_CHECK_EQ(el_raft_commit(node(1)), index);
	EL_CHECK_EQ(el_raft_applied(node(1)), index);
	EL_CHECK(memcmp(el_raft_entry(node(1), index)->data, "hello", 5) == 0);
}

static void test_three_nodes_elect_one_leader_and_replicate(void)
{
	el_id_t l = start_three();
	EL_CHECK(l != 0);
	uint32_t leaders = 0;
	for (el_id_t id = 1; id <= N; id++)
		leaders += el_raft_state(node(id)) == EL_LEADER;
	EL_CHECK_EQ(leaders, 1);
	uint64_t index;
	EL_CHECK_EQ(propose_str(l, "x", &index), 0);
	drain(l);
	deliver_all();
	tick_all(HEARTBEAT_MS * 2);
	for (el_id_t id = 1; id <= N; id++) {
		EL_CHECK_EQ(el_raft_commit(node(id)), index);
		EL_CHECK_EQ(el_raft_applied(node(id)), index);
	}
	/* followers refuse proposals and name the leader */
	el_id_t f = l == 1 ? 2 : 1;
	EL_CHECK_EQ(propose_str(f, "y", NULL), EL_ENOTLEADER);
	EL_CHECK_EQ(el_raft_leader(node(f)), l);
}

static void test_prevote_keeps_partitioned_node_term(void)
{
	el_id_t l = start_three();
	el_id_t f = l == 3 ? 2 : 3;
	uint64_t term = el_raft_term(node(f));
	isolate(f, true);
	tick_all(10 * ELECTION_MS);
	EL_CHECK_EQ(el_raft_term(node(f)), term); /* pre-votes failed: no term inflation */
	EL_CHECK(el_raft_stats(node(f))->elections > 0);
	isolate(f, false);
	tick_all(3 * ELECTION_MS);
	EL_CHECK_EQ(leader_id(), l); /* the returning node did not disrupt the leader */
	EL_CHECK_EQ(el_raft_term(node(l)), term);
}

static void test_without_prevote_partitioned_node_inflates_term(void)
{
	setup(3, false);
	tick_all(3 * ELECTION_MS);
	el_id_t l = leader_id();
	el_id_t f = l == 3 ? 2 : 3;
	uint64_t term = el_raft_term(node(f));
	isolate(f, true);
	tick_all(10 * ELECTION_MS);
	EL_CHECK(el_raft_term(node(f)) > term); /* the behaviour PreVote prevents */
}

static void test_check_quorum_steps_down_isolated_leader(void)
{
	el_id_t l = start_three();
	isolate(l, true);
	tick_all(3 * ELECTION_MS);
	EL_CHECK(el_raft_state(node(l)) != EL_LEADER);
	EL_CHECK(el_raft_stats(node(l))->stepdowns_quorum > 0);
	el_id_t other = leader_id();
	EL_CHECK(other != 0 && other != l);
}

static void test_leader_steps_down_on_higher_term(void)
{
	el_id_t l = start_three();
	el_id_t f = l == 1 ? 2 : 1;
	struct el_msg m = { .type = EL_MSG_APPEND_RESP, .from = f, .to = l, .term = el_raft_term(node(l)) + 5 };
	m.index = 0;
	EL_CHECK_EQ(el_raft_step(node(l), &m, now), 0);
	EL_CHECK_EQ(el_raft_state(node(l)), EL_FOLLOWER);
	EL_CHECK_EQ(el_raft_term(node(l)), m.term);
}

static void test_stale_term_append_is_refused(void)
{
	el_id_t l = start_three();
	el_id_t f = l == 1 ? 2 : 1;
	struct el_raft *r = node(f);
	uint64_t old_term = el_raft_term(r);
	/* f learns of a newer term ... */
	struct el_msg hb = { .type = EL_MSG_HEARTBEAT, .from = l, .to = f, .term = old_term + 1 };
	EL_CHECK_EQ(el_raft_step(r, &hb, now), 0);
	drain(f);
	queued = 0;
	/* ... then an append of the old term arrives late: nothing changes. */
	uint64_t last = el_raft_last_index(r);
	static struct el_entry e;
	e.term = old_term;
	e.index = last + 1;
	struct el_msg m = { .type = EL_MSG_APPEND, .from = l, .to = f, .term = old_term };
	m.index = last;
	m.log_term = el_raft_term_at(r, last);
	m.n_entries = 1;
	m.entries = &e;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	EL_CHECK_EQ(el_raft_last_index(r), last);
	EL_CHECK_EQ(el_raft_term(r), old_term + 1);
	/* and the stale leader is told the newer term */
	struct el_ready rd;
	el_raft_ready(r, &rd);
	EL_CHECK(rd.n_msgs == 1 && rd.msgs[0].type == EL_MSG_APPEND_RESP && rd.msgs[0].term == old_term + 1);
	el_raft_advance(r, &rd, now);
}

static void test_follower_truncates_conflicting_suffix(void)
{
	el_id_t l = start_three();
	/* The old leader, cut off, appends entries nobody else sees. */
	isolate(l, true);
	EL_CHECK_EQ(propose_str(l, "lost1", NULL), 0);
	EL_CHECK_EQ(propose_str(l, "lost2", NULL), 0);
	drain(l);
	uint64_t stale_last = el_raft_last_index(node(l));
	tick_all(4 * ELECTION_MS);
	el_id_t l2 = leader_id();
	EL_CHECK(l2 != 0 && l2 != l);
	uint64_t index;
	EL_CHECK_EQ(propose_str(l2, "kept", &index), 0);
	drain(l2);
	deliver_all();
	isolate(l, false);
	tick_all(4 * ELECTION_MS);
	EL_CHECK(el_raft_commit(node(l)) >= index);
	const struct el_entry *e = el_raft_entry(node(l), index);
	EL_CHECK(e != NULL && e->len == 4 && memcmp(e->data, "kept", 4) == 0);
	EL_CHECK(stale_last >= index - 1);
}

static void test_malformed_messages_are_refused_without_change(void)
{
	el_id_t l = start_three();
	el_id_t f = l == 1 ? 2 : 1;
	struct el_raft *r = node(f);
	uint64_t term = el_raft_term(r), last = el_raft_last_index(r);
	static struct el_entry e[2];
	struct el_msg m = { .type = EL_MSG_APPEND, .from = l, .to = f, .term = term };
	m.index = last;
	m.log_term = el_raft_term_at(r, last);
	m.n_entries = 2;
	m.entries = e;
	e[0].index = last + 1;
	e[0].term = term;
	e[1].index = last + 3; /* not consecutive */
	e[1].term = term;
	EL_CHECK_EQ(el_raft_step(r, &m, now), EL_EDECODE);
	e[1].index = last + 2;
	e[1].len = EL_ENTRY_DATA_MAX + 1; /* too long */
	EL_CHECK_EQ(el_raft_step(r, &m, now), EL_EDECODE);
	m.n_entries = EL_MSG_ENTRIES_MAX + 1;
	EL_CHECK_EQ(el_raft_step(r, &m, now), EL_EDECODE);
	struct el_msg bad = { .type = 99, .from = l, .to = f, .term = term };
	EL_CHECK_EQ(el_raft_step(r, &bad, now), EL_EDECODE);
	struct el_msg wrong_to = { .type = EL_MSG_HEARTBEAT, .from = l, .to = 7, .term = term };
	EL_CHECK_EQ(el_raft_step(r, &wrong_to, now), EL_EINVAL);
	struct el_msg snap = { .type = EL_MSG_SNAPSHOT, .from = l, .to = f, .term = term };
	snap.index = 100;
	snap.log_term = term;
	snap.total = EL_SNAPSHOT_MAX + 1;
	EL_CHECK_EQ(el_raft_step(r, &snap, now), EL_EDECODE);
	EL_CHECK_EQ(el_raft_term(r), term);
	EL_CHECK_EQ(el_raft_last_index(r), last);
	EL_CHECK(el_raft_stats(r)->msgs_rejected >= 6);
}

static int write_state(void *ctx, uint8_t *buf, uint32_t cap)
{
	uint32_t len = *(uint32_t *)ctx;
	if (len > cap)
		return EL_EFULL;
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	return (int)len;
}

/* Follower f cut off while leader l commits ten entries, then compacts
 * them into a snapshot of several chunks (*len bytes) at *at. */
static void leave_behind_snapshot(el_id_t l, el_id_t f, uint32_t *len, uint64_t *at)
{
	isolate(f, true);
	for (int i = 0; i < 10; i++) {
		EL_CHECK_EQ(propose_str(l, "entry", NULL), 0);
		drain(l);
		deliver_all();
	}
	tick_all(HEARTBEAT_MS);
	*len = 3 * EL_SNAPSHOT_CHUNK + 5; /* several chunks */
	if (*len > EL_SNAPSHOT_MAX)
		*len = EL_SNAPSHOT_MAX;
	*at = el_raft_applied(node(l));
	EL_CHECK_EQ(el_raft_compact(node(l), *at, write_state, len), 0);
}

static void test_lagging_follower_gets_chunked_snapshot(void)
{
	el_id_t l = start_three();
	el_id_t f = l == 3 ? 2 : 3;
	uint32_t len = 0;
	uint64_t at = 0;
	leave_behind_snapshot(l, f, &len, &at);
	drain(l);
	EL_CHECK_EQ(el_raft_snapshot(node(l))->index, at);
	EL_CHECK(el_raft_entry(node(l), at) == NULL); /* compacted */
	isolate(f, false);
	tick_all(4 * ELECTION_MS);
	EL_CHECK_EQ(el_raft_snapshot(node(f))->index, at);
	EL_CHECK_EQ(el_raft_snapshot(node(f))->len, len);
	EL_CHECK(memcmp(el_raft_snapshot_data(node(f)), el_raft_snapshot_data(node(l)), len) == 0);
	EL_CHECK(el_raft_commit(node(f)) >= at);
	EL_CHECK_EQ(el_raft_compact(node(l), el_raft_applied(node(l)) + 1, write_state, &len), EL_EINVAL);
}

static void drain_one(struct el_raft *r, struct el_ready *rd)
{
	el_raft_ready(r, rd);
	el_raft_advance(r, rd, now);
}

/* A node whose snapshot bytes were overwritten by a snapshot it was still
 * receiving, and which then leads, rebuilds them from its state machine. */
static void test_leader_regenerates_overwritten_snapshot_bytes(void)
{
	struct el_raft *rp = &nodes[1]; /* reuse: a replica is large */
	static uint8_t chunk[EL_SNAPSHOT_CHUNK];
	struct el_ready rd;
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	struct el_snapshot_meta meta = { .index = 5, .term = 1, .len = 3 };
	meta.conf.n = 2;
	meta.conf.m[0].id = 1;
	meta.conf.m[0].role = EL_MEMBER_VOTER;
	meta.conf.m[1].id = 2;
	meta.conf.m[1].role = EL_MEMBER_VOTER;
	const uint8_t old_state[3] = { 9, 9, 9 };
	struct el_hard_state hs = { .term = 1 };
	now = 0;
	EL_CHECK_EQ(el_raft_init(rp, &cfg, 7), 0);
	EL_CHECK_EQ(el_raft_load_snapshot(rp, &meta, old_state), 0);
	EL_CHECK_EQ(el_raft_load_hard_state(rp, &hs), 0);
	el_raft_start(rp, now);
	drain_one(rp, &rd);
	EL_CHECK_EQ(el_raft_applied(rp), 5);
	/* node 2 starts sending a two-chunk snapshot at index 10 */
	struct el_msg snap = { .type = EL_MSG_SNAPSHOT, .from = 2, .to = 1, .term = 2 };
	snap.index = 10;
	snap.log_term = 2;
	snap.conf = meta.conf;
	snap.total = EL_SNAPSHOT_CHUNK + 1;
	snap.data_len = EL_SNAPSHOT_CHUNK;
	snap.data = chunk;
	EL_CHECK_EQ(el_raft_step(rp, &snap, now), 0);
	drain_one(rp, &rd);
	EL_CHECK(!el_raft_snapshot_valid(rp)); /* the buffer holds half of the new snapshot */
	EL_CHECK_EQ(el_raft_snapshot(rp)->index, 5); /* the base is unchanged */
	/* node 2 goes silent; node 1 wins an election */
	now += 3 * ELECTION_MS;
	el_raft_tick(rp, now);
	drain_one(rp, &rd);
	struct el_msg grant = { .type = EL_MSG_PREVOTE_RESP, .from = 2, .to = 1, .term = 3 };
	EL_CHECK_EQ(el_raft_step(rp, &grant, now), 0);
	grant.type = EL_MSG_VOTE_RESP;
	EL_CHECK_EQ(el_raft_step(rp, &grant, now), 0);
	EL_CHECK_EQ(el_raft_state(rp), EL_LEADER);
	uint32_t len = 40;
	el_raft_set_snapshot_writer(rp, write_state, &len);
	drain_one(rp, &rd);
	/* node 2 turns out to have nothing: it needs a snapshot */
	struct el_msg reject = { .type = EL_MSG_APPEND_RESP, .from = 2, .to = 1, .term = 3,
				 .flags = EL_MSG_REJECT };
	reject.index = 5;
	EL_CHECK_EQ(el_raft_step(rp, &reject, now), 0);
	el_raft_ready(rp, &rd);
	const struct el_msg *sent = NULL;
	for (uint32_t i = 0; i < rd.n_msgs; i++)
		if (rd.msgs[i].type == EL_MSG_SNAPSHOT)
			sent = &rd.msgs[i];
	EL_CHECK(sent != NULL);
	EL_CHECK_EQ(sent->index, 5);
	EL_CHECK_EQ(sent->total, len);
	EL_CHECK(sent->data_len > 0 && sent->data[0] == 3 && sent->data[1] == 10);
	EL_CHECK(rd.snapshot != NULL && rd.snapshot->len == len); /* persisted again */
	el_raft_advance(rp, &rd, now);
	EL_CHECK(el_raft_snapshot_valid(rp));
}

static void test_add_voter_joins_as_learner_then_promoted(void)
{
	setup(2, true); /* nodes 1,2 voters; node 3 starts empty */
	tick_all(3 * ELECTION_MS);
	el_id_t l = leader_id();
	EL_CHECK(l != 0);
	uint64_t index;
	EL_CHECK_EQ(el_raft_propose_conf(node(l), EL_CONF_ADD_VOTER, 3, now, &index), 0);
	EL_CHECK_EQ(el_conf_find(el_raft_conf(node(l)), 3)->role, EL_MEMBER_CATCHING_UP);
	EL_CHECK_EQ(el_raft_propose_conf(node(l), EL_CONF_REMOVE, 2, now, NULL), EL_EBUSY);
	drain(l);
	tick_all(4 * HEARTBEAT_MS);
	EL_CHECK_EQ(el_conf_find(el_raft_conf(node(l)), 3)->role, EL_MEMBER_VOTER);
	EL_CHECK_EQ(el_conf_find(el_raft_conf(node(3)), 3)->role, EL_MEMBER_VOTER);
	EL_CHECK_EQ(el_raft_commit(node(3)), el_raft_commit(node(l)));
}

static void test_removed_leader_steps_down(void)
{
	el_id_t l = start_three();
	EL_CHECK_EQ(el_raft_propose_conf(node(l), EL_CONF_REMOVE, l, now, NULL), 0);
	drain(l);
	tick_all(2 * HEARTBEAT_MS);
	EL_CHECK(el_raft_state(node(l)) != EL_LEADER);
	EL_CHECK(el_conf_find(el_raft_conf(node(l)), l) == NULL);
	tick_all(4 * ELECTION_MS);
	el_id_t l2 = leader_id();
	EL_CHECK(l2 != 0 && l2 != l);
	EL_CHECK_EQ(el_raft_deadline(node(l)), UINT64_MAX); /* it never campaigns again */
}

static void test_leadership_transfer(void)
{
	el_id_t l = start_three();
	el_id_t target = l == 3 ? 1 : 3;
	EL_CHECK_EQ(el_raft_transfer(node(l), l, now), EL_EINVAL);
	EL_CHECK_EQ(el_raft_transfer(node(l), target, now), 0);
	EL_CHECK_EQ(propose_str(l, "during", NULL), EL_EBUSY);
	drain(l);
	deliver_all();
	tick_all(HEARTBEAT_MS);
	EL_CHECK_EQ(leader_id(), target);
	EL_CHECK_EQ(el_raft_state(node(l)), EL_FOLLOWER);
}

static void test_read_index_confirms_after_heartbeat_round(void)
{
	el_id_t l = start_three();
	el_id_t f = l == 1 ? 2 : 1;
	EL_CHECK_EQ(el_raft_read_index(node(f), 1, now), EL_ENOTLEADER);
	EL_CHECK_EQ(el_raft_read_index(node(l), 77, now), 0);
	struct el_ready rd;
	el_raft_ready(node(l), &rd);
	EL_CHECK_EQ(rd.n_reads, 0); /* not before a quorum answered */
	for (uint32_t i = 0; i < rd.n_msgs; i++)
		enqueue(&rd.msgs[i]);
	el_raft_advance(node(l), &rd, now);
	/* deliver heartbeats and their responses, but watch the ready batches */
	bool seen = false;
	for (int i = 0; i < 50 && queued > 0 && !seen; i++) {
		struct qmsg q = queue[0];
		memmove(queue, queue + 1, (queued - 1) * sizeof(queue[0]));
		queued--;
		q.m.entries = q.entries;
		q.m.data = q.data;
		el_raft_step(node(q.m.to), &q.m, now);
		if (q.m.to == l && el_raft_has_ready(node(l))) {
			el_raft_ready(node(l), &rd);
			for (uint32_t k = 0; k < rd.n_reads; k++)
				if (rd.reads[k].ctx == 77 && rd.reads[k].index == el_raft_commit(node(l)))
					seen = true;
			for (uint32_t k = 0; k < rd.n_msgs; k++)
				enqueue(&rd.msgs[k]);
			el_raft_advance(node(l), &rd, now);
		} else {
			drain(q.m.to);
		}
	}
	EL_CHECK(seen);
}

static void test_window_full_backpressure(void)
{
	el_id_t l = start_three();
	isolate(l, true); /* nothing commits */
	int err = 0;
	uint32_t accepted = 0;
	for (uint32_t i = 0; i < EL_LOG_WINDOW + 4 && err == 0; i++) {
		err = propose_str(l, "p", NULL);
		accepted += err == 0;
		drain(l);
	}
	EL_CHECK_EQ(err, EL_EFULL);
	EL_CHECK(accepted <= EL_LOG_WINDOW / 2);
	EL_CHECK(el_raft_last_index(node(l)) - el_raft_snapshot(node(l))->index <= EL_LOG_WINDOW);
}

static void test_conf_encoding_round_trip_and_rejects(void)
{
	struct el_conf c = { .n = 2 }, d;
	c.m[0].id = 7;
	c.m[0].role = EL_MEMBER_VOTER;
	c.m[1].id = 0x01020304;
	c.m[1].role = EL_MEMBER_LEARNER;
	uint8_t buf[EL_CONF_ENCODED_MAX];
	int len = el_conf_encode(&c, buf, sizeof(buf));
	EL_CHECK_EQ(len, 11);
	EL_CHECK_EQ(el_conf_decode(&d, buf, (uint32_t)len), 0);
	EL_CHECK(d.n == 2 && d.m[1].id == 0x01020304 && d.m[1].role == EL_MEMBER_LEARNER);
	EL_CHECK_EQ(el_conf_decode(&d, buf, (uint32_t)len - 1), EL_EDECODE);
	buf[5] = 9; /* unknown role */
	EL_CHECK_EQ(el_conf_decode(&d, buf, (uint32_t)len), EL_EDECODE);
	c.m[1].id = 7; /* duplicate */
	EL_CHECK_EQ(el_conf_encode(&c, buf, sizeof(buf)), EL_EINVAL);
}

static void test_restart_loads_state_and_rejects_corruption(void)
{
	struct el_raft *rp = &nodes[1]; /* reuse: a replica is large */
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	struct el_snapshot_meta meta = { .index = 5, .term = 2, .len = 3 };
	meta.conf.n = 1;
	meta.conf.m[0].id = 1;
	meta.conf.m[0].role = EL_MEMBER_VOTER;
	const uint8_t data[3] = { 1, 2, 3 };
	static struct el_entry e;
	EL_CHECK_EQ(el_raft_init(rp, &cfg, 1), 0);
	EL_CHECK_EQ(el_raft_load_snapshot(rp, &meta, data), 0);
	e.index = 7; /* gap */
	e.term = 2;
	EL_CHECK_EQ(el_raft_load_entry(rp, &e), EL_ECORRUPT);
	e.index = 6;
	e.term = 1; /* older than the snapshot's term */
	EL_CHECK_EQ(el_raft_load_entry(rp, &e), EL_ECORRUPT);
	e.term = 3;
	EL_CHECK_EQ(el_raft_load_entry(rp, &e), 0);
	struct el_hard_state hs = { .term = 2, .vote = 1, .commit = 6 };
	EL_CHECK_EQ(el_raft_load_hard_state(rp, &hs), EL_ECORRUPT); /* term < last entry's */
	hs.term = 3;
	hs.commit = 9; /* beyond the log: a torn batch, clamped */
	EL_CHECK_EQ(el_raft_load_hard_state(rp, &hs), 0);
	EL_CHECK_EQ(el_raft_commit(rp), 6);
	el_raft_start(rp, 0);
	struct el_ready rd;
	el_raft_ready(rp, &rd);
	EL_CHECK(rd.restore && rd.snapshot->index == 5);
	EL_CHECK_EQ(rd.apply_first, 6);
	EL_CHECK_EQ(rd.apply_last, 6);
	el_raft_advance(rp, &rd, 0);
	EL_CHECK_EQ(el_raft_applied(rp), 6);
}

/* ---- One replica driven by hand ----------------------------------------- */

/* Node 1 of a three-voter cluster {1,2,3}, restarted from storage holding
 * entries of the given terms (indexes 1..n) and a hard state; peers 2 and 3
 * exist only as the messages a test crafts. Its own output is captured in
 * sent[] (the test's network plays no part). */
static struct el_msg sent[EL_OUTBOX_MAX];
static uint32_t n_sent;

static void flush(struct el_raft *r)
{
	n_sent = 0;
	while (el_raft_has_ready(r)) {
		struct el_ready rd;
		el_raft_ready(r, &rd);
		for (uint32_t i = 0; i < rd.n_msgs && n_sent < EL_OUTBOX_MAX; i++) {
			sent[n_sent] = rd.msgs[i];
			sent[n_sent].entries = NULL;
			sent[n_sent].data = NULL;
			n_sent++;
		}
		el_raft_advance(r, &rd, now);
	}
}

/* The captured message of this type to `to`, or NULL. */
static const struct el_msg *sent_to(uint8_t type, el_id_t to)
{
	for (uint32_t i = 0; i < n_sent; i++)
		if (sent[i].type == type && sent[i].to == to)
			return &sent[i];
	return NULL;
}

static bool granted(uint8_t type, el_id_t to)
{
	const struct el_msg *m = sent_to(type, to);
	return m != NULL && !(m->flags & EL_MSG_REJECT);
}

static struct el_conf three_voters(void)
{
	struct el_conf c = { .n = 3 };
	for (uint32_t i = 0; i < 3; i++) {
		c.m[i].id = i + 1;
		c.m[i].role = EL_MEMBER_VOTER;
	}
	return c;
}

static struct el_raft *solo(const uint64_t *terms, uint32_t n, uint64_t term, uint64_t commit)
{
	static struct el_entry e;
	struct el_raft *r = node(1);
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	struct el_snapshot_meta meta = { .conf = three_voters() };
	struct el_hard_state hs = { .term = term, .commit = commit };
	now = 1000;
	el_raft_init(r, &cfg, 5);
	el_raft_load_snapshot(r, &meta, NULL);
	for (uint32_t i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		e.index = i + 1;
		e.term = terms[i];
		e.type = EL_ENTRY_NORMAL;
		el_raft_load_entry(r, &e);
	}
	el_raft_load_hard_state(r, &hs);
	el_raft_start(r, now);
	flush(r);
	return r;
}

/* A message from peer `from` to node 1. */
static struct el_msg msg(uint8_t type, el_id_t from, uint64_t term)
{
	struct el_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.from = from;
	m.to = 1;
	m.term = term;
	return m;
}

/* Node 1 wins an election: its timer fires, node 2 grants the pre-vote and
 * the vote. Its no-op is appended and stored but acknowledged by nobody. */
static void make_leader(struct el_raft *r)
{
	now = el_raft_deadline(r);
	el_raft_tick(r, now);
	flush(r);
	struct el_msg g = msg(EL_MSG_PREVOTE_RESP, 2, el_raft_term(r) + 1);
	el_raft_step(r, &g, now);
	flush(r);
	g = msg(EL_MSG_VOTE_RESP, 2, el_raft_term(r));
	el_raft_step(r, &g, now);
	flush(r);
}

/* ---- Leader lease (issue 8, part 1) ------------------------------------- */

/* A leader with CheckQuorum, in contact with its quorum, is in its lease:
 * a higher-term PreVote and Vote from a returning node are not granted and
 * change nothing; the same vote marked as a leadership transfer is. */
static void test_leader_in_lease_refuses_higher_term_votes(void)
{
	el_id_t l = start_three();
	el_id_t f = l == 3 ? 2 : 3;
	struct el_raft *r = node(l);
	uint64_t term = el_raft_term(r), last = el_raft_last_index(r);
	struct el_msg m = { .type = EL_MSG_PREVOTE, .from = f, .to = l, .term = term + 1 };
	m.index = last;
	m.log_term = el_raft_term_at(r, last);
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	flush(r);
	EL_CHECK(!granted(EL_MSG_PREVOTE_RESP, f));
	m.type = EL_MSG_VOTE;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	flush(r);
	EL_CHECK(!granted(EL_MSG_VOTE_RESP, f));
	EL_CHECK_EQ(el_raft_state(r), EL_LEADER);
	EL_CHECK_EQ(el_raft_term(r), term);
	m.flags = EL_MSG_FORCE;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	flush(r);
	EL_CHECK(granted(EL_MSG_VOTE_RESP, f));
	EL_CHECK_EQ(el_raft_term(r), term + 1);
	EL_CHECK_EQ(el_raft_state(r), EL_FOLLOWER);
}

/* The transport saw the leader's link close (el_raft_peer_lost) and the
 * leader stays silent: after a heartbeat interval its followers' leases end
 * and they campaign in turn, the lower id first; the first wins in one
 * round, long before an election timeout could have fired. */
static void test_leader_link_lost_campaigns_early(void)
{
	el_id_t l = start_three();
	EL_CHECK(l != 0);
	const uint64_t term = el_raft_term(node(l));
	el_id_t f1 = l == 1 ? 2 : 1, f2 = l == 3 ? 2 : 3;
	isolate(l, true); /* it died */
	tick_all(1);
	const uint64_t t0 = now;
	EL_CHECK(el_raft_peer_lost(node(f1), l, now));
	EL_CHECK(el_raft_peer_lost(node(f2), l, now));
	EL_CHECK_EQ(el_raft_leader(node(f1)), l); /* not before the silence */
	EL_CHECK(el_raft_deadline(node(f1)) >= t0 + HEARTBEAT_MS);
	EL_CHECK(el_raft_deadline(node(f1)) < t0 + HEARTBEAT_MS + HEARTBEAT_MS / 2); /* slot 0 */
	EL_CHECK(el_raft_deadline(node(f2)) >= t0 + HEARTBEAT_MS + HEARTBEAT_MS / 2); /* slot 1 */
	EL_CHECK(el_raft_deadline(node(f2)) < t0 + 2 * HEARTBEAT_MS);
	tick_all(2 * HEARTBEAT_MS); /* under half the shortest election timeout */
	EL_CHECK_EQ(el_raft_state(node(f1)), EL_LEADER);
	EL_CHECK_EQ(el_raft_term(node(f1)), term + 1); /* one round: no split vote */
	EL_CHECK_EQ(el_raft_state(node(f2)), EL_FOLLOWER);
	EL_CHECK_EQ(el_raft_leader(node(f2)), f1);
	isolate(l, false);
}

/* A wrong hint (a link reset while the leader lives and heartbeats on its
 * other connection) changes nothing: the next heartbeat restores the lease
 * and the election timer. Hints about anyone but the leader followed, or to
 * a leader, are ignored. */
static void test_wrong_link_lost_hint_does_not_disrupt(void)
{
	el_id_t l = start_three();
	EL_CHECK(l != 0);
	const uint64_t term = el_raft_term(node(l));
	el_id_t f1 = l == 1 ? 2 : 1, f2 = l == 3 ? 2 : 3;
	const uint64_t deadline = el_raft_deadline(node(f1));
	EL_CHECK(!el_raft_peer_lost(node(f1), f2, now)); /* not its leader */
	EL_CHECK(!el_raft_peer_lost(node(f1), 0, now));
	EL_CHECK(!el_raft_peer_lost(node(f1), f1, now));
	EL_CHECK(!el_raft_peer_lost(node(l), f1, now)); /* a leader follows no one */
	EL_CHECK_EQ(el_raft_leader(node(f1)), l);
	EL_CHECK_EQ(el_raft_deadline(node(f1)), deadline);
	EL_CHECK_EQ(el_raft_state(node(l)), EL_LEADER);
	for (int round = 0; round < 5; round++) {
		EL_CHECK(el_raft_peer_lost(node(f1), l, now));
		EL_CHECK(el_raft_deadline(node(f1)) < now + 2 * HEARTBEAT_MS);
		tick_all(HEARTBEAT_MS);
	}
	tick_all(3 * ELECTION_MS);
	EL_CHECK_EQ(leader_id(), l);
	EL_CHECK_EQ(el_raft_term(node(l)), term);
	EL_CHECK_EQ(el_raft_term(node(f1)), term); /* no campaign got through */
	EL_CHECK_EQ(el_raft_leader(node(f1)), l);
	EL_CHECK_EQ(el_raft_leader(node(f2)), l);
}

/* A new commit index reaches caught-up followers with the next append or
 * heartbeat, not with an empty append per follower and commit, when the
 * window is large enough (EL_COMMIT_LAZY_WINDOW_MIN); a small one is told
 * at once. Either way every follower knows it within a heartbeat interval. */
static void test_commit_reaches_followers_lazily(void)
{
	el_id_t l = start_three();
	EL_CHECK(l != 0);
	el_id_t f = l == 1 ? 2 : 1;
	tick_all(2 * HEARTBEAT_MS); /* the no-op committed and known everywhere */
	uint64_t index = 0;
	EL_CHECK_EQ(propose_str(l, "x", &index), 0);
	empty_appends = 0;
	drain(l);
	deliver_all();
	EL_CHECK_EQ(el_raft_commit(node(l)), index);
	const bool lazy = EL_LOG_WINDOW >= EL_COMMIT_LAZY_WINDOW_MIN;
	EL_CHECK_EQ(empty_appends, lazy ? 0u : 2u);
	EL_CHECK(lazy ? el_raft_commit(node(f)) < index : el_raft_commit(node(f)) == index);
	tick_all(HEARTBEAT_MS + 1);
	EL_CHECK_EQ(el_raft_commit(node(f)), index);
}

static uint64_t sched_rng;

static uint32_t sched_rand(uint32_t bound)
{
	sched_rng = sched_rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(sched_rng >> 33) % bound;
}

/* Randomised schedules (issue 8): the runs differ in every node's election
 * timeouts and in how long, and from when, the follower is cut off. */
#ifdef __arm__
#define SCHEDULES 20 /* the same test on the Cortex-M target, fewer runs */
#else
#define SCHEDULES 500
#endif

/* A follower isolated for several election timeouts, then healed into an
 * idle cluster, never changes the leader or its term. */
static void test_isolated_follower_rejoins_without_disruption(void)
{
	sched_rng = 1;
	for (uint32_t s = 0; s < SCHEDULES; s++) {
		setup_seeded(3, true, 1000 + 7 * s);
		tick_all(3 * ELECTION_MS + sched_rand(ELECTION_MS));
		el_id_t l = leader_id();
		EL_CHECK(l != 0);
		uint64_t term = el_raft_term(node(l));
		el_id_t f = (el_id_t)(l % N + 1 + sched_rand(N - 1)) % N;
		f = f == 0 ? N : f;
		EL_CHECK(f != l);
		isolate(f, true);
		tick_all(3 * ELECTION_MS + sched_rand(5 * ELECTION_MS));
		EL_CHECK_EQ(el_raft_term(node(f)), term); /* PreVote: no inflation */
		isolate(f, false);
		tick_all(2 * ELECTION_MS + sched_rand(2 * ELECTION_MS));
		EL_CHECK_EQ(leader_id(), l);
		for (el_id_t id = 1; id <= N; id++)
			EL_CHECK_EQ(el_raft_term(node(id)), term);
	}
}

/* The partial cut: a follower that loses only its link with the leader,
 * while still reaching the other follower, never wins a pre-vote as long as
 * that follower hears the leader (the followers' side of the lease). */
static void test_follower_cut_from_leader_only_never_wins(void)
{
	sched_rng = 2;
	for (uint32_t s = 0; s < SCHEDULES; s++) {
		setup_seeded(3, true, 5000 + 11 * s);
		tick_all(3 * ELECTION_MS + sched_rand(ELECTION_MS));
		el_id_t l = leader_id();
		EL_CHECK(l != 0);
		uint64_t term = el_raft_term(node(l));
		el_id_t f = l == 1 ? 2 : 1;
		cut[f][l] = cut[l][f] = true;
		uint64_t elections = el_raft_stats(node(f))->elections;
		tick_all(4 * ELECTION_MS + sched_rand(4 * ELECTION_MS));
		EL_CHECK(el_raft_stats(node(f))->elections > elections); /* it did try */
		EL_CHECK_EQ(leader_id(), l);
		for (el_id_t id = 1; id <= N; id++)
			EL_CHECK_EQ(el_raft_term(node(id)), term);
		cut[f][l] = cut[l][f] = false;
		tick_all(2 * ELECTION_MS);
		EL_CHECK_EQ(leader_id(), l);
		EL_CHECK_EQ(el_raft_term(node(l)), term);
	}
}

/* ---- Vote rules ---------------------------------------------------------- */

/* A pre-vote asks about the term the candidate would take: one not above
 * the voter's own term comes from a node behind it and is refused. */
static void test_prevote_not_above_own_term_refused(void)
{
	const uint64_t terms[] = { 1, 2 };
	struct el_raft *r = solo(terms, 2, 3, 1);
	struct el_msg m = msg(EL_MSG_PREVOTE, 2, 3);
	m.index = 5;
	m.log_term = 3;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	flush(r);
	EL_CHECK(sent_to(EL_MSG_PREVOTE_RESP, 2) != NULL);
	EL_CHECK(!granted(EL_MSG_PREVOTE_RESP, 2));
	m.term = 4; /* above: granted (no leader known, log up to date) */
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	flush(r);
	EL_CHECK(granted(EL_MSG_PREVOTE_RESP, 2));
	EL_CHECK_EQ(el_raft_term(r), 3); /* a pre-vote never changes the term */
}

/* A follower that knows the leader of its term votes for nobody else in it. */
static void test_follower_knowing_leader_refuses_other_candidate(void)
{
	const uint64_t terms[] = { 1 };
	struct el_raft *r = solo(terms, 1, 1, 1);
	struct el_msg hb = msg(EL_MSG_HEARTBEAT, 2, 2);
	EL_CHECK_EQ(el_raft_step(r, &hb, now), 0);
	EL_CHECK_EQ(el_raft_leader(r), 2);
	EL_CHECK_EQ(el_raft_vote(r), 0);
	struct el_msg v = msg(EL_MSG_VOTE, 3, 2);
	v.index = 1;
	v.log_term = 1;
	EL_CHECK_EQ(el_raft_step(r, &v, now), 0);
	flush(r);
	EL_CHECK(sent_to(EL_MSG_VOTE_RESP, 3) != NULL);
	EL_CHECK(!granted(EL_MSG_VOTE_RESP, 3));
	EL_CHECK_EQ(el_raft_vote(r), 0);
}

/* A (pre-)candidate that a quorum has refused steps down at once. */
static void test_candidate_rejected_by_quorum_steps_down(void)
{
	const uint64_t terms[] = { 1 };
	struct el_raft *r = solo(terms, 1, 1, 1);
	now = el_raft_deadline(r);
	el_raft_tick(r, now);
	flush(r);
	EL_CHECK_EQ(el_raft_state(r), EL_PRECANDIDATE);
	struct el_msg no = msg(EL_MSG_PREVOTE_RESP, 2, 1);
	no.flags = EL_MSG_REJECT;
	EL_CHECK_EQ(el_raft_step(r, &no, now), 0);
	EL_CHECK_EQ(el_raft_state(r), EL_PRECANDIDATE); /* one refusal of three: not yet */
	no.from = 3;
	EL_CHECK_EQ(el_raft_step(r, &no, now), 0);
	EL_CHECK_EQ(el_raft_state(r), EL_FOLLOWER);
}

/* A pre-vote granted in an older round (for a term the node has since
 * reached) does not count toward the current round. */
static void test_old_round_prevote_grant_not_counted(void)
{
	const uint64_t terms[] = { 1 };
	struct el_raft *r = solo(terms, 1, 2, 1);
	now = el_raft_deadline(r);
	el_raft_tick(r, now);
	flush(r);
	EL_CHECK_EQ(el_raft_state(r), EL_PRECANDIDATE); /* asks about term 3 */
	struct el_msg old = msg(EL_MSG_PREVOTE_RESP, 2, 2); /* granted for term 2 */
	EL_CHECK_EQ(el_raft_step(r, &old, now), 0);
	EL_CHECK_EQ(el_raft_state(r), EL_PRECANDIDATE);
	EL_CHECK_EQ(el_raft_term(r), 2);
	struct el_msg cur = msg(EL_MSG_PREVOTE_RESP, 2, 3);
	EL_CHECK_EQ(el_raft_step(r, &cur, now), 0);
	EL_CHECK_EQ(el_raft_state(r), EL_CANDIDATE);
	EL_CHECK_EQ(el_raft_term(r), 3);
}

/* A timer acts when called exactly at the deadline it announced. */
static void test_timer_fires_exactly_at_deadline(void)
{
	const uint64_t terms[] = { 1 };
	struct el_raft *r = solo(terms, 1, 1, 1);
	uint64_t d = el_raft_deadline(r);
	el_raft_tick(r, d - 1);
	EL_CHECK_EQ(el_raft_state(r), EL_FOLLOWER);
	el_raft_tick(r, d);
	EL_CHECK_EQ(el_raft_state(r), EL_PRECANDIDATE);
	flush(r);
	make_leader(r);
	EL_CHECK_EQ(el_raft_state(r), EL_LEADER);
	now = el_raft_deadline(r);
	el_raft_tick(r, now);
	flush(r);
	EL_CHECK(sent_to(EL_MSG_HEARTBEAT, 2) != NULL);
	EL_CHECK(sent_to(EL_MSG_HEARTBEAT, 3) != NULL);
}

/* ---- Replication holes (issue 8, part 3) -------------------------------- */

/* A follower commits no further than the last entry the append verified:
 * past it, its log holds a stale suffix of an older term. */
static void test_follower_commit_bounded_by_verified_entries(void)
{
	const uint64_t terms[] = { 1, 1, 2, 2 }; /* 3 and 4: an old leader's, uncommitted */
	struct el_raft *r = solo(terms, 4, 2, 2);
	struct el_msg m = msg(EL_MSG_APPEND, 2, 3); /* the leader of term 3 */
	m.index = 2;
	m.log_term = 1;
	m.commit = 4; /* its own entries 3 and 4 are of term 3 */
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	EL_CHECK_EQ(el_raft_commit(r), 2);
	EL_CHECK_EQ(el_raft_term_at(r, 3), 2);
	flush(r);
	const struct el_msg *ack = sent_to(EL_MSG_APPEND_RESP, 2);
	EL_CHECK(ack != NULL && !(ack->flags & EL_MSG_REJECT) && ack->index == 2);
}

/* A configuration entry that a new leader truncates stops being in force:
 * the follower returns to the configuration before it. */
static void test_truncated_conf_entry_rolls_back(void)
{
	static struct el_entry e[2];
	struct el_raft *r = node(1);
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	struct el_snapshot_meta meta = { .conf = three_voters() };
	struct el_hard_state hs = { .term = 1, .commit = 1 };
	struct el_conf two = three_voters();
	two.n = 2; /* node 3 removed */
	memset(e, 0, sizeof(e));
	e[0].index = 1;
	e[0].term = 1;
	e[1].index = 2;
	e[1].term = 1;
	e[1].type = EL_ENTRY_CONF;
	e[1].len = (uint16_t)el_conf_encode(&two, e[1].data, sizeof(e[1].data));
	now = 1000;
	el_raft_init(r, &cfg, 5);
	el_raft_load_snapshot(r, &meta, NULL);
	EL_CHECK_EQ(el_raft_load_entry(r, &e[0]), 0);
	EL_CHECK_EQ(el_raft_load_entry(r, &e[1]), 0);
	el_raft_load_hard_state(r, &hs);
	el_raft_start(r, now);
	flush(r);
	EL_CHECK(el_conf_find(el_raft_conf(r), 3) == NULL);
	static struct el_entry repl;
	memset(&repl, 0, sizeof(repl));
	repl.index = 2;
	repl.term = 2;
	struct el_msg m = msg(EL_MSG_APPEND, 2, 2);
	m.index = 1;
	m.log_term = 1;
	m.n_entries = 1;
	m.entries = &repl;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	EL_CHECK_EQ(el_raft_term_at(r, 2), 2);
	EL_CHECK(el_conf_find(el_raft_conf(r), 3) != NULL);
	EL_CHECK_EQ(el_raft_conf(r)->n, 3);
}

/* A leader whose own-term no-op has not committed refuses a configuration
 * change (the single-server change rule), and accepts it once it has. */
static void test_conf_change_waits_for_own_term_commit(void)
{
	const uint64_t terms[] = { 1, 1 };
	struct el_raft *r = solo(terms, 2, 1, 2);
	make_leader(r);
	EL_CHECK_EQ(el_raft_state(r), EL_LEADER);
	uint64_t noop = el_raft_last_index(r);
	EL_CHECK(el_raft_commit(r) < noop);
	EL_CHECK_EQ(el_raft_propose_conf(r, EL_CONF_ADD_LEARNER, 4, now, NULL), EL_EBUSY);
	struct el_msg ack = msg(EL_MSG_APPEND_RESP, 2, el_raft_term(r));
	ack.index = noop;
	EL_CHECK_EQ(el_raft_step(r, &ack, now), 0);
	EL_CHECK_EQ(el_raft_commit(r), noop);
	EL_CHECK_EQ(el_raft_propose_conf(r, EL_CONF_ADD_LEARNER, 4, now, NULL), 0);
}

/* The Raft paper's figure 8: a leader does not commit an entry of an older
 * term by counting replicas, only through an entry of its own term. */
static void test_previous_term_entry_not_committed_by_counting(void)
{
	const uint64_t terms[] = { 1, 1 }; /* 2: left by the old leader, uncommitted */
	struct el_raft *r = solo(terms, 2, 1, 1);
	make_leader(r);
	EL_CHECK_EQ(el_raft_state(r), EL_LEADER);
	struct el_msg ack = msg(EL_MSG_APPEND_RESP, 2, el_raft_term(r));
	ack.index = 2; /* a quorum now holds entry 2, of term 1 */
	EL_CHECK_EQ(el_raft_step(r, &ack, now), 0);
	EL_CHECK_EQ(el_raft_commit(r), 1);
	ack.index = el_raft_last_index(r); /* the no-op of term 2 */
	EL_CHECK_EQ(el_raft_step(r, &ack, now), 0);
	EL_CHECK_EQ(el_raft_commit(r), el_raft_last_index(r));
}

/* A duplicated or late earlier chunk does not move the receive offset, and
 * the installed bytes are the source's. */
static void test_snapshot_chunks_out_of_order(void)
{
	static uint8_t src[3 * EL_SNAPSHOT_CHUNK];
	const uint64_t terms[] = { 1 };
	struct el_raft *r = solo(terms, 1, 1, 1);
	for (uint32_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 13 + 1);
	struct el_msg m = msg(EL_MSG_SNAPSHOT, 2, 2);
	m.index = 40;
	m.log_term = 2;
	m.conf = three_voters();
	m.total = sizeof(src);
	m.data_len = EL_SNAPSHOT_CHUNK;
	const uint32_t order[] = { 0, 1, 0, 1, 2 }; /* chunk 0 and 1 arrive twice */
	const uint32_t held[] = { 1, 2, 2, 2, 3 }; /* chunks held after each */
	for (uint32_t k = 0; k < 5; k++) {
		m.offset = order[k] * EL_SNAPSHOT_CHUNK;
		m.data = src + m.offset;
		EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
		if (k < 4)
			EL_CHECK_EQ(el_raft_snapshot(r)->index, 0); /* nothing installed yet */
		flush(r);
		const struct el_msg *resp = sent_to(EL_MSG_SNAPSHOT_RESP, 2);
		EL_CHECK(resp != NULL);
		EL_CHECK_EQ(resp->offset, held[k] * EL_SNAPSHOT_CHUNK);
	}
	EL_CHECK_EQ(el_raft_snapshot(r)->index, 40);
	EL_CHECK_EQ(el_raft_snapshot(r)->len, sizeof(src));
	EL_CHECK(memcmp(el_raft_snapshot_data(r), src, sizeof(src)) == 0);
	EL_CHECK_EQ(el_raft_commit(r), 40);
}

static uint32_t chunks_sent_to(el_id_t to)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < n_sent; i++)
		n += sent[i].type == EL_MSG_SNAPSHOT && sent[i].to == to;
	return n;
}

/* The leader's snapshot chunks are paced: a chunk goes again only once it
 * has been out a heartbeat interval (not at every read round, each of which
 * sends heartbeats), and a reply that names the offset already sent (the
 * answer to a duplicate or out-of-order chunk) sends nothing. A follower
 * that stopped reading got a 32 KiB chunk per read round and heartbeat,
 * 1,024 of them queued at the leader within a second (peer_queue_test.py),
 * and every duplicate chunk stayed in flight for the whole transfer. */
static void test_snapshot_chunks_paced(void)
{
	const el_id_t l = start_three(), f = l == 3 ? 2 : 3;
	uint32_t len = 0;
	uint64_t at = 0;
	leave_behind_snapshot(l, f, &len, &at);
	flush(node(l));
	struct el_msg m;
	memset(&m, 0, sizeof(m));
	m.type = EL_MSG_HEARTBEAT_RESP;
	m.from = f;
	m.to = l;
	m.term = el_raft_term(node(l));
	EL_CHECK_EQ(el_raft_step(node(l), &m, now), 0); /* f is behind the snapshot */
	flush(node(l));
	EL_CHECK_EQ(chunks_sent_to(f), 1);
	for (uint64_t ctx = 1; ctx <= 3; ctx++) /* read rounds: heartbeats, no chunk */
		EL_CHECK_EQ(el_raft_read_index(node(l), ctx, now), 0);
	flush(node(l));
	EL_CHECK_EQ(chunks_sent_to(f), 0);
	m.type = EL_MSG_SNAPSHOT_RESP;
	m.index = at;
	m.offset = EL_SNAPSHOT_CHUNK < len ? EL_SNAPSHOT_CHUNK : len;
	EL_CHECK_EQ(el_raft_step(node(l), &m, now), 0); /* progress: the next chunk */
	flush(node(l));
	EL_CHECK_EQ(chunks_sent_to(f), m.offset < len ? 1u : 0u);
	EL_CHECK_EQ(el_raft_step(node(l), &m, now), 0); /* the same offset again */
	flush(node(l));
	EL_CHECK_EQ(chunks_sent_to(f), 0);
	now += HEARTBEAT_MS; /* the chunk out a heartbeat: lost, sent again */
	el_raft_tick(node(l), now);
	flush(node(l));
	EL_CHECK_EQ(chunks_sent_to(f), m.offset < len ? 1u : 0u);
}

/* The outbox is bounded: once full, further messages are counted as
 * dropped, and nothing past the outbox is written. */
static void test_outbox_full_drops_and_counts(void)
{
	const uint64_t terms[] = { 1 };
	struct el_raft *r = solo(terms, 1, 1, 1);
	struct el_msg hb = msg(EL_MSG_HEARTBEAT, 2, 1);
	hb.ctx = 9;
	for (uint32_t i = 0; i < EL_OUTBOX_MAX + 3; i++)
		EL_CHECK_EQ(el_raft_step(r, &hb, now), 0);
	EL_CHECK_EQ(el_raft_stats(r)->msgs_dropped, 3);
	struct el_ready rd;
	el_raft_ready(r, &rd);
	EL_CHECK_EQ(rd.n_msgs, EL_OUTBOX_MAX);
	EL_CHECK_EQ(rd.n_reads, 0);
	for (uint32_t i = 0; i < rd.n_msgs; i++)
		EL_CHECK(rd.msgs[i].type == EL_MSG_HEARTBEAT_RESP && rd.msgs[i].ctx == 9);
	el_raft_advance(r, &rd, now);
	EL_CHECK(!el_raft_has_ready(r));
}

/* ReadIndex waits for the leader's own-term commit: before it, even a
 * quorum's heartbeat answers confirm nothing (its commit index may be
 * behind the cluster's). */
static void test_read_index_waits_for_own_term_commit(void)
{
	const uint64_t terms[] = { 1, 1 };
	struct el_raft *r = solo(terms, 2, 1, 1);
	make_leader(r);
	uint64_t noop = el_raft_last_index(r);
	EL_CHECK_EQ(el_raft_read_index(r, 55, now), 0);
	flush(r);
	struct el_msg hr = msg(EL_MSG_HEARTBEAT_RESP, 2, el_raft_term(r));
	for (uint64_t round = 0; round <= 2; round++) {
		hr.ctx = round;
		EL_CHECK_EQ(el_raft_step(r, &hr, now), 0);
		struct el_ready rd;
		el_raft_ready(r, &rd);
		EL_CHECK_EQ(rd.n_reads, 0);
		el_raft_advance(r, &rd, now);
	}
	struct el_msg ack = msg(EL_MSG_APPEND_RESP, 2, el_raft_term(r));
	ack.index = noop;
	EL_CHECK_EQ(el_raft_step(r, &ack, now), 0);
	hr.ctx = 1;
	EL_CHECK_EQ(el_raft_step(r, &hr, now), 0);
	struct el_ready rd;
	el_raft_ready(r, &rd);
	EL_CHECK_EQ(rd.n_reads, 1);
	EL_CHECK_EQ(rd.reads[0].ctx, 55);
	EL_CHECK_EQ(rd.reads[0].index, noop);
	el_raft_advance(r, &rd, now);
}

/* The election timer's modulo agrees with C's % (it replaces it so that
 * 32-bit boards link no 64-bit division). */
static void test_mod_u64_u32(void)
{
	static const uint64_t values[] = {0, 1, 299, 300, 12345678901234567890ull, UINT64_MAX,
					  1ull << 63, 0xffffffffull, 0x100000000ull};
	static const uint32_t mods[] = {1, 2, 150, 300, 65537, 0x80000000u, UINT32_MAX};
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
		for (size_t j = 0; j < sizeof mods / sizeof mods[0]; j++)
			EL_CHECK_EQ(el_raft__mod_u64_u32(values[i], mods[j]), values[i] % mods[j]);
}

void el_suite_raft(void)
{
	EL_RUN(test_init_rejects_bad_config);
	EL_RUN(test_mod_u64_u32);
	EL_RUN(test_single_node_elects_itself_and_commits);
	EL_RUN(test_three_nodes_elect_one_leader_and_replicate);
	EL_RUN(test_prevote_keeps_partitioned_node_term);
	EL_RUN(test_without_prevote_partitioned_node_inflates_term);
	EL_RUN(test_check_quorum_steps_down_isolated_leader);
	EL_RUN(test_leader_steps_down_on_higher_term);
	EL_RUN(test_stale_term_append_is_refused);
	EL_RUN(test_follower_truncates_conflicting_suffix);
	EL_RUN(test_malformed_messages_are_refused_without_change);
	EL_RUN(test_lagging_follower_gets_chunked_snapshot);
	EL_RUN(test_snapshot_chunks_paced);
	EL_RUN(test_leader_regenerates_overwritten_snapshot_bytes);
	EL_RUN(test_add_voter_joins_as_learner_then_promoted);
	EL_RUN(test_removed_leader_steps_down);
	EL_RUN(test_leadership_transfer);
	EL_RUN(test_read_index_confirms_after_heartbeat_round);
	EL_RUN(test_window_full_backpressure);
	EL_RUN(test_conf_encoding_round_trip_and_rejects);
	EL_RUN(test_restart_loads_state_and_rejects_corruption);
	EL_RUN(test_leader_in_lease_refuses_higher_term_votes);
	EL_RUN(test_leader_link_lost_campaigns_early);
	EL_RUN(test_wrong_link_lost_hint_does_not_disrupt);
	EL_RUN(test_commit_reaches_followers_lazily);
	EL_RUN(test_isolated_follower_rejoins_without_disruption);
	EL_RUN(test_follower_cut_from_leader_only_never_wins);
	EL_RUN(test_prevote_not_above_own_term_refused);
	EL_RUN(test_follower_knowing_leader_refuses_other_candidate);
	EL_RUN(test_candidate_rejected_by_quorum_steps_down);
	EL_RUN(test_old_round_prevote_grant_not_counted);
	EL_RUN(test_timer_fires_exactly_at_deadline);
	EL_RUN(test_follower_commit_bounded_by_verified_entries);
	EL_RUN(test_truncated_conf_entry_rolls_back);
	EL_RUN(test_conf_change_waits_for_own_term_commit);
	EL_RUN(test_previous_term_entry_not_committed_by_counting);
	EL_RUN(test_snapshot_chunks_out_of_order);
	EL_RUN(test_outbox_full_drops_and_counts);
	EL_RUN(test_read_index_waits_for_own_term_commit);
}
