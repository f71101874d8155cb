/*
 * fuzz_cbor.c - libFuzzer target for the generic CBOR reader.
 *
 * Reads the input as a CBOR sequence twice: once with el_cbor_skip() and
 * once item by item with the typed getters, copying every item to the
 * writer. Both readings must agree on whether the input is acceptable, and
 * an accepted input must be copied byte for byte (the writer's output is
 * canonical and the reader accepts only canonical input). The one exception
 * is a negative integer below INT64_MIN, well-formed for skip but out of
 * range for el_cbor_get_int.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_cbor.h"
#include "el_error.h"

static uint8_t out[1 << 16];

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_cbor: %s\n", what);
	abort();
}

static int skip_all(const uint8_t *in, uint32_t n)
{
	struct el_cbor_dec d;
	uint32_t guard;

	el_cbor_dec_init(&d, in, n);
	for (guard = 0; d.pos < d.len && d.err == 0 && guard < n; guard++)
		el_cbor_skip(&d);
	return el_cbor_dec_finish(&d);
}

/* One item through the typed getters into the writer; false on a wide
 * negative integer (see the top of this file). */
static bool copy_item(struct el_cbor_dec *d, struct el_cbor_enc *e)
{
	uint64_t u;
	int64_t i;
	const uint8_t *p;
	const char *s;
	uint32_t len;
	bool b;

	switch (el_cbor_peek(d)) {
	case EL_CBOR_UINT: el_cbor_get_uint(d, &u); el_cbor_put_uint(e, u); break;
	case EL_CBOR_NINT:
		if ((d->buf[d->pos] & 0x1f) == 27 && d->len - d->pos >= 9 &&
		    (d->buf[d->pos + 1] & 0x80) != 0)
			return false;
		el_cbor_get_int(d, &i);
		el_cbor_put_int(e, i);
		break;
	case EL_CBOR_BYTES: el_cbor_get_bytes(d, &p, &len, UINT32_MAX); el_cbor_put_bytes(e, p, len); break;
	case EL_CBOR_TEXT: el_cbor_get_text(d, &s, &len, UINT32_MAX); el_cbor_put_text(e, s, len); break;
	case EL_CBOR_ARRAY: el_cbor_get_array(d, &len, UINT32_MAX); el_cbor_put_array(e, len); break;
	case EL_CBOR_MAP: el_cbor_get_map(d, &len, UINT32_MAX); el_cbor_put_map(e, len); break;
	case EL_CBOR_BOOL: el_cbor_get_bool(d, &b); el_cbor_put_bool(e, b); break;
	case EL_CBOR_NULL: el_cbor_get_null(d); el_cbor_put_null(e); break;
	default: el_cbor_skip(d); /* refuses whatever peek calls invalid */ break;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct el_cbor_dec d;
	struct el_cbor_enc e;
	uint32_t guard, n = (uint32_t)size;
	int skipped, copied;

	if (size > sizeof(out))
		return 0;
	skipped = skip_all(data, n);
	el_cbor_dec_init(&d, data, n);
	el_cbor_enc_init(&e, out, sizeof(out));
	for (guard = 0; d.pos < d.len && d.err == 0 && guard < n; guard++)
		if (!copy_item(&d, &e))
			return 0;
	copied = el_cbor_dec_finish(&d);
	if ((skipped == 0) != (copied == 0))
		bug("skip and the typed getters disagree");
	if (copied != 0)
		return 0;
	if (el_cbor_enc_finish(&e) != (int)n || memcmp(out, data, n) != 0)
		bug("accepted input does not copy to itself");
	return 0;
}
