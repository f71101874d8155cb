/*
 * el_bm_link.c - message framing over the board's byte link (el_bm_link.h),
 * and the weak driver hooks of a board without one.
 */
#include "el_bm_link.h"
#include "el_error.h"

/* Bounded: a flood of bad frames cannot keep the caller here. */
#define FRAMES_PER_POLL 8

__attribute__((weak)) _Bool el_board_link_send(const uint8_t *frame, uint32_t len)
{
	(void)frame, (void)len;
	return 0;
}

__attribute__((weak)) uint32_t el_board_link_recv(uint8_t *buf, uint32_t cap)
{
	(void)buf, (void)cap;
	return 0;
}

int el_bm_link_send(struct el_bm_link *l, const struct el_msg *m)
{
	int n = el_wire_encode_msg(m, l->frame, sizeof l->frame);
	if (n < 0)
		return n;
	if (el_board_link_send(l->frame, (uint32_t)n))
		l->sent++;
	return EL_OK;
}

const struct el_msg *el_bm_link_poll(struct el_bm_link *l)
{
	for (int k = 0; k < FRAMES_PER_POLL; k++) {
		uint32_t n = el_board_link_recv(l->frame, sizeof l->frame);
		if (n == 0 || n > sizeof l->frame)
			return 0;
		if (el_wire_decode_msg(l->frame, n, &l->rx, l->entries) == EL_OK) {
			l->received++;
			return &l->rx;
		}
		l->refused++;
	}
	return 0;
}
