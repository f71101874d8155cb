/*
 * test_wire.c - unit tests of the Raft message wire codec (core/wire.c):
 * round trips of every message type at full size, the pinned byte layout,
 * determinism, every decoding limit and rule, encoding refusals, and
 * truncated or bit-flipped input, which must either fail cleanly or decode
 * to a valid message that re-encodes to exactly those bytes.
 *
 * Runs on the host and on a Cortex-M under QEMU: no malloc, no files, big
 * buffers are static.
 */
#include <stdint.h>
#include <string.h>

#include "el_cbor.h"
#include "el_error.h"
#include "el_test.h"
#include "el_wire.h"

static struct el_entry tx_entries[EL_MSG_ENTRIES_MAX + 1];
static struct el_entry rx_entries[EL_MSG_ENTRIES_MAX];
static uint8_t chunk[EL_SNAPSHOT_CHUNK + 1];
/* room for one entry too many, to build inputs over the limits */
static uint8_t wbuf[EL_WIRE_MSG_MAX + EL_WIRE_ENTRY_MAX + 64];
static uint8_t wbuf2[EL_WIRE_MSG_MAX + 64];
static struct el_msg tx, rx;

/* Fill n entries from first_index with len bytes of data each. */
static void fill_entries(uint32_t n, uint64_t first_index, uint16_t len)
{
	uint32_t i, k;

	for (i = 0; i < n; i++) {
		tx_entries[i].term = 0xfffffffff0ull + i / 4;
		tx_entries[i].index = first_index + i;
		tx_entries[i].type = (uint8_t)(i % 3);
		tx_entries[i].len = len;
		for (k = 0; k < len; k++)
			tx_entries[i].data[k] = (uint8_t)(i * 31 + k);
	}
}

/*
 * A message of the given type with every field it may carry set, at full
 * size (full = true: widest values, full batches, chunk and configuration)
 * or small.
 */
static void build_msg(uint8_t type, bool full)
{
	uint32_t i;

	memset(&tx, 0, sizeof(tx));
	tx.type = type;
	tx.flags = EL_MSG_REJECT | EL_MSG_FORCE;
	tx.from = full ? UINT32_MAX : 1;
	tx.to = full ? UINT32_MAX - 1 : 2;
	tx.term = full ? UINT64_MAX : 5;
	tx.index = full ? UINT64_MAX - 1 : 40;
	tx.log_term = full ? UINT64_MAX - 2 : 4;
	tx.commit = full ? UINT64_MAX - 3 : 39;
	tx.ctx = full ? UINT64_MAX - 4 : 77;
	tx.hint_index = full ? UINT64_MAX - 5 : 30;
	tx.hint_term = full ? UINT64_MAX - 6 : 3;
	tx.offset = full ? UINT32_MAX : 1024;
	tx.total = full ? UINT32_MAX - 1 : 4096;
	if (type == EL_MSG_APPEND) {
		tx.n_entries = full ? EL_MSG_ENTRIES_MAX : 3;
		fill_entries(tx.n_entries, full ? UINT64_MAX - EL_MSG_ENTRIES_MAX : 41,
			     full ? EL_ENTRY_DATA_MAX : 20);
		tx.entries = tx_entries;
	}
	if (type == EL_MSG_SNAPSHOT) {
		tx.data_len = full ? EL_SNAPSHOT_CHUNK : 40;
		for (i = 0; i < tx.data_len; i++)
			chunk[i] = (uint8_t)(i * 7 + 1);
		tx.data = chunk;
		tx.conf.n = full ? EL_NODES_MAX : 3;
		for (i = 0; i < tx.conf.n; i++) {
			tx.conf.m[i].id = full ? UINT32_MAX - i : i + 1;
			tx.conf.m[i].role = (uint8_t)(EL_MEMBER_VOTER + i % 3);
		}
	}
}

static bool entries_same(const struct el_msg *a, const struct el_msg *b)
{
	uint32_t i;

	for (i = 0; i < a->n_entries; i++) {
		const struct el_entry *x = &a->entries[i], *y = &b->entries[i];

		if (x->term != y->term || x->index != y->index || x->type != y->type ||
		    x->len != y->len || memcmp(x->data, y->data, x->len) != 0)
			return false;
	}
	return true;
}

static bool msg_same(const struct el_msg *a, const struct el_msg *b)
{
	return a->type == b->type && a->flags == b->flags && a->from == b->from &&
	       a->to == b->to && a->term == b->term && a->index == b->index &&
	       a->log_term == b->log_term && a->commit == b->commit && a->ctx == b->ctx &&
	       a->hint_index == b->hint_index && a->hint_term == b->hint_term &&
	       a->offset == b->offset && a->total == b->total &&
	       a->n_entries == b->n_entries && entries_same(a, b) &&
	       a->data_len == b->data_len &&
	       (a->data_len == 0 || memcmp(a->data, b->data, a->data_len) == 0) &&
	       a->conf.n == b->conf.n &&
	       memcmp(a->conf.m, b->conf.m, a->conf.n * sizeof(a->conf.m[0])) == 0;
}

static bool msg_zeroed(const struct el_msg *m)
{
	static const struct el_msg zero;

	return memcmp(m, &zero, sizeof(zero)) == 0;
}

/* ---- Round trips ---------------------------------------------------------- */

static void round_trip(uint8_t type, bool full)
{
	int n, n2;

	build_msg(type, full);
	n = el_wire_encode_msg(&tx, wbuf, sizeof(wbuf));
	EL_CHECK(n > 0);
	EL_CHECK(n <= (int)EL_WIRE_MSG_MAX);
	EL_CHECK_EQ(el_wire_decode_msg(wbuf, (uint32_t)n, &rx, rx_entries), 0);
	EL_CHECK(msg_same(&tx, &rx));
	if (rx.n_entries > 0)
		EL_CHECK(rx.entries == rx_entries);
	if (rx.data_len > 0)
		EL_CHECK(rx.data >= wbuf && rx.data + rx.data_len <= wbuf + n);
	/* same message, same bytes */
	n2 = el_wire_encode_msg(&rx, wbuf2, sizeof(wbuf2));
	EL_CHECK_EQ(n2, n);
	EL_CHECK(memcmp(wbuf, wbuf2, (uint32_t)n) == 0);
	/* exactly n bytes are needed */
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf2, (uint32_t)n - 1), EL_EFULL);
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf2, (uint32_t)n), n);
}

static void test_round_trip_every_type_full(void)
{
	uint8_t type;

	for (type = 1; type <= EL_MSG_TYPE_MAX; type++) {
		round_trip(type, true);
		if (el_test_current_failed)
			return;
	}
}

static void test_round_trip_every_type_small(void)
{
	uint8_t type;

	for (type = 1; type <= EL_MSG_TYPE_MAX; type++) {
		round_trip(type, false);
		if (el_test_current_failed)
			return;
	}
}

static void test_worst_case_size(void)
{
	int n;

	/* an APPEND with every field at its widest comes close to the bound */
	build_msg(EL_MSG_APPEND, true);
	n = el_wire_encode_msg(&tx, wbuf, sizeof(wbuf));
	EL_CHECK(n > 0);
	EL_CHECK(n <= (int)EL_WIRE_MSG_MAX);
	/* it lacks only the keys, chunk and configuration of a SNAPSHOT */
	EL_CHECK_EQ(n + 2 + EL_CBOR_HEAD_SIZE(EL_SNAPSHOT_CHUNK) + EL_SNAPSHOT_CHUNK +
			    EL_CBOR_HEAD_SIZE(EL_NODES_MAX) + EL_NODES_MAX * 7,
		    EL_WIRE_MSG_MAX);
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, (uint32_t)n - 1), EL_EFULL);
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, 0), EL_EFULL);
}

/* The byte layout is a wire format: pin it. */
static void test_pinned_bytes(void)
{
	static const uint8_t want[] = {
		0xa6,             /* map of 6 pairs */
		0x00, 0x01,       /* version 1 */
		0x01, 0x07,       /* type HEARTBEAT */
		0x03, 0x01,       /* from 1 */
		0x04, 0x18, 0x20, /* to 32 */
		0x05, 0x02,       /* term 2 */
		0x08, 0x19, 0x01, 0x00, /* commit 256 */
	};
	static const uint8_t want_append[] = {
		0xa4, 0x00, 0x01, 0x01, 0x01, 0x06, 0x09, /* v1, APPEND, index 9 */
		0x0e, 0x81,       /* entries: one */
		0x84, 0x02, 0x0a, 0x00, 0x42, 0xca, 0xfe, /* [term 2, index 10, NORMAL, h'cafe'] */
	};
	int n;

	memset(&tx, 0, sizeof(tx));
	tx.type = EL_MSG_HEARTBEAT;
	tx.from = 1;
	tx.to = 32;
	tx.term = 2;
	tx.commit = 256;
	n = el_wire_encode_msg(&tx, wbuf, sizeof(wbuf));
	EL_CHECK_EQ(n, sizeof(want));
	EL_CHECK(memcmp(wbuf, want, sizeof(want)) == 0);

	memset(&tx, 0, sizeof(tx));
	memset(tx_entries, 0, sizeof(tx_entries[0]));
	tx.type = EL_MSG_APPEND;
	tx.index = 9;
	tx.n_entries = 1;
	tx.entries = tx_entries;
	tx_entries[0].term = 2;
	tx_entries[0].index = 10;
	tx_entries[0].len = 2;
	tx_entries[0].data[0] = 0xca;
	tx_entries[0].data[1] = 0xfe;
	n = el_wire_encode_msg(&tx, wbuf, sizeof(wbuf));
	EL_CHECK_EQ(n, sizeof(want_append));
	EL_CHECK(memcmp(wbuf, want_append, sizeof(want_append)) == 0);
}

/* ---- Decoding rules --------------------------------------------------------- */

static int decode(const uint8_t *buf, int n)
{
	int rc;

	if (n < 0)
		return 1000 + n; /* the test built a bad input: never 0 or EL_E* */
	rc = el_wire_decode_msg(buf, (uint32_t)n, &rx, rx_entries);
	if (rc != 0 && !msg_zeroed(&rx))
		return 2000; /* a failed decode must leave nothing behind */
	return rc;
}

/* A map of uint keys to uint values, pairs given as k0, v0, k1, v1, ... */
static int raw_map(const uint64_t *kv, uint32_t pairs)
{
	struct el_cbor_enc e;
	uint32_t i;

	el_cbor_enc_init(&e, wbuf, sizeof(wbuf));
	el_cbor_put_map(&e, pairs);
	for (i = 0; i < 2 * pairs; i++)
		el_cbor_put_uint(&e, kv[i]);
	return el_cbor_enc_finish(&e);
}

static void test_decode_minimal(void)
{
	static const uint64_t ok[] = {0, 1, 1, 11};

	EL_CHECK_EQ(decode(wbuf, raw_map(ok, 2)), 0);
	EL_CHECK_EQ(rx.type, EL_MSG_TIMEOUT_NOW);
	EL_CHECK(rx.term == 0 && rx.n_entries == 0 && rx.data_len == 0 && rx.conf.n == 0);
}

static void test_decode_version(void)
{
	static const uint64_t v2[] = {0, 2, 1, 7};
	static const uint64_t v0[] = {0, 0, 1, 7};
	/* a later version may have more keys than this one knows */
	static const uint64_t v9[] = {0, 9, 1, 7, 20, 1, 21, 1, 22, 1, 23, 1, 24, 1, 25, 1, 26, 1,
				      27, 1, 28, 1, 29, 1, 30, 1, 31, 1, 32, 1, 33, 1, 34, 1,
				      35, 1, 36, 1, 37, 1};
	static const uint64_t no_version[] = {1, 7, 5, 1};
	static const uint64_t v1_18[] = {0, 1, 1, 7, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7, 1, 8, 1, 9, 1,
					 10, 1, 11, 1, 12, 1, 13, 1, 14, 1, 15, 1, 16, 1, 17, 1};

	EL_CHECK_EQ(decode(wbuf, raw_map(v2, 2)), EL_EVERSION);
	EL_CHECK_EQ(decode(wbuf, raw_map(v0, 2)), EL_EVERSION);
	EL_CHECK_EQ(decode(wbuf, raw_map(v9, 20)), EL_EVERSION);
	EL_CHECK_EQ(decode(wbuf, raw_map(no_version, 2)), EL_EDECODE);
	/* version 1 knows 17 keys: 18 pairs are refused */
	EL_CHECK_EQ(decode(wbuf, raw_map(v1_18, 18)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(v2, 0)), EL_EDECODE);
	/* version must be a uint under key 0 */
	wbuf[0] = 0xa2; wbuf[1] = 0x00; wbuf[2] = 0x21; wbuf[3] = 0x01; wbuf[4] = 0x07;
	EL_CHECK_EQ(decode(wbuf, 5), EL_EDECODE);
	/* not a map at all */
	wbuf[0] = 0x82; wbuf[1] = 0x01; wbuf[2] = 0x07;
	EL_CHECK_EQ(decode(wbuf, 3), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, 0), EL_EDECODE);
}

static void test_decode_scalar_fields(void)
{
	static const uint64_t type0[] = {0, 1, 1, 0};
	static const uint64_t type12[] = {0, 1, 1, EL_MSG_TYPE_MAX + 1};
	static const uint64_t no_type[] = {0, 1, 5, 3};
	static const uint64_t zero_term[] = {0, 1, 1, 7, 5, 0};
	static const uint64_t bad_flag[] = {0, 1, 1, 7, 2, 4};
	static const uint64_t wide_from[] = {0, 1, 1, 7, 3, 0x100000000ull};
	static const uint64_t wide_offset[] = {0, 1, 1, 10, 12, 0x100000000ull};
	static const uint64_t unknown_key[] = {0, 1, 1, 7, 17, 1};
	static const uint64_t max_ok[] = {0, 1, 1, 7, 2, 3, 3, UINT32_MAX, 13, UINT32_MAX};

	EL_CHECK_EQ(decode(wbuf, raw_map(type0, 2)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(type12, 2)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(no_type, 2)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(zero_term, 3)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(bad_flag, 3)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(wide_from, 3)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(wide_offset, 3)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(unknown_key, 3)), EL_EDECODE);
	EL_CHECK_EQ(decode(wbuf, raw_map(max_ok, 5)), 0);
	EL_CHECK(rx.from == UINT32_MAX && rx.total == UINT32_MAX && rx.flags == 3);
}

static void test_decode_key_order(void)
{
	/* {0: 1, 5: 2, 1: 7}: keys out of order; {0:1, 1:7, 1:7}: repeated */
	static const uint8_t unordered[] = {0xa3, 0x00, 0x01, 0x05, 0x02, 0x01, 0x07};
	static const uint8_t repeated[] = {0xa3, 0x00, 0x01, 0x01, 0x07, 0x01, 0x07};
	static const uint8_t trailing[] = {0xa2, 0x00, 0x01, 0x01, 0x07, 0x00};
	static const uint8_t short_map[] = {0xa3, 0x00, 0x01, 0x01, 0x07};

	EL_CHECK_EQ(decode(unordered, sizeof(unordered)), EL_EDECODE);
	EL_CHECK_EQ(decode(repeated, sizeof(repeated)), EL_EDECODE);
	EL_CHECK_EQ(decode(trailing, sizeof(trailing)), EL_EDECODE);
	EL_CHECK_EQ(decode(short_map, sizeof(short_map)), EL_EDECODE);
	EL_CHECK_EQ(decode(trailing, sizeof(trailing) - 1), 0);
}

struct raw_entries {
	uint8_t msg_type;
	uint32_t n;        /* entries */
	uint32_t items;    /* items per entry (4 is right) */
	uint64_t first;    /* index of the first entry */
	uint64_t step;     /* index difference between entries (1 is right) */
	uint64_t type;     /* entry type */
	uint32_t len;      /* data bytes per entry */
};

/* An APPEND-like message whose entries are written as r says. */
static int raw_entries(const struct raw_entries *r)
{
	static const uint8_t data[EL_ENTRY_DATA_MAX + 1];
	struct el_cbor_enc e;
	uint32_t i, k;

	el_cbor_enc_init(&e, wbuf, sizeof(wbuf));
	el_cbor_put_map(&e, 3);
	el_cbor_put_uint(&e, 0);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, r->msg_type);
	el_cbor_put_uint(&e, 14);
	el_cbor_put_array(&e, r->n);
	for (i = 0; i < r->n; i++) {
		el_cbor_put_array(&e, r->items);
		el_cbor_put_uint(&e, 3);
		el_cbor_put_uint(&e, r->first + i * r->step);
		el_cbor_put_uint(&e, r->type);
		for (k = 3; k < r->items; k++)
			el_cbor_put_bytes(&e, data, r->len);
	}
	return el_cbor_enc_finish(&e);
}

static void test_decode_entries(void)
{
	const struct raw_entries good = {EL_MSG_APPEND, EL_MSG_ENTRIES_MAX, 4, 1, 1, 2, EL_ENTRY_DATA_MAX};
	struct raw_entries r = good;

	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), 0);
	EL_CHECK_EQ(rx.n_entries, EL_MSG_ENTRIES_MAX);
	EL_CHECK_EQ(rx.entries[EL_MSG_ENTRIES_MAX - 1].index, EL_MSG_ENTRIES_MAX);
	EL_CHECK_EQ(rx.entries[0].len, EL_ENTRY_DATA_MAX);
	r.n = EL_MSG_ENTRIES_MAX + 1;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.n = 0;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.len = EL_ENTRY_DATA_MAX + 1;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.step = 2;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.step = 0;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.n = 1, r.first = 0;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.n = 2, r.first = UINT64_MAX; /* the next index would wrap to 0 */
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.n = 1, r.first = UINT64_MAX;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), 0);
	r = good, r.type = EL_ENTRY_CONF + 1;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.items = 3;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.n = 2, r.items = 5;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.msg_type = EL_MSG_HEARTBEAT;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), EL_EDECODE);
	r = good, r.len = 0;
	EL_CHECK_EQ(decode(wbuf, raw_entries(&r)), 0);
	/* no storage for entries: an APPEND is refused, other messages are not */
	r = good;
	EL_CHECK_EQ(el_wire_decode_msg(wbuf, (uint32_t)raw_entries(&r), &rx, NULL), EL_EDECODE);
	EL_CHECK(msg_zeroed(&rx));
	build_msg(EL_MSG_VOTE, true);
	EL_CHECK_EQ(el_wire_decode_msg(wbuf, (uint32_t)el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)),
				       &rx, NULL), 0);
	EL_CHECK(msg_same(&tx, &rx));
}

struct raw_snapshot {
	uint8_t msg_type;
	uint32_t data_len; /* 0: no data key */
	uint32_t members;  /* 0: no conf key */
	uint32_t items;    /* items per member (2 is right) */
	uint64_t id0;      /* id of the first member; the others are 100, 101, ... */
	uint64_t role;
};

static int raw_snapshot(const struct raw_snapshot *r)
{
	struct el_cbor_enc e;
	uint32_t i, k;

	el_cbor_enc_init(&e, wbuf, sizeof(wbuf));
	el_cbor_put_map(&e, 2 + (r->data_len > 0) + (r->members > 0));
	el_cbor_put_uint(&e, 0);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, r->msg_type);
	if (r->data_len > 0) {
		el_cbor_put_uint(&e, 15);
		el_cbor_put_bytes(&e, chunk, r->data_len);
	}
	if (r->members > 0) {
		el_cbor_put_uint(&e, 16);
		el_cbor_put_array(&e, r->members);
	}
	for (i = 0; i < r->members; i++) {
		el_cbor_put_array(&e, r->items);
		el_cbor_put_uint(&e, i == 0 ? r->id0 : 99 + i);
		for (k = 1; k < r->items; k++)
			el_cbor_put_uint(&e, r->role);
	}
	return el_cbor_enc_finish(&e);
}

static void test_decode_snapshot(void)
{
	const struct raw_snapshot good = {EL_MSG_SNAPSHOT, EL_SNAPSHOT_CHUNK, EL_NODES_MAX, 2, 7,
					  EL_MEMBER_LEARNER};
	/* {0: 1, 1: SNAPSHOT, 15: h''} */
	static const uint8_t empty_data[] = {0xa3, 0x00, 0x01, 0x01, 0x09, 0x0f, 0x40};
	struct raw_snapshot r = good;
	int n;

	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), 0);
	EL_CHECK_EQ(rx.data_len, EL_SNAPSHOT_CHUNK);
	EL_CHECK_EQ(rx.conf.n, EL_NODES_MAX);
	EL_CHECK_EQ(rx.conf.m[0].id, 7);
	EL_CHECK_EQ(rx.conf.m[1].role, EL_MEMBER_LEARNER);
	r.data_len = EL_SNAPSHOT_CHUNK + 1;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.members = EL_NODES_MAX + 1;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.id0 = 0;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.id0 = 100; /* the same id as the second member */
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.id0 = 0x100000000ull;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.role = 0;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.role = EL_MEMBER_CATCHING_UP + 1;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.items = 3;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.items = 1;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.msg_type = EL_MSG_SNAPSHOT_RESP; /* chunk and conf belong to SNAPSHOT */
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.msg_type = EL_MSG_APPEND, r.members = 0;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.msg_type = EL_MSG_VOTE, r.data_len = 0;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), EL_EDECODE);
	r = good, r.data_len = 0, r.members = 0;
	EL_CHECK_EQ(decode(wbuf, raw_snapshot(&r)), 0);
	/* present but empty is refused: an absent field is the only zero */
	r = good, r.members = 0;
	n = raw_snapshot(&r);
	EL_CHECK(n > 0);
	wbuf[0]++; /* one more pair: conf, an empty array */
	wbuf[n] = 16;
	wbuf[n + 1] = 0x80;
	EL_CHECK_EQ(decode(wbuf, n + 2), EL_EDECODE);
	EL_CHECK_EQ(decode(empty_data, sizeof(empty_data)), EL_EDECODE);
	EL_CHECK_EQ(decode(empty_data, 1), EL_EDECODE);
}

/* ---- Encoding refusals ------------------------------------------------------ */

static void test_encode_refuses_invalid(void)
{
	build_msg(EL_MSG_APPEND, false);
	EL_CHECK(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)) > 0);
	tx.type = 0;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	tx.type = EL_MSG_TYPE_MAX + 1;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	tx.type = EL_MSG_HEARTBEAT; /* entries outside an APPEND */
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);

	build_msg(EL_MSG_APPEND, false);
	tx.flags = 4;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_APPEND, false);
	tx.n_entries = EL_MSG_ENTRIES_MAX + 1;
	fill_entries(tx.n_entries, 1, 1);
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_APPEND, false);
	tx_entries[1].index += 1;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_APPEND, false);
	tx_entries[2].len = EL_ENTRY_DATA_MAX + 1;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_APPEND, false);
	tx_entries[0].type = EL_ENTRY_CONF + 1;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_APPEND, false);
	tx.entries = NULL;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);

	build_msg(EL_MSG_SNAPSHOT, false);
	EL_CHECK(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)) > 0);
	tx.data_len = EL_SNAPSHOT_CHUNK + 1;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_SNAPSHOT, false);
	tx.data = NULL;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_SNAPSHOT, false);
	tx.conf.m[2].id = tx.conf.m[0].id;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_SNAPSHOT, false);
	tx.conf.m[1].id = 0;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_SNAPSHOT, false);
	tx.conf.m[1].role = 0;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_SNAPSHOT, false);
	tx.conf.n = EL_NODES_MAX + 1;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
	build_msg(EL_MSG_SNAPSHOT, false);
	tx.type = EL_MSG_SNAPSHOT_RESP;
	EL_CHECK_EQ(el_wire_encode_msg(&tx, wbuf, sizeof(wbuf)), EL_EINVAL);
}

/* ---- Damaged input ------------------------------------------------------------ */

static void test_truncation_refused(void)
{
	static const uint8_t types[] = {EL_MSG_APPEND, EL_MSG_SNAPSHOT, EL_MSG_VOTE};
	uint32_t t, cut;

	for (t = 0; t < sizeof(types); t++) {
		int n;

		build_msg(types[t], true);
		n = el_wire_encode_msg(&tx, wbuf, sizeof(wbuf));
		EL_CHECK(n > 0);
		for (cut = 0; cut < (uint32_t)n; cut++)
			EL_CHECK_EQ(decode(wbuf, (int)cut), EL_EDECODE);
		EL_CHECK_EQ(decode(wbuf, n), 0);
	}
}

/*
 * Flip one bit: the decoder either refuses the bytes (and leaves m zeroed)
 * or accepts them as a valid message that encodes back to exactly the same
 * bytes, since the encoding is canonical.
 */
static void test_bit_flips(void)
{
	static const uint8_t types[] = {EL_MSG_APPEND, EL_MSG_SNAPSHOT, EL_MSG_APPEND_RESP};
	uint32_t t, pos, accepted = 0, refused = 0;
	uint8_t bit;

	for (t = 0; t < sizeof(types); t++) {
		int n;

		build_msg(types[t], false);
		n = el_wire_encode_msg(&tx, wbuf, sizeof(wbuf));
		EL_CHECK(n > 0);
		for (pos = 0; pos < (uint32_t)n; pos++) {
			for (bit = 0; bit < 8; bit++) {
				int rc;

				wbuf[pos] ^= (uint8_t)(1u << bit);
				rc = decode(wbuf, n);
				if (rc == 0) {
					EL_CHECK_EQ(el_wire_encode_msg(&rx, wbuf2, sizeof(wbuf2)), n);
					EL_CHECK(memcmp(wbuf, wbuf2, (uint32_t)n) == 0);
					accepted++;
				} else {
					EL_CHECK(rc == EL_EDECODE || rc == EL_EVERSION);
					refused++;
				}
				wbuf[pos] ^= (uint8_t)(1u << bit);
			}
		}
	}
	/* both outcomes happen: flips in data bytes are fine, in heads not */
	EL_CHECK(accepted > 0 && refused > 0);
}

void el_suite_wire(void)
{
	EL_RUN(test_round_trip_every_type_full);
	EL_RUN(test_round_trip_every_type_small);
	EL_RUN(test_worst_case_size);
	EL_RUN(test_pinned_bytes);
	EL_RUN(test_decode_minimal);
	EL_RUN(test_decode_version);
	EL_RUN(test_decode_scalar_fields);
	EL_RUN(test_decode_key_order);
	EL_RUN(test_decode_entries);
	EL_RUN(test_decode_snapshot);
	EL_RUN(test_encode_refuses_invalid);
	EL_RUN(test_truncation_refused);
	EL_RUN(test_bit_flips);
}
