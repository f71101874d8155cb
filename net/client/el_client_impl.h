/*
 * el_client_impl.h - libedgelock's private state, shared by client.c (the
 * connection, requests, events) and client_session.c (sessions, leases,
 * locks). Not installed.
 */
#ifndef EL_CLIENT_IMPL_H
#define EL_CLIENT_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "el_ident.h"
#include "el_link.h"

#include "edgelock.h"
#include "el_client_wire.h"

#define EL_CLIENT_ENDPOINTS_MAX 16
#define EL_CLIENT_PENDING_MAX 64
/* Of those, the ones only keepalives and session closes may take: calls
 * blocked in long waits must not starve the renewals that keep every
 * session alive (the server keeps the same reserve, serve.c). */
#define EL_CLIENT_PENDING_URGENT 8
#define EL_CLIENT_EVENTS_MAX 64
#define EL_CLIENT_SESSIONS_MAX 64
/* Renewals in flight at once (client_session.c, "Renewing"): each is a
 * command the cluster syncs before it answers, so one at a time made a
 * client's renewals cost a sync each (64 sessions on an SD card's 40 ms
 * syncs outlasted a 2 s TTL); those in flight together share the leader's
 * syncs. Fewer than EL_CLIENT_PENDING_URGENT, so session closes always
 * find a slot beside them. */
#define EL_CLIENT_KEEPERS_MAX 6
_Static_assert(EL_CLIENT_KEEPERS_MAX < EL_CLIENT_PENDING_URGENT, "room for a close");

/*
 * Who reads a connection (client.c, "Reading"): one thread at a time holds
 * the read role. A request waiting for its reply takes it when it is free,
 * so its reply wakes it and no other thread; the connection's reader thread
 * takes it only when no request has run for READER_IDLE_MS (events arriving
 * between requests), and a request kicks it off through kick_fd. The frame being read lives here, so a reader can stop
 * at its deadline mid-frame and the next one goes on.
 */
struct el_conn {
	el_client *client;
	struct el_link link;
	pthread_t reader;
	int kick_fd;       /* eventfd: asks the reader thread to step aside */
	pthread_cond_t reader_cv; /* the reader thread waits here (conn_close wakes it) */
	pthread_mutex_t send_mu;  /* one frame at a time on the stream (conn_send) */
	bool dead;         /* under c->mu: the stream ended (a reader saw it) */
	bool stop;         /* under c->mu: conn_close: the reader thread ends */
	bool reading;      /* under c->mu: a thread holds the read role */
	bool thread_reads; /* under c->mu: ... and it is the reader thread */
	bool refused;      /* under c->mu: the daemon refused our identity (ERROR EPERM) */
	bool served;       /* under c->mu: it carried an event or an answer other than
			    * "not the leader", or a session's request on it went
			    * unanswered: losing it may lose events */
	bool heard;        /* under c->mu: a frame came on it after the challenge */
	bool cut;          /* under c->mu: closed by the node, unheard, as it opened */
	uint64_t opened_ms; /* when its identity proof was sent */
	unsigned waiters;  /* under c->mu: requests waiting for a reply on k */
	uint64_t requests; /* under c->mu: requests sent on k so far */
	unsigned refs; /* under c->mu: c->conn's and each request's using it */
	uint8_t *rx;       /* the read role's: prefix and body of the frame being read */
	size_t rx_have;
	struct el_cw_msg *rx_msg;
	char url[EL_CW_ADDR_MAX + 1];
};

struct el_pending {
	uint64_t id;
	bool done;
	int decode_err;    /* done, but the reply did not decode: EL_EVERSION/EL_EDECODE */
	struct el_cw_msg *reply;
};

struct el_session {
	el_client *client;
	uint64_t id;
	uint32_t ttl_ms;
	uint32_t lock_delay_ms;
	uint64_t seq;            /* the last seq used */
	uint64_t deadline_ms;    /* local lease deadline (CLOCK_BOOTTIME ms) */
	uint64_t next_renew_ms;  /* when the keeper renews next */
	bool in_doubt;           /* the last renewal failed */
	bool lost;               /* the deadline passed, or the cluster said expired */
	bool closed;
	bool busy;               /* a call of the session is in progress (one at a time),
				  * or its el_session_close */
	unsigned users;          /* el_next_event calls inside it: close waits them out */
	uint64_t ev_seen;        /* events handed out by el_next_event */
	uint64_t seen_reconnects;
};

struct el_client {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_cond_t keeper_cv; /* idle keepers wait here, under mu */
	struct el_link_config *tls;
	struct el_ident *ident;  /* our certificate and key for the PROOF; NULL: anonymous */
	pthread_mutex_t ident_mu; /* el_ident's random generator is not thread-safe */
	char *endpoints[EL_CLIENT_ENDPOINTS_MAX];
	unsigned n_endpoints, next_ep;
	char leader_hint[EL_CW_ADDR_MAX + 1];
	struct el_conn *conn;
	uint64_t next_id;
	uint64_t reconnects;     /* leader connections lost: events may be lost */
	bool dialing;            /* a call is finding a connection; others wait for it */
	char dialing_url[EL_CW_ADDR_MAX + 1]; /* the endpoint it dials now ("": none yet),
						* which the others' timeouts name */
	uint32_t timeout_ms;
	char name[EL_CLIENT_NAME_MAX + 1];
	struct el_pending *pending[EL_CLIENT_PENDING_MAX];
	struct el_cw_msg events[EL_CLIENT_EVENTS_MAX];
	unsigned ev_head, n_events;
	uint64_t ev_count, gaps;
	el_session *sessions[EL_CLIENT_SESSIONS_MAX];
	int event_fd;            /* eventfd, written on each event */
	pthread_t keepers[EL_CLIENT_KEEPERS_MAX]; /* the keepalive threads */
	unsigned n_keepers;      /* under mu: keepers started (one at open, more on demand) */
	unsigned keepers_idle;   /* under mu: keepers waiting for a session to come due */
	bool closing;
};

/* client.c */
void el_client__fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Note that a NULL handle or pointer reached what (a public call): EL_EINVAL. */
int el_client__null(const char *what);
/* Put "what: " (a printf format) before the last error. */
void el_client__context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t el_client__now_ms(void);
void el_client__wake_events(el_client *c);
bool el_client__wait(el_client *c, uint64_t deadline_ms);
bool el_client__wait_conn(el_client *c, uint64_t deadline_ms);
bool el_client__wait_on(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ms);
void el_client__cond_init(pthread_cond_t *cv);
int el_client__request_until(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply,
			     uint64_t deadline_ms);
/* The keeper's renewal of s: given up once s or the client is being closed. */
int el_client__renew(el_client *c, const el_session *s, struct el_cw_msg *req,
		     struct el_cw_msg *reply, uint32_t timeout_ms);
/* el_client_request, and *unanswered: whether the frame may have reached a
 * node that never answered it (so the request may yet act). */
int el_client__request_unsure(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply,
			      bool *unanswered);

/* client_session.c: a keepalive thread; closing the sessions left open. */
void *el_client__keeper_main(void *arg);
void el_client__close_sessions(el_client *c);

#endif /* EL_CLIENT_IMPL_H */
