/*
 * el_bm_frame.c - SLIP + CRC-32 framing (el_bm_frame.h). The CRC is computed
 * bit by bit (no 1 KiB table): a few dozen bytes of code, and fast enough
 * for a UART's byte rate.
 */
#include "el_bm_frame.h"

enum { BAD_NONE = 0, BAD_LONG = 1, BAD_ESCAPE = 2 };

/* One byte into the CRC register (reflected polynomial 0xEDB88320). */
static uint32_t crc_byte(uint32_t reg, uint8_t b)
{
	reg ^= b;
	for (int k = 0; k < 8; k++)
		reg = (reg >> 1) ^ (0xEDB88320u & (0u - (reg & 1u)));
	return reg;
}

uint32_t el_bm_crc32(uint32_t crc, const uint8_t *p, uint32_t n)
{
	uint32_t reg = ~crc;
	for (uint32_t i = 0; i < n; i++)
		reg = crc_byte(reg, p[i]);
	return ~reg;
}

static void put_escaped(uint8_t b, void (*put)(void *ctx, uint8_t b), void *ctx)
{
	if (b == EL_BM_SLIP_END) {
		put(ctx, EL_BM_SLIP_ESC);
		put(ctx, EL_BM_SLIP_ESC_END);
	} else if (b == EL_BM_SLIP_ESC) {
		put(ctx, EL_BM_SLIP_ESC);
		put(ctx, EL_BM_SLIP_ESC_ESC);
	} else {
		put(ctx, b);
	}
}

void el_bm_frame_put(const uint8_t *msg, uint32_t len, void (*put)(void *ctx, uint8_t b),
		     void *ctx)
{
	uint32_t crc = el_bm_crc32(0, msg, len);
	put(ctx, EL_BM_SLIP_END);
	for (uint32_t i = 0; i < len; i++)
		put_escaped(msg[i], put, ctx);
	for (uint32_t i = 0; i < EL_BM_FRAME_CRC_LEN; i++)
		put_escaped((uint8_t)(crc >> (8 * i)), put, ctx);
	put(ctx, EL_BM_SLIP_END);
}

static void start(struct el_bm_deframer *d)
{
	d->n = 0;
	d->crc = 0xFFFFFFFFu; /* the CRC register, inverted at the end */
	d->esc = false;
	d->bad = BAD_NONE;
}

void el_bm_deframer_init(struct el_bm_deframer *d, uint8_t *buf, uint32_t cap)
{
	*d = (struct el_bm_deframer){ .buf = buf, .cap = cap };
	start(d);
}

bool el_bm_deframer_busy(const struct el_bm_deframer *d)
{
	return d->n > 0 || d->esc || d->bad != BAD_NONE;
}

void el_bm_deframer_reset(struct el_bm_deframer *d)
{
	if (el_bm_deframer_busy(d))
		d->st.cut++;
	start(d);
}

/* A frame's END: check what arrived, count a drop, hand out a good one. */
static uint32_t finish(struct el_bm_deframer *d)
{
	const uint32_t n = d->n, reg = d->crc;
	const uint8_t bad = d->esc ? (uint8_t)BAD_ESCAPE : d->bad;
	start(d); /* the tail ring stays as it was until the next byte */
	if (n == 0 && bad == BAD_NONE)
		return 0; /* an empty frame: the END that opens the next one */
	if (bad == BAD_LONG) {
		d->st.too_long++;
		return 0;
	}
	if (bad == BAD_ESCAPE) {
		d->st.bad_escape++;
		return 0;
	}
	if (n <= EL_BM_FRAME_CRC_LEN) {
		d->st.too_short++;
		return 0;
	}
	uint32_t want = 0;
	for (uint32_t i = 0; i < EL_BM_FRAME_CRC_LEN; i++) /* oldest byte first */
		want |= (uint32_t)d->tail[(n + i) % EL_BM_FRAME_CRC_LEN] << (8 * i);
	if (want != ~reg) {
		d->st.bad_crc++;
		return 0;
	}
	d->st.frames++;
	return n - EL_BM_FRAME_CRC_LEN;
}

/* One unescaped byte of the frame: into the delay line; the byte it pushes
 * out goes to the buffer and the CRC. */
static void take(struct el_bm_deframer *d, uint8_t b)
{
	uint8_t *slot = &d->tail[d->n % EL_BM_FRAME_CRC_LEN];
	if (d->n >= EL_BM_FRAME_CRC_LEN) {
		const uint32_t at = d->n - EL_BM_FRAME_CRC_LEN;
		if (at >= d->cap) {
			d->bad = BAD_LONG;
			return; /* keep n: the frame is dropped at its END */
		}
		d->buf[at] = *slot;
		d->crc = crc_byte(d->crc, *slot);
	}
	*slot = b;
	d->n++;
}

uint32_t el_bm_deframer_feed(struct el_bm_deframer *d, uint8_t b)
{
	if (b == EL_BM_SLIP_END)
		return finish(d);
	if (d->bad != BAD_NONE)
		return 0; /* skip to the END */
	if (d->esc) {
		d->esc = false;
		if (b == EL_BM_SLIP_ESC_END)
			take(d, EL_BM_SLIP_END);
		else if (b == EL_BM_SLIP_ESC_ESC)
			take(d, EL_BM_SLIP_ESC);
		else
			d->bad = BAD_ESCAPE;
		return 0;
	}
	if (b == EL_BM_SLIP_ESC)
		d->esc = true;
	else
		take(d, b);
	return 0;
}
