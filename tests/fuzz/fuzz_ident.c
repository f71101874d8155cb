/*
 * fuzz_ident.c - libFuzzer target for the identity messages (net/ident.c):
 * any bytes as a CHALLENGE to answer and as a PROOF to verify must give a
 * clean error or a proof of a name, never a crash or a sanitizer report.
 * The identities come from the certificates in $EL_IDENT_CERTS (made by
 * tests/net/make-test-certs.sh; mk/ident.mk sets it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_ident.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct el_ident *dialer, *listener;

static struct el_ident *load(const char *dir, const char *name)
{
	char crt[512], key[512], ca[512], err[256];
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(crt, sizeof(crt), "%s/%s.crt", dir, name);
	snprintf(key, sizeof(key), "%s/%s.key", dir, name);
	struct el_ident *id = NULL;
	if (el_ident_load(&id, ca, crt, key, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_ident: %s\n", err);
		exit(2);
	}
	return id;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	const char *dir = getenv("EL_IDENT_CERTS");
	if (dir == NULL) {
		fprintf(stderr, "fuzz_ident: set EL_IDENT_CERTS to a certificate directory\n");
		exit(2);
	}
	dialer = load(dir, "node1");
	listener = load(dir, "node2");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t nonce[EL_IDENT_NONCE_LEN] = {1, 2, 3};
	uint8_t out[EL_IDENT_PROOF_MAX];
	char name[EL_IDENT_NAME_MAX + 1], err[256];
	int pl = el_ident_prove(dialer, data, size, "node2", out, sizeof(out));
	if (pl > 0 && (size_t)pl > sizeof(out))
		abort();
	int rc = el_ident_verify(listener, nonce, EL_IDENT_NODE, data, size, name, err, sizeof(err));
	if (rc == 0 && strlen(name) == 0)
		abort(); /* a proof that passes names someone */
	if (rc != 0 && name[0] != '\0')
		abort(); /* a refusal proves nobody */
	return 0;
}
