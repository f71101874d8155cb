/*
 * test_cbor.c - unit tests of the CBOR writer and reader (core/cbor.c):
 * RFC 8949 Appendix A vectors within the supported subset, every head-size
 * boundary, the strictness rules (shortest form, definite lengths, subset,
 * UTF-8, map key order, depth), bounds on lengths and counts, truncation,
 * skip, sticky errors and a full output buffer.
 *
 * Runs on the host and on a Cortex-M under QEMU: no malloc, no files, big
 * buffers are static.
 */
#include <stdint.h>
#include <string.h>

#include "el_cbor.h"
#include "el_error.h"
#include "el_test.h"

static uint8_t in_buf[512];
static uint8_t out_buf[512];

/* Hex text (spaces ignored) to bytes; returns the byte count. */
static uint32_t hex(const char *s, uint8_t *out)
{
	uint32_t n = 0;
	int hi = -1;

	for (; *s != '\0'; s++) {
		int v = *s >= '0' && *s <= '9'   ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;
		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return n;
}

/*
 * Copy one CBOR stream item by item through the reader and the writer.
 * No recursion is needed: both sides track container ends themselves.
 * Returns the bytes written or a negative code.
 */
static int walk_copy(const uint8_t *in, uint32_t n, uint8_t *out, uint32_t cap)
{
	struct el_cbor_dec d;
	struct el_cbor_enc e;
	uint32_t guard;

	el_cbor_dec_init(&d, in, n);
	el_cbor_enc_init(&e, out, cap);
	for (guard = 0; d.pos < d.len && d.err == 0 && guard < n; guard++) {
		uint64_t u;
		int64_t i;
		const uint8_t *p;
		const char *s;
		uint32_t len;
		bool b;

		switch (el_cbor_peek(&d)) {
		case EL_CBOR_UINT: el_cbor_get_uint(&d, &u); el_cbor_put_uint(&e, u); break;
		case EL_CBOR_NINT: el_cbor_get_int(&d, &i); el_cbor_put_int(&e, i); break;
		case EL_CBOR_BYTES: el_cbor_get_bytes(&d, &p, &len, UINT32_MAX); el_cbor_put_bytes(&e, p, len); break;
		case EL_CBOR_TEXT: el_cbor_get_text(&d, &s, &len, UINT32_MAX); el_cbor_put_text(&e, s, len); break;
		case EL_CBOR_ARRAY: el_cbor_get_array(&d, &len, UINT32_MAX); el_cbor_put_array(&e, len); break;
		case EL_CBOR_MAP: el_cbor_get_map(&d, &len, UINT32_MAX); el_cbor_put_map(&e, len); break;
		case EL_CBOR_BOOL: el_cbor_get_bool(&d, &b); el_cbor_put_bool(&e, b); break;
		case EL_CBOR_NULL: el_cbor_get_null(&d); el_cbor_put_null(&e); break;
		default: return EL_EDECODE;
		}
	}
	if (el_cbor_dec_finish(&d) != 0)
		return EL_EDECODE;
	return el_cbor_enc_finish(&e);
}

/* 0 when the stream is accepted whole by el_cbor_skip, else the error. */
static int skip_all(const uint8_t *in, uint32_t n)
{
	struct el_cbor_dec d;
	uint32_t guard;

	el_cbor_dec_init(&d, in, n);
	for (guard = 0; d.pos < d.len && d.err == 0 && guard < n; guard++)
		el_cbor_skip(&d);
	return el_cbor_dec_finish(&d);
}

/* Both the walk and skip accept the hex text, and the walk re-encodes it
 * byte for byte. */
static int accepted_same(const char *text)
{
	uint32_t n = hex(text, in_buf);
	int len = walk_copy(in_buf, n, out_buf, sizeof(out_buf));

	return len == (int)n && memcmp(in_buf, out_buf, n) == 0 && skip_all(in_buf, n) == 0;
}

/* Both the walk and skip refuse the hex text. */
static int refused(const char *text)
{
	uint32_t n = hex(text, in_buf);

	return walk_copy(in_buf, n, out_buf, sizeof(out_buf)) < 0 && skip_all(in_buf, n) != 0;
}

/* ---- RFC 8949 Appendix A ------------------------------------------------- */

struct uint_vec {
	uint64_t v;
	const char *hex;
};

static const struct uint_vec rfc_uints[] = {
	{0, "00"}, {1, "01"}, {10, "0a"}, {23, "17"}, {24, "1818"}, {25, "1819"},
	{100, "1864"}, {1000, "1903e8"}, {1000000, "1a000f4240"},
	{1000000000000ull, "1b000000e8d4a51000"}, {UINT64_MAX, "1bffffffffffffffff"},
};

struct int_vec {
	int64_t v;
	const char *hex;
};

static const struct int_vec rfc_ints[] = {
	{-1, "20"}, {-10, "29"}, {-100, "3863"}, {-1000, "3903e7"}, {0, "00"}, {100, "1864"},
};

static void test_rfc_uints(void)
{
	uint8_t want[16];
	uint32_t i;

	for (i = 0; i < sizeof(rfc_uints) / sizeof(rfc_uints[0]); i++) {
		struct el_cbor_enc e;
		struct el_cbor_dec d;
		uint32_t n = hex(rfc_uints[i].hex, want);
		uint64_t got = 0;

		el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
		el_cbor_put_uint(&e, rfc_uints[i].v);
		EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
		EL_CHECK(memcmp(out_buf, want, n) == 0);
		el_cbor_dec_init(&d, want, n);
		EL_CHECK_EQ(el_cbor_peek(&d), EL_CBOR_UINT);
		el_cbor_get_uint(&d, &got);
		EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
		EL_CHECK(got == rfc_uints[i].v);
	}
}

static void test_rfc_ints(void)
{
	uint8_t want[16];
	uint32_t i;

	for (i = 0; i < sizeof(rfc_ints) / sizeof(rfc_ints[0]); i++) {
		struct el_cbor_enc e;
		struct el_cbor_dec d;
		uint32_t n = hex(rfc_ints[i].hex, want);
		int64_t got = 0;

		el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
		el_cbor_put_int(&e, rfc_ints[i].v);
		EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
		EL_CHECK(memcmp(out_buf, want, n) == 0);
		el_cbor_dec_init(&d, want, n);
		el_cbor_get_int(&d, &got);
		EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
		EL_CHECK_EQ(got, rfc_ints[i].v);
	}
}

static void test_rfc_simple_values(void)
{
	struct el_cbor_enc e;
	struct el_cbor_dec d;
	uint8_t want[4];
	bool f = true, t = false;

	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_bool(&e, false);
	el_cbor_put_bool(&e, true);
	el_cbor_put_null(&e);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), 3);
	EL_CHECK(memcmp(out_buf, want, hex("f4 f5 f6", want)) == 0);
	el_cbor_dec_init(&d, want, 3);
	EL_CHECK_EQ(el_cbor_peek(&d), EL_CBOR_BOOL);
	el_cbor_get_bool(&d, &f);
	el_cbor_get_bool(&d, &t);
	EL_CHECK_EQ(el_cbor_peek(&d), EL_CBOR_NULL);
	el_cbor_get_null(&d);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
	EL_CHECK(!f && t);
}

static void test_rfc_strings(void)
{
	static const char *const texts[][2] = {
		{"", "60"}, {"a", "6161"}, {"IETF", "6449455446"}, {"\"\\", "62225c"},
		{"\xc3\xbc", "62c3bc"}, {"\xe6\xb0\xb4", "63e6b0b4"},
		{"\xf0\x90\x85\x91", "64f0908591"},
	};
	uint8_t want[16];
	uint32_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct el_cbor_enc e;
		struct el_cbor_dec d;
		uint32_t n = hex(texts[i][1], want), len = 99;
		const char *s = NULL;

		el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
		el_cbor_put_text(&e, texts[i][0], (uint32_t)strlen(texts[i][0]));
		EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
		EL_CHECK(memcmp(out_buf, want, n) == 0);
		el_cbor_dec_init(&d, want, n);
		EL_CHECK_EQ(el_cbor_peek(&d), EL_CBOR_TEXT);
		el_cbor_get_text(&d, &s, &len, 64);
		EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
		EL_CHECK_EQ(len, strlen(texts[i][0]));
		EL_CHECK(memcmp(s, texts[i][0], len) == 0);
	}
}

static void test_rfc_bytes(void)
{
	static const uint8_t four[] = {1, 2, 3, 4};
	struct el_cbor_enc e;
	struct el_cbor_dec d;
	uint8_t want[16];
	const uint8_t *p = NULL;
	uint32_t n = hex("40 44 01020304", want), len = 9;

	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_bytes(&e, NULL, 0);
	el_cbor_put_bytes(&e, four, 4);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
	EL_CHECK(memcmp(out_buf, want, n) == 0);
	el_cbor_dec_init(&d, want, n);
	el_cbor_get_bytes(&d, &p, &len, 4);
	EL_CHECK_EQ(len, 0);
	EL_CHECK_EQ(el_cbor_peek(&d), EL_CBOR_BYTES);
	el_cbor_get_bytes(&d, &p, &len, 4);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
	EL_CHECK_EQ(len, 4);
	EL_CHECK(p == want + 2);
}

static void test_rfc_containers_encode(void)
{
	struct el_cbor_enc e;
	uint8_t want[64];
	uint32_t n, i;

	/* [1, [2, 3], [4, 5]] */
	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_array(&e, 3);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_array(&e, 2);
	el_cbor_put_uint(&e, 2);
	el_cbor_put_uint(&e, 3);
	el_cbor_put_array(&e, 2);
	el_cbor_put_uint(&e, 4);
	el_cbor_put_uint(&e, 5);
	n = hex("8301820203820405", want);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
	EL_CHECK(memcmp(out_buf, want, n) == 0);

	/* [1, 2, ..., 25] needs a one-byte count */
	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_array(&e, 25);
	for (i = 1; i <= 25; i++)
		el_cbor_put_uint(&e, i);
	n = hex("98190102030405060708090a0b0c0d0e0f101112131415161718181819", want);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
	EL_CHECK(memcmp(out_buf, want, n) == 0);

	/* {"a": 1, "b": [2, 3]} */
	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_map(&e, 2);
	el_cbor_put_text(&e, "a", 1);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_text(&e, "b", 1);
	el_cbor_put_array(&e, 2);
	el_cbor_put_uint(&e, 2);
	el_cbor_put_uint(&e, 3);
	n = hex("a26161016162820203", want);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
	EL_CHECK(memcmp(out_buf, want, n) == 0);
}

static void test_rfc_containers_decode(void)
{
	static const char *const vectors[] = {
		"80", "83010203", "8301820203820405",
		"98190102030405060708090a0b0c0d0e0f101112131415161718181819",
		"a0", "a201020304", "a26161016162820203", "826161a161626163",
		"a56161614161626142616361436164614461656145",
	};
	uint32_t i;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		EL_CHECK(accepted_same(vectors[i]));
}

static void test_rfc_outside_subset_refused(void)
{
	static const char *const vectors[] = {
		"f90000", "f93c00", "f97c00", "fa47c35000", "fb3ff199999999999a", /* floats */
		"f7", "f0", "f8ff",                                           /* undefined, simple */
		"c074323031332d30332d32315432303a30343a30305a", "c11a514b67b0",  /* tags */
		"d74401020304", "c249010000000000000000",
		"5f42010243030405ff", "7f657374726561646d696e67ff", "9fff", "9f018202039f0405ffff",
		"bf61610161629f0203ffff", "ff", /* indefinite lengths, a lone break */
		"1c", "1d", "1e", "3c", "5c", "7c", "9c", "bc", /* reserved additional info */
	};
	uint32_t i;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		EL_CHECK(refused(vectors[i]));
	/* -2^64 is well-formed (skip walks over it) but outside get_int's range */
	EL_CHECK_EQ(skip_all(in_buf, hex("3bffffffffffffffff", in_buf)), 0);
	EL_CHECK(walk_copy(in_buf, 9, out_buf, sizeof(out_buf)) < 0);
}

/* ---- Head sizes ---------------------------------------------------------- */

struct boundary {
	uint64_t v;
	uint32_t size; /* bytes of the head */
	uint8_t ai;    /* additional information of the first byte */
};

static const struct boundary boundaries[] = {
	{0, 1, 0}, {23, 1, 23}, {24, 2, 24}, {255, 2, 24}, {256, 3, 25},
	{65535, 3, 25}, {65536, 5, 26}, {0xffffffffu, 5, 26}, {0x100000000ull, 9, 27},
	{UINT64_MAX, 9, 27},
};

static void test_uint_head_boundaries(void)
{
	uint32_t i;

	for (i = 0; i < sizeof(boundaries) / sizeof(boundaries[0]); i++) {
		struct el_cbor_enc e;
		struct el_cbor_dec d;
		uint64_t got = 1;

		el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
		el_cbor_put_uint(&e, boundaries[i].v);
		EL_CHECK_EQ(el_cbor_enc_finish(&e), boundaries[i].size);
		EL_CHECK_EQ(out_buf[0], boundaries[i].ai);
		EL_CHECK_EQ(EL_CBOR_HEAD_SIZE(boundaries[i].v), boundaries[i].size);
		el_cbor_dec_init(&d, out_buf, boundaries[i].size);
		el_cbor_get_uint(&d, &got);
		EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
		EL_CHECK(got == boundaries[i].v);
	}
}

/* Negative integers -1 - v for the same boundaries, while within int64. */
static void test_nint_head_boundaries(void)
{
	uint32_t i;

	for (i = 0; i < sizeof(boundaries) / sizeof(boundaries[0]); i++) {
		struct el_cbor_enc e;
		struct el_cbor_dec d;
		int64_t v, got = 0;

		if (boundaries[i].v > INT64_MAX)
			continue;
		v = -1 - (int64_t)boundaries[i].v;
		el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
		el_cbor_put_int(&e, v);
		EL_CHECK_EQ(el_cbor_enc_finish(&e), boundaries[i].size);
		EL_CHECK_EQ(out_buf[0], 0x20 | boundaries[i].ai);
		el_cbor_dec_init(&d, out_buf, boundaries[i].size);
		EL_CHECK_EQ(el_cbor_peek(&d), EL_CBOR_NINT);
		el_cbor_get_int(&d, &got);
		EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
		EL_CHECK(got == v);
	}
}

static void test_int64_extremes(void)
{
	struct el_cbor_enc e;
	struct el_cbor_dec d;
	uint8_t want[24];
	int64_t got = 0;
	uint64_t u = 0;
	uint32_t n = hex("3b7fffffffffffffff 1b7fffffffffffffff", want);

	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_int(&e, INT64_MIN);
	el_cbor_put_int(&e, INT64_MAX);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), n);
	EL_CHECK(memcmp(out_buf, want, n) == 0);
	el_cbor_dec_init(&d, want, n);
	el_cbor_get_int(&d, &got);
	EL_CHECK(got == INT64_MIN);
	el_cbor_get_int(&d, &got);
	EL_CHECK(got == INT64_MAX);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);

	/* one past either end does not fit an int64 */
	el_cbor_dec_init(&d, want, hex("1b8000000000000000", want));
	el_cbor_get_int(&d, &got);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, want, hex("3b8000000000000000", want));
	el_cbor_get_int(&d, &got);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	/* a negative integer is no uint */
	el_cbor_dec_init(&d, want, hex("20", want));
	el_cbor_get_uint(&d, &u);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
}

static void test_string_and_container_heads(void)
{
	/* lengths 23/24 and 255/256 for a byte string, counts for arrays */
	static const uint32_t lens[] = {0, 23, 24, 255, 256};
	uint32_t i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct el_cbor_enc e;
		struct el_cbor_dec d;
		const uint8_t *p = NULL;
		uint32_t n = 0, head = EL_CBOR_HEAD_SIZE(lens[i]);

		memset(in_buf, 0xab, sizeof(in_buf));
		el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
		el_cbor_put_bytes(&e, in_buf, lens[i]);
		EL_CHECK_EQ(el_cbor_enc_finish(&e), head + lens[i]);
		EL_CHECK_EQ(out_buf[0] >> 5, 2);
		el_cbor_dec_init(&d, out_buf, head + lens[i]);
		el_cbor_get_bytes(&d, &p, &n, 256);
		EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
		EL_CHECK_EQ(n, lens[i]);
	}
	EL_CHECK(accepted_same("9818 000102030405060708090a0b0c0d0e0f1011121314151617"));
	EL_CHECK(accepted_same("b818 00000100020003000400050006000700080009000a000b000c000d000e000f00"
			       "1000110012001300140015001600170018180000"));
}

/* ---- Strictness ---------------------------------------------------------- */

static void test_non_shortest_refused(void)
{
	static const char *const vectors[] = {
		"1800", "1817", "190000", "1900ff", "1a00000000", "1a0000ffff",
		"1b0000000000000000", "1b00000000ffffffff", /* uints */
		"3817", "3900ff", "3a0000ffff", "3b00000000ffffffff", /* negative ints */
		"5800", "5801ff", "590001ff", "7800", "780161", /* string lengths */
		"9800", "990001 00", "9a00000001 00", "b800", "b801 0000", /* counts */
	};
	uint32_t i;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		EL_CHECK(refused(vectors[i]));
	/* the shortest forms right at the boundaries are accepted */
	EL_CHECK(accepted_same("1818 18ff 190100 19ffff 1a00010000 1affffffff 1b0000000100000000"));
}

static void test_map_key_order(void)
{
	struct el_cbor_enc e;

	EL_CHECK(accepted_same("a2 0102 0304"));
	EL_CHECK(refused("a2 0304 0102"));          /* descending */
	EL_CHECK(refused("a2 0102 0103"));          /* duplicate */
	EL_CHECK(accepted_same("a2 0a00 2000"));    /* 10 (0x0a) sorts before -1 (0x20) */
	EL_CHECK(refused("a2 2000 0a00"));
	EL_CHECK(accepted_same("a2 616200 62616100")); /* "b" before "aa": shorter first */
	EL_CHECK(refused("a2 62616100 616200"));
	EL_CHECK(accepted_same("a2 17 00 1818 00"));   /* 23 then 24 */
	EL_CHECK(accepted_same("a2 01 a1 0000 02 a1 0000")); /* order is per map */

	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_map(&e, 2);
	el_cbor_put_uint(&e, 3);
	el_cbor_put_null(&e);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_null(&e);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EINVAL);
	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_map(&e, 2);
	el_cbor_put_text(&e, "k", 1);
	el_cbor_put_null(&e);
	el_cbor_put_text(&e, "k", 1);
	el_cbor_put_null(&e);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EINVAL);
}

static void test_utf8(void)
{
	static const char *const good[] = {
		"62c3bc", "63e6b0b4", "64f0908591", "64f48fbfbf", "63efbfbf", "637fc280", "63ed9fbf",
	};
	static const char *const bad[] = {
		"62c080", "63e08080", "63eda080", "63edbfbf", "64f4908080", "61ff", "6180",
		"61c3", "63f09f98", "62c328", "64f8888080", "62c1bf", "64f08f8080",
	};
	uint32_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		EL_CHECK(accepted_same(good[i]));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct el_cbor_enc e;
		uint32_t n = hex(bad[i], in_buf);

		EL_CHECK(refused(bad[i]));
		/* the writer refuses the same text, so it never writes what we refuse */
		el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
		el_cbor_put_text(&e, (const char *)in_buf + 1, n - 1);
		EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EINVAL);
		/* the same bytes are fine as a byte string */
		in_buf[0] = (uint8_t)(0x40 | (n - 1));
		EL_CHECK_EQ(skip_all(in_buf, n), 0);
	}
}

static void test_type_mismatch(void)
{
	struct el_cbor_dec d;
	uint64_t u = 7;
	bool b = true;
	const uint8_t *p = in_buf;
	uint32_t n = 5;

	el_cbor_dec_init(&d, in_buf, hex("6161", in_buf));
	el_cbor_get_uint(&d, &u);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	EL_CHECK(u == 0);
	el_cbor_dec_init(&d, in_buf, hex("6161", in_buf));
	el_cbor_get_bytes(&d, &p, &n, 8);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	EL_CHECK(p == NULL && n == 0);
	el_cbor_dec_init(&d, in_buf, hex("f6", in_buf));
	el_cbor_get_bool(&d, &b);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, in_buf, hex("f4", in_buf));
	el_cbor_get_null(&d);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, in_buf, hex("a0", in_buf));
	el_cbor_get_array(&d, &n, 4);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
}

static void test_peek(void)
{
	static const struct {
		const char *hex;
		enum el_cbor_type type;
	} cases[] = {
		{"00", EL_CBOR_UINT}, {"20", EL_CBOR_NINT}, {"40", EL_CBOR_BYTES},
		{"60", EL_CBOR_TEXT}, {"80", EL_CBOR_ARRAY}, {"a0", EL_CBOR_MAP},
		{"f4", EL_CBOR_BOOL}, {"f5", EL_CBOR_BOOL}, {"f6", EL_CBOR_NULL},
		{"f7", EL_CBOR_INVALID}, {"c0", EL_CBOR_INVALID}, {"f93c00", EL_CBOR_INVALID},
		{"5f", EL_CBOR_INVALID}, {"1c", EL_CBOR_INVALID}, {"", EL_CBOR_INVALID},
	};
	uint32_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct el_cbor_dec d;

		el_cbor_dec_init(&d, in_buf, hex(cases[i].hex, in_buf));
		EL_CHECK_EQ(el_cbor_peek(&d), cases[i].type);
		EL_CHECK_EQ(d.pos, 0); /* peek consumes nothing */
	}
}

/* ---- Bounds -------------------------------------------------------------- */

/* A stream with every supported kind of item, nested. */
static uint32_t rich_stream(uint8_t *buf, uint32_t cap)
{
	struct el_cbor_enc e;
	static const uint8_t blob[300] = {1, 2, 3};
	int n;

	el_cbor_enc_init(&e, buf, cap);
	el_cbor_put_map(&e, 3);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_array(&e, 6);
	el_cbor_put_uint(&e, 0x1234567890ull);
	el_cbor_put_int(&e, -300);
	el_cbor_put_bool(&e, true);
	el_cbor_put_null(&e);
	el_cbor_put_text(&e, "h\xc3\xa9llo", 6);
	el_cbor_put_array(&e, 0);
	el_cbor_put_uint(&e, 2);
	el_cbor_put_bytes(&e, blob, sizeof(blob));
	el_cbor_put_text(&e, "z", 1);
	el_cbor_put_map(&e, 1);
	el_cbor_put_int(&e, -1);
	el_cbor_put_array(&e, 1);
	el_cbor_put_bool(&e, false);
	n = el_cbor_enc_finish(&e);
	return n > 0 ? (uint32_t)n : 0;
}

static void test_truncation_refused(void)
{
	uint32_t n = rich_stream(in_buf, sizeof(in_buf)), cut;

	EL_CHECK(n > 300);
	EL_CHECK_EQ(walk_copy(in_buf, n, out_buf, sizeof(out_buf)), n);
	EL_CHECK_EQ(skip_all(in_buf, n), 0);
	/* from 1: the empty stream is a valid, empty sequence */
	for (cut = 1; cut < n; cut++) {
		EL_CHECK(walk_copy(in_buf, cut, out_buf, sizeof(out_buf)) < 0);
		EL_CHECK_EQ(skip_all(in_buf, cut), EL_EDECODE);
	}
}

static void test_oversized_lengths_refused(void)
{
	/* heads claiming more than the input holds, in buffers holding only
	 * the head: reading past it would trip AddressSanitizer */
	static uint8_t b32[5] = {0x5a, 0xff, 0xff, 0xff, 0xff};
	static uint8_t t64[9] = {0x7b, 0x80, 0, 0, 0, 0, 0, 0, 0};
	static uint8_t a32[5] = {0x9a, 0xff, 0xff, 0xff, 0xff};
	static uint8_t m32[5] = {0xba, 0x80, 0, 0, 0};
	static uint8_t b3[4] = {0x43, 1, 2, 3};
	struct el_cbor_dec d;
	const uint8_t *p;
	const char *s;
	uint32_t n = 7;

	el_cbor_dec_init(&d, b32, sizeof(b32));
	el_cbor_get_bytes(&d, &p, &n, UINT32_MAX);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, t64, sizeof(t64));
	el_cbor_get_text(&d, &s, &n, UINT32_MAX);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, a32, sizeof(a32));
	el_cbor_get_array(&d, &n, UINT32_MAX);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, m32, sizeof(m32));
	el_cbor_skip(&d);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	/* the caller's maximum counts even when the bytes are there */
	el_cbor_dec_init(&d, b3, sizeof(b3));
	el_cbor_get_bytes(&d, &p, &n, 2);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, b3, sizeof(b3));
	el_cbor_get_bytes(&d, &p, &n, 3);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
	EL_CHECK(refused("83 0102"));      /* 3 items, 2 bytes left */
	EL_CHECK(refused("a2 0102 03"));   /* 2 pairs need 4 items */
	el_cbor_dec_init(&d, in_buf, hex("83 010203", in_buf));
	el_cbor_get_array(&d, &n, 2);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, in_buf, hex("a1 0102", in_buf));
	el_cbor_get_map(&d, &n, 0);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
}

static void test_depth_limit(void)
{
	struct el_cbor_enc e;
	struct el_cbor_dec d;
	uint32_t i, n = 0;

	/* EL_CBOR_DEPTH_MAX nested arrays are fine, one more is not */
	memset(in_buf, 0x81, EL_CBOR_DEPTH_MAX);
	in_buf[EL_CBOR_DEPTH_MAX - 1] = 0x80;
	EL_CHECK_EQ(walk_copy(in_buf, EL_CBOR_DEPTH_MAX, out_buf, sizeof(out_buf)), EL_CBOR_DEPTH_MAX);
	EL_CHECK_EQ(skip_all(in_buf, EL_CBOR_DEPTH_MAX), 0);
	memset(in_buf, 0x81, EL_CBOR_DEPTH_MAX + 1);
	in_buf[EL_CBOR_DEPTH_MAX] = 0xa0;
	EL_CHECK(walk_copy(in_buf, EL_CBOR_DEPTH_MAX + 1, out_buf, sizeof(out_buf)) < 0);
	EL_CHECK_EQ(skip_all(in_buf, EL_CBOR_DEPTH_MAX + 1), EL_EDECODE);
	el_cbor_dec_init(&d, in_buf, EL_CBOR_DEPTH_MAX + 1);
	for (i = 0; i < EL_CBOR_DEPTH_MAX; i++)
		el_cbor_get_array(&d, &n, 1);
	EL_CHECK_EQ(el_cbor_dec_error(&d), 0);
	el_cbor_get_map(&d, &n, 1);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	/* a deep stream of siblings is no deeper than its nesting */
	EL_CHECK(accepted_same("84 81 81 80 81 80 81 81 80 81 81 81 81 81 81 80"));

	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	for (i = 0; i < EL_CBOR_DEPTH_MAX; i++)
		el_cbor_put_array(&e, 1);
	EL_CHECK_EQ(e.err, 0);
	el_cbor_put_map(&e, 0);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EINVAL);
}

static void test_skip(void)
{
	struct el_cbor_dec d;
	uint32_t n = rich_stream(in_buf, sizeof(in_buf)), len = 0;
	uint64_t u = 0;
	bool b = true;

	/* skip a whole map, then read what follows */
	in_buf[n] = 0x07;
	el_cbor_dec_init(&d, in_buf, n + 1);
	el_cbor_skip(&d);
	EL_CHECK_EQ(d.pos, n);
	el_cbor_get_uint(&d, &u);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
	EL_CHECK_EQ(u, 7);

	/* skip values inside a map: {1: [..], 2: h'..', "z": {-1: [false]}} */
	el_cbor_dec_init(&d, in_buf, n);
	el_cbor_get_map(&d, &len, 3);
	el_cbor_get_uint(&d, &u);
	el_cbor_skip(&d);
	el_cbor_skip(&d);
	el_cbor_skip(&d);
	el_cbor_skip(&d);
	el_cbor_get_map(&d, &len, 1);
	el_cbor_skip(&d);
	el_cbor_get_array(&d, &len, 1);
	el_cbor_get_bool(&d, &b);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
	EL_CHECK(!b);

	/* skip stops at the first bad item and reports it */
	el_cbor_dec_init(&d, in_buf, hex("82 01 c0 00", in_buf));
	el_cbor_skip(&d);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_dec_init(&d, in_buf, 0);
	el_cbor_skip(&d);
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
}

/* ---- Errors and the end of input ----------------------------------------- */

static void test_dec_sticky_error(void)
{
	struct el_cbor_dec d;
	uint64_t u = 9;
	uint32_t pos;

	el_cbor_dec_init(&d, in_buf, hex("6161 01 02", in_buf));
	el_cbor_get_uint(&d, &u); /* a text string: error */
	pos = d.pos;
	EL_CHECK_EQ(el_cbor_dec_error(&d), EL_EDECODE);
	el_cbor_skip(&d);
	el_cbor_get_uint(&d, &u);
	EL_CHECK(u == 0);
	EL_CHECK_EQ(d.pos, pos);
	EL_CHECK_EQ(el_cbor_peek(&d), EL_CBOR_INVALID);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), EL_EDECODE);
}

static void test_dec_finish(void)
{
	struct el_cbor_dec d;
	uint64_t u = 0;
	uint32_t n = 0;

	el_cbor_dec_init(&d, in_buf, hex("01 02", in_buf));
	el_cbor_get_uint(&d, &u);
	EL_CHECK_EQ(el_cbor_dec_error(&d), 0);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), EL_EDECODE); /* a byte left */
	el_cbor_dec_init(&d, in_buf, hex("82 01 02", in_buf));
	el_cbor_get_array(&d, &n, 2);
	el_cbor_get_uint(&d, &u);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), EL_EDECODE); /* array not read to its end */
	/* [[1], ...]: every byte read, yet the outer array misses an item */
	el_cbor_dec_init(&d, in_buf, hex("82 81 01", in_buf));
	el_cbor_get_array(&d, &n, 2);
	el_cbor_get_array(&d, &n, 2);
	el_cbor_get_uint(&d, &u);
	EL_CHECK_EQ(el_cbor_dec_error(&d), 0);
	EL_CHECK_EQ(d.pos, 3);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), EL_EDECODE);
	el_cbor_dec_init(&d, NULL, 10);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), 0);
	el_cbor_get_uint(&d, &u);
	EL_CHECK_EQ(el_cbor_dec_finish(&d), EL_EDECODE);
}

static void test_enc_full(void)
{
	static uint8_t ref[512];
	uint32_t n = rich_stream(ref, sizeof(ref)), cap;

	EL_CHECK(n > 0);
	EL_CHECK_EQ(rich_stream(out_buf, n), n);
	EL_CHECK(memcmp(out_buf, ref, n) == 0);
	for (cap = 0; cap < n; cap++) {
		struct el_cbor_enc e;

		memset(out_buf, 0xee, sizeof(out_buf));
		EL_CHECK_EQ(rich_stream(out_buf, cap), 0);
		EL_CHECK(out_buf[cap] == 0xee); /* nothing written past cap */
		el_cbor_enc_init(&e, out_buf, cap);
		el_cbor_put_array(&e, 1);
		el_cbor_put_bytes(&e, ref, n);
		EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EFULL);
	}
}

static void test_enc_sticky_error(void)
{
	struct el_cbor_enc e;
	static const uint8_t big[8] = {0};

	el_cbor_enc_init(&e, out_buf, 4);
	el_cbor_put_bytes(&e, big, 8); /* does not fit */
	EL_CHECK_EQ(e.len, 0);
	el_cbor_put_uint(&e, 1); /* would fit, but the error sticks */
	EL_CHECK_EQ(e.len, 0);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EFULL);

	el_cbor_enc_init(&e, out_buf, 64);
	el_cbor_put_bytes(&e, NULL, 3); /* misuse */
	el_cbor_put_uint(&e, 1);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EINVAL);
	EL_CHECK_EQ(e.len, 0);
}

static void test_enc_incomplete_container(void)
{
	struct el_cbor_enc e;

	el_cbor_enc_init(&e, out_buf, sizeof(out_buf));
	el_cbor_put_array(&e, 2);
	el_cbor_put_uint(&e, 1);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EINVAL);
	el_cbor_put_uint(&e, 2);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), 3);
	/* a count that cannot fit the space left fails at once */
	el_cbor_enc_init(&e, out_buf, 8);
	el_cbor_put_map(&e, 4);
	EL_CHECK_EQ(el_cbor_enc_finish(&e), EL_EFULL);
}

void el_suite_cbor(void)
{
	EL_RUN(test_rfc_uints);
	EL_RUN(test_rfc_ints);
	EL_RUN(test_rfc_simple_values);
	EL_RUN(test_rfc_strings);
	EL_RUN(test_rfc_bytes);
	EL_RUN(test_rfc_containers_encode);
	EL_RUN(test_rfc_containers_decode);
	EL_RUN(test_rfc_outside_subset_refused);
	EL_RUN(test_uint_head_boundaries);
	EL_RUN(test_nint_head_boundaries);
	EL_RUN(test_int64_extremes);
	EL_RUN(test_string_and_container_heads);
	EL_RUN(test_non_shortest_refused);
	EL_RUN(test_map_key_order);
	EL_RUN(test_utf8);
	EL_RUN(test_type_mismatch);
	EL_RUN(test_peek);
	EL_RUN(test_truncation_refused);
	EL_RUN(test_oversized_lengths_refused);
	EL_RUN(test_depth_limit);
	EL_RUN(test_skip);
	EL_RUN(test_dec_sticky_error);
	EL_RUN(test_dec_finish);
	EL_RUN(test_enc_full);
	EL_RUN(test_enc_sticky_error);
	EL_RUN(test_enc_incomplete_container);
}
