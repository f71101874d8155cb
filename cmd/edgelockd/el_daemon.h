/*
 * el_daemon.h - edgelockd's state, shared by its files:
 *   main.c     flags, config, start and stop
 *   daemon.c   the loop: drain input, step, ready (persist, send, reply), advance
 *   serve.c    client requests -> node calls, node replies/events -> frames
 *   peers.c    peer frames (proof, hello, Raft messages) and the address book
 *   auth.c     client identities (proof or anonymous), session owners, [acl]
 *   limits.c   [limits] claims and watches per identity, the session TTL bound
 *   metrics.c  Prometheus metrics over HTTP (el_d_metrics.h)
 *   notify.c   systemd: READY/STATUS, the watchdog from the loop, STOPPING
 *   owner.c    which node's data the data directory holds (DATA_DIR/owner)
 *   dir_file.c a small file of data_dir written whole (temp, sync, rename)
 *   diag.c     the log lines that say why: role changes, membership, slow fsync
 *   crl_watch.c a warning a day before the loaded CRL lapses, an error after
 *
 * One thread owns everything here; el_net's callbacks only queue frames.
 */
#ifndef EL_DAEMON_H
#define EL_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "el_client_wire.h"
#include "el_d_metrics.h"
#include "el_daemon_config.h"
#include "el_ident.h"
#include "el_net.h"
#include "el_node.h"
#include "el_platform.h" /* enum el_log_level */
#include "el_storage.h"
#include "el_wire.h"

/* Requests in flight: node commands plus linearizable reads. */
#define EL_D_PENDING (EL_PENDING_MAX + EL_READS_MAX)
#define EL_D_INBOUND_MAX 64 /* accepted peer connections */
/* How long an accepted connection, client or peer, may take from its
 * challenge to its identity proof (and, on the peer port, its hello) before
 * it is closed: as long as a TLS handshake may take (net/el_net.h); one that
 * proves takes one round trip and two signatures, far less. */
#define EL_D_PROOF_MS 10000u

/* A membership change answered once its entry commits (admin_wait.c): at
 * most this many requests wait (one change at a time, and its repeats),
 * each at most EL_D_ADMIN_WAIT_MS. */
#define EL_D_ADMIN_WAITS 8u
#define EL_D_ADMIN_WAIT_MS 10000u
struct el_d_admin_wait {
	uint64_t conn;
	uint64_t id;    /* the request's; 0: a free slot */
	uint64_t index; /* its configuration entry, appended in term */
	uint64_t term;
	uint64_t deadline_ms;
	el_id_t node;
	uint8_t type;   /* EL_CW_MEMBER_ADD, _REMOVE or _PROMOTE */
	bool applied;   /* known committed when the watch began (a repeat) */
};

struct el_d_pending {
	uint64_t req_id; /* 0: free */
	uint64_t conn;
	uint64_t client_id;
	uint64_t cursor; /* LIST */
	uint64_t start_ns; /* read by the loop (el_d_metrics_clock), for metrics */
	uint32_t limit;
	uint32_t owner;     /* the identity charged ([limits], limits.c): owners.owner[] */
	uint32_t owner_gen; /* owners.gen when charged; 0: nothing charged */
	uint8_t type;    /* the request's el_cw_type */
	uint8_t name_len;
	char name[EL_NAME_MAX];
};

/* Where a node can be reached: from the config, hellos and MEMBER_ADD. */
struct el_d_book {
	el_id_t id;
	char peer_addr[EL_CW_ADDR_MAX];
	char client_addr[EL_CW_ADDR_MAX];
	uint64_t heard_ms; /* its last Raft message to this node (STATUS "reachable") */
	/* when it was last written or heard: a full book reuses the entry of
	 * a non-member touched longest ago (peers.c book_slot). Not heard_ms:
	 * a node just added was written but never heard. */
	uint64_t touched_ms;
};

/* An accepted peer connection: challenged on opening, then its PROOF
 * (the proven certificate name), then its hello (the node id, which must be
 * the proven name's), then Raft messages. */
struct el_d_inbound {
	uint64_t conn; /* 0: free */
	el_id_t node;  /* 0 until its hello */
	bool proven;   /* a valid PROOF arrived: name holds the certificate's CN */
	uint64_t opened_ms; /* its challenge: closed EL_D_PROOF_MS later without a hello */
	uint64_t shadowed_ms; /* when a newer connection of its node said hello (0: none) */
	char hello_peer[EL_CW_ADDR_MAX]; /* the peer address its hello gave */
	uint8_t nonce[EL_IDENT_NONCE_LEN];
	char name[EL_IDENT_NAME_MAX + 1];
};

/* A refusal that repeats as long as its cause lasts (a node redialing
 * every 1 to 2 s): one line a minute per kind, node and reason, the rest
 * counted, and an info line once none came for EL_D_REFUSAL_QUIET_MS
 * (peers.c el_d_refusal_logs). */
#define EL_D_PEER_REFUSALS 8
#define EL_D_ACL_REFUSALS 16
#define EL_D_REFUSAL_QUIET_MS 10000u
enum el_d_refused {
	EL_D_REFUSED_PEER = 0,   /* a connection to our peer port */
	EL_D_REFUSED_DIAL = 1,   /* a connection this node dialed */
	EL_D_REFUSED_CLIENT = 2, /* a connection to our client port */
	EL_D_REFUSED_ACL = 3,    /* a client request [acl] refuses (auth.c), in acl_refusals */
};
struct el_d_peer_refusal {
	el_id_t node;      /* 0: a connection refused before its hello */
	uint8_t kind;      /* enum el_d_refused */
	bool repeated;     /* one alike came after the first line: its end is said */
	uint32_t why_hash; /* of the kind and the reason's text */
	uint64_t logged_ms; /* 0: a free slot */
	uint64_t last_ms;   /* the latest alike */
	uint64_t held;      /* refusals alike since, not logged */
	uint64_t total;     /* refusals alike since the slot was taken */
	char why[224];      /* the reason, for the line that tells the held ones */
};

/* The addresses a node not (yet) a member announced in its latest hello
 * (refused), for members add to compare with what it is given (peers.c). */
#define EL_D_JOINERS 4
struct el_d_joiner {
	el_id_t node;
	uint64_t heard_ms; /* 0: a free slot */
	char peer_addr[EL_CW_ADDR_MAX];
	char client_addr[EL_CW_ADDR_MAX];
};

/* A connection this node dialed: waiting for the listener's CHALLENGE. */
struct el_d_outbound {
	uint64_t conn; /* 0: free (one per peer: a new dial replaces it) */
	el_id_t peer;
	bool proved;   /* PROOF and hello sent; nothing more may arrive */
};

/* A client connection's identity (auth.c), in el_net_slots() slots. */
enum el_d_auth {
	EL_D_AUTH_NONE = 0,
	EL_D_AUTH_CHALLENGED = 1, /* waiting for a PROOF or a first request */
	EL_D_AUTH_PROVEN = 2,     /* name holds the certificate's CN */
	EL_D_AUTH_ANONYMOUS = 3,  /* no proof (client_auth = optional) */
	EL_D_AUTH_REFUSED = 4,    /* closing: nothing more is served */
};

struct el_d_client {
	uint64_t conn; /* 0: free */
	uint32_t pending; /* its requests in d->pending ([limits] requests_per_client) */
	uint8_t auth;
	uint64_t opened_ms; /* when it was challenged */
	uint8_t nonce[EL_IDENT_NONCE_LEN];
	char name[EL_IDENT_NAME_MAX + 1];
	/* refusals logged (serve.c): this second's count, since when, held back */
	uint32_t refusals_logged;
	uint64_t refusals_ms;
	uint64_t refusals_held;
};

/* The client connection a session's events go to. */
struct el_d_attach {
	uint64_t session;
	uint64_t conn;
	bool warned; /* SESSION_EXPIRING sent for the current lease */
};

/* A session that an entry about to be applied ends (CLOSE_SESSION or
 * EXPIRE_SESSION), and the connection it was attached to then (serve.c):
 * its last events (CANCELED) come out of the core after the table has
 * freed it, when d->attach can no longer be found by the session's slot,
 * and that slot may already hold a session opened in the same batch. */
struct el_d_ending {
	uint64_t session;
	uint64_t conn;
};

/* A session's last numbered request as seen by this node (seen.c). */
struct el_d_seen {
	uint64_t session; /* 0: none yet */
	uint64_t seq;
	uint64_t name_hash;
	uint8_t type;     /* EL_CMD_* */
};

/* A [limits] refusal's log line (limits.c, auth.c): at most one a second
 * per limit, with the count since; the refusals held back meanwhile are
 * told once that second is over (el_d_limits_turn), naming the last
 * identity refused, not with the next refusal, which may never come. */
struct el_d_refusals {
	uint64_t logged_ms;
	uint64_t refused; /* since the last line */
	const char *key;  /* the [limits] key, and its value */
	uint32_t limit;
	char who[EL_IDENT_NAME_MAX + 1]; /* the last identity refused */
};

/* [limits] sessions_per_client (auth.c): the last identity counted, its live
 * sessions plus its opens in flight, valid while the table stays at index:
 * a flood of refused opens then costs no walk of the session table each. */
struct el_d_quota {
	char name[EL_IDENT_NAME_MAX + 1]; /* "" for anonymous (a CN is never empty) */
	uint64_t index;  /* the table's last index when counted */
	bool valid;
	uint32_t count;
	struct el_d_refusals refusals;
	struct el_d_refusals conn_refusals; /* [limits] connections_per_client */
};

/* [limits] claims_per_client, watches_per_client (limits.c): the leader's
 * view of which sessions each identity owns, so that counting an identity's
 * claims walks its own sessions' lists, never the whole table. Rebuilt from
 * the table when this node starts leading (a record of an older gen is
 * free, so a rebuild clears nothing); between rebuilds a session joins its
 * identity when a request names it. */
#define EL_D_OWNERS (4u * EL_SESSIONS_MAX) /* identities, hashed; at most 3/4 in use */
enum el_d_use { EL_D_CLAIMS = 0, EL_D_WATCHES = 1, EL_D_USES = 2 };

struct el_d_owner {
	uint32_t gen;        /* == owners.gen: in use */
	uint8_t name_len;
	char name[EL_CLIENT_NAME_MAX]; /* the identity; "" for anonymous */
	el_slot_t first;     /* its first known session slot (owners.owned[]) */
	uint32_t flight[EL_D_USES]; /* requested, not answered yet */
	uint64_t counted_at; /* the table's last_index + 1 when count[] was taken; 0: never */
	uint32_t count[EL_D_USES];
};

struct el_d_owned { /* by session slot of the lock table */
	uint64_t session;   /* the session known there, if gen == owners.gen */
	uint32_t gen;
	uint32_t owner;     /* owners.owner[] */
	el_slot_t next, prev; /* the owner's other sessions */
};

struct el_d_owners {
	uint32_t gen;          /* bumped by each rebuild; 0 is never current */
	uint32_t n;            /* identities in use */
	uint64_t term;         /* the term it was built in */
	uint64_t settle_index; /* rebuild again once applied reaches it; 0: settled */
	struct el_d_refusals refusals[EL_D_USES + 1]; /* claims, watches, TTL */
	struct el_d_owned owned[EL_SESSIONS_MAX];
	struct el_d_owner owner[EL_D_OWNERS];
};

/* Which incarnation of the cluster this node's data is of (incarnation.c). */
struct el_d_incarnation {
	bool known;          /* false: joining, none adopted yet */
	uint32_t generation; /* 0 bootstrapped, +1 per --force-new-cluster, 1 restored */
	uint64_t nonce;      /* random, or the voters' (and backup's) digest; 0 for old data */
};

enum el_d_inc_verdict {
	EL_D_INC_SAME,       /* the same, or the hello says none */
	EL_D_INC_ADOPT,      /* this node has none yet: take the hello's */
	EL_D_INC_THEY_STALE, /* the sender's data is from before ours */
	EL_D_INC_WE_STALE,   /* ours is from before the sender's: stop */
	EL_D_INC_OTHER,      /* another cluster made from this one */
	EL_D_INC_DAMAGED,    /* another generation, our nonce: a file damaged or tampered */
};

struct el_daemon {
	struct el_dcfg cfg;
	struct el_d_incarnation inc;
	struct el_node *node;
	struct el_storage *st;
	struct el_net *net;
	uint64_t now_ms;
	uint64_t req_seq;
	uint64_t cluster;
	bool stopping;
	bool was_member; /* this node has been in the configuration */
	struct el_d_peer_refusal peer_refusals[EL_D_PEER_REFUSALS];
	struct el_d_joiner joiners[EL_D_JOINERS];
	uint64_t two_dialers_said_ms; /* peers.c: a node's certificate on two boards, said */
	bool stale_stop; /* stopped on a newer incarnation's hello: exit 1, a person must act */
	struct el_d_peer_refusal acl_refusals[EL_D_ACL_REFUSALS]; /* auth.c */
	/* removed (committed): since when the log has not grown, at which index */
	uint64_t removed_seen_ms;
	uint64_t removed_last_index;
	/* leader: telling the nodes a committed removal dropped (daemon.c) */
	uint64_t notice_index, notice_until_ms, notice_next_ms;
	uint64_t leader_since_ms; /* when this node last became leader */
	uint64_t leaderless_since_ms; /* since when it knows no leader; 0: it knows one */
	bool force_new_cluster; /* --force-new-cluster: lost quorum, become the one voter */
	bool bootstrapping; /* --bootstrap, its configuration not yet durable (daemon.c) */
	/* SNAPSHOT (backup): the lock table as of a linearizable read, kept
	 * while a client fetches it chunk by chunk (serve.c). */
	uint8_t *snap_buf;     /* EL_SNAPSHOT_MAX bytes, allocated on first use */
	uint32_t snap_len;
	uint64_t snap_index;   /* the table's last index; 0: none taken */
	uint64_t stop_deadline_ms;
	uint64_t role_key; /* last role/term/leader logged */
	uint32_t expiring_cursor; /* next attach slot el_d_expiring looks at */
	bool events_leader; /* led at the last look: d->attach is a leader's (serve.c) */
	uint32_t proof_cursor;    /* next client slot el_d_clients_unproven looks at */
	uint64_t proof_sweep_ms;  /* when it looks next (auth.c) */
	uint64_t ring_released_at; /* snapshot index of the last el_log_ring_release */
	uint64_t trimmed_ms;       /* when give_back_memory last trimmed the heaps */
	bool trimmed_settled;      /* trimmed once the cluster had a leader */
	struct el_d_pending pending[EL_D_PENDING];
	struct el_d_admin_wait admin_waits[EL_D_ADMIN_WAITS];
	struct el_d_book book[EL_DCFG_PEERS_MAX];
	uint64_t book_full_logged_ms; /* its last "address book full" warning (0: none) */
	struct el_d_inbound inbound[EL_D_INBOUND_MAX];
	struct el_d_outbound outbound[EL_DCFG_PEERS_MAX];
	struct el_ident *ident; /* this node's CA, certificate, key and CRL */
	uint64_t crl_checked_ms; /* crl_watch.c: its last look at the CRL's nextUpdate */
	uint8_t crl_said;        /* ... and what it told of it: CRL_SAID_* of crl_watch.c */
	struct el_d_metrics *metrics; /* NULL: no [node] metrics address */
	struct el_d_client *clients; /* by el_net_slot(); allocated at start */
	struct el_d_attach attach[EL_SESSIONS_MAX]; /* by session slot of the lock table */
	struct el_d_seen seen[EL_SESSIONS_MAX];     /* the same */
	/* the sessions the batch being applied ends, once per entry that ends
	 * one (more than the table holds only with closes retried in one
	 * batch); their events are delivered with the next batch's, before
	 * this list is refilled */
	struct el_d_ending ending[EL_SESSIONS_MAX];
	uint32_t n_ending;
	uint32_t ending_cursor; /* where the last lookup found one */
	uint64_t queue_full_ms;   /* last "send queue full" line (serve.c) */
	uint64_t queue_full_held; /* such closes since, not logged */
	uint64_t table_full_ms;   /* last "lock table full" line (serve.c) */
	uint64_t table_full_held; /* such refusals since, not logged */
	uint64_t table_full_total; /* commands the core refused EL_EFULL */
	uint64_t peer_frames_refused;
	uint64_t leader_links_lost; /* elections moved up (el_d_peer_link_lost) */
	uint64_t client_frames_refused;
	struct el_d_quota quota;
	struct el_d_owners owners; /* untouched pages cost nothing (main's static struct) */
	/* STATUS's lock table counts, counted at usage_applied, at usage_ms (serve.c) */
	struct el_lock_usage usage;
	uint64_t usage_applied, usage_ms;
	bool usage_valid;
	/* scratch */
	struct el_cw_msg req, rep;
	struct el_lock_query q;
	struct el_entry entries[EL_MSG_ENTRIES_MAX];
	uint8_t buf[EL_WIRE_MSG_MAX > EL_CW_MSG_MAX ? EL_WIRE_MSG_MAX : EL_CW_MSG_MAX];
};

/* daemon.c */
int el_d_open(struct el_daemon *d, bool bootstrap, bool join);
/* Stop for good, as on this node's removal: why goes to data_dir's removed
 * file, and the next start on this data is refused, saying how to come back. */
void el_d_retire(struct el_daemon *d, const char *why);
/* After stopping on a newer incarnation: the other causes (an incarnation
 * file lost, damaged or replaced) and how to mend them without a wipe. */
void el_d_retire_advice(const struct el_daemon *d);

/* incarnation.c: without a file, data (has_state) is of generation 0 and
 * no data has none yet; EL_EINVAL (logged) when the file is damaged. */
int el_d_incarnation_load(const char *dir, bool has_state, struct el_d_incarnation *out);
int el_d_incarnation_save(const char *dir, const struct el_d_incarnation *inc);
/* dir_file.c: path (in dir) replaced whole by n bytes of text, synced with
 * its directory; EL_EIO (logged) when it cannot be. */
int el_d_replace_file(const char *dir, const char *path, const void *text, size_t n);
/* True when dir is a --join node's that has not heard from the cluster yet. */
bool el_d_incarnation_joining(const char *dir);
/* A bootstrap's: generation 0, the digest of its voters' ids. */
void el_d_incarnation_of_bootstrap(const struct el_conf *c, struct el_d_incarnation *out);
/* --force-new-cluster's: the next generation, a random nonce. */
int el_d_incarnation_next(const struct el_d_incarnation *old, struct el_d_incarnation *out);
/* restore_sessions.c: what a restore ended in the backup's table: its
 * sessions, the names they held (now in lock-delay), that delay (0: none). */
struct el_d_restore_ended {
	uint32_t sessions, locks, delay_ms;
};
/* Every session of t closed and each name one held put in lock-delay for
 * EL_LOCK_DELAY_MAX_MS, by the core's commands at the indexes
 * after t's; EL_OK, or the first command's error (t then half done). */
int el_d_restore_end_sessions(struct el_lock_table *t, struct el_d_restore_ended *out);
/* A restore's: generation 1, the digests of the backup and of its
 * --token-floor, 0 for none (the nonce's high half), and of the voters it
 * gives the node (low half). */
void el_d_incarnation_of_backup(const uint8_t *data, uint32_t len, const struct el_conf *voters,
				uint64_t floor, struct el_d_incarnation *out);
/* True when a hello's generation and nonce are of a node restored from the
 * same backup as ours but with other voters: two clusters. */
bool el_d_incarnation_restored_apart(const struct el_d_incarnation *ours, uint32_t generation,
				     uint64_t nonce);
struct el_peer_hello;
enum el_d_inc_verdict el_d_incarnation_judge(const struct el_d_incarnation *ours,
					     const struct el_peer_hello *h);
/* "GEN.NONCE", or that there is none yet. */
void el_d_incarnation_name(const struct el_d_incarnation *inc, char *out, size_t cap);
/* True when dir holds Raft state (a snapshot or WAL segments). */
bool el_d_has_state(const char *dir);
/* owner.c: whose data dir holds (DATA_DIR/owner). EL_OK when dir may be
 * node id's: its file names id, or it has none, or dir holds no state;
 * otherwise EL_EINVAL with what is wrong in why[cap] and what to do in
 * fix[cap] (another node's data, a damaged or unreadable file), said by
 * the caller: the start logs them, --check-config prints them. */
int el_d_owner_check(const char *dir, el_id_t id, bool has_state, char *why, char *fix,
		     size_t cap);
/* The start's and restore's: el_d_owner_check, its refusal logged; with
 * record (the directory's lock held, before any state is written), id is
 * written into the file unless it names id already. */
int el_d_owner_guard(const char *dir, el_id_t id, bool has_state, bool record);
/* The voters of a new cluster (--bootstrap, restore): cfg's [peers], this
 * node among them; EL_EINVAL (logged, naming what) otherwise. */
int el_d_conf_of(const struct el_dcfg *cfg, struct el_conf *c, const char *what);
/* This node's identity from cfg's [tls] files (CA, certificate and key, CRL),
 * checked as the start checks it: readable, matching, in date, not revoked,
 * OU=node and CN=node<id>. EL_OK, or an error with why ("[tls] ...")
 * in why[cap], for the caller to say: the daemon logs it, --check-config
 * prints it as its other findings. reload (SIGHUP): this node's certificate
 * revoked by crl_file is taken (el_ident_reload_crl), so the new CRL still
 * applies to everyone else. */
int el_d_load_ident(const struct el_dcfg *cfg, struct el_ident **out, bool reload, char *why,
		    size_t cap);
/* restore.c: seed cfg's empty data directory from a backup (edgelock
 * snapshot save) as the state of a new cluster of cfg's [peers], its index
 * raised to token_floor when that is higher (0: none), so every token
 * granted from then on is above it; EL_OK or an error already logged. */
int el_d_restore(const struct el_dcfg *cfg, const char *file, uint64_t token_floor);
/* restore_probe.c: EL_OK when no other node of cfg's [peers] accepts a TCP
 * connection at its address within 1.5 s; else EL_EBUSY, each one that does
 * and what to do logged (a restore is for a whole cluster that is down). */
int el_d_restore_peers_down(const struct el_dcfg *cfg);
/* Remove what a failed restore or --bootstrap (who, for the log) wrote into
 * dir, and dir itself when it created it: the count removed, -1 when
 * something could not be (logged). */
int el_d_unseed(const char *dir, bool created, const char *who);
/* A --bootstrap whose first batch failed with rc: el_d_unseed, and the
 * line saying nothing was kept and what to do. */
void el_d_unbootstrap(const struct el_dcfg *cfg, int rc);
/* Runs until *stop_signal; each time *reload_signal is set (SIGHUP), clears
 * it and reloads the [tls] files (el_d_reload). */
int el_d_run(struct el_daemon *d, const volatile int *stop_signal,
	     volatile int *reload_signal);
/* Re-read the [tls] CA, certificate + key and CRL files for the identity
 * proofs of new connections; on any error keep the old ones (logged). */
void el_d_reload(struct el_daemon *d);
void el_d_close(struct el_daemon *d);

/* serve.c */
void el_d_client_frame(struct el_daemon *d, uint64_t conn, const uint8_t *buf, uint32_t len);
void el_d_client_bad(struct el_daemon *d, uint64_t conn);
void el_d_client_closed(struct el_daemon *d, uint64_t conn);
void el_d_reply(struct el_daemon *d, const struct el_node_reply *r);
void el_d_event(struct el_daemon *d, const struct el_lock_event *e);
void el_d_gap(struct el_daemon *d);
/* Does this node lead (and so push events)? Having just stopped leading,
 * it sends each attached session a GAP and detaches them all. */
bool el_d_events_leader(struct el_daemon *d);
/* Before a batch's committed entries are applied: learn from them what
 * seen.c checks, and which attached sessions they end (d->ending). */
void el_d_entries_ahead(struct el_daemon *d, const struct el_ready *rd);
void el_d_expiring(struct el_daemon *d);
void el_d_send(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *m, bool close_after);
/* The voter a leader hands over to (TRANSFER naming none, SIGTERM): one
 * with a live link that has answered lately; 0 when there is none. */
el_id_t el_d_transfer_target(struct el_daemon *d);
/* A request type's name as docs/protocol.md spells it ("acquire"), "?" if none. */
const char *el_d_request_name(uint32_t type);
/* The answer to a watched membership change (admin_wait.c), logged. */
void el_d_admin_answer(struct el_daemon *d, const struct el_d_admin_wait *w, int rc);

/* diag.c: q, refused, asks for a change already made, by the entry at
 * *index of *term (applied, or the latest configuration's, pending). */
bool el_d_change_made(const struct el_daemon *d, const struct el_cw_msg *q, uint64_t *index,
		      uint64_t *term);

/* admin_wait.c */
/* Watch q's change, appended at index in the current term (when every
 * slot is taken, the oldest watch is answered EL_ETIMEDOUT for it). */
void el_d_admin_wait_add(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q,
			 uint64_t index);
/* Watch an entry appended earlier (at index, in term), maybe by another
 * leader: answered like a change this node proposed. */
void el_d_admin_wait_on(struct el_daemon *d, uint64_t conn, const struct el_cw_msg *q,
			uint64_t index, uint64_t term);
/* Answer every watched change whose outcome is known or whose time ran out. */
void el_d_admin_wait_turn(struct el_daemon *d);

/* seen.c: a session's last request, so that a retry matches what it retries */
void el_d_seen_note(struct el_daemon *d, const struct el_lock_cmd *c);
/* Why c may not be proposed (a seq too far ahead, or the seq of another
 * request), or NULL. */
const char *el_d_seen_refusal(struct el_daemon *d, const struct el_lock_cmd *c);

/* auth.c */
int el_d_clients_open(struct el_daemon *d);
struct el_d_client *el_d_client_of(struct el_daemon *d, uint64_t conn);
void el_d_client_opened(struct el_daemon *d, uint64_t conn);
void el_d_client_gone(struct el_daemon *d, uint64_t conn);
/* Close the client connections that have neither proven who they are nor
 * sent a request within PROOF_MS (looks at a batch of slots per turn). */
void el_d_clients_unproven(struct el_daemon *d);
void el_d_client_prove(struct el_daemon *d, struct el_d_client *cl, const uint8_t *buf,
		       uint32_t len);
bool el_d_client_anonymous(struct el_daemon *d, struct el_d_client *cl);
/* The first frame is of another protocol version: ERROR EVERSION (id: the
 * request's, 0 if none), closed. */
void el_d_client_wrong_version(struct el_daemon *d, struct el_d_client *cl, uint64_t id);
int el_d_client_stamp(const struct el_d_client *cl, struct el_lock_cmd *c);
/* The length of a session's stamped client field as shown (QUERY holders,
 * logs): "IDENTITY LABEL", without the space of an empty label. */
uint32_t el_d_client_shown(const char *field, uint32_t len);
bool el_d_client_owns(const struct el_daemon *d, const struct el_d_client *cl, uint64_t session);
bool el_d_client_may(const struct el_daemon *d, const struct el_d_client *cl, enum el_acl_op op,
		     const char *name, size_t name_len);
int el_d_authorize(struct el_daemon *d, const struct el_d_client *cl, const struct el_cw_msg *q);
int el_d_session_quota(struct el_daemon *d, const struct el_d_client *cl);
/* cl's identity: the certificate's CN, "" for an anonymous client. */
const char *el_d_identity(const struct el_d_client *cl);

/* limits.c: [limits] that bound what one identity holds in the table.
 * A refusal by [limits] key (= limit) of identity who ("" anonymous): how
 * many refusals a line about it is to tell now (this one and those held
 * back), or 0 when it is held back; r->who names the identity. */
uint64_t el_d_refusal(struct el_daemon *d, struct el_d_refusals *r, const char *who,
		      const char *key, uint32_t limit);
/* Once per turn: tell the refusals held back once their second is over,
 * or at once when the node is stopping. */
void el_d_limits_turn(struct el_daemon *d);
/* auth.c: the same for the [acl] refusals held back (a minute each). */
/* serve.c, peers.c: the lines held back by their rate limits (a full send
 * queue, a full lock table, peer and [acl] refusals), told once their
 * window is over instead of with the next such event, which may never
 * come. */
void el_d_serve_turn(struct el_daemon *d);
void el_d_peers_turn(struct el_daemon *d);

/* Whether a refusal of kind, from node (0: unknown), for why is logged now
 * (the line says *held more alike were held back since the last one), or
 * only counted: one line a minute per kind, node and reason. */
bool el_d_refusal_logs(struct el_daemon *d, enum el_d_refused kind, el_id_t node,
		       const char *why, uint64_t *held);

/* members add of node with peer and client (len bytes each): when node's
 * latest hello (within the last few seconds, refused as it is not a member
 * yet) announced them the other way round, why says so (what it announced,
 * the add to run) and true. */
bool el_d_joiner_swapped(const struct el_daemon *d, el_id_t node, const char *peer,
			 uint32_t peer_len, const char *client, uint32_t client_len, char *why,
			 size_t cap);
/* EL_EINVAL (logged) for an OPEN_SESSION asking a lease over
 * max_session_ttl_ms; else EL_OK. */
int el_d_ttl_check(struct el_daemon *d, const struct el_d_client *cl, const struct el_cw_msg *q);
/* Add session slot s's claims (held or waited for) and watches to n. */
void el_d_session_uses(const struct el_lock_table *t, el_slot_t s, uint32_t n[EL_D_USES]);
/* For ACQUIRE, CAMPAIGN and WATCH on the leader: EL_EFULL (logged) when cl's
 * identity already holds, waits for or has requested claims_per_client
 * claims (watches_per_client watches), else EL_OK and *charge to pass to
 * el_d_charge once the request is in flight. Other requests: EL_OK. */
int el_d_use_quota(struct el_daemon *d, const struct el_d_client *cl, const struct el_cw_msg *q,
		   uint32_t *charge);
/* p is in flight: count it for its identity until el_d_uncharge (its reply). */
void el_d_charge(struct el_daemon *d, struct el_d_pending *p, uint32_t charge);
void el_d_uncharge(struct el_daemon *d, struct el_d_pending *p);

/* diag.c: the lines that say why (docs/operations.md, "Watching it").
 * After each role line: why a follower campaigns, why a leader stepped
 * down. After each batch is persisted (t0_ns: before the persist): a slow
 * persist, the session expiries this leader proposed, the membership
 * changes applied (a removed node's dial retired). */
void el_d_diag_role(struct el_daemon *d);
void el_d_diag_batch(struct el_daemon *d, const struct el_node_ready *rd, uint64_t t0_ns);
/* el_node_step refused m with rc: said at error when m is a leader's
 * append that contradicts this node's committed entries (a member lost
 * state). */
/* A follower's reply hinting below what it acknowledged: it lost state. */
void el_d_diag_peer_msg(struct el_daemon *d, const struct el_msg *m);
/* A vote request to a node that knows no configuration: drop it. */
bool el_d_diag_vote_refused(struct el_daemon *d, const struct el_msg *m);
void el_d_diag_refused(struct el_daemon *d, const struct el_msg *m, int rc);
/* Node id is out of the configuration for good: stop dialing it (a link up
 * is kept until it closes; a leader with none keeps dialing it for the
 * removal notice's window first). */
void el_d_peer_retire(struct el_daemon *d, el_id_t id);
/* crl_watch.c, each loop turn: at most once a minute, a warning once when
 * the loaded CRL has less than a day left before its nextUpdate, an error
 * once it has passed (every new proof is then refused); a SIGHUP that
 * loads a CRL arms both again (d->crl_said = 0). */
void el_d_crl_turn(struct el_daemon *d);

/* notify.c (systemd: READY, STATUS, WATCHDOG, STOPPING) */
void el_d_notify_init(struct el_daemon *d);
void el_d_notify_turn(struct el_daemon *d);
void el_d_notify_stopping(struct el_daemon *d);

/* peers.c */
void el_d_peer_opened(struct el_daemon *d, uint64_t conn);
void el_d_peer_frame(struct el_daemon *d, uint64_t conn, const uint8_t *buf, uint32_t len);
void el_d_peer_closed(struct el_daemon *d, uint64_t conn);
void el_d_peers_unproven(struct el_daemon *d);
void el_d_peer_link_lost(struct el_daemon *d, el_id_t peer);
void el_d_peer_dialed(struct el_daemon *d, uint64_t conn, el_id_t peer);
void el_d_peer_out_frame(struct el_daemon *d, uint64_t conn, el_id_t peer, const uint8_t *buf,
			 uint32_t len);
void el_d_peer_send(struct el_daemon *d, const struct el_msg *m);
/* Whether node id is a member, current or previous, or in [peers]: a peer
 * hello from any other node is refused. */
bool el_d_peer_known(const struct el_daemon *d, el_id_t id);
/* The configuration before the latest one in the log (or the snapshot's). */
void el_d_previous_conf(const struct el_raft *r, struct el_conf *out);
const struct el_d_book *el_d_book_find(const struct el_daemon *d, el_id_t id);
/* Whether this node, as leader, has heard nothing from member id for an
 * election timeout, its link up or not (a cut-off or stopped node, as
 * CheckQuorum sees it). False on a follower, which has no such view. */
bool el_d_peer_silent(const struct el_daemon *d, el_id_t id);
/* Whether this node has had no Raft message from id for window ms,
 * counting from start at the earliest. */
bool el_d_heard_none(const struct el_daemon *d, el_id_t id, uint64_t start, uint64_t window);
void el_d_book_set(struct el_daemon *d, el_id_t id, const char *peer, uint32_t peer_len,
		   const char *client, uint32_t client_len);
int el_d_hello(const struct el_daemon *d, uint8_t *buf, uint32_t cap);

#endif /* EL_DAEMON_H */
