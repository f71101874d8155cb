/*
 * sim.h - the deterministic cluster simulator: many edgelock nodes in one
 * process, a virtual clock, a seeded network and disks, faults, lock clients,
 * and invariant checks after every step. One 64-bit seed decides everything,
 * so a failing seed replays exactly (`make sim SEED=n`).
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "el_node.h"
#include "el_raft.h"

#define SIM_NODES_MAX EL_NODES_MAX
#define SIM_MSGS_MAX 1024
#define SIM_INDEX_MAX 8192 /* highest log index a run may reach */
#define SIM_TERMS_MAX 65536
#define SIM_LM_SLOTS (1u << 15)

/* Virtual-time parameters (each node's own clock, in its ms). */
#define SIM_ELECTION_MS 150
#define SIM_HEARTBEAT_MS 30

/* Liveness bounds, stated. Once every fault has healed (all nodes and
 * clients up, no partition, no loss):
 *  - a leader exists within SIM_LEADER_BOUND_MS (about 15 election timeouts;
 *    PreVote and randomized timeouts make repeated split votes unlikely);
 *  - a lock whose holder died is granted to the next waiter within the
 *    holder's TTL + its lock-delay (measured on a clock up to 3% slow) +
 *    SIM_LEADER_BOUND_MS + SIM_LOCK_SLACK_MS (commits and client polling).
 * The probe: after the heal, client 0 takes the lock "live" and dies holding
 * it; client 1 waits for it forever. The bound counts from the later of the
 * holder's death and client 1's request for "live": client 1 may still be
 * queued (waiting forever) on a workload lock from before the heal, and asks
 * for "live" only once that request ends. Its place there is FIFO (the
 * reference replica checks), so that wait is the workload's, not the
 * table's: seed 10011236 of issue 19 was such a run. That earlier wait ends
 * within SIM_WAITER_BUSY_MS (at most four clients ahead, each holding for
 * up to two TTLs of at most 1.5 s, or dying with it). */
#define SIM_LEADER_BOUND_MS (20 * SIM_ELECTION_MS)
#define SIM_LOCK_SLACK_MS 1000
#define SIM_WAITER_BUSY_MS ((SIM_CLIENTS_MAX - 2) * 2 * 1500 + SIM_LOCK_SLACK_MS)

/* The bounds hold only while the offered load fits what the cluster can
 * commit. Every client sends a keepalive (a log entry) each quarter TTL, and
 * a leader commits at most EL_MSG_ENTRIES_MAX * EL_INFLIGHT_MAX entries per
 * round trip (up to 120 ms here). A configuration that commits one entry per
 * round trip cannot carry six clients: their keepalives alone exceed it, the
 * backlog outgrows their TTLs and sessions expire before their opens are
 * answered. So a run has at most two clients (the probe) plus one per entry
 * a round trip can commit, up to SIM_CLIENTS_MAX. */
#define SIM_ENTRIES_PER_RTT (EL_MSG_ENTRIES_MAX * EL_INFLIGHT_MAX)
#define SIM_CLIENTS_FIT \
	(2 + SIM_ENTRIES_PER_RTT < SIM_CLIENTS_MAX ? 2 + SIM_ENTRIES_PER_RTT : SIM_CLIENTS_MAX)

/* Quiescence and promotion, stated. After the probe has passed, every client
 * stops. Once the cluster is idle (as below, measured once), the leader
 * compacts its log, a spare node (if one exists) is added as a voter and a
 * leadership transfer whose TimeoutNow is lost is started, so the newcomer
 * catches up by snapshot from an idle leader while its promotion is refused;
 * once idle again, another spare is added as a learner, kept out until the
 * addition is applied and the leader has compacted up to its last index, so
 * that nothing follows its snapshot. Then:
 *  - a member caught up (match >= commit) while the leader can change its
 *    configuration is promoted within SIM_PROMOTE_BOUND_MS (also before);
 *  - the cluster goes idle (every member holds and has committed the
 *    leader's last entry, and the leader knows it: no probe, no snapshot,
 *    no change or transfer under way) within SIM_QUIET_SETTLE_MS, and
 *    once idle for SIM_QUIET_WAIT_MS (longer than any message delay) it
 *    sends no replication message (append, snapshot, their replies, timeout
 *    now) for SIM_QUIET_MEASURE_MS: nothing but heartbeats. */
#define SIM_PROMOTE_BOUND_MS (4 * SIM_HEARTBEAT_MS)
#define SIM_QUIET_SETTLE_MS 8000
#define SIM_QUIET_WAIT_MS (4 * SIM_HEARTBEAT_MS)
#define SIM_QUIET_MEASURE_MS (10 * SIM_HEARTBEAT_MS)

/* Stability, stated: once every fault has healed and the cluster has settled
 * on a leader (every voter of its configuration up and following it in its
 * term; no transfer under way), nothing justifies an election, so that
 * leader keeps its leadership and its term for the rest of the run unless it
 * leaves the configuration. Checked from SIM_SETTLE_MS after the heal (older
 * messages still in flight, at most delay_ms_max old, are gone by then). */
#define SIM_SETTLE_MS (2 * SIM_ELECTION_MS)
/* The stability probe: once liveness is proven, the clients stop and one
 * follower of a leader with at least three voters is cut off (from everyone,
 * or only from the leader) for 3 to 7 election timeouts, then healed; the
 * leader must keep its leadership and term throughout (thesis 4.2.3). */
#define SIM_PROBE_MS (SIM_SETTLE_MS + 12 * SIM_ELECTION_MS)

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

/* An observer of what a node applied: a hash chain over its entries. */
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
	struct el_node node; /* node.raft is its Raft replica */
	struct sim_disk disk;
	struct sim_sm sm;
	/* monotonic within one life */
	uint64_t seen_commit;
	uint64_t seen_applied;
	uint64_t seen_term;
	bool was_leader;
	uint64_t ever_commit; /* the highest commit index it held, any life: what it
			       * may have told a leader (learn_commit) */
	uint32_t links_lost; /* bit i: the link from node i+1 closed; told at its next turn */
};

/* ---- Lock clients -------------------------------------------------------- */

#define SIM_CLIENTS_MAX 6
/* Lock names. The workload draws each acquire from sim_names names (the
 * command line's --names N; default 3: "a" "b" "c", the names every seed
 * has always used, so existing seeds replay identically); names past the
 * third are "n3", "n4", ... Lock index SIM_LIVE_LOCK is "live", the
 * liveness probe's. The history checks index their per-lock state by these
 * indexes (sim_lock_name / sim_lock_of in sim_clients.c). */
#define SIM_NAMES_MAX 256
#define SIM_NAMES_DEFAULT 3
#define SIM_LIVE_LOCK SIM_NAMES_MAX
/* Lock "c" (index 2) is a semaphore of SIM_SEM_LIMIT permits in a core with
 * semaphores (EL_SEMAPHORES): the workload acquires it with that limit, and
 * the checks allow at most that many holders of it at once (as the clients
 * see it and in the table), each grant with its own, rising token. */
#define SIM_SEM_LOCK 2
#define SIM_SEM_LIMIT (EL_SEM_LIMIT_MAX >= 2 ? 2 : EL_SEM_LIMIT_MAX)
#define SIM_IS_SEM(lock) (SIM_SEM_LIMIT > 0 && (lock) == SIM_SEM_LOCK)
#define SIM_LOCKS (SIM_NAMES_MAX + 1) /* lock indexes: the names, then "live" */
extern uint32_t sim_names; /* 1..SIM_NAMES_MAX, set once before any run */
#define SIM_HOLDS_MAX 4096 /* hold intervals recorded in one run */
#define SIM_REQ_TIMEOUT_MS 250
#define SIM_QUEUE_MAX 64
#define SIM_SEQ_SLOTS 8192

/* A request in flight; retried with the same command (same seq). */
struct sim_request {
	bool active;
	bool queued;          /* acquire queued: waiting for a grant */
	bool final_seen;      /* a final reply arrived: later ones must match */
	int32_t final_err;
	uint64_t final_token;
	uint64_t gen;         /* identifies the command in req ids */
	uint64_t first_sent_ms;
	uint64_t sent_ms;
	uint64_t read_floor;  /* READ: highest index committed when it began */
	bool is_read;
	struct el_lock_cmd cmd;
};

struct sim_client {
	uint32_t id;
	bool alive;
	uint8_t role;         /* SIM_ROLE_* */
	uint64_t paused_until;
	el_id_t target;       /* the node it talks to */
	uint64_t session;
	uint32_t ttl_ms;
	uint64_t lease_end_ms; /* its own deadline, from when keepalives were sent */
	uint64_t next_keepalive_ms;
	uint64_t seq;
	uint64_t gen;
	struct sim_request main;
	struct sim_request ka;
	bool holding;
	uint32_t lock;
	uint8_t mode;
	uint64_t token;
	uint32_t hold_rec;    /* index into s->holds */
	uint64_t release_at_ms;
};

enum { SIM_ROLE_RANDOM = 0, SIM_ROLE_LIVE_HOLDER = 1, SIM_ROLE_LIVE_WAITER = 2 };

/* One interval during which a client treated a lock as held. */
struct sim_hold {
	uint32_t client;
	uint32_t lock;
	uint8_t mode;
	bool open;
	uint64_t token;
	uint64_t start_ms;
	uint64_t end_ms;
};

/* The reference replica: applies each committed entry once, in order, and
 * checks what the lock service promises (FIFO, tokens, exactly-once). */
struct sim_ref_waiter {
	uint64_t session;
	uint64_t seq;
	uint64_t index;
	uint8_t mode;
};

struct sim_ref {
	struct el_lock_table table;
	uint64_t applied;
	uint64_t last_token[SIM_LOCKS];
	uint64_t last_token_index[SIM_LOCKS];
	uint32_t n_queue[SIM_LOCKS];
	struct sim_ref_waiter queue[SIM_LOCKS][SIM_QUEUE_MAX];
	bool queue_unknown[SIM_LOCKS]; /* an event was dropped: stop checking FIFO */
	/* locks that may exist in the table: named by an applied command and
	 * not yet found gone (the per-apply checks query only these) */
	bool exists[SIM_LOCKS];
	/* exactly-once: (session, seq) -> applied already */
	struct sim_seq_slot {
		uint64_t session;
		uint64_t seq;
	} seqs[SIM_SEQ_SLOTS];
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
	uint32_t torn_pct;      /* a crash lands in the middle of a persist */
	uint32_t n_clients;
	uint32_t client_pause_pct;
	uint32_t client_crash_pct;
	uint32_t live_delay_ms; /* lock-delay the liveness holder asks for */
	uint32_t leader_fault_pct; /* crash or isolate the current leader */
	/* el_node_peer_lost: the chance that a crash closes the node's links (its
	 * peers hear of it), and per fault tick that a live link resets (a wrong
	 * hint). Drawn from the seed apart from the rest, zero for a quarter of
	 * the seeds, so that seeds drawn before these existed replay the same. */
	uint32_t link_lost_pct;
	uint32_t link_reset_pct;
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
	uint64_t table_hash[SIM_INDEX_MAX];     /* lock table after applying index */
	uint64_t max_committed;
	el_id_t leader_of_term[SIM_TERMS_MAX];
	/* log matching: (index, term) -> hash of entry and its predecessor's term */
	struct sim_lm_slot {
		uint64_t key;
		uint64_t hash;
	} lm[SIM_LM_SLOTS];
	/* liveness after the heal */
	uint64_t heal_leader_ms;
	uint64_t live_holder_dead_ms; /* the holder of "live" died */
	uint64_t live_bound_ms;       /* its waiter must be granted by then */
	uint64_t live_granted_ms;
	uint64_t live_bound_span_ms;  /* TTL + lock-delay + election bound + slack */
	uint64_t live_asked_ms;       /* the waiter first asked for "live" */
	/* quiescence and promotion (after the probe) */
	bool quiet;                /* the quiet phase runs */
	uint32_t quiet_joined;     /* joins begun, each after an idle time */
	el_id_t quiet_cut_id;      /* a joining learner kept out until a compaction */
	bool drop_timeout_now;     /* the network loses TIMEOUT_NOW messages */
	uint64_t quiet_start_ms;
	uint64_t quiet_since_ms;   /* idle, with the same leader state, since */
	uint64_t quiet_mark;
	el_id_t quiet_leader;      /* the leader, and its last index, when idle */
	uint64_t quiet_last;
	uint64_t promote_key;      /* leader id and term the times below are for */
	uint64_t caught_up_ms[SIM_NODES_MAX]; /* member caught up, promotable since */
	uint64_t quiet_joins;
	bool quiet_run; /* this seed ends with the quiet phase, not the stability probe */
	/* stability after the heal: the leader the cluster settled on */
	el_id_t stable_leader;
	uint64_t stable_term;
	/* the stability probe, once liveness is proven (clients stopped) */
	bool clients_done;
	uint64_t probe_start_ms;
	uint64_t probe_cut_ms;
	uint64_t probe_heal_ms;
	uint64_t probes;
	/* lock clients and what they saw */
	struct sim_client clients[SIM_CLIENTS_MAX];
	uint32_t n_holds;
	struct sim_hold holds[SIM_HOLDS_MAX];
	struct sim_ref ref;
	/* outcome */
	bool failed;
	char why[256];
	uint64_t steps;
	uint64_t conf_changes;
	uint64_t transfers;
	uint64_t snapshots_installed;
	uint64_t crashes;
	uint64_t grants_seen;
	uint64_t expiries_seen;
	uint64_t client_faults;
	uint64_t reads_checked;
};

uint64_t sim_rand(struct sim *s);
uint32_t sim_pct(struct sim *s, uint32_t pct); /* 1 with probability pct% */
void sim_fail(struct sim *s, const char *fmt, ...);
void sim_log(struct sim *s, const char *fmt, ...);

/* sim_cluster.c */
int sim_run(struct sim *s, uint64_t seed, bool verbose);
/* Run a node's ready loop until it has nothing more to do. */
void sim_drain(struct sim *s, struct sim_node *n);
uint64_t sim_local_ms(const struct sim *s, const struct sim_node *n);

/* sim_sm.c: the apply observer */
void sim_sm_apply(struct sim *s, struct sim_node *n, const struct el_entry *e);
void sim_sm_restore(struct sim *s, struct sim_node *n, const struct el_snapshot_meta *meta);

/* sim_clients.c: lock clients */
const char *sim_lock_name(uint32_t lock); /* the name of lock index lock */
/* The lock index of a name, SIM_LOCKS if it is none of the run's names. */
uint32_t sim_lock_of(const char *name, uint32_t len);
void sim_clients_init(struct sim *s);
void sim_clients_work(struct sim *s);
void sim_clients_fault(struct sim *s);
void sim_clients_heal(struct sim *s);
void sim_clients_deliver(struct sim *s, struct sim_node *n, const struct el_node_ready *rd);
void sim_clients_finish(struct sim *s);
void sim_clients_stop(struct sim *s); /* every client stops for good */

/* sim_history.c: the reference replica and the history checks */
void sim_ref_apply(struct sim *s, const struct el_entry *e);
uint32_t sim_hold_open(struct sim *s, uint32_t client, uint32_t lock, uint8_t mode,
		       uint64_t token);
void sim_hold_close(struct sim *s, uint32_t rec, uint64_t end_ms);
void sim_check_holds(struct sim *s);

/* sim_check.c: invariants */
void sim_check_node(struct sim *s, struct sim_node *n);
void sim_check_disk(struct sim *s, struct sim_node *n, const struct el_hard_state *before);
void sim_check_liveness(struct sim *s);
void sim_dump_nodes(struct sim *s); /* verbose: each replica's log state */
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
