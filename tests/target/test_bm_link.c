/*
 * test_bm_link.c - port/baremetal's message framing over a loopback link
 * (this file defines the board's link driver hooks): a message with entries
 * comes back equal, a damaged frame is counted and skipped, never trusted.
 */
#include <string.h>

#include "el_bm_link.h"
#include "el_error.h"
#include "el_test.h"

static uint8_t wire[EL_WIRE_MSG_MAX];
static uint32_t wire_len;
static struct el_bm_link link;

/* The loopback driver: one frame in flight. */
_Bool el_board_link_send(const uint8_t *frame, uint32_t len)
{
	if (len > sizeof wire)
		return 0;
	memcpy(wire, frame, len);
	wire_len = len;
	return 1;
}

uint32_t el_board_link_recv(uint8_t *buf, uint32_t cap)
{
	uint32_t n = wire_len <= cap ? wire_len : 0;
	memcpy(buf, wire, n);
	wire_len = 0;
	return n;
}

static struct el_entry entries[2];

static struct el_msg append_msg(void)
{
	for (uint64_t i = 0; i < 2; i++) {
		entries[i] = (struct el_entry){ .term = 3, .index = 11 + i, .type = EL_ENTRY_NORMAL };
		entries[i].len = 5;
		memcpy(entries[i].data, "lock!", 5);
	}
	return (struct el_msg){ .type = EL_MSG_APPEND, .from = 1, .to = 2, .term = 3, .index = 10,
				.log_term = 3, .commit = 9, .n_entries = 2, .entries = entries };
}

static void test_message_round_trip(void)
{
	memset(&link, 0, sizeof link);
	struct el_msg m = append_msg();
	EL_CHECK_EQ(el_bm_link_send(&link, &m), EL_OK);
	EL_CHECK_EQ(link.sent, 1);
	const struct el_msg *got = el_bm_link_poll(&link);
	EL_CHECK(got != NULL);
	EL_CHECK_EQ(got->type, EL_MSG_APPEND);
	EL_CHECK_EQ(got->term, 3);
	EL_CHECK_EQ(got->commit, 9);
	EL_CHECK_EQ(got->n_entries, 2);
	EL_CHECK_EQ(got->entries[1].index, 12);
	EL_CHECK(memcmp(got->entries[1].data, "lock!", 5) == 0);
	EL_CHECK(el_bm_link_poll(&link) == NULL); /* nothing more waits */
}

static void test_damaged_frame_is_refused(void)
{
	memset(&link, 0, sizeof link);
	struct el_msg m = append_msg();
	EL_CHECK_EQ(el_bm_link_send(&link, &m), EL_OK);
	wire[0] ^= 0xFFu; /* no longer a CBOR map */
	EL_CHECK(el_bm_link_poll(&link) == NULL);
	EL_CHECK_EQ(link.refused, 1);
	EL_CHECK_EQ(link.received, 0);
}

void el_suite_bm_link(void)
{
	EL_RUN(test_message_round_trip);
	EL_RUN(test_damaged_frame_is_refused);
}
