/*
 * el_bm_link.h - Raft messages over a board's byte link (UART, Ethernet
 * frame, radio packet): each message travels as one frame holding its CBOR
 * encoding (core/el_wire.h), the very bytes a Linux node speaks. The link
 * driver is the board's: it overrides the two weak hooks below (the defaults
 * are a link to nothing). Frames are bounded by EL_BM_FRAME_MAX.
 *
 * The driver must hand over only frames that arrived intact: the encoding
 * has no checksum, and a corrupted frame that still decodes is stepped as
 * sent (replicas then diverge). Use el_bm_frame.h (SLIP + CRC-32) on a
 * UART or radio, or a link layer that checks its own CRC.
 *
 * RAM: one frame buffer serves both directions (a received message is
 * stepped into the node, and dead, before the node's next batch is encoded),
 * sized for the widest message the codec can produce for this config.
 */
#ifndef EL_BM_LINK_H
#define EL_BM_LINK_H

#include <stdint.h>

#include "el_cbor.h"
#include "el_raft.h"
#include "el_wire.h"

/* The widest frame. EL_WIRE_MSG_MAX (core/el_wire.h) adds up every field of
 * every message type, entries and a snapshot chunk together; but the codec
 * refuses entries outside an APPEND and a chunk or configuration outside a
 * SNAPSHOT, so no frame carries both payloads, and the smaller of the two can
 * come off. On the small config: 577 bytes instead of 1,000.
 * tests/target/test_bm_link.c encodes the widest APPEND and the widest
 * SNAPSHOT and checks both fit; a frame that did not would be refused by the
 * encoder (EL_EFULL), never overrun. */
#define EL_BM_WIRE_ENTRIES_PART                                              \
	(EL_CBOR_HEAD_SIZE(EL_MSG_ENTRIES_MAX) + EL_MSG_ENTRIES_MAX * EL_WIRE_ENTRY_MAX)
#define EL_BM_WIRE_SNAPSHOT_PART                                             \
	(EL_CBOR_HEAD_SIZE(EL_SNAPSHOT_CHUNK) + EL_SNAPSHOT_CHUNK +          \
	 EL_CBOR_HEAD_SIZE(EL_NODES_MAX) + EL_NODES_MAX * (1 + 5 + 1))
#define EL_BM_FRAME_MAX                                                      \
	(EL_WIRE_MSG_MAX - (EL_BM_WIRE_ENTRIES_PART < EL_BM_WIRE_SNAPSHOT_PART \
				    ? EL_BM_WIRE_ENTRIES_PART : EL_BM_WIRE_SNAPSHOT_PART))
_Static_assert(EL_BM_FRAME_MAX <= EL_WIRE_MSG_MAX, "a frame never exceeds the codec's bound");

struct el_bm_link {
	uint32_t sent;
	uint32_t received;
	uint32_t refused;  /* frames that did not decode (counted, dropped) */
	uint8_t frame[EL_BM_FRAME_MAX];            /* one frame, either way */
	struct el_entry entries[EL_MSG_ENTRIES_MAX]; /* of the message received */
	struct el_msg rx;
};

/* Board driver hooks. Send one frame (copy it; false when it could not go:
 * the message is dropped, Raft retries). Receive: copy the next frame into
 * buf and return its length, or 0 when none waits. */
_Bool el_board_link_send(const uint8_t *frame, uint32_t len);
uint32_t el_board_link_recv(uint8_t *buf, uint32_t cap);

/* Encode m and hand it to the driver; EL_EINVAL/EL_EFULL from the codec. */
int el_bm_link_send(struct el_bm_link *l, const struct el_msg *m);
/* The next well-formed message received, or NULL; valid until the next call.
 * Malformed frames are counted and skipped (bad input is never an assert). */
const struct el_msg *el_bm_link_poll(struct el_bm_link *l);

#endif /* EL_BM_LINK_H */
