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
#define EL_CLIENT_EVENTS_MAX 64
#define EL_CLIENT_SESSIONS_MAX 64

struct el_conn {
	el_client *client;
	struct el_link link;
	pthread_t reader;
	bool dead; /* the reader saw the stream end (under c->mu) */
	unsigned refs; /* under c->mu: c->conn's and each request's using it */
	char url[EL_CW_ADDR_MAX + 1];
};

struct el_pending {
	uint64_t id;
	bool done;
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
	uint64_t ev_seen;        /* events handed out by el_next_event */
	uint64_t seen_reconnects;
};

struct el_client {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_mutex_t send_mu;
	struct el_link_config *tls;
	struct el_ident *ident;  /* our certificate and key for the PROOF; NULL: anonymous */
	pthread_mutex_t ident_mu; /* el_ident's random generator is not thread-safe */
	char *endpoints[EL_CLIENT_ENDPOINTS_MAX];
	unsigned n_endpoints, next_ep;
	char leader_hint[EL_CW_ADDR_MAX + 1];
	struct el_conn *conn;
	uint64_t next_id;
	uint64_t reconnects;     /* connections replaced: events may be lost */
	uint32_t timeout_ms;
	char name[EL_CLIENT_NAME_MAX + 1];
	struct el_pending *pending[EL_CLIENT_PENDING_MAX];
	struct el_cw_msg events[EL_CLIENT_EVENTS_MAX];
	unsigned ev_head, n_events;
	uint64_t ev_count, gaps;
	el_session *sessions[EL_CLIENT_SESSIONS_MAX];
	int event_fd;            /* eventfd, written on each event */
	pthread_t keeper;
	bool keeper_running;
	bool closing;
};

/* client.c */
void el_client__fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t el_client__now_ms(void);
void el_client__wake_events(el_client *c);
bool el_client__wait(el_client *c, uint64_t deadline_ms);
int el_client__request_within(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply,
			      uint32_t timeout_ms);

/* client_session.c: the keepalive thread. */
void *el_client__keeper_main(void *arg);

#endif /* EL_CLIENT_IMPL_H */
