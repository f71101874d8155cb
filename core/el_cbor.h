/*
 * el_cbor.h - a freestanding, bounded CBOR (RFC 8949) writer and reader.
 *
 * The writer emits core deterministic encoding (RFC 8949 section 4.2.1):
 * shortest-form heads, definite lengths only, map keys in strictly ascending
 * bytewise order of their encodings (the caller writes them in that order;
 * the writer checks it and fails with EL_EINVAL otherwise). The reader is
 * strict: it accepts exactly that form (so every value has one encoding),
 * refuses indefinite lengths, tags, floats, simple values other than
 * false/true/null, text that is not valid UTF-8, and map keys out of order
 * or repeated, and checks every length and count against the bytes left and
 * the caller's maximum before touching memory. No allocation, no recursion:
 * nesting depth is bounded by EL_CBOR_DEPTH_MAX and tracked in a fixed array.
 *
 * Both sides count the items of each open array and map, so the writer and
 * the reader know where every container ends: el_cbor_skip() needs no
 * recursion, and el_cbor_enc_finish()/el_cbor_dec_finish() fail when a
 * container was left incomplete.
 *
 * Errors are sticky: after the first failure every call is a no-op (outputs
 * are zeroed) and el_cbor_enc_finish()/el_cbor_dec_finish() report it, so
 * encoders and decoders read as straight-line code with one check at the end.
 */
#ifndef EL_CBOR_H
#define EL_CBOR_H

#include <stdbool.h>
#include <stdint.h>

/* EL_CBOR_DEPTH_MAX, how deep arrays and maps nest, is in el_config.h. */
#include "el_config.h"

/* Bytes of the shortest head carrying argument v: a constant expression for
 * worst-case message sizes. Written with shifts so that a narrow v draws no
 * "comparison is always true" warning. */
#define EL_CBOR_HEAD_SIZE(v)                                                  \
	((uint64_t)(v) < 24 ? 1u : ((uint64_t)(v) >> 8) == 0 ? 2u :          \
	 ((uint64_t)(v) >> 16) == 0 ? 3u : ((uint64_t)(v) >> 32) == 0 ? 5u : 9u)

enum el_cbor_type {
	EL_CBOR_UINT = 0,
	EL_CBOR_NINT = 1,
	EL_CBOR_BYTES = 2,
	EL_CBOR_TEXT = 3,
	EL_CBOR_ARRAY = 4,
	EL_CBOR_MAP = 5,
	EL_CBOR_BOOL = 6,
	EL_CBOR_NULL = 7,
	EL_CBOR_INVALID = 8,
};

/* Private: one open array or map. */
struct el_cbor_level {
	uint32_t left;         /* items still to come (a map pair counts 2) */
	uint32_t key_start;    /* map: offset of the key being read/written */
	uint32_t prev_key;     /* map: offset of the previous key */
	uint32_t prev_key_len; /* map: its length; 0 before the first key */
	bool map;
};

struct el_cbor_enc {
	uint8_t *buf;
	uint32_t cap;
	uint32_t len;
	int err; /* 0 or EL_EFULL (no room) / EL_EINVAL (misuse: depth, key order, bad UTF-8) */
	uint8_t depth;
	struct el_cbor_level lv[EL_CBOR_DEPTH_MAX];
};

void el_cbor_enc_init(struct el_cbor_enc *e, uint8_t *buf, uint32_t cap);
void el_cbor_put_uint(struct el_cbor_enc *e, uint64_t v);
void el_cbor_put_int(struct el_cbor_enc *e, int64_t v);
/* p may be NULL when n is 0. */
void el_cbor_put_bytes(struct el_cbor_enc *e, const uint8_t *p, uint32_t n);
/* s must be valid UTF-8 (else EL_EINVAL); no terminating NUL is written. */
void el_cbor_put_text(struct el_cbor_enc *e, const char *s, uint32_t n);
/* Container heads; exactly n items (n key/value pairs) must follow. */
void el_cbor_put_array(struct el_cbor_enc *e, uint32_t n);
void el_cbor_put_map(struct el_cbor_enc *e, uint32_t n);
void el_cbor_put_bool(struct el_cbor_enc *e, bool b);
void el_cbor_put_null(struct el_cbor_enc *e);
/* Bytes written, or the first error (negative); EL_EINVAL when a container
 * is still open. */
int el_cbor_enc_finish(const struct el_cbor_enc *e);

struct el_cbor_dec {
	const uint8_t *buf;
	uint32_t len;
	uint32_t pos;
	int err; /* 0 or EL_EDECODE */
	uint8_t depth;
	struct el_cbor_level lv[EL_CBOR_DEPTH_MAX];
};

void el_cbor_dec_init(struct el_cbor_dec *d, const uint8_t *buf, uint32_t len);
/* Type of the next item without consuming it (EL_CBOR_INVALID at end/error,
 * or for a head the reader never accepts: tag, float, other simple values,
 * reserved or indefinite lengths). */
enum el_cbor_type el_cbor_peek(const struct el_cbor_dec *d);
void el_cbor_get_uint(struct el_cbor_dec *d, uint64_t *v);
/* A uint that must be <= max (else EL_EDECODE). */
void el_cbor_get_uint_max(struct el_cbor_dec *d, uint64_t max, uint64_t *v);
/* Any integer in [INT64_MIN, INT64_MAX]. */
void el_cbor_get_int(struct el_cbor_dec *d, int64_t *v);
/* Byte/text strings point into the input; length must be <= max. Text is
 * checked to be valid UTF-8 and is not NUL-terminated. */
void el_cbor_get_bytes(struct el_cbor_dec *d, const uint8_t **p, uint32_t *n, uint32_t max);
void el_cbor_get_text(struct el_cbor_dec *d, const char **s, uint32_t *n, uint32_t max);
/* Container heads; the count must be <= max. */
void el_cbor_get_array(struct el_cbor_dec *d, uint32_t *n, uint32_t max);
void el_cbor_get_map(struct el_cbor_dec *d, uint32_t *n, uint32_t max);
void el_cbor_get_bool(struct el_cbor_dec *d, bool *b);
void el_cbor_get_null(struct el_cbor_dec *d);
/* Skip one whole item (nested up to EL_CBOR_DEPTH_MAX), iteratively, with
 * the same checks as the get functions. */
void el_cbor_skip(struct el_cbor_dec *d);
/* 0 when no error occurred, every byte was consumed and every container
 * read to its end, else EL_EDECODE. */
int el_cbor_dec_finish(const struct el_cbor_dec *d);
/* 0 when no error occurred so far (bytes may remain). */
static inline int el_cbor_dec_error(const struct el_cbor_dec *d) { return d->err; }

/* True when p[0..n) is valid UTF-8 (RFC 3629: shortest forms, no surrogates,
 * at most U+10FFFF). */
bool el_cbor_utf8_valid(const uint8_t *p, uint32_t n);

#endif /* EL_CBOR_H */
