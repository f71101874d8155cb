/*
 * test_bm_store.c - port/baremetal's RAM store and node ready loop with a
 * real one-member edgelock node: what a batch persists comes back after a
 * "reboot" (log, hard state, snapshot, and the lock table rebuilt from them),
 * compaction drops stored entries, and a failed persist stops the loop
 * before anything is sent, answered or advanced.
 */
#include <string.h>

#include "el_bm_node.h"
#include "el_bm_store.h"
#include "el_error.h"
#include "el_test.h"

static struct el_node node;
static struct el_bm_store store;
static uint32_t sent, replies;
static struct el_node_reply last_reply;
static uint64_t now_ms;
static uint64_t next_req;

static void on_send(void *ctx, const struct el_msg *m) { (void)ctx, (void)m; sent++; }
static void on_reply(void *ctx, const struct el_node_reply *r)
{
	(void)ctx;
	replies++;
	last_reply = *r;
}
static const struct el_bm_node_io io = { NULL, on_send, on_reply, NULL };

static const struct el_node_config cfg = { .raft = {
	.id = 1, .election_ms_min = 100, .heartbeat_ms = 20, .prevote = true, .check_quorum = true,
} };

/* Run timers and the ready loop for ms milliseconds; the first error. */
static int run(uint32_t ms)
{
	for (uint32_t t = 0; t < ms; t++) {
		now_ms++;
		if (now_ms >= el_node_deadline(&node))
			el_node_tick(&node, now_ms);
		int err = el_bm_drive_node(&node, &store, &io, now_ms);
		if (err != EL_OK)
			return err;
	}
	return EL_OK;
}

static int run_until_leader(void)
{
	for (int i = 0; i < 2000 && el_raft_state(&node.raft) != EL_LEADER; i++) {
		int err = run(1);
		if (err != EL_OK)
			return err;
	}
	return el_raft_state(&node.raft) == EL_LEADER ? EL_OK : EL_ETIMEDOUT;
}

static int boot(const struct el_conf *conf)
{
	now_ms = 1000;
	sent = replies = 0;
	el_bm_store_init(&store);
	int err = el_node_init(&node, &cfg, 7);
	if (err == EL_OK)
		err = el_raft_bootstrap(el_node_raft(&node), conf);
	if (err == EL_OK)
		el_node_start(&node, now_ms);
	return err;
}

static int fresh_leader(void)
{
	const struct el_conf conf = { .n = 1, .m = { { .id = 1, .role = EL_MEMBER_VOTER } } };
	int err = boot(&conf);
	return err != EL_OK ? err : run_until_leader();
}

/* Power cycle: a fresh node that knows only what the store kept. */
static int reboot(void)
{
	int err = el_node_init(&node, &cfg, 8);
	return err != EL_OK ? err : el_bm_restart_node(&node, &store, now_ms);
}

/* Submit cmd and run until its answer; the answer's error. */
static int submit(struct el_lock_cmd *cmd)
{
	el_id_t leader;
	uint64_t req = ++next_req;
	uint32_t before = replies;
	int err = el_node_submit(&node, req, cmd, now_ms, &leader);
	for (int t = 0; err == EL_OK && t < 500 && replies == before; t++)
		err = run(1);
	if (err != EL_OK)
		return err;
	return replies == before || last_reply.req_id != req ? EL_ETIMEDOUT : last_reply.err;
}

static uint64_t open_session(void)
{
	struct el_lock_cmd cmd = { .type = EL_CMD_OPEN_SESSION, .ttl_ms = 600000 };
	return submit(&cmd) == EL_OK ? last_reply.session : 0;
}

static int door(uint8_t type, uint64_t session, uint64_t seq, uint64_t token)
{
	struct el_lock_cmd cmd = { .type = type, .session = session, .seq = seq, .token = token };
	cmd.name_len = 4;
	memcpy(cmd.name, "door", 4);
	return submit(&cmd);
}

static uint64_t door_token(void)
{
	static struct el_lock_query q;
	if (el_node_query(&node, "door", 4, &q) != EL_OK || q.n_holders != 1)
		return 0;
	return q.holders[0].token;
}

static void test_persist_then_reload(void)
{
	EL_CHECK_EQ(fresh_leader(), EL_OK);
	uint64_t s = open_session();
	EL_CHECK(s != 0);
	EL_CHECK_EQ(door(EL_CMD_ACQUIRE, s, 1, 0), EL_OK);
	uint64_t token = last_reply.token;
	uint64_t last = el_raft_last_index(&node.raft), term = el_raft_term(&node.raft);
	EL_CHECK_EQ(store.last, last);
	EL_CHECK_EQ(store.hs.term, term);
	EL_CHECK_EQ(store.hs.vote, 1);
	EL_CHECK(store.syncs >= 2);
	EL_CHECK_EQ(reboot(), EL_OK);
	EL_CHECK_EQ(el_raft_last_index(&node.raft), last);
	EL_CHECK_EQ(el_raft_term(&node.raft), term);
	EL_CHECK_EQ(el_raft_term_at(&node.raft, last), term);
	/* it leads again, and the lock table is rebuilt with the same holder */
	EL_CHECK_EQ(run_until_leader(), EL_OK);
	EL_CHECK(el_raft_term(&node.raft) > term);
	EL_CHECK_EQ(run(10), EL_OK);
	EL_CHECK_EQ(door_token(), token);
}

static void test_compaction_drops_stored_entries(void)
{
	EL_CHECK_EQ(fresh_leader(), EL_OK);
	uint64_t s = open_session(), token = 0;
	EL_CHECK(s != 0);
	for (uint64_t seq = 1; seq <= 3 * EL_LOG_WINDOW; seq++) {
		EL_CHECK_EQ(door(token == 0 ? EL_CMD_ACQUIRE : EL_CMD_RELEASE, s, seq, token), EL_OK);
		token = token == 0 ? last_reply.token : 0;
		EL_CHECK(store.last - store.first + 1u <= EL_LOG_WINDOW);
	}
	EL_CHECK(store.has_snapshot && store.snap.index > 0);
	EL_CHECK_EQ(store.first, store.snap.index + 1u);
	EL_CHECK(token == 0 && door_token() == 0);
	EL_CHECK_EQ(door(EL_CMD_ACQUIRE, s, 3 * EL_LOG_WINDOW + 1, 0), EL_OK);
	token = last_reply.token;
	EL_CHECK_EQ(reboot(), EL_OK);
	EL_CHECK_EQ(el_raft_snapshot(&node.raft)->index, store.snap.index);
	/* snapshot plus the entries after it give back the same table */
	EL_CHECK_EQ(run_until_leader(), EL_OK);
	EL_CHECK_EQ(run(10), EL_OK);
	EL_CHECK_EQ(door_token(), token);
}

static void test_failed_persist_stops_the_loop(void)
{
	EL_CHECK_EQ(fresh_leader(), EL_OK);
	uint64_t s = open_session();
	EL_CHECK(s != 0);
	uint64_t stored = store.last;
	uint32_t syncs = store.syncs, answered = replies;
	store.fail_next_persist = EL_EIO;
	EL_CHECK_EQ(door(EL_CMD_ACQUIRE, s, 1, 0), EL_EIO);
	EL_CHECK_EQ(store.last, stored); /* nothing of the batch kept */
	EL_CHECK_EQ(store.syncs, syncs);
	EL_CHECK_EQ(replies, answered);  /* nothing answered */
	EL_CHECK(el_raft_commit(&node.raft) < el_raft_last_index(&node.raft));
	EL_CHECK_EQ(door_token(), 0);    /* nor applied */
	/* the batch was never advanced: the node offers nothing more */
	EL_CHECK(!el_node_has_ready(&node));
}

/* Persist before you answer: a candidate's vote requests (which promise its
 * new term is on disk) must not leave when persisting the batch failed. */
static void test_nothing_sent_when_persist_fails(void)
{
	const struct el_conf conf = { .n = 3, .m = { { 1, EL_MEMBER_VOTER }, { 2, EL_MEMBER_VOTER },
						     { 3, EL_MEMBER_VOTER } } };
	EL_CHECK_EQ(boot(&conf), EL_OK);
	EL_CHECK_EQ(run(1), EL_OK);
	sent = 0;
	store.fail_next_persist = EL_EIO;
	int err = EL_OK;
	for (int i = 0; i < 1000 && err == EL_OK; i++) /* until its election timer fires */
		err = run(1);
	EL_CHECK_EQ(err, EL_EIO);
	EL_CHECK_EQ(sent, 0);
}

/* The store refuses a batch that would leave a hole in the log. */
static void test_gap_is_refused(void)
{
	EL_CHECK_EQ(fresh_leader(), EL_OK);
	struct el_ready rd;
	memset(&rd, 0, sizeof rd);
	rd.persist_first = store.last + 2u;
	rd.persist_last = store.last + 2u;
	EL_CHECK_EQ(el_bm_store_persist(&store, &node.raft, &rd), EL_ECORRUPT);
}

void el_suite_bm_store(void)
{
	EL_RUN(test_persist_then_reload);
	EL_RUN(test_compaction_drops_stored_entries);
	EL_RUN(test_failed_persist_stops_the_loop);
	EL_RUN(test_nothing_sent_when_persist_fails);
	EL_RUN(test_gap_is_refused);
}
