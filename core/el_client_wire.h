/*
 * el_client_wire.h - the client protocol: requests from applications and the
 * CLI, the daemon's replies and its pushed events, as CBOR (docs/protocol.md
 * is the public description; this header is its C side).
 *
 * On a connection (TLS over TCP) every message is one frame: a 4-byte
 * big-endian body length, then the body, one CBOR map. The map has small
 * unsigned keys (EL_CW_K_*), written in ascending order (RFC 8949 section
 * 4.2.1 deterministic encoding); key 0 is the version and comes first, key 1
 * the type. A field absent from the map is zero (or empty); a field the type
 * does not use is refused. Nested maps (holders, waiters, members, locks) use
 * the same key numbers.
 *
 * Flows:
 *   - request -> reply: the client picks a nonzero request id; the reply
 *     carries the same id and type EL_CW_REPLY(request type). Replies may
 *     arrive in any order; match them by id.
 *   - events: the server pushes EL_CW_EVENT (id 0) to the connection that
 *     last sent a request for the session (it "attaches" the session).
 *   - EL_CW_ERROR: the server could not make sense of a frame; id is the
 *     request's when it could be read, else 0.
 *
 * Exactly-once: ACQUIRE, RELEASE, CAMPAIGN, RESIGN, PROCLAIM, WATCH and
 * UNWATCH carry (session, seq), seq >= 1 and rising per session; a retry with
 * the same seq (after a timeout, a reconnect or a leader change) returns the
 * first answer. OPEN_SESSION carries a client-chosen 64-bit nonce for the
 * same purpose (a retried open finds the session the first one made, once
 * the core keeps nonces; until then a retry may leave an orphan session that
 * expires after its TTL). KEEPALIVE and CLOSE_SESSION are idempotent.
 *
 * Redirects: a request a follower cannot serve gets err EL_ENOTLEADER with
 * leader (node id, 0: unknown) and leader_addr (its client address, when
 * known); the client reconnects there and retries with the same id and seq.
 *
 * Freestanding like the rest of core/: no allocation; decoding is strict and
 * bounded (every count, length, type and nesting depth checked before use).
 */
#ifndef EL_CLIENT_WIRE_H
#define EL_CLIENT_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "el_cbor.h"
#include "el_config.h"
#include "el_lock.h"
#include "el_raft.h"

#define EL_CW_VERSION 1

/* Largest frame body either way; a longer length prefix closes the
 * connection (after an EL_CW_ERROR with EL_EDECODE). */
#define EL_CW_FRAME_MAX 16384u
/* Bytes of the length prefix. */
#define EL_CW_PREFIX 4u

/* Text of an address ("tls+tcp://host:port"). */
#define EL_CW_ADDR_MAX 96
/* Locks one LIST reply carries; the client continues from its cursor. */
#define EL_CW_LIST_MAX 32
/* Bytes of a lock-table snapshot one SNAPSHOT reply carries. */
#define EL_CW_CHUNK_MAX 4096

/* ---- Message types ------------------------------------------------------ */

enum el_cw_type {
	/* Sessions */
	EL_CW_OPEN_SESSION = 1,  /* ttl_ms, client, nonce -> session */
	EL_CW_KEEPALIVE = 2,     /* session */
	EL_CW_CLOSE_SESSION = 3, /* session: releases everything, no lock-delay */
	/* Locks and elections: (session, seq) exactly-once */
	EL_CW_ACQUIRE = 4,  /* session seq name mode wait_ms delay_ms permits -> token count
			     * queued (EL_ELIMIT: permits = the semaphore's own) */
	EL_CW_RELEASE = 5,  /* session seq name token -> count */
	EL_CW_CAMPAIGN = 6, /* session seq name wait_ms delay_ms value -> token queued */
	EL_CW_RESIGN = 7,   /* session seq name token */
	EL_CW_PROCLAIM = 8, /* session seq name token value */
	EL_CW_WATCH = 9,    /* session seq name: HOLDER/VALUE_CHANGED events */
	EL_CW_UNWATCH = 10, /* session seq name */
	/* Reads */
	EL_CW_QUERY = 11,  /* name -> mode holders waiters value ... (linearizable) */
	EL_CW_LIST = 12,   /* cursor limit -> locks cursor (linearizable) */
	EL_CW_STATUS = 13, /* -> this node's view: node role term leader commit ... */
	/* Administration (leader) */
	EL_CW_MEMBER_ADD = 14,     /* node peer_addr client_addr learner -> index */
	EL_CW_MEMBER_REMOVE = 15,  /* node -> index */
	EL_CW_MEMBER_PROMOTE = 16, /* node -> index */
	EL_CW_TRANSFER = 17,       /* node (0: the most caught-up voter) */
	EL_CW_PING = 18,           /* -> an empty reply; no session needed */
	EL_CW_SNAPSHOT = 19,       /* index offset -> index total offset chunk (admin) */
	/* 24..31 are reserved for the identity handshake (issue 12). */
	EL_CW_REQUEST_MAX = 19,

	EL_CW_REPLY_BASE = 64, /* reply to request T has type 64 + T */
	EL_CW_EVENT = 128,     /* pushed: kind session seq name token */
	EL_CW_ERROR = 129,     /* an undecodable frame: id (if read) err */
};
#define EL_CW_REPLY(t) (EL_CW_REPLY_BASE + (t))

/* Event kinds: 1..5 are el_lock_event_kind (el_lock.h), same numbers. */
enum el_cw_event_kind {
	EL_CW_EV_GRANTED = EL_EV_GRANTED,               /* seq's queued request: token */
	EL_CW_EV_WAIT_TIMEOUT = EL_EV_WAIT_TIMEOUT,     /* seq's bound ran out */
	EL_CW_EV_CANCELED = EL_EV_CANCELED,             /* seq dropped (session gone) */
	EL_CW_EV_HOLDER_CHANGED = EL_EV_HOLDER_CHANGED, /* watch: token = newest holder's */
	EL_CW_EV_VALUE_CHANGED = EL_EV_VALUE_CHANGED,   /* watch: election value */
	EL_CW_EV_GAP = 6,             /* events for this connection were dropped: resync */
	EL_CW_EV_SESSION_EXPIRING = 7, /* lease_ms left on the leader's clock */
};
#define EL_CW_EV_MAX 7

/* STATUS roles: el_state (el_raft.h) numbers. Member roles: el_member_role. */

/* ---- Map keys (docs/protocol.md, "Keys") -------------------------------- */

enum el_cw_key {
	EL_CW_K_VERSION = 0,
	EL_CW_K_TYPE = 1,
	EL_CW_K_ID = 2,
	EL_CW_K_ERR = 3,
	EL_CW_K_SESSION = 4,
	EL_CW_K_SEQ = 5,
	EL_CW_K_NAME = 6,
	EL_CW_K_MODE = 7,
	EL_CW_K_WAIT_MS = 8,
	EL_CW_K_TTL_MS = 9,
	EL_CW_K_DELAY_MS = 10,
	EL_CW_K_TOKEN = 11,
	EL_CW_K_VALUE = 12,
	EL_CW_K_CLIENT = 13,
	EL_CW_K_NONCE = 14,
	EL_CW_K_COUNT = 15,
	EL_CW_K_QUEUED = 16,
	EL_CW_K_LEADER = 17,
	EL_CW_K_LEADER_ADDR = 18,
	EL_CW_K_KIND = 19,
	EL_CW_K_NODE = 20,
	EL_CW_K_PEER_ADDR = 21,
	EL_CW_K_CLIENT_ADDR = 22,
	EL_CW_K_ROLE = 23,
	EL_CW_K_TERM = 24,
	EL_CW_K_COMMIT = 25,
	EL_CW_K_APPLIED = 26,
	EL_CW_K_INDEX = 27,
	EL_CW_K_MEMBERS = 28,
	EL_CW_K_HOLDERS = 29,
	EL_CW_K_WAITERS = 30,
	EL_CW_K_N_WAITERS = 31,
	EL_CW_K_N_WATCHES = 32,
	EL_CW_K_DELAYED = 33,
	EL_CW_K_DELAY_TOKEN = 34,
	EL_CW_K_LOCKS = 35,
	EL_CW_K_CURSOR = 36,
	EL_CW_K_LIMIT = 37,
	EL_CW_K_LEARNER = 38,
	EL_CW_K_LEASE_MS = 39,
	EL_CW_K_GRANT_MS = 40,
	EL_CW_K_N_SESSIONS = 41,
	EL_CW_K_N_LOCKS = 42,
	EL_CW_K_N_HOLDERS = 43,
	EL_CW_K_MATCH = 44,
	EL_CW_K_REACHABLE = 45,
	EL_CW_K_LAST_INDEX = 46,
	EL_CW_K_OFFSET = 47,
	EL_CW_K_TOTAL = 48,
	EL_CW_K_CHUNK = 49,
	EL_CW_K_PERMITS = 50, /* a semaphore's limit N (0, absent: a lock) */
	EL_CW_K_MAX = 50,
};

/* ---- Decoded messages --------------------------------------------------- */

struct el_cw_holder {
	uint64_t session;
	uint64_t token;
	uint64_t grant_ms; /* the granting leader's clock: information only */
	uint32_t count;
	uint8_t client_len;
	char client[EL_CLIENT_NAME_MAX];
};

struct el_cw_waiter {
	uint64_t session;
	uint64_t seq;
	uint32_t wait_ms;
	uint8_t mode;
};

struct el_cw_member {
	el_id_t node;
	uint8_t role;      /* el_member_role */
	bool reachable;    /* the reporting node has a live link to it */
	uint64_t match;    /* leader only: replicated up to */
	uint8_t peer_addr_len;
	uint8_t client_addr_len;
	char peer_addr[EL_CW_ADDR_MAX];
	char client_addr[EL_CW_ADDR_MAX];
};

/* One lock of a LIST reply. */
struct el_cw_lock {
	uint8_t name_len;
	uint8_t mode;
	uint8_t permits; /* a semaphore's limit; 0: a lock */
	uint8_t n_holders;
	bool delayed;
	uint16_t n_waiters;
	uint64_t token; /* newest holder's token (0: free) */
	char name[EL_NAME_MAX];
};

/*
 * One message of any type; fields a type does not use are zero. Strings are
 * copies (not NUL-terminated; *_len says how long), so a decoded message does
 * not point into the frame.
 */
struct el_cw_msg {
	uint8_t type;
	uint8_t kind;     /* EVENT */
	uint8_t mode;     /* el_lock_mode */
	uint8_t permits;  /* ACQUIRE, its reply (EL_ELIMIT), QUERY reply: a semaphore's limit */
	uint8_t role;     /* STATUS reply: el_state of the node */
	bool queued;
	bool learner;     /* MEMBER_ADD: stay a learner */
	bool delayed;     /* QUERY reply */
	uint64_t id;
	int32_t err;      /* replies, ERROR: EL_OK or a negative EL_E* code */
	uint64_t session;
	uint64_t seq;
	uint64_t token;
	uint64_t nonce;
	uint64_t index;       /* admin reply: the configuration entry */
	uint64_t term;        /* STATUS */
	uint64_t commit;
	uint64_t applied;
	uint64_t last_index;
	uint64_t delay_token; /* QUERY reply */
	uint64_t cursor;      /* LIST: where to go on (0: from the start / the end) */
	uint32_t ttl_ms;
	uint32_t wait_ms;     /* 0: try; EL_WAIT_FOREVER: no bound */
	uint32_t delay_ms;
	uint32_t lease_ms;    /* SESSION_EXPIRING */
	uint32_t count;
	uint32_t limit;       /* LIST request: at most this many (<= EL_CW_LIST_MAX) */
	uint32_t offset;      /* SNAPSHOT: where the chunk starts in the snapshot */
	uint32_t total;       /* SNAPSHOT reply: the snapshot's length */
	uint32_t n_sessions;  /* STATUS */
	uint32_t n_locks;
	el_id_t leader;
	el_id_t node;         /* STATUS: this node; admin: the target */
	uint16_t n_waiters;   /* QUERY reply: all waiters (waiters[] lists the first) */
	uint16_t n_watches;
	uint8_t name_len;
	uint8_t value_len;
	uint8_t client_len;
	uint8_t leader_addr_len;
	uint8_t peer_addr_len;
	uint8_t client_addr_len;
	char name[EL_NAME_MAX];
	uint8_t value[EL_VALUE_MAX];
	char client[EL_CLIENT_NAME_MAX];
	char leader_addr[EL_CW_ADDR_MAX];
	char peer_addr[EL_CW_ADDR_MAX];
	char client_addr[EL_CW_ADDR_MAX];
	uint8_t n_holders;
	uint8_t n_members;
	uint8_t n_waiters_listed;
	uint8_t n_locks_listed;
	struct el_cw_holder holders[EL_HOLDERS_MAX];
	struct el_cw_waiter waiters[EL_QUERY_WAITERS_MAX];
	struct el_cw_member members[EL_NODES_MAX];
	struct el_cw_lock locks[EL_CW_LIST_MAX];
	uint16_t chunk_len;   /* SNAPSHOT reply */
	uint8_t chunk[EL_CW_CHUNK_MAX];
};

/* Worst-case encoded size; every message fits one frame. */
#define EL_CW_HOLDER_MAX (1 + 5 * 2 + 3 * 9 + 5 + 2 + EL_CLIENT_NAME_MAX)
#define EL_CW_WAITER_MAX (1 + 4 * 2 + 2 * 9 + 5 + 1)
#define EL_CW_MEMBER_MAX (1 + 6 * 2 + 5 + 1 + 1 + 9 + 2 * (2 + EL_CW_ADDR_MAX))
#define EL_CW_LOCK_MAX (1 + 7 * 2 + (2 + EL_NAME_MAX) + 1 + 2 + 1 + 3 + 9 + 2)
#define EL_CW_MSG_MAX                                                           \
	(3 + EL_CW_K_MAX * 2 + 30 * 9 + (2 + EL_NAME_MAX) + (2 + EL_VALUE_MAX) +   \
	 (2 + EL_CLIENT_NAME_MAX) + 4 * (2 + EL_CW_ADDR_MAX) +                      \
	 3 + EL_HOLDERS_MAX * EL_CW_HOLDER_MAX + 3 + EL_QUERY_WAITERS_MAX * EL_CW_WAITER_MAX + \
	 3 + EL_NODES_MAX * EL_CW_MEMBER_MAX + 3 + EL_CW_LIST_MAX * EL_CW_LOCK_MAX + \
	 3 + EL_CW_CHUNK_MAX)
_Static_assert(EL_CW_MSG_MAX <= EL_CW_FRAME_MAX, "a message must fit a frame");
_Static_assert(EL_CW_ADDR_MAX <= 255 && EL_CW_LIST_MAX <= 255, "lengths are uint8_t");

/* ---- Codec -------------------------------------------------------------- */

/* Encode m (the body only, no length prefix). Returns the length, EL_EFULL
 * when cap is too small (EL_CW_MSG_MAX always suffices) or EL_EINVAL when m
 * is not a message the decoder accepts. */
int el_cw_encode(const struct el_cw_msg *m, uint8_t *buf, uint32_t cap);

/* Strict decode of one body. 0, EL_EVERSION (another version: only id and
 * type are kept, for the error reply) or EL_EDECODE (m is zeroed but for id
 * and type when they were read). */
int el_cw_decode(struct el_cw_msg *m, const uint8_t *buf, uint32_t len);

/* 0 when the fields are valid for the type, else EL_EINVAL (what both
 * directions check). */
int el_cw_check(const struct el_cw_msg *m);

/* True for request types a client may send. */
bool el_cw_is_request(uint8_t type);

/* The length prefix. */
static inline void el_cw_put_prefix(uint8_t p[EL_CW_PREFIX], uint32_t len)
{
	p[0] = (uint8_t)(len >> 24);
	p[1] = (uint8_t)(len >> 16);
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
}
static inline uint32_t el_cw_get_prefix(const uint8_t p[EL_CW_PREFIX])
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif /* EL_CLIENT_WIRE_H */
