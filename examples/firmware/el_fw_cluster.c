/*
 * el_fw_cluster.c - the three-node in-memory cluster (see el_fw_cluster.h).
 */
#include "el_bm_node.h"
#include "el_error.h"
#include "el_fw_cluster.h"

#define ELECTION_MS_MIN 150u
#define HEARTBEAT_MS 30u

static struct el_fw_node *node_by_id(struct el_fw_cluster *c, el_id_t id)
{
	for (int i = 0; i < EL_FW_NODES; i++)
		if (c->node[i].id == id)
			return &c->node[i];
	return 0;
}

static bool running(const struct el_fw_node *n)
{
	return n->up && n->stop_error == 0;
}

/* ---- the ready loop's hooks (ctx: the cluster) ---- */

static void hook_send(void *ctx, const struct el_msg *m)
{
	struct el_fw_cluster *c = ctx;
	el_fw_net_send(&c->net, m);
}

static void hook_reply(void *ctx, const struct el_node_reply *r)
{
	struct el_fw_cluster *c = ctx;
	c->replies[c->n_replies++ % EL_FW_REPLIES] = *r;
}

static void hook_event(void *ctx, const struct el_lock_event *e)
{
	struct el_fw_cluster *c = ctx;
	if (e->kind == EL_EV_GRANTED)
		c->grants[c->n_grants++ % EL_FW_GRANTS] = *e;
}

static void drive(struct el_fw_cluster *c, struct el_fw_node *n)
{
	if (!running(n))
		return;
	const struct el_bm_node_io io = { c, hook_send, hook_reply, hook_event };
	int err = el_bm_drive_node(&n->node, &n->store, &io, c->now_ms);
	if (err != EL_OK)
		n->stop_error = err;
}

/* ---- life cycle ---- */

static int init_node(struct el_fw_node *n)
{
	const struct el_node_config cfg = { .raft = {
		.id = n->id,
		.election_ms_min = ELECTION_MS_MIN,
		.heartbeat_ms = HEARTBEAT_MS,
		.prevote = true,
		.check_quorum = true,
	} };
	return el_node_init(&n->node, &cfg, n->seed);
}

int el_fw_cluster_init(struct el_fw_cluster *c, uint64_t seed, uint64_t now_ms)
{
	struct el_conf conf = { .n = EL_FW_NODES };
	for (int i = 0; i < EL_FW_NODES; i++)
		conf.m[i] = (struct el_member){ .id = (el_id_t)(i + 1), .role = EL_MEMBER_VOTER };
	c->now_ms = now_ms;
	c->n_replies = c->n_grants = 0;
	el_fw_net_init(&c->net);
	for (int i = 0; i < EL_FW_NODES; i++) {
		struct el_fw_node *n = &c->node[i];
		n->id = (el_id_t)(i + 1);
		n->up = true;
		n->isolated = false;
		n->stop_error = 0;
		n->seed = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1u;
		el_bm_store_init(&n->store);
		int err = init_node(n);
		if (err == EL_OK)
			err = el_raft_bootstrap(el_node_raft(&n->node), &conf);
		if (err != EL_OK)
			return err;
		el_node_start(&n->node, now_ms);
	}
	return EL_OK;
}

void el_fw_cluster_power_off(struct el_fw_cluster *c, int i)
{
	c->node[i].up = false;
}

int el_fw_cluster_power_on(struct el_fw_cluster *c, int i, uint64_t now_ms)
{
	struct el_fw_node *n = &c->node[i];
	n->seed += 0x51ed27u; /* a reboot draws new timeouts */
	int err = init_node(n);
	if (err == EL_OK)
		err = el_bm_restart_node(&n->node, &n->store, now_ms);
	n->up = err == EL_OK;
	n->stop_error = err;
	return err;
}

/* ---- one round ---- */

static void tick_due(struct el_fw_cluster *c)
{
	for (int i = 0; i < EL_FW_NODES; i++) {
		struct el_fw_node *n = &c->node[i];
		if (running(n) && c->now_ms >= el_node_deadline(&n->node))
			el_node_tick(&n->node, c->now_ms);
	}
}

static void deliver_queued(struct el_fw_cluster *c)
{
	/* Only what was queued before this round: replies wait for the next. */
	for (uint32_t k = c->net.count; k > 0; k--) {
		const struct el_msg *m = el_fw_net_peek(&c->net);
		const struct el_fw_node *from = node_by_id(c, m->from);
		struct el_fw_node *to = node_by_id(c, m->to);
		if (to != 0 && from != 0 && running(to) && !to->isolated && !from->isolated)
			el_node_step(&to->node, m, c->now_ms);
		el_fw_net_pop(&c->net);
	}
}

void el_fw_cluster_step(struct el_fw_cluster *c, uint64_t now_ms)
{
	c->now_ms = now_ms;
	tick_due(c);
	for (int i = 0; i < EL_FW_NODES; i++)
		drive(c, &c->node[i]);
	deliver_queued(c);
	for (int i = 0; i < EL_FW_NODES; i++)
		drive(c, &c->node[i]);
}

int el_fw_cluster_leader(const struct el_fw_cluster *c)
{
	int best = -1;
	for (int i = 0; i < EL_FW_NODES; i++) {
		const struct el_raft *r = &c->node[i].node.raft;
		if (!running(&c->node[i]) || el_raft_state(r) != EL_LEADER)
			continue;
		if (best < 0 || el_raft_term(r) > el_raft_term(&c->node[best].node.raft))
			best = i;
	}
	return best;
}

int el_fw_cluster_submit(struct el_fw_cluster *c, uint64_t req_id, const struct el_lock_cmd *cmd)
{
	int l = el_fw_cluster_leader(c);
	el_id_t hint;
	if (l < 0)
		return EL_ENOTLEADER;
	return el_node_submit(&c->node[l].node, req_id, cmd, c->now_ms, &hint);
}

const struct el_node_reply *el_fw_cluster_reply(const struct el_fw_cluster *c, uint64_t req_id)
{
	uint32_t kept = c->n_replies < EL_FW_REPLIES ? c->n_replies : EL_FW_REPLIES;
	for (uint32_t k = 1; k <= kept; k++) { /* newest first */
		const struct el_node_reply *r = &c->replies[(c->n_replies - k) % EL_FW_REPLIES];
		if (r->req_id == req_id)
			return r;
	}
	return 0;
}

const struct el_lock_event *el_fw_cluster_grant(const struct el_fw_cluster *c, uint64_t session)
{
	uint32_t kept = c->n_grants < EL_FW_GRANTS ? c->n_grants : EL_FW_GRANTS;
	for (uint32_t k = 1; k <= kept; k++) {
		const struct el_lock_event *e = &c->grants[(c->n_grants - k) % EL_FW_GRANTS];
		if (e->session == session)
			return e;
	}
	return 0;
}
