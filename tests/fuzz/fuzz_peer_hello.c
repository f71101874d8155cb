/*
 * fuzz_peer_hello.c - libFuzzer target for el_peer_hello_decode() (the first
 * frame on a peer connection, net/peer_hello.c).
 *
 * Any input is refused (EL_EDECODE / EL_EVERSION, the hello zeroed) or
 * decodes to a hello that encodes back to exactly the input bytes (the
 * hello has one encoding). el_peer_hello_is must hold for every accepted one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_error.h"
#include "el_peer_hello.h"

static uint8_t out[EL_PEER_HELLO_MAX];

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_peer_hello: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct el_peer_hello zero;
	struct el_peer_hello h;
	if (size > 65536)
		return 0;
	int rc = el_peer_hello_decode(&h, data, (uint32_t)size);
	if (rc != EL_OK) {
		if (rc != EL_EDECODE && rc != EL_EVERSION)
			bug("unexpected error code");
		if (memcmp(&h, &zero, sizeof h) != 0)
			bug("a refused hello was not zeroed");
		return 0;
	}
	int n = el_peer_hello_encode(&h, out, sizeof out);
	if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
		bug("accepted hello does not re-encode to itself");
	if (!el_peer_hello_is(data, (uint32_t)size))
		bug("accepted hello not recognised by el_peer_hello_is");
	return 0;
}
