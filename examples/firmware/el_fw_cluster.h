/*
 * el_fw_cluster.h - three edgelock nodes on one chip, joined by an in-memory
 * network: the firmware example's demo, and the cluster test that runs on
 * the Cortex-M3 under QEMU. Each node is an el_node (Raft replica + lock
 * table + leader timers) with its RAM store (port/baremetal), driven by the
 * port's ready loop. Time is whatever the caller passes: SysTick in the demo,
 * a virtual clock in the test (so the test is deterministic).
 *
 * A client of the cluster submits lock commands at the leader and finds the
 * answers (fencing tokens, sessions) and the grants to waiters in small
 * rings the cluster keeps. Faults a test can inject: power a node off and on
 * (it reloads what its store persisted), cut it off the network, fail its
 * store's next persist (the node must stop, not acknowledge).
 */
#ifndef EL_FW_CLUSTER_H
#define EL_FW_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "el_bm_store.h"
#include "el_fw_net.h"
#include "el_node.h"

#define EL_FW_NODES 3
/* Answers and grants kept for the client (the latest ones). */
#define EL_FW_REPLIES 8
#define EL_FW_GRANTS 8

struct el_fw_node {
	el_id_t id;
	bool up;         /* powered: ticks, sends and receives */
	bool isolated;   /* cut off the network (messages to and from it drop) */
	int stop_error;  /* the node stopped on this error (0 while fine) */
	uint64_t seed;
	struct el_node node;
	struct el_bm_store store; /* survives a power cycle */
};

struct el_fw_cluster {
	uint64_t now_ms;
	uint32_t n_replies; /* ever received; the ring holds the last ones */
	uint32_t n_grants;
	struct el_node_reply replies[EL_FW_REPLIES];
	struct el_lock_event grants[EL_FW_GRANTS];
	struct el_fw_net net;
	struct el_fw_node node[EL_FW_NODES];
};

/* Three bootstrapped nodes (ids 1..3), seeds derived from seed. */
int el_fw_cluster_init(struct el_fw_cluster *c, uint64_t seed, uint64_t now_ms);
/* One round at now_ms: fire due timers, drain ready batches, deliver every
 * message queued before the round, drain again. */
void el_fw_cluster_step(struct el_fw_cluster *c, uint64_t now_ms);
/* Slot of the running node that leads in the highest term, or -1. */
int el_fw_cluster_leader(const struct el_fw_cluster *c);
/* Submit a client command at the leader (EL_ENOTLEADER when none). */
int el_fw_cluster_submit(struct el_fw_cluster *c, uint64_t req_id, const struct el_lock_cmd *cmd);
/* The answer to req_id, or NULL while none (or no longer kept). */
const struct el_node_reply *el_fw_cluster_reply(const struct el_fw_cluster *c, uint64_t req_id);
/* The latest grant to a waiter of session, or NULL. */
const struct el_lock_event *el_fw_cluster_grant(const struct el_fw_cluster *c, uint64_t session);
/* Power off slot i (everything not persisted is lost). */
void el_fw_cluster_power_off(struct el_fw_cluster *c, int i);
/* Power slot i back on: a fresh node loaded from its store. */
int el_fw_cluster_power_on(struct el_fw_cluster *c, int i, uint64_t now_ms);

#endif /* EL_FW_CLUSTER_H */
