/*
 * fuzz_oracle.c - libFuzzer target that checks our CBOR reader against
 * libcbor, the oracle: whenever our reader accepts the input as one item,
 * libcbor must load all of it as the same item and serialize that item back
 * to exactly the input bytes. (The converse does not hold by design: libcbor
 * also reads forms our strict reader refuses.)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_cbor.h"
#include "oracle.h"

static uint8_t again[1 << 16];

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_oracle: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct el_cbor_dec d;
	struct cbor_load_result res;
	cbor_item_t *mine, *theirs;

	if (size > sizeof(again))
		return 0;
	el_cbor_dec_init(&d, data, (uint32_t)size);
	mine = oracle_get_item(&d);
	if (mine == NULL)
		return 0;
	if (el_cbor_dec_finish(&d) != 0) {
		cbor_decref(&mine);
		return 0;
	}
	theirs = cbor_load(data, size, &res);
	if (theirs == NULL || res.error.code != CBOR_ERR_NONE || res.read != size)
		bug("libcbor refuses what our reader accepts");
	if (!oracle_items_equal(mine, theirs))
		bug("libcbor reads a different item");
	if (oracle_serialize(theirs, again, sizeof(again)) != size || memcmp(again, data, size) != 0)
		bug("libcbor writes the item back differently");
	cbor_decref(&mine);
	cbor_decref(&theirs);
	return 0;
}
