/*
 * el_ident.h - proving who is on the other end of a TLS connection.
 *
 * Mutual TLS against the cluster CA proves only that the other end holds
 * *some* certificate the CA signed, and Debian's nng 1.5.2 does not tell the
 * accepting side which one. So, after TLS, the accepting side (the listener)
 * challenges the connecting side (the dialer), which proves its name by
 * signing with its certificate's private key:
 *
 *   listener -> dialer   CHALLENGE { nonce: 32 random bytes, listener name }
 *   dialer -> listener   PROOF     { dialer certificate (DER), signature }
 *
 * The signature covers SHA-256 of
 *   "edgelock-ident-v1" 0x00 | direction (1: dialer to listener) |
 *   len | dialer name | len | listener name | nonce
 * and the listener accepts only when the certificate chains to the cluster
 * CA, its role (subject OU "node" or "client") is the one the port expects,
 * the signature verifies with the certificate's key over those bytes with
 * the listener's *own* name and the nonce it sent on *this* connection.
 * The proven name is the certificate's subject CN.
 *
 * Why that is sound (docs/security.md has the full threat model):
 *   - a fresh nonce per connection: a proof cannot be replayed;
 *   - the listener's name inside the signature: a member M that relays the
 *     challenge of listener B to a victim A (which dialed M, or which M lures
 *     into dialing it) gets A's signature over listener name "M" (A checks
 *     the name in the challenge against the name it dialed, which TLS
 *     already verified as the server's certificate name), and B refuses it;
 *   - the direction byte: nothing a node signs as a listener (nothing, today)
 *     or in another protocol can pass for a dialer's proof; the domain string
 *     keeps it apart from any other use of the key;
 *   - the certificate in the proof need not be the TLS one: whoever presents
 *     it must hold its private key to sign, and it must chain to the CA.
 * What this does not do: protect against a stolen private key, or a CA that
 * signs rogue certificates (revocation is the operator's job: a CRL, see
 * el_ident_load_crl).
 *
 * Uses mbedtls (x509, pk, sha256, ctr_drbg); nothing here touches the core.
 */
#ifndef EL_IDENT_H
#define EL_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define EL_IDENT_VERSION 1
#define EL_IDENT_NONCE_LEN 32
/* The longest subject CN accepted as a name. */
#define EL_IDENT_NAME_MAX 64
/* Bounds of a PROOF: one DER certificate and one signature. */
#define EL_IDENT_CERT_MAX 4096
#define EL_IDENT_SIG_MAX 1024
#define EL_IDENT_CHALLENGE_MAX (16 + EL_IDENT_NONCE_LEN + EL_IDENT_NAME_MAX)
#define EL_IDENT_PROOF_MAX (16 + EL_IDENT_CERT_MAX + EL_IDENT_SIG_MAX)

/* What a certificate's subject OU says its holder is. */
enum el_ident_role {
	EL_IDENT_NODE = 1,   /* OU=node: a cluster member, for the peer port */
	EL_IDENT_CLIENT = 2, /* OU=client: an application or operator */
};

struct el_ident;

/* Load this end: the cluster CA, our certificate and key (PEM; key may be
 * in the certificate file). On error, a message naming the file and what is
 * wrong is written to err, and a negative EL_E* code is returned. */
int el_ident_load(struct el_ident **out, const char *ca_file, const char *cert_file,
		  const char *key_file, char *err, size_t err_cap);
/* The same, and every certificate checked here (ours at load, each proof's)
 * is also checked against the CRL in crl_file (PEM or DER; NULL: none): a
 * revoked one is refused with "revoked (CRL)", an expired one with "expired
 * on <date>". A CRL past its nextUpdate, or not signed by the CA, refuses
 * every certificate (mbedtls' BADCRL flags): fail closed, so keep it fresh.
 * Such a CRL is named as the problem ("crl_file F: expired on <date> ...;
 * every certificate would be refused"), before any revocation it holds. */
int el_ident_load_crl(struct el_ident **out, const char *ca_file, const char *cert_file,
		      const char *key_file, const char *crl_file, char *err, size_t err_cap);
/* The same for a running node's reload: our own certificate revoked by
 * crl_file (and nothing else wrong with it) is taken, and
 * el_ident_own_revoked() says so. Refusing the whole reload would keep the
 * old CRL, so every other certificate the new one revokes would still be
 * accepted here (revocation failing open: an outside tester); the members
 * that load the CRL refuse this node's new connections themselves. */
int el_ident_reload_crl(struct el_ident **out, const char *ca_file, const char *cert_file,
			const char *key_file, const char *crl_file, char *err, size_t err_cap);
bool el_ident_own_revoked(const struct el_ident *id);
/* The nextUpdate of the loaded CRL (the earliest, if the file holds more
 * than one) as Unix time: past it, every certificate is refused (the
 * daemon warns before, el_d_crl_turn). false without a CRL, or one that
 * has no nextUpdate. */
bool el_ident_crl_next_update(const struct el_ident *id, time_t *when);
void el_ident_free(struct el_ident *id);
/* Our own proven-to-others name (our certificate's CN) and role. */
const char *el_ident_name(const struct el_ident *id);
enum el_ident_role el_ident_role_of(const struct el_ident *id);

/* Name (CN) and role (OU) of a certificate; false when either is missing or
 * not a name (1 to EL_IDENT_NAME_MAX printable ASCII bytes, no space; the
 * load and the proof say which). A client reads
 * the node's name this way from the certificate TLS verified. */
struct mbedtls_x509_crt;
bool el_ident_cert_identity(const struct mbedtls_x509_crt *crt, char name[EL_IDENT_NAME_MAX + 1],
			    enum el_ident_role *role);

/* Listener: a new challenge for one connection. nonce receives the random
 * bytes to keep for el_ident_verify. Returns the length written to buf. */
int el_ident_challenge(struct el_ident *id, uint8_t nonce[EL_IDENT_NONCE_LEN], uint8_t *buf,
		       size_t cap);

/* Dialer: answer a challenge from the listener we dialed as expected_name
 * (the name TLS checked). EL_EPERM when the challenge names another
 * listener; EL_EDECODE / EL_EVERSION for malformed bytes. Returns the
 * length written to buf. */
int el_ident_prove(struct el_ident *id, const uint8_t *challenge, size_t len,
		   const char *expected_name, uint8_t *buf, size_t cap);

/* Dialer: the listener name a challenge gives (for a client, which reaches
 * "a node of the cluster" rather than one named node: see docs/security.md).
 * EL_EDECODE / EL_EVERSION for malformed bytes. */
int el_ident_challenge_name(const uint8_t *challenge, size_t len,
			    char name[EL_IDENT_NAME_MAX + 1]);

/* Listener: check a proof against the nonce of this connection and the role
 * the port expects. 0 and the proven name in name (NUL-terminated); EL_EPERM
 * when the certificate, its role or the signature do not hold (why goes to
 * err); EL_EDECODE / EL_EVERSION for malformed bytes. */
int el_ident_verify(struct el_ident *id, const uint8_t nonce[EL_IDENT_NONCE_LEN],
		    enum el_ident_role want, const uint8_t *proof, size_t len,
		    char name[EL_IDENT_NAME_MAX + 1], char *err, size_t err_cap);

#endif /* EL_IDENT_H */
