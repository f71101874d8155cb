/*
 * oracle.c - random libcbor items, conversion between libcbor items and
 * edgelock's CBOR reader/writer, and deep comparison (see oracle.h).
 */
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

uint64_t oracle_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint64_t oracle_rand_uint(uint64_t *state)
{
	static const uint64_t edges[] = {0, 23, 24, 255, 256, 65535, 65536, 0xffffffffull,
					 0x100000000ull, UINT64_MAX};
	uint64_t r = oracle_rand(state);

	switch (r % 4) {
	case 0:
		return edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))] - ((r >> 16) & 1);
	case 1:
		return (r >> 8) % 30;
	default: /* random bit length, so every head size is common */
		return oracle_rand(state) >> (r >> 8) % 64;
	}
}

cbor_item_t *oracle_build_uint(uint64_t v)
{
	if (v <= UINT8_MAX)
		return cbor_build_uint8((uint8_t)v);
	if (v <= UINT16_MAX)
		return cbor_build_uint16((uint16_t)v);
	if (v <= UINT32_MAX)
		return cbor_build_uint32((uint32_t)v);
	return cbor_build_uint64(v);
}

cbor_item_t *oracle_build_negint(uint64_t n)
{
	if (n <= UINT8_MAX)
		return cbor_build_negint8((uint8_t)n);
	if (n <= UINT16_MAX)
		return cbor_build_negint16((uint16_t)n);
	if (n <= UINT32_MAX)
		return cbor_build_negint32((uint32_t)n);
	return cbor_build_negint64(n);
}

/* Append the UTF-8 encoding of one random scalar value to s. */
static size_t rand_codepoint(uint64_t *state, char *s)
{
	uint64_t r = oracle_rand(state);
	uint32_t cp;

	switch (r % 4) {
	case 0: cp = 0x80 + (uint32_t)(r >> 8) % 0x780; break;
	case 1: cp = 0x800 + (uint32_t)(r >> 8) % 0xf800; break;
	case 2: cp = 0x10000 + (uint32_t)(r >> 8) % 0x100000; break;
	default: cp = (uint32_t)(r >> 8) % 0x80; break;
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 'x';
	if (cp < 0x80) {
		s[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	s[0] = (char)(0xf0 | cp >> 18);
	s[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	s[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	s[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static cbor_item_t *rand_text(uint64_t *state, size_t max_cps)
{
	static char s[4 * 300];
	size_t n = oracle_rand(state) % (max_cps + 1), len = 0, i;

	for (i = 0; i < n; i++)
		len += rand_codepoint(state, s + len);
	return cbor_build_stringn(s, len);
}

static cbor_item_t *rand_bytes(uint64_t *state, size_t max)
{
	static uint8_t b[300];
	size_t n = oracle_rand(state) % (max + 1), i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)oracle_rand(state);
	return cbor_build_bytestring(b, n);
}

static cbor_item_t *rand_scalar(uint64_t *state, bool short_strings)
{
	uint64_t r = oracle_rand(state);

	switch (r % 7) {
	case 0: return oracle_build_uint(oracle_rand_uint(state));
	case 1: return oracle_build_negint(oracle_rand_uint(state) >> 1); /* within int64 */
	case 2: return rand_text(state, short_strings ? 6 : 40);
	case 3: return rand_bytes(state, short_strings ? 6 : (r >> 8) % 8 == 0 ? 300 : 30);
	case 4: return cbor_build_bool((r >> 8) & 1);
	case 5: return cbor_new_null();
	default: return oracle_build_uint((r >> 8) % 24);
	}
}

struct keyed {
	uint8_t enc[64];
	size_t len;
	cbor_item_t *key;
};

/* Bytewise order of the encodings, shorter first on a common prefix. */
static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->enc, y->enc, n);

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

static cbor_item_t *random_depth(uint64_t *state, int *budget, int depth);

static cbor_item_t *random_map(uint64_t *state, int *budget, int depth, size_t n)
{
	static struct keyed keys[EL_CBOR_DEPTH_MAX][40];
	struct keyed *k = keys[depth];
	size_t i, kept = 0;
	cbor_item_t *map;

	for (i = 0; i < n; i++) {
		k[i].key = rand_scalar(state, true);
		k[i].len = oracle_serialize(k[i].key, k[i].enc, sizeof(k[i].enc));
	}
	qsort(k, n, sizeof(k[0]), keyed_cmp);
	for (i = 0; i < n; i++) { /* drop repeated keys */
		if (kept > 0 && keyed_cmp(&k[kept - 1], &k[i]) == 0)
			cbor_decref(&k[i].key);
		else
			k[kept++] = k[i];
	}
	map = cbor_new_definite_map(kept);
	for (i = 0; i < kept; i++) {
		struct cbor_pair p = {cbor_move(k[i].key), cbor_move(random_depth(state, budget, depth + 1))};

		cbor_map_add(map, p);
	}
	return map;
}

static cbor_item_t *random_depth(uint64_t *state, int *budget, int depth)
{
	uint64_t r = oracle_rand(state);
	size_t n, i;
	cbor_item_t *arr;

	(*budget)--;
	if (depth >= EL_CBOR_DEPTH_MAX || *budget <= 0 || r % 3 != 0)
		return rand_scalar(state, false);
	n = (r >> 8) % 8 == 0 ? (r >> 16) % 30 : (r >> 16) % 5; /* sometimes past 23 */
	if ((r >> 24) & 1)
		return random_map(state, budget, depth, n);
	arr = cbor_new_definite_array(n);
	for (i = 0; i < n; i++)
		cbor_array_push(arr, cbor_move(random_depth(state, budget, depth + 1)));
	return arr;
}

cbor_item_t *oracle_random_item(uint64_t *state, int budget)
{
	return random_depth(state, &budget, 0);
}

size_t oracle_serialize(const cbor_item_t *item, uint8_t *buf, size_t cap)
{
	return cbor_serialize(item, buf, cap);
}

static bool put_container(struct el_cbor_enc *e, const cbor_item_t *item)
{
	size_t i;

	if (cbor_isa_array(item)) {
		el_cbor_put_array(e, (uint32_t)cbor_array_size(item));
		for (i = 0; i < cbor_array_size(item); i++)
			if (!oracle_put_item(e, cbor_array_handle(item)[i]))
				return false;
		return e->err == 0;
	}
	el_cbor_put_map(e, (uint32_t)cbor_map_size(item));
	for (i = 0; i < cbor_map_size(item); i++) {
		if (!oracle_put_item(e, cbor_map_handle(item)[i].key) ||
		    !oracle_put_item(e, cbor_map_handle(item)[i].value))
			return false;
	}
	return e->err == 0;
}

bool oracle_put_item(struct el_cbor_enc *e, const cbor_item_t *item)
{
	switch (cbor_typeof(item)) {
	case CBOR_TYPE_UINT:
		el_cbor_put_uint(e, cbor_get_int(item));
		break;
	case CBOR_TYPE_NEGINT:
		if (cbor_get_int(item) > INT64_MAX)
			return false;
		el_cbor_put_int(e, -1 - (int64_t)cbor_get_int(item));
		break;
	case CBOR_TYPE_BYTESTRING:
		el_cbor_put_bytes(e, cbor_bytestring_handle(item), (uint32_t)cbor_bytestring_length(item));
		break;
	case CBOR_TYPE_STRING:
		el_cbor_put_text(e, (const char *)cbor_string_handle(item), (uint32_t)cbor_string_length(item));
		break;
	case CBOR_TYPE_ARRAY:
	case CBOR_TYPE_MAP:
		return put_container(e, item);
	case CBOR_TYPE_FLOAT_CTRL:
		if (cbor_is_bool(item))
			el_cbor_put_bool(e, cbor_get_bool(item));
		else if (cbor_is_null(item))
			el_cbor_put_null(e);
		else
			return false;
		break;
	default:
		return false;
	}
	return e->err == 0;
}

static cbor_item_t *get_container(struct el_cbor_dec *d, bool map)
{
	uint32_t n = 0, i;
	cbor_item_t *c;

	if (map)
		el_cbor_get_map(d, &n, UINT32_MAX);
	else
		el_cbor_get_array(d, &n, UINT32_MAX);
	if (el_cbor_dec_error(d) != 0)
		return NULL;
	c = map ? cbor_new_definite_map(n) : cbor_new_definite_array(n);
	for (i = 0; i < n; i++) {
		cbor_item_t *k = oracle_get_item(d), *v = NULL;

		if (k != NULL && map)
			v = oracle_get_item(d);
		if (k == NULL || (map && v == NULL)) {
			if (k != NULL)
				cbor_decref(&k);
			cbor_decref(&c);
			return NULL;
		}
		if (map)
			cbor_map_add(c, (struct cbor_pair){cbor_move(k), cbor_move(v)});
		else
			cbor_array_push(c, cbor_move(k));
	}
	return c;
}

cbor_item_t *oracle_get_item(struct el_cbor_dec *d)
{
	uint64_t u = 0;
	int64_t i = 0;
	const uint8_t *p = NULL;
	const char *s = NULL;
	uint32_t n = 0;
	bool b = false;
	cbor_item_t *item = NULL;

	switch (el_cbor_peek(d)) {
	case EL_CBOR_UINT: el_cbor_get_uint(d, &u); item = oracle_build_uint(u); break;
	case EL_CBOR_NINT: el_cbor_get_int(d, &i); item = oracle_build_negint((uint64_t)(-1 - i)); break;
	case EL_CBOR_BYTES: el_cbor_get_bytes(d, &p, &n, UINT32_MAX); item = cbor_build_bytestring(p, n); break;
	case EL_CBOR_TEXT: el_cbor_get_text(d, &s, &n, UINT32_MAX); item = cbor_build_stringn(s, n); break;
	case EL_CBOR_ARRAY: return get_container(d, false);
	case EL_CBOR_MAP: return get_container(d, true);
	case EL_CBOR_BOOL: el_cbor_get_bool(d, &b); item = cbor_build_bool(b); break;
	case EL_CBOR_NULL: el_cbor_get_null(d); item = cbor_new_null(); break;
	default: return NULL;
	}
	if (el_cbor_dec_error(d) != 0 && item != NULL)
		cbor_decref(&item);
	return item;
}

/* memcmp, but libcbor may hold an empty string as a NULL handle */
static bool mem_eq(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

static bool ctrl_equal(const cbor_item_t *a, const cbor_item_t *b)
{
	return cbor_float_ctrl_is_ctrl(a) && cbor_float_ctrl_is_ctrl(b) &&
	       cbor_ctrl_value(a) == cbor_ctrl_value(b);
}

static bool containers_equal(const cbor_item_t *a, const cbor_item_t *b)
{
	size_t i;

	if (cbor_isa_array(a)) {
		if (!cbor_array_is_definite(a) || !cbor_array_is_definite(b) ||
		    cbor_array_size(a) != cbor_array_size(b))
			return false;
		for (i = 0; i < cbor_array_size(a); i++)
			if (!oracle_items_equal(cbor_array_handle(a)[i], cbor_array_handle(b)[i]))
				return false;
		return true;
	}
	if (!cbor_map_is_definite(a) || !cbor_map_is_definite(b) || cbor_map_size(a) != cbor_map_size(b))
		return false;
	for (i = 0; i < cbor_map_size(a); i++)
		if (!oracle_items_equal(cbor_map_handle(a)[i].key, cbor_map_handle(b)[i].key) ||
		    !oracle_items_equal(cbor_map_handle(a)[i].value, cbor_map_handle(b)[i].value))
			return false;
	return true;
}

bool oracle_items_equal(const cbor_item_t *a, const cbor_item_t *b)
{
	if (cbor_typeof(a) != cbor_typeof(b))
		return false;
	switch (cbor_typeof(a)) {
	case CBOR_TYPE_UINT:
	case CBOR_TYPE_NEGINT:
		return cbor_int_get_width(a) == cbor_int_get_width(b) && cbor_get_int(a) == cbor_get_int(b);
	case CBOR_TYPE_BYTESTRING:
		return cbor_bytestring_is_definite(a) && cbor_bytestring_is_definite(b) &&
		       cbor_bytestring_length(a) == cbor_bytestring_length(b) &&
		       mem_eq(cbor_bytestring_handle(a), cbor_bytestring_handle(b), cbor_bytestring_length(a));
	case CBOR_TYPE_STRING:
		return cbor_string_is_definite(a) && cbor_string_is_definite(b) &&
		       cbor_string_length(a) == cbor_string_length(b) &&
		       mem_eq(cbor_string_handle(a), cbor_string_handle(b), cbor_string_length(a));
	case CBOR_TYPE_ARRAY:
	case CBOR_TYPE_MAP:
		return containers_equal(a, b);
	case CBOR_TYPE_FLOAT_CTRL:
		return ctrl_equal(a, b);
	default:
		return false;
	}
}
