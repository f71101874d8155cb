/*
 * test_cluster.c - three edgelock nodes on the Cortex-M, over the in-memory
 * network of the firmware example, on a virtual clock (deterministic). They
 * elect one leader, commit lock commands through log compaction, grant locks
 * with fencing tokens that rise across a leader change, expire a silent
 * session by the leader's clock, survive power loss of one node and of all
 * of them, bring a lagging or diverged node back by snapshot, and a node
 * whose storage fails stops instead of acknowledging.
 *
 * After every step the invariants are checked: at most one leader per term,
 * commit never moves back on a running node, a drained node has persisted
 * its term; every few steps, two nodes that applied up to the same index
 * must hold byte-identical lock tables. A violation fails the running test.
 */
#include <stdio.h>
#include <string.h>

#include "el_error.h"
#include "el_fw_cluster.h"
#include "el_lock.h"
#include "el_test.h"

#define N EL_FW_NODES
#define TERMS_TRACKED 64
#define TABLE_CHECK_EVERY_MS 25u

static struct el_fw_cluster c;
static uint64_t now_ms;
static uint64_t next_req;
static uint64_t last_commit[N];
static el_id_t leader_of_term[TERMS_TRACKED];
static const char *violation;
static uint8_t table_a[EL_SNAPSHOT_MAX], table_b[EL_SNAPSHOT_MAX];

static struct el_raft *raft_of(int i) { return el_node_raft(&c.node[i].node); }
static bool running(int i) { return c.node[i].up && c.node[i].stop_error == 0; }

/* ---- invariants ---------------------------------------------------------- */

/* Record the first violation, and say where it happened. */
static void violated(const char *what, int node)
{
	if (violation == NULL)
		printf("  invariant broken at t=%llu ms on node %d: %s\n", (unsigned long long)now_ms,
		       node + 1, what);
	violation = what;
}

static void check_one_leader_per_term(int i)
{
	uint64_t term = el_raft_term(raft_of(i));
	if (el_raft_state(raft_of(i)) != EL_LEADER || term >= TERMS_TRACKED)
		return;
	if (leader_of_term[term] == 0)
		leader_of_term[term] = c.node[i].id;
	else if (leader_of_term[term] != c.node[i].id)
		violated("two leaders in one term", i);
}

static void check_node(int i)
{
	const struct el_fw_node *n = &c.node[i];
	check_one_leader_per_term(i);
	if (el_raft_commit(raft_of(i)) < last_commit[i])
		violated("commit moved back", i);
	last_commit[i] = el_raft_commit(raft_of(i));
	uint64_t durable_term = n->store.has_hard_state ? n->store.hs.term : 0;
	if (!el_node_has_ready(&n->node) && durable_term != el_raft_term(raft_of(i)))
		violated("term not persisted after the batch", i);
}

/* Nodes that applied the same entries hold the same table, byte for byte
 * (the snapshot encoding is deterministic). */
static void check_tables_agree(void)
{
	for (int i = 0; i < N; i++) {
		for (int j = i + 1; j < N; j++) {
			if (!running(i) || !running(j) ||
			    el_raft_applied(raft_of(i)) != el_raft_applied(raft_of(j)))
				continue;
			int la = el_lock_snapshot(el_node_table(&c.node[i].node), table_a, sizeof table_a);
			int lb = el_lock_snapshot(el_node_table(&c.node[j].node), table_b, sizeof table_b);
			if (la < 0 || la != lb || memcmp(table_a, table_b, (size_t)la) != 0)
				violated("two lock tables at one applied index", j);
		}
	}
}

/* Advance virtual time by ms, one millisecond per round. */
static void run(uint32_t ms)
{
	for (uint32_t t = 0; t < ms; t++) {
		now_ms++;
		el_fw_cluster_step(&c, now_ms);
		for (int i = 0; i < N; i++)
			if (running(i))
				check_node(i);
		if (now_ms % TABLE_CHECK_EVERY_MS == 0)
			check_tables_agree();
	}
}

static void fresh_cluster(uint64_t seed)
{
	memset(last_commit, 0, sizeof last_commit);
	memset(leader_of_term, 0, sizeof leader_of_term);
	violation = NULL;
	now_ms = 1000;
	el_fw_cluster_init(&c, seed, now_ms);
}

static int power_on(int i)
{
	last_commit[i] = 0; /* a restarted node knows the commit it persisted */
	return el_fw_cluster_power_on(&c, i, now_ms);
}

/* Run until a leader exists (at most max_ms); its slot or -1. */
static int wait_leader(uint32_t max_ms)
{
	for (uint32_t t = 0; t < max_ms && el_fw_cluster_leader(&c) < 0; t++)
		run(1);
	return el_fw_cluster_leader(&c);
}

/* Every running node applied up to index and holds the same table. */
static bool converged(uint64_t index)
{
	for (int t = 0; t < 3000; t++) {
		bool all = true;
		for (int i = 0; i < N; i++)
			if (running(i) && (el_raft_applied(raft_of(i)) < index ||
					   el_raft_applied(raft_of(i)) != el_raft_applied(raft_of(0))))
				all = false;
		if (all) {
			check_tables_agree();
			return violation == NULL;
		}
		run(1);
	}
	return false;
}

/* ---- a client ------------------------------------------------------------ */

/* Submit cmd at whichever node leads, retrying (same seq) while there is
 * none or it lost leadership; the answer, or err EL_ETIMEDOUT. */
static struct el_node_reply request(const struct el_lock_cmd *cmd)
{
	for (int attempt = 0; attempt < 20; attempt++) {
		uint64_t req = ++next_req;
		if (el_fw_cluster_submit(&c, req, cmd) != EL_OK) {
			run(50);
			continue;
		}
		for (int t = 0; t < 2000; t++) {
			const struct el_node_reply *r = el_fw_cluster_reply(&c, req);
			if (r != NULL && r->err != EL_ENOTLEADER)
				return *r;
			if (r != NULL)
				break;
			run(1);
		}
	}
	return (struct el_node_reply){ .err = EL_ETIMEDOUT };
}

static uint64_t open_session(uint32_t ttl_ms)
{
	struct el_lock_cmd cmd = { .type = EL_CMD_OPEN_SESSION, .ttl_ms = ttl_ms };
	struct el_node_reply r = request(&cmd);
	return r.err == EL_OK ? r.session : 0;
}

static struct el_node_reply door(uint8_t type, uint64_t session, uint64_t seq, uint32_t wait_ms,
				 uint64_t token)
{
	struct el_lock_cmd cmd = { .type = type, .session = session, .seq = seq, .token = token };
	cmd.wait_ms = wait_ms;
	cmd.name_len = 4;
	memcpy(cmd.name, "door", 4);
	return request(&cmd);
}

/* The door's holder as node i sees it (token of its single holder, or 0). */
static uint64_t door_token_on(int i, uint64_t *session)
{
	static struct el_lock_query q;
	*session = 0;
	if (el_node_query(&c.node[i].node, "door", 4, &q) != EL_OK || q.n_holders != 1)
		return 0;
	*session = q.holders[0].session;
	return q.holders[0].token;
}

/* k acquire/release rounds by session s from seq on; the next seq, 0 on error. */
static uint64_t churn(uint64_t s, uint64_t seq, int k)
{
	for (int i = 0; i < k; i++) {
		struct el_node_reply r = door(EL_CMD_ACQUIRE, s, seq++, 0, 0);
		if (r.err != EL_OK || door(EL_CMD_RELEASE, s, seq++, 0, r.token).err != EL_OK)
			return 0;
	}
	return seq;
}

/* ---- tests --------------------------------------------------------------- */

static void test_elects_one_stable_leader(void)
{
	fresh_cluster(1);
	int l = wait_leader(2000);
	EL_CHECK(l >= 0);
	uint64_t term = el_raft_term(raft_of(l));
	run(3000); /* heartbeats keep it: no new election */
	EL_CHECK_EQ(el_fw_cluster_leader(&c), l);
	EL_CHECK_EQ(el_raft_term(raft_of(l)), term);
	for (int i = 0; i < N; i++)
		EL_CHECK_EQ(el_raft_leader(raft_of(i)), c.node[l].id);
	EL_CHECK(violation == NULL);
}

static void test_commits_through_compaction(void)
{
	fresh_cluster(2);
	EL_CHECK(wait_leader(2000) >= 0);
	uint64_t s = open_session(600000);
	EL_CHECK(s != 0);
	EL_CHECK(churn(s, 1, 2 * EL_LOG_WINDOW) != 0);
	int l = el_fw_cluster_leader(&c);
	EL_CHECK(converged(el_raft_applied(raft_of(l))));
	for (int i = 0; i < N; i++) {
		EL_CHECK(el_raft_snapshot(raft_of(i))->index > 0); /* compacted */
		EL_CHECK(c.node[i].store.last - c.node[i].store.first + 1u <= EL_LOG_WINDOW);
	}
	EL_CHECK(violation == NULL);
}

static void test_fencing_across_leader_change(void)
{
	fresh_cluster(3);
	EL_CHECK(wait_leader(2000) >= 0);
	uint64_t a = open_session(600000), b = open_session(600000);
	EL_CHECK(a != 0 && b != 0 && a != b);
	struct el_node_reply r = door(EL_CMD_ACQUIRE, a, 1, 0, 0);
	EL_CHECK_EQ(r.err, EL_OK);
	uint64_t token_a = r.token;
	EL_CHECK_EQ(token_a, r.index); /* the token is the granting entry's index */
	EL_CHECK_EQ(door(EL_CMD_ACQUIRE, b, 1, 0, 0).err, EL_EBUSY); /* try-lock while held */
	r = door(EL_CMD_ACQUIRE, b, 2, EL_WAIT_FOREVER, 0);
	EL_CHECK(r.err == EL_OK && r.queued);

	/* the leader loses power; the others elect a new one in a later term */
	int old = el_fw_cluster_leader(&c);
	uint64_t old_term = el_raft_term(raft_of(old));
	el_fw_cluster_power_off(&c, old);
	int l = wait_leader(3000);
	EL_CHECK(l >= 0 && l != old);
	EL_CHECK(el_raft_term(raft_of(l)) > old_term);

	/* a releases: b, queued, is granted with a higher token */
	EL_CHECK_EQ(door(EL_CMD_RELEASE, a, 2, 0, token_a).err, EL_OK);
	run(10);
	const struct el_lock_event *g = el_fw_cluster_grant(&c, b);
	EL_CHECK(g != NULL);
	uint64_t token_b = g->token;
	EL_CHECK(token_b > token_a);
	EL_CHECK(door(EL_CMD_RELEASE, a, 3, 0, token_a).err != EL_OK); /* stale token */

	/* the old leader returns and agrees on holder and token */
	EL_CHECK_EQ(power_on(old), EL_OK);
	EL_CHECK(converged(el_raft_applied(raft_of(l))));
	for (int i = 0; i < N; i++) {
		uint64_t holder;
		EL_CHECK_EQ(door_token_on(i, &holder), token_b);
		EL_CHECK_EQ(holder, b);
	}
	EL_CHECK(violation == NULL);
}

/* The hand-over above, under SEEDS different election timings; the first
 * failing seed is printed so it can be replayed. */
#define SEEDS 24
static bool hand_over_with_seed(uint64_t seed)
{
	fresh_cluster(seed);
	if (wait_leader(3000) < 0)
		return false;
	uint64_t a = open_session(600000), b = open_session(600000);
	struct el_node_reply r = door(EL_CMD_ACQUIRE, a, 1, 0, 0);
	if (a == 0 || b == 0 || r.err != EL_OK)
		return false;
	if (door(EL_CMD_ACQUIRE, b, 1, EL_WAIT_FOREVER, 0).err != EL_OK)
		return false;
	int old = el_fw_cluster_leader(&c);
	el_fw_cluster_power_off(&c, old);
	if (wait_leader(3000) < 0 || door(EL_CMD_RELEASE, a, 2, 0, r.token).err != EL_OK)
		return false;
	run(10);
	const struct el_lock_event *g = el_fw_cluster_grant(&c, b);
	if (g == NULL || g->token <= r.token || power_on(old) != EL_OK)
		return false;
	return converged(el_raft_applied(raft_of(el_fw_cluster_leader(&c)))) && violation == NULL;
}

static void test_hand_over_many_seeds(void)
{
	for (uint64_t seed = 100; seed < 100 + SEEDS; seed++) {
		bool ok = hand_over_with_seed(seed);
		if (!ok)
			printf("  seed %llu failed\n", (unsigned long long)seed);
		EL_CHECK(ok);
	}
}

static void test_silent_session_expires_by_leader_clock(void)
{
	fresh_cluster(4);
	EL_CHECK(wait_leader(2000) >= 0);
	uint64_t s = open_session(400); /* never kept alive */
	EL_CHECK(s != 0);
	EL_CHECK_EQ(door(EL_CMD_ACQUIRE, s, 1, 0, 0).err, EL_OK);
	uint64_t holder;
	EL_CHECK(door_token_on(el_fw_cluster_leader(&c), &holder) != 0);
	run(1000); /* past the lease: the leader proposes the expiry */
	int l = el_fw_cluster_leader(&c);
	EL_CHECK(converged(el_raft_applied(raft_of(l))));
	for (int i = 0; i < N; i++)
		EL_CHECK_EQ(door_token_on(i, &holder), 0);
	EL_CHECK(c.node[l].node.stats.expiries_proposed >= 1);
	EL_CHECK(violation == NULL);
}

static void test_all_nodes_lose_power(void)
{
	fresh_cluster(5);
	EL_CHECK(wait_leader(2000) >= 0);
	uint64_t a = open_session(600000);
	uint64_t seq = churn(a, 1, EL_LOG_WINDOW / 2); /* past a compaction */
	EL_CHECK(seq != 0);
	struct el_node_reply r = door(EL_CMD_ACQUIRE, a, seq, 0, 0);
	EL_CHECK_EQ(r.err, EL_OK);
	EL_CHECK(converged(el_raft_applied(raft_of(el_fw_cluster_leader(&c)))));
	for (int i = 0; i < N; i++)
		el_fw_cluster_power_off(&c, i);
	run(500);
	for (int i = 0; i < N; i++)
		EL_CHECK_EQ(power_on(i), EL_OK);
	int l = wait_leader(3000);
	EL_CHECK(l >= 0);
	EL_CHECK(converged(el_raft_commit(raft_of(l))));
	for (int i = 0; i < N; i++) {
		uint64_t holder;
		EL_CHECK_EQ(door_token_on(i, &holder), r.token);
		EL_CHECK_EQ(holder, a);
	}
	EL_CHECK_EQ(door(EL_CMD_RELEASE, a, seq + 1, 0, r.token).err, EL_OK);
	EL_CHECK(violation == NULL);
}

static void test_lagging_node_catches_up_by_snapshot(void)
{
	fresh_cluster(6);
	int l = wait_leader(2000);
	EL_CHECK(l >= 0);
	int lag = (l + 1) % N;
	c.node[lag].isolated = true;
	uint64_t s = open_session(600000);
	EL_CHECK(churn(s, 1, EL_LOG_WINDOW) != 0);
	/* the leader compacted past everything the lagging node has */
	l = el_fw_cluster_leader(&c);
	EL_CHECK(el_raft_snapshot(raft_of(l))->index > el_raft_last_index(raft_of(lag)));
	c.node[lag].isolated = false;
	EL_CHECK(converged(el_raft_applied(raft_of(l))));
	EL_CHECK(c.node[lag].store.has_snapshot && c.node[lag].store.snap.index > 0);
	EL_CHECK(c.node[lag].node.stats.restores >= 1);
	EL_CHECK(violation == NULL);
}

static int table_writer(void *ctx, uint8_t *buf, uint32_t cap)
{
	return el_lock_snapshot(el_node_table(ctx), buf, cap);
}

/* More than the new leader appends before it compacts (a no-op, a session,
 * one acquire and release), within EL_UNCOMMITTED_MAX. */
#define ORPHANS 8u
_Static_assert(ORPHANS <= EL_UNCOMMITTED_MAX, "orphans must fit what a leader lets stand uncommitted");

/* An old leader appends entries nobody else sees, loses its leadership, and
 * is brought back by a snapshot that replaces its whole log. Its store must
 * not keep the orphaned entries: after a power cycle it has to load cleanly
 * and agree with the others. */
static void test_diverged_node_restarts_after_snapshot(void)
{
	fresh_cluster(7);
	int old = wait_leader(2000);
	EL_CHECK(old >= 0);
	run(100);
	c.node[old].isolated = true;
	/* orphans: appended and persisted, never committed (at most
	 * EL_UNCOMMITTED_MAX entries may stand uncommitted). EL_PENDING_MAX client requests in flight,
	 * and the rest proposed to the replica directly: the small config holds
	 * only 4 requests, fewer than the new leader's own entries below, and
	 * the snapshot must end inside the orphaned tail. */
	el_id_t hint;
	struct el_lock_cmd cmd = { .type = EL_CMD_OPEN_SESSION, .ttl_ms = 1000 };
	for (uint64_t k = 0; k < EL_PENDING_MAX; k++)
		EL_CHECK_EQ(el_node_submit(&c.node[old].node, 9000 + k, &cmd, now_ms, &hint), EL_OK);
	uint8_t data[EL_ENTRY_DATA_MAX];
	int len = el_lock_cmd_encode(&cmd, data, sizeof data);
	EL_CHECK(len > 0);
	for (uint64_t k = EL_PENDING_MAX; k < ORPHANS; k++) {
		uint64_t index, term;
		EL_CHECK_EQ(el_raft_propose(raft_of(old), data, (uint16_t)len, now_ms, &index, &term),
			    EL_OK);
	}
	run(1500);
	uint64_t orphan_end = el_raft_last_index(raft_of(old));
	EL_CHECK(c.node[old].store.last == orphan_end); /* the orphans are on its "disk" */
	uint64_t s = open_session(600000);
	EL_CHECK(s != 0);
	EL_CHECK(churn(s, 1, 1) != 0);
	/* the new leader compacts below the orphans' end, so the old leader gets
	 * a snapshot that ends inside its orphaned tail */
	int l = el_fw_cluster_leader(&c);
	EL_CHECK(l >= 0 && l != old && !el_node_has_ready(&c.node[l].node));
	EL_CHECK_EQ(el_raft_compact(raft_of(l), el_raft_applied(raft_of(l)), table_writer,
				    &c.node[l].node), EL_OK);
	run(1);
	EL_CHECK(el_raft_snapshot(raft_of(l))->index < orphan_end);
	c.node[old].isolated = false;
	EL_CHECK(converged(el_raft_applied(raft_of(l))));
	EL_CHECK(c.node[old].store.snap.index > 0); /* it took the snapshot */
	el_fw_cluster_power_off(&c, old);
	EL_CHECK_EQ(power_on(old), EL_OK);
	EL_CHECK(churn(s, 3, 1) != 0);
	EL_CHECK(converged(el_raft_applied(raft_of(el_fw_cluster_leader(&c)))));
	EL_CHECK(violation == NULL);
}

static void test_failed_storage_stops_the_node(void)
{
	fresh_cluster(8);
	int l = wait_leader(2000);
	EL_CHECK(l >= 0);
	int bad = (l + 1) % N;
	uint64_t s = open_session(600000);
	EL_CHECK(s != 0);
	c.node[bad].store.fail_next_persist = EL_EIO;
	EL_CHECK(churn(s, 1, 5) != 0);
	EL_CHECK_EQ(c.node[bad].stop_error, EL_EIO);
	/* it acknowledged nothing it did not keep, and the two healthy nodes
	 * carry on (the follower learns the commit on the next heartbeat) */
	run(200);
	l = el_fw_cluster_leader(&c);
	uint64_t last = el_raft_last_index(raft_of(l));
	EL_CHECK(c.node[bad].store.last < last);
	for (int i = 0; i < N; i++)
		if (i != bad)
			EL_CHECK_EQ(el_raft_applied(raft_of(i)), last);
	EL_CHECK(violation == NULL);
}

static void test_isolated_leader_steps_down(void)
{
	fresh_cluster(9);
	int old = wait_leader(2000);
	EL_CHECK(old >= 0);
	uint64_t term = el_raft_term(raft_of(old));
	c.node[old].isolated = true;
	run(1500); /* several election timeouts */
	int l = el_fw_cluster_leader(&c);
	EL_CHECK(l >= 0 && l != old);
	EL_CHECK(el_raft_term(raft_of(l)) > term);
	EL_CHECK(el_raft_state(raft_of(old)) != EL_LEADER); /* CheckQuorum */
	c.node[old].isolated = false;
	EL_CHECK(open_session(600000) != 0);
	EL_CHECK(converged(el_raft_applied(raft_of(l))));
	EL_CHECK(violation == NULL);
}

void el_suite_cluster(void)
{
	EL_RUN(test_elects_one_stable_leader);
	EL_RUN(test_commits_through_compaction);
	EL_RUN(test_fencing_across_leader_change);
	EL_RUN(test_hand_over_many_seeds);
	EL_RUN(test_silent_session_expires_by_leader_clock);
	EL_RUN(test_all_nodes_lose_power);
	EL_RUN(test_lagging_node_catches_up_by_snapshot);
	EL_RUN(test_diverged_node_restarts_after_snapshot);
	EL_RUN(test_failed_storage_stops_the_node);
	EL_RUN(test_isolated_leader_steps_down);
}
