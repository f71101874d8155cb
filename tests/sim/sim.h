/*
 * sim.h - the deterministic cluster simulator: many replicas in one process,
 * a virtual clock, a seeded network and disks, faults, and invariant checks
 * after every step. One 64-bit seed decides everything, so a failing seed
 * replays exactly (`make sim SEED=n`).
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "el_raft.h"

#define SIM_NODES_MAX EL_NODES_MAX
#define SIM_MSGS_MAX 1024
#define SIM_INDEX_MAX 8192 /* highest log index a run may reach */
#define SIM_TERMS_MAX 65536
#define SIM_LM_SLOTS (1u << 15)

/* Virtual-time parameters (each node's own clock, in its ms). */
#define SIM_ELECTION_MS 150
#define SIM_HEARTBEAT_MS 30

/* Liveness bound, stated: once every fault has healed (all nodes up, no
 * partition, no loss), a leader exists within SIM_LEADER_BOUND_MS and a
 * proposal made after the heal commits within SIM_COMMIT_BOUND_MS. PreVote
 * plus randomized timeouts make repeated split votes unlikely; the bounds
 * allow ~15 election timeouts. */
#define SIM_LEADER_BOUND_MS (20 * SIM_ELECTION_MS)
#define SIM_COMMIT_BOUND_MS (30 * SIM_ELECTION_MS)

/* A replica's durable state: what survives a crash. */
struct sim_disk {
	bool has_snapshot;
	struct el_snapshot_meta snap;
	uint8_t snap_data[EL_SNAPSHOT_MAX];
	bool has_hs;
	struct el_hard_state hs;
	uint64_t last; /* stored entries cover (snap.index, last] */
	struct el_entry log[EL_LOG_WINDOW];
};

/* The toy state machine: a hash chain over applied entries. */
struct sim_sm {
	uint64_t applied;
	uint64_t hash;
};

struct sim_node {
	el_id_t id;
	bool started;     /* ever started (spares start empty, as joiners) */
	bool up;
	uint64_t paused_until;   /* global ms; a SIGSTOP-like pause */
	uint32_t clock_rate;     /* local ms per 1000 global ms (drift) */
	uint64_t boot_global_ms; /* global time of the last boot */
	uint64_t boot_local_ms;  /* local clock at that boot */
	struct el_raft raft;
	struct sim_disk disk;
	struct sim_sm sm;
	/* monotonic within one life */
	uint64_t seen_commit;
	uint64_t seen_applied;
	uint64_t seen_term;
	bool was_leader;
};

struct sim_msg {
	bool used;
	uint64_t deliver_ms;
	uint64_t seq;
	struct el_msg m;
	struct el_entry entries[EL_MSG_ENTRIES_MAX];
	uint8_t data[EL_SNAPSHOT_CHUNK];
};

/* Per-seed fault and workload knobs, drawn from the seed. */
struct sim_params {
	uint32_t n_nodes;       /* nodes that exist (members and spares) */
	uint32_t n_initial;     /* initial voters */
	uint32_t drop_pct;
	uint32_t dup_pct;
	uint32_t delay_ms_max;
	uint32_t partition_pct; /* chance per fault tick of a new partition */
	uint32_t crash_pct;
	uint32_t pause_pct;
	uint32_t propose_pct;
	uint32_t conf_pct;
	uint32_t transfer_pct;
	uint32_t compact_pct;
	uint32_t snapshot_pad;  /* state-machine snapshot size, to exercise chunking */
	uint32_t torn_pct;      /* a crash lands in the middle of a persist */
	uint32_t leader_fault_pct; /* crash or isolate the current leader */
	uint64_t heal_ms;       /* faults stop at this global time */
	uint64_t end_ms;
};

struct sim {
	uint64_t seed;
	uint64_t rng;
	uint64_t now_ms; /* global virtual time */
	bool verbose;
	struct sim_params p;
	struct sim_node nodes[SIM_NODES_MAX];
	struct sim_msg msgs[SIM_MSGS_MAX];
	uint64_t msg_seq;
	/* reachability: cut[a][b] means a's messages do not reach b */
	bool cut[SIM_NODES_MAX][SIM_NODES_MAX];
	/* what the cluster has committed, learned from every apply */
	uint64_t chain[SIM_INDEX_MAX];        /* state-machine hash after index */
	uint64_t committed_term[SIM_INDEX_MAX]; /* term of the entry at index */
	uint64_t commit_term[SIM_INDEX_MAX];    /* earliest term whose leader committed it */
	uint64_t max_committed;
	el_id_t leader_of_term[SIM_TERMS_MAX];
	/* log matching: (index, term) -> hash of entry and its predecessor's term */
	struct sim_lm_slot {
		uint64_t key;
		uint64_t hash;
	} lm[SIM_LM_SLOTS];
	/* liveness after the heal */
	uint64_t heal_proposal_index;
	uint64_t heal_proposal_term;
	uint64_t heal_leader_ms;
	uint64_t heal_commit_ms;
	/* outcome */
	bool failed;
	char why[256];
	uint64_t steps;
	uint64_t proposals;
	uint64_t conf_changes;
	uint64_t transfers;
	uint64_t snapshots_installed;
	uint64_t crashes;
};

uint64_t sim_rand(struct sim *s);
uint32_t sim_pct(struct sim *s, uint32_t pct); /* 1 with probability pct% */
void sim_fail(struct sim *s, const char *fmt, ...);
void sim_log(struct sim *s, const char *fmt, ...);

/* sim_cluster.c */
int sim_run(struct sim *s, uint64_t seed, bool verbose);
uint64_t sim_local_ms(const struct sim *s, const struct sim_node *n);

/* sim_sm.c: the toy state machine */
void sim_sm_apply(struct sim *s, struct sim_node *n, const struct el_entry *e);
struct sim_snap_ctx {
	struct sim *s;
	struct sim_node *n;
};
int sim_sm_write_snapshot(void *ctx /* struct sim_snap_ctx */, uint8_t *buf, uint32_t cap);
void sim_sm_restore(struct sim *s, struct sim_node *n, const struct el_snapshot_meta *meta,
		    const uint8_t *data);

/* sim_check.c: invariants */
void sim_check_node(struct sim *s, struct sim_node *n);
void sim_check_disk(struct sim *s, struct sim_node *n, const struct el_hard_state *before);
void sim_check_liveness(struct sim *s);
/* Persist before send: a granted vote or an append acknowledgement may leave
 * a node only once its disk holds what the message promises. */
void sim_check_durable_before_send(struct sim *s, struct sim_node *n, const struct el_msg *m);
/* A message from an older term changes no log. */
struct sim_log_mark {
	uint64_t last_index;
	uint64_t last_term;
	uint64_t snap_index;
};
struct sim_log_mark sim_log_mark(const struct el_raft *r);
void sim_check_log_unchanged(struct sim *s, struct sim_node *n, const struct sim_log_mark *mark);

#endif /* SIM_H */
