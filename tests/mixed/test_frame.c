/*
 * test_frame.c - host unit tests of the UART link's framing
 * (port/baremetal/el_bm_frame.c): round trips through every escape, the
 * CRC's check value, and every way a frame is dropped and counted (a flipped
 * bit anywhere, too long, a bad escape, too short, cut off) without losing
 * the good frame that follows.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "el_bm_frame.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

struct wire {
	uint8_t b[4096];
	uint32_t n;
};

static void put(void *ctx, uint8_t b)
{
	struct wire *w = ctx;
	if (w->n < sizeof w->b)
		w->b[w->n++] = b;
}

/* Feed w into d; the number of good frames, the last one's length in *len. */
static int feed_all(struct el_bm_deframer *d, const struct wire *w, uint32_t *len)
{
	int frames = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		uint32_t n = el_bm_deframer_feed(d, w->b[i]);
		if (n > 0) {
			frames++;
			*len = n;
		}
	}
	return frames;
}

static void test_crc_check_value(void)
{
	EL_CHECK_EQ(el_bm_crc32(0, (const uint8_t *)"123456789", 9), 0xCBF43926u);
	/* in two pieces, the same */
	EL_CHECK_EQ(el_bm_crc32(el_bm_crc32(0, (const uint8_t *)"1234", 4),
				(const uint8_t *)"56789", 5), 0xCBF43926u);
}

static void test_round_trip_every_byte_value(void)
{
	uint8_t msg[300], buf[300];
	for (uint32_t i = 0; i < sizeof msg; i++)
		msg[i] = (uint8_t)(i * 7u + 3u); /* END and ESC among them */
	for (uint32_t len = 1; len <= sizeof msg; len += 37) {
		struct wire w = {0};
		struct el_bm_deframer d;
		uint32_t got = 0;
		el_bm_deframer_init(&d, buf, len);
		el_bm_frame_put(msg, len, put, &w);
		EL_CHECK(w.n <= EL_BM_FRAME_WIRE_MAX(len));
		EL_CHECK_EQ(feed_all(&d, &w, &got), 1);
		EL_CHECK_EQ(got, len);
		EL_CHECK(memcmp(buf, msg, len) == 0);
		EL_CHECK(!el_bm_deframer_busy(&d));
	}
}

static void test_only_end_and_esc_bytes(void)
{
	const uint8_t msg[] = { 0xC0, 0xDB, 0xC0, 0xC0, 0xDB, 0xDC, 0xDD };
	uint8_t buf[sizeof msg];
	struct wire w = {0};
	struct el_bm_deframer d;
	uint32_t got = 0;
	el_bm_deframer_init(&d, buf, sizeof buf);
	el_bm_frame_put(msg, sizeof msg, put, &w);
	for (uint32_t i = 1; i + 1 < w.n; i++)
		EL_CHECK(w.b[i] != EL_BM_SLIP_END); /* no END inside a frame */
	EL_CHECK_EQ(feed_all(&d, &w, &got), 1);
	EL_CHECK_EQ(got, sizeof msg);
	EL_CHECK(memcmp(buf, msg, sizeof msg) == 0);
}

/* Every single flipped bit of a frame's inside is caught: no frame out, a
 * drop counted, and the next good frame still gets through. */
static void test_any_flipped_bit_is_dropped(void)
{
	const uint8_t msg[] = "a Raft message, CBOR in real life \xC0\xDB";
	uint8_t buf[64];
	struct wire good = {0};
	el_bm_frame_put(msg, sizeof msg, put, &good);
	for (uint32_t i = 1; i + 1 < good.n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			struct wire w = good;
			struct el_bm_deframer d;
			uint32_t got = 0;
			w.b[i] ^= (uint8_t)(1u << bit);
			el_bm_deframer_init(&d, buf, sizeof buf);
			int frames = feed_all(&d, &w, &got);
			const struct el_bm_frame_stats *s = &d.st;
			/* a flip that makes an END splits the frame: two bad parts */
			EL_CHECK_EQ(frames, 0);
			EL_CHECK(s->bad_crc + s->bad_escape + s->too_short >= 1);
			EL_CHECK_EQ(feed_all(&d, &good, &got), 1);
			EL_CHECK_EQ(got, sizeof msg);
		}
	}
}

static void test_too_long_dropped_then_next_fits(void)
{
	uint8_t msg[40] = "one byte longer than the buffer holds!!";
	uint8_t buf[39];
	struct wire w = {0};
	struct el_bm_deframer d;
	uint32_t got = 0;
	el_bm_deframer_init(&d, buf, sizeof buf);
	el_bm_frame_put(msg, 40, put, &w);
	el_bm_frame_put(msg, 39, put, &w);
	EL_CHECK_EQ(feed_all(&d, &w, &got), 1);
	EL_CHECK_EQ(got, 39);
	EL_CHECK_EQ(d.st.too_long, 1);
	EL_CHECK_EQ(d.st.frames, 1);
}

static void test_bad_escape_short_and_noise(void)
{
	uint8_t buf[16];
	struct el_bm_deframer d;
	uint32_t got = 0;
	el_bm_deframer_init(&d, buf, sizeof buf);
	/* noise, ESC then a plain byte, a 3-byte frame, END after ESC */
	struct wire w = { .b = { 'x', 'y', 0xC0, 1, 0xDB, 2, 3, 4, 5, 6, 0xC0, 1, 2, 3, 0xC0,
				 0xC0, 1, 2, 3, 4, 5, 0xDB, 0xC0 }, .n = 23 };
	EL_CHECK_EQ(feed_all(&d, &w, &got), 0);
	EL_CHECK_EQ(d.st.too_short, 2);  /* the noise before the first END, 1 2 3 */
	EL_CHECK_EQ(d.st.bad_escape, 2);
	EL_CHECK_EQ(d.st.bad_crc, 0);
	EL_CHECK_EQ(d.st.frames, 0);
}

static void test_cut_frame_counted_and_forgotten(void)
{
	const uint8_t msg[] = "hello";
	uint8_t buf[16];
	struct wire w = {0};
	struct el_bm_deframer d;
	uint32_t got = 0;
	el_bm_deframer_init(&d, buf, sizeof buf);
	el_bm_frame_put(msg, sizeof msg, put, &w);
	for (uint32_t i = 0; i < 5; i++)
		EL_CHECK_EQ(el_bm_deframer_feed(&d, w.b[i]), 0);
	EL_CHECK(el_bm_deframer_busy(&d));
	el_bm_deframer_reset(&d);
	EL_CHECK_EQ(d.st.cut, 1);
	el_bm_deframer_reset(&d); /* nothing in progress: not counted again */
	EL_CHECK_EQ(d.st.cut, 1);
	EL_CHECK_EQ(feed_all(&d, &w, &got), 1);
	EL_CHECK_EQ(got, sizeof msg);
}

int main(void)
{
	EL_RUN(test_crc_check_value);
	EL_RUN(test_round_trip_every_byte_value);
	EL_RUN(test_only_end_and_esc_bytes);
	EL_RUN(test_any_flipped_bit_is_dropped);
	EL_RUN(test_too_long_dropped_then_next_fits);
	EL_RUN(test_bad_escape_short_and_noise);
	EL_RUN(test_cut_frame_counted_and_forgotten);
	return el_test_end();
}
