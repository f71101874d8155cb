/*
 * mixed_node_main.c - one firmware node of a mixed cluster: a voter beside
 * Linux edgelockd nodes, reached through its UART (SLIP + CRC-32 frames of
 * the same CBOR peer messages, port/baremetal/uart/) and a relay on the
 * gateway (cmd/edgelock-uart-relay). docs/mixed-cluster.md tells the story.
 *
 * It bootstraps the cluster's initial configuration (voters 1..EL_FW_MEMBERS,
 * the same one the daemons' --bootstrap builds from their [peers]), then
 * serves Raft only: it has no client port, so whenever it wins an election
 * it hands leadership to another voter (el_raft_transfer), trying each in
 * turn; clients reach the cluster through the daemons. It logs a status line
 * through semihosting every STATUS_MS and runs until it is stopped.
 *
 * Storage is the port's RAM store: a restarted image starts empty, so it
 * must come back as a new member, not as the same voter (docs/
 * mixed-cluster.md): built with EL_FW_JOIN=1 (mixed-node-join.elf) it skips
 * the bootstrap and waits, like `edgelockd --join`, to be added with
 * `edgelock members add` after the old node 3 was removed.
 */
#include <stddef.h>

#include "board.h"
#include "el_bm_clock.h"
#include "el_bm_link.h"
#include "el_bm_log.h"
#include "el_bm_node.h"
#include "el_bm_seed.h"
#include "uart/el_bm_uart_link.h"

#ifndef EL_FW_NODE_ID
#define EL_FW_NODE_ID 3
#endif
#ifndef EL_FW_MEMBERS
#define EL_FW_MEMBERS 3
#endif
#ifndef EL_FW_JOIN
#define EL_FW_JOIN 0 /* 1: no bootstrap, learn the configuration when added */
#endif
/* The daemons' [timing] (tools/run-mixed.sh): every member must agree. */
#ifndef EL_FW_ELECTION_MS
#define EL_FW_ELECTION_MS 1000
#endif
#ifndef EL_FW_HEARTBEAT_MS
#define EL_FW_HEARTBEAT_MS 100
#endif
#define STATUS_MS 2000u
/* 25 MHz / 16: the fastest the CMSDK UART allows (QEMU does not pace it). */
#define LINK_BAUDDIV 16u

static struct el_node node;
static struct el_bm_store store EL_BM_STORAGE; /* the simulated flash */
static struct el_bm_link link;

static void hook_send(void *ctx, const struct el_msg *m)
{
	(void)ctx;
	el_bm_link_send(&link, m);
}

static const struct el_bm_node_io io = { NULL, hook_send, NULL, NULL };

static int start_node(uint64_t now_ms)
{
	const struct el_node_config cfg = { .raft = {
		.id = EL_FW_NODE_ID, .election_ms_min = EL_FW_ELECTION_MS,
		.heartbeat_ms = EL_FW_HEARTBEAT_MS, .prevote = true, .check_quorum = true,
	} };
	struct el_conf conf = { .n = EL_FW_MEMBERS };
	for (uint8_t i = 0; i < EL_FW_MEMBERS; i++)
		conf.m[i] = (struct el_member){ .id = (el_id_t)(i + 1u), .role = EL_MEMBER_VOTER };
	el_bm_store_init(&store);
	int err = el_node_init(&node, &cfg, el_bm_seed(EL_FW_NODE_ID));
	if (err == 0 && !EL_FW_JOIN)
		err = el_raft_bootstrap(el_node_raft(&node), &conf);
	if (err == 0)
		el_node_start(&node, now_ms);
	return err;
}

/* A leader without a client port hands over: to the next voter after the
 * last one tried (a dead one lets the transfer time out, then the next). */
static void hand_over(uint64_t now_ms)
{
	static uint64_t next_ms;
	static uint32_t turn;
	struct el_raft *r = el_node_raft(&node);
	if (el_raft_state(r) != EL_LEADER || now_ms < next_ms)
		return;
	next_ms = now_ms + EL_FW_ELECTION_MS;
	const struct el_conf *c = el_raft_conf(r);
	for (uint32_t k = 0; k < c->n; k++) {
		const struct el_member *m = &c->m[(turn + k) % c->n];
		if (m->id != EL_FW_NODE_ID && m->role == EL_MEMBER_VOTER) {
			turn = (turn + k + 1u) % c->n;
			if (el_raft_transfer(r, m->id, now_ms) == 0)
				el_bm_logf("node %u: leader without clients, handing over to node %u\n",
					   (unsigned)EL_FW_NODE_ID, (unsigned)m->id);
			return;
		}
	}
}

static void status(uint64_t now_ms)
{
	static uint64_t next_ms;
	if (now_ms < next_ms)
		return;
	next_ms = now_ms + STATUS_MS;
	const struct el_raft *r = el_node_raft(&node);
	const struct el_bm_frame_stats *s = el_bm_uart_link_stats();
	el_bm_logf("node %u: %s term %llu leader %u commit %llu applied %llu; frames in %u, "
		   "dropped %u (crc %u), refused %u, out %u\n",
		   (unsigned)EL_FW_NODE_ID,
		   el_raft_state(r) == EL_LEADER ? "leader"
		   : el_raft_state(r) == EL_FOLLOWER ? "follower" : "candidate",
		   (unsigned long long)el_raft_term(r), (unsigned)el_raft_leader(r),
		   (unsigned long long)el_raft_commit(r), (unsigned long long)el_raft_applied(r),
		   (unsigned)s->frames,
		   (unsigned)(s->bad_crc + s->too_long + s->bad_escape + s->too_short + s->cut),
		   (unsigned)s->bad_crc, (unsigned)link.refused, (unsigned)link.sent);
}

/* One pass: input, timers, hand-over, output; true when it did anything. */
static int poll_node(uint64_t now_ms, bool *busy)
{
	*busy = false;
	for (const struct el_msg *m; (m = el_bm_link_poll(&link)) != NULL; *busy = true)
		el_node_step(&node, m, now_ms);
	if (now_ms >= el_node_deadline(&node))
		el_node_tick(&node, now_ms);
	hand_over(now_ms);
	status(now_ms);
	*busy = *busy || el_node_has_ready(&node);
	return el_bm_drive_node(&node, &store, &io, now_ms);
}

int main(void)
{
	el_bm_clock_start(EL_BOARD_CPU_HZ);
	el_bm_uart_link_init(EL_BOARD_LINK_UART, LINK_BAUDDIV);
	el_bm_logf("node %u on %s: mixed-cluster member, link on UART0\n",
		   (unsigned)EL_FW_NODE_ID, EL_BOARD_NAME);
	int err = start_node(el_bm_now_ms());
	bool busy = false;
	while (err == 0) {
		err = poll_node(el_bm_now_ms(), &busy);
		if (!busy)
			el_bm_idle(); /* until SysTick (1 ms) */
	}
	el_bm_logf("node %u: stopped, err %d\n", (unsigned)EL_FW_NODE_ID, err);
	return 1;
}
