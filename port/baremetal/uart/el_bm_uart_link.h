/*
 * el_bm_uart_link.h - the board link of el_bm_link.h over a UART: each
 * message a SLIP frame with a CRC-32 (el_bm_frame.h). Linking
 * el_bm_uart_link.c into an image replaces el_bm_link's weak hooks
 * (el_board_link_send / el_board_link_recv) with these.
 *
 * Receive: when a byte waits, the hook reads the rest of its frame before it
 * returns (waiting at most EL_BM_UART_GAP_MS for each next byte: a sender
 * writes a frame at once), decoding straight into the link's one frame
 * buffer, so the link needs no second buffer. A frame cut off by a silent
 * line is dropped and counted, like a corrupt one: a frame is delivered
 * whole and checked, or not at all.
 */
#ifndef EL_BM_UART_LINK_H
#define EL_BM_UART_LINK_H

#include <stdint.h>

#include "el_bm_frame.h"

#ifndef EL_BM_UART_GAP_MS
#define EL_BM_UART_GAP_MS 20u
#endif

/* Use the UART at base (el_bm_cmsdk_uart.h) with baud divisor bauddiv. */
void el_bm_uart_link_init(uintptr_t base, uint32_t bauddiv);
/* Frames received and dropped, by reason. */
const struct el_bm_frame_stats *el_bm_uart_link_stats(void);

#endif /* EL_BM_UART_LINK_H */
