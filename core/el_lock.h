/*
 * el_lock.h - the replicated lock table: sessions, locks with fencing tokens,
 * fair FIFO wait queues, lock-delay, elections and watches.
 *
 * A pure, deterministic state machine. Every replica applies the same
 * committed commands in the same order and ends with byte-identical tables
 * (and byte-identical snapshots). Nothing here reads a clock or decides by
 * time: deadlines (session expiry, bounded waits, lock-delay ends) live in the
 * leader's volatile timer table (el_node.h); when one passes, the leader
 * proposes EXPIRE_SESSION / WAIT_TIMEOUT / DELAY_END and every replica
 * applies it. Commands carry the proposer's now_ms only as information (grant
 * time shown to operators).
 *
 * Stale-timer guards: a timer command names exactly what it is about, so a
 * command the leader proposed just before a racing renewal applies as a
 * no-op (EL_ESTALE) instead of doing harm:
 *   EXPIRE_SESSION(session, renew_index)  renew_index = index of the OPEN or
 *       KEEPALIVE entry the leader's deadline was counted from; a keepalive
 *       applied in between makes the expiry stale;
 *   WAIT_TIMEOUT(session, seq, name)      the seq of the queued request;
 *   DELAY_END(name, token)                the token of the expired hold.
 *
 * Keepalives are log entries (KEEPALIVE through Raft): a keepalive extends a
 * lease only once the current leader has committed it, and a deposed leader
 * cannot renew anything. The leader restarts a session's deadline when it
 * applies the keepalive (>= the time the client sent it, so the client's own
 * deadline, counted from sending, always ends first).
 *
 * Exactly-once: every client request but OPEN_SESSION, KEEPALIVE and
 * CLOSE_SESSION carries (session, seq), seq >= 1 and increasing. The table
 * keeps each session's last seq and its reply; a retry of the last seq gets
 * that reply again (also after a leader change or a snapshot), an older seq
 * gets EL_ESTALE; neither acts again. A queued acquire's stored reply is
 * updated when it is granted or times out, so a retry also learns the end.
 *
 * A reply is final for its seq, errors included: after EL_EFULL or EL_EBUSY a
 * client tries again with a new seq. OPEN_SESSION has no session or seq yet;
 * it carries a client-chosen random nonce instead, the same in every attempt
 * of one open, and the table remembers the session each of the last
 * EL_OPENS_MAX opens created (lock_open.c): a retry gets that session back
 * (EL_EEXPIRED if it has ended since) and no second session is created. An
 * open without a nonce (0) is not deduplicated.
 * When a session queues a request and then sends another, the queued one's
 * outcome reaches it only as an event (or by a query), not by a retry.
 *
 * Errors a command applies with (the table is unchanged unless EL_OK):
 *   EL_EEXPIRED  the session does not exist (expired, closed, never opened)
 *   EL_ESTALE    an older token or seq, or a timer command that lost a race
 *   EL_EBUSY     held (try-acquire), or this session already waits for it
 *   EL_EDELAYED  the lock is in its lock-delay (try-acquire)
 *   EL_EFULL     a table is full (sessions, locks, claims, waiters, values,
 *                watches); nothing granted is disturbed
 *   EL_ENOTFOUND the session holds no such lock / no such watch or lock
 *   EL_EINVAL    a command that does not validate; re-acquire in the other
 *                mode; campaign or proclaim on a plain (non-election) lock
 *                this session holds
 *   EL_ELIMIT    a semaphore acquire naming another limit than the one the
 *                semaphore in use has (res->count = that limit)
 *   EL_EKIND     a semaphore acquire on a lock in use, or a lock acquire
 *                (exclusive, shared, campaign) on a semaphore in use
 *   EL_EDECODE / EL_EVERSION  bytes that are not a command of this version
 *
 * Semaphores: an ACQUIRE with a limit N >= 1 takes one of N permits of its
 * name. A name is a lock (limit 0) or a semaphore while it has holders,
 * waiters or lock-delays; the acquire that finds it unused decides which.
 * Each permit is a hold like a lock's (one per session, reentrant, its own
 * token: no entry grants two permits of one name, so a semaphore's tokens
 * strictly increase). A permit freed by expiry stays in lock-delay; a
 * semaphore counts its delayed permits (locks[].delayed) and frees them one
 * per DELAY_END, each after the longest delay any of them asked for: never
 * sooner than its own holder asked, sometimes later.
 *
 * Elections are exclusive locks whose holder publishes a value: observers
 * WATCH the election's name and get EL_EV_HOLDER_CHANGED on every change of
 * leader (and EL_EV_VALUE_CHANGED on PROCLAIM); observe = el_lock_query.
 *
 * Tables are fixed pools linked by 16-bit slot indices; a new record takes the
 * lowest free slot, so allocation is deterministic too.
 */
#ifndef EL_LOCK_H
#define EL_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "el_config.h"

/* Holds and waits share one pool; at most EL_WAITERS_MAX of it may wait. */
#define EL_CLAIMS_MAX (EL_HOLDS_MAX + EL_WAITERS_MAX)

#define EL_LOCK_CMD_VERSION 1
#define EL_LOCK_SNAPSHOT_VERSION 3 /* 2: the recent-opens section; 3: semaphores */
#define EL_WAIT_FOREVER UINT32_MAX

/* A slot of one of the table's pools; EL_LOCK_NONE is no slot. 16 bits on a
 * microcontroller, 32 on the gateway (EL_SLOT_BITS in el_config.h). */
#if EL_SLOT_BITS == 32
typedef uint32_t el_slot_t;
#define EL_LOCK_NONE 0xFFFFFFFFu
#define EL_LOCK_SNAP_SLOT 5 /* CBOR bytes of a slot number at its widest */
#else
typedef uint16_t el_slot_t;
#define EL_LOCK_NONE 0xFFFFu
#define EL_LOCK_SNAP_SLOT 3
#endif

/* Slot + 1 must fit el_slot_t below EL_LOCK_NONE (the indexes store it). */
_Static_assert(EL_SESSIONS_MAX < EL_LOCK_NONE - 1 && EL_LOCKS_MAX < EL_LOCK_NONE - 1, "slot index");
_Static_assert(EL_CLAIMS_MAX < EL_LOCK_NONE - 1, "slot index");
_Static_assert(EL_WATCHES_MAX < EL_LOCK_NONE - 1 && EL_VALUES_MAX < EL_LOCK_NONE - 1, "slot index");
_Static_assert(EL_NAME_MAX >= 1 && EL_NAME_MAX <= 255, "EL_NAME_MAX out of range");
_Static_assert(EL_VALUE_MAX <= 255 && EL_CLIENT_NAME_MAX <= 255, "value/client too long");
_Static_assert(EL_HOLDERS_MAX >= 1 && EL_HOLDERS_MAX <= 255, "EL_HOLDERS_MAX out of range");
_Static_assert(EL_OPENS_MAX >= 1 && EL_OPENS_MAX < EL_LOCK_NONE, "EL_OPENS_MAX out of range");

/* ---- Commands (log entry data) ------------------------------------------- */

enum el_lock_cmd_type {
	EL_CMD_OPEN_SESSION = 1,   /* ttl_ms, client, nonce -> session id = entry index */
	EL_CMD_KEEPALIVE = 2,      /* session */
	EL_CMD_CLOSE_SESSION = 3,  /* session: release everything, no lock-delay */
	EL_CMD_EXPIRE_SESSION = 4, /* leader: session, renew_index (in token) */
	EL_CMD_ACQUIRE = 5,        /* session seq name mode wait_ms delay_ms limit */
	EL_CMD_RELEASE = 6,        /* session seq name token */
	EL_CMD_WAIT_TIMEOUT = 7,   /* leader: session seq name */
	EL_CMD_DELAY_END = 8,      /* leader: name token */
	EL_CMD_CAMPAIGN = 9,       /* session seq name wait_ms delay_ms value */
	EL_CMD_RESIGN = 10,        /* session seq name token */
	EL_CMD_PROCLAIM = 11,      /* session seq name token value: new value */
	EL_CMD_WATCH = 12,         /* session seq name */
	EL_CMD_UNWATCH = 13,       /* session seq name */
};
#define EL_CMD_TYPE_MAX 13

enum el_lock_mode { EL_LOCK_EXCLUSIVE = 0, EL_LOCK_SHARED = 1 };

/* One command, decoded. Fields a type does not use must be zero. */
struct el_lock_cmd {
	uint8_t type;
	uint8_t mode;
	uint8_t name_len;
	uint8_t value_len;
	uint8_t client_len;
	uint8_t limit;     /* ACQUIRE: 0 a lock; 1..EL_SEM_LIMIT_MAX a semaphore */
	uint32_t ttl_ms;
	uint32_t wait_ms;  /* 0: try; EL_WAIT_FOREVER: no bound */
	uint32_t delay_ms; /* lock-delay asked for if this holder's session expires */
	uint64_t session;
	uint64_t seq;
	uint64_t token;    /* release/resign/proclaim/delay-end token; expire renew_index */
	uint64_t now_ms;   /* proposer's clock: information only (grant time) */
	uint64_t nonce;    /* OPEN_SESSION: the client's random nonce, one per open */
	char name[EL_NAME_MAX];
	uint8_t value[EL_VALUE_MAX];
	char client[EL_CLIENT_NAME_MAX];
};

/* Largest encoded command: [ver type session seq token now ttl wait delay
 * mode name value client], every integer at its widest head. */
#define EL_LOCK_CMD_ENCODED_MAX \
	(1 + 2 + 4 * 9 + 3 * 5 + 2 + (2 + EL_NAME_MAX) + (2 + EL_VALUE_MAX) + \
	 (2 + EL_CLIENT_NAME_MAX))
_Static_assert(EL_LOCK_CMD_ENCODED_MAX <= EL_ENTRY_DATA_MAX, "a command must fit an entry");

/* Encode into buf; returns the length or a negative EL_E* code (EL_EINVAL for
 * a command that does not validate, EL_EFULL when cap is too small). */
int el_lock_cmd_encode(const struct el_lock_cmd *c, uint8_t *buf, uint32_t cap);
/* Strict decode and validate; EL_EDECODE / EL_EVERSION / EL_EINVAL. */
int el_lock_cmd_decode(struct el_lock_cmd *c, const uint8_t *buf, uint32_t len);
/* 0 when the fields are in range for the type, else EL_EINVAL. */
int el_lock_cmd_check(const struct el_lock_cmd *c);

/* ---- Apply results and events -------------------------------------------- */

enum el_lock_event_kind {
	EL_EV_GRANTED = 1,        /* a queued acquire/campaign was granted: token */
	EL_EV_WAIT_TIMEOUT = 2,   /* a queued request's bound ran out */
	EL_EV_CANCELED = 3,       /* a queued request dropped (session closed/expired) */
	EL_EV_HOLDER_CHANGED = 4, /* to a watcher: the lock's holders changed; token = newest held */
	EL_EV_VALUE_CHANGED = 5,  /* to a watcher: the election value changed (proclaim) */
};

/* For the client of `session`; seq = its request (0 for watch events). */
struct el_lock_event {
	uint8_t kind;
	uint8_t name_len;
	uint64_t session;
	uint64_t seq;
	uint64_t token;
	char name[EL_NAME_MAX];
};

/* What applying one command did. Events beyond EL_LOCK_EVENTS_MAX are counted
 * in events_dropped; the affected client still learns the outcome by
 * retrying its last seq (the stored reply is updated) or by a query. */
struct el_lock_result {
	int32_t err;        /* EL_OK or EL_E* */
	bool queued;        /* acquire/campaign queued: an EL_EV_GRANTED follows */
	uint32_t count;     /* reentrancy count after acquire/release;
			     * EL_ELIMIT: the semaphore's own limit */
	uint64_t token;     /* fencing token of the grant (or of the hold) */
	uint64_t session;   /* OPEN_SESSION: the new id; else the command's session */
	uint16_t n_events;
	uint16_t events_dropped;
	struct el_lock_event events[EL_LOCK_EVENTS_MAX];
	/* What needs a new deadline on the leader (el_node.h), so its timers
	 * follow the commands without scanning the table: a session opened or
	 * kept alive, a request queued with a bound, locks put into lock-delay
	 * (more than EL_LOCK_ARMED_DELAYS_MAX in one command: armed_delays_lost,
	 * and the node looks at every delayed lock). EL_LOCK_NONE: none. */
	el_slot_t armed_session;
	el_slot_t armed_claim;
	uint8_t n_armed_delays;
	bool armed_delays_lost;
	el_slot_t armed_delays[EL_LOCK_ARMED_DELAYS_MAX];
};

/* ---- The table (fields private to lock*.c and node*.c) ------------------- */

struct el_lock_reply {
	int32_t err;
	uint32_t count;
	uint64_t token;
	uint8_t queued;
	uint8_t pad_[7];
};

struct el_lock_session {
	uint64_t id;          /* 0: a free slot */
	uint64_t renew_index; /* entry of the OPEN or last KEEPALIVE */
	uint64_t last_seq;
	struct el_lock_reply last_reply;
	uint32_t ttl_ms;
#if EL_INDEXED
	el_slot_t claims;     /* derived: its first claim; claims chain by sess_next */
	el_slot_t watches;    /* derived: its first watch; watches chain by sess_next */
#endif
	uint8_t client_len;
	char client[EL_CLIENT_NAME_MAX];
};

/* One lock request: a hold (granted) or a wait (queued). Holds and waits
 * share one pool so that granting a waiter flips its state in place and can
 * never fail for want of a free slot. */
enum el_claim_state { EL_CLAIM_FREE = 0, EL_CLAIM_HOLD = 1, EL_CLAIM_WAIT = 2 };

struct el_lock_claim {
	uint64_t seq;      /* WAIT: the queued request (0 once held) */
	uint64_t token;    /* HOLD: fencing token */
	uint64_t grant_ms; /* HOLD: the granting leader's clock, information only */
	uint32_t count;    /* HOLD: reentrancy count */
	uint32_t wait_ms;  /* WAIT: its bound (0 once held) */
	uint32_t delay_ms; /* lock-delay asked for, capped */
	el_slot_t lock;
	el_slot_t session;
	el_slot_t next;      /* derived: next in its lock's holders (slots ascending)
			      * or queue (FIFO) */
	el_slot_t prev;      /* derived: previous in that list */
#if EL_INDEXED
	el_slot_t sess_next; /* derived: next claim of its session (slots ascending) */
#endif
	el_slot_t value;     /* election value slot or EL_LOCK_NONE */
	uint8_t state;
	uint8_t mode;
};

struct el_lock_watch {
	el_slot_t lock;
	el_slot_t session;
#if EL_INDEXED
	el_slot_t next;      /* derived: next watch of its lock (slots ascending) */
	el_slot_t sess_next; /* derived: next watch of its session (slots ascending) */
#endif
	uint8_t used;        /* 0: a free slot */
};

struct el_lock_value {
	uint8_t used;
	uint8_t len;
	uint8_t data[EL_VALUE_MAX];
};

struct el_lock_entry {
	uint64_t delay_token; /* token of the expired hold while delayed */
	uint64_t last_token;  /* token of the latest grant */
	uint32_t delay_ms;
#if EL_INDEXED
	el_slot_t holders;    /* derived: first holding claim (claim slots ascending) */
#endif
	el_slot_t wait_head;  /* the queue, FIFO */
	el_slot_t wait_tail;
#if EL_INDEXED
	el_slot_t watches;    /* derived: first watch (watch slots ascending) */
#endif
	el_slot_t n_watches;  /* derived */
	uint8_t n_holders;    /* derived */
	uint8_t mode;
	uint8_t limit;        /* 0: a lock; else a semaphore of this many permits */
	uint8_t delayed;      /* lock: 1 in its lock-delay; semaphore: permits in it */
	uint8_t name_len;     /* 0: a free slot */
	char name[EL_NAME_MAX];
};

/* Recent opens with a nonce, a ring in apply order (lock_open.c). */
struct el_lock_opens {
	uint64_t nonce[EL_OPENS_MAX];
	uint64_t session[EL_OPENS_MAX];
	uint16_t next; /* the slot the next open takes */
	uint16_t n;    /* slots in use */
};

/* The pools, for the slot helpers of lock_index.c. */
enum el_lock_pool {
	EL_POOL_SESSIONS = 0,
	EL_POOL_LOCKS = 1,
	EL_POOL_CLAIMS = 2,
	EL_POOL_WATCHES = 3,
	EL_POOL_VALUES = 4,
};
#define EL_POOLS 5

#if EL_INDEXED
/* The smallest power of two >= x (x >= 1, a constant expression). */
#define EL_POW2_(x) ((x) | (x) >> 1 | (x) >> 2 | (x) >> 4 | (x) >> 8 | (x) >> 16)
#define EL_POW2_CEIL(x) (EL_POW2_((uint32_t)(x) - 1u) + 1u)
/* Open-addressing buckets at most half full. */
#define EL_LOCK_BUCKETS (2u * EL_POW2_CEIL(EL_LOCKS_MAX))
#define EL_SESSION_BUCKETS (2u * EL_POW2_CEIL(EL_SESSIONS_MAX))
#define EL_WORDS_(n) (((n) + 31u) / 32u)

/* One pool's allocation bitmap: a bit per slot (1: in use) and a bit per
 * word (1: that word is full), so the lowest free slot is two scans of a few
 * words away. All-zero is an empty pool. */
#define EL_POOL_BITMAP(name, n)                          \
	struct {                                        \
		uint32_t used[EL_WORDS_(n)];             \
		uint32_t full[EL_WORDS_(EL_WORDS_(n))];  \
	} name

/* Derived state (never in a snapshot): rebuilt by restore, checked by
 * lock_check.c. The layout of the buckets depends on index_key, which may
 * differ between replicas; nothing replicated depends on it. */
struct el_lock_index {
	el_slot_t lock_buckets[EL_LOCK_BUCKETS];       /* lock slot + 1; 0: empty */
	el_slot_t session_buckets[EL_SESSION_BUCKETS]; /* session slot + 1 */
	EL_POOL_BITMAP(sessions, EL_SESSIONS_MAX);
	EL_POOL_BITMAP(locks, EL_LOCKS_MAX);
	EL_POOL_BITMAP(claims, EL_CLAIMS_MAX);
	EL_POOL_BITMAP(watches, EL_WATCHES_MAX);
	EL_POOL_BITMAP(values, EL_VALUES_MAX);
};
#endif

/* A free record is all-zero bytes (a lock's links are set when it is taken),
 * so a table in zeroed memory is empty and a node whose tables are large on
 * paper touches only the pages it uses. */
struct el_lock_table {
	uint64_t last_index; /* index of the last command applied */
	uint64_t index_key;  /* this replica's hash key (not replicated) */
	struct el_lock_session sessions[EL_SESSIONS_MAX];
	struct el_lock_entry locks[EL_LOCKS_MAX];
	uint32_t n_waiting;  /* derived: claims in EL_CLAIM_WAIT */
	struct el_lock_claim claims[EL_CLAIMS_MAX];
	struct el_lock_watch watches[EL_WATCHES_MAX];
	struct el_lock_value values[EL_VALUES_MAX];
	struct el_lock_opens opens;
#if EL_INDEXED
	struct el_lock_index idx;
#endif
};

/* ---- Applying commands ----------------------------------------------------- */

/* An empty table (clears all of it). */
void el_lock_init(struct el_lock_table *t);
/* The same for a table already in zeroed memory (static or calloc): touches
 * nothing. key: this replica's hash key for the indexes (any value; a random
 * one keeps clients from choosing names that collide). */
void el_lock_init_zeroed(struct el_lock_table *t, uint64_t key);
/* Apply the NORMAL entry at index (index > every index applied before).
 * A malformed command applies as a no-op with res->err = EL_EDECODE etc. */
void el_lock_apply(struct el_lock_table *t, uint64_t index, const uint8_t *data, uint32_t len,
		   struct el_lock_result *res);
/* The same for a command already decoded by el_lock_cmd_decode (its text
 * fields are valid UTF-8, which the snapshot encoder relies on). */
void el_lock_apply_cmd(struct el_lock_table *t, uint64_t index, const struct el_lock_cmd *c,
		       struct el_lock_result *res);

/* ---- Queries ------------------------------------------------------------- */

struct el_lock_query_holder {
	uint64_t session;
	uint64_t token;
	uint64_t grant_ms; /* the granting leader's clock: information only */
	uint32_t count;
	uint8_t client_len;
	char client[EL_CLIENT_NAME_MAX];
};

struct el_lock_query_waiter {
	uint64_t session;
	uint64_t seq;
	uint32_t wait_ms;
	uint8_t mode;
};

struct el_lock_query {
	uint8_t mode;
	uint8_t limit;            /* 0: a lock; else a semaphore's permits */
	uint8_t n_delayed;        /* permits in lock-delay (a lock: 0 or 1) */
	bool delayed;
	uint8_t n_holders;
	uint8_t value_len;
	uint16_t n_waiters;       /* all of them */
	uint16_t n_waiters_listed;
	uint16_t n_watches;
	uint64_t delay_token;
	struct el_lock_query_holder holders[EL_HOLDERS_MAX];
	struct el_lock_query_waiter waiters[EL_QUERY_WAITERS_MAX]; /* queue order */
	uint8_t value[EL_VALUE_MAX];
};

/* Fill q for the lock name; EL_ENOTFOUND when no such lock exists. */
int el_lock_query(const struct el_lock_table *t, const char *name, uint32_t name_len,
		  struct el_lock_query *q);
/* The first lock slot in use at or above from, or EL_LOCK_NONE: walk the
 * locks in slot order (a listing), at the cost of the locks in use. */
el_slot_t el_lock_next_lock(const struct el_lock_table *t, uint32_t from);
/* The session slot of id, or EL_LOCK_NONE. */
el_slot_t el_lock_session_slot(const struct el_lock_table *t, uint64_t id);
/* Records in use, for metrics and tests. */
struct el_lock_usage {
	uint32_t sessions, locks, holds, waits, watches, values;
};
void el_lock_usage(const struct el_lock_table *t, struct el_lock_usage *u);

/* ---- Snapshot -------------------------------------------------------------- */

/* CBOR bytes of a semaphore's limit or delayed count at its widest. */
#define EL_LOCK_SNAP_SMALL (EL_SEM_LIMIT_MAX < 24 ? 1 : 2)
/* Worst-case snapshot bytes of a full table (every integer at its widest
 * head, every string at its limit); see lock_snapshot.c for the layout. */
#define EL_LOCK_SNAP_SESSION_MAX (1 + EL_LOCK_SNAP_SLOT + 9 + 5 + 9 + 9 + 5 + 9 + 5 + 1 + (2 + EL_CLIENT_NAME_MAX))
#define EL_LOCK_SNAP_LOCK_MAX (1 + EL_LOCK_SNAP_SLOT + (2 + EL_NAME_MAX) + 1 + 2 * EL_LOCK_SNAP_SMALL + 5 + 9 + 9 + 3 * EL_LOCK_SNAP_SLOT)
#define EL_LOCK_SNAP_CLAIM_MAX (1 + 3 * EL_LOCK_SNAP_SLOT + 9 + 5 + 9 + 5)
#define EL_LOCK_SNAP_VALUE_MAX (1 + EL_LOCK_SNAP_SLOT + (2 + EL_VALUE_MAX))
#define EL_LOCK_SNAP_WATCH_MAX (1 + 2 * EL_LOCK_SNAP_SLOT)
#define EL_LOCK_SNAP_OPENS_MAX (1 + 3 + 3 + EL_OPENS_MAX * (1 + 9 + 9))
#define EL_LOCK_SNAPSHOT_BOUND                                                      \
	(1 + 1 + 9 + 9 + 3 * 3 + EL_LOCK_SNAP_OPENS_MAX +                             \
	 EL_SESSIONS_MAX * EL_LOCK_SNAP_SESSION_MAX +                                  \
	 EL_LOCKS_MAX * EL_LOCK_SNAP_LOCK_MAX + EL_CLAIMS_MAX * EL_LOCK_SNAP_CLAIM_MAX + \
	 EL_VALUES_MAX * EL_LOCK_SNAP_VALUE_MAX + EL_WATCHES_MAX * EL_LOCK_SNAP_WATCH_MAX)
_Static_assert(EL_LOCK_SNAPSHOT_BOUND <= EL_SNAPSHOT_MAX, "a full lock table must fit a snapshot");

/* Write the table as deterministic CBOR; returns the length or EL_EFULL. */
int el_lock_snapshot(const struct el_lock_table *t, uint8_t *buf, uint32_t cap);
/* Replace the table by a snapshot. Strict: on any error (EL_EDECODE,
 * EL_EVERSION, EL_EINVAL) the table is left exactly as it was. */
int el_lock_restore(struct el_lock_table *t, const uint8_t *buf, uint32_t len);
/* 0 when el_lock_restore would accept the bytes as the state at index (in
 * particular, the table's last_index is not above index); a negative EL_E*
 * code otherwise. Touches no table: the check Raft runs on a received
 * snapshot before it replaces the log. */
int el_lock_snapshot_check(const uint8_t *buf, uint32_t len, uint64_t index);

#endif /* EL_LOCK_H */
