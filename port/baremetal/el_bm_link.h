/*
 * el_bm_link.h - Raft messages over a board's byte link (UART, Ethernet
 * frame, radio packet): each message travels as one frame holding its CBOR
 * encoding (core/el_wire.h), the very bytes a Linux node speaks. The link
 * driver is the board's: it overrides the two weak hooks below (the defaults
 * are a link to nothing). Frames are bounded by EL_WIRE_MSG_MAX.
 */
#ifndef EL_BM_LINK_H
#define EL_BM_LINK_H

#include <stdint.h>

#include "el_raft.h"
#include "el_wire.h"

struct el_bm_link {
	uint32_t sent;
	uint32_t received;
	uint32_t refused;  /* frames that did not decode (counted, dropped) */
	uint8_t frame[EL_WIRE_MSG_MAX];            /* one frame, either way */
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
