/*
 * fuzz_uart_frame.c - libFuzzer target for the UART link's frame decoder
 * (port/baremetal/el_bm_frame.c), fed any bytes a serial line could carry.
 *
 * Checked on every input: a frame handed out fits the buffer and carries a
 * correct CRC (encoding it again and decoding that gives the same bytes);
 * every END-delimited frame is either handed out or counted under exactly
 * one drop reason; and the input itself, sent as a message, comes back
 * whole (or is counted too long when it does not fit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_bm_frame.h"

#define CAP 96u

static uint8_t buf[CAP], again[CAP];
static uint8_t wire[EL_BM_FRAME_WIRE_MAX(1024)];
static uint32_t wire_n;

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_uart_frame: %s\n", what);
	abort();
}

static void put(void *ctx, uint8_t b)
{
	(void)ctx;
	if (wire_n >= sizeof wire)
		bug("encoder wrote past its stated bound");
	wire[wire_n++] = b;
}

static uint32_t drops(const struct el_bm_frame_stats *s)
{
	return s->bad_crc + s->too_long + s->bad_escape + s->too_short;
}

/* A frame handed out must survive another trip through the codec. */
static void check_frame(uint32_t n)
{
	struct el_bm_deframer d;
	uint32_t got = 0;
	if (n > CAP)
		bug("frame longer than the buffer");
	wire_n = 0;
	el_bm_frame_put(buf, n, put, NULL);
	el_bm_deframer_init(&d, again, CAP);
	for (uint32_t i = 0; i < wire_n; i++)
		got = el_bm_deframer_feed(&d, wire[i]) > 0 ? d.st.frames : got;
	if (got != 1 || memcmp(again, buf, n) != 0)
		bug("a frame handed out does not round-trip");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct el_bm_deframer d;
	uint32_t nonempty_before = 0;
	if (size > 1024) /* a few frames of CAP bytes: longer adds nothing but time */
		return 0;
	el_bm_deframer_init(&d, buf, CAP);
	for (size_t i = 0; i < size; i++) {
		const bool busy = el_bm_deframer_busy(&d);
		uint32_t n = el_bm_deframer_feed(&d, data[i]);
		if (data[i] == EL_BM_SLIP_END && busy)
			nonempty_before++;
		if (n > 0)
			check_frame(n);
	}
	if (d.st.frames + drops(&d.st) != nonempty_before)
		bug("a frame was neither handed out nor counted as dropped");
	/* the input as a message */
	wire_n = 0;
	el_bm_frame_put(data, (uint32_t)size, put, NULL);
	el_bm_deframer_init(&d, buf, CAP);
	uint32_t got = 0;
	for (uint32_t i = 0; i < wire_n; i++) {
		uint32_t n = el_bm_deframer_feed(&d, wire[i]);
		got = n > 0 ? n : got;
	}
	if (size > 0 && size <= CAP && (got != size || memcmp(buf, data, size) != 0))
		bug("a message that fits did not come back whole");
	if (size > CAP && (got != 0 || d.st.too_long != 1))
		bug("a message too long was not counted as such");
	return 0;
}
