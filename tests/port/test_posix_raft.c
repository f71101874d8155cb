/*
 * test_posix_raft.c - the glue between el_storage and a real el_raft: a
 * one-node cluster is bootstrapped, elected, fed proposals and compactions
 * through the ready loop (el_storage_persist_ready), then restarted from its
 * directory twice (el_storage_load_raft) and must come back with the same
 * log, snapshot, term and vote, a commit index no newer than before (a batch
 * that moves only the commit is not written: it is volatile in Raft), and
 * keep working: its first entry of the new term commits the whole log again.
 *
 * usage: test_posix_raft SCRATCH_DIR
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_storage_raft.h"
#include "el_test.h"
#include "port_test_util.h"

EL_TEST_MAIN_DEFINITIONS

static const struct el_storage_options opt = { .segment_bytes = 4096 };
static const char *scratch;
static char dir[PATH_MAX];
static struct el_raft raft, before;
static uint64_t now_ms = 1000;

static int write_state(void *ctx, uint8_t *buf, uint32_t cap)
{
	const struct el_raft *r = ctx;
	int n = snprintf((char *)buf, cap, "state at %llu", (unsigned long long)el_raft_applied(r));
	return n;
}

/* The ready loop of el_raft.h, steps 1-2 through storage. */
static int drain(struct el_storage *st)
{
	for (int i = 0; i < 16 && el_raft_has_ready(&raft); i++) {
		struct el_ready rd;
		el_raft_ready(&raft, &rd);
		int rc = el_storage_persist_ready(st, &rd, &raft);
		if (rc != EL_OK)
			return rc;
		el_raft_advance(&raft, &rd, now_ms);
	}
	return EL_OK;
}

static int start(struct el_storage **st, bool fresh)
{
	const struct el_raft_config cfg = { .id = 1, .election_ms_min = 100, .heartbeat_ms = 20,
					    .prevote = true, .check_quorum = false };
	const struct el_conf conf = { .n = 1, .m = { { 1, EL_MEMBER_VOTER } } };
	int rc = el_storage_open(st, dir, &opt);
	if (rc == EL_OK)
		rc = el_raft_init(&raft, &cfg, 42);
	if (rc == EL_OK)
		rc = fresh ? el_raft_bootstrap(&raft, &conf) : el_storage_load_raft(*st, &raft);
	if (rc == EL_OK)
		el_raft_start(&raft, now_ms);
	return rc == EL_OK ? drain(*st) : rc;
}

static int elect(struct el_storage *st)
{
	for (int i = 0; i < 100 && el_raft_state(&raft) != EL_LEADER; i++) {
		now_ms += 50;
		el_raft_tick(&raft, now_ms);
		int rc = drain(st);
		if (rc != EL_OK)
			return rc;
	}
	return el_raft_state(&raft) == EL_LEADER ? EL_OK : EL_ETIMEDOUT;
}

static int propose(struct el_storage *st, int n)
{
	char cmd[32];
	for (int i = 0; i < n; i++) {
		int len = snprintf(cmd, sizeof cmd, "cmd %d", i);
		int rc = el_raft_propose(&raft, (const uint8_t *)cmd, (uint16_t)len, now_ms, NULL, NULL);
		if (rc == EL_OK && i % 3 == 0)
			rc = drain(st);
		if (rc == EL_OK && i % 50 == 49)
			rc = el_raft_compact(&raft, el_raft_applied(&raft), write_state, &raft);
		if (rc != EL_OK)
			return rc;
	}
	return drain(st);
}

/* a restarted from b's disk: the same durable state; the commit may lag. */
static bool same_state(const struct el_raft *a, const struct el_raft *b)
{
	if (el_raft_term(a) != el_raft_term(b) || a->vote != b->vote ||
	    el_raft_commit(a) > el_raft_commit(b) ||
	    el_raft_commit(a) < el_raft_snapshot(a)->index ||
	    el_raft_last_index(a) != el_raft_last_index(b) ||
	    el_raft_snapshot(a)->index != el_raft_snapshot(b)->index ||
	    el_raft_snapshot(a)->len != el_raft_snapshot(b)->len ||
	    memcmp(el_raft_snapshot_data(a), el_raft_snapshot_data(b), el_raft_snapshot(a)->len) != 0)
		return false;
	for (uint64_t i = el_raft_snapshot(a)->index + 1; i <= el_raft_last_index(a); i++) {
		const struct el_entry *x = el_raft_entry(a, i), *y = el_raft_entry(b, i);
		if (!x || !y || x->term != y->term || x->type != y->type || x->len != y->len ||
		    memcmp(x->data, y->data, x->len) != 0)
			return false;
	}
	return true;
}

static void test_restart_keeps_raft_state(void)
{
	struct el_storage *st;
	pt_tmpdir(scratch, "raft", dir, sizeof dir);
	EL_CHECK_EQ(start(&st, true), EL_OK);
	EL_CHECK_EQ(elect(st), EL_OK);
	EL_CHECK_EQ(propose(st, 200), EL_OK);
	EL_CHECK(el_raft_snapshot(&raft)->index > 0);
	EL_CHECK(el_raft_commit(&raft) == el_raft_last_index(&raft));
	before = raft;
	el_storage_close(st);

	for (int restart = 0; restart < 2; restart++) {
		EL_CHECK_EQ(start(&st, false), EL_OK);
		EL_CHECK(same_state(&raft, &before));
		EL_CHECK_EQ(elect(st), EL_OK); /* a new term, a new vote, more entries */
		EL_CHECK(el_raft_term(&raft) > el_raft_term(&before));
		EL_CHECK(el_raft_commit(&raft) == el_raft_last_index(&raft)); /* all again */
		EL_CHECK(el_raft_last_index(&raft) > el_raft_last_index(&before));
		EL_CHECK_EQ(propose(st, 120), EL_OK);
		before = raft;
		el_storage_close(st);
	}
	EL_CHECK_EQ(start(&st, false), EL_OK);
	EL_CHECK(same_state(&raft, &before));
	el_storage_close(st);
	pt_rmrf(dir);
}

/* Steady state of one node: each proposal is a batch with the entry (one
 * fdatasync), then a batch that only moves the commit, which is not written:
 * one fdatasync per proposal, not two. Restarted, the node has every entry
 * and commits them again. */
static void test_commit_only_batch_not_synced(void)
{
	struct el_storage *st;
	pt_tmpdir(scratch, "commit", dir, sizeof dir);
	EL_CHECK_EQ(start(&st, true), EL_OK);
	EL_CHECK_EQ(elect(st), EL_OK);
	EL_CHECK_EQ(drain(st), EL_OK);
	pt_fault_count_only();
	for (int i = 0; i < 10; i++) {
		EL_CHECK_EQ(el_raft_propose(&raft, (const uint8_t *)"x", 1, now_ms, NULL, NULL), EL_OK);
		struct el_ready rd;
		el_raft_ready(&raft, &rd); /* the entry */
		EL_CHECK(rd.persist_first == rd.persist_last);
		EL_CHECK_EQ(el_storage_persist_ready(st, &rd, &raft), EL_OK);
		el_raft_advance(&raft, &rd, now_ms);
		EL_CHECK(el_raft_has_ready(&raft));
		el_raft_ready(&raft, &rd); /* commits and applies it */
		EL_CHECK(rd.hard_state_changed && rd.persist_first > rd.persist_last);
		EL_CHECK(rd.apply_last == rd.persist_first - 1);
		EL_CHECK_EQ(el_storage_persist_ready(st, &rd, &raft), EL_OK);
		el_raft_advance(&raft, &rd, now_ms);
	}
	EL_CHECK_EQ(pt_fault_calls(PT_OP_FDATASYNC), 10);
	el_io_reset();
	const uint64_t last = el_raft_last_index(&raft);
	EL_CHECK_EQ(el_raft_commit(&raft), last);
	el_storage_close(st);
	EL_CHECK_EQ(start(&st, false), EL_OK);
	EL_CHECK_EQ(el_raft_last_index(&raft), last);
	EL_CHECK(el_raft_commit(&raft) < last); /* the last commit-only batch was not written */
	EL_CHECK_EQ(elect(st), EL_OK);
	EL_CHECK(el_raft_commit(&raft) == el_raft_last_index(&raft));
	EL_CHECK(el_raft_last_index(&raft) > last);
	el_storage_close(st);
	pt_rmrf(dir);
}

int main(int argc, char **argv)
{
	scratch = argc > 1 ? argv[1] : "/tmp";
	el_log_set_level(EL_LOG_WARN);
	EL_RUN(test_restart_keeps_raft_state);
	EL_RUN(test_commit_only_batch_not_synced);
	return el_test_end();
}
