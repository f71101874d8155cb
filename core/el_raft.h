/*
 * el_raft.h - the Raft replica: a deterministic, allocation-free state machine.
 *
 * The replica does no I/O and reads no clock. Input enters only through calls
 * (a peer message, a proposal, a timeout, an acknowledgement that a batch was
 * persisted), each carrying the caller's monotonic time now_ms. Output leaves
 * as a ready batch the caller drains in this order, the loop every port writes
 * once:
 *
 *   el_raft_ready(r, &rd);
 *   1. if rd.snapshot: write the snapshot (meta + bytes) durably, then drop
 *      every stored entry at or below rd.snapshot->index;
 *   2. drop stored entries >= rd.persist_first (a no-op when none are
 *      stored there), write the hard state if rd.hard_state_changed, then
 *      append entries persist_first..persist_last (el_raft_entry()); one
 *      fsync for all of it (group commit). The hard state goes first so that
 *      a batch torn by a crash never leaves entries of a term newer than the
 *      stored term; a torn batch may leave a commit beyond the stored
 *      entries, which el_raft_load_hard_state clamps (nothing of a batch is
 *      sent or applied before all of it is durable);
 *   3. only then send rd.msgs (a vote or an append acknowledgement promises
 *      that what it acknowledges is on disk). A leader's messages promise
 *      nothing of the kind: those for which el_raft_msg_may_lead() holds may
 *      be sent before step 1 instead, so that the followers write their copy
 *      while the leader writes its own (Raft thesis 10.2.1). The leader still
 *      counts its own copy toward a quorum only once advance says it is
 *      durable (persisted_index), and a crash before it is written loses
 *      nothing acknowledged: a commit needs a quorum of durable copies;
 *   4. if rd.restore: load the state machine from rd.snapshot;
 *      apply entries apply_first..apply_last; serve rd.reads;
 *   el_raft_advance(r, &rd, now_ms);
 *
 * Between el_raft_ready() and el_raft_advance() the caller must not call any
 * other el_raft_* function that changes the replica; pointers in the batch
 * (messages, entries, snapshot bytes) stay valid exactly until advance.
 * If persisting fails, the caller must stop: never send, never advance.
 *
 * Features: PreVote, CheckQuorum, batching and pipelining, fast log
 * backtracking, snapshots sent in chunks, single-server membership change with
 * learners (auto-promoted once caught up), leadership transfer, ReadIndex.
 *
 * The struct is public so a caller can allocate it statically; its fields are
 * private: use the functions.
 */
#ifndef EL_RAFT_H
#define EL_RAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "el_config.h"

typedef uint32_t el_id_t; /* a node id; 0 means "none" */

/* ---- Log entries -------------------------------------------------------- */

enum el_entry_type {
	EL_ENTRY_NORMAL = 0, /* a state-machine command */
	EL_ENTRY_NOOP = 1,   /* appended by each new leader to commit its term */
	EL_ENTRY_CONF = 2,   /* a configuration (el_conf_encode), effective on append */
};

struct el_entry {
	uint64_t term;
	uint64_t index;
	uint8_t type;
	uint16_t len;
	uint8_t data[EL_ENTRY_DATA_MAX];
};

/* ---- Configuration ------------------------------------------------------ */

enum el_member_role {
	EL_MEMBER_VOTER = 1,
	EL_MEMBER_LEARNER = 2,     /* replicated to, never votes */
	EL_MEMBER_CATCHING_UP = 3, /* a learner the leader promotes once caught up */
};

struct el_member {
	el_id_t id;
	uint8_t role;
};

struct el_conf {
	uint8_t n;
	struct el_member m[EL_NODES_MAX];
};

/* Bytes of an encoded configuration: 1 + 5 per member. */
#define EL_CONF_ENCODED_MAX (1 + 5 * EL_NODES_MAX)
_Static_assert(EL_CONF_ENCODED_MAX <= EL_ENTRY_DATA_MAX, "conf must fit an entry");

/* Encode/decode a configuration as entry data (fixed little-endian layout).
 * decode rejects duplicates, id 0, unknown roles and bad lengths. */
int el_conf_encode(const struct el_conf *c, uint8_t *buf, uint32_t cap);
int el_conf_decode(struct el_conf *c, const uint8_t *buf, uint32_t len);
/* The member with this id, or NULL. */
const struct el_member *el_conf_find(const struct el_conf *c, el_id_t id);

enum el_conf_op {
	EL_CONF_ADD_VOTER = 1,   /* joins as a learner, promoted once caught up */
	EL_CONF_ADD_LEARNER = 2, /* joins as a learner and stays one */
	EL_CONF_PROMOTE = 3,     /* learner -> voter now (must be caught up) */
	EL_CONF_REMOVE = 4,      /* may name the leader itself */
};

/* ---- Persistent state --------------------------------------------------- */

struct el_hard_state {
	uint64_t term;
	el_id_t vote;
	uint64_t commit;
};

struct el_snapshot_meta {
	uint64_t index; /* last index the snapshot covers */
	uint64_t term;  /* term of that entry */
	struct el_conf conf;
	uint32_t len;   /* bytes of state-machine data */
};

/* ---- Messages ----------------------------------------------------------- */

enum el_msg_type {
	EL_MSG_APPEND = 1,        /* index/log_term = prev entry, entries, commit */
	EL_MSG_APPEND_RESP = 2,   /* index = match (ok) or rejected prev; hints */
	EL_MSG_VOTE = 3,          /* index/log_term = last entry of candidate */
	EL_MSG_VOTE_RESP = 4,
	EL_MSG_PREVOTE = 5,       /* term = the term the candidate would take */
	EL_MSG_PREVOTE_RESP = 6,
	EL_MSG_HEARTBEAT = 7,     /* commit (capped at match), ctx = read round */
	EL_MSG_HEARTBEAT_RESP = 8,
	EL_MSG_SNAPSHOT = 9,      /* index/log_term/conf = meta, offset/total, data */
	EL_MSG_SNAPSHOT_RESP = 10, /* index = snapshot, offset = bytes held */
	EL_MSG_TIMEOUT_NOW = 11,  /* leadership transfer: campaign now */
};
#define EL_MSG_TYPE_MAX 11

enum el_msg_flag {
	EL_MSG_REJECT = 1, /* a refused vote or append */
	EL_MSG_FORCE = 2,  /* a vote for a leadership transfer: ignore leases */
};

struct el_msg {
	uint8_t type;
	uint8_t flags;
	el_id_t from;
	el_id_t to;
	uint64_t term;
	uint64_t index;
	uint64_t log_term;
	uint64_t commit;
	uint64_t ctx;
	uint64_t hint_index; /* append reject: where the follower's log may match */
	uint64_t hint_term;  /* append reject: term at hint_index */
	uint32_t offset;     /* snapshot chunk offset / bytes held */
	uint32_t total;      /* snapshot size */
	uint32_t n_entries;
	const struct el_entry *entries; /* n_entries consecutive entries */
	uint32_t data_len;
	const uint8_t *data;            /* snapshot chunk */
	struct el_conf conf;            /* snapshot configuration */
};

/* Whether a message of a ready batch may leave before the batch is durable
 * (step 3 of the loop above): a leader's appends, heartbeats and snapshot
 * chunks, which acknowledge nothing of the sender's disk. */
static inline bool el_raft_msg_may_lead(const struct el_msg *m)
{
	return m->type == EL_MSG_APPEND || m->type == EL_MSG_HEARTBEAT ||
	       m->type == EL_MSG_SNAPSHOT;
}

/* ---- The replica -------------------------------------------------------- */

enum el_state {
	EL_FOLLOWER = 0,
	EL_PRECANDIDATE = 1,
	EL_CANDIDATE = 2,
	EL_LEADER = 3,
};

struct el_raft_config {
	el_id_t id;
	uint32_t election_ms_min; /* timeouts are drawn from [min, 2 * min) */
	uint32_t heartbeat_ms;    /* must be well below election_ms_min */
	bool prevote;             /* PreVote (default true) */
	bool check_quorum;        /* CheckQuorum and leader lease on votes */
};

/* A confirmed linearizable read: serve it once applied >= index. */
struct el_read {
	uint64_t ctx;
	uint64_t index;
};

struct el_ready {
	const struct el_snapshot_meta *snapshot; /* persist (and restore?) */
	const uint8_t *snapshot_data;
	bool restore;                /* load the state machine from snapshot */
	bool hard_state_changed;
	struct el_hard_state hs;
	uint64_t persist_first;      /* entries to store; none if first > last */
	uint64_t persist_last;
	uint32_t n_msgs;
	const struct el_msg *msgs;
	uint64_t apply_first;        /* committed entries to apply; none if first > last */
	uint64_t apply_last;
	uint32_t n_reads;
	const struct el_read *reads;
};

/* Counters for metrics, logs and tests. */
struct el_raft_stats {
	uint64_t elections;     /* campaigns started */
	uint64_t msgs_dropped;  /* outbox full */
	uint64_t msgs_rejected; /* malformed input refused by el_raft_step */
	uint64_t stepdowns_quorum;
};

enum el_progress_state { EL_PR_PROBE = 0, EL_PR_REPLICATE = 1, EL_PR_SNAPSHOT = 2 };

/* Private: the leader's view of one peer. */
struct el_progress {
	el_id_t id;
	uint8_t state;
	bool probe_sent;     /* probe state: one append in flight, wait */
	bool active;         /* heard from since the last quorum check */
	uint8_t inflight_n;
	uint8_t inflight_head;
	uint64_t match;
	uint64_t next;
	uint64_t inflight[EL_INFLIGHT_MAX]; /* last index of each append in flight */
	uint64_t read_acked;  /* highest read round acknowledged */
	uint64_t snap_index;  /* snapshot being sent */
	uint32_t snap_offset; /* bytes acknowledged so far */
	uint64_t snap_sent_ms;
};

/* Private: a read waiting for its heartbeat round. */
struct el_pending_read {
	uint64_t ctx;
	uint64_t index; /* 0 until the leader has committed in its term */
	uint64_t round;
};

struct el_raft {
	/* identity and timing */
	struct el_raft_config cfg;
	uint64_t rng;
	uint64_t now_ms;
	uint64_t election_deadline_ms;
	uint64_t heartbeat_deadline_ms;
	uint64_t quorum_check_ms;
	uint64_t leader_contact_ms; /* last message from a current leader */
	uint64_t transfer_deadline_ms;

	/* persistent state */
	uint64_t term;
	el_id_t vote;
	uint64_t commit;
	struct el_hard_state hs_persisted;

	/* volatile state */
	uint8_t state;
	el_id_t leader;
	el_id_t term_leader;       /* the one leader this node saw in its term (0: none yet) */
	el_id_t transferee;
	uint64_t applied;
	uint64_t conf_index;       /* index of the entry that set conf (0: snapshot) */
	struct el_conf conf;
	uint32_t votes_granted;    /* bit per conf slot */
	uint32_t votes_rejected;

	/* log window: (snap.index, last_index] in a ring */
	uint64_t last_index;
	uint64_t persisted_index;
	struct el_entry log[EL_LOG_WINDOW];

	/* The snapshot at the base of the log, and its bytes. One buffer serves
	 * both the held snapshot and one being received: while receiving, the
	 * held bytes are gone (snap_valid false) and a leader that needs them
	 * again regenerates them through snap_writer. */
	struct el_snapshot_meta snap;
	bool snap_dirty;
	bool restore_pending;
	bool snap_valid;
	bool rx_active;
	uint8_t snap_data[EL_SNAPSHOT_MAX];
	struct el_snapshot_meta rx;
	uint32_t rx_offset;
	int (*snap_writer)(void *ctx, uint8_t *buf, uint32_t cap);
	void *snap_writer_ctx;
	int (*snap_validator)(void *ctx, const uint8_t *buf, uint32_t len, uint64_t index);
	void *snap_validator_ctx;

	/* leader */
	struct el_progress pr[EL_NODES_MAX];
	uint64_t read_round;
	uint32_t n_pending_reads;
	struct el_pending_read pending_reads[EL_READS_MAX];

	/* ready batch */
	bool in_ready;
	bool flush_pending;        /* leader: new entries or commit to send */
	uint32_t n_msgs;
	struct el_msg outbox[EL_OUTBOX_MAX];
	uint32_t n_reads;
	struct el_read reads[EL_READS_MAX];

	struct el_raft_stats stats;
};

/* ---- Lifecycle ---------------------------------------------------------- */

/* Prepare an empty replica. seed drives election timeouts (use a random one). */
int el_raft_init(struct el_raft *r, const struct el_raft_config *cfg, uint64_t seed);
/* A brand-new cluster member: the initial configuration, stored as snapshot
 * index 0 (persisted through the first ready batch). Only on empty state. */
int el_raft_bootstrap(struct el_raft *r, const struct el_conf *conf);
/* Restart: hand back what storage holds, in this order, then el_raft_start.
 * Each returns EL_ECORRUPT when the stored state is inconsistent (entries out
 * of order, a term older than the last entry's, an invalid configuration). */
int el_raft_load_snapshot(struct el_raft *r, const struct el_snapshot_meta *meta,
			  const uint8_t *data);
int el_raft_load_entry(struct el_raft *r, const struct el_entry *e);
int el_raft_load_hard_state(struct el_raft *r, const struct el_hard_state *hs);
void el_raft_start(struct el_raft *r, uint64_t now_ms);

/* ---- Input -------------------------------------------------------------- */

/* A message from a peer. A message that fails validation (its shape, its
 * bounds, a second leader in one term) returns EL_EDECODE/EL_EINVAL and
 * changes nothing. A well-formed one whose content is refused later (a
 * snapshot the validator below refuses) has already taken its newer term
 * first, as any message of a newer term does, and queued its reject: so
 * handle the ready batch after every step, whatever it returned (etcd's
 * contract too), or a new term may wait unpersisted for a later batch. */
int el_raft_step(struct el_raft *r, const struct el_msg *m, uint64_t now_ms);
/* Fire due timers. Call at (or after) el_raft_deadline(). */
void el_raft_tick(struct el_raft *r, uint64_t now_ms);
/* The transport saw its link to peer id end (the connection closed: a
 * crashed process, a reboot, a reset link). If id is the leader this
 * follower follows and the leader then stays silent for a heartbeat
 * interval, the follower's lease ends (so it no longer refuses other
 * candidates) and it campaigns (with PreVote) in its turn: the k-th lowest
 * id of the voters left k half heartbeat intervals later (plus a random
 * quarter), instead of after a whole election timeout. Any message from the
 * leader meanwhile cancels both. A hint only: a partition sends none (the
 * election timeout still covers it), and a wrong one costs at most a refused
 * pre-vote, since the voters still hearing the leader stay in its lease.
 * On a leader, a follower id is probed on its next heartbeat reply: it may
 * be back with less than it acknowledged (wiped). True when it moved the
 * election up. */
bool el_raft_peer_lost(struct el_raft *r, el_id_t id, uint64_t now_ms);
/* Leader only: append a command; index_out and term_out identify it.
 * EL_EFULL once EL_UNCOMMITTED_MAX entries stand uncommitted or the window
 * is full (the no-op room rule of el_config.h). */
int el_raft_propose(struct el_raft *r, const uint8_t *data, uint16_t len, uint64_t now_ms,
		    uint64_t *index_out, uint64_t *term_out);
/* Leader only: a single-server configuration change. */
int el_raft_propose_conf(struct el_raft *r, enum el_conf_op op, el_id_t id, uint64_t now_ms,
			 uint64_t *index_out);
/* Lost quorum (the other voters are gone for good): make this node, just
 * loaded from its storage and not yet started, the one voter of a new
 * configuration, like etcd's --force-new-cluster. It takes a new term
 * (voting for itself) and appends a CONF entry {itself} in it; once started
 * it elects itself and commits everything in its log with its no-op, so no
 * entry it holds is lost and every later index (and fencing token) is
 * higher. Entries acknowledged by a quorum it was not part of are lost: run
 * it on the survivor with the longest log. EL_EINVAL when it has no state
 * or is not a member; EL_EFULL when the window has no free slot (compact,
 * or restart normally first). The operator's act, never automatic. */
int el_raft_force_new_cluster(struct el_raft *r);
/* Leader only: hand leadership to target (a caught-up voter). */
int el_raft_transfer(struct el_raft *r, el_id_t target, uint64_t now_ms);
/* Leader only: a linearizable read; confirmed later in rd.reads with ctx. */
int el_raft_read_index(struct el_raft *r, uint64_t ctx, uint64_t now_ms);
/* Compact: write(ctx, buf, cap) fills buf with the state machine at exactly
 * index (which must be <= applied) and returns its length or a negative code.
 * The writer registered with el_raft_set_snapshot_writer is also called by
 * the replica itself when its window is full and a new leader's no-op (or an
 * entry from the leader) needs a slot: it compacts what it has applied. */
typedef int (*el_snapshot_writer)(void *ctx, uint8_t *buf, uint32_t cap);
int el_raft_compact(struct el_raft *r, uint64_t index, el_snapshot_writer write, void *ctx);
/* The writer a leader uses to regenerate its snapshot bytes at the applied
 * index when they were overwritten by a snapshot it was receiving. */
void el_raft_set_snapshot_writer(struct el_raft *r, el_snapshot_writer write, void *ctx);
/* The state machine's check of a snapshot received from a leader: called on
 * the fully assembled bytes before they replace the log; 0 accepts, a
 * negative code refuses it (nothing of it is installed or persisted, the
 * leader is answered with a reject and el_raft_step returns the code; the
 * message's term, if newer, was taken before: see el_raft_step). Without a
 * validator every assembled snapshot is accepted. */
typedef int (*el_snapshot_validator)(void *ctx, const uint8_t *buf, uint32_t len, uint64_t index);
void el_raft_set_snapshot_validator(struct el_raft *r, el_snapshot_validator check, void *ctx);

/* ---- Output ------------------------------------------------------------- */

bool el_raft_has_ready(const struct el_raft *r);
void el_raft_ready(struct el_raft *r, struct el_ready *rd);
void el_raft_advance(struct el_raft *r, const struct el_ready *rd, uint64_t now_ms);
/* The next time the replica needs el_raft_tick (UINT64_MAX: never). */
uint64_t el_raft_deadline(const struct el_raft *r);

/* ---- Queries ------------------------------------------------------------ */

/* The entry at index, or NULL when outside (snapshot, last]. */
const struct el_entry *el_raft_entry(const struct el_raft *r, uint64_t index);
/* The term of index, or 0 when unknown (compacted or beyond the log). */
uint64_t el_raft_term_at(const struct el_raft *r, uint64_t index);
/* Whether append m disagrees with an entry this node has committed: its
 * previous entry or one of its entries has another term. el_raft_step
 * refuses such an append from a current leader (Leader Completeness, paper
 * 5.4: only a member that lost acknowledged state lets one be elected); the
 * daemon asks the same question to say so in its log. */
bool el_raft_append_overwrites_commit(const struct el_raft *r, const struct el_msg *m);
static inline enum el_state el_raft_state(const struct el_raft *r) { return (enum el_state)r->state; }
static inline el_id_t el_raft_leader(const struct el_raft *r) { return r->leader; }
static inline uint64_t el_raft_term(const struct el_raft *r) { return r->term; }
static inline uint64_t el_raft_commit(const struct el_raft *r) { return r->commit; }
static inline uint64_t el_raft_applied(const struct el_raft *r) { return r->applied; }
static inline uint64_t el_raft_last_index(const struct el_raft *r) { return r->last_index; }
static inline const struct el_conf *el_raft_conf(const struct el_raft *r) { return &r->conf; }
static inline const struct el_snapshot_meta *el_raft_snapshot(const struct el_raft *r)
{
	return &r->snap;
}
static inline const uint8_t *el_raft_snapshot_data(const struct el_raft *r) { return r->snap_data; }
/* Whether the snapshot buffer holds the bytes of el_raft_snapshot() (false
 * while it assembles a snapshot being received). */
static inline bool el_raft_snapshot_valid(const struct el_raft *r) { return r->snap_valid; }
static inline el_id_t el_raft_vote(const struct el_raft *r) { return r->vote; }
static inline const struct el_raft_stats *el_raft_stats(const struct el_raft *r) { return &r->stats; }
/* The log ring's slots that hold no entry of the window (snap.index,
 * last_index]: n of them, from slot *first on, wrapping at EL_LOG_WINDOW.
 * The core writes a slot before it reads it again, so a port may give their
 * memory back to the system (port/posix/log_ring.c) whatever it then reads as. */
static inline uint32_t el_raft_free_slots(const struct el_raft *r, uint32_t *first)
{
	const uint64_t live = r->last_index > r->snap.index ? r->last_index - r->snap.index : 0;
	*first = (uint32_t)((r->last_index + 1) & (EL_LOG_WINDOW - 1));
	return (uint32_t)(EL_LOG_WINDOW - live);
}

#endif /* EL_RAFT_H */
