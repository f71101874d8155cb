/*
 * cbor.c - the bounded CBOR writer and strict reader of el_cbor.h.
 *
 * Subset: unsigned and negative integers (64-bit), definite byte and text
 * strings, definite arrays and maps, false, true, null. Everything else a
 * CBOR stream may hold (tags, floats, undefined, other simple values,
 * indefinite lengths, non-shortest heads) is refused by the reader, and the
 * writer cannot produce it.
 *
 * Text strings must be valid UTF-8 on both sides: RFC 8949 calls a text
 * string with invalid UTF-8 invalid, a node that accepted one could hand it
 * on to a client that chokes on it, and the check is a single bounded pass.
 *
 * Map keys must come in strictly ascending bytewise order of their encoded
 * bytes (RFC 8949 section 4.2.1), which also rules out duplicate keys. Each
 * open map remembers where its previous key lies in the buffer and compares
 * the new key against it when the key is complete.
 *
 * Every length is compared with the bytes left before any byte is read or
 * copied, every count of items is compared with the bytes left (each item
 * takes at least one byte), so a hostile head cannot make the reader or a
 * caller's loop run past the input.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "el_assert.h"
#include "el_cbor.h"
#include "el_error.h"

enum {
	MAJOR_UINT = 0,
	MAJOR_NINT = 1,
	MAJOR_BYTES = 2,
	MAJOR_TEXT = 3,
	MAJOR_ARRAY = 4,
	MAJOR_MAP = 5,
	MAJOR_TAG = 6,
	MAJOR_SIMPLE = 7,
};

enum {
	AI_ONE_BYTE = 24, /* the argument follows in 1, 2, 4 or 8 bytes (24..27) */
	AI_RESERVED = 28, /* 28..30 reserved, 31 indefinite length / break */
	SIMPLE_FALSE = 20,
	SIMPLE_TRUE = 21,
	SIMPLE_NULL = 22,
};

/* ---- Nesting levels, shared by writer and reader ------------------------- */

static bool is_key_slot(const struct el_cbor_level *t)
{
	/* a map with 2n items left expects a key when the count is even */
	return t->map && (t->left % 2u) == 0;
}

/* The key at [t->key_start, end) must sort strictly after the previous one. */
static bool key_in_order(struct el_cbor_level *t, const uint8_t *buf, uint32_t end)
{
	uint32_t len = end - t->key_start;
	bool ok = true;

	if (t->prev_key_len != 0) {
		uint32_t common = len < t->prev_key_len ? len : t->prev_key_len;
		int c = memcmp(buf + t->key_start, buf + t->prev_key, common);
		ok = c > 0 || (c == 0 && len > t->prev_key_len);
	}
	t->prev_key = t->key_start;
	t->prev_key_len = len;
	return ok;
}

static void level_item_begin(struct el_cbor_level *lv, uint8_t depth, uint32_t pos)
{
	if (depth > 0 && is_key_slot(&lv[depth - 1]))
		lv[depth - 1].key_start = pos;
}

/* One item ended at pos: count it, closing every container it completes. */
static bool level_item_done(struct el_cbor_level *lv, uint8_t *depth, const uint8_t *buf,
			    uint32_t pos)
{
	while (*depth > 0) {
		struct el_cbor_level *t = &lv[*depth - 1];

		EL_ASSERT(t->left > 0); /* a level is closed as its count reaches 0 */
		if (is_key_slot(t) && !key_in_order(t, buf, pos))
			return false;
		if (--t->left > 0)
			return true;
		(*depth)--; /* the container is complete: it is one item of its parent */
	}
	return true;
}

/* A container head of `items` items ended at pos. */
static bool level_open(struct el_cbor_level *lv, uint8_t *depth, const uint8_t *buf,
		       uint32_t pos, uint32_t items, bool map)
{
	EL_ASSERT(*depth <= EL_CBOR_DEPTH_MAX);
	if (*depth >= EL_CBOR_DEPTH_MAX)
		return false;
	if (items == 0)
		return level_item_done(lv, depth, buf, pos);
	lv[*depth].left = items;
	lv[*depth].map = map;
	lv[*depth].prev_key_len = 0;
	(*depth)++;
	return true;
}

/* ---- UTF-8 --------------------------------------------------------------- */

/* Length of the sequence led by byte c and its smallest code point, or 0. */
static uint32_t utf8_lead(uint8_t c, uint32_t *min)
{
	if (c >= 0xc2 && c <= 0xdf) {
		*min = 0x80;
		return 2;
	}
	if (c >= 0xe0 && c <= 0xef) {
		*min = 0x800;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		*min = 0x10000;
		return 4;
	}
	return 0;
}

bool el_cbor_utf8_valid(const uint8_t *p, uint32_t n)
{
	uint32_t i = 0;

	while (i < n) {
		uint32_t min = 0, len, cp, k;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		len = utf8_lead(p[i], &min);
		if (len == 0 || n - i < len)
			return false;
		cp = p[i] & (0x7fu >> len);
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3fu);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

/* ---- Writer -------------------------------------------------------------- */

void el_cbor_enc_init(struct el_cbor_enc *e, uint8_t *buf, uint32_t cap)
{
	memset(e, 0, sizeof(*e));
	e->buf = buf;
	/* finish returns the length as an int */
	e->cap = buf == NULL ? 0 : cap > INT32_MAX ? (uint32_t)INT32_MAX : cap;
}

static void enc_fail(struct el_cbor_enc *e, int code)
{
	if (e->err == 0)
		e->err = code;
}

static bool enc_begin(struct el_cbor_enc *e)
{
	if (e->err != 0)
		return false;
	level_item_begin(e->lv, e->depth, e->len);
	return true;
}

static void enc_done(struct el_cbor_enc *e)
{
	if (e->err == 0 && !level_item_done(e->lv, &e->depth, e->buf, e->len))
		enc_fail(e, EL_EINVAL);
}

static uint32_t head_size(uint64_t v)
{
	return EL_CBOR_HEAD_SIZE(v);
}

/* The shortest head for (major, v), big-endian argument. */
static void put_head(struct el_cbor_enc *e, uint8_t major, uint64_t v)
{
	uint32_t size = head_size(v), i;
	uint8_t ai;

	if (e->err != 0)
		return;
	if (e->cap - e->len < size) {
		enc_fail(e, EL_EFULL);
		return;
	}
	ai = size == 1 ? (uint8_t)v : size == 2 ? 24 : size == 3 ? 25 : size == 5 ? 26 : 27;
	e->buf[e->len] = (uint8_t)(major << 5 | ai);
	for (i = 1; i < size; i++)
		e->buf[e->len + i] = (uint8_t)(v >> (8 * (size - 1 - i)));
	e->len += size;
	EL_ASSERT(e->len <= e->cap);
}

void el_cbor_put_uint(struct el_cbor_enc *e, uint64_t v)
{
	if (!enc_begin(e))
		return;
	put_head(e, MAJOR_UINT, v);
	enc_done(e);
}

void el_cbor_put_int(struct el_cbor_enc *e, int64_t v)
{
	if (!enc_begin(e))
		return;
	if (v >= 0)
		put_head(e, MAJOR_UINT, (uint64_t)v);
	else
		put_head(e, MAJOR_NINT, ~(uint64_t)v); /* -1 - v, without overflow */
	enc_done(e);
}

static void put_string(struct el_cbor_enc *e, uint8_t major, const uint8_t *p, uint32_t n)
{
	if (!enc_begin(e))
		return;
	if (n > 0 && p == NULL) {
		enc_fail(e, EL_EINVAL);
		return;
	}
	if (major == MAJOR_TEXT && !el_cbor_utf8_valid(p, n)) {
		enc_fail(e, EL_EINVAL);
		return;
	}
	/* check head and body together, so a failed put writes nothing */
	if ((uint64_t)e->cap - e->len < head_size(n) + (uint64_t)n) {
		enc_fail(e, EL_EFULL);
		return;
	}
	put_head(e, major, n);
	if (n > 0)
		memcpy(e->buf + e->len, p, n);
	e->len += n;
	enc_done(e);
}

void el_cbor_put_bytes(struct el_cbor_enc *e, const uint8_t *p, uint32_t n)
{
	put_string(e, MAJOR_BYTES, p, n);
}

void el_cbor_put_text(struct el_cbor_enc *e, const char *s, uint32_t n)
{
	put_string(e, MAJOR_TEXT, (const uint8_t *)s, n);
}

static void put_container(struct el_cbor_enc *e, uint8_t major, uint32_t n)
{
	uint64_t items = major == MAJOR_MAP ? 2 * (uint64_t)n : n;

	if (!enc_begin(e))
		return;
	if (e->depth >= EL_CBOR_DEPTH_MAX) {
		enc_fail(e, EL_EINVAL);
		return;
	}
	put_head(e, major, n);
	/* each item takes at least one byte: fail now rather than later */
	if (e->err == 0 && items > e->cap - e->len)
		enc_fail(e, EL_EFULL);
	if (e->err == 0 &&
	    !level_open(e->lv, &e->depth, e->buf, e->len, (uint32_t)items, major == MAJOR_MAP))
		enc_fail(e, EL_EINVAL);
}

void el_cbor_put_array(struct el_cbor_enc *e, uint32_t n)
{
	put_container(e, MAJOR_ARRAY, n);
}

void el_cbor_put_map(struct el_cbor_enc *e, uint32_t n)
{
	put_container(e, MAJOR_MAP, n);
}

static void put_simple(struct el_cbor_enc *e, uint8_t value)
{
	if (!enc_begin(e))
		return;
	put_head(e, MAJOR_SIMPLE, value);
	enc_done(e);
}

void el_cbor_put_bool(struct el_cbor_enc *e, bool b)
{
	put_simple(e, b ? SIMPLE_TRUE : SIMPLE_FALSE);
}

void el_cbor_put_null(struct el_cbor_enc *e)
{
	put_simple(e, SIMPLE_NULL);
}

int el_cbor_enc_finish(const struct el_cbor_enc *e)
{
	if (e->err != 0)
		return e->err;
	if (e->depth != 0)
		return EL_EINVAL;
	return (int)e->len;
}

/* ---- Reader -------------------------------------------------------------- */

void el_cbor_dec_init(struct el_cbor_dec *d, const uint8_t *buf, uint32_t len)
{
	memset(d, 0, sizeof(*d));
	d->buf = buf;
	d->len = buf != NULL ? len : 0;
}

static bool dec_fail(struct el_cbor_dec *d)
{
	d->err = EL_EDECODE;
	return false;
}

static void dec_done(struct el_cbor_dec *d)
{
	if (d->err == 0 && !level_item_done(d->lv, &d->depth, d->buf, d->pos))
		dec_fail(d);
}

/* Smallest argument each of the 1, 2, 4 and 8 byte forms may carry. */
static const uint64_t head_min[4] = {24, 0x100, 0x10000, 0x100000000};

/*
 * Read the head of the next item: its major type and argument (for major
 * type 7, the simple value). Refuses tags, floats, simple values other than
 * false/true/null, reserved and indefinite lengths, and longer-than-needed
 * arguments.
 */
static bool dec_head(struct el_cbor_dec *d, uint8_t *major, uint64_t *arg)
{
	uint32_t size, i;
	uint8_t ai;

	if (d->err != 0 || d->pos >= d->len)
		return dec_fail(d);
	level_item_begin(d->lv, d->depth, d->pos);
	*major = d->buf[d->pos] >> 5;
	ai = d->buf[d->pos] & 0x1f;
	*arg = ai;
	if (*major == MAJOR_TAG)
		return dec_fail(d);
	if (*major == MAJOR_SIMPLE && (ai < SIMPLE_FALSE || ai > SIMPLE_NULL))
		return dec_fail(d);
	if (ai < AI_ONE_BYTE) {
		d->pos++;
		return true;
	}
	if (ai >= AI_RESERVED)
		return dec_fail(d);
	size = 1u << (ai - AI_ONE_BYTE);
	if (d->len - d->pos - 1 < size)
		return dec_fail(d);
	*arg = 0;
	for (i = 1; i <= size; i++)
		*arg = *arg << 8 | d->buf[d->pos + i];
	if (*arg < head_min[ai - AI_ONE_BYTE])
		return dec_fail(d);
	d->pos += 1 + size;
	EL_ASSERT(d->pos <= d->len);
	return true;
}

static bool dec_expect(struct el_cbor_dec *d, uint8_t want, uint64_t *arg)
{
	uint8_t major = 0;

	if (!dec_head(d, &major, arg))
		return false;
	return major == want || dec_fail(d);
}

enum el_cbor_type el_cbor_peek(const struct el_cbor_dec *d)
{
	uint8_t ib, major;

	if (d->err != 0 || d->pos >= d->len)
		return EL_CBOR_INVALID;
	ib = d->buf[d->pos];
	major = ib >> 5;
	if (major == MAJOR_SIMPLE) {
		uint8_t simple = ib & 0x1f;
		return simple == SIMPLE_NULL ? EL_CBOR_NULL
		       : simple == SIMPLE_FALSE || simple == SIMPLE_TRUE ? EL_CBOR_BOOL
									 : EL_CBOR_INVALID;
	}
	if (major == MAJOR_TAG || (ib & 0x1f) >= AI_RESERVED)
		return EL_CBOR_INVALID;
	return (enum el_cbor_type)major;
}

void el_cbor_get_uint(struct el_cbor_dec *d, uint64_t *v)
{
	uint64_t arg = 0;

	*v = 0;
	if (!dec_expect(d, MAJOR_UINT, &arg))
		return;
	*v = arg;
	dec_done(d);
}

void el_cbor_get_uint_max(struct el_cbor_dec *d, uint64_t max, uint64_t *v)
{
	el_cbor_get_uint(d, v);
	if (*v > max) {
		*v = 0;
		dec_fail(d);
	}
}

void el_cbor_get_int(struct el_cbor_dec *d, int64_t *v)
{
	uint64_t arg = 0;
	uint8_t major = 0;

	*v = 0;
	if (!dec_head(d, &major, &arg))
		return;
	if ((major != MAJOR_UINT && major != MAJOR_NINT) || arg > INT64_MAX) {
		dec_fail(d);
		return;
	}
	*v = major == MAJOR_UINT ? (int64_t)arg : -1 - (int64_t)arg;
	dec_done(d);
}

/* The body of a string whose head (argument arg) was just read. */
static void string_body(struct el_cbor_dec *d, uint8_t major, uint64_t arg, uint32_t max,
			const uint8_t **p, uint32_t *n)
{
	if (arg > max || arg > d->len - d->pos) {
		dec_fail(d);
		return;
	}
	if (major == MAJOR_TEXT && !el_cbor_utf8_valid(d->buf + d->pos, (uint32_t)arg)) {
		dec_fail(d);
		return;
	}
	*p = d->buf + d->pos;
	*n = (uint32_t)arg;
	d->pos += (uint32_t)arg;
	EL_ASSERT(d->pos <= d->len);
	dec_done(d);
}

void el_cbor_get_bytes(struct el_cbor_dec *d, const uint8_t **p, uint32_t *n, uint32_t max)
{
	uint64_t arg = 0;

	*p = NULL;
	*n = 0;
	if (dec_expect(d, MAJOR_BYTES, &arg))
		string_body(d, MAJOR_BYTES, arg, max, p, n);
}

void el_cbor_get_text(struct el_cbor_dec *d, const char **s, uint32_t *n, uint32_t max)
{
	uint64_t arg = 0;
	const uint8_t *p = NULL;

	*n = 0;
	if (dec_expect(d, MAJOR_TEXT, &arg))
		string_body(d, MAJOR_TEXT, arg, max, &p, n);
	*s = (const char *)p;
}

/* The items of a container whose head (count arg) was just read. */
static void container_body(struct el_cbor_dec *d, uint8_t major, uint64_t arg, uint32_t max,
			   uint32_t *n)
{
	uint64_t items = major == MAJOR_MAP ? 2 * arg : arg;

	/* arg <= max keeps items below 2^33; each item takes at least a byte */
	if (arg > max || items > d->len - d->pos) {
		dec_fail(d);
		return;
	}
	if (!level_open(d->lv, &d->depth, d->buf, d->pos, (uint32_t)items, major == MAJOR_MAP)) {
		dec_fail(d);
		return;
	}
	*n = (uint32_t)arg;
}

void el_cbor_get_array(struct el_cbor_dec *d, uint32_t *n, uint32_t max)
{
	uint64_t arg = 0;

	*n = 0;
	if (dec_expect(d, MAJOR_ARRAY, &arg))
		container_body(d, MAJOR_ARRAY, arg, max, n);
}

void el_cbor_get_map(struct el_cbor_dec *d, uint32_t *n, uint32_t max)
{
	uint64_t arg = 0;

	*n = 0;
	if (dec_expect(d, MAJOR_MAP, &arg))
		container_body(d, MAJOR_MAP, arg, max, n);
}

void el_cbor_get_bool(struct el_cbor_dec *d, bool *b)
{
	uint64_t arg = 0;

	*b = false;
	if (!dec_expect(d, MAJOR_SIMPLE, &arg))
		return;
	if (arg == SIMPLE_NULL) {
		dec_fail(d);
		return;
	}
	*b = arg == SIMPLE_TRUE;
	dec_done(d);
}

void el_cbor_get_null(struct el_cbor_dec *d)
{
	uint64_t arg = 0;

	if (!dec_expect(d, MAJOR_SIMPLE, &arg))
		return;
	if (arg != SIMPLE_NULL) {
		dec_fail(d);
		return;
	}
	dec_done(d);
}

/* Consume the next item's head and, for a string, its body. */
static void skip_head(struct el_cbor_dec *d)
{
	uint64_t arg = 0;
	uint8_t major = 0;
	const uint8_t *p = NULL;
	uint32_t n = 0;

	if (!dec_head(d, &major, &arg))
		return;
	if (major == MAJOR_BYTES || major == MAJOR_TEXT)
		string_body(d, major, arg, UINT32_MAX, &p, &n);
	else if (major == MAJOR_ARRAY || major == MAJOR_MAP)
		container_body(d, major, arg, UINT32_MAX, &n);
	else
		dec_done(d);
}

void el_cbor_skip(struct el_cbor_dec *d)
{
	uint8_t start = d->depth;
	uint32_t guard;

	skip_head(d);
	/* each round consumes at least one byte, so len rounds always suffice */
	for (guard = 0; d->err == 0 && d->depth > start; guard++) {
		if (guard >= d->len) {
			dec_fail(d);
			return;
		}
		skip_head(d);
	}
}

int el_cbor_dec_finish(const struct el_cbor_dec *d)
{
	if (d->err != 0)
		return d->err;
	return d->pos == d->len && d->depth == 0 ? 0 : EL_EDECODE;
}
