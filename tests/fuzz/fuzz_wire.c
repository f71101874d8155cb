/*
 * fuzz_wire.c - libFuzzer target for el_wire_decode_msg().
 *
 * Any input must either be refused (EL_EDECODE or EL_EVERSION, the message
 * left zeroed) or decode to a message that encodes back to exactly the input
 * bytes: the encoding is canonical, so anything else is a bug in one of the
 * two directions. ASan and UBSan catch every out-of-bounds read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_error.h"
#include "el_wire.h"

static struct el_entry entries[EL_MSG_ENTRIES_MAX];
static uint8_t again[EL_WIRE_MSG_MAX];

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_wire: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct el_msg zero;
	struct el_msg m;
	int rc, n;

	if (size > UINT32_MAX)
		return 0;
	rc = el_wire_decode_msg(data, (uint32_t)size, &m, entries);
	if (rc != 0) {
		if (rc != EL_EDECODE && rc != EL_EVERSION)
			bug("unexpected error code");
		if (memcmp(&m, &zero, sizeof(m)) != 0)
			bug("a refused message was not zeroed");
		return 0;
	}
	n = el_wire_encode_msg(&m, again, sizeof(again));
	if (n < 0 || (size_t)n != size || memcmp(again, data, size) != 0)
		bug("accepted input does not re-encode to itself");
	return 0;
}
