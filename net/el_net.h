/*
 * el_net.h - the daemon's network: framed TLS connections over TCP, with
 * epoll and mbedtls.
 *
 * Two listeners (peers, clients) and a dialer per peer, all at
 * "tls+tcp://HOST:PORT" addresses. Every connection carries frames: a
 * 4-byte big-endian length, then that many bytes; a length of 0 or above
 * the direction's cap ends the connection.
 *
 * Threads. One thread of net's own accepts, dials and runs the TLS
 * handshakes (net_hs.c). Once a connection's handshake is done it belongs
 * to the owner (the daemon's node thread), which does all of its I/O:
 * el_net_fd() is readable when a connection has input or room for queued
 * output, or when something was handed over; el_net_drain() then reads and
 * decrypts, and returns the complete frames as el_net_items. el_net_*_send()
 * encrypt and write at once; only what the socket does not take waits, in
 * a bounded queue per connection, for the next drain. So a frame costs no
 * thread hand-off, and a slow or dead peer or client never stalls the
 * node's turn:
 *   - a peer whose send queue is full (peer_sendq_max frames or
 *     peer_sendq_bytes_max bytes) loses the frame (Raft retransmits);
 *   - a client whose send queue is full (client_sendq_max frames or
 *     client_sendq_bytes_max bytes) is disconnected (it reconnects and
 *     resynchronises: every reply is retrievable by retrying its seq);
 *   - when the client queues together would pass client_sendq_total_max
 *     bytes, the client with the largest queue is disconnected (the
 *     sender or another), as Redis's maxmemory-clients evicts;
 *   - a connection with inq_per_conn_max items not yet freed is not read
 *     until the owner frees half of them (TCP holds the rest back).
 *
 * Peers: frames to peer N go over the connection this node dialed to N
 * (mutual TLS against the cluster CA, the server's certificate checked for
 * the name "node<N>"). Frames from peers arrive on accepted connections
 * (EL_NET_PEER_FRAME, with the connection id); the owner binds each accepted
 * connection to the node its hello names. Dialing retries with exponential
 * backoff (50 ms to 2 s), also when a link ends within 1 s of its
 * handshake (the other owner closed it). A handshake not done in 10 s is
 * cut. The peer port takes at most 64 connections in their handshake at a
 * time (a cluster needs one per other node), the client port max_clients
 * (handshaking or up). A peer's name is looked up beside the handshakes,
 * never holding one up (el_resolve.h).
 *
 * Every connection begins with an exchange the owner runs, so a handshake
 * (issue 12's challenge and proof) fits before the first Raft message:
 * an accepted connection is announced (EL_NET_*_OPENED) before its frames;
 * a dialed one is announced as EL_NET_PEER_DIALED, frames the other side
 * sends on it arrive as EL_NET_PEER_OUT_FRAME, the owner writes with
 * el_net_conn_send(), and el_net_peer_send() uses it only once the owner
 * has called el_net_peer_ready() (today: right after sending the hello).
 *
 * Every function but el_net_start() is for the owner's thread only.
 * Allocation (frames, items, TLS state) stays here: the core sees only
 * bytes the owner copies or decodes in place.
 */
#ifndef EL_NET_H
#define EL_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "el_raft.h"

struct el_net;

struct el_net_config {
	const char *peer_listen;   /* "tls+tcp://HOST:PORT" */
	const char *client_listen; /* "tls+tcp://HOST:PORT", or NULL: no client port */
	const char *ca_file;       /* the cluster CA (PEM) */
	const char *cert_key_file; /* this node's certificate and key (PEM, one file) */
	bool client_cert_required; /* clients must present a CA-signed certificate */
	uint32_t max_clients;      /* connections on the client port */
	uint32_t peer_frame_max;   /* largest frame from/to a peer */
	uint32_t client_frame_max; /* largest frame from a client */
	uint32_t client_sendq_max; /* frames queued to one client before it is dropped */
	/* bytes queued to one client before it is dropped (each frame counted
	 * with its length prefix and queue header); 0: no bound */
	uint32_t client_sendq_bytes_max;
	/* bytes queued to all clients together (counted so) before the one
	 * with the largest queue is dropped; 0: no bound. Peers not counted. */
	uint32_t client_sendq_total_max;
	uint32_t peer_sendq_max;   /* frames queued to one peer before frames are dropped */
	/* bytes queued to one peer (counted as for a client) before frames
	 * are dropped; 0: no bound */
	uint32_t peer_sendq_bytes_max;
	uint32_t inq_per_conn_max; /* frames of one connection waiting in the input queue */
	/* A peer connection whose sent bytes stay unacknowledged this long is
	 * closed (TCP_USER_TIMEOUT) and redialed; 0: the kernel's default
	 * (retransmits backing off for many minutes) */
	uint32_t peer_user_timeout_ms;
};

enum el_net_kind {
	EL_NET_PEER_FRAME = 1,    /* a frame on an accepted peer connection */
	EL_NET_PEER_CLOSED = 2,   /* an accepted peer connection ended */
	EL_NET_CLIENT_FRAME = 3,  /* a frame from a client */
	EL_NET_CLIENT_CLOSED = 4, /* a client connection ended: detach its sessions */
	EL_NET_CLIENT_BAD = 5,    /* a client sent a length of 0 or over the cap */
	EL_NET_PEER_OPENED = 6,   /* a peer connection was accepted */
	EL_NET_CLIENT_OPENED = 7, /* a client connection was accepted */
	EL_NET_PEER_DIALED = 8,   /* a connection to peer `peer` is up (not ready yet) */
	EL_NET_PEER_OUT_FRAME = 9, /* a frame on a connection this node dialed */
	EL_NET_PEER_LINK_LOST = 10, /* the connection to peer `peer` broke (redialing) */
};

struct el_net_item {
	struct el_net_item *next; /* private */
	void *conn_;              /* private */
	uint8_t kind;
	uint64_t conn;            /* connection id, never reused */
	el_id_t peer;             /* PEER_DIALED, PEER_OUT_FRAME: the node dialed */
	uint32_t len;
	uint8_t data[];           /* len bytes (frames) */
};

struct el_net_stats {
	uint64_t peer_frames_dropped;   /* peer send queue full or not connected */
	uint64_t client_drops;          /* clients disconnected for a full queue */
	uint64_t client_evictions;      /* clients disconnected as the largest queue
					 * over client_sendq_total_max */
	uint64_t client_queued_bytes;   /* in all client send queues now, as
					 * client_sendq_total_max counts them */
	uint64_t input_dropped;         /* frames over a connection's input share */
	uint64_t clients_refused;       /* over max_clients */
	uint32_t clients;               /* client connections now, their handshake done */
	uint32_t client_handshakes;     /* accepted, in their TLS handshake (or being
					 * handed over): with clients, what counts
					 * against max_clients */
};

/* Listen on both ports and start; EL_EINVAL (bad config, with a log line
 * naming the cause), EL_EIO (cannot listen). */
int el_net_start(struct el_net **out, const struct el_net_config *cfg);
/* Close everything and free; no callback runs after it returns. */
void el_net_stop(struct el_net *net);

/* SIGHUP: load the CA and certificate files again (the paths of cfg) into new
 * TLS configurations for both listeners and every dialer; handshakes from
 * now on use them, connections up keep theirs. If any fails to load, none
 * changes (EL_EINVAL, logged). Call from the thread that sets peers. */
int el_net_reload_tls(struct el_net *net);

/* Readable when el_net_drain() has work (an epoll descriptor): poll it. */
int el_net_fd(const struct el_net *net);
/* The queued items (a list in arrival order), or NULL. Free each with
 * el_net_item_free(). */
struct el_net_item *el_net_drain(struct el_net *net);
void el_net_item_free(struct el_net *net, struct el_net_item *it);

/* Dial peer id at addr (again, if the address changed); idempotent. */
int el_net_peer_set(struct el_net *net, el_id_t id, const char *addr);
void el_net_peer_remove(struct el_net *net, el_id_t id);
/* Peer id is no longer a member: stop dialing it, but keep its live link,
 * if any, until it closes (a leader's last word to a removed node goes
 * over it); then it is not redialed (logged). True when a link was up (it
 * is kept), false when none was (the peer is forgotten now). Another
 * el_net_peer_set of it undoes this. */
bool el_net_peer_retire(struct el_net *net, el_id_t id);
/* Queue a frame body to peer id: EL_OK, EL_ENOTFOUND (no such peer or not
 * connected), EL_EFULL (queue full, in frames or bytes: dropped; the link
 * stays). */
int el_net_peer_send(struct el_net *net, el_id_t id, const uint8_t *body, uint32_t len);
bool el_net_peer_up(struct el_net *net, el_id_t id);
/* What waits in the send queue of the link to peer id (frames, and bytes
 * counted as for a client); 0 and 0 when no link is up. */
void el_net_peer_queued(struct el_net *net, el_id_t id, uint32_t *frames, size_t *bytes);

/* Queue a frame body to client connection conn; close_after ends the
 * connection once it is sent. EL_ENOTFOUND (gone, or closed now as the
 * largest of the client queues over client_sendq_total_max: el_net counts
 * that in client_evictions and logs it), EL_EFULL (its own queue full:
 * dropped and the connection closed; counted in client_drops, the caller
 * says why). A send may close another client (the largest queue). */
int el_net_client_send(struct el_net *net, uint64_t conn, const uint8_t *body, uint32_t len,
		       bool close_after);
/* Queue a frame on any connection (the handshake of a new one): EL_OK,
 * EL_ENOTFOUND (as for el_net_client_send), EL_EFULL (the connection is
 * then closed). */
int el_net_conn_send(struct el_net *net, uint64_t conn, const uint8_t *body, uint32_t len);
/* A dialed connection has done its handshake: el_net_peer_send may use it. */
void el_net_peer_ready(struct el_net *net, uint64_t conn);
/* Close any connection (client or accepted peer). */
void el_net_close(struct el_net *net, uint64_t conn);
/* The far end of conn, "HOST:PORT" ([v6]:PORT), into out; "?" when unknown
 * (gone, or getpeername failed). For refusal lines: an operator under a
 * flood must see where it comes from. */
void el_net_conn_name(struct el_net *net, uint64_t conn, char *out, size_t cap);
/* What waits in conn's send queue (frames, and bytes as client_sendq_bytes_max
 * counts them); a connection closed this turn still says what it held,
 * one gone says 0 and 0. For the line that says why a client was dropped. */
void el_net_queued(struct el_net *net, uint64_t conn, uint32_t *frames, size_t *bytes);

void el_net_stats(struct el_net *net, struct el_net_stats *st);

/* The most file descriptors el_net holds besides its client connections
 * (at most max_clients, handshakes included): what a process must keep
 * free for it beside max_clients (edgelockd's budget, main.c). The peer
 * connections its owner keeps after their handshake are the owner's to
 * count (edgelockd's inbound table). */
uint32_t el_net_fds_reserved(void);

/* Connections live in el_net_slots() slots (a power of two, fixed at start)
 * and a live connection's id names its slot: el_net_slot(), so the owner
 * can keep per-connection state in an array of that size (no two live
 * connections share a slot). */
uint32_t el_net_slots(const struct el_net *net);
uint32_t el_net_slot(const struct el_net *net, uint64_t conn);

#endif /* EL_NET_H */
