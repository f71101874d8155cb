/*
 * peers.c - the relay on the peer network, as the board's node id: the
 * identity exchange and hello on every connection (the same rules as
 * edgelockd's cmd/edgelockd/peers.c, from the other side of each), then
 * Raft messages checked and moved between the connections and the UART.
 */
#include <stdio.h>
#include <string.h>

#include "el_error.h"
#include "el_peer_hello.h"
#include "el_platform.h"
#include "el_relay.h"

static struct el_relay_inbound *inbound(struct el_relay *r, uint64_t conn, bool add)
{
	struct el_relay_inbound *free_slot = NULL;
	for (int i = 0; i < EL_RELAY_INBOUND_MAX; i++) {
		if (r->in[i].conn == conn)
			return &r->in[i];
		if (r->in[i].conn == 0 && free_slot == NULL)
			free_slot = &r->in[i];
	}
	if (add && free_slot != NULL) {
		memset(free_slot, 0, sizeof *free_slot);
		free_slot->conn = conn;
	}
	return add ? free_slot : NULL;
}

static struct el_relay_outbound *outbound(struct el_relay *r, el_id_t peer, bool add)
{
	struct el_relay_outbound *free_slot = NULL;
	for (int i = 0; i < EL_RELAY_PEERS_MAX; i++) {
		if (r->out[i].conn != 0 && r->out[i].peer == peer)
			return &r->out[i];
		if (r->out[i].conn == 0 && free_slot == NULL)
			free_slot = &r->out[i];
	}
	return add ? free_slot : NULL;
}

static void refuse(struct el_relay *r, uint64_t conn, const char *why)
{
	r->st.refused++;
	el_log(EL_LOG_WARN, "relay: peer connection: %s; closed", why);
	struct el_relay_inbound *in = inbound(r, conn, false);
	if (in != NULL)
		in->conn = 0;
	for (int i = 0; i < EL_RELAY_PEERS_MAX; i++)
		if (r->out[i].conn == conn)
			r->out[i].conn = 0;
	el_net_close(r->net, conn);
}

static int hello(const struct el_relay *r, uint8_t *buf, uint32_t cap)
{
	/* no client address: the board serves no clients (it hands leadership
	 * over when it wins an election) */
	struct el_peer_hello h = { .node = r->id, .cluster = r->cluster,
				   .profile = el_peer_profile() };
	h.peer_addr_len = (uint8_t)strlen(r->peer_addr);
	memcpy(h.peer_addr, r->peer_addr, h.peer_addr_len);
	return el_peer_hello_encode(&h, buf, cap);
}

static void on_hello(struct el_relay *r, struct el_relay_inbound *in, const uint8_t *buf,
		     uint32_t len)
{
	struct el_peer_hello h;
	char want[32];
	if (!el_peer_hello_is(buf, len) || el_peer_hello_decode(&h, buf, len) != EL_OK) {
		refuse(r, in->conn, "first frame after the proof is not a hello");
		return;
	}
	snprintf(want, sizeof want, "node%u", h.node);
	if (h.cluster != r->cluster || h.profile != el_peer_profile()) {
		refuse(r, in->conn, "hello from another cluster or with other capacity limits "
				    "(build the daemons with the boards' small config)");
		return;
	}
	if (h.node == r->id || strcmp(in->name, want) != 0) {
		refuse(r, in->conn, "the hello claims a node its proof is not");
		return;
	}
	in->node = h.node;
	el_log(EL_LOG_INFO, "relay: node %u connected to the board", h.node);
}

/* A frame on a connection a peer dialed: proof, hello, then Raft. */
static void on_peer_frame(struct el_relay *r, uint64_t conn, const uint8_t *buf, uint32_t len)
{
	struct el_relay_inbound *in = inbound(r, conn, false);
	char err[256];
	struct el_msg m;
	if (in == NULL || !in->challenged) {
		refuse(r, conn, "a frame on a connection not challenged");
	} else if (!in->proven) {
		if (el_ident_verify(r->ident, in->nonce, EL_IDENT_NODE, buf, len, in->name, err,
				    sizeof err) != EL_OK)
			refuse(r, conn, err);
		else
			in->proven = true;
	} else if (in->node == 0) {
		on_hello(r, in, buf, len);
	} else if (el_wire_decode_msg(buf, len, &m, r->entries) != EL_OK || m.from != in->node ||
		   m.to != r->id) {
		r->st.refused++; /* the board never sees it */
	} else {
		el_relay_uart_send(r, buf, len);
	}
}

/* The CHALLENGE on a connection the relay dialed: prove the board's name,
 * say its hello, then the connection carries the board's messages. */
static void on_challenge(struct el_relay *r, uint64_t conn, el_id_t peer, const uint8_t *buf,
			 uint32_t len)
{
	struct el_relay_outbound *o = outbound(r, peer, false);
	uint8_t proof[EL_IDENT_PROOF_MAX], h[EL_PEER_HELLO_MAX];
	char expect[32];
	snprintf(expect, sizeof expect, "node%u", peer);
	if (o == NULL || o->conn != conn || o->proved) {
		refuse(r, conn, "a frame after the challenge");
		return;
	}
	int n = el_ident_prove(r->ident, buf, len, expect, proof, sizeof proof);
	int rc = n < 0 ? n : el_net_conn_send(r->net, conn, proof, (uint32_t)n);
	int hn = rc == EL_OK ? hello(r, h, sizeof h) : rc;
	rc = hn < 0 ? hn : el_net_conn_send(r->net, conn, h, (uint32_t)hn);
	if (rc != EL_OK) {
		refuse(r, conn, el_strerror(rc));
		return;
	}
	o->proved = true;
	el_net_peer_ready(r->net, conn);
	el_log(EL_LOG_INFO, "relay: board connected to node %u", peer);
}

static void challenge(struct el_relay *r, struct el_relay_inbound *in)
{
	uint8_t ch[EL_IDENT_CHALLENGE_MAX];
	int n = el_ident_challenge(r->ident, in->nonce, ch, sizeof ch);
	if (n < 0 || el_net_conn_send(r->net, in->conn, ch, (uint32_t)n) != EL_OK)
		refuse(r, in->conn, "cannot challenge it");
	else
		in->challenged = true;
}

static void on_opened(struct el_relay *r, uint64_t conn)
{
	struct el_relay_inbound *in = inbound(r, conn, true);
	if (in == NULL)
		refuse(r, conn, "too many peer connections");
	else if (r->uart_fd >= 0)
		challenge(r, in);
	/* else held, unchallenged, until the board is up */
}

void el_relay_net_item(struct el_relay *r, const struct el_net_item *it)
{
	struct el_relay_outbound *o;
	struct el_relay_inbound *in;
	switch (it->kind) {
	case EL_NET_PEER_OPENED:
		on_opened(r, it->conn);
		break;
	case EL_NET_PEER_FRAME:
		on_peer_frame(r, it->conn, it->data, it->len);
		break;
	case EL_NET_PEER_CLOSED:
		if ((in = inbound(r, it->conn, false)) != NULL)
			in->conn = 0;
		break;
	case EL_NET_PEER_DIALED:
		if ((o = outbound(r, it->peer, true)) != NULL)
			*o = (struct el_relay_outbound){ .conn = it->conn, .peer = it->peer };
		else
			refuse(r, it->conn, "no room to track it");
		break;
	case EL_NET_PEER_OUT_FRAME:
		on_challenge(r, it->conn, it->peer, it->data, it->len);
		break;
	default: /* no client port */
		break;
	}
}

void el_relay_board_up(struct el_relay *r, bool up)
{
	for (int i = 0; i < r->n_peers; i++) {
		if (up) {
			el_net_peer_set(r->net, r->peer_id[i], r->peer_dial[i]);
		} else {
			el_net_peer_remove(r->net, r->peer_id[i]);
			struct el_relay_outbound *o = outbound(r, r->peer_id[i], false);
			if (o != NULL)
				o->conn = 0;
		}
	}
	for (int i = 0; i < EL_RELAY_INBOUND_MAX; i++) {
		struct el_relay_inbound *in = &r->in[i];
		if (in->conn != 0 && up && !in->challenged) {
			challenge(r, in);
		} else if (in->conn != 0 && !up && in->challenged) {
			el_net_close(r->net, in->conn); /* its node redials: held then */
			in->conn = 0;
		}
	}
}

void el_relay_from_board(struct el_relay *r, const uint8_t *msg, uint32_t len)
{
	struct el_msg m;
	if (el_wire_decode_msg(msg, len, &m, r->entries) != EL_OK || m.from != r->id) {
		r->st.refused++;
		return;
	}
	r->st.from_uart++;
	/* dropped when the link is down or full: Raft retransmits */
	(void)el_net_peer_send(r->net, m.to, msg, len);
}
