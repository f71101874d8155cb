/*
 * test_raft_liveness.c - liveness of the Raft replica at the edges the
 * simulator found (issue 19): a new leader with a full window still finds a
 * slot for its no-op, an idle cluster goes quiet after a snapshot, and a
 * caught-up learner whose promotion was refused is promoted without client
 * traffic. A small cluster of its own whose network the test controls (it
 * compacts like el_node does: once more than EL_COMPACT_THRESHOLD applied
 * entries sit above the snapshot). Static buffers only.
 */
#include <string.h>

#include "el_error.h"
#include "el_raft.h"
#include "el_test.h"

#define LN 3
#define LQMAX 64
#define LPOOL 256       /* entries of the queued appends, in queue order */
#define LDATA_MAX 16    /* snapshot bytes a queued message carries (ours: 1) */
#define L_ELECTION_MS 100
#define L_HEARTBEAT_MS 20

/* The target runs every suite in 4 MiB at the default limits, where a
 * message's entries alone take 9 KiB: queued entries share one ring. */
struct lq {
	struct el_msg m;
	uint8_t data[LDATA_MAX];
};

static struct el_raft lnodes[LN]; /* ids 1..LN (the target has 4 MiB for every suite) */
static struct lq lqueue[LQMAX];
static uint32_t lqueued;
static struct el_entry lpool[LPOOL];
static uint32_t lpool_head, lpool_used; /* the ring holds lpool_used before head */
static struct el_entry lrx[EL_MSG_ENTRIES_MAX];
static bool lcut[LN + 1][LN + 1];
static bool drop_timeout_now;
static el_id_t drop_acks_to; /* APPEND_RESP messages to this node are lost */
static bool drop_all_acks;   /* every APPEND_RESP is lost */
static uint64_t lnow;
static uint64_t sent_total;    /* messages the nodes handed out */
static uint64_t sent_heartbeat; /* of which heartbeats and their replies */
static uint8_t state_byte[LN + 1]; /* what each node's "state machine" holds */

static struct el_raft *rn(el_id_t id) { return &lnodes[id - 1]; }

static void lenqueue(const struct el_msg *m)
{
	sent_total++;
	if (m->type == EL_MSG_HEARTBEAT || m->type == EL_MSG_HEARTBEAT_RESP)
		sent_heartbeat++;
	if (lqueued >= LQMAX || lcut[m->from][m->to] || lpool_used + m->n_entries > LPOOL ||
	    m->data_len > LDATA_MAX)
		return; /* lost */
	if (drop_timeout_now && m->type == EL_MSG_TIMEOUT_NOW)
		return;
	if (m->type == EL_MSG_APPEND_RESP && (m->to == drop_acks_to || drop_all_acks))
		return;
	struct lq *q = &lqueue[lqueued++];
	q->m = *m;
	for (uint32_t k = 0; k < m->n_entries; k++)
		lpool[(lpool_head + k) % LPOOL] = m->entries[k];
	lpool_head = (lpool_head + m->n_entries) % LPOOL;
	lpool_used += m->n_entries;
	if (m->data_len > 0)
		memcpy(q->data, m->data, m->data_len);
}

static int write_byte(void *ctx, uint8_t *buf, uint32_t cap)
{
	const uint8_t *b = ctx;
	if (cap < 1)
		return EL_EFULL;
	buf[0] = *b;
	return 1;
}

static void ldrain(el_id_t id)
{
	struct el_raft *r = rn(id);
	while (el_raft_has_ready(r)) {
		struct el_ready rd;
		el_raft_ready(r, &rd);
		for (uint32_t i = 0; i < rd.n_msgs; i++)
			lenqueue(&rd.msgs[i]);
		if (rd.restore && rd.snapshot_data != NULL && rd.snapshot->len > 0)
			state_byte[id] = rd.snapshot_data[0];
		if (rd.apply_last >= rd.apply_first)
			state_byte[id] = (uint8_t)(state_byte[id] + rd.apply_last - rd.apply_first + 1);
		el_raft_advance(r, &rd, lnow);
		if (el_raft_applied(r) - el_raft_snapshot(r)->index > EL_COMPACT_THRESHOLD)
			EL_CHECK_EQ(el_raft_compact(r, el_raft_applied(r), write_byte, &state_byte[id]), 0);
	}
}

/* Deliver queued messages one at a time (and what they cause); returns how
 * many were delivered, at most max. */
static uint32_t ldeliver(uint32_t max)
{
	uint32_t n = 0;
	for (; n < max && lqueued > 0; n++) {
		struct lq q = lqueue[0];
		memmove(lqueue, lqueue + 1, (lqueued - 1) * sizeof(lqueue[0]));
		lqueued--;
		const uint32_t first = (lpool_head + LPOOL - lpool_used) % LPOOL;
		for (uint32_t k = 0; k < q.m.n_entries; k++)
			lrx[k] = lpool[(first + k) % LPOOL];
		lpool_used -= q.m.n_entries;
		q.m.entries = lrx;
		q.m.data = q.data;
		el_raft_step(rn(q.m.to), &q.m, lnow);
		ldrain(q.m.to);
	}
	return n;
}

static void ltick(uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t++) {
		lnow++;
		for (el_id_t id = 1; id <= LN; id++) {
			if (el_raft_deadline(rn(id)) <= lnow) {
				el_raft_tick(rn(id), lnow);
				ldrain(id);
			}
		}
		ldeliver(100000);
	}
}

static void lsetup(uint32_t voters)
{
	memset(lnodes, 0, sizeof(lnodes));
	memset(lcut, 0, sizeof(lcut));
	memset(state_byte, 0, sizeof(state_byte));
	lqueued = 0;
	lpool_head = lpool_used = 0;
	drop_timeout_now = false;
	drop_acks_to = 0;
	drop_all_acks = false;
	lnow = 1000;
	struct el_conf conf = { .n = (uint8_t)voters };
	for (uint32_t i = 0; i < voters; i++) {
		conf.m[i].id = i + 1;
		conf.m[i].role = EL_MEMBER_VOTER;
	}
	for (el_id_t id = 1; id <= LN; id++) {
		struct el_raft_config cfg = { id, L_ELECTION_MS, L_HEARTBEAT_MS, true, true };
		EL_CHECK_EQ(el_raft_init(rn(id), &cfg, 7 + id), 0);
		if (id <= voters)
			EL_CHECK_EQ(el_raft_bootstrap(rn(id), &conf), 0);
		el_raft_start(rn(id), lnow);
		ldrain(id);
	}
}

static el_id_t lleader(void)
{
	el_id_t found = 0;
	for (el_id_t id = 1; id <= LN; id++)
		if (el_raft_state(rn(id)) == EL_LEADER && (found == 0 || rn(id)->term > rn(found)->term))
			found = id;
	return found;
}

static void lisolate(el_id_t id, bool on)
{
	for (el_id_t j = 1; j <= LN; j++)
		lcut[id][j] = lcut[j][id] = on;
}

static int lpropose(el_id_t id)
{
	static const uint8_t cmd[4] = { 'c', 'm', 'd', '!' };
	return el_raft_propose(rn(id), cmd, sizeof(cmd), lnow, NULL, NULL);
}

/* ---- 1. No-op room --------------------------------------------------------- */

/* Three nodes started and an election let happen: the leader (0 when
 * none was elected: the caller checks). */
static el_id_t lstart3(void)
{
	lsetup(3);
	ltick(3 * L_ELECTION_MS);
	return lleader();
}

/* The leader fills the window as far as admission lets it with entries its
 * followers store but whose acknowledgements are lost, holding exactly
 * EL_COMPACT_THRESHOLD applied entries (one more would compact). Then it
 * dies. The new leader's log is as full as any history can make it: it must
 * still append its no-op and commit everything within a few heartbeats. */
static void test_full_window_leader_commits(void)
{
	const el_id_t old = lstart3();
	EL_CHECK(old != 0);
	if (old == 0)
		return;
	/* applied - snapshot = EL_COMPACT_THRESHOLD on every node, no compaction */
	while (el_raft_last_index(rn(old)) < EL_COMPACT_THRESHOLD) {
		EL_CHECK_EQ(lpropose(old), 0);
		ldrain(old);
		ldeliver(100000);
	}
	ltick(2 * L_HEARTBEAT_MS);
	for (el_id_t id = 1; id <= LN; id++) {
		EL_CHECK_EQ(el_raft_applied(rn(id)), (uint64_t)EL_COMPACT_THRESHOLD);
		EL_CHECK_EQ(el_raft_snapshot(rn(id))->index, 0);
	}
	/* the followers' acknowledgements are lost from now on (heartbeat
	 * replies still free the pipeline, so the followers get every entry) */
	drop_acks_to = old;
	uint32_t accepted = 0;
	while (lpropose(old) == 0)
		accepted++;
	ldrain(old);
	ltick(40 * L_HEARTBEAT_MS);
	const uint64_t last = el_raft_last_index(rn(old));
	EL_CHECK(accepted >= 1);
	EL_CHECK_EQ(el_raft_commit(rn(old)), (uint64_t)EL_COMPACT_THRESHOLD);
	/* the old leader dies; a follower holding every entry takes over */
	lisolate(old, true);
	uint64_t elected = 0;
	el_id_t l = 0;
	for (int ms = 0; ms < 20 * L_ELECTION_MS && l == 0; ms++) {
		ltick(1);
		l = lleader();
		if (l == old)
			l = 0;
		elected = lnow;
	}
	EL_CHECK(l != 0);
	if (l == 0)
		return;
	EL_CHECK(el_raft_last_index(rn(l)) >= last); /* it holds the whole tail */
	/* within its first heartbeat rounds it commits all of it, and its no-op */
	while (el_raft_commit(rn(l)) <= last && lnow < elected + 4 * L_HEARTBEAT_MS)
		ltick(1);
	EL_CHECK(el_raft_commit(rn(l)) > last);
	EL_CHECK_EQ(el_raft_term_at(rn(l), el_raft_commit(rn(l))), el_raft_term(rn(l)));
	/* and it takes client proposals again */
	EL_CHECK_EQ(lpropose(l), 0);
}

/* Admission keeps the rule: a leader never holds more than
 * EL_UNCOMMITTED_MAX client entries above its commit, nor a full window. */
static void test_admission_bound(void)
{
	const el_id_t l = lstart3();
	EL_CHECK(l != 0);
	if (l == 0)
		return;
	drop_acks_to = l;
	int err = 0;
	for (uint32_t i = 0; i < EL_LOG_WINDOW + 4 && err == 0; i++)
		err = lpropose(l);
	EL_CHECK_EQ(err, EL_EFULL);
	EL_CHECK_EQ(el_raft_last_index(rn(l)) - el_raft_commit(rn(l)), (uint64_t)EL_UNCOMMITTED_MAX);
	EL_CHECK(el_raft_last_index(rn(l)) - el_raft_snapshot(rn(l))->index + EL_RAFT_RESERVE <=
		 EL_LOG_WINDOW);
}

/* ---- 4. Quiet after a snapshot -------------------------------------------- */

/* An idle leader compacted up to its last index sends node 3 a snapshot;
 * afterwards the network must go quiet: a bounded exchange, then nothing
 * but heartbeats. */
static void test_quiet_after_snapshot(void)
{
	const el_id_t l = lstart3();
	EL_CHECK(l != 0);
	if (l == 0)
		return;
	const el_id_t lag = l == 3 ? 2 : 3;
	lisolate(lag, true);
	for (int i = 0; i < 5; i++)
		EL_CHECK_EQ(lpropose(l), 0);
	ltick(2 * L_HEARTBEAT_MS);
	EL_CHECK_EQ(el_raft_commit(rn(l)), el_raft_last_index(rn(l)));
	EL_CHECK_EQ(el_raft_compact(rn(l), el_raft_applied(rn(l)), write_byte, &state_byte[l]), 0);
	ldrain(l);
	EL_CHECK_EQ(el_raft_snapshot(rn(l))->index, el_raft_last_index(rn(l)));
	lisolate(lag, false);
	/* the next heartbeat finds the lagging node and starts the snapshot */
	for (int ms = 0; ms < 10 * L_HEARTBEAT_MS &&
			 el_raft_snapshot(rn(lag))->index < el_raft_snapshot(rn(l))->index;
	     ms++) {
		lnow++;
		for (el_id_t id = 1; id <= LN; id++)
			if (el_raft_deadline(rn(id)) <= lnow) {
				el_raft_tick(rn(id), lnow);
				ldrain(id);
			}
		ldeliver(1); /* one message per ms: the snapshot completes mid-heartbeat */
	}
	EL_CHECK_EQ(el_raft_snapshot(rn(lag))->index, el_raft_snapshot(rn(l))->index);
	/* what the snapshot leaves in flight settles in a bounded exchange... */
	const uint32_t delivered = ldeliver(64);
	EL_CHECK(delivered < 64);
	EL_CHECK_EQ(lqueued, 0);
	/* ...then nothing is sent before the next heartbeat, and afterwards only
	 * heartbeats and their replies */
	const uint64_t before = sent_total;
	while (lnow < el_raft_deadline(rn(l)) - 1) {
		lnow++;
		for (el_id_t id = 1; id <= LN; id++)
			if (el_raft_deadline(rn(id)) <= lnow) {
				el_raft_tick(rn(id), lnow);
				ldrain(id);
			}
		ldeliver(100);
	}
	EL_CHECK_EQ(sent_total, before);
	const uint64_t hb_before = sent_heartbeat;
	ltick(5 * L_HEARTBEAT_MS);
	EL_CHECK_EQ(sent_total - before, sent_heartbeat - hb_before);
	EL_CHECK(sent_heartbeat - hb_before <= 2u * (LN - 1) * 6);
	EL_CHECK_EQ(lleader(), l);
}

/* ---- 5. Learner promotion retried ---------------------------------------- */

/* Voters {1, 2}; voter 3 is added while 1 leads; it catches up while a
 * transfer to 2 is pending (its TimeoutNow is lost), so the promotion is
 * refused then. Once the transfer lapses, the idle leader must promote it
 * within a few heartbeat rounds. */
static void test_learner_promoted_when_idle(void)
{
	lsetup(2);
	ltick(3 * L_ELECTION_MS);
	const el_id_t l = lleader();
	EL_CHECK(l == 1 || l == 2);
	if (l != 1 && l != 2)
		return;
	const el_id_t other = l == 1 ? 2 : 1;
	lisolate(3, true);
	uint64_t idx = 0;
	EL_CHECK_EQ(el_raft_propose_conf(rn(l), EL_CONF_ADD_VOTER, 3, lnow, &idx), 0);
	ltick(2 * L_HEARTBEAT_MS);
	EL_CHECK(el_raft_commit(rn(l)) >= idx);
	drop_timeout_now = true;
	EL_CHECK_EQ(el_raft_transfer(rn(l), other, lnow), 0);
	lisolate(3, false);
	ltick(3 * L_HEARTBEAT_MS); /* node 3 catches up; the transfer blocks it */
	const struct el_member *m = el_conf_find(el_raft_conf(rn(l)), 3);
	EL_CHECK(m != NULL && m->role == EL_MEMBER_CATCHING_UP);
	EL_CHECK_EQ(el_raft_last_index(rn(3)), el_raft_last_index(rn(l)));
	/* the transfer lapses after an election timeout; no client writes */
	ltick(L_ELECTION_MS);
	EL_CHECK_EQ(lleader(), l);
	ltick(4 * L_HEARTBEAT_MS);
	m = el_conf_find(el_raft_conf(rn(l)), 3);
	EL_CHECK(m != NULL && m->role == EL_MEMBER_VOTER);
	EL_CHECK(el_raft_commit(rn(l)) == el_raft_last_index(rn(l)));
}

/* ---- 5. A follower that lost its log ---------------------------------------- */

/* A follower's data wiped under a running leader (its board replaced and
 * started again under its id: bootstrapped with the same voters, or empty
 * as a joiner). Its rejections hint below what it had acknowledged; the
 * leader replicates to it again, and it holds the whole log within a few
 * heartbeats (it stayed empty for ever, every reply taken as stale). */
/* A follower wiped and started again: with traffic (idle false) the next
 * append shows the leader its log fell below what it acknowledged; in an
 * idle cluster (idle true) only the link's loss does (el_raft_peer_lost on
 * the leader, which the daemon calls when its connection to the follower
 * closes): heartbeats carry no log position, and the follower stayed
 * empty (an outside tester). */
static void lost_log(bool bootstrapped, bool idle)
{
	const el_id_t l = lstart3();
	EL_CHECK(l != 0);
	if (l == 0)
		return;
	for (int i = 0; i < 5; i++)
		EL_CHECK_EQ(lpropose(l), 0);
	ltick(4 * L_HEARTBEAT_MS);
	const el_id_t f = l == 3 ? 2 : 3;
	EL_CHECK_EQ(el_raft_last_index(rn(f)), el_raft_last_index(rn(l)));
	struct el_raft_config cfg = { f, L_ELECTION_MS, L_HEARTBEAT_MS, true, true };
	EL_CHECK_EQ(el_raft_init(rn(f), &cfg, 99), 0);
	if (bootstrapped)
		EL_CHECK_EQ(el_raft_bootstrap(rn(f), el_raft_conf(rn(l))), 0);
	el_raft_start(rn(f), lnow);
	ldrain(f);
	EL_CHECK(el_raft_last_index(rn(f)) < el_raft_last_index(rn(l)));
	if (idle)
		el_raft_peer_lost(rn(l), f, lnow);
	else
		EL_CHECK_EQ(lpropose(l), 0);
	ltick(6 * L_HEARTBEAT_MS);
	EL_CHECK_EQ(lleader(), l);
	EL_CHECK_EQ(el_raft_last_index(rn(f)), el_raft_last_index(rn(l)));
	EL_CHECK_EQ(el_raft_commit(rn(f)), el_raft_commit(rn(l)));
}

/* A new leader that never heard the old one commit its last entries learns
 * the commit index from its followers' replies (learn_commit): the entries
 * of an earlier term it holds up to there are committed (Leader
 * Completeness). The leader's no-op cannot commit here (its acknowledgements
 * are lost), so only a follower's word can move its commit; with a window
 * full of such entries that was the only way on (the simulator's
 * configuration matrix, window 8). */
static void test_leader_learns_commit(void)
{
	const el_id_t l = lstart3();
	EL_CHECK(l != 0);
	if (l == 0)
		return;
	const el_id_t f = l == 1 ? 2 : 1, g = 6 - l - f;
	ltick(2 * L_HEARTBEAT_MS);
	EL_CHECK_EQ(lpropose(l), 0);
	ldrain(l);
	ldeliver(2); /* the append reaches f and g; their acks are queued */
	lcut[l][f] = true; /* f hears nothing more from l: no commit index */
	ldeliver(2);
	const uint64_t c = el_raft_commit(rn(l));
	EL_CHECK_EQ(c, el_raft_last_index(rn(l)));
	EL_CHECK(el_raft_commit(rn(f)) < c);
	ltick(2 * L_HEARTBEAT_MS); /* g hears the commit with a heartbeat */
	EL_CHECK_EQ(el_raft_commit(rn(g)), c);
	EL_CHECK(el_raft_commit(rn(f)) < c);
	/* l hands over to f, whose acknowledgements are lost from then on */
	lcut[l][f] = false;
	drop_acks_to = f;
	EL_CHECK_EQ(el_raft_transfer(rn(l), f, lnow), 0);
	ldrain(l);
	ldeliver(100000);
	EL_CHECK_EQ(lleader(), f);
	EL_CHECK(el_raft_term_at(rn(f), c) < rn(f)->term);
	ltick(3 * L_HEARTBEAT_MS);
	EL_CHECK_EQ(lleader(), f);
	EL_CHECK(el_raft_commit(rn(f)) >= c);
	EL_CHECK(el_raft_commit(rn(f)) < el_raft_last_index(rn(f))); /* its no-op: not by counting */
}

/* A reply from node from to leader l's append, about index, in l's term. */
static struct el_msg lresp(el_id_t l, el_id_t from, uint64_t index)
{
	struct el_msg m;
	memset(&m, 0, sizeof(m));
	m.type = EL_MSG_APPEND_RESP;
	m.from = from;
	m.to = l;
	m.term = rn(l)->term;
	m.index = index;
	return m;
}

/* An acknowledgement from node from to leader l that it holds index. */
static void lack(el_id_t l, el_id_t from, uint64_t index)
{
	const struct el_msg m = lresp(l, from, index);
	EL_CHECK_EQ(el_raft_step(rn(l), &m, lnow), 0);
	ldrain(l);
}

/* An entry of an earlier term commits once it is durable on every voter
 * (commit_on_every_voter; the Raft paper's own example in 5.4.2), never by a
 * quorum of its replicas (5.4.2, Figure 8). Here no node ever held a commit
 * index covering it (its leader's acknowledgements were lost) and the new
 * leader's no-op reaches no one: before, nothing could commit it. */
static void test_commit_on_every_voter(void)
{
	const el_id_t l = lstart3();
	EL_CHECK(l != 0);
	if (l == 0)
		return;
	ltick(2 * L_HEARTBEAT_MS);
	drop_acks_to = l;
	EL_CHECK_EQ(lpropose(l), 0);
	ldrain(l);
	ltick(2 * L_HEARTBEAT_MS);
	const uint64_t i = el_raft_last_index(rn(l));
	EL_CHECK(el_raft_commit(rn(l)) < i);
	drop_acks_to = 0;
	drop_all_acks = true; /* the next leader's no-op is never acknowledged */
	lisolate(l, true);
	ltick(3 * L_ELECTION_MS);
	const el_id_t n = lleader();
	EL_CHECK(n != 0 && n != l);
	if (n == 0 || n == l)
		return;
	const el_id_t o = 6 - l - n;
	EL_CHECK(el_raft_term_at(rn(n), i) < rn(n)->term);
	EL_CHECK(el_raft_last_index(rn(n)) > i); /* its no-op */
	lack(n, o, i);
	EL_CHECK(el_raft_commit(rn(n)) < i); /* a quorum holds it: not enough */
	lack(n, l, i);
	EL_CHECK_EQ(el_raft_commit(rn(n)), i); /* every voter holds it */
	EL_CHECK_EQ(lleader(), n);
}

/* f's progress at the leader l (el_raft.h keeps it in r->pr). */
static const struct el_progress *lprogress(el_id_t l, el_id_t f)
{
	const struct el_raft *r = rn(l);
	for (uint32_t i = 0; i < r->conf.n; i++)
		if (r->pr[i].id == f)
			return &r->pr[i];
	return NULL;
}

/* A rejection sent before the acknowledgement that raised match and
 * delivered after it (reordered) hints below match, as a follower that lost
 * its log does. Taken as lost data it lowered match, and the leader sent the
 * entries again (or, past a compaction, a whole snapshot) to a follower that
 * held them: under reordering and compaction at every entry, so often that
 * sessions ran out (the simulator's configuration matrix). It only probes at
 * match now; the follower's answer to that probe says which it was. */
static void test_stale_reject_keeps_match(void)
{
	const el_id_t l = lstart3();
	EL_CHECK(l != 0);
	if (l == 0)
		return;
	const el_id_t f = l == 1 ? 2 : 1;
	for (int i = 0; i < 4; i++)
		EL_CHECK_EQ(lpropose(l), 0);
	ltick(2 * L_HEARTBEAT_MS);
	const struct el_progress *pr = lprogress(l, f);
	const uint64_t last = el_raft_last_index(rn(l));
	EL_CHECK(pr != NULL && pr->match == last && last >= 4);
	if (pr == NULL || last < 4)
		return;
	struct el_msg m = lresp(l, f, last);
	m.flags = EL_MSG_REJECT;
	m.hint_index = last - 2;
	m.hint_term = el_raft_term_at(rn(l), last - 2);
	EL_CHECK_EQ(el_raft_step(rn(l), &m, lnow), 0);
	EL_CHECK_EQ(pr->match, last); /* not lowered by a stale reply */
	ldrain(l);
	ldeliver(100000); /* the probe at match: f holds it, and says so */
	ltick(2 * L_HEARTBEAT_MS);
	EL_CHECK_EQ(pr->match, el_raft_last_index(rn(l)));
	EL_CHECK_EQ(pr->state, EL_PR_REPLICATE);
	EL_CHECK_EQ(el_raft_commit(rn(f)), el_raft_commit(rn(l)));
}

static void test_lost_log_bootstrapped(void) { lost_log(true, false); }
static void test_lost_log_empty(void) { lost_log(false, false); }
static void test_lost_log_idle(void) { lost_log(false, true); }

void el_suite_raft_liveness(void)
{
	EL_RUN(test_lost_log_bootstrapped);
	EL_RUN(test_lost_log_empty);
	EL_RUN(test_lost_log_idle);
	EL_RUN(test_leader_learns_commit);
	EL_RUN(test_commit_on_every_voter);
	EL_RUN(test_stale_reject_keeps_match);
	EL_RUN(test_full_window_leader_commits);
	EL_RUN(test_admission_bound);
	EL_RUN(test_quiet_after_snapshot);
	EL_RUN(test_learner_promoted_when_idle);
}
