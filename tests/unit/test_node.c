/*
 * test_node.c - unit tests of the node (el_node.h): a single-node cluster and
 * a three-node cluster driven by hand with a virtual clock. Messages are
 * delivered synchronously while the sender is between ready and advance
 * (when its batch pointers are valid); a cut node neither sends nor hears.
 * Nothing is persisted: these tests are about the node, not storage.
 *
 * Nodes are large (the Raft log window and two snapshot buffers); they are
 * static, never on the stack.
 */
#include <stddef.h>
#include <string.h>

#include "el_error.h"
#include "el_node.h"
#include "el_node_internal.h" /* el_node__timers_next: white-box checks */
#include "el_test.h"

/* The replicated records of two tables are the same bytes: everything but
 * each replica's own hash key and the layout of its index buckets. */
static bool same_records(const struct el_lock_table *a, const struct el_lock_table *b)
{
	const size_t from = offsetof(struct el_lock_table, sessions);
	const size_t to = offsetof(struct el_lock_table, opens) + sizeof(a->opens);
	return a->last_index == b->last_index &&
	       memcmp((const char *)a + from, (const char *)b + from, to - from) == 0;
}

#define NODES 3
#define ELECTION_MS 100
#define HEARTBEAT_MS 20
#define STEP_MS 5

static struct el_node N[NODES];
static int n_nodes;
static bool cut[NODES];
static uint64_t clock_ms;

/* Everything the nodes handed out, in order. */
#define LOG_MAX 256
static struct el_node_reply replies[LOG_MAX];
static int n_replies;
static struct el_lock_event events[LOG_MAX];
static uint64_t event_ms[LOG_MAX];
static int n_events;
static struct el_lock_query Q;

static void deliver(int from, const struct el_node_ready *rd)
{
	for (uint32_t i = 0; i < rd->raft.n_msgs; i++) {
		const struct el_msg *m = &rd->raft.msgs[i];
		const int to = (int)m->to - 1;
		if (to < 0 || to >= n_nodes || to == from || cut[from] || cut[to])
			continue;
		el_node_step(&N[to], m, clock_ms);
	}
}

static void record(const struct el_node_ready *rd)
{
	for (uint32_t i = 0; i < rd->n_replies; i++) /* a ring: the latest LOG_MAX */
		replies[n_replies++ % LOG_MAX] = rd->replies[i];
	for (uint32_t i = 0; i < rd->n_events && n_events < LOG_MAX; i++) {
		event_ms[n_events] = clock_ms;
		events[n_events++] = rd->events[i];
	}
}

/* Drain every node until none has anything ready. */
static void drain_all(void)
{
	for (int round = 0; round < 64; round++) {
		bool any = false;
		for (int i = 0; i < n_nodes; i++) {
			if (!el_node_has_ready(&N[i]))
				continue;
			any = true;
			struct el_node_ready rd;
			el_node_ready(&N[i], &rd);
			deliver(i, &rd);
			record(&rd);
			el_node_advance(&N[i], &rd, clock_ms);
		}
		if (!any)
			return;
	}
}

static void run(uint64_t ms)
{
	const uint64_t end = clock_ms + ms;
	while (clock_ms < end) {
		clock_ms += STEP_MS;
		for (int i = 0; i < n_nodes; i++)
			if (clock_ms >= el_node_deadline(&N[i]))
				el_node_tick(&N[i], clock_ms);
		drain_all();
	}
}

static void setup(int nodes)
{
	struct el_conf conf = {.n = (uint8_t)nodes};
	n_nodes = nodes;
	clock_ms = 1000;
	n_replies = n_events = 0;
	for (int i = 0; i < nodes; i++) {
		conf.m[i].id = (el_id_t)(i + 1);
		conf.m[i].role = EL_MEMBER_VOTER;
		cut[i] = false;
	}
	for (int i = 0; i < nodes; i++) {
		struct el_node_config cfg = {.raft = {.id = (el_id_t)(i + 1),
						      .election_ms_min = ELECTION_MS,
						      .heartbeat_ms = HEARTBEAT_MS,
						      .prevote = true,
						      .check_quorum = true}};
		el_node_init(&N[i], &cfg, 42 + (uint64_t)i);
		el_raft_bootstrap(el_node_raft(&N[i]), &conf);
		el_node_start(&N[i], clock_ms);
	}
}

static int leader(void)
{
	for (int i = 0; i < n_nodes; i++)
		if (!cut[i] && el_raft_state(&N[i].raft) == EL_LEADER)
			return i;
	return -1;
}

static int run_until_leader(void)
{
	for (int i = 0; i < 200 && leader() < 0; i++)
		run(STEP_MS * 4);
	run(50); /* let the leader commit its no-op */
	return leader();
}

/* The reply for req_id, or NULL. */
static const struct el_node_reply *reply_for(uint64_t req_id)
{
	for (int i = n_replies - 1; i >= 0 && i >= n_replies - LOG_MAX; i--)
		if (replies[i % LOG_MAX].req_id == req_id)
			return &replies[i % LOG_MAX];
	return NULL;
}

static int find_event(uint8_t kind, uint64_t session)
{
	for (int i = 0; i < n_events; i++)
		if (events[i].kind == kind && events[i].session == session)
			return i;
	return -1;
}

static uint64_t req_seq = 1000;

/* Submit on node i and run until the reply arrives; NULL on timeout. */
static const struct el_node_reply *call(int i, struct el_lock_cmd *c)
{
	el_id_t hint = 0;
	const uint64_t id = ++req_seq;
	if (el_node_submit(&N[i], id, c, clock_ms, &hint) != EL_OK)
		return NULL;
	for (int k = 0; k < 100 && reply_for(id) == NULL; k++)
		run(STEP_MS);
	return reply_for(id);
}

static uint64_t open_session(int i, uint32_t ttl_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = ttl_ms, .client_len = 3};
	memcpy(c.client, "dev", 3);
	const struct el_node_reply *r = call(i, &c);
	return r != NULL && r->err == EL_OK ? r->session : 0;
}

static const struct el_node_reply *acquire(int i, uint64_t s, uint64_t seq, uint32_t wait_ms,
					   uint32_t delay_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = seq,
				.wait_ms = wait_ms, .delay_ms = delay_ms, .name_len = 4};
	memcpy(c.name, "pump", 4);
	return call(i, &c);
}

static const struct el_node_reply *keepalive(int i, uint64_t s)
{
	struct el_lock_cmd c = {.type = EL_CMD_KEEPALIVE, .session = s};
	return call(i, &c);
}

/* ---- Single node ------------------------------------------------------- */

static void test_node_single_basics(void)
{
	setup(1);
	const int l = run_until_leader();
	EL_CHECK_EQ(l, 0);
	const uint64_t s = open_session(0, 5000);
	EL_CHECK(s != 0);
	const struct el_node_reply *r = acquire(0, s, 1, 0, 0);
	EL_CHECK(r != NULL);
	EL_CHECK_EQ(r->err, EL_OK);
	EL_CHECK_EQ(r->token, r->index); /* the fencing token is the entry index */
	const uint64_t token = r->token;
	/* a linearizable read, then the query */
	el_id_t hint = 0;
	EL_CHECK_EQ(el_node_read(&N[0], 77, clock_ms, &hint), EL_OK);
	for (int k = 0; k < 20 && reply_for(77) == NULL; k++)
		run(STEP_MS);
	EL_CHECK(reply_for(77) != NULL);
	EL_CHECK_EQ(reply_for(77)->kind, EL_REPLY_READ);
	EL_CHECK_EQ(el_node_query(&N[0], "pump", 4, &Q), EL_OK);
	EL_CHECK_EQ(Q.holders[0].session, s);
	EL_CHECK_EQ(Q.holders[0].token, token);
	uint64_t left = 0;
	EL_CHECK_EQ(el_node_lease_left(&N[0], s, clock_ms, &left), EL_OK);
	EL_CHECK(left > 4000 && left <= 5000);
	EL_CHECK_EQ(el_node_lease_left(&N[0], 12345, clock_ms, &left), EL_ENOTFOUND);
}

static void test_node_submit_rejects(void)
{
	setup(1);
	el_id_t hint = 0;
	struct el_lock_cmd open = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 100};
	EL_CHECK_EQ(el_node_submit(&N[0], 1, &open, clock_ms, &hint), EL_ENOTLEADER);
	EL_CHECK_EQ(run_until_leader(), 0);
	struct el_lock_cmd expire = {.type = EL_CMD_EXPIRE_SESSION, .session = 1, .token = 1};
	EL_CHECK_EQ(el_node_submit(&N[0], 2, &expire, clock_ms, &hint), EL_EINVAL);
	struct el_lock_cmd bad = {.type = EL_CMD_ACQUIRE, .session = 1}; /* no seq, no name */
	EL_CHECK_EQ(el_node_submit(&N[0], 3, &bad, clock_ms, &hint), EL_EINVAL);
	int accepted = 0;
	for (int i = 0; i < EL_PENDING_MAX + 1; i++) {
		const int err = el_node_submit(&N[0], 10 + (uint64_t)i, &open, clock_ms, &hint);
		if (err == EL_OK)
			accepted++;
		else
			EL_CHECK_EQ(err, EL_EFULL);
	}
	EL_CHECK(accepted <= EL_PENDING_MAX);
	run(50);
	EL_CHECK(reply_for(10) != NULL);
	EL_CHECK_EQ(reply_for(10)->err, EL_OK);
}

static void test_node_expiry_and_lock_delay(void)
{
	setup(1);
	EL_CHECK_EQ(run_until_leader(), 0);
	const uint64_t a = open_session(0, 1000), b = open_session(0, 60000);
	EL_CHECK(a != 0 && b != 0);
	EL_CHECK_EQ(acquire(0, a, 1, 0, 400)->err, EL_OK);
	const struct el_node_reply *rb = acquire(0, b, 1, EL_WAIT_FOREVER, 0);
	EL_CHECK(rb != NULL && rb->queued);
	/* keepalives hold the lease */
	for (int i = 0; i < 4; i++) {
		run(700);
		EL_CHECK(keepalive(0, a) != NULL);
		EL_CHECK_EQ(reply_for(req_seq)->err, EL_OK);
	}
	EL_CHECK_EQ(find_event(EL_EV_GRANTED, b), -1);
	/* silence: expiry after the TTL, then the lock-delay, then b */
	const uint64_t silent_from = clock_ms;
	run(1500);
	EL_CHECK_EQ(el_lock_session_slot(el_node_table(&N[0]), a), EL_LOCK_NONE);
	EL_CHECK_EQ(N[0].stats.expiries_proposed, 1);
	const int g = find_event(EL_EV_GRANTED, b);
	EL_CHECK(g >= 0);
	EL_CHECK(event_ms[g] >= silent_from + 1000 + 400);
	EL_CHECK(event_ms[g] <= silent_from + 1000 + 400 + 100);
	EL_CHECK_EQ(N[0].stats.delay_ends_proposed, 1);
	/* a keepalive for the expired session fails */
	EL_CHECK_EQ(keepalive(0, a)->err, EL_EEXPIRED);
}

/* Many leases armed in scrambled order (the leader's timer heap): each
 * session ends once its own deadline passes and not before, and the node
 * never asks to be woken later than the earliest deadline still armed. */
static void test_node_leases_end_in_deadline_order(void)
{
	enum { SESSIONS = 12 };
	uint64_t ids[SESSIONS], deadline[SESSIONS];
	setup(1);
	EL_CHECK_EQ(run_until_leader(), 0);
	for (uint32_t i = 0; i < SESSIONS; i++) {
		ids[i] = open_session(0, 600 + ((i * 7) % SESSIONS) * 50); /* 600..1150 ms */
		uint64_t left = 0;
		EL_CHECK(ids[i] != 0);
		EL_CHECK_EQ(el_node_lease_left(&N[0], ids[i], clock_ms, &left), EL_OK);
		deadline[i] = clock_ms + left;
	}
	for (int step = 0; step < 400; step++) {
		uint64_t earliest = UINT64_MAX;
		for (uint32_t i = 0; i < SESSIONS; i++) {
			const bool alive = el_lock_session_slot(el_node_table(&N[0]), ids[i]) != EL_LOCK_NONE;
			if (deadline[i] > clock_ms)
				EL_CHECK(alive); /* never before its deadline */
			if (deadline[i] + 4 * HEARTBEAT_MS < clock_ms)
				EL_CHECK(!alive); /* and soon after it */
			if (alive && deadline[i] > clock_ms && deadline[i] < earliest)
				earliest = deadline[i];
		}
		EL_CHECK(el_node_deadline(&N[0]) <= earliest);
		run(STEP_MS);
	}
	EL_CHECK_EQ(N[0].stats.expiries_proposed, (uint64_t)SESSIONS);
}

static void test_node_wait_timeout(void)
{
	setup(1);
	EL_CHECK_EQ(run_until_leader(), 0);
	const uint64_t a = open_session(0, 60000), b = open_session(0, 60000);
	EL_CHECK_EQ(acquire(0, a, 1, 0, 0)->err, EL_OK);
	const uint64_t asked = clock_ms;
	EL_CHECK(acquire(0, b, 1, 300, 0)->queued);
	run(500);
	const int t = find_event(EL_EV_WAIT_TIMEOUT, b);
	EL_CHECK(t >= 0);
	EL_CHECK(event_ms[t] >= asked + 300);
	EL_CHECK_EQ(acquire(0, b, 1, 300, 0)->err, EL_ETIMEDOUT); /* the retry learns it */
}

static void test_node_compaction(void)
{
	setup(1);
	EL_CHECK_EQ(run_until_leader(), 0);
	const uint64_t s = open_session(0, 60000);
	for (int i = 0; i < EL_COMPACT_THRESHOLD + 10; i++)
		EL_CHECK(keepalive(0, s) != NULL);
	run(100);
	EL_CHECK(N[0].stats.compactions >= 1);
	const struct el_snapshot_meta *m = el_raft_snapshot(&N[0].raft);
	EL_CHECK(m->index > 0 && m->len > 0);
	/* the snapshot is the lock table */
	struct el_lock_table *t = &N[1].table; /* scratch: N[1] is unused here */
	el_lock_init(t);
	EL_CHECK_EQ(el_lock_restore(t, el_raft_snapshot_data(&N[0].raft), m->len), EL_OK);
	EL_CHECK(el_lock_session_slot(t, s) != EL_LOCK_NONE);
}

static void test_node_restart_restores_table(void)
{
	setup(1);
	EL_CHECK_EQ(run_until_leader(), 0);
	const uint64_t s = open_session(0, 60000);
	EL_CHECK_EQ(acquire(0, s, 1, 0, 0)->err, EL_OK);
	for (int i = 0; i < EL_COMPACT_THRESHOLD + 5; i++)
		EL_CHECK(keepalive(0, s) != NULL);
	EL_CHECK(N[0].stats.compactions >= 1);
	/* what storage would hold: the snapshot, the entries above it, the hard state */
	const struct el_raft *r = &N[0].raft;
	struct el_node_config cfg = {.raft = {.id = 1, .election_ms_min = ELECTION_MS,
					      .heartbeat_ms = HEARTBEAT_MS, .prevote = true,
					      .check_quorum = true}};
	struct el_node *b = &N[1];
	EL_CHECK_EQ(el_node_init(b, &cfg, 7), EL_OK);
	EL_CHECK_EQ(el_raft_load_snapshot(el_node_raft(b), el_raft_snapshot(r), el_raft_snapshot_data(r)),
		    EL_OK);
	for (uint64_t i = el_raft_snapshot(r)->index + 1; i <= el_raft_last_index(r); i++)
		EL_CHECK_EQ(el_raft_load_entry(el_node_raft(b), el_raft_entry(r, i)), EL_OK);
	const struct el_hard_state hs = {.term = el_raft_term(r), .vote = 1, .commit = el_raft_commit(r)};
	EL_CHECK_EQ(el_raft_load_hard_state(el_node_raft(b), &hs), EL_OK);
	el_node_start(b, clock_ms);
	for (int k = 0; k < 8 && el_node_has_ready(b); k++) {
		struct el_node_ready rd;
		el_node_ready(b, &rd);
		EL_CHECK_EQ(el_node_advance(b, &rd, clock_ms), EL_OK);
	}
	EL_CHECK_EQ(b->stats.restores, 1);
	EL_CHECK(same_records(&N[0].table, &b->table));
}

/* Lost quorum: two of three nodes gone for good. The survivor, loaded from
 * what its storage holds and forced into a one-voter configuration, elects
 * itself and keeps every lock and session it knew; the next token is higher
 * than every token given before. */
static void test_node_force_new_cluster(void)
{
	static struct el_entry entries[64];
	static uint8_t snap[4096];
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	const uint64_t s = open_session(l, 60000);
	const struct el_node_reply *held = acquire(l, s, 1, 0, 0);
	EL_CHECK(held != NULL && held->err == EL_OK);
	const uint64_t token = held->token;
	run(200); /* the followers apply it */
	const int f = (l + 1) % 3, dead = (l + 2) % 3;
	const struct el_raft *r = &N[f].raft;
	const struct el_snapshot_meta meta = *el_raft_snapshot(r);
	EL_CHECK(meta.len <= sizeof(snap));
	memcpy(snap, el_raft_snapshot_data(r), meta.len);
	const uint64_t first = meta.index + 1, last = el_raft_last_index(r);
	EL_CHECK(last - meta.index <= 64);
	for (uint64_t i = first; i <= last; i++)
		entries[i - first] = *el_raft_entry(r, i);
	const struct el_hard_state hs = {.term = el_raft_term(r), .vote = r->vote,
					 .commit = el_raft_commit(r)};
	/* every node dies; the survivor restarts (in slot l) as node f + 1 */
	cut[l] = cut[f] = cut[dead] = true;
	struct el_node_config cfg = {.raft = {.id = (el_id_t)(f + 1), .election_ms_min = ELECTION_MS,
					      .heartbeat_ms = HEARTBEAT_MS, .prevote = true,
					      .check_quorum = true}};
	struct el_node *v = &N[l];
	EL_CHECK_EQ(el_node_init(v, &cfg, 9), EL_OK);
	EL_CHECK_EQ(el_raft_load_snapshot(el_node_raft(v), &meta, snap), EL_OK);
	for (uint64_t i = first; i <= last; i++)
		EL_CHECK_EQ(el_raft_load_entry(el_node_raft(v), &entries[i - first]), EL_OK);
	EL_CHECK_EQ(el_raft_load_hard_state(el_node_raft(v), &hs), EL_OK);
	EL_CHECK_EQ(el_raft_conf(el_node_raft(v))->n, 3);
	EL_CHECK_EQ(el_raft_force_new_cluster(el_node_raft(v)), EL_OK);
	EL_CHECK_EQ(el_raft_conf(el_node_raft(v))->n, 1);
	EL_CHECK_EQ(el_raft_term(el_node_raft(v)), hs.term + 1);
	el_node_start(v, clock_ms);
	cut[l] = false;
	EL_CHECK_EQ(run_until_leader(), l);
	EL_CHECK(el_raft_commit(el_node_raft(v)) > last); /* everything it held, committed */
	/* the lock and the session are there; a new grant gets a higher token */
	EL_CHECK_EQ(el_node_query(v, "pump", 4, &Q), EL_OK);
	EL_CHECK_EQ(Q.n_holders, 1);
	EL_CHECK_EQ(Q.holders[0].token, token);
	EL_CHECK_EQ(Q.holders[0].session, s);
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = 2, .name_len = 5};
	memcpy(c.name, "valve", 5);
	const struct el_node_reply *next = call(l, &c);
	EL_CHECK(next != NULL && next->err == EL_OK);
	EL_CHECK(next->token > token);
	/* a node with no state (nothing loaded) is refused */
	cfg.raft.id = (el_id_t)(dead + 1);
	EL_CHECK_EQ(el_node_init(&N[dead], &cfg, 11), EL_OK);
	EL_CHECK_EQ(el_raft_force_new_cluster(el_node_raft(&N[dead])), EL_EINVAL);
}

static void test_node_corrupt_snapshot_stops(void)
{
	struct el_node_config cfg = {.raft = {.id = 1, .election_ms_min = ELECTION_MS,
					      .heartbeat_ms = HEARTBEAT_MS}};
	struct el_node *b = &N[0];
	EL_CHECK_EQ(el_node_init(b, &cfg, 7), EL_OK);
	static const uint8_t junk[] = {0x85, 0x01, 0x05, 0x80, 0x80, 0x81};
	struct el_snapshot_meta meta = {.index = 5, .term = 1, .len = sizeof(junk)};
	meta.conf.n = 1;
	meta.conf.m[0].id = 1;
	meta.conf.m[0].role = EL_MEMBER_VOTER;
	EL_CHECK_EQ(el_raft_load_snapshot(el_node_raft(b), &meta, junk), EL_OK);
	el_node_start(b, 0);
	EL_CHECK(el_node_has_ready(b));
	struct el_node_ready rd;
	el_node_ready(b, &rd);
	EL_CHECK(rd.raft.restore);
	EL_CHECK_EQ(el_node_advance(b, &rd, 0), EL_ECORRUPT);
	el_id_t hint;
	struct el_lock_cmd open = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 100};
	EL_CHECK_EQ(el_node_submit(b, 1, &open, 0, &hint), EL_ESTOPPED);
	EL_CHECK(!el_node_has_ready(b));
	EL_CHECK_EQ(el_node_deadline(b), UINT64_MAX);
}

/* ---- Three nodes -------------------------------------------------------- */

static void test_node_cluster_replicates(void)
{
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	const int f = (l + 1) % 3;
	el_id_t hint = 0;
	struct el_lock_cmd open = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 5000};
	EL_CHECK_EQ(el_node_submit(&N[f], 1, &open, clock_ms, &hint), EL_ENOTLEADER);
	EL_CHECK_EQ(hint, (el_id_t)(l + 1)); /* the follower names the leader */
	EL_CHECK_EQ(el_node_read(&N[f], 2, clock_ms, &hint), EL_ENOTLEADER);
	EL_CHECK_EQ(hint, (el_id_t)(l + 1));
	const uint64_t s = open_session(l, 5000);
	EL_CHECK(s != 0);
	EL_CHECK_EQ(acquire(l, s, 1, 0, 0)->err, EL_OK);
	run(100);
	/* every replica holds the same table, byte for byte */
	for (int i = 1; i < 3; i++)
		EL_CHECK(same_records(&N[0].table, &N[i].table));
	/* followers keep no timers and never expire anything themselves */
	uint64_t left;
	EL_CHECK_EQ(el_node_lease_left(&N[f], s, clock_ms, &left), EL_ENOTLEADER);
	EL_CHECK_EQ(el_node__timers_next(&N[f]), UINT64_MAX);
}

static void test_node_leader_loss_fails_pending(void)
{
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	const uint64_t s = open_session(l, 60000);
	EL_CHECK(s != 0);
	cut[l] = true; /* the old leader is partitioned away */
	el_id_t hint = 0;
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = 1, .name_len = 1};
	c.name[0] = 'x';
	EL_CHECK_EQ(el_node_submit(&N[l], 900, &c, clock_ms, &hint), EL_OK);
	run(1000); /* the others elect a new leader; the old one loses its quorum */
	const int nl = leader();
	EL_CHECK(nl >= 0 && nl != l);
	const struct el_node_reply *r = reply_for(900);
	EL_CHECK(r != NULL);
	EL_CHECK_EQ(r->err, EL_ENOTLEADER);
	cut[l] = false;
	run(300);
	r = reply_for(900);
	EL_CHECK_EQ(r->err, EL_ENOTLEADER);
	EL_CHECK_EQ(r->leader == 0 || r->leader == (el_id_t)(nl + 1), 1);
	/* the client retries at the new leader with the same seq: acts once */
	const struct el_node_reply *r2 = call(nl, &c);
	EL_CHECK(r2 != NULL);
	EL_CHECK_EQ(r2->err, EL_OK);
	const struct el_node_reply *r3 = call(nl, &c);
	EL_CHECK_EQ(r3->token, r2->token);
	EL_CHECK_EQ(r3->count, 1);
}

/* A leader handing over proposes nothing: a client's command gets
 * ENOTLEADER with no leader named (ask again), never EL_EBUSY, which
 * libedgelock passes on as "the lock is busy" while an acquire it queued
 * earlier still waits to be granted. */
static void test_node_transfer_answers_not_leader(void)
{
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	const uint64_t s = open_session(l, 60000);
	EL_CHECK(s != 0);
	const int t = (l + 1) % 3;
	cut[t] = true; /* its TimeoutNow is lost: the transfer stays pending */
	EL_CHECK_EQ(el_raft_transfer(el_node_raft(&N[l]), (el_id_t)(t + 1), clock_ms), EL_OK);
	el_id_t hint = 99;
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = 1, .name_len = 1};
	c.name[0] = 'x';
	EL_CHECK_EQ(el_node_submit(&N[l], 900, &c, clock_ms, &hint), EL_ENOTLEADER);
	EL_CHECK_EQ(hint, 0);
	cut[t] = false;
	run(2000); /* handed over, or the transfer lapsed */
	const int nl = leader();
	EL_CHECK(nl >= 0);
	const struct el_node_reply *r = call(nl, &c); /* the same seq, sent again */
	EL_CHECK(r != NULL);
	EL_CHECK_EQ(r->err, EL_OK);
	EL_CHECK_EQ(r->count, 1);
}

static void test_node_new_leader_restarts_leases(void)
{
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	const uint64_t s = open_session(l, 1000);
	EL_CHECK(s != 0);
	run(800); /* 800 of the 1000 ms lease used on the old leader's clock */
	cut[l] = true;
	int nl = -1;
	for (int i = 0; i < 100 && nl < 0; i++) {
		run(STEP_MS);
		nl = leader();
		if (nl == l)
			nl = -1;
	}
	EL_CHECK(nl >= 0);
	const uint64_t elected = clock_ms;
	uint64_t left = 0;
	EL_CHECK_EQ(el_node_lease_left(&N[nl], s, clock_ms, &left), EL_OK);
	EL_CHECK(left >= 1000 - 2 * STEP_MS); /* a full lease from the election */
	run(900);
	EL_CHECK(el_lock_session_slot(el_node_table(&N[nl]), s) != EL_LOCK_NONE);
	run(400);
	EL_CHECK_EQ(el_lock_session_slot(el_node_table(&N[nl]), s), EL_LOCK_NONE);
	EL_CHECK(clock_ms >= elected + 1000);
}

static bool pump_delayed(int i)
{
	return el_lock_query(el_node_table(&N[i]), "pump", 4, &Q) == EL_OK && Q.delayed;
}

/* A leader proposes DELAY_END and loses leadership before it commits; the
 * next leader overwrites it. When the first leads again, it must arm the
 * lock-delay afresh and end it (before, its timer still read "armed,
 * proposed" with the same key, so arming all timers skipped it and the lock
 * stayed in lock-delay for good: sim-matrix seed 200043 at window 8). */
static void test_node_lost_delay_end_is_rearmed(void)
{
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	const uint64_t a = open_session(l, 300);
	EL_CHECK(a != 0);
	EL_CHECK_EQ(acquire(l, a, 1, 0, 2000)->err, EL_OK);
	for (int i = 0; i < 200 && !pump_delayed(l); i++)
		run(STEP_MS); /* a goes silent: expired, pump in its 2 s lock-delay */
	EL_CHECK(pump_delayed(l));
	run(2000 - 20);
	cut[l] = true; /* just before its DELAY_END: proposed, never committed */
	const uint64_t proposed = N[l].stats.delay_ends_proposed;
	run(60);
	EL_CHECK_EQ(N[l].stats.delay_ends_proposed, proposed + 1);
	int nl = -1;
	for (int i = 0; i < 200 && nl < 0; i++) {
		run(STEP_MS);
		nl = leader();
	}
	EL_CHECK(nl >= 0 && nl != l);
	cut[l] = false;
	run(100); /* l follows nl: its DELAY_END entry is overwritten */
	EL_CHECK(pump_delayed(l));
	EL_CHECK_EQ(el_raft_transfer(el_node_raft(&N[nl]), (el_id_t)(l + 1), clock_ms), EL_OK);
	for (int i = 0; i < 100 && leader() != l; i++)
		run(STEP_MS);
	EL_CHECK_EQ(leader(), l);
	EL_CHECK(pump_delayed(l)); /* still within nl's fresh 2 s */
	run(2500); /* l's own fresh 2 s, then the DELAY_END commits */
	EL_CHECK(!pump_delayed(l));
	EL_CHECK(N[l].stats.delay_ends_proposed >= proposed + 2);
}

static void test_node_snapshot_catch_up(void)
{
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	const int lag = (l + 1) % 3;
	const uint64_t s = open_session(l, 60000);
	cut[lag] = true;
	EL_CHECK_EQ(acquire(l, s, 1, 0, 0)->err, EL_OK);
	for (int i = 0; i < EL_COMPACT_THRESHOLD + 20; i++)
		EL_CHECK(keepalive(l, s) != NULL);
	run(200);
	EL_CHECK(N[l].stats.compactions >= 1);
	cut[lag] = false;
	run(2000);
	EL_CHECK(N[lag].stats.restores >= 1);
	EL_CHECK_EQ(el_node_query(&N[lag], "pump", 4, &Q), EL_OK);
	EL_CHECK_EQ(Q.holders[0].session, s);
	EL_CHECK(same_records(&N[l].table, &N[lag].table));
}

/* A member wiped and started empty again under its id (--join without
 * members remove): a young cluster's log starts at entry 1, which an empty
 * log matches, and its configuration was only in the bootstrap snapshot at
 * index 0, never sent. The wiped node took the entries, never learnt it
 * is a voter, and the daemon (which lets no node without a configuration
 * vote) lost the cluster with the leader (an outside tester). Every node
 * now compacts its first applied entry, so the leader sends a snapshot,
 * with the configuration in it. */
static void test_node_wiped_member_learns_conf(void)
{
	setup(3);
	const int l = run_until_leader();
	EL_CHECK(l >= 0);
	for (int i = 0; i < 3; i++) /* every node: the log no longer starts at 0 */
		EL_CHECK(el_raft_snapshot(&N[i].raft)->index >= 1);
	const uint64_t s = open_session(l, 60000);
	EL_CHECK_EQ(acquire(l, s, 1, 0, 0)->err, EL_OK);
	const int w = (l + 1) % 3;
	struct el_node_config cfg = {.raft = {.id = (el_id_t)(w + 1),
					      .election_ms_min = ELECTION_MS,
					      .heartbeat_ms = HEARTBEAT_MS,
					      .prevote = true,
					      .check_quorum = true}};
	el_node_init(&N[w], &cfg, 99); /* wiped: no log, no snapshot, no conf */
	el_node_start(&N[w], clock_ms);
	EL_CHECK(keepalive(l, s) != NULL);
	run(2000);
	const struct el_conf *c = el_raft_conf(&N[w].raft);
	EL_CHECK_EQ(c->n, 3);
	const struct el_member *me = el_conf_find(c, (el_id_t)(w + 1));
	EL_CHECK(me != NULL && me->role == EL_MEMBER_VOTER);
	EL_CHECK(same_records(&N[l].table, &N[w].table));
}

void el_suite_node(void);
void el_suite_node(void)
{
	EL_RUN(test_node_single_basics);
	EL_RUN(test_node_submit_rejects);
	EL_RUN(test_node_expiry_and_lock_delay);
	EL_RUN(test_node_wait_timeout);
	EL_RUN(test_node_force_new_cluster);
	EL_RUN(test_node_leases_end_in_deadline_order);
	EL_RUN(test_node_compaction);
	EL_RUN(test_node_restart_restores_table);
	EL_RUN(test_node_corrupt_snapshot_stops);
	EL_RUN(test_node_cluster_replicates);
	EL_RUN(test_node_leader_loss_fails_pending);
	EL_RUN(test_node_transfer_answers_not_leader);
	EL_RUN(test_node_new_leader_restarts_leases);
	EL_RUN(test_node_lost_delay_end_is_rearmed);
	EL_RUN(test_node_snapshot_catch_up);
	EL_RUN(test_node_wiped_member_learns_conf);
}
