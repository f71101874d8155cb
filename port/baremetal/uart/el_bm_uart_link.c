/*
 * el_bm_uart_link.c - el_bm_link's board hooks over a polled UART with SLIP
 * + CRC-32 framing (el_bm_uart_link.h).
 */
#include "el_bm_uart_link.h"

#include <stdbool.h>

#include "el_bm_clock.h"
#include "el_bm_cmsdk_uart.h"
#include "el_bm_link.h"

static uintptr_t uart;
static struct el_bm_deframer rx;

void el_bm_uart_link_init(uintptr_t base, uint32_t bauddiv)
{
	uart = base;
	el_bm_deframer_init(&rx, 0, 0);
	el_bm_uart_init(base, bauddiv);
}

const struct el_bm_frame_stats *el_bm_uart_link_stats(void)
{
	return &rx.st;
}

static void put(void *ctx, uint8_t b)
{
	(void)ctx;
	el_bm_uart_putc(uart, b);
}

_Bool el_board_link_send(const uint8_t *frame, uint32_t len)
{
	el_bm_frame_put(frame, len, put, 0);
	return 1;
}

/* The next byte of a frame in progress, waiting at most the gap for it. */
static bool next_byte(uint8_t *b)
{
	const uint64_t until = el_bm_now_ms() + EL_BM_UART_GAP_MS;
	while (!el_bm_uart_getc(uart, b))
		if (el_bm_now_ms() > until)
			return false;
	return true;
}

uint32_t el_board_link_recv(uint8_t *buf, uint32_t cap)
{
	uint8_t b;
	/* Bounded: a stream of garbage cannot keep the node here; a good
	 * frame is never longer than this on the wire. */
	uint32_t budget = EL_BM_FRAME_WIRE_MAX(EL_BM_FRAME_MAX);
	if (!el_bm_uart_getc(uart, &b))
		return 0;
	rx.buf = buf; /* the link's frame buffer, whole frames only */
	rx.cap = cap;
	for (;;) {
		const uint32_t n = el_bm_deframer_feed(&rx, b);
		if (n > 0)
			return n;
		if (budget-- == 0)
			break;
		/* inside a frame wait for its next byte; between frames only
		 * take one that is already there */
		if (el_bm_deframer_busy(&rx) ? !next_byte(&b) : !el_bm_uart_getc(uart, &b))
			break;
	}
	/* Never leave a half frame behind: the buffer is the sender's next. */
	el_bm_deframer_reset(&rx);
	return 0;
}
