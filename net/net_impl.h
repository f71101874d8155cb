/*
 * net_impl.h - what net.c (the owner's side), net_hs.c (the handshake
 * thread) and net_tls.c (TLS configurations) share. Private to net/.
 *
 * Who owns what:
 *   - A connection in its handshake belongs to the handshake thread alone.
 *   - Once its handshake is done it is handed to the owner (net->handoff,
 *     under net->mu) and from then on belongs to the owner's thread alone:
 *     the owner reads, writes and closes it with no lock held.
 *   - net->mu guards the hand-off list, the peers' dial state, the TLS
 *     configurations' reference counts and the counters.
 */
#ifndef EL_NET_IMPL_H
#define EL_NET_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "el_net.h"
#include "el_resolve.h"
#include "el_url.h"

#define NET_PEERS_MAX 16
#define NET_BACKOFF_MIN_MS 50u
#define NET_BACKOFF_MAX_MS 2000u
/* A connection that has not finished its TLS handshake by then is cut, so
 * a silent client cannot hold one of max_clients for long. */
#define NET_HANDSHAKE_MS 10000u
/* A dial's TCP connect not answered by then fails, and is redialed: a
 * peer whose packets are dropped (a cut cable, a firewall) answers no SYN,
 * and the kernel's retries, bounded only by NET_HANDSHAKE_MS, made each
 * dial take 10 s, its warning come after five of them (an outside tester
 * saw none for an 18 s cut). A LAN answers in milliseconds; this leaves
 * room for one lost SYN (its retry goes at 1 s). */
#define NET_CONNECT_MS NET_BACKOFF_MAX_MS
/* A link that ends sooner than this after its handshake (the other side's
 * owner refused it: another cluster, a hello it rejects) is redialed with
 * the backoff growing, as a failed dial is; a longer one starts over. */
#define NET_LINK_STABLE_MS 1000u
/* Connections on the peer port in their TLS handshake at a time: a
 * cluster needs one per other node (and one more while it redials), so
 * anything beyond this is someone else, and memory stays bounded against a
 * flood. (Connections up are the owner's to bound: edgelockd's inbound
 * table closes the oldest of a node's when it fills.) */
#define NET_PEER_HS_MAX (4u * NET_PEERS_MAX)
/* A peer's name is resolved on a thread of its own (el_resolve.h) while
 * the handshake thread goes on accepting and handshaking; a lookup that
 * has not answered in this long (glibc gives up after 5 s per DNS server
 * and try) is left to finish alone and the dial backs off. */
#define NET_RESOLVE_MS 30000u

enum ckind { C_PEER_IN = 1, C_PEER_OUT = 2, C_CLIENT = 3 };

/* The TLS files and the configurations made of them (mbedtls_ssl_setup
 * keeps a pointer to one): it lives while a connection made with it does,
 * so a reload never pulls it from under a connection. */
struct net_tls {
	uint32_t refs; /* under net->mu */
	mbedtls_ssl_config peer, client, dial; /* by the connection's kind */
	mbedtls_x509_crt ca, own;
	mbedtls_pk_context key;
};

struct frame {
	struct frame *next;
	uint32_t len; /* prefix + body */
	uint32_t off; /* bytes written so far */
	bool close_after;
	uint8_t b[];
};

struct conn {
	struct el_net *net;
	uint64_t id; /* set when the owner takes it */
	uint8_t kind;
	el_id_t peer;      /* C_PEER_OUT: the node dialed */
	uint32_t peer_gen; /* C_PEER_OUT: the peer setting it was dialed for */
	int slot;          /* C_PEER_OUT: its peer's index in net->peers */
	int fd;
	char from[EL_ADDR_NAME_MAX]; /* accepted: the far end, as accepted ("" dialed) */
	mbedtls_ssl_context ssl;
	struct net_tls *tls;
	/* read-ahead under mbedtls, which asks for a record's header and its
	 * body apart: one recv() takes what has arrived (net_tls.c) */
	uint8_t *tin;
	uint32_t tin_cap, tin_len, tin_off;
	bool tin_dry; /* the last recv() was short: the socket is empty */
	/* handshake thread */
	bool connecting;     /* C_PEER_OUT: connect() in progress */
	uint64_t deadline_ms; /* of the handshake */
	/* owner */
	bool ready; /* C_PEER_OUT: handshake done, Raft frames may go */
	uint64_t up_ms; /* when the owner took it */
	bool closing, rx_paused, rx_stopped, on_again;
	bool bye; /* the other end closed with a TLS close_notify: it is stopping (el_net_stop) */
	uint32_t watched; /* the epoll events asked for */
	uint32_t refs; /* 1 while not reaped + 1 per item held + 1 on the again list */
	uint32_t frame_max;
	/* receiving: small frames are parsed out of rbuf, as many per read as
	 * arrived; a frame larger than rbuf is read straight into cur, which
	 * holds a reference until it is queued (or freed by reap when the
	 * connection ends first). */
	uint8_t *rbuf;
	uint32_t rcap, rlen;
	bool in_body;
	uint32_t got;
	struct el_net_item *cur;
	uint32_t inq; /* items of this connection not yet freed by the owner */
	/* sending */
	struct frame *q_head, *q_tail;
	uint32_t q_n;
	size_t q_bytes; /* of the queued frames, their headers included (frame_cost) */
	struct conn *next;       /* the list it is on (hand-off, handshakes, dead) */
	struct conn *next_again; /* the owner's again list */
};

enum peer_state { P_WAIT = 1, P_DIALING = 2, P_LINKED = 3 };
/* What a peer's dials failed at, once it was said: U_NAME its address (a
 * name that does not resolve), U_DIAL the connection (TCP or TLS). */
enum peer_unreached { U_NONE = 0, U_NAME = 1, U_DIAL = 2 };

struct peer {
	/* under net->mu */
	el_id_t id;   /* 0: a free slot */
	uint32_t gen; /* a new net->gen_seq at every set and remove */
	uint8_t state;
	char addr[128];
	uint32_t backoff_ms;
	uint32_t tries;      /* dials since the setting: picks the address */
	uint64_t dial_at_ms; /* P_WAIT */
	uint64_t dial_started_ms; /* the last dial's start: its backoff counts from there */
	uint64_t failing_since_ms; /* the start of the first dial failed in a row; 0: none */
	/* why dials fail, said once at warning (net_hs.c, dial_retry): quiet
	 * (debug) after it, until the name resolves / a link comes up */
	uint8_t unreached; /* U_* */
	uint32_t failed;   /* dials failed since that warning */
	/* the owner's alone */
	struct conn *c; /* the live dialed connection */
	bool refusing;  /* its links close at once: said once, quiet until one holds */
	bool retired;   /* no longer a member: its link kept while up, never redialed */
};

struct el_net {
	struct el_net_config cfg;
	pthread_mutex_t mu;
	bool stopping;
	/* the owner's wait: epoll over its connections and wake_fd */
	int ep, wake_fd;
	struct conn **slots;
	uint32_t n_slots;
	uint64_t next_seq;
	uint32_t n_conns;
	/* the addresses of the connections reaped last (owner): frames read
	 * before a close are handled after it, and their refusal lines still
	 * name where they came from (el_net_conn_name) */
	struct { uint64_t id; char from[EL_ADDR_NAME_MAX]; } gone[16];
	uint32_t gone_next;
	struct el_net_item *in_head, *in_tail;
	struct conn *dead, *again;
	uint8_t *scratch; /* one frame being written */
	/* the q_bytes of every client connection not closing: what
	 * client_sendq_total_max bounds (owner) */
	size_t client_q_bytes;
	uint64_t evict_said_ms; /* the last "largest client queue closed" line */
	uint64_t evict_held;    /* such closes since, not yet said */
	/* handed over by the handshake thread (mu) */
	struct conn *handoff;
	/* the handshake thread */
	pthread_t hs_thread;
	bool hs_started;
	int hs_ep, hs_wake_fd;
	int listen_peer, listen_client;
	uint64_t accept_resume_ms; /* listeners unwatched until then (0: watched) */
	uint64_t evict_logged_ms;  /* handshake thread: last "client table full" line */
	uint64_t evicted_unlogged; /* such cuts since */
	uint64_t refused_unlogged; /* new connections refused (all past their handshake) since */
	uint64_t peer_evicted_unlogged; /* peer-port handshakes cut for newer ones since */
	char evicted_from[EL_ADDR_NAME_MAX]; /* the last one's address */
	char peer_evicted_from[EL_ADDR_NAME_MAX];
	uint64_t cert_logged_ms;   /* handshake thread: last "refused its certificate" line */
	uint64_t cert_refused;     /* such refusals since, this one included */
	struct conn *handshaking;
	struct conn *dialing[NET_PEERS_MAX];
	struct net_resolving {      /* a dial waiting for its peer's name */
		struct el_resolve_job *job; /* NULL: none */
		el_id_t id;                 /* the peer's setting when the dial began */
		uint32_t gen, attempt;
		uint64_t give_up_ms;
	} resolving[NET_PEERS_MAX];
	uint32_t client_conns; /* mu: clients accepted and not yet reaped */
	uint32_t peer_hs_conns; /* mu: peer-port connections in their handshake */
	/* TLS (mu for the pointers' swap) */
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	struct net_tls *tls;
	struct peer peers[NET_PEERS_MAX];
	uint32_t gen_seq; /* mu: the last peer generation given, unique net-wide */
	struct el_net_stats st;
};

/* net_tls.c */
int net_tls_init(struct el_net *net);
void net_tls_fini(struct el_net *net);
/* Load cfg's files into a new set (one reference), or NULL (logged). */
struct net_tls *net_tls_load(struct el_net *net);
void net_tls_unref(struct net_tls *t); /* mu held */
/* Set up c->ssl on c->fd with t's configuration for c's kind (takes a
 * reference; mu held). */
int net_tls_attach(struct conn *c, struct net_tls *t, const char *server_name);
void net_tls_detach(struct conn *c); /* mu held */

/* net_hs.c */
int net_hs_start(struct el_net *net);
void net_hs_stop(struct el_net *net);
void net_hs_wake(struct el_net *net);
/* Dial peer p again after its backoff, which then doubles (mu held). */
void net_peer_wait(struct peer *p, uint64_t now);
void net_conn_free(struct conn *c); /* fd, TLS, buffers; mu held */
void net_conn_uncount(struct el_net *net, const struct conn *c); /* mu held */

/* net.c */
void net_wake_owner(struct el_net *net);

#endif
