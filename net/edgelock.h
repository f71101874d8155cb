/*
 * edgelock.h - libedgelock, the C client of an edgelock cluster.
 *
 *   el_client *c;
 *   struct el_client_options o = { .endpoints = "tls+tcp://10.0.0.1:7200,...",
 *                                  .ca_file = "ca.pem", .cert_key_file = "me.pem" };
 *   el_client_open(&c, &o);
 *   el_session *s;
 *   el_session_open(c, 10000, &s);          // a 10 s lease, renewed in the background
 *   uint64_t token;
 *   if (el_lock(s, "fleet/leader", false, 5000, &token) == EL_OK) {
 *       ...work, passing token to every resource it touches...
 *       el_unlock(s, "fleet/leader", token);
 *   }
 *   el_session_close(s);
 *   el_client_close(c);
 *
 * The library finds the leader among the endpoints and follows it (redirects,
 * reconnects), renews each session's lease with keepalives, and retries a
 * request after a timeout, a reconnect or a leader change with the same
 * (session, seq), so every request acts at most once (docs/protocol.md).
 *
 * Client-side safety (Chubby's "jeopardy"): each session keeps its own lease
 * deadline, counted from when the last acknowledged keepalive was SENT, minus
 * a drift margin (1% of the TTL + 50 ms, for clocks running at different
 * rates). The cluster can give a lock away only after the leader's own
 * deadline, which starts later (when it applied that keepalive), so:
 *   EL_LEASE_OK        renewals succeed;
 *   EL_LEASE_IN_DOUBT  the last renewal failed: the lock may be lost soon;
 *   EL_LEASE_LOST      the local deadline passed: stop using every lock of the
 *                      session now; the cluster may hand them out at any time.
 * Renewals run on the library's own threads: one, and up to 6 while
 * renewals come due faster than the cluster answers (each is a command the
 * cluster syncs to disk; those in flight together share its syncs).
 * A renewal is tried from TTL/3 on and given TTL/3 to succeed, so IN_DOUBT
 * lasts from about 2/3 of the TTL to LOST; a renewal that cannot end in
 * time (every endpoint stopped, each dial given its share as above) may
 * leave the state OK until it turns LOST: IN_DOUBT is a warning that may
 * come, never one to wait for.
 * The deadline is read from CLOCK_BOOTTIME, which keeps running while the
 * process is stopped (SIGSTOP) or the machine sleeps, so a process that
 * resumes sees LOST before it could act on a lock it no longer holds.
 *
 * Thread-safe: any call from any thread, one call at a time per session:
 * el_lock, el_semaphore_acquire, el_unlock, el_campaign, el_resign,
 * el_watch or el_session_close on a session another thread is in a call of
 * returns EL_EBUSY at once (el_client_last_error: "one call at a time per
 * session"), sending nothing; use a session per thread. So does any of
 * those calls made while el_session_close of the session is under way
 * (until it returns: afterwards the session is freed). el_next_event,
 * el_session_state and el_session_id may run alongside; an el_next_event
 * waiting on a session whose close begins returns EL_ECANCELED, and the
 * close frees the session only once it has. Keepalives are the library's
 * own and go on regardless. A client has 64 requests in flight at
 * most, 8 of them kept for keepalives and closes: past 56 requests at once,
 * a call gets EL_EFULL ("too many requests in flight"), and the sessions are
 * still renewed; a call whose request already left unanswered (it may act)
 * waits for a slot instead, as for any unanswered request (see el_lock). A request is in flight until its answer comes: an el_lock
 * or el_campaign queued behind a holder holds no slot while it waits for
 * its grant, so any number of calls may wait at once. Blocking calls take
 * a timeout. A client holds at most 64 open sessions (el_session_open past
 * that: EL_EFULL, "more than 64 sessions on one client"); a program that
 * needs more opens another el_client (the cluster's [limits]
 * sessions_per_client bounds the sessions of one identity across them).
 * Errors are negative EL_E* codes (el_error.h, el_strerror()); after one,
 * el_client_last_error() says what happened in words. A call whose
 * deadline passes with no leader found (none reachable, or no quorum to
 * elect one) returns EL_ETIMEDOUT, its message "no leader reachable within
 * N ms (tried URL: why; ...)" naming every endpoint tried with how it last
 * failed, on one line; the library follows redirects itself and never
 * returns EL_ENOTLEADER. Each dial (TCP, TLS, the identity proof) gets a
 * share of what is left of the call, split over the endpoints not yet
 * tried (at least 0.5 s, at most 2 s): a node that accepts connections and
 * never answers (stopped, wedged) cannot spend a whole timeout_ms alone.
 * An endpoint whose node closes the connection right after TLS and the
 * identity proof, before any answer, twice in one call (a node's peer port
 * does, for a client's certificate) is given up for that call, its why
 * "closed by the node right after the TLS handshake (is this its peer
 * port? clients use client_addr)"; when every endpoint is, the call
 * returns EL_ETIMEDOUT at once, not at its deadline. A reply this library
 * cannot decode (a daemon of another client protocol version) ends the
 * call at once with EL_EVERSION or EL_EDECODE, saying so, not retried:
 * the request reached the leader and may have acted (el_query to see).
 *
 * Names are 1 to 64 bytes of UTF-8 text (the wire carries them as CBOR
 * text); another is EL_EINVAL, saying so, with nothing sent. Tokens start
 * at 1: el_unlock, el_resign and el_proclaim with token 0 are EL_EINVAL.
 * A NULL handle, name or result pointer is EL_EINVAL, with nothing sent;
 * el_client_close(NULL) and el_session_close(NULL) do nothing,
 * el_session_state(NULL) is LOST. A session is freed by el_session_close
 * (even when that returns an error other than EL_EBUSY) and by
 * el_client_close: any call on it afterwards, a second close included, is
 * a use after free, as for a closed client.
 */
#ifndef EDGELOCK_H
#define EDGELOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "el_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct el_client el_client;
typedef struct el_session el_session;

struct el_client_options {
	const char *endpoints;     /* comma-separated "tls+tcp://HOST:PORT" (an IPv6
				    * HOST in brackets: tls+tcp://[::1]:9111), at most 16;
				    * el_client_open refuses a bad one, and an empty
				    * entry (",," or a comma at an end: a variable that
				    * expanded to nothing?), with EL_EINVAL */
	const char *ca_file;       /* the cluster CA (PEM) */
	const char *cert_key_file; /* this client's certificate and key (PEM); NULL: none.
				    * Its mode is not checked: keep it 0600 (the
				    * edgelock CLI warns when others may read it) */
	const char *name;          /* a label shown to others after this client's
				    * identity, as the holder "IDENTITY NAME"; the
				    * cluster keeps the first 32 bytes of that pair
				    * (EL_CLIENT_NAME_MAX; 8 on a mixed cluster),
				    * cutting the label, never the identity: a CN
				    * longer than 31 bytes (7) cannot open a session,
				    * EL_EINVAL. UTF-8 text, or el_client_open
				    * refuses it (EL_EINVAL); this library sends its
				    * first 32 bytes at most, cut before a character
				    * that does not fit whole. NULL: none */
	uint32_t timeout_ms;       /* a request's overall bound; 0: 5000 */
};
/* A certificate this library can tell is bad by itself (expired or not yet
 * valid, not signed by ca_file, a key that does not match) is refused by
 * el_client_open: EL_EINVAL, el_client_last_error saying why. One the
 * cluster refuses (none where the daemons require one, a node's, one its CRL
 * revokes) fails a call at once with EL_EPERM, saying so, rather than after
 * timeout_ms: every endpoint would refuse it alike. */

int el_client_open(el_client **out, const struct el_client_options *o);
/* Close the client. Sessions still open are closed first (as by
 * el_session_close, best-effort, within one timeout_ms in all) and freed:
 * el_client_close invalidates every session of c, so el_session_close or
 * any other call on one of them afterwards is a use after free. No call
 * on c or its sessions may be running. */
void el_client_close(el_client *c);
/* What the last failed call of this thread ran into, in words ("no error"
 * before any). The message is kept per thread, not per client: c is not
 * used and may be NULL (after a failed el_client_open, say), and a call on
 * another client in between replaces it. */
const char *el_client_last_error(el_client *c);

/* ---- Sessions ----------------------------------------------------------- */

enum el_lease_state {
	EL_LEASE_OK = 0,
	EL_LEASE_IN_DOUBT = 1,
	EL_LEASE_LOST = 2,
};

/* Open a session with lease ttl_ms (renewed every ttl/3 in the background).
 * The lease counts from when the request was first sent: when the reply
 * comes after it ran out (slow or silent endpoints tried first), the
 * session is closed on the cluster best-effort and the call returns
 * EL_ETIMEDOUT with *out NULL, never a session already LOST. ttl_ms is at
 * least 200; the cluster refuses more than its [limits] max_session_ttl_ms
 * (10 minutes unless configured otherwise) with EL_EINVAL. The library
 * does not check that bound: it is the daemon's setting. */
int el_session_open(el_client *c, uint32_t ttl_ms, el_session **out);
/* Close the session (its locks are released, no lock-delay) and free it.
 * The CLOSE is sent within the client's timeout_ms; also when the session
 * is LOST here (the cluster may still hold it a little longer), then tried
 * for at most 1 s, since the cluster expires it soon anyway. A renewal of
 * the session in flight is given up (at its next try, within 1.5 s) and
 * counts against that bound. EL_OK also when the cluster had already
 * expired it. */
int el_session_close(el_session *s);
/* The lease as this client sees it; *left_ms (may be NULL): time to the
 * local deadline (0 when lost). LOST is final for the session: from then
 * on, calls that would take or keep something (el_lock,
 * el_semaphore_acquire, el_campaign, el_watch) return EL_EEXPIRED without
 * sending anything; el_unlock, el_resign and el_session_close are still
 * sent, best-effort. */
enum el_lease_state el_session_state(el_session *s, uint64_t *left_ms);
uint64_t el_session_id(const el_session *s);
/* Lock-delay for the locks this session takes from now on: after the session
 * expires (not after a release), the cluster keeps its locks from anyone for
 * delay_ms (Chubby's lock-delay; capped at 60 s). Default 0. */
void el_session_set_lock_delay(el_session *s, uint32_t delay_ms);

/* ---- Locks and elections ------------------------------------------------ */

#define EL_WAIT_NONE 0u               /* try once */
#define EL_WAIT_INFINITE 0xFFFFFFFFu  /* no bound */

/* Take name exclusively (shared: with other shared holders), waiting up to
 * wait_ms; *token is the fencing token. EL_EBUSY: held (try), or another
 * call of this session is in progress (see the top); EL_ETIMEDOUT:
 * not granted within wait_ms as the cluster counts it, or no leader found
 * before the request could reach one (see the top: the message says "no
 * leader reachable"; within timeout_ms). A request that did leave but was
 * never answered (a stalled leader, a cut, a failover, the whole cluster
 * restarting) may act all the same, queued or granted: the call then asks
 * again with the same seq (which acts at most once) until the cluster
 * says how it ended, however long that takes, or until the session's
 * lease runs out here (EL_EEXPIRED; the cluster then drops the session's
 * locks and waits). So it may return after wait_ms + timeout_ms or later,
 * but never with a grant nobody knows of left held. When the seq of a
 * queued or unanswered request can no longer be asked about (a request
 * numbered in the session outside this library, through
 * el_client_request, acted since), the lock's holders and waiters tell
 * how it ended (a QUERY of name each second; without the ACL's observe on
 * name: EL_EPERM, the outcome unknown): the session holds it, EL_OK; it
 * neither holds nor waits, EL_ETIMEDOUT ("it will never be granted");
 * EL_EDELAYED: in its lock-delay (try);
 * EL_EEXPIRED: the session is gone, or its lease ran out (as this client
 * sees it) before the call (then nothing was sent) or before the grant
 * reached the caller: a process stopped while it waited may not act on a
 * grant the cluster could have given away since (*token is that grant's,
 * for the record only). EL_EINVAL from the cluster: this session holds name
 * in the other mode. On every other error *token is 0. */
int el_lock(el_session *s, const char *name, bool shared, uint32_t wait_ms, uint64_t *token);
/* el_unlock gives one count of the hold of token back (the lock is free
 * once every count is). A release that no node answers within timeout_ms
 * (or before the lease runs out here, if sooner) may have acted or not, so
 * it is asked again (the same seq: it acts at most once) until the cluster
 * answers, or until the session's lease ran out here: EL_EEXPIRED, and the
 * cluster gives the session's holds up as it expires it (after its
 * lock-delay). So it takes at most what is left of the lease; it never
 * returns EL_ETIMEDOUT with the hold left in doubt. The same
 * for el_resign. Once the lease is LOST here, the release is still sent
 * (the cluster may hold the lock a while longer, and a release frees it
 * now, without its lock-delay), tried for up to timeout_ms: EL_OK when the
 * cluster answered, EL_EEXPIRED when it did not or had expired the
 * session. EL_ENOTFOUND: this session does not hold name; EL_ESTALE:
 * token is not the grant this session holds name by (an older grant's, or
 * one never handed out). */
int el_unlock(el_session *s, const char *name, uint64_t token);

/* Semaphores (like `consul lock -n`): take one of `permits` permits of name
 * (1 <= permits <= EL_SEM_LIMIT_MAX of el_config.h, 8 by default), at most
 * permits sessions holding it at once, waiting up to wait_ms, granted in
 * FIFO order; *token is this permit's own fencing token (every grant's is
 * larger than the one before). The first acquire sets the limit; while the
 * semaphore is in use, one naming another limit gets EL_ELIMIT (and
 * el_client_last_error() names both limits), and one on a lock, or
 * el_lock() on a semaphore, EL_EKIND. A holder asking again gets the same
 * token (counted, as for a lock). el_unlock(s, name, token) gives the
 * permit back; an expired session's permit stays in lock-delay. */
int el_semaphore_acquire(el_session *s, const char *name, uint32_t permits, uint32_t wait_ms,
			 uint64_t *token);

/* Elections: campaign = take the election's lock and publish value.
 * EL_EINVAL: this session holds name as a plain lock (el_lock), which has
 * no value to publish: el_unlock it first. */
int el_campaign(el_session *s, const char *name, const void *value, uint32_t len,
		uint32_t wait_ms, uint64_t *token);
/* el_resign gives the hold of token up whole, however often this session
 * took it: the next campaigner leads at once. On a plain lock or a
 * semaphore's permit it does the same (el_unlock as many times as the lock
 * was taken), like etcd's Resign, which deletes the key whatever it is. */
int el_resign(el_session *s, const char *name, uint64_t token);
/* The leader (the holder of token) publishes a new value (len <= 64) to the
 * election, as etcd's Proclaim: watchers get EL_EVENT_VALUE_CHANGED.
 * EL_ENOTFOUND: this session does not lead name; EL_ESTALE: token is not
 * its leadership's; EL_EINVAL: name is a plain lock, not an election.
 * Campaigning again while leading returns the same token and keeps the old
 * value: el_proclaim changes it. Not sent once the lease ran out here
 * (EL_EEXPIRED). */
int el_proclaim(el_session *s, const char *name, uint64_t token, const void *value, uint32_t len);

/* ---- Watches and events ------------------------------------------------- */

enum el_event_kind {
	EL_EVENT_GRANTED = 1,        /* a queued lock or campaign was granted */
	EL_EVENT_WAIT_TIMEOUT = 2,
	EL_EVENT_CANCELED = 3,
	EL_EVENT_HOLDER_CHANGED = 4, /* a watched name: its holders changed;
				      * token: the newest holder's (0: free),
				      * as el_lock_info.token */
	EL_EVENT_VALUE_CHANGED = 5,  /* a watched election: its leader proclaimed a
				      * new value (a new leader and its value come
				      * as HOLDER_CHANGED: el_query for the value) */
	EL_EVENT_GAP = 6,            /* events were lost: query what matters again */
	EL_EVENT_SESSION_EXPIRING = 7,
};

struct el_event {
	int kind;
	uint64_t token;
	char name[65];
};

/* Ask for HOLDER_CHANGED / VALUE_CHANGED events on name; el_unwatch stops
 * them. A session's watches end with it. */
int el_watch(el_session *s, const char *name);
int el_unwatch(el_session *s, const char *name);
/* The next event of s's connection since the last call (or since the
 * session opened), waiting up to timeout_ms: EL_OK, or EL_ETIMEDOUT, or
 * EL_ECANCELED once el_session_close of s has begun. After a reconnect (the
 * leader's connection lost, or one a session's request went unanswered on,
 * since the leader may have sent the session's events there: finding the
 * new leader through followers is the same reconnect; noticed within a
 * second) the library reports one EL_EVENT_GAP. */
int el_next_event(el_session *s, struct el_event *ev, uint32_t timeout_ms);

/* A file descriptor that polls readable whenever an event has arrived since
 * it was last drained (read 8 bytes from it to drain, then call
 * el_next_event with timeout 0 until EL_ETIMEDOUT): for poll/epoll loops. */
int el_client_event_fd(el_client *c);

/* ---- Reads -------------------------------------------------------------- */

struct el_lock_info {
	bool held;
	bool shared;
	bool delayed;           /* in its lock-delay after an expiry */
	uint32_t n_holders;
	uint32_t n_waiters;
	uint64_t token;         /* the newest holder's token; a lock in its
				 * lock-delay: the expired holder's; 0: none */
	uint64_t holder_session;
	char holder[33];        /* the holder's client as the cluster stores it:
				 * "IDENTITY NAME" (its certificate's name, then
				 * el_client_options.name; IDENTITY alone when
				 * name is NULL or ""), at most 32 bytes */
	uint8_t value[64];      /* election value */
	uint32_t value_len;
	uint32_t permits;       /* a semaphore's limit N (n_holders of N held); 0: a lock */
};

/* Linearizable: the state as of a moment after the call began. */
int el_query(el_client *c, const char *name, struct el_lock_info *out);

/* ---- Low level (the CLI's) ---------------------------------------------- */

struct el_cw_msg;
/* Send one request (docs/protocol.md) to the leader, following redirects and
 * retrying with the same id; *reply gets the answer. Returns EL_OK when a
 * reply came (its err field tells how the request went) or an error
 * (EL_ETIMEDOUT: no leader answered within timeout_ms, see the top).
 * A request numbered (seq) in a session of el_session_open makes every
 * older seq of it stale: the session's next calls get EL_ESTALE, and a
 * call waiting in el_lock or el_campaign learns its end by QUERY. */
int el_client_request(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply);
/* The same to one endpoint only, no redirect (for per-node status);
 * EL_ETIMEDOUT when it cannot be reached or does not answer in timeout_ms. */
int el_client_request_at(el_client *c, const char *endpoint, struct el_cw_msg *req,
			 struct el_cw_msg *reply);
/* The endpoints, as given. */
unsigned el_client_endpoints(const el_client *c, const char **list, unsigned cap);

#ifdef __cplusplus
}
#endif

#endif /* EDGELOCK_H */
