/*
 * test_ident.c DIR - the signed-challenge identity proof (net/ident.c) with
 * real certificates from make-test-certs.sh: an honest proof, a member that
 * relays another listener's challenge (both ways it could try), a replayed
 * proof, a client certificate on the peer port, a certificate of another
 * CA, a certificate presented without its key, malformed and truncated
 * proofs, load errors that name the file (and our own certificate with a
 * usage TLS refuses), and revoked (CRL) and expired
 * certificates refused with the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "el_error.h"
#include "el_ident.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

static const char *dir;
static struct el_ident *node1, *node2, *node3, *client1, *rogue1;

static struct el_ident *load(const char *name, const char *ca)
{
	char crt[512], key[512], cafile[512], err[256];
	snprintf(crt, sizeof(crt), "%s/%s.crt", dir, name);
	snprintf(key, sizeof(key), "%s/%s.key", dir, name);
	snprintf(cafile, sizeof(cafile), "%s/%s.crt", dir, ca);
	struct el_ident *id = NULL;
	if (el_ident_load(&id, cafile, crt, key, err, sizeof(err)) != 0) {
		fprintf(stderr, "load %s: %s\n", name, err);
		exit(2);
	}
	return id;
}

/* One connection: listener challenges, dialer (which dialed `dialed`)
 * proves, listener verifies for role want. */
static int connect_as(struct el_ident *dialer, const char *dialed, struct el_ident *listener,
		      enum el_ident_role want, char name[EL_IDENT_NAME_MAX + 1])
{
	uint8_t nonce[EL_IDENT_NONCE_LEN], chal[EL_IDENT_CHALLENGE_MAX], proof[EL_IDENT_PROOF_MAX];
	char err[256];
	int cl = el_ident_challenge(listener, nonce, chal, sizeof(chal));
	if (cl <= 0)
		return EL_EIO;
	int pl = el_ident_prove(dialer, chal, (size_t)cl, dialed, proof, sizeof(proof));
	if (pl <= 0)
		return pl;
	return el_ident_verify(listener, nonce, want, proof, (size_t)pl, name, err, sizeof(err));
}

static void test_honest_peer_proves_its_name(void)
{
	char name[EL_IDENT_NAME_MAX + 1];
	EL_CHECK_EQ(connect_as(node1, "node2", node2, EL_IDENT_NODE, name), 0);
	EL_CHECK(strcmp(name, "node1") == 0);
	EL_CHECK_EQ(connect_as(node3, "node1", node1, EL_IDENT_NODE, name), 0); /* RSA key */
	EL_CHECK(strcmp(name, "node3") == 0);
	EL_CHECK_EQ(connect_as(client1, "node2", node2, EL_IDENT_CLIENT, name), 0);
	EL_CHECK(strcmp(name, "client1") == 0);
	EL_CHECK(strcmp(el_ident_name(node2), "node2") == 0);
	EL_CHECK_EQ(el_ident_role_of(client1), EL_IDENT_CLIENT);
}

/* node3 wants node2 to believe it is node1. node2 challenges node3; node3
 * passes the challenge to node1 over a connection node1 made to node3. */
static void test_relaying_member_is_refused(void)
{
	uint8_t nonce[EL_IDENT_NONCE_LEN], chal[EL_IDENT_CHALLENGE_MAX], proof[EL_IDENT_PROOF_MAX];
	char name[EL_IDENT_NAME_MAX + 1] = "x", err[256] = "";
	int cl = el_ident_challenge(node2, nonce, chal, sizeof(chal));
	EL_CHECK(cl > 0);
	/* As is: node1 dialed node3, and the challenge names node2. */
	EL_CHECK_EQ(el_ident_prove(node1, chal, (size_t)cl, "node3", proof, sizeof(proof)), EL_EPERM);
	/* Rewritten to name node3, with node2's nonce: node1 signs for node3... */
	uint8_t own_nonce[EL_IDENT_NONCE_LEN], fake[EL_IDENT_CHALLENGE_MAX];
	int fl = el_ident_challenge(node3, own_nonce, fake, sizeof(fake));
	EL_CHECK(fl > 0);
	uint8_t *at = memmem(fake, (size_t)fl, own_nonce, sizeof(own_nonce));
	EL_CHECK(at != NULL);
	if (at == NULL)
		return;
	memcpy(at, nonce, sizeof(nonce));
	int pl = el_ident_prove(node1, fake, (size_t)fl, "node3", proof, sizeof(proof));
	EL_CHECK(pl > 0);
	/* ...and node2, the listener that made that nonce, refuses it. */
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, proof, (size_t)pl, name, err,
				    sizeof(err)), EL_EPERM);
	EL_CHECK_EQ(name[0], '\0');
	EL_CHECK(strstr(err, "does not verify") != NULL);
}

static void test_replayed_proof_is_refused(void)
{
	uint8_t nonce[EL_IDENT_NONCE_LEN], nonce2[EL_IDENT_NONCE_LEN];
	uint8_t chal[EL_IDENT_CHALLENGE_MAX], proof[EL_IDENT_PROOF_MAX];
	char name[EL_IDENT_NAME_MAX + 1], err[256];
	int cl = el_ident_challenge(node2, nonce, chal, sizeof(chal));
	int pl = el_ident_prove(node1, chal, (size_t)cl, "node2", proof, sizeof(proof));
	EL_CHECK(pl > 0);
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, proof, (size_t)pl, name, err,
				    sizeof(err)), 0);
	/* The next connection has another nonce: the old proof is worthless. */
	EL_CHECK(el_ident_challenge(node2, nonce2, chal, sizeof(chal)) > 0);
	EL_CHECK(memcmp(nonce, nonce2, sizeof(nonce)) != 0);
	EL_CHECK_EQ(el_ident_verify(node2, nonce2, EL_IDENT_NODE, proof, (size_t)pl, name, err,
				    sizeof(err)), EL_EPERM);
	/* Nor does it pass at another listener with the same nonce. */
	EL_CHECK_EQ(el_ident_verify(node3, nonce, EL_IDENT_NODE, proof, (size_t)pl, name, err,
				    sizeof(err)), EL_EPERM);
}

static void test_wrong_role_or_ca_is_refused(void)
{
	char name[EL_IDENT_NAME_MAX + 1];
	/* A client certificate on the peer port, a node's on the client port. */
	EL_CHECK_EQ(connect_as(client1, "node2", node2, EL_IDENT_NODE, name), EL_EPERM);
	EL_CHECK_EQ(connect_as(node1, "node2", node2, EL_IDENT_CLIENT, name), EL_EPERM);
	/* A certificate named node1 from another CA. */
	EL_CHECK_EQ(connect_as(rogue1, "node2", node2, EL_IDENT_NODE, name), EL_EPERM);
}

/* node3 presents node1's certificate (public) with its own signature. */
static void test_certificate_without_its_key_is_refused(void)
{
	uint8_t nonce[EL_IDENT_NONCE_LEN], chal[EL_IDENT_CHALLENGE_MAX];
	uint8_t p1[EL_IDENT_PROOF_MAX], p3[EL_IDENT_PROOF_MAX];
	char name[EL_IDENT_NAME_MAX + 1], err[256];
	int cl = el_ident_challenge(node2, nonce, chal, sizeof(chal));
	int l1 = el_ident_prove(node1, chal, (size_t)cl, "node2", p1, sizeof(p1));
	int l3 = el_ident_prove(node3, chal, (size_t)cl, "node2", p3, sizeof(p3));
	EL_CHECK(l1 > 0 && l3 > 0);
	/* Splice: node1's certificate bytes from p1, node3's signature from p3,
	 * rebuilt by hand as the same four-key map. */
	const uint8_t *sig3 = p3 + l3 - 256; /* RSA-2048: the last 256 bytes */
	uint8_t forged[EL_IDENT_PROOF_MAX];
	size_t cert_end = (size_t)l1;
	/* p1 ends with the EC signature: find its head (0x58 len) from the end. */
	for (size_t i = (size_t)l1 - 2; i > 0; i--)
		if (p1[i - 1] == 0x03 && p1[i] == 0x58 && (size_t)p1[i + 1] + i + 2 == (size_t)l1) {
			cert_end = i;
			break;
		}
	EL_CHECK(cert_end < (size_t)l1);
	memcpy(forged, p1, cert_end);
	size_t n = cert_end;
	forged[n++] = 0x59; /* bytes, 2-byte length */
	forged[n++] = 0x01;
	forged[n++] = 0x00;
	memcpy(forged + n, sig3, 256);
	n += 256;
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, forged, n, name, err, sizeof(err)),
		    EL_EPERM);
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, p1, (size_t)l1, name, err,
				    sizeof(err)), 0);
}

static void test_malformed_proofs_are_refused(void)
{
	uint8_t nonce[EL_IDENT_NONCE_LEN], chal[EL_IDENT_CHALLENGE_MAX], proof[EL_IDENT_PROOF_MAX];
	uint8_t junk[EL_IDENT_PROOF_MAX + 8];
	char name[EL_IDENT_NAME_MAX + 1], err[256];
	int cl = el_ident_challenge(node2, nonce, chal, sizeof(chal));
	int pl = el_ident_prove(node1, chal, (size_t)cl, "node2", proof, sizeof(proof));
	EL_CHECK(pl > 0);
	for (int cut = 0; cut < pl; cut++) /* every truncation */
		EL_CHECK(el_ident_verify(node2, nonce, EL_IDENT_NODE, proof, (size_t)cut, name, err,
					 sizeof(err)) < 0);
	memcpy(junk, proof, (size_t)pl);
	junk[pl] = 0x00; /* a byte after the map */
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, junk, (size_t)pl + 1, name, err,
				    sizeof(err)), EL_EDECODE);
	memcpy(junk, proof, (size_t)pl);
	junk[2] = 0x02; /* version 2 */
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, junk, (size_t)pl, name, err,
				    sizeof(err)), EL_EVERSION);
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, chal, (size_t)cl, name, err,
				    sizeof(err)), EL_EDECODE); /* a challenge is no proof */
	memset(junk, 0xff, sizeof(junk));
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_NODE, junk, sizeof(junk), name, err,
				    sizeof(err)), EL_EDECODE); /* oversized */
	/* A challenge with a short nonce. */
	memcpy(junk, chal, (size_t)cl);
	EL_CHECK(el_ident_prove(node1, junk, (size_t)cl - 1, "node2", proof, sizeof(proof)) < 0);
}

static void test_load_errors_name_the_file(void)
{
	char crt[512], key[512], ca[512], err[256] = "";
	struct el_ident *id = (struct el_ident *)1;
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(crt, sizeof(crt), "%s/node1.crt", dir);
	snprintf(key, sizeof(key), "%s/node2.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL);
	EL_CHECK(strstr(err, "does not belong") != NULL && strstr(err, "node2.key") != NULL);
	snprintf(key, sizeof(key), "%s/missing.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "missing.key") != NULL);
	snprintf(crt, sizeof(crt), "%s/noou.crt", dir);
	snprintf(key, sizeof(key), "%s/noou.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "OU=node") != NULL);
	/* a CN that is there but no name: said so, not "lacks CN" */
	snprintf(crt, sizeof(crt), "%s/spaced.crt", dir);
	snprintf(key, sizeof(key), "%s/spaced.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "CN \"ops-1 x\" is not a valid name (1 to 64 printable ASCII "
			 "bytes, no space)") != NULL);
	snprintf(crt, sizeof(crt), "%s/rogue-node1.crt", dir);
	snprintf(key, sizeof(key), "%s/rogue-node1.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "cluster CA") != NULL);
	/* a directory: said so, never sized with ftell (LONG_MAX) for calloc */
	snprintf(crt, sizeof(crt), "%s/node1.crt", dir);
	snprintf(key, sizeof(key), "%s/node1.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, dir, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "a directory, not a CA certificate") != NULL);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, dir, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "a directory, not a private key") != NULL);
	EL_CHECK(id == NULL);
	/* usages TLS refuses for a client: refused as our own, the same words
	 * as a proof's (certs_test sends such proofs to a daemon) */
	snprintf(crt, sizeof(crt), "%s/client-server.crt", dir);
	snprintf(key, sizeof(key), "%s/client-server.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "client-server.crt: certificate of client-server (serial") != NULL &&
		 strstr(err, "its extendedKeyUsage lacks clientAuth") != NULL);
	snprintf(crt, sizeof(crt), "%s/client-ca.crt", dir);
	snprintf(key, sizeof(key), "%s/client-ca.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "basicConstraints CA:TRUE") != NULL);
	EL_CHECK(id == NULL);
}

/* Seeds for fuzz_ident: a challenge and a proof made with these identities. */
static int write_seeds(const char *out)
{
	uint8_t nonce[EL_IDENT_NONCE_LEN], chal[EL_IDENT_CHALLENGE_MAX], proof[EL_IDENT_PROOF_MAX];
	int cl = el_ident_challenge(node2, nonce, chal, sizeof(chal));
	int pl = el_ident_prove(node1, chal, (size_t)cl, "node2", proof, sizeof(proof));
	const struct { const char *name; const uint8_t *p; int n; } seeds[] = {
		{"challenge", chal, cl}, {"proof", proof, pl}};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", out, seeds[i].name);
		FILE *f = fopen(path, "wb");
		if (f == NULL || seeds[i].n <= 0 ||
		    fwrite(seeds[i].p, 1, (size_t)seeds[i].n, f) != (size_t)seeds[i].n) {
			fprintf(stderr, "test_ident: cannot write %s\n", path);
			return 2;
		}
		fclose(f);
	}
	return 0;
}

/* With crl.pem, a proof by client1 (revoked there) is refused saying so,
 * and client1 cannot load itself; an expired certificate cannot be loaded
 * and the error gives the date; a file that is no CRL names the file. */
static void test_revoked_and_expired_are_refused(void)
{
	char ca[512], crt[512], key[512], crl[512], err[256] = "", name[EL_IDENT_NAME_MAX + 1];
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(crt, sizeof(crt), "%s/node2.crt", dir);
	snprintf(key, sizeof(key), "%s/node2.key", dir);
	snprintf(crl, sizeof(crl), "%s/crl.pem", dir);
	struct el_ident *strict = NULL;
	EL_CHECK_EQ(el_ident_load_crl(&strict, ca, crt, key, crl, err, sizeof(err)), 0);
	if (strict == NULL)
		return;
	EL_CHECK_EQ(connect_as(client1, "node2", strict, EL_IDENT_CLIENT, name), EL_EPERM);
	uint8_t nonce[EL_IDENT_NONCE_LEN], chal[EL_IDENT_CHALLENGE_MAX], proof[EL_IDENT_PROOF_MAX];
	int cl = el_ident_challenge(strict, nonce, chal, sizeof(chal));
	int pl = el_ident_prove(client1, chal, (size_t)cl, "node2", proof, sizeof(proof));
	EL_CHECK_EQ(el_ident_verify(strict, nonce, EL_IDENT_CLIENT, proof, (size_t)pl, name, err,
				    sizeof(err)), EL_EPERM);
	EL_CHECK(strstr(err, "certificate of client1 (serial") != NULL &&
		 strstr(err, "revoked (CRL)") != NULL);
	el_ident_free(strict);
	struct el_ident *id = NULL;
	snprintf(crt, sizeof(crt), "%s/client1.crt", dir);
	snprintf(key, sizeof(key), "%s/client1.key", dir);
	EL_CHECK_EQ(el_ident_load_crl(&id, ca, crt, key, crl, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL && strstr(err, "revoked (CRL)") != NULL);
	snprintf(crt, sizeof(crt), "%s/expired.crt", dir);
	snprintf(key, sizeof(key), "%s/expired.key", dir);
	EL_CHECK_EQ(el_ident_load(&id, ca, crt, key, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL && strstr(err, "expired on 2021-01-01 00:00:00 UTC") != NULL);
	EL_CHECK_EQ(el_ident_load_crl(&id, ca, crt, key, ca, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL && strstr(err, "ca.crt: not a readable PEM or DER CRL") != NULL);
}

/* A lapsed CRL is named as the problem, not our certificate, and before a
 * revocation of ours it holds (a reload would otherwise seem to apply it);
 * a proof refused by it says so too. The nextUpdate of a loaded CRL. */
static void test_expired_crl_is_named(void)
{
	char ca[512], crt[512], key[512], crl[512], good[512], err[300] = "";
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(crt, sizeof(crt), "%s/node2.crt", dir);
	snprintf(key, sizeof(key), "%s/node2.key", dir);
	snprintf(crl, sizeof(crl), "%s/crl-expired.pem", dir);
	snprintf(good, sizeof(good), "%s/crl.pem", dir);
	struct el_ident *id = NULL;
	EL_CHECK_EQ(el_ident_load_crl(&id, ca, crt, key, crl, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL && strstr(err, "crl_file ") == err && strstr(err, "crl-expired.pem: "
		 "expired on 2021-01-01 00:00:00 UTC") != NULL &&
		 strstr(err, "every certificate would be refused") != NULL);
	snprintf(crt, sizeof(crt), "%s/client1.crt", dir); /* revoked there too */
	snprintf(key, sizeof(key), "%s/client1.key", dir);
	EL_CHECK_EQ(el_ident_reload_crl(&id, ca, crt, key, crl, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL && strstr(err, "expired on 2021-01-01") != NULL &&
		 strstr(err, "revoked") == NULL);
	/* a CRL of another CA: of another name it would revoke nothing (mbedtls
	 * skipped it), of the same name it is not signed by ours */
	snprintf(crt, sizeof(crt), "%s/node2.crt", dir);
	snprintf(key, sizeof(key), "%s/node2.key", dir);
	snprintf(crl, sizeof(crl), "%s/crl-rogue-ca.pem", dir);
	EL_CHECK_EQ(el_ident_load_crl(&id, ca, crt, key, crl, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL && strstr(err, "crl-rogue-ca.pem: issued by \"CN=rogue-ca\", not by "
		 "the CA of ca_file") != NULL && strstr(err, "it would revoke nothing") != NULL);
	snprintf(crl, sizeof(crl), "%s/crl-same-name.pem", dir);
	EL_CHECK_EQ(el_ident_load_crl(&id, ca, crt, key, crl, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(id == NULL && strstr(err, "crl-same-name.pem: not signed by ca_file ") != NULL &&
		 strstr(err, "every certificate would be refused") != NULL);
	time_t when = 0;
	EL_CHECK(!el_ident_crl_next_update(node2, &when));
	snprintf(crt, sizeof(crt), "%s/node2.crt", dir);
	snprintf(key, sizeof(key), "%s/node2.key", dir);
	EL_CHECK_EQ(el_ident_load_crl(&id, ca, crt, key, good, err, sizeof(err)), 0);
	if (id == NULL)
		return;
	EL_CHECK(el_ident_crl_next_update(id, &when));
	EL_CHECK(when > time(NULL) + 3000 * 86400LL && when < time(NULL) + 3700 * 86400LL);
	el_ident_free(id);
}

/* A client reads the node name from the challenge and proves to it; the
 * name of a malformed or truncated challenge is refused. */
static void test_client_proves_to_the_challenge_name(void)
{
	uint8_t nonce[EL_IDENT_NONCE_LEN], chal[EL_IDENT_CHALLENGE_MAX], proof[EL_IDENT_PROOF_MAX];
	char name[EL_IDENT_NAME_MAX + 1], got[EL_IDENT_NAME_MAX + 1], err[256] = "";
	int cl = el_ident_challenge(node2, nonce, chal, sizeof(chal));
	EL_CHECK(cl > 0);
	EL_CHECK_EQ(el_ident_challenge_name(chal, (size_t)cl, name), 0);
	EL_CHECK(strcmp(name, "node2") == 0);
	int pl = el_ident_prove(client1, chal, (size_t)cl, name, proof, sizeof(proof));
	EL_CHECK(pl > 0);
	EL_CHECK_EQ(el_ident_verify(node2, nonce, EL_IDENT_CLIENT, proof, (size_t)pl, got, err,
				    sizeof(err)), 0);
	EL_CHECK(strcmp(got, "client1") == 0);
	EL_CHECK_EQ(el_ident_challenge_name(chal, (size_t)cl - 1, name), EL_EDECODE);
	EL_CHECK(name[0] == '\0');
	EL_CHECK_EQ(el_ident_challenge_name(proof, (size_t)pl, name), EL_EDECODE);
}

int main(int argc, char **argv)
{
	if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--write-seeds") == 0)) {
		fprintf(stderr, "usage: test_ident CERT_DIR [--write-seeds OUT_DIR]\n");
		return 2;
	}
	dir = argv[1];
	node1 = load("node1", "ca");
	node2 = load("node2", "ca");
	node3 = load("node3", "ca");
	client1 = load("client1", "ca");
	rogue1 = load("rogue-node1", "rogue-ca");
	if (argc == 4)
		return write_seeds(argv[3]);
	EL_RUN(test_honest_peer_proves_its_name);
	EL_RUN(test_relaying_member_is_refused);
	EL_RUN(test_replayed_proof_is_refused);
	EL_RUN(test_wrong_role_or_ca_is_refused);
	EL_RUN(test_certificate_without_its_key_is_refused);
	EL_RUN(test_malformed_proofs_are_refused);
	EL_RUN(test_load_errors_name_the_file);
	EL_RUN(test_client_proves_to_the_challenge_name);
	EL_RUN(test_revoked_and_expired_are_refused);
	EL_RUN(test_expired_crl_is_named);
	el_ident_free(node1);
	el_ident_free(node2);
	el_ident_free(node3);
	el_ident_free(client1);
	el_ident_free(rogue1);
	return el_test_end();
}
