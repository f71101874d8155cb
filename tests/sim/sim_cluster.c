/*
 * sim_cluster.c - one simulated run: edgelock nodes with their own drifting
 * clocks and disks, a lossy network, lock clients, faults until the heal
 * time, then liveness checks.
 *
 * Each node runs the real ready loop of the core contract: persist (the
 * batch may be torn by a crash), then send, then deliver replies, then
 * advance. Time is virtual and jumps from event to event, so a run of tens
 * of virtual seconds takes milliseconds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"
#include "el_node_internal.h" /* el_node__write_snapshot: the quiet phase compacts */

/* ---- Clock -------------------------------------------------------------- */

uint64_t sim_local_ms(const struct sim *s, const struct sim_node *n)
{
	return n->boot_local_ms + (s->now_ms - n->boot_global_ms) * n->clock_rate / 1000;
}

/* Global time at which node n's clock reads local. */
static uint64_t to_global(const struct sim *s, const struct sim_node *n, uint64_t local)
{
	if (local == UINT64_MAX)
		return UINT64_MAX;
	if (local <= n->boot_local_ms)
		return s->now_ms;
	uint64_t g = n->boot_global_ms + ((local - n->boot_local_ms) * 1000 + n->clock_rate - 1) /
						 n->clock_rate;
	return g < s->now_ms ? s->now_ms : g;
}

static bool runnable(const struct sim *s, const struct sim_node *n)
{
	return n->up && s->now_ms >= n->paused_until;
}

/* ---- Disk --------------------------------------------------------------- */

static void disk_truncate(struct sim_disk *d, uint64_t first)
{
	if (d->last >= first)
		d->last = first - 1;
}

static void disk_write_snapshot(struct sim_disk *d, const struct el_snapshot_meta *meta,
				const uint8_t *data)
{
	d->has_snapshot = true;
	d->snap = *meta;
	memcpy(d->snap_data, data, meta->len);
	if (d->last < meta->index)
		d->last = meta->index; /* stored entries cover (snap.index, last] */
}

/* As port/posix (storage_raft.c): a batch that moves only the commit index
 * is not written, so restarts recover a commit that lags (it is volatile). */
static bool commit_only(const struct sim_disk *d, const struct el_ready *rd)
{
	return d->has_hs && rd->snapshot == NULL && !rd->restore &&
	       rd->persist_first > rd->persist_last && rd->persist_first > d->last &&
	       rd->hs.term == d->hs.term && rd->hs.vote == d->hs.vote;
}

/* Steps 1-2 of the ready loop. Returns false if the node crashed mid-batch. */
static bool persist(struct sim *s, struct sim_node *n, const struct el_ready *rd)
{
	struct sim_disk *d = &n->disk;
	struct el_hard_state before = d->hs;
	bool torn = s->now_ms < s->p.heal_ms && sim_pct(s, s->p.torn_pct);
	if (rd->snapshot != NULL)
		disk_write_snapshot(d, rd->snapshot, rd->snapshot_data);
	disk_truncate(d, rd->persist_first);
	if (rd->hard_state_changed && !commit_only(d, rd)) {
		d->hs = rd->hs;
		d->has_hs = true;
	}
	uint64_t last = rd->persist_last;
	if (torn && last >= rd->persist_first)
		last = rd->persist_first - 1 + sim_rand(s) % (last - rd->persist_first + 1);
	for (uint64_t i = rd->persist_first; i <= last; i++) {
		d->log[i & (EL_LOG_WINDOW - 1)] = *el_raft_entry(&n->node.raft, i);
		d->last = i;
	}
	if (!torn)
		sim_check_disk(s, n, &before);
	return !torn;
}

/* ---- Network ------------------------------------------------------------ */

static void enqueue(struct sim *s, const struct el_msg *m, uint64_t deliver_ms)
{
	for (uint32_t i = 0; i < SIM_MSGS_MAX; i++) {
		struct sim_msg *q = &s->msgs[i];
		if (q->used)
			continue;
		q->used = true;
		q->deliver_ms = deliver_ms;
		q->seq = s->msg_seq++;
		q->m = *m;
		if (m->n_entries > 0)
			memcpy(q->entries, m->entries, m->n_entries * sizeof(struct el_entry));
		if (m->data_len > 0)
			memcpy(q->data, m->data, m->data_len);
		return;
	}
	/* The network is full: the message is lost, as on a congested link. */
}

static struct sim_node *find_leader(struct sim *s);

/* In the quiet phase, once idle: nothing but heartbeats (sim.h). */
static void check_quiet_send(struct sim *s, const struct el_msg *m)
{
	if (!s->quiet || s->quiet_since_ms == 0)
		return;
	const struct sim_node *l = find_leader(s);
	if (l == NULL || l->id != s->quiet_leader || l->node.raft.last_index != s->quiet_last) {
		s->quiet_since_ms = 0; /* new entries (timers fired): busy again */
		return;
	}
	if (s->now_ms < s->quiet_since_ms + SIM_QUIET_WAIT_MS)
		return;
	if (m->type == EL_MSG_APPEND || m->type == EL_MSG_APPEND_RESP || m->type == EL_MSG_SNAPSHOT ||
	    m->type == EL_MSG_SNAPSHOT_RESP || m->type == EL_MSG_TIMEOUT_NOW)
		sim_fail(s, "quiescence: an idle cluster (idle since %llu) sent a message of type %u "
			    "from %u to %u at index %llu (%u entries, commit %llu)",
			 (unsigned long long)s->quiet_since_ms, m->type, m->from, m->to,
			 (unsigned long long)m->index, m->n_entries, (unsigned long long)m->commit);
}

/* Sends the messages of the batch that may leave before it is durable
 * (leading: a leader's appends, as edgelockd sends them), or the others. */
static void send_all(struct sim *s, struct sim_node *n, const struct el_ready *rd, bool leading)
{
	for (uint32_t i = 0; i < rd->n_msgs; i++) {
		const struct el_msg *m = &rd->msgs[i];
		if (el_raft_msg_may_lead(m) != leading)
			continue;
		sim_check_durable_before_send(s, n, m);
		if (m->to == 0 || m->to > s->p.n_nodes || s->cut[n->id - 1][m->to - 1])
			continue;
		if (s->drop_timeout_now && m->type == EL_MSG_TIMEOUT_NOW)
			continue;
		check_quiet_send(s, m);
		if (sim_pct(s, s->p.drop_pct))
			continue;
		int copies = 1 + (int)sim_pct(s, s->p.dup_pct);
		for (int c = 0; c < copies; c++)
			enqueue(s, m, s->now_ms + 1 + sim_rand(s) % s->p.delay_ms_max);
	}
}

/* ---- The ready loop ----------------------------------------------------- */

static void crash(struct sim *s, struct sim_node *n);

void sim_drain(struct sim *s, struct sim_node *n)
{
	for (int round = 0; round < 8 && n->up && el_node_has_ready(&n->node) && !s->failed; round++) {
		struct el_node_ready rd;
		el_node_ready(&n->node, &rd);
		send_all(s, n, &rd.raft, true); /* a torn persist may follow: they are out */
		if (!persist(s, n, &rd.raft)) {
			crash(s, n);
			return;
		}
		send_all(s, n, &rd.raft, false);
		if (rd.raft.restore) {
			sim_sm_restore(s, n, rd.raft.snapshot);
			s->snapshots_installed++;
		}
		for (uint64_t i = rd.raft.apply_first; i <= rd.raft.apply_last && !s->failed; i++)
			sim_sm_apply(s, n, el_raft_entry(&n->node.raft, i));
		if (!s->clients_done)
			sim_clients_deliver(s, n, &rd);
		int err = el_node_advance(&n->node, &rd, sim_local_ms(s, n));
		if (err != 0)
			sim_fail(s, "node %u: advance failed (%d)", n->id, err);
		sim_check_node(s, n);
	}
}

/* ---- Node lifecycle ----------------------------------------------------- */

static void boot(struct sim *s, struct sim_node *n)
{
	struct el_node_config cfg = { .raft = {
		.id = n->id,
		.election_ms_min = SIM_ELECTION_MS,
		.heartbeat_ms = SIM_HEARTBEAT_MS,
		.prevote = true,
		.check_quorum = true,
	} };
	struct sim_disk *d = &n->disk;
	n->boot_global_ms = s->now_ms;
	n->boot_local_ms = sim_rand(s) % 100000; /* a reboot restarts the monotonic clock */
	n->up = true;
	n->started = true;
	n->paused_until = 0;
	n->seen_term = n->seen_commit = n->seen_applied = 0;
	n->was_leader = false;
	memset(&n->sm, 0, sizeof(n->sm));
	if (el_node_init(&n->node, &cfg, sim_rand(s)) != 0)
		sim_fail(s, "node %u: init failed", n->id);
	struct el_raft *r = el_node_raft(&n->node);
	int err = 0;
	if (d->has_snapshot)
		err = el_raft_load_snapshot(r, &d->snap, d->snap_data);
	for (uint64_t i = d->snap.index + 1; err == 0 && i <= d->last; i++)
		err = el_raft_load_entry(r, &d->log[i & (EL_LOG_WINDOW - 1)]);
	if (err == 0 && d->has_hs)
		err = el_raft_load_hard_state(r, &d->hs);
	if (err != 0)
		sim_fail(s, "node %u: recovery refused its own disk (%d)", n->id, err);
	/* A torn batch may have stored a commit beyond its entries; recovery
	 * clamps it, and that clamped value is the durable floor from now on. */
	if (d->hs.commit > r->commit)
		d->hs.commit = r->commit;
	el_node_start(&n->node, sim_local_ms(s, n));
	sim_drain(s, n);
}

static void crash(struct sim *s, struct sim_node *n)
{
	sim_log(s, "crash node %u", n->id);
	n->up = false;
	n->links_lost = 0;
	s->crashes++;
	if (s->p.link_lost_pct == 0 || !sim_pct(s, s->p.link_lost_pct))
		return; /* a power cut: no one hears, the election timeout must do */
	for (uint32_t i = 0; i < s->p.n_nodes; i++)
		if (&s->nodes[i] != n && s->nodes[i].up)
			s->nodes[i].links_lost |= 1u << (n->id - 1);
}

/* Tell a node of the links that closed since its last turn (a transport
 * would, on its own thread; here it waits for the node to run). */
static void tell_links_lost(struct sim *s, struct sim_node *n)
{
	for (uint32_t i = 0; i < s->p.n_nodes && n->links_lost != 0; i++) {
		if ((n->links_lost >> i & 1u) == 0)
			continue;
		n->links_lost &= ~(1u << i);
		sim_log(s, "node %u: link from node %u lost", n->id, i + 1);
		el_node_peer_lost(&n->node, (el_id_t)(i + 1), sim_local_ms(s, n));
		sim_drain(s, n);
	}
}

/* ---- Workload ----------------------------------------------------------- */

static struct sim_node *find_leader(struct sim *s)
{
	struct sim_node *best = NULL;
	for (uint32_t i = 0; i < s->p.n_nodes; i++) {
		struct sim_node *n = &s->nodes[i];
		if (runnable(s, n) && el_raft_state(&n->node.raft) == EL_LEADER &&
		    (best == NULL || n->node.raft.term > best->node.raft.term))
			best = n;
	}
	return best;
}

static void change_membership(struct sim *s, struct sim_node *l)
{
	struct el_raft *r = &l->node.raft;
	el_id_t id = (el_id_t)(1 + sim_rand(s) % s->p.n_nodes);
	const struct el_member *m = el_conf_find(el_raft_conf(r), id);
	enum el_conf_op op;
	if (m == NULL) {
		struct sim_node *n = &s->nodes[id - 1];
		if (!n->started)
			boot(s, n); /* a brand-new, empty node joins */
		op = sim_pct(s, 75) ? EL_CONF_ADD_VOTER : EL_CONF_ADD_LEARNER;
	} else if (m->role == EL_MEMBER_LEARNER) {
		op = sim_pct(s, 50) ? EL_CONF_PROMOTE : EL_CONF_REMOVE;
	} else {
		op = EL_CONF_REMOVE;
	}
	if (el_raft_propose_conf(r, op, id, sim_local_ms(s, l), NULL) == 0) {
		s->conf_changes++;
		sim_log(s, "conf change op %d node %u via leader %u", op, id, l->id);
	}
}

static void do_work(struct sim *s)
{
	struct sim_node *l = find_leader(s);
	if (l != NULL && s->now_ms < s->p.heal_ms) {
		if (sim_pct(s, s->p.conf_pct))
			change_membership(s, l);
		if (sim_pct(s, s->p.transfer_pct)) {
			el_id_t to = (el_id_t)(1 + sim_rand(s) % s->p.n_nodes);
			if (el_raft_transfer(&l->node.raft, to, sim_local_ms(s, l)) == 0)
				s->transfers++;
		}
		sim_drain(s, l);
	}
	if (!s->clients_done)
		sim_clients_work(s);
}

/* ---- Faults ------------------------------------------------------------- */

static void partition(struct sim *s)
{
	uint32_t n = s->p.n_nodes;
	uint32_t side = (uint32_t)sim_rand(s); /* bit i: node i on side B */
	bool one_way = sim_pct(s, 30);
	for (uint32_t a = 0; a < n; a++)
		for (uint32_t b = 0; b < n; b++)
			if (((side >> a) & 1) != ((side >> b) & 1) && (!one_way || ((side >> a) & 1)))
				s->cut[a][b] = true;
	sim_log(s, "partition mask %x%s", side & ((1u << n) - 1), one_way ? " one-way" : "");
}

/* Faults aimed at the leader: the ones that leave uncommitted tails from
 * several terms behind (Raft paper, figure 8). */
static void leader_fault(struct sim *s)
{
	struct sim_node *l = find_leader(s);
	if (l == NULL)
		return;
	if (sim_pct(s, 50)) {
		crash(s, l);
		return;
	}
	for (uint32_t i = 0; i < s->p.n_nodes; i++) /* isolate it, maybe with one peer */
		if (i != l->id - 1 && (i & 1u) != (uint32_t)(sim_rand(s) & 1u))
			s->cut[l->id - 1][i] = s->cut[i][l->id - 1] = true;
	sim_log(s, "isolate leader %u", l->id);
}

static void do_fault(struct sim *s)
{
	struct sim_node *n = &s->nodes[sim_rand(s) % s->p.n_nodes];
	if (sim_pct(s, s->p.partition_pct))
		partition(s);
	if (sim_pct(s, s->p.leader_fault_pct))
		leader_fault(s);
	if (sim_pct(s, 30))
		memset(s->cut, 0, sizeof(s->cut));
	sim_clients_fault(s);
	if (s->p.link_reset_pct != 0 && sim_pct(s, s->p.link_reset_pct)) {
		/* a link resets while both ends live: the hint is wrong */
		struct sim_node *a = &s->nodes[sim_rand(s) % s->p.n_nodes];
		uint32_t b = (uint32_t)(sim_rand(s) % s->p.n_nodes);
		if (a->up && b != a->id - 1)
			a->links_lost |= 1u << b;
	}
	if (n->started && n->up && sim_pct(s, s->p.crash_pct)) {
		crash(s, n);
	} else if (n->started && !n->up && sim_pct(s, 50)) {
		boot(s, n);
	} else if (n->up && sim_pct(s, s->p.pause_pct)) {
		/* Longer than an election timeout: the rest of the cluster moves on. */
		n->paused_until = s->now_ms + sim_rand(s) % (4 * SIM_ELECTION_MS);
	}
}

static void heal(struct sim *s)
{
	memset(s->cut, 0, sizeof(s->cut));
	s->p.drop_pct = 0;
	s->p.dup_pct = 0;
	for (uint32_t i = 0; i < s->p.n_nodes; i++) {
		struct sim_node *n = &s->nodes[i];
		n->paused_until = 0;
		if (n->started && !n->up)
			boot(s, n);
	}
	sim_clients_heal(s);
	sim_log(s, "heal");
}

/* ---- Event loop --------------------------------------------------------- */

static struct sim_msg *next_msg(struct sim *s)
{
	struct sim_msg *best = NULL;
	for (uint32_t i = 0; i < SIM_MSGS_MAX; i++) {
		struct sim_msg *q = &s->msgs[i];
		if (!q->used)
			continue;
		const struct sim_node *to = &s->nodes[q->m.to - 1];
		if (to->up && s->now_ms < to->paused_until)
			continue; /* waits in the paused node's socket buffer */
		if (best == NULL || q->deliver_ms < best->deliver_ms ||
		    (q->deliver_ms == best->deliver_ms && q->seq < best->seq))
			best = q;
	}
	return best;
}

static void deliver(struct sim *s, struct sim_msg *q)
{
	struct sim_node *to = &s->nodes[q->m.to - 1];
	q->used = false;
	if (!to->up)
		return;
	struct el_msg m = q->m;
	m.entries = m.n_entries > 0 ? q->entries : NULL;
	m.data = m.data_len > 0 ? q->data : NULL;
	struct sim_log_mark mark = sim_log_mark(&to->node.raft);
	bool stale = m.term < to->node.raft.term;
	int err = el_node_step(&to->node, &m, sim_local_ms(s, to));
	if (stale)
		sim_check_log_unchanged(s, to, &mark);
	/* Every peer here is honest: a refusal means one of them broke a rule
	 * the receiver checks (Leader Completeness, one leader per term, ...). */
	if (err != 0)
		sim_fail(s, "node %u refused a message type %u from node %u: %d", to->id, m.type,
			 m.from, err);
	sim_drain(s, to);
	s->steps++;
}

static uint64_t next_event_ms(struct sim *s, uint64_t fault_ms, uint64_t work_ms)
{
	uint64_t t = fault_ms < work_ms ? fault_ms : work_ms;
	struct sim_msg *q = next_msg(s);
	if (q != NULL && q->deliver_ms < t)
		t = q->deliver_ms;
	for (uint32_t i = 0; i < s->p.n_nodes; i++) {
		const struct sim_node *n = &s->nodes[i];
		if (!n->up)
			continue;
		uint64_t g = s->now_ms < n->paused_until ? n->paused_until
							 : to_global(s, n, el_node_deadline(&n->node));
		if (g < t)
			t = g;
	}
	return t < s->now_ms ? s->now_ms : t;
}

static void tick_due(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_nodes && !s->failed; i++) {
		struct sim_node *n = &s->nodes[i];
		if (!runnable(s, n))
			continue;
		tell_links_lost(s, n);
		uint64_t local = sim_local_ms(s, n);
		if (local >= el_node_deadline(&n->node)) {
			el_node_tick(&n->node, local);
			sim_drain(s, n);
		}
	}
}

static void track_liveness(struct sim *s)
{
	if (s->now_ms < s->p.heal_ms || s->heal_leader_ms != 0)
		return;
	struct sim_node *l = find_leader(s);
	if (l != NULL) {
		s->heal_leader_ms = s->now_ms;
		sim_log(s, "leader %u after heal", l->id);
	}
}

/* ---- Quiet phase (sim.h) ------------------------------------------------ */

static bool can_change_conf(const struct el_raft *r)
{
	return r->conf_index <= r->commit && r->transferee == 0 &&
	       el_raft_term_at(r, r->commit) == r->term && r->last_index - r->snap.index < EL_LOG_WINDOW &&
	       r->last_index - r->commit <= EL_UNCOMMITTED_MAX;
}

/* A caught-up member waiting for its promotion while the leader could
 * promote it is promoted within SIM_PROMOTE_BOUND_MS. */
static void check_promotion(struct sim *s)
{
	struct sim_node *l = find_leader(s);
	uint64_t key = l == NULL ? 0 : (uint64_t)l->id << 48 | l->node.raft.term;
	if (s->now_ms < s->p.heal_ms || key != s->promote_key) {
		memset(s->caught_up_ms, 0, sizeof(s->caught_up_ms));
		s->promote_key = key;
	}
	if (l == NULL || s->now_ms < s->p.heal_ms)
		return;
	const struct el_raft *r = &l->node.raft;
	bool can = can_change_conf(r);
	for (uint32_t i = 0; i < SIM_NODES_MAX; i++) {
		const struct el_member *m = i < r->conf.n ? &r->conf.m[i] : NULL;
		uint64_t *since = &s->caught_up_ms[i];
		if (m == NULL || m->role != EL_MEMBER_CATCHING_UP || !can || r->pr[i].match < r->commit) {
			*since = 0;
		} else if (*since == 0) {
			*since = s->now_ms;
		} else if (s->now_ms > *since + SIM_PROMOTE_BOUND_MS) {
			sim_fail(s, "promotion: node %u caught up at %llu and promotable, still not a "
				    "voter %u ms later", m->id, (unsigned long long)*since,
				 SIM_PROMOTE_BOUND_MS);
		}
	}
}

/* Once idle: the leader compacts; a spare joins, the first time as a voter
 * while a transfer whose TimeoutNow is lost is pending, the second time as a
 * learner (nothing follows its snapshot: no promotion, no entry). */
static void quiet_join(struct sim *s)
{
	s->quiet_joined++;
	s->quiet_start_ms = s->now_ms;
	s->quiet_since_ms = 0;
	struct sim_node *l = find_leader(s);
	if (l == NULL)
		return;
	struct el_raft *r = &l->node.raft;
	el_raft_compact(r, el_raft_applied(r), el_node__write_snapshot, &l->node);
	s->drop_timeout_now = true;
	for (uint32_t i = 0; i < s->p.n_nodes; i++) {
		struct sim_node *n = &s->nodes[i];
		if (el_conf_find(el_raft_conf(r), n->id) != NULL)
			continue;
		if (!n->started || !n->up)
			boot(s, n);
		bool voter = s->quiet_joined == 1;
		if (el_raft_propose_conf(r, voter ? EL_CONF_ADD_VOTER : EL_CONF_ADD_LEARNER, n->id,
					 sim_local_ms(s, l), NULL) != 0)
			break;
		s->quiet_joins++;
		sim_log(s, "quiet: node %u joins via leader %u", n->id, l->id);
		if (!voter) { /* it may catch up only once the leader compacted all */
			s->quiet_cut_id = n->id;
			for (uint32_t j = 0; j < s->p.n_nodes; j++)
				s->cut[j][n->id - 1] = s->cut[n->id - 1][j] = true;
		}
		for (uint32_t j = 0; j < r->conf.n && voter; j++) {
			const struct el_member *m = &r->conf.m[j];
			if (m->role == EL_MEMBER_VOTER && m->id != l->id &&
			    el_raft_transfer(r, m->id, sim_local_ms(s, l)) == 0) {
				sim_log(s, "quiet: transfer to %u (its TimeoutNow is lost)", m->id);
				break;
			}
		}
		break;
	}
	sim_drain(s, l);
}

/* Whether every member is up, holds and has committed the leader's last
 * entry, the leader knows it, and no change or transfer is under way. */
static bool cluster_idle(struct sim *s, const struct sim_node *l)
{
	const struct el_raft *r = &l->node.raft;
	if (r->transferee != 0 || r->commit != r->last_index || r->conf_index > r->commit)
		return false;
	for (uint32_t i = 0; i < r->conf.n; i++) {
		const struct el_member *m = &r->conf.m[i];
		const struct sim_node *n = &s->nodes[m->id - 1];
		if (m->role == EL_MEMBER_CATCHING_UP || !n->up || n->node.raft.last_index != r->last_index ||
		    n->node.raft.commit != r->commit)
			return false;
		/* ...and the leader knows it (no probe or snapshot under way) */
		if (m->id != l->id && (r->pr[i].state != EL_PR_REPLICATE || r->pr[i].match != r->last_index))
			return false;
	}
	return true;
}

static bool is_voter(const struct sim_node *n)
{
	const struct el_member *m = el_conf_find(el_raft_conf(&n->node.raft), n->id);
	return m != NULL && m->role == EL_MEMBER_VOTER;
}

/* Every voter of l's configuration is up and follows l in l's term. */
static bool settled(const struct sim *s, const struct sim_node *l)
{
	const struct el_conf *c = el_raft_conf(&l->node.raft);
	if (l->node.raft.transferee != 0 || !is_voter(l))
		return false;
	for (uint32_t i = 0; i < c->n; i++) {
		if (c->m[i].role != EL_MEMBER_VOTER || c->m[i].id > s->p.n_nodes)
			continue;
		const struct sim_node *n = &s->nodes[c->m[i].id - 1];
		if (!runnable(s, n) || el_raft_term(&n->node.raft) != el_raft_term(&l->node.raft) ||
		    el_raft_leader(&n->node.raft) != l->id)
			return false;
	}
	return true;
}

/* Every client stops; once the cluster is idle, quiet_join. */
static void quiet_start(struct sim *s)
{
	s->quiet = true;
	s->quiet_start_ms = s->now_ms;
	s->quiet_since_ms = 0;
	sim_clients_stop(s);
}

/* The learner of the second join stays cut off until its addition has
 * committed and been applied; then the leader compacts up to its last index
 * and lets it in: it gets a snapshot that nothing follows (issue 19's endless
 * empty append/ack exchange). */
static void quiet_admit_learner(struct sim *s)
{
	struct sim_node *l = find_leader(s);
	if (l == NULL)
		return;
	struct el_raft *r = &l->node.raft;
	if (el_raft_applied(r) != r->last_index)
		return;
	el_raft_compact(r, el_raft_applied(r), el_node__write_snapshot, &l->node);
	sim_drain(s, l);
	for (uint32_t j = 0; j < s->p.n_nodes; j++)
		s->cut[j][s->quiet_cut_id - 1] = s->cut[s->quiet_cut_id - 1][j] = false;
	sim_log(s, "quiet: learner %u let in after a compaction to %llu", s->quiet_cut_id,
		(unsigned long long)r->snap.index);
	s->quiet_cut_id = 0;
}

/* Returns true when the quiet phase is over (passed or failed). */
static bool quiet_step(struct sim *s)
{
	if (s->quiet_cut_id != 0)
		quiet_admit_learner(s);
	struct sim_node *l = find_leader(s);
	bool idle = l != NULL && cluster_idle(s, l);
	uint64_t mark = l == NULL ? 0 : (uint64_t)l->id << 56 ^ l->node.raft.term << 32 ^
						  l->node.raft.last_index;
	if (!idle) {
		s->quiet_since_ms = 0;
	} else if (s->quiet_since_ms == 0 || mark != s->quiet_mark) {
		s->quiet_mark = mark;
		s->quiet_since_ms = s->now_ms;
		s->quiet_leader = l->id;
		s->quiet_last = l->node.raft.last_index;
	}
	if (s->quiet_since_ms == 0 && s->now_ms > s->quiet_start_ms + SIM_QUIET_SETTLE_MS) {
		if (s->verbose)
			sim_dump_nodes(s);
		sim_fail(s, "quiescence: the healed cluster did not go idle within %u ms%s",
			 SIM_QUIET_SETTLE_MS, s->quiet_joined ? " of a join" : "");
		return true;
	}
	bool measured = s->quiet_since_ms != 0 &&
			s->now_ms >= s->quiet_since_ms + SIM_QUIET_WAIT_MS + SIM_QUIET_MEASURE_MS;
	if (measured && s->quiet_joined < 2) {
		quiet_join(s);
		return false;
	}
	return measured;
}

/* The stability property (see SIM_SETTLE_MS in sim.h). */
static void track_stability(struct sim *s)
{
	if (s->now_ms < s->p.heal_ms + SIM_SETTLE_MS)
		return;
	struct sim_node *l = find_leader(s);
	if (s->stable_leader == 0) {
		if (l != NULL && settled(s, l)) {
			s->stable_leader = l->id;
			s->stable_term = el_raft_term(&l->node.raft);
			sim_log(s, "settled on leader %u term %llu", l->id,
				(unsigned long long)s->stable_term);
		}
		return;
	}
	if (!is_voter(&s->nodes[s->stable_leader - 1])) {
		s->stable_leader = 0; /* it removed itself: a new leader is due */
		return;
	}
	if (l == NULL || l->id != s->stable_leader || el_raft_term(&l->node.raft) != s->stable_term)
		sim_fail(s, "stability: leader %u of term %llu lost its leadership (now %u) with no fault "
			    "since the heal", s->stable_leader, (unsigned long long)s->stable_term,
			 l == NULL ? 0 : l->id);
}

static uint32_t voters_of(const struct sim_node *l)
{
	const struct el_conf *c = el_raft_conf(&l->node.raft);
	uint32_t n = 0;
	for (uint32_t i = 0; i < c->n; i++)
		n += c->m[i].role == EL_MEMBER_VOTER;
	return n;
}

/* Liveness is proven: stop the clients and start the stability probe. */
static void start_probe(struct sim *s)
{
	sim_clients_finish(s);
	s->clients_done = true;
	s->probe_start_ms = s->now_ms;
	s->p.end_ms = s->now_ms + SIM_PROBE_MS;
	sim_log(s, "stability probe");
}

/* See SIM_PROBE_MS in sim.h; track_stability checks the leader stays. */
static void stability_probe(struct sim *s)
{
	if (s->probe_cut_ms == 0) {
		if (s->stable_leader == 0 || s->now_ms < s->probe_start_ms + SIM_SETTLE_MS)
			return;
		struct sim_node *l = &s->nodes[s->stable_leader - 1];
		const struct el_conf *c = el_raft_conf(&l->node.raft);
		if (voters_of(l) < 3)
			return; /* cutting a follower off would cost the quorum */
		el_id_t f = 0;
		for (uint32_t k = 0, start = (uint32_t)sim_rand(s); k < c->n && f == 0; k++) {
			const struct el_member *m = &c->m[(start + k) % c->n];
			if (m->role == EL_MEMBER_VOTER && m->id != l->id)
				f = m->id;
		}
		bool from_all = sim_pct(s, 50);
		for (uint32_t i = 0; i < s->p.n_nodes; i++)
			if (i != f - 1 && (from_all || i == l->id - 1))
				s->cut[f - 1][i] = s->cut[i][f - 1] = true;
		s->probe_cut_ms = s->now_ms;
		s->probe_heal_ms = s->now_ms + 3 * SIM_ELECTION_MS + sim_rand(s) % (4 * SIM_ELECTION_MS);
		s->probes++;
		sim_log(s, "probe: cut follower %u off %s until %llu", f,
			from_all ? "from all" : "from the leader", (unsigned long long)s->probe_heal_ms);
	} else if (s->probe_heal_ms != 0 && s->now_ms >= s->probe_heal_ms) {
		memset(s->cut, 0, sizeof(s->cut));
		s->probe_heal_ms = 0;
		sim_log(s, "probe: healed");
	}
}

static void run_loop(struct sim *s)
{
	uint64_t fault_ms = 50, work_ms = 10;
	bool healed = false;
	/* Once the probe's holder died, run until its waiter's bound. */
	while (!s->failed && (s->now_ms < s->p.end_ms || s->live_bound_ms != 0)) {
		s->now_ms = next_event_ms(s, fault_ms, work_ms);
		if (!healed && s->now_ms >= s->p.heal_ms) {
			healed = true;
			heal(s);
		}
		struct sim_msg *q = next_msg(s);
		if (q != NULL && q->deliver_ms <= s->now_ms)
			deliver(s, q);
		tick_due(s);
		if (s->now_ms >= fault_ms) {
			if (!healed)
				do_fault(s);
			fault_ms = s->now_ms + 20 + sim_rand(s) % 200;
		}
		if (s->now_ms >= work_ms) {
			do_work(s);
			work_ms = s->now_ms + 1 + sim_rand(s) % 20;
		}
		track_liveness(s);
		check_promotion(s);
		if (!s->quiet_run)
			track_stability(s);
		if (s->clients_done) { /* the stability probe, until its end */
			stability_probe(s);
			if (s->now_ms >= s->p.end_ms)
				break;
			continue;
		}
		if (s->quiet && quiet_step(s))
			break;
		if (s->live_granted_ms != 0 && s->now_ms > s->live_granted_ms + 300 && !s->quiet) {
			/* Proven live, and a little more traffic was checked: each seed
			 * then runs one ending (tests/sim/README.md). */
			if (s->quiet_run) {
				quiet_start(s);
			} else {
				start_probe(s);
				continue;
			}
		}
		if (s->live_granted_ms == 0 && s->live_bound_ms != 0 && s->now_ms > s->live_bound_ms &&
		    (s->live_asked_ms != 0 || s->now_ms > s->live_bound_ms + SIM_WAITER_BUSY_MS))
			break;
	}
	if (!s->failed && !s->clients_done)
		sim_clients_finish(s);
	sim_check_liveness(s);
}

/* ---- Setup -------------------------------------------------------------- */

static void draw_params(struct sim *s)
{
	struct sim_params *p = &s->p;
	p->n_nodes = 1 + (uint32_t)(sim_rand(s) % SIM_NODES_MAX);
	p->n_initial = 1 + (uint32_t)(sim_rand(s) % p->n_nodes);
	p->drop_pct = (uint32_t)(sim_rand(s) % 25);
	p->dup_pct = (uint32_t)(sim_rand(s) % 10);
	p->delay_ms_max = 1 + (uint32_t)(sim_rand(s) % 60);
	p->partition_pct = (uint32_t)(sim_rand(s) % 40);
	p->crash_pct = (uint32_t)(sim_rand(s) % 30);
	p->pause_pct = (uint32_t)(sim_rand(s) % 15);
	p->conf_pct = (uint32_t)(sim_rand(s) % 4);
	p->transfer_pct = (uint32_t)(sim_rand(s) % 3);
	p->torn_pct = (uint32_t)(sim_rand(s) % 5);
	p->leader_fault_pct = (uint32_t)(sim_rand(s) % 40);
	p->n_clients = 2 + (uint32_t)(sim_rand(s) % (SIM_CLIENTS_MAX - 1));
	if (p->n_clients > SIM_CLIENTS_FIT)
		p->n_clients = SIM_CLIENTS_FIT; /* the offered load must fit (sim.h) */
	p->client_pause_pct = (uint32_t)(sim_rand(s) % 30);
	p->client_crash_pct = (uint32_t)(sim_rand(s) % 15);
	p->live_delay_ms = (uint32_t)(sim_rand(s) % 500);
	const uint64_t h = (s->seed + 1) * 0x9E3779B97F4A7C15ull; /* not from s->rng */
	if ((h >> 60) % 4 != 0) {
		p->link_lost_pct = 30 + (uint32_t)((h >> 8) % 71);
		p->link_reset_pct = (uint32_t)((h >> 24) % 20);
	}
	p->heal_ms = 2000 + sim_rand(s) % 6000;
	/* Room for the liveness probe: the holder must get the lock first. */
	p->end_ms = p->heal_ms + SIM_LEADER_BOUND_MS + 2 * (1500 + 500) + 4 * SIM_LOCK_SLACK_MS;
}

int sim_run(struct sim *s, uint64_t seed, bool verbose)
{
	memset(s, 0, sizeof(*s));
	s->seed = seed;
	s->quiet_run = (seed & 1) != 0; /* which ending after the heal (README) */
	s->rng = seed ^ 0x6A09E667F3BCC909ull;
	s->verbose = verbose;
	for (int i = 0; i < 4; i++)
		sim_rand(s);
	draw_params(s);
	struct el_conf conf = { .n = (uint8_t)s->p.n_initial };
	for (uint32_t i = 0; i < s->p.n_nodes; i++) {
		struct sim_node *n = &s->nodes[i];
		n->id = i + 1;
		n->clock_rate = 980 + (uint32_t)(sim_rand(s) % 41); /* +-2% drift */
		if (i < s->p.n_initial) {
			conf.m[i].id = n->id;
			conf.m[i].role = EL_MEMBER_VOTER;
		}
	}
	for (uint32_t i = 0; i < s->p.n_initial; i++) {
		struct sim_node *n = &s->nodes[i];
		boot(s, n);
		if (el_raft_bootstrap(el_node_raft(&n->node), &conf) != 0)
			sim_fail(s, "bootstrap failed");
		sim_drain(s, n);
	}
	el_lock_init(&s->ref.table);
	sim_clients_init(s);
	sim_log(s, "nodes %u initial %u clients %u drop %u%% dup %u%% delay %u crash %u%% links "
		   "lost %u%% reset %u%% heal at %llu",
		s->p.n_nodes, s->p.n_initial, s->p.n_clients, s->p.drop_pct, s->p.dup_pct,
		s->p.delay_ms_max, s->p.crash_pct, s->p.link_lost_pct, s->p.link_reset_pct,
		(unsigned long long)s->p.heal_ms);
	run_loop(s);
	return s->failed ? 1 : 0;
}

/* ---- Utilities ---------------------------------------------------------- */

uint64_t sim_rand(struct sim *s)
{
	/* splitmix64: every seed, including 0, gives a full-quality stream */
	uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint32_t sim_pct(struct sim *s, uint32_t pct)
{
	return sim_rand(s) % 100 < pct;
}

void sim_fail(struct sim *s, const char *fmt, ...)
{
	if (s->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	s->failed = true;
}

void sim_log(struct sim *s, const char *fmt, ...)
{
	if (!s->verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	printf("[%8llu] ", (unsigned long long)s->now_ms);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}
