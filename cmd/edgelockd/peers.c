/*
 * peers.c - frames from and to other nodes, and the address book.
 *
 * Accepted peer connections start with a hello (el_peer_hello.h) naming the
 * node, its cluster and capacity profile; a hello from another cluster or
 * profile, a second hello, or a Raft message before the hello closes the
 * connection. Raft messages must say they come from the node the hello
 * named and are addressed to us; anything else is dropped and counted.
 * (The name in a hello is claimed, not proven; issue 12 binds it to the
 * certificate.)
 */
#include <stdio.h>
#include <string.h>

#include "el_daemon.h"
#include "el_error.h"
#include "el_peer_hello.h"
#include "el_platform.h"
#include "el_wire.h"

const struct el_d_book *el_d_book_find(const struct el_daemon *d, el_id_t id)
{
	for (int i = 0; i < EL_DCFG_PEERS_MAX; i++)
		if (d->book[i].id == id)
			return &d->book[i];
	return NULL;
}

static void copy_addr(char *dst, const char *src, uint32_t len)
{
	if (len >= EL_CW_ADDR_MAX)
		len = EL_CW_ADDR_MAX - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* Record what we know of node id (empty strings keep what was known) and
 * dial it when it is another node with a peer address. */
void el_d_book_set(struct el_daemon *d, el_id_t id, const char *peer, uint32_t peer_len,
		   const char *client, uint32_t client_len)
{
	struct el_d_book *b = (struct el_d_book *)el_d_book_find(d, id);
	for (int i = 0; i < EL_DCFG_PEERS_MAX && b == NULL; i++)
		if (d->book[i].id == 0) {
			b = &d->book[i];
			memset(b, 0, sizeof *b);
			b->id = id;
		}
	if (b == NULL)
		return;
	if (peer_len > 0)
		copy_addr(b->peer_addr, peer, peer_len);
	if (client_len > 0)
		copy_addr(b->client_addr, client, client_len);
	if (id != d->cfg.id && b->peer_addr[0] != '\0' && d->net != NULL)
		el_net_peer_set(d->net, id, b->peer_addr);
}

int el_d_hello(const struct el_daemon *d, uint8_t *buf, uint32_t cap)
{
	struct el_peer_hello h = { .node = d->cfg.id, .cluster = d->cluster,
				   .profile = el_peer_profile() };
	h.peer_addr_len = (uint8_t)strlen(d->cfg.peer_addr);
	h.client_addr_len = (uint8_t)strlen(d->cfg.client_addr);
	memcpy(h.peer_addr, d->cfg.peer_addr, h.peer_addr_len);
	memcpy(h.client_addr, d->cfg.client_addr, h.client_addr_len);
	return el_peer_hello_encode(&h, buf, cap);
}

static struct el_d_inbound *inbound(struct el_daemon *d, uint64_t conn, bool add)
{
	struct el_d_inbound *free_slot = NULL;
	for (int i = 0; i < EL_D_INBOUND_MAX; i++) {
		if (d->inbound[i].conn == conn)
			return &d->inbound[i];
		if (d->inbound[i].conn == 0 && free_slot == NULL)
			free_slot = &d->inbound[i];
	}
	if (add && free_slot != NULL) {
		free_slot->conn = conn;
		free_slot->node = 0;
		return free_slot;
	}
	return NULL;
}

static void refuse(struct el_daemon *d, uint64_t conn, const char *why, el_id_t node)
{
	d->peer_frames_refused++;
	el_log(EL_LOG_WARN, "peer connection (node %u): %s; closed", node, why);
	struct el_d_inbound *in = inbound(d, conn, false);
	if (in != NULL)
		in->conn = 0;
	el_net_close(d->net, conn);
}

static void on_hello(struct el_daemon *d, struct el_d_inbound *in, const uint8_t *buf,
		     uint32_t len)
{
	struct el_peer_hello h;
	int rc = el_peer_hello_decode(&h, buf, len);
	if (rc != EL_OK) {
		refuse(d, in->conn, el_strerror(rc), 0);
		return;
	}
	if (h.cluster != d->cluster) {
		refuse(d, in->conn, "hello from another cluster", h.node);
		return;
	}
	if (h.profile != el_peer_profile()) {
		refuse(d, in->conn, "hello with other capacity limits", h.node);
		return;
	}
	if (h.node == d->cfg.id) {
		refuse(d, in->conn, "hello claiming this node's id", h.node);
		return;
	}
	in->node = h.node;
	el_d_book_set(d, h.node, h.peer_addr, h.peer_addr_len, h.client_addr, h.client_addr_len);
	el_log(EL_LOG_INFO, "peer: node %u connected", h.node);
}

void el_d_peer_frame(struct el_daemon *d, uint64_t conn, const uint8_t *buf, uint32_t len)
{
	struct el_d_inbound *in = inbound(d, conn, true);
	if (in == NULL) {
		refuse(d, conn, "too many peer connections", 0);
		return;
	}
	if (in->node == 0) {
		if (!el_peer_hello_is(buf, len)) {
			refuse(d, conn, "first frame is not a hello", 0);
			return;
		}
		on_hello(d, in, buf, len);
		return;
	}
	struct el_msg m;
	int rc = el_wire_decode_msg(buf, len, &m, d->entries);
	if (rc != EL_OK) {
		refuse(d, conn, el_strerror(rc), in->node);
		return;
	}
	if (m.from != in->node || m.to != d->cfg.id) {
		d->peer_frames_refused++;
		el_log(EL_LOG_WARN, "peer: node %u sent a message from %u to %u; dropped", in->node,
		       m.from, m.to);
		return;
	}
	rc = el_node_step(d->node, &m, d->now_ms);
	if (rc != EL_OK && rc != EL_ESTOPPED)
		d->peer_frames_refused++;
}

void el_d_peer_closed(struct el_daemon *d, uint64_t conn)
{
	struct el_d_inbound *in = inbound(d, conn, false);
	if (in != NULL)
		in->conn = 0;
}

void el_d_peer_send(struct el_daemon *d, const struct el_msg *m)
{
	int n = el_wire_encode_msg(m, d->buf, sizeof d->buf);
	if (n < 0) {
		el_log(EL_LOG_ERROR, "peer: cannot encode a message to %u: %s", m->to, el_strerror(n));
		return;
	}
	/* dropped when the link is down or its queue full: Raft retransmits */
	(void)el_net_peer_send(d->net, m->to, d->buf, (uint32_t)n);
}

/* A connection this node dialed is up: the hello first, then Raft. (Issue
 * 12 waits here for the listener's challenge and proves the name first.) */
void el_d_peer_dialed(struct el_daemon *d, uint64_t conn, el_id_t peer)
{
	uint8_t hello[EL_PEER_HELLO_MAX];
	int n = el_d_hello(d, hello, sizeof hello);
	int rc = n < 0 ? n : el_net_conn_send(d->net, conn, hello, (uint32_t)n);
	if (rc != EL_OK) {
		el_log(EL_LOG_ERROR, "peer: cannot greet node %u: %s", peer, el_strerror(rc));
		el_net_close(d->net, conn);
		return;
	}
	el_net_peer_ready(d->net, conn);
}

/* Nothing is sent back on a dialed connection (yet): close it. */
void el_d_peer_out_frame(struct el_daemon *d, uint64_t conn, el_id_t peer)
{
	d->peer_frames_refused++;
	el_log(EL_LOG_WARN, "peer: node %u sent a frame on our connection to it; closed", peer);
	el_net_close(d->net, conn);
}
