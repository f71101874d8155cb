/*
 * el_relay.h - edgelock-uart-relay: the network side of a firmware node.
 *
 * A microcontroller node of a mixed cluster (examples/firmware/
 * mixed_node_main.c) speaks the Raft peer messages over its UART, one
 * SLIP + CRC-32 frame each (port/baremetal/el_bm_frame.h). This program is
 * that node's network interface: it joins the peer network *as* the node
 * (node<ID>'s certificate and key, the identity proof of net/el_ident.h and
 * the hello of net/el_peer_hello.h, both ways, exactly as edgelockd's
 * peers.c does), and moves each Raft message between the UART and the peer
 * connections unchanged. It decodes every message only to check it: from a
 * peer it must come from the node proven on that connection and be addressed
 * to the board; from the board it must come from the board. It holds no
 * Raft state: the board is the voter. While the board's UART is not
 * connected the relay dials no peer and leaves the connections peers dial
 * to it unchallenged (so they never become ready), so the other nodes see
 * node<ID> as unreachable, as they would a stopped daemon, without dialing
 * it again and again.
 */
#ifndef EL_RELAY_H
#define EL_RELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "el_bm_frame.h"
#include "el_ident.h"
#include "el_net.h"
#include "el_raft.h"
#include "el_wire.h"

#define EL_RELAY_PEERS_MAX 8
#define EL_RELAY_INBOUND_MAX 16
/* Bytes waiting to go to the UART; a frame that does not fit is dropped
 * (Raft retransmits), so a board that stops reading never stalls the relay. */
#define EL_RELAY_UART_OUT_MAX (64 * 1024)

struct el_relay_inbound { /* a connection a peer dialed to the board */
	uint64_t conn;        /* 0: free */
	uint8_t nonce[EL_IDENT_NONCE_LEN];
	bool challenged;      /* false: held until the board is up */
	bool proven;
	char name[EL_IDENT_NAME_MAX + 1];
	el_id_t node;         /* from its hello, once accepted */
};

struct el_relay_outbound { /* a connection the relay dialed for the board */
	uint64_t conn;
	el_id_t peer;
	bool proved;
};

struct el_relay_stats {
	uint64_t to_uart, from_uart;       /* Raft messages relayed each way */
	uint64_t uart_dropped;             /* to the UART: no room in its buffer */
	uint64_t refused;                  /* messages or connections refused */
	uint64_t uart_connects;
};

struct el_relay {
	el_id_t id;                /* the board's node id */
	uint64_t cluster;          /* el_peer_digest of the cluster name */
	const char *peer_addr;     /* where peers dial the board (our listener) */
	const char *uart;          /* unix:PATH, tcp:HOST:PORT, or a tty device */
	int n_peers;               /* the nodes the relay dials for the board */
	el_id_t peer_id[EL_RELAY_PEERS_MAX];
	const char *peer_dial[EL_RELAY_PEERS_MAX];
	struct el_ident *ident;
	struct el_net *net;
	struct el_relay_inbound in[EL_RELAY_INBOUND_MAX];
	struct el_relay_outbound out[EL_RELAY_PEERS_MAX];
	int uart_fd;               /* -1: not connected */
	int uart_errno;            /* the last open's failure said (0: none yet) */
	uint64_t uart_said_ms;     /* when it was said: again once a minute */
	struct el_bm_deframer rx;
	uint8_t rx_buf[EL_WIRE_MSG_MAX];
	uint8_t tx[EL_RELAY_UART_OUT_MAX];
	uint32_t tx_len;
	struct el_entry entries[EL_MSG_ENTRIES_MAX]; /* for checking a message */
	struct el_relay_stats st;
};

/* peers.c: the peer network's items (handshakes, Raft frames to the board). */
void el_relay_net_item(struct el_relay *r, const struct el_net_item *it);
/* The board's line came up (dial its peers) or went down (drop them all). */
void el_relay_board_up(struct el_relay *r, bool up);
/* A frame the board sent: check it and hand it to its peer. */
void el_relay_from_board(struct el_relay *r, const uint8_t *msg, uint32_t len);

/* serial.c: the board's UART. */
void el_relay_uart_connect(struct el_relay *r);
/* Read what the UART has: every good frame goes to el_relay_from_board.
 * False when the line closed (the caller reconnects later). */
bool el_relay_uart_read(struct el_relay *r);
/* Queue one frame to the board (dropped and counted when there is no room). */
void el_relay_uart_send(struct el_relay *r, const uint8_t *msg, uint32_t len);
/* Write what is queued, as far as the line takes it. */
void el_relay_uart_flush(struct el_relay *r);
/* why: "closed" (the line went down, it is retried) or "stopping". */
void el_relay_uart_close(struct el_relay *r, const char *why);

#endif /* EL_RELAY_H */
