/*
 * wire.c - Raft messages to and from CBOR bytes (el_wire.h).
 *
 * A message is one CBOR map. Keys are small unsigned integers, written in
 * ascending order; a field whose value is zero (or empty) is left out, and
 * the decoder refuses it written out as zero, so each message has exactly
 * one encoding. Version and type are always present, version first, so a
 * reader can tell an unknown version (EL_EVERSION) from garbage.
 *
 *   key field        CBOR value                    range
 *    0  version      uint                          EL_WIRE_VERSION
 *    1  type         uint                          1..EL_MSG_TYPE_MAX
 *    2  flags        uint                          EL_MSG_REJECT | EL_MSG_FORCE
 *    3  from         uint                          32-bit node id
 *    4  to           uint                          32-bit node id
 *    5  term         uint                          64-bit
 *    6  index        uint                          64-bit
 *    7  log_term     uint                          64-bit
 *    8  commit       uint                          64-bit
 *    9  ctx          uint                          64-bit
 *   10  hint_index   uint                          64-bit
 *   11  hint_term    uint                          64-bit
 *   12  offset       uint                          32-bit
 *   13  total        uint                          32-bit
 *   14  entries      [ [term, index, type, data], ... ]   APPEND only,
 *                    1..EL_MSG_ENTRIES_MAX entries with consecutive indexes,
 *                    type an el_entry_type, data bytes <= EL_ENTRY_DATA_MAX
 *   15  data         bytes, 1..EL_SNAPSHOT_CHUNK   SNAPSHOT only
 *   16  conf         [ [id, role], ... ]           SNAPSHOT only,
 *                    1..EL_NODES_MAX members, ids nonzero and distinct,
 *                    role an el_member_role
 *
 * The same validity check runs before encoding (EL_EINVAL) and after
 * decoding (EL_EDECODE), so the two sides accept exactly the same messages.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "el_assert.h"
#include "el_cbor.h"
#include "el_error.h"
#include "el_wire.h"

enum wire_key {
	KEY_VERSION = 0,
	KEY_TYPE = 1,
	KEY_FLAGS = 2,
	KEY_FROM = 3,
	KEY_TO = 4,
	KEY_TERM = 5,
	KEY_INDEX = 6,
	KEY_LOG_TERM = 7,
	KEY_COMMIT = 8,
	KEY_CTX = 9,
	KEY_HINT_INDEX = 10,
	KEY_HINT_TERM = 11,
	KEY_OFFSET = 12,
	KEY_TOTAL = 13,
	KEY_ENTRIES = 14,
	KEY_DATA = 15,
	KEY_CONF = 16,
	KEY_COUNT = 17,
	KEY_SCALARS = KEY_ENTRIES, /* keys below this one carry a single uint */
};

#define MSG_FLAGS_KNOWN (EL_MSG_REJECT | EL_MSG_FORCE)

/* Largest value each scalar key may carry. */
static const uint64_t scalar_max[KEY_SCALARS] = {
	[KEY_VERSION] = UINT64_MAX, /* any version is read; unknown ones refused */
	[KEY_TYPE] = EL_MSG_TYPE_MAX,
	[KEY_FLAGS] = MSG_FLAGS_KNOWN,
	[KEY_FROM] = UINT32_MAX,
	[KEY_TO] = UINT32_MAX,
	[KEY_TERM] = UINT64_MAX,
	[KEY_INDEX] = UINT64_MAX,
	[KEY_LOG_TERM] = UINT64_MAX,
	[KEY_COMMIT] = UINT64_MAX,
	[KEY_CTX] = UINT64_MAX,
	[KEY_HINT_INDEX] = UINT64_MAX,
	[KEY_HINT_TERM] = UINT64_MAX,
	[KEY_OFFSET] = UINT32_MAX,
	[KEY_TOTAL] = UINT32_MAX,
};

static void scalars_of(const struct el_msg *m, uint64_t v[KEY_SCALARS])
{
	v[KEY_VERSION] = EL_WIRE_VERSION;
	v[KEY_TYPE] = m->type;
	v[KEY_FLAGS] = m->flags;
	v[KEY_FROM] = m->from;
	v[KEY_TO] = m->to;
	v[KEY_TERM] = m->term;
	v[KEY_INDEX] = m->index;
	v[KEY_LOG_TERM] = m->log_term;
	v[KEY_COMMIT] = m->commit;
	v[KEY_CTX] = m->ctx;
	v[KEY_HINT_INDEX] = m->hint_index;
	v[KEY_HINT_TERM] = m->hint_term;
	v[KEY_OFFSET] = m->offset;
	v[KEY_TOTAL] = m->total;
}

/* The values were checked against scalar_max, so the casts keep them. */
static void scalars_to(struct el_msg *m, const uint64_t v[KEY_SCALARS])
{
	m->type = (uint8_t)v[KEY_TYPE];
	m->flags = (uint8_t)v[KEY_FLAGS];
	m->from = (el_id_t)v[KEY_FROM];
	m->to = (el_id_t)v[KEY_TO];
	m->term = v[KEY_TERM];
	m->index = v[KEY_INDEX];
	m->log_term = v[KEY_LOG_TERM];
	m->commit = v[KEY_COMMIT];
	m->ctx = v[KEY_CTX];
	m->hint_index = v[KEY_HINT_INDEX];
	m->hint_term = v[KEY_HINT_TERM];
	m->offset = (uint32_t)v[KEY_OFFSET];
	m->total = (uint32_t)v[KEY_TOTAL];
}

/* ---- Validity, shared by both directions ---------------------------------- */

static bool entries_valid(const struct el_msg *m)
{
	uint32_t i;

	if (m->n_entries == 0)
		return true;
	if (m->n_entries > EL_MSG_ENTRIES_MAX || m->type != EL_MSG_APPEND || m->entries == NULL)
		return false;
	for (i = 0; i < m->n_entries; i++) {
		const struct el_entry *e = &m->entries[i];

		if (e->len > EL_ENTRY_DATA_MAX || e->type > EL_ENTRY_CONF || e->index == 0)
			return false;
		if (i > 0 && (m->entries[i - 1].index == UINT64_MAX ||
			      e->index != m->entries[i - 1].index + 1))
			return false;
	}
	return true;
}

static bool conf_valid(const struct el_conf *c)
{
	uint32_t i, j;

	if (c->n > EL_NODES_MAX)
		return false;
	for (i = 0; i < c->n; i++) {
		if (c->m[i].id == 0 || c->m[i].role < EL_MEMBER_VOTER ||
		    c->m[i].role > EL_MEMBER_CATCHING_UP)
			return false;
		for (j = 0; j < i; j++)
			if (c->m[j].id == c->m[i].id)
				return false;
	}
	return true;
}

static bool msg_valid(const struct el_msg *m)
{
	if (m->type < 1 || m->type > EL_MSG_TYPE_MAX || (m->flags & ~MSG_FLAGS_KNOWN) != 0)
		return false;
	if (m->data_len > EL_SNAPSHOT_CHUNK ||
	    (m->data_len > 0 && (m->type != EL_MSG_SNAPSHOT || m->data == NULL)))
		return false;
	if (m->conf.n > 0 && m->type != EL_MSG_SNAPSHOT)
		return false;
	return entries_valid(m) && conf_valid(&m->conf);
}

/* ---- Encoding ------------------------------------------------------------- */

static void put_entries(struct el_cbor_enc *e, const struct el_msg *m)
{
	uint32_t i;

	el_cbor_put_uint(e, KEY_ENTRIES);
	el_cbor_put_array(e, m->n_entries);
	for (i = 0; i < m->n_entries; i++) {
		const struct el_entry *en = &m->entries[i];

		el_cbor_put_array(e, 4);
		el_cbor_put_uint(e, en->term);
		el_cbor_put_uint(e, en->index);
		el_cbor_put_uint(e, en->type);
		el_cbor_put_bytes(e, en->data, en->len);
	}
}

static void put_conf(struct el_cbor_enc *e, const struct el_conf *c)
{
	uint32_t i;

	el_cbor_put_uint(e, KEY_CONF);
	el_cbor_put_array(e, c->n);
	for (i = 0; i < c->n; i++) {
		el_cbor_put_array(e, 2);
		el_cbor_put_uint(e, c->m[i].id);
		el_cbor_put_uint(e, c->m[i].role);
	}
}

int el_wire_encode_msg(const struct el_msg *m, uint8_t *buf, uint32_t cap)
{
	struct el_cbor_enc e;
	uint64_t v[KEY_SCALARS];
	uint32_t k, pairs = 0;

	if (!msg_valid(m))
		return EL_EINVAL;
	scalars_of(m, v);
	for (k = 0; k < KEY_SCALARS; k++)
		pairs += v[k] != 0;
	pairs += (m->n_entries > 0) + (m->data_len > 0) + (m->conf.n > 0);

	el_cbor_enc_init(&e, buf, cap);
	el_cbor_put_map(&e, pairs);
	for (k = 0; k < KEY_SCALARS; k++) {
		if (v[k] == 0)
			continue; /* zero is the value of an absent field */
		el_cbor_put_uint(&e, k);
		el_cbor_put_uint(&e, v[k]);
	}
	if (m->n_entries > 0)
		put_entries(&e, m);
	if (m->data_len > 0) {
		el_cbor_put_uint(&e, KEY_DATA);
		el_cbor_put_bytes(&e, m->data, m->data_len);
	}
	if (m->conf.n > 0)
		put_conf(&e, &m->conf);
	return el_cbor_enc_finish(&e);
}

/* ---- Decoding --------------------------------------------------------------- */

static bool get_entry(struct el_cbor_dec *d, struct el_entry *en)
{
	uint32_t items = 0, len = 0;
	uint64_t type = 0;
	const uint8_t *p = NULL;

	el_cbor_get_array(d, &items, 4);
	if (items != 4)
		return false;
	el_cbor_get_uint(d, &en->term);
	el_cbor_get_uint(d, &en->index);
	el_cbor_get_uint_max(d, EL_ENTRY_CONF, &type);
	el_cbor_get_bytes(d, &p, &len, EL_ENTRY_DATA_MAX);
	if (el_cbor_dec_error(d) != 0)
		return false;
	en->type = (uint8_t)type;
	en->len = (uint16_t)len;
	EL_ASSERT(len <= EL_ENTRY_DATA_MAX);
	if (len > 0)
		memcpy(en->data, p, len);
	return true;
}

static bool get_entries(struct el_cbor_dec *d, struct el_msg *m, struct el_entry *entries)
{
	uint32_t n = 0, i;

	if (entries == NULL)
		return false; /* the caller takes no APPEND */
	el_cbor_get_array(d, &n, EL_MSG_ENTRIES_MAX);
	EL_ASSERT(n <= EL_MSG_ENTRIES_MAX); /* the caller's array holds that many */
	for (i = 0; i < n; i++)
		if (!get_entry(d, &entries[i]))
			return false;
	m->n_entries = n;
	m->entries = entries;
	return n > 0 && el_cbor_dec_error(d) == 0;
}

static bool get_conf(struct el_cbor_dec *d, struct el_conf *c)
{
	uint32_t n = 0, items = 0, i;
	uint64_t id = 0, role = 0;

	el_cbor_get_array(d, &n, EL_NODES_MAX);
	EL_ASSERT(n <= EL_NODES_MAX);
	for (i = 0; i < n; i++) {
		el_cbor_get_array(d, &items, 2);
		el_cbor_get_uint_max(d, UINT32_MAX, &id);
		el_cbor_get_uint_max(d, EL_MEMBER_CATCHING_UP, &role);
		if (items != 2 || el_cbor_dec_error(d) != 0)
			return false;
		c->m[i].id = (el_id_t)id;
		c->m[i].role = (uint8_t)role;
	}
	c->n = (uint8_t)n;
	return n > 0 && el_cbor_dec_error(d) == 0;
}

/* The value of one key; false when malformed, or zero/empty (such a field
 * must be left out, see the top of this file). */
static bool get_field(struct el_cbor_dec *d, uint64_t key, uint64_t v[KEY_SCALARS],
		      struct el_msg *m, struct el_entry *entries)
{
	if (key < KEY_SCALARS) {
		el_cbor_get_uint_max(d, scalar_max[key], &v[key]);
		return v[key] != 0 && el_cbor_dec_error(d) == 0;
	}
	switch (key) {
	case KEY_ENTRIES:
		return get_entries(d, m, entries);
	case KEY_DATA:
		el_cbor_get_bytes(d, &m->data, &m->data_len, EL_SNAPSHOT_CHUNK);
		return m->data_len > 0 && el_cbor_dec_error(d) == 0;
	case KEY_CONF:
		return get_conf(d, &m->conf);
	default:
		return false;
	}
}

/* The map head and the version, which must come first: 0, EL_EVERSION or
 * EL_EDECODE; *pairs is the number of key/value pairs. */
static int get_version(struct el_cbor_dec *d, uint32_t *pairs)
{
	uint64_t key = 1, version = 0;

	el_cbor_get_map(d, pairs, UINT32_MAX);
	if (*pairs == 0)
		return EL_EDECODE;
	el_cbor_get_uint(d, &key);
	el_cbor_get_uint(d, &version);
	if (el_cbor_dec_error(d) != 0 || key != KEY_VERSION)
		return EL_EDECODE;
	if (version != EL_WIRE_VERSION)
		return EL_EVERSION;
	/* only now: a later version may well carry more fields */
	return *pairs <= KEY_COUNT ? 0 : EL_EDECODE;
}

int el_wire_decode_msg(const uint8_t *buf, uint32_t len, struct el_msg *m,
		       struct el_entry *entries)
{
	struct el_cbor_dec d;
	uint64_t v[KEY_SCALARS] = {0};
	uint64_t key = 0;
	uint32_t pairs = 0, i;
	int rc;

	memset(m, 0, sizeof(*m));
	el_cbor_dec_init(&d, buf, len);
	rc = get_version(&d, &pairs);
	/* keys ascend (the reader refuses any other order), so each comes once */
	for (i = 1; rc == 0 && i < pairs; i++) {
		el_cbor_get_uint_max(&d, KEY_COUNT - 1, &key);
		if (el_cbor_dec_error(&d) != 0 || !get_field(&d, key, v, m, entries))
			rc = EL_EDECODE;
	}
	if (rc == 0 && el_cbor_dec_finish(&d) != 0)
		rc = EL_EDECODE;
	if (rc == 0) {
		scalars_to(m, v);
		if (!msg_valid(m))
			rc = EL_EDECODE;
	}
	if (rc != 0)
		memset(m, 0, sizeof(*m));
	return rc;
}
