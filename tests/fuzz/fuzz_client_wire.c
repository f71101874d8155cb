/*
 * fuzz_client_wire.c - libFuzzer target for el_cw_decode() (the client
 * protocol, core/client_wire.c).
 *
 * Any input is either refused (EL_EDECODE or EL_EVERSION, with nothing but
 * id and type kept) or decodes to a message that passes el_cw_check, encodes,
 * and decodes from that encoding to the very same struct (absent and zero
 * fields read alike, so the bytes may differ but the meaning may not).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_client_wire.h"
#include "el_error.h"

static struct el_cw_msg m, again;
static uint8_t out[EL_CW_MSG_MAX];

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_client_wire: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > EL_CW_FRAME_MAX)
		return 0;
	int rc = el_cw_decode(&m, data, (uint32_t)size);
	if (rc != EL_OK) {
		if (rc != EL_EDECODE && rc != EL_EVERSION)
			bug("unexpected error code");
		uint64_t id = m.id;
		uint8_t type = m.type;
		m.id = 0;
		m.type = 0;
		static const struct el_cw_msg zero;
		if (memcmp(&m, &zero, sizeof m) != 0)
			bug("a refused message kept more than id and type");
		(void)id;
		(void)type;
		return 0;
	}
	if (el_cw_check(&m) != EL_OK)
		bug("accepted message fails el_cw_check");
	int n = el_cw_encode(&m, out, sizeof out);
	if (n <= 0)
		bug("accepted message does not encode");
	if (el_cw_decode(&again, out, (uint32_t)n) != EL_OK || memcmp(&m, &again, sizeof m) != 0)
		bug("re-encoded message decodes differently");
	return 0;
}
