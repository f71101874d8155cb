/*
 * el_bm_frame.h - one message per frame over a byte stream that can lose or
 * corrupt bytes (a UART): SLIP framing (RFC 1055) around the message and its
 * CRC-32 (IEEE 802.3, the zlib one). The firmware's UART link and the
 * gateway's relay (cmd/edgelock-uart-relay) both use it, so it is
 * freestanding: no allocation, no C library.
 *
 * On the wire: END, the message and then its CRC-32 (little-endian), every
 * END and ESC byte among them escaped, END. Two ENDs in a row are an empty
 * frame and ignored, so a sender starts each frame with END: whatever noise
 * came before ends there instead of spoiling the frame.
 *
 * The decoder takes one byte at a time and writes the message straight into
 * the caller's buffer, which needs no room for the CRC (the last four bytes
 * wait in a four-byte delay line): on the firmware the link's one frame
 * buffer is the decoder's buffer. A frame that is too long, ends inside an
 * escape, has an unknown escape, is shorter than its CRC or fails the CRC is
 * dropped and counted by its reason; it never reaches the caller.
 */
#ifndef EL_BM_FRAME_H
#define EL_BM_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#define EL_BM_SLIP_END 0xC0u
#define EL_BM_SLIP_ESC 0xDBu
#define EL_BM_SLIP_ESC_END 0xDCu
#define EL_BM_SLIP_ESC_ESC 0xDDu
#define EL_BM_FRAME_CRC_LEN 4u
/* Bytes on the wire of a len-byte message, at worst (every byte escaped). */
#define EL_BM_FRAME_WIRE_MAX(len) (2u + 2u * ((len) + EL_BM_FRAME_CRC_LEN))

/* CRC-32 of n bytes, continuing from crc (start with 0). */
uint32_t el_bm_crc32(uint32_t crc, const uint8_t *p, uint32_t n);

/* Encode one frame of msg, handing each wire byte to put(ctx, byte). */
void el_bm_frame_put(const uint8_t *msg, uint32_t len, void (*put)(void *ctx, uint8_t b),
		     void *ctx);

/* Why frames were dropped. */
struct el_bm_frame_stats {
	uint32_t frames;    /* good frames handed out */
	uint32_t bad_crc;   /* the CRC did not match */
	uint32_t too_long;  /* more message bytes than the buffer holds */
	uint32_t bad_escape; /* ESC followed by anything but ESC_END / ESC_ESC */
	uint32_t too_short; /* fewer bytes than a CRC */
	uint32_t cut;       /* abandoned mid-frame (el_bm_deframer_reset) */
};

struct el_bm_deframer {
	uint8_t *buf;
	uint32_t cap;
	uint32_t n;     /* bytes of the frame so far, CRC included */
	uint32_t crc;   /* CRC register over the bytes that left the delay line */
	uint8_t tail[EL_BM_FRAME_CRC_LEN]; /* the last four bytes, a ring */
	bool esc;       /* the previous byte was ESC */
	uint8_t bad;    /* 0, or the reason this frame will be dropped */
	struct el_bm_frame_stats st;
};

void el_bm_deframer_init(struct el_bm_deframer *d, uint8_t *buf, uint32_t cap);
/* Feed one byte: the message length when it ends a good frame (the message
 * is then in buf, valid until the next byte), else 0. */
uint32_t el_bm_deframer_feed(struct el_bm_deframer *d, uint8_t b);
/* Forget a frame in progress (the line went quiet mid-frame); counted as
 * cut when bytes of one had arrived. */
void el_bm_deframer_reset(struct el_bm_deframer *d);
/* True while a frame is in progress (bytes since the last END). */
bool el_bm_deframer_busy(const struct el_bm_deframer *d);

#endif /* EL_BM_FRAME_H */
