/*
 * test_hostile.c - hostile peer messages against a running replica: every
 * refusal of el_raft_step's message validation gets a message that differs
 * from a valid one in exactly that field, and the test checks the error and
 * that nothing changed. Also the five defects found by fuzzing a live
 * replica (issue 20): a term the replica cannot increment, a snapshot whose
 * lock table is ahead of its own index, indexes near the top of the 64-bit
 * range, entries of term 0, and a second leader in one term.
 */
#include <string.h>

#include "el_error.h"
#include "el_lock.h"
#include "el_node.h"
#include "el_raft.h"
#include "el_test.h"

#define ELECTION_MS 100
#define HEARTBEAT_MS 20

static struct el_raft R;
static uint64_t now;

static void drain(struct el_raft *r)
{
	while (el_raft_has_ready(r)) {
		struct el_ready rd;
		el_raft_ready(r, &rd);
		el_raft_advance(r, &rd, now);
	}
}

static struct el_conf voters(uint32_t n)
{
	struct el_conf c = { .n = (uint8_t)n };
	for (uint32_t i = 0; i < n; i++) {
		c.m[i].id = i + 1;
		c.m[i].role = EL_MEMBER_VOTER;
	}
	return c;
}

/* Node 1 of {1,2,3}: log of terms 1, 2, 3 (indexes 1..3), term 3, commit 2,
 * following leader 2 (it has heard a heartbeat from it). */
static struct el_raft *victim(void)
{
	static struct el_entry e;
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	struct el_snapshot_meta meta = { .conf = voters(3) };
	struct el_hard_state hs = { .term = 3, .commit = 2 };
	now = 5000;
	el_raft_init(&R, &cfg, 3);
	el_raft_load_snapshot(&R, &meta, NULL);
	for (uint64_t i = 1; i <= 3; i++) {
		memset(&e, 0, sizeof(e));
		e.index = i;
		e.term = i;
		el_raft_load_entry(&R, &e);
	}
	el_raft_load_hard_state(&R, &hs);
	el_raft_start(&R, now);
	struct el_msg hb = { .type = EL_MSG_HEARTBEAT, .from = 2, .to = 1, .term = 3, .commit = 2 };
	el_raft_step(&R, &hb, now);
	drain(&R);
	return &R;
}

static struct el_entry entries[EL_MSG_ENTRIES_MAX + 1];

/* A valid append from leader 2: after entry 3 (term 3), one entry of term 3. */
static struct el_msg append(void)
{
	struct el_msg m = { .type = EL_MSG_APPEND, .from = 2, .to = 1, .term = 3 };
	memset(entries, 0, sizeof(entries));
	for (uint32_t k = 0; k <= EL_MSG_ENTRIES_MAX; k++) {
		entries[k].index = 4 + k;
		entries[k].term = 3;
	}
	m.index = 3;
	m.log_term = 3;
	m.commit = 3;
	m.n_entries = 1;
	m.entries = entries;
	return m;
}

static uint8_t chunk[EL_SNAPSHOT_CHUNK];

/* A valid first chunk of a two-chunk snapshot at index 40 from leader 2. */
static struct el_msg snapshot(void)
{
	struct el_msg m = { .type = EL_MSG_SNAPSHOT, .from = 2, .to = 1, .term = 3 };
	m.index = 40;
	m.log_term = 3;
	m.conf = voters(3);
	m.total = 2 * EL_SNAPSHOT_CHUNK;
	m.data_len = EL_SNAPSHOT_CHUNK;
	m.data = chunk;
	return m;
}

/* What a refused message must leave exactly as it was. */
struct mark {
	uint64_t term, commit, applied, last, last_term, snap_index, rejected;
	el_id_t vote, leader;
	uint8_t state, conf_n;
	bool snap_valid;
};

static struct mark mark(const struct el_raft *r)
{
	struct mark k;
	memset(&k, 0, sizeof(k));
	k.term = el_raft_term(r);
	k.commit = el_raft_commit(r);
	k.applied = el_raft_applied(r);
	k.last = el_raft_last_index(r);
	k.last_term = el_raft_term_at(r, k.last);
	k.snap_index = el_raft_snapshot(r)->index;
	k.rejected = el_raft_stats(r)->msgs_rejected;
	k.vote = el_raft_vote(r);
	k.leader = el_raft_leader(r);
	k.state = (uint8_t)el_raft_state(r);
	k.conf_n = el_raft_conf(r)->n;
	k.snap_valid = el_raft_snapshot_valid(r);
	return k;
}

/* Steps m into r: it must fail with want, answer nothing and change nothing
 * but the count of rejected messages. */
static int refused(struct el_raft *r, const struct el_msg *m, int want)
{
	struct mark before = mark(r);
	int err = el_raft_step(r, m, now);
	struct mark after = mark(r);
	before.rejected++;
	if (err != want)
		return 0;
	return memcmp(&before, &after, sizeof(before)) == 0 && !el_raft_has_ready(r);
}

/* ---- Validation, one refusal each --------------------------------------- */

static void test_refuses_bad_header(void)
{
	struct el_raft *r = victim();
	struct el_msg m = { .type = EL_MSG_HEARTBEAT, .from = 2, .to = 1, .term = 3 };
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0); /* the base message is valid */
	drain(r);
	m.term = 4; /* a newer term: refused before it is adopted */
	m.type = 0;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.type = EL_MSG_TYPE_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.type = EL_MSG_HEARTBEAT;
	m.term = 0;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.term = 3;
	/* Addressing, on a message no other rule refuses (an answer to a
	 * leader, which this follower ignores when it is well addressed). */
	struct el_msg ans = { .type = EL_MSG_HEARTBEAT_RESP, .from = 3, .to = 1, .term = 3 };
	EL_CHECK_EQ(el_raft_step(r, &ans, now), 0);
	ans.to = 7;
	EL_CHECK(refused(r, &ans, EL_EINVAL));
	ans.to = 1;
	ans.from = 0;
	EL_CHECK(refused(r, &ans, EL_EINVAL));
	ans.from = 1;
	EL_CHECK(refused(r, &ans, EL_EINVAL));
	m.log_term = 4; /* above the message's own term */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.log_term = 0;
	m.commit = EL_INDEX_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.commit = 0;
	m.index = EL_INDEX_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	/* An index whose successor wraps to 0, with an entry claiming index 0. */
	struct el_msg wrap = append();
	wrap.index = UINT64_MAX;
	entries[0].index = 0;
	EL_CHECK(refused(r, &wrap, EL_EDECODE));
	struct el_msg resp = { .type = EL_MSG_APPEND_RESP, .from = 2, .to = 1, .term = 3 };
	resp.flags = EL_MSG_REJECT;
	resp.hint_index = EL_INDEX_MAX + 1;
	EL_CHECK(refused(r, &resp, EL_EDECODE));
}

static void test_refuses_bad_entries(void)
{
	struct el_raft *r = victim();
	struct el_msg m = append();
	m.n_entries = EL_MSG_ENTRIES_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	m.entries = NULL;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	m.type = EL_MSG_HEARTBEAT; /* entries on a message that carries none */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	m.n_entries = 2;
	entries[1].index = 6; /* not consecutive */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	entries[0].term = 2; /* below the previous entry's term */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	entries[0].term = 4; /* above the message's term */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	entries[0].len = EL_ENTRY_DATA_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	entries[0].type = EL_ENTRY_CONF + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	entries[0].type = EL_ENTRY_CONF;
	entries[0].len = 3; /* not a configuration */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = append();
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0); /* the base message is valid */
	EL_CHECK_EQ(el_raft_last_index(r), 4);
}

static void test_refuses_bad_snapshot_fields(void)
{
	struct el_raft *r = victim();
	struct el_msg m = snapshot();
	m.total = EL_SNAPSHOT_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.data_len = EL_SNAPSHOT_CHUNK + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.offset = m.total + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.offset = m.total - 1; /* the chunk runs past the end */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.data = NULL;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.index = 0;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.log_term = 0;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.log_term = 4;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.conf.m[1].id = 1; /* a duplicate member */
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.type = EL_MSG_HEARTBEAT; /* snapshot data on another message */
	m.index = 0;
	m.log_term = 0;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0); /* the base message is valid */
}

/* An append whose previous entry or entries disagree with an entry this
 * node committed can come from no leader of its term: refused, not
 * asserted, not obeyed. */
static void test_refuses_append_overwriting_commit(void)
{
	struct el_raft *r = victim();
	struct el_msg m = append();
	m.index = 1;
	m.log_term = 1;
	entries[0].index = 2;
	entries[0].term = 3; /* committed entry 2 is of term 2 */
	EL_CHECK(refused(r, &m, EL_EINVAL));
	m = append();
	m.index = 2;
	m.log_term = 1; /* committed entry 2 is of term 2 */
	m.n_entries = 0;
	EL_CHECK(refused(r, &m, EL_EINVAL));
	EL_CHECK_EQ(el_raft_term_at(r, 2), 2);
}

/* ---- Issue 20 ------------------------------------------------------------ */

/* 1. A term beyond EL_TERM_MAX is refused; a node at EL_TERM_MAX never
 * campaigns (not on its timer, not on TIMEOUT_NOW), so no term wraps. */
static void test_term_bound(void)
{
	struct el_raft *r = victim();
	struct el_msg m = { .type = EL_MSG_HEARTBEAT, .from = 2, .to = 1, .term = UINT64_MAX };
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.term = EL_TERM_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.term = EL_TERM_MAX;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	EL_CHECK_EQ(el_raft_term(r), EL_TERM_MAX);
	drain(r);
	struct el_msg go = { .type = EL_MSG_TIMEOUT_NOW, .from = 2, .to = 1, .term = EL_TERM_MAX };
	EL_CHECK_EQ(el_raft_step(r, &go, now), 0);
	EL_CHECK_EQ(el_raft_term(r), EL_TERM_MAX);
	EL_CHECK_EQ(el_raft_state(r), EL_FOLLOWER);
	EL_CHECK_EQ(el_raft_deadline(r), UINT64_MAX);
	now += 10 * ELECTION_MS;
	el_raft_tick(r, now);
	EL_CHECK_EQ(el_raft_term(r), EL_TERM_MAX);
	EL_CHECK_EQ(el_raft_state(r), EL_FOLLOWER);
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	struct el_hard_state hs = { .term = EL_TERM_MAX + 1 };
	el_raft_init(r, &cfg, 3);
	EL_CHECK_EQ(el_raft_load_hard_state(r, &hs), EL_ECORRUPT);
}

/* 3. Indexes near the top of the range are refused, and a leader never
 * appends past EL_INDEX_MAX. */
static void test_index_bound(void)
{
	struct el_raft *r = victim();
	struct el_msg m = append();
	m.index = EL_INDEX_MAX;
	m.log_term = 3;
	entries[0].index = EL_INDEX_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m = snapshot();
	m.index = UINT64_MAX - EL_LOG_WINDOW;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	m.index = EL_INDEX_MAX + 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	/* A single voter whose snapshot sits just below the bound. */
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	struct el_snapshot_meta meta = { .index = EL_INDEX_MAX - 3, .term = 1, .conf = voters(1) };
	el_raft_init(r, &cfg, 3);
	EL_CHECK_EQ(el_raft_load_snapshot(r, &meta, NULL), 0);
	el_raft_start(r, now);
	drain(r);
	now = el_raft_deadline(r);
	el_raft_tick(r, now);
	drain(r);
	EL_CHECK_EQ(el_raft_state(r), EL_LEADER); /* its no-op is at EL_INDEX_MAX - 2 */
	int err = 0;
	for (int i = 0; i < 4 && err == 0; i++) {
		err = el_raft_propose(r, (const uint8_t *)"x", 1, now, NULL, NULL);
		drain(r);
	}
	EL_CHECK_EQ(err, EL_EFULL);
	EL_CHECK_EQ(el_raft_last_index(r), EL_INDEX_MAX);
	meta.index = EL_INDEX_MAX + 1;
	el_raft_init(r, &cfg, 3);
	EL_CHECK_EQ(el_raft_load_snapshot(r, &meta, NULL), EL_ECORRUPT);
}

/* 4. No entry of term 0, not even to a node that has nothing yet (which
 * would store it, commit it, and then refuse its own disk on restart). */
static void test_refuses_entries_of_term_zero(void)
{
	struct el_raft *r = &R;
	struct el_raft_config cfg = { 1, ELECTION_MS, HEARTBEAT_MS, true, true };
	el_raft_init(r, &cfg, 3);
	el_raft_start(r, now); /* a joining node: empty */
	drain(r);
	struct el_msg m = { .type = EL_MSG_APPEND, .from = 2, .to = 1, .term = 1 };
	memset(entries, 0, sizeof(entries));
	entries[0].index = 1;
	entries[0].term = 0;
	m.n_entries = 1;
	m.entries = entries;
	m.commit = 1;
	EL_CHECK(refused(r, &m, EL_EDECODE));
	entries[0].term = 1;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	EL_CHECK_EQ(el_raft_last_index(r), 1);
}

/* 5. One leader per term as this follower saw it: having followed 2 in
 * term 3, it refuses appends, heartbeats and snapshots of term 3 from 3,
 * and keeps the entries it acknowledged to 2. */
static void test_refuses_second_leader_in_term(void)
{
	struct el_raft *r = victim();
	struct el_msg m = append();
	m.from = 3;
	m.index = 2;
	m.log_term = 2;
	entries[0].index = 3;
	entries[0].term = 3; /* would keep entry 3 ... */
	entries[0].type = EL_ENTRY_NOOP; /* ... but as another entry */
	EL_CHECK(refused(r, &m, EL_EINVAL));
	m = append();
	m.from = 3;
	EL_CHECK(refused(r, &m, EL_EINVAL));
	struct el_msg hb = { .type = EL_MSG_HEARTBEAT, .from = 3, .to = 1, .term = 3, .commit = 3 };
	EL_CHECK(refused(r, &hb, EL_EINVAL));
	m = snapshot();
	m.from = 3;
	EL_CHECK(refused(r, &m, EL_EINVAL));
	EL_CHECK_EQ(el_raft_leader(r), 2);
	hb.term = 4; /* a newer term may have another leader */
	EL_CHECK_EQ(el_raft_step(r, &hb, now), 0);
	EL_CHECK_EQ(el_raft_leader(r), 3);
}

/* 2, in the replica: a validator refuses the assembled snapshot; nothing is
 * installed and the leader is answered with a reject. */
static int refuse_ee(void *ctx, const uint8_t *buf, uint32_t len, uint64_t index)
{
	(void)ctx;
	(void)index;
	return len > 0 && buf[0] == 0xEE ? EL_ECORRUPT : 0;
}

static void test_snapshot_validator_refusal_installs_nothing(void)
{
	struct el_raft *r = victim();
	el_raft_set_snapshot_validator(r, refuse_ee, NULL);
	memset(chunk, 0xEE, sizeof(chunk));
	struct el_msg m = snapshot();
	m.total = m.data_len = 16;
	EL_CHECK_EQ(el_raft_step(r, &m, now), EL_ECORRUPT);
	EL_CHECK_EQ(el_raft_snapshot(r)->index, 0);
	EL_CHECK_EQ(el_raft_commit(r), 2);
	EL_CHECK_EQ(el_raft_last_index(r), 3);
	struct el_ready rd;
	el_raft_ready(r, &rd);
	EL_CHECK(rd.snapshot == NULL);
	EL_CHECK(!rd.restore);
	EL_CHECK(rd.n_msgs == 1 && rd.msgs[0].type == EL_MSG_SNAPSHOT_RESP);
	EL_CHECK(rd.msgs[0].flags & EL_MSG_REJECT);
	el_raft_advance(r, &rd, now);
	chunk[0] = 1;
	EL_CHECK_EQ(el_raft_step(r, &m, now), 0);
	EL_CHECK_EQ(el_raft_snapshot(r)->index, 40);
}

/* 2, in the node: a snapshot whose lock table has applied past the
 * snapshot's own index is refused before it replaces anything. */
static struct el_node N;
static struct el_lock_table T;
static uint8_t table_bytes[EL_SNAPSHOT_MAX];

static void test_node_refuses_snapshot_table_ahead_of_index(void)
{
	el_lock_init(&T);
	T.last_index = 50;
	int len = el_lock_snapshot(&T, table_bytes, sizeof(table_bytes));
	EL_CHECK(len > 0 && len <= EL_SNAPSHOT_CHUNK);
	EL_CHECK_EQ(el_lock_snapshot_check(table_bytes, (uint32_t)len, 50), 0);
	EL_CHECK_EQ(el_lock_snapshot_check(table_bytes, (uint32_t)len, 49), EL_EINVAL);
	EL_CHECK(el_lock_snapshot_check(table_bytes, (uint32_t)len - 1, 50) < 0);
	struct el_node_config cfg = { .raft = { 2, ELECTION_MS, HEARTBEAT_MS, true, true } };
	struct el_conf conf = voters(3);
	now = 100;
	EL_CHECK_EQ(el_node_init(&N, &cfg, 9), 0);
	EL_CHECK_EQ(el_raft_bootstrap(el_node_raft(&N), &conf), 0);
	el_node_start(&N, now);
	while (el_node_has_ready(&N)) {
		struct el_node_ready first;
		el_node_ready(&N, &first);
		EL_CHECK_EQ(el_node_advance(&N, &first, now), 0);
	}
	struct el_msg m = { .type = EL_MSG_SNAPSHOT, .from = 1, .to = 2, .term = 1 };
	m.index = 10;
	m.log_term = 1;
	m.conf = conf;
	m.total = m.data_len = (uint32_t)len;
	m.data = table_bytes;
	EL_CHECK(el_node_step(&N, &m, now) < 0);
	EL_CHECK_EQ(el_raft_snapshot(el_node_raft(&N))->index, 0);
	EL_CHECK_EQ(el_raft_commit(el_node_raft(&N)), 0);
	m.index = 50; /* the same bytes as the state at their own index */
	EL_CHECK_EQ(el_node_step(&N, &m, now), 0);
	EL_CHECK_EQ(el_raft_snapshot(el_node_raft(&N))->index, 50);
	struct el_node_ready rd;
	el_node_ready(&N, &rd);
	EL_CHECK(rd.raft.restore);
	EL_CHECK_EQ(el_node_advance(&N, &rd, now), 0);
	EL_CHECK_EQ(el_node_table(&N)->last_index, 50);
}

void el_suite_hostile(void)
{
	EL_RUN(test_refuses_bad_header);
	EL_RUN(test_refuses_bad_entries);
	EL_RUN(test_refuses_bad_snapshot_fields);
	EL_RUN(test_refuses_append_overwriting_commit);
	EL_RUN(test_term_bound);
	EL_RUN(test_index_bound);
	EL_RUN(test_refuses_entries_of_term_zero);
	EL_RUN(test_refuses_second_leader_in_term);
	EL_RUN(test_snapshot_validator_refusal_installs_nothing);
	EL_RUN(test_node_refuses_snapshot_table_ahead_of_index);
}
