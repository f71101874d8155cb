/*
 * test_bm_link.c - port/baremetal's message framing over a loopback link
 * (this file defines the board's link driver hooks): a message with entries
 * comes back equal, a damaged frame is counted and skipped, never trusted,
 * and the widest APPEND and SNAPSHOT the codec can write for this config fit
 * the link's one frame buffer (EL_BM_FRAME_MAX, which is below the codec's
 * EL_WIRE_MSG_MAX: see el_bm_link.h).
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

/* Every scalar at its widest CBOR head (9 bytes for 64 bits, 5 for 32). */
static struct el_msg widest(uint8_t type)
{
	return (struct el_msg){ .type = type, .flags = EL_MSG_REJECT | EL_MSG_FORCE,
				.from = UINT32_MAX, .to = UINT32_MAX - 1u, .term = UINT64_MAX,
				.index = UINT64_MAX - 1u, .log_term = UINT64_MAX - 2u,
				.commit = UINT64_MAX - 3u, .ctx = UINT64_MAX - 4u,
				.hint_index = UINT64_MAX - 5u, .hint_term = UINT64_MAX - 6u,
				.offset = UINT32_MAX, .total = UINT32_MAX - 1u };
}

static struct el_entry full_entries[EL_MSG_ENTRIES_MAX];
static uint8_t chunk[EL_SNAPSHOT_CHUNK];

/* Send m over the loopback and read it back; *len is the frame's length. */
static void through_link(const struct el_msg *m, uint32_t *len)
{
	memset(&link, 0, sizeof link);
	*len = UINT32_MAX;
	EL_CHECK_EQ(el_bm_link_send(&link, m), EL_OK);
	EL_CHECK_EQ(link.sent, 1);
	*len = wire_len;
	const struct el_msg *got = el_bm_link_poll(&link);
	EL_CHECK(got != NULL);
	EL_CHECK_EQ(got->type, m->type);
	EL_CHECK_EQ(got->n_entries, m->n_entries);
	EL_CHECK_EQ(got->data_len, m->data_len);
	EL_CHECK_EQ(got->conf.n, m->conf.n);
}

static void test_widest_messages_fit_the_frame(void)
{
	struct el_msg a = widest(EL_MSG_APPEND);
	for (uint32_t i = 0; i < EL_MSG_ENTRIES_MAX; i++) {
		full_entries[i] = (struct el_entry){ .term = UINT64_MAX,
			.index = UINT64_MAX - EL_MSG_ENTRIES_MAX + i, .type = EL_ENTRY_CONF,
			.len = EL_ENTRY_DATA_MAX };
		memset(full_entries[i].data, 0xEE, EL_ENTRY_DATA_MAX);
	}
	a.n_entries = EL_MSG_ENTRIES_MAX;
	a.entries = full_entries;

	struct el_msg s = widest(EL_MSG_SNAPSHOT);
	memset(chunk, 0x5A, sizeof chunk);
	s.data_len = EL_SNAPSHOT_CHUNK;
	s.data = chunk;
	s.conf.n = EL_NODES_MAX;
	for (uint8_t i = 0; i < EL_NODES_MAX; i++)
		s.conf.m[i] = (struct el_member){ .id = UINT32_MAX - i, .role = EL_MEMBER_CATCHING_UP };

	uint32_t na, ns;
	through_link(&a, &na);
	through_link(&s, &ns);
	uint32_t wider = na > ns ? na : ns;
	EL_CHECK(wider <= EL_BM_FRAME_MAX);
	/* and the bound is tight: only the keys the wider one leaves out (2) */
	EL_CHECK(EL_BM_FRAME_MAX - wider <= 2u);
}

void el_suite_bm_link(void)
{
	EL_RUN(test_message_round_trip);
	EL_RUN(test_damaged_frame_is_refused);
	EL_RUN(test_widest_messages_fit_the_frame);
}
