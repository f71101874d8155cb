/*
 * el_node.h - one edgelock node: the Raft replica, the replicated lock table,
 * the leader's timer table and the client requests in flight, in one object
 * driven in the Step/Tick/Ready style of el_raft.h.
 *
 *   el_node_step(n, msg, now)      a message from a peer
 *   el_node_tick(n, now)           at (or after) el_node_deadline(n)
 *   el_node_submit(n, id, cmd, now)    a client command (leader only)
 *   el_node_read(n, id, now)           a linearizable read barrier (leader only)
 *   while (el_node_has_ready(n)) {
 *       el_node_ready(n, &rd);
 *       persist rd.raft (snapshot, entries, hard state; one fsync);
 *       send rd.raft.msgs; deliver rd.replies and rd.events to clients;
 *       el_node_advance(n, &rd, now);   applies, serves reads, runs timers
 *   }
 *
 * Replies and events produced by one advance are handed out by the next
 * el_node_ready (so a caller always delivers them after the batch they came
 * with was persisted). Between el_node_ready and el_node_advance the caller
 * calls nothing else on the node; pointers in the batch stay valid until then.
 * Breaking that order (a submit, step or tick inside a batch, ready twice,
 * advance without ready or with another batch) is a bug in the caller, not
 * bad input: it fails an assertion (el_panic), as TigerBeetle's asserts do,
 * rather than return a code the caller's own bug might ignore. Serialise the
 * calls (one task, or a lock) and feed messages from an ISR through a queue.
 *
 * Time: only the leader's timer table reads now_ms. Every deadline (session
 * lease, bounded wait, lock-delay) is counted on the leader's own clock, from
 * the moment it applied the entry that set it; a node that becomes leader
 * restarts them all from its own now (deadlines never shorten). When one
 * passes, the leader proposes EXPIRE_SESSION / WAIT_TIMEOUT / DELAY_END.
 *
 * Requests: a reply is matched to its request by (index, term); when the
 * entry at that index turns out to have another term, or this node stops
 * leading while the request is in flight, the reply is EL_ENOTLEADER with
 * the known leader, and the client retries there with the same seq (the
 * lock table's exactly-once replies make the retry safe).
 */
#ifndef EL_NODE_H
#define EL_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "el_config.h"
#include "el_lock.h"
#include "el_raft.h"

enum el_reply_kind {
	EL_REPLY_CMD = 1,  /* a submitted command committed (or failed) */
	EL_REPLY_READ = 2, /* a read barrier passed: query the table now */
};

struct el_node_reply {
	uint64_t req_id;  /* the caller's id from submit/read */
	uint64_t index;   /* CMD: the entry; READ: the read index */
	uint64_t token;   /* lock result: fencing token */
	uint64_t session; /* lock result: the session (OPEN: the new id) */
	int32_t err;      /* EL_OK, a lock error, or EL_ENOTLEADER */
	uint32_t count;
	el_id_t leader;   /* EL_ENOTLEADER: the known leader (0: unknown) */
	uint8_t kind;
	bool queued;      /* acquire/campaign queued: a GRANTED event follows */
};

struct el_node_ready {
	struct el_ready raft;
	uint32_t n_replies;
	const struct el_node_reply *replies;
	uint32_t n_events;
	const struct el_lock_event *events;
	uint32_t events_dropped;
};

struct el_node_config {
	struct el_raft_config raft;
	/* true: the node's memory is already all-zero bytes (calloc or static
	 * storage), so el_node_init leaves the lock table and the timer table
	 * untouched: a gateway-sized node costs the pages it uses, not the
	 * tens of MB its tables could hold. false: el_node_init clears it all. */
	bool zeroed;
};

/* Private: a request in flight. */
struct el_node_pending {
	uint64_t req_id;
	uint64_t index; /* CMD: entry index; READ: read index once confirmed */
	uint64_t term;  /* CMD: term of the proposal */
	uint64_t ctx;   /* READ: the ReadIndex context */
	uint8_t kind;   /* 0: a free slot */
	bool confirmed; /* READ: index is known */
};

/* Private: one deadline of the leader's timer table. Timer ids: sessions
 * [0, S), claims [S, S + C), locks [S + C, S + C + L) by slot. */
#define EL_TIMERS_MAX (EL_SESSIONS_MAX + EL_CLAIMS_MAX + EL_LOCKS_MAX)
struct el_node_timer {
	uint64_t deadline_ms;
	uint64_t key;      /* what the deadline is about (see node_timer.c) */
#if EL_INDEXED
	uint32_t heap_pos; /* its place in the heap + 1; 0: not in it */
#endif
	uint8_t armed;
	uint8_t proposed;  /* its command is in the log: do not propose again */
};

struct el_node_stats {
	uint64_t expiries_proposed;
	uint64_t wait_timeouts_proposed;
	uint64_t delay_ends_proposed;
	uint64_t compactions;
	uint64_t restores;
	uint64_t events_dropped;
};

struct el_node {
	struct el_raft raft;
	struct el_lock_table table;
	uint64_t leader_term; /* the term this node leads in; 0 when not leading */
	uint64_t next_read_ctx;
	uint64_t timers_retry_ms; /* a timer command found the log full: wait till then */
	uint32_t heartbeat_ms;    /* from the config: the retry step */
	uint64_t log_bytes;       /* entry bytes applied since the last snapshot */
	bool in_ready;
	bool failed;          /* a snapshot did not restore: stop the node */
	uint32_t n_pending;
	struct el_node_pending pending[EL_PENDING_MAX];
	uint32_t n_replies;
	struct el_node_reply replies[EL_PENDING_MAX];
	uint32_t n_events;
	uint32_t events_dropped;
	struct el_lock_event events[EL_NODE_EVENTS_MAX];
	struct el_lock_result result; /* scratch for one apply */
	struct el_node_stats stats;
	struct el_node_timer timers[EL_TIMERS_MAX];
#if EL_INDEXED
	/* The armed timers, a binary min-heap by (deadline, id) with those
	 * already proposed last: the next deadline is heap[0], arming and
	 * firing cost O(log n), and a lost leadership clears them all. */
	uint32_t heap_len;
	uint32_t heap[EL_TIMERS_MAX];
#endif
};

/* ---- Lifecycle ---------------------------------------------------------- */

/* Prepare an empty node; then bootstrap or load through el_node_raft() and
 * call el_node_start. A node restarted from storage restores its lock table
 * from the snapshot on the first ready batch (rd.raft.restore). */
int el_node_init(struct el_node *n, const struct el_node_config *cfg, uint64_t seed);
struct el_raft *el_node_raft(struct el_node *n);
void el_node_start(struct el_node *n, uint64_t now_ms);

/* ---- Input -------------------------------------------------------------- */

/* A message from a peer (el_raft_step: an error return may still have
 * taken a newer term, so handle the ready batch after every step). */
int el_node_step(struct el_node *n, const struct el_msg *m, uint64_t now_ms);
void el_node_tick(struct el_node *n, uint64_t now_ms);
/* The transport lost its link to peer id: el_raft_peer_lost(). */
bool el_node_peer_lost(struct el_node *n, el_id_t id, uint64_t now_ms);
/* The next time the node needs el_node_tick (UINT64_MAX: never). */
uint64_t el_node_deadline(const struct el_node *n);

/* Propose a client command (OPEN/KEEPALIVE/CLOSE_SESSION, ACQUIRE, RELEASE,
 * CAMPAIGN, RESIGN, PROCLAIM, WATCH, UNWATCH); its reply comes with req_id.
 * req_id names one request: a retry with the req_id of a request still in
 * flight at this node is not proposed again (its reply answers both).
 * EL_ENOTLEADER (*leader = the known leader), EL_EFULL (requests in flight or
 * the log window), EL_EINVAL (a leader-only or malformed command). */
int el_node_submit(struct el_node *n, uint64_t req_id, const struct el_lock_cmd *cmd,
		   uint64_t now_ms, el_id_t *leader);
/* A linearizable read: an EL_REPLY_READ reply with req_id says the table is
 * now at least as new as every write committed before this call; query it
 * (el_node_query) while handling that reply. */
int el_node_read(struct el_node *n, uint64_t req_id, uint64_t now_ms, el_id_t *leader);

/* ---- Output ------------------------------------------------------------- */

bool el_node_has_ready(const struct el_node *n);
void el_node_ready(struct el_node *n, struct el_node_ready *rd);
/* EL_ECORRUPT when a snapshot from the leader did not restore: the node is
 * stopped (every later call fails with EL_ESTOPPED) and must be rebuilt. */
int el_node_advance(struct el_node *n, const struct el_node_ready *rd, uint64_t now_ms);

/* ---- Queries ------------------------------------------------------------ */

static inline const struct el_lock_table *el_node_table(const struct el_node *n)
{
	return &n->table;
}
int el_node_query(const struct el_node *n, const char *name, uint32_t name_len,
		  struct el_lock_query *q);
/* The leader's remaining lease of a session: EL_ENOTLEADER, EL_ENOTFOUND. */
int el_node_lease_left(const struct el_node *n, uint64_t session, uint64_t now_ms,
		       uint64_t *left_ms);

#endif /* EL_NODE_H */
