/*
 * cbor_conformance.c - edgelock's CBOR codec against libcbor, the oracle.
 *
 *  (a) random items (nested arrays/maps, ints, strings, bools, null) written
 *      by our writer load in libcbor as the very same item, and libcbor
 *      writes that item back to our exact bytes;
 *  (b) the same items written by libcbor read with our reader as the same
 *      item; libcbor's non-shortest, indefinite, unsorted, tagged and float
 *      forms are well-formed for libcbor and refused by us;
 *  (c) damaged libcbor output that our reader accepts, libcbor accepts as
 *      the same item (our reader is a strict subset, never a different
 *      reading);
 *  (d) Raft messages from el_wire_encode_msg load in libcbor as a map with
 *      the documented keys, types and values.
 *
 * Seeded and deterministic (SEED=n in the environment picks another seed).
 * Prints the harness's closing line "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_error.h"
#include "el_test.h"
#include "el_wire.h"
#include "oracle.h"

EL_TEST_MAIN_DEFINITIONS

#define ROUNDS 3000

static uint64_t seed0 = 0x5eed0ed6e10cull;
static uint8_t ours[1 << 17], theirs[1 << 17], again[1 << 17];

/* Load exactly n bytes with libcbor; NULL unless all of them form one item. */
static cbor_item_t *libcbor_load(const uint8_t *buf, size_t n)
{
	struct cbor_load_result res;
	cbor_item_t *item = cbor_load(buf, n, &res);

	if (item != NULL && (res.error.code != CBOR_ERR_NONE || res.read != n))
		cbor_decref(&item);
	return item;
}

/* Read exactly n bytes as one item with our reader; NULL when refused. */
static cbor_item_t *ours_load(const uint8_t *buf, size_t n)
{
	struct el_cbor_dec d;
	cbor_item_t *item;

	el_cbor_dec_init(&d, buf, (uint32_t)n);
	item = oracle_get_item(&d);
	if (item != NULL && el_cbor_dec_finish(&d) != 0)
		cbor_decref(&item);
	return item;
}

static int ours_write(const cbor_item_t *item, uint8_t *buf, uint32_t cap)
{
	struct el_cbor_enc e;

	el_cbor_enc_init(&e, buf, cap);
	if (!oracle_put_item(&e, item))
		return e.err != 0 ? e.err : EL_EINVAL;
	return el_cbor_enc_finish(&e);
}

static void fail_note(const char *what, uint64_t seed)
{
	printf("  %s failed at seed 0x%llx\n", what, (unsigned long long)seed);
}

static void test_ours_load_in_libcbor(void)
{
	uint64_t seed, st;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		cbor_item_t *item, *loaded;
		size_t their_n;
		int n;
		bool ok;

		seed = st = seed0 + (uint64_t)i * 0x9e3779b97f4a7c15ull;
		item = oracle_random_item(&st, 120);
		n = ours_write(item, ours, sizeof(ours));
		their_n = oracle_serialize(item, theirs, sizeof(theirs));
		loaded = n > 0 ? libcbor_load(ours, (size_t)n) : NULL;
		ok = loaded != NULL && oracle_items_equal(item, loaded) &&
		     oracle_serialize(loaded, again, sizeof(again)) == (size_t)n &&
		     memcmp(again, ours, (size_t)n) == 0 &&
		     their_n == (size_t)n && memcmp(theirs, ours, their_n) == 0;
		if (!ok)
			fail_note("ours -> libcbor", seed);
		cbor_decref(&item);
		if (loaded != NULL)
			cbor_decref(&loaded);
		EL_CHECK(ok);
	}
}

static void test_libcbor_read_by_ours(void)
{
	uint64_t seed, st;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		cbor_item_t *item, *read;
		size_t n;
		bool ok;

		seed = st = seed0 ^ ((uint64_t)i << 20 | 0x1234);
		item = oracle_random_item(&st, 120);
		n = oracle_serialize(item, theirs, sizeof(theirs));
		read = n > 0 ? ours_load(theirs, n) : NULL;
		ok = read != NULL && oracle_items_equal(item, read);
		if (!ok)
			fail_note("libcbor -> ours", seed);
		cbor_decref(&item);
		if (read != NULL)
			cbor_decref(&read);
		EL_CHECK(ok);
	}
}

/* A well-formed item outside our subset or not in deterministic form. */
static cbor_item_t *noncanonical_item(uint64_t *st)
{
	uint64_t r = oracle_rand(st);
	cbor_item_t *c;

	switch (r % 14) {
	case 0: return cbor_build_uint16((uint16_t)(r >> 8) % 256);
	case 1: return cbor_build_uint32((uint32_t)(r >> 8) % 65536);
	case 2: return cbor_build_uint64((r >> 8) % 0x100000000ull);
	case 3: return cbor_build_negint16((uint16_t)(r >> 8) % 256);
	case 4:
		c = cbor_new_indefinite_array();
		cbor_array_push(c, cbor_move(cbor_build_uint8(1)));
		return c;
	case 5:
		c = cbor_new_indefinite_map();
		cbor_map_add(c, (struct cbor_pair){cbor_move(cbor_build_uint8(1)), cbor_move(cbor_new_null())});
		return c;
	case 6:
		c = cbor_new_indefinite_bytestring();
		cbor_bytestring_add_chunk(c, cbor_move(cbor_build_bytestring((const uint8_t *)"ab", 2)));
		return c;
	case 7:
		c = cbor_new_indefinite_string();
		cbor_string_add_chunk(c, cbor_move(cbor_build_string("ab")));
		return c;
	case 8: /* keys out of order, or repeated */
		c = cbor_new_definite_map(2);
		cbor_map_add(c, (struct cbor_pair){cbor_move(cbor_build_uint8((r >> 8) & 1 ? 2 : 1)),
						   cbor_move(cbor_new_null())});
		cbor_map_add(c, (struct cbor_pair){cbor_move(cbor_build_uint8(1)), cbor_move(cbor_new_null())});
		return c;
	case 9: /* libcbor 0.8 refuses the unassigned tags 6..23 itself */
		return cbor_build_tag((r >> 8) & 1 ? (r >> 9) % 6 : 24 + (r >> 9) % 300,
				      cbor_move(cbor_build_uint8(0)));
	case 10: return cbor_build_float4(1.5f);
	case 11: return cbor_build_float8(-0.25);
	case 12: return cbor_new_undef();
	default: return cbor_build_float2(0.5f);
	}
}

static void test_libcbor_noncanonical_refused(void)
{
	uint64_t st = seed0 | 1;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		cbor_item_t *arr = cbor_new_definite_array(2), *mine = NULL, *theirs_item;
		struct el_cbor_dec d;
		size_t n;
		bool ok;

		/* the odd item sits after a random canonical one, at any depth */
		cbor_array_push(arr, cbor_move(oracle_random_item(&st, 20)));
		cbor_array_push(arr, cbor_move(noncanonical_item(&st)));
		n = oracle_serialize(arr, theirs, sizeof(theirs));
		theirs_item = libcbor_load(theirs, n);
		mine = ours_load(theirs, n);
		el_cbor_dec_init(&d, theirs, (uint32_t)n);
		el_cbor_skip(&d);
		ok = n > 0 && theirs_item != NULL && mine == NULL && el_cbor_dec_finish(&d) != 0;
		if (!ok) {
			size_t k;
			fail_note("non-canonical refused", (uint64_t)i);
			printf("  libcbor %s, ours %s:", theirs_item ? "loads" : "refuses", mine ? "loads" : "refuses");
			for (k = 0; k < n; k++)
				printf(" %02x", theirs[k]);
			printf("\n");
		}
		cbor_decref(&arr);
		if (theirs_item != NULL)
			cbor_decref(&theirs_item);
		if (mine != NULL)
			cbor_decref(&mine);
		EL_CHECK(ok);
	}
}

/* Damage: flip bits, overwrite bytes, cut the end. */
static size_t mutate(uint64_t *st, uint8_t *buf, size_t n)
{
	int k, rounds = 1 + (int)(oracle_rand(st) % 4);

	for (k = 0; k < rounds && n > 0; k++) {
		uint64_t r = oracle_rand(st);
		size_t pos = (size_t)(r >> 8) % n;

		switch (r % 3) {
		case 0: buf[pos] ^= (uint8_t)(1u << (r >> 40) % 8); break;
		case 1: buf[pos] = (uint8_t)(r >> 48); break;
		default: n = pos; break;
		}
	}
	return n;
}

static void test_damaged_input_differential(void)
{
	uint64_t st = seed0 ^ 0xdada;
	long accepted = 0;
	int i, j;

	for (i = 0; i < ROUNDS; i++) {
		cbor_item_t *item = oracle_random_item(&st, 40);
		size_t n = oracle_serialize(item, theirs, sizeof(theirs));

		cbor_decref(&item);
		for (j = 0; j < 20; j++) {
			size_t m;
			cbor_item_t *mine, *their;
			bool ok = true;

			memcpy(again, theirs, n);
			m = mutate(&st, again, n);
			mine = ours_load(again, m);
			if (mine == NULL)
				continue;
			accepted++;
			their = libcbor_load(again, m);
			ok = their != NULL && oracle_items_equal(mine, their);
			cbor_decref(&mine);
			if (their != NULL)
				cbor_decref(&their);
			if (!ok)
				fail_note("damaged input", (uint64_t)i);
			EL_CHECK(ok);
		}
	}
	printf("  damaged inputs our reader accepted: %ld of %d\n", accepted, ROUNDS * 20);
	EL_CHECK(accepted > 0);
}

/* ---- (d) Raft messages -------------------------------------------------------- */

static struct el_entry tx_entries[EL_MSG_ENTRIES_MAX];
static uint8_t chunk[EL_SNAPSHOT_CHUNK];

/* A zero half of the time, so absent fields are common. */
static uint64_t maybe(uint64_t *st, uint64_t max)
{
	uint64_t v = oracle_rand_uint(st);

	return oracle_rand(st) % 2 ? 0 : max == UINT64_MAX ? v : v % (max + 1);
}

static void random_entries(uint64_t *st, struct el_msg *m)
{
	uint64_t first = 1 + maybe(st, UINT64_MAX - EL_MSG_ENTRIES_MAX - 1);
	uint32_t i, k;

	m->n_entries = (uint32_t)(oracle_rand(st) % (EL_MSG_ENTRIES_MAX + 1));
	m->entries = tx_entries;
	for (i = 0; i < m->n_entries; i++) {
		tx_entries[i].term = maybe(st, UINT64_MAX);
		tx_entries[i].index = first + i;
		tx_entries[i].type = (uint8_t)(oracle_rand(st) % 3);
		tx_entries[i].len = (uint16_t)(oracle_rand(st) % (EL_ENTRY_DATA_MAX + 1));
		for (k = 0; k < tx_entries[i].len; k++)
			tx_entries[i].data[k] = (uint8_t)oracle_rand(st);
	}
}

static void random_snapshot(uint64_t *st, struct el_msg *m)
{
	uint32_t i;

	m->data_len = (uint32_t)(oracle_rand(st) % (EL_SNAPSHOT_CHUNK + 1));
	m->data = chunk;
	for (i = 0; i < m->data_len; i++)
		chunk[i] = (uint8_t)oracle_rand(st);
	m->conf.n = (uint8_t)(oracle_rand(st) % (EL_NODES_MAX + 1));
	for (i = 0; i < m->conf.n; i++) {
		m->conf.m[i].id = (el_id_t)(i + 1 + (maybe(st, 1000) << 4)); /* distinct, nonzero */
		m->conf.m[i].role = (uint8_t)(1 + oracle_rand(st) % 3);
	}
}

static void random_msg(uint64_t *st, struct el_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)(1 + oracle_rand(st) % EL_MSG_TYPE_MAX);
	m->flags = (uint8_t)maybe(st, 3);
	m->from = (el_id_t)maybe(st, UINT32_MAX);
	m->to = (el_id_t)maybe(st, UINT32_MAX);
	m->term = maybe(st, UINT64_MAX);
	m->index = maybe(st, UINT64_MAX);
	m->log_term = maybe(st, UINT64_MAX);
	m->commit = maybe(st, UINT64_MAX);
	m->ctx = maybe(st, UINT64_MAX);
	m->hint_index = maybe(st, UINT64_MAX);
	m->hint_term = maybe(st, UINT64_MAX);
	m->offset = (uint32_t)maybe(st, UINT32_MAX);
	m->total = (uint32_t)maybe(st, UINT32_MAX);
	if (m->type == EL_MSG_APPEND)
		random_entries(st, m);
	if (m->type == EL_MSG_SNAPSHOT)
		random_snapshot(st, m);
}

static bool uint_is(const cbor_item_t *item, uint64_t v)
{
	return cbor_isa_uint(item) && cbor_get_int(item) == v;
}

static bool bytes_are(const cbor_item_t *item, const uint8_t *p, size_t n)
{
	return cbor_isa_bytestring(item) && cbor_bytestring_is_definite(item) &&
	       cbor_bytestring_length(item) == n &&
	       (n == 0 || memcmp(cbor_bytestring_handle(item), p, n) == 0);
}

static bool entries_are(const cbor_item_t *arr, const struct el_msg *m)
{
	uint32_t i;

	if (!cbor_isa_array(arr) || cbor_array_size(arr) != m->n_entries)
		return false;
	for (i = 0; i < m->n_entries; i++) {
		const cbor_item_t *e = cbor_array_handle(arr)[i];
		const struct el_entry *x = &m->entries[i];

		if (!cbor_isa_array(e) || cbor_array_size(e) != 4 ||
		    !uint_is(cbor_array_handle(e)[0], x->term) ||
		    !uint_is(cbor_array_handle(e)[1], x->index) ||
		    !uint_is(cbor_array_handle(e)[2], x->type) ||
		    !bytes_are(cbor_array_handle(e)[3], x->data, x->len))
			return false;
	}
	return true;
}

static bool conf_is(const cbor_item_t *arr, const struct el_conf *c)
{
	uint32_t i;

	if (!cbor_isa_array(arr) || cbor_array_size(arr) != c->n)
		return false;
	for (i = 0; i < c->n; i++) {
		const cbor_item_t *mb = cbor_array_handle(arr)[i];

		if (!cbor_isa_array(mb) || cbor_array_size(mb) != 2 ||
		    !uint_is(cbor_array_handle(mb)[0], c->m[i].id) ||
		    !uint_is(cbor_array_handle(mb)[1], c->m[i].role))
			return false;
	}
	return true;
}

/* The map as wire.c documents it: ascending uint keys 0..16, version first,
 * zero fields absent, every value the message's. */
static bool msg_map_is(const cbor_item_t *map, const struct el_msg *m)
{
	const uint64_t scalar[14] = {EL_WIRE_VERSION, m->type, m->flags, m->from, m->to, m->term,
				     m->index, m->log_term, m->commit, m->ctx, m->hint_index,
				     m->hint_term, m->offset, m->total};
	bool seen[17] = {false};
	int64_t prev = -1;
	size_t i;

	if (!cbor_isa_map(map) || !cbor_map_is_definite(map))
		return false;
	for (i = 0; i < cbor_map_size(map); i++) {
		const struct cbor_pair *p = &cbor_map_handle(map)[i];
		uint64_t k;

		if (!cbor_isa_uint(p->key) || cbor_get_int(p->key) > 16 ||
		    (int64_t)cbor_get_int(p->key) <= prev)
			return false;
		k = cbor_get_int(p->key);
		prev = (int64_t)k;
		seen[k] = true;
		if ((k < 14 && !uint_is(p->value, scalar[k])) || (k == 14 && !entries_are(p->value, m)) ||
		    (k == 15 && !bytes_are(p->value, m->data, m->data_len)) ||
		    (k == 16 && !conf_is(p->value, &m->conf)))
			return false;
	}
	for (i = 0; i < 14; i++)
		if (seen[i] != (scalar[i] != 0))
			return false;
	return seen[14] == (m->n_entries > 0) && seen[15] == (m->data_len > 0) &&
	       seen[16] == (m->conf.n > 0);
}

static void test_wire_messages_in_libcbor(void)
{
	static struct el_entry rx_entries[EL_MSG_ENTRIES_MAX];
	struct el_msg m, back;
	uint64_t st = seed0 ^ 0x3177e;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		cbor_item_t *item;
		int n;
		bool ok;

		random_msg(&st, &m);
		n = el_wire_encode_msg(&m, ours, sizeof(ours));
		item = n > 0 ? libcbor_load(ours, (size_t)n) : NULL;
		ok = item != NULL && msg_map_is(item, &m) &&
		     oracle_serialize(item, again, sizeof(again)) == (size_t)n &&
		     memcmp(again, ours, (size_t)n) == 0 &&
		     el_wire_decode_msg(ours, (uint32_t)n, &back, rx_entries) == 0 &&
		     el_wire_encode_msg(&back, again, sizeof(again)) == n &&
		     memcmp(again, ours, (size_t)n) == 0;
		if (!ok)
			fail_note("wire message", (uint64_t)i);
		if (item != NULL)
			cbor_decref(&item);
		EL_CHECK(ok);
	}
}

int main(void)
{
	const char *s = getenv("SEED");

	if (s != NULL)
		seed0 = strtoull(s, NULL, 0) | 1;
	printf("cbor conformance against libcbor %d.%d.%d, seed 0x%llx, %d rounds per test\n",
	       CBOR_MAJOR_VERSION, CBOR_MINOR_VERSION, CBOR_PATCH_VERSION,
	       (unsigned long long)seed0, ROUNDS);
	EL_RUN(test_ours_load_in_libcbor);
	EL_RUN(test_libcbor_read_by_ours);
	EL_RUN(test_libcbor_noncanonical_refused);
	EL_RUN(test_damaged_input_differential);
	EL_RUN(test_wire_messages_in_libcbor);
	return el_test_end();
}
