/*
 * el_cbor.h - a freestanding, bounded CBOR (RFC 8949) writer and reader.
 *
 * The writer emits core deterministic encoding (RFC 8949 section 4.2.1):
 * shortest-form heads, definite lengths only. The reader is strict: it accepts
 * exactly that form (so every value has one encoding), refuses indefinite
 * lengths, tags, floats and simple values other than false/true/null, and
 * checks every length against the bytes left and the caller's maximum before
 * touching memory. No allocation, no recursion: nesting depth is bounded by
 * EL_CBOR_DEPTH_MAX and tracked in a fixed array.
 *
 * Errors are sticky: after the first failure every call is a no-op and
 * el_cbor_enc_finish()/el_cbor_dec_finish() report it, so encoders and
 * decoders read as straight-line code with one check at the end.
 */
#ifndef EL_CBOR_H
#define EL_CBOR_H

#include <stdbool.h>
#include <stdint.h>

#ifndef EL_CBOR_DEPTH_MAX
#define EL_CBOR_DEPTH_MAX 8
#endif

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

struct el_cbor_enc {
	uint8_t *buf;
	uint32_t cap;
	uint32_t len;
	int err; /* 0 or EL_EFULL / EL_EINVAL */
};

void el_cbor_enc_init(struct el_cbor_enc *e, uint8_t *buf, uint32_t cap);
void el_cbor_put_uint(struct el_cbor_enc *e, uint64_t v);
void el_cbor_put_int(struct el_cbor_enc *e, int64_t v);
void el_cbor_put_bytes(struct el_cbor_enc *e, const uint8_t *p, uint32_t n);
void el_cbor_put_text(struct el_cbor_enc *e, const char *s, uint32_t n);
void el_cbor_put_array(struct el_cbor_enc *e, uint32_t n);
void el_cbor_put_map(struct el_cbor_enc *e, uint32_t n);
void el_cbor_put_bool(struct el_cbor_enc *e, bool b);
void el_cbor_put_null(struct el_cbor_enc *e);
/* Bytes written, or the first error (negative). */
int el_cbor_enc_finish(const struct el_cbor_enc *e);

struct el_cbor_dec {
	const uint8_t *buf;
	uint32_t len;
	uint32_t pos;
	int err; /* 0 or EL_EDECODE */
};

void el_cbor_dec_init(struct el_cbor_dec *d, const uint8_t *buf, uint32_t len);
/* Type of the next item without consuming it (EL_CBOR_INVALID at end/error). */
enum el_cbor_type el_cbor_peek(const struct el_cbor_dec *d);
void el_cbor_get_uint(struct el_cbor_dec *d, uint64_t *v);
/* A uint that must be <= max (else EL_EDECODE). */
void el_cbor_get_uint_max(struct el_cbor_dec *d, uint64_t max, uint64_t *v);
void el_cbor_get_int(struct el_cbor_dec *d, int64_t *v);
/* Byte/text strings point into the input; length must be <= max. */
void el_cbor_get_bytes(struct el_cbor_dec *d, const uint8_t **p, uint32_t *n, uint32_t max);
void el_cbor_get_text(struct el_cbor_dec *d, const char **s, uint32_t *n, uint32_t max);
/* Container heads; the count must be <= max. */
void el_cbor_get_array(struct el_cbor_dec *d, uint32_t *n, uint32_t max);
void el_cbor_get_map(struct el_cbor_dec *d, uint32_t *n, uint32_t max);
void el_cbor_get_bool(struct el_cbor_dec *d, bool *b);
void el_cbor_get_null(struct el_cbor_dec *d);
/* Skip one whole item (nested up to EL_CBOR_DEPTH_MAX), iteratively. */
void el_cbor_skip(struct el_cbor_dec *d);
/* 0 when no error occurred and every byte was consumed, else EL_EDECODE. */
int el_cbor_dec_finish(const struct el_cbor_dec *d);
/* 0 when no error occurred so far (bytes may remain). */
static inline int el_cbor_dec_error(const struct el_cbor_dec *d) { return d->err; }

#endif /* EL_CBOR_H */
