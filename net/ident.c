/*
 * ident.c - the signed-challenge proof of a connection's name (el_ident.h):
 * loading this end's CA, certificate and key, making and answering
 * challenges, and verifying proofs with mbedtls' x509 and pk API.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1 /* timegm */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/x509_crl.h>
#include <mbedtls/x509_crt.h>

#include "el_cbor.h"
#include "el_error.h"
#include "el_ident.h"

enum { MSG_CHALLENGE = 1, MSG_PROOF = 2 };
enum { KEY_VERSION = 0, KEY_TYPE = 1, KEY_A = 2, KEY_B = 3 };
/* The direction byte of the signed bytes: the dialer proves to the listener. */
#define DIRECTION_DIALER_TO_LISTENER 1u
static const char DOMAIN[] = "edgelock-ident-v1";

struct el_ident {
	mbedtls_x509_crt ca;
	mbedtls_x509_crl crl; /* empty (has_crl false) without a CRL file */
	bool has_crl;
	mbedtls_x509_crt cert;
	mbedtls_pk_context key;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	enum el_ident_role role;
	char name[EL_IDENT_NAME_MAX + 1];
	bool own_revoked_ok; /* el_ident_reload_crl: ours revoked by the CRL is taken */
	bool own_revoked;    /* ... and it is */
};

static void say(char *err, size_t cap, const char *fmt, ...)
{
	if (err == NULL || cap == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
}

/* The value of one attribute of a certificate's subject, as a name: 1 to
 * EL_IDENT_NAME_MAX printable ASCII bytes with no space. */
static bool subject_attr(const mbedtls_x509_crt *crt, const char *oid, size_t oid_len,
			 char out[EL_IDENT_NAME_MAX + 1])
{
	for (const mbedtls_x509_name *n = &crt->subject; n != NULL; n = n->next) {
		if (n->oid.len != oid_len || memcmp(n->oid.p, oid, oid_len) != 0)
			continue;
		if (n->val.len == 0 || n->val.len > EL_IDENT_NAME_MAX)
			return false;
		for (size_t i = 0; i < n->val.len; i++)
			if (n->val.p[i] <= 0x20 || n->val.p[i] >= 0x7f)
				return false;
		memcpy(out, n->val.p, n->val.len);
		out[n->val.len] = '\0';
		return true;
	}
	return false;
}

bool el_ident_cert_identity(const mbedtls_x509_crt *crt, char name[EL_IDENT_NAME_MAX + 1],
			    enum el_ident_role *role)
{
	char ou[EL_IDENT_NAME_MAX + 1];
	if (!subject_attr(crt, MBEDTLS_OID_AT_CN, MBEDTLS_OID_SIZE(MBEDTLS_OID_AT_CN), name))
		return false;
	if (!subject_attr(crt, MBEDTLS_OID_AT_ORG_UNIT, MBEDTLS_OID_SIZE(MBEDTLS_OID_AT_ORG_UNIT), ou))
		return false;
	if (strcmp(ou, "node") == 0)
		*role = EL_IDENT_NODE;
	else if (strcmp(ou, "client") == 0)
		*role = EL_IDENT_CLIENT;
	else
		return false;
	return true;
}

/* The raw value of a subject attribute, shown with '?' for the bytes that
 * are not printable ASCII; NULL when the subject has none. */
static const char *attr_shown(const mbedtls_x509_crt *crt, const char *oid, size_t oid_len,
			      char *out, size_t cap)
{
	for (const mbedtls_x509_name *n = &crt->subject; n != NULL; n = n->next) {
		if (n->oid.len != oid_len || memcmp(n->oid.p, oid, oid_len) != 0)
			continue;
		size_t i = 0;
		for (; i < n->val.len && i + 1 < cap; i++)
			out[i] = n->val.p[i] >= 0x20 && n->val.p[i] < 0x7f ? (char)n->val.p[i] : '?';
		out[i] = '\0';
		return out;
	}
	return NULL;
}

/* Why el_ident_cert_identity refuses crt, in words: a CN that is there but
 * is no name ("ops-1 x") was told as a missing one (an outside tester). */
static void identity_words(const mbedtls_x509_crt *crt, char *out, size_t cap)
{
	char cn[EL_IDENT_NAME_MAX + 8], ou[EL_IDENT_NAME_MAX + 8], ok[EL_IDENT_NAME_MAX + 1];
	const char *c = attr_shown(crt, MBEDTLS_OID_AT_CN, MBEDTLS_OID_SIZE(MBEDTLS_OID_AT_CN),
				   cn, sizeof cn);
	const char *o = attr_shown(crt, MBEDTLS_OID_AT_ORG_UNIT,
				   MBEDTLS_OID_SIZE(MBEDTLS_OID_AT_ORG_UNIT), ou, sizeof ou);
	if (c == NULL)
		say(out, cap, "the certificate's subject has no CN (the name it proves)");
	else if (!subject_attr(crt, MBEDTLS_OID_AT_CN, MBEDTLS_OID_SIZE(MBEDTLS_OID_AT_CN), ok))
		say(out, cap, "the certificate's CN \"%s\" is not a valid name (1 to %d printable "
		    "ASCII bytes, no space)", c, EL_IDENT_NAME_MAX);
	else if (o == NULL)
		say(out, cap, "the certificate of %s: its subject has no OU (node or client)", ok);
	else
		say(out, cap, "the certificate of %s: its OU \"%s\" is neither node nor client", ok, o);
}

/* "<CN> (serial 01:AB...)": which certificate a refusal is about. */
static void cert_label(const mbedtls_x509_crt *crt, char *out, size_t cap)
{
	char cn[EL_IDENT_NAME_MAX + 1] = "?", serial[128];
	(void)subject_attr(crt, MBEDTLS_OID_AT_CN, MBEDTLS_OID_SIZE(MBEDTLS_OID_AT_CN), cn);
	if (mbedtls_x509_serial_gets(serial, sizeof(serial), &crt->serial) < 0)
		snprintf(serial, sizeof(serial), "?");
	snprintf(out, cap, "%s (serial %s)", cn, serial);
}

/* What mbedtls says of the CRL itself, rather than of the certificate: such
 * a CRL refuses every certificate (fail closed), so it is what an operator
 * must fix, and it was told as the certificate's fault (an outside tester). */
#define CRL_FLAGS (MBEDTLS_X509_BADCRL_NOT_TRUSTED | MBEDTLS_X509_BADCRL_EXPIRED | \
		   MBEDTLS_X509_BADCRL_FUTURE | MBEDTLS_X509_BADCRL_BAD_MD | \
		   MBEDTLS_X509_BADCRL_BAD_PK | MBEDTLS_X509_BADCRL_BAD_KEY)

static void time_text(const mbedtls_x509_time *t, char *out, size_t cap)
{
	snprintf(out, cap, "%04d-%02d-%02d %02d:%02d:%02d UTC", t->year, t->mon, t->day, t->hour,
		 t->min, t->sec);
}

/* The CRL's fault in words; ca names the CA it must come from. */
static void crl_words(const struct el_ident *id, uint32_t flags, const char *ca, char *out,
		      size_t cap)
{
	char when[40];
	if (flags & MBEDTLS_X509_BADCRL_NOT_TRUSTED) {
		say(out, cap, "not signed by %s (or that CA may not sign CRLs)", ca);
	} else if (flags & MBEDTLS_X509_BADCRL_EXPIRED) {
		time_text(&id->crl.next_update, when, sizeof when);
		say(out, cap, "expired on %s (its nextUpdate; renew it: openssl ca -gencrl)", when);
	} else if (flags & MBEDTLS_X509_BADCRL_FUTURE) {
		time_text(&id->crl.this_update, when, sizeof when);
		say(out, cap, "not valid before %s (its lastUpdate; is this host's clock behind?)",
		    when);
	} else {
		char why[200];
		if (mbedtls_x509_crt_verify_info(why, sizeof(why), "", flags & CRL_FLAGS) < 0)
			why[0] = '\0';
		why[strcspn(why, "\n")] = '\0';
		say(out, cap, "not usable: %s", why);
	}
}

/* Expired and revoked get their own words: those are what an operator acts
 * on (renew the certificate; it was revoked on purpose). The rest is
 * mbedtls' own description of the flags. */
static void explain(const struct el_ident *id, const mbedtls_x509_crt *crt, uint32_t flags,
		    char *err, size_t cap)
{
	char who[EL_IDENT_NAME_MAX + 160];
	if (flags & CRL_FLAGS) {
		char why[200];
		crl_words(id, flags, "the cluster CA", why, sizeof why);
		say(err, cap, "the CRL is %s: every certificate is refused until a good one is "
		    "loaded (SIGHUP)", why);
		return;
	}
	cert_label(crt, who, sizeof(who));
	if (flags & MBEDTLS_X509_BADCERT_REVOKED) {
		say(err, cap, "certificate of %s revoked (CRL)", who);
		return;
	}
	if (flags & MBEDTLS_X509_BADCERT_EXPIRED) {
		char when[40];
		time_text(&crt->valid_to, when, sizeof when);
		say(err, cap, "certificate of %s expired on %s", who, when);
		return;
	}
	char why[256];
	if (mbedtls_x509_crt_verify_info(why, sizeof(why), "", flags) < 0)
		why[0] = '\0';
	why[strcspn(why, "\n")] = '\0';
	say(err, cap, "certificate not accepted by the cluster CA: %s", why);
}

/*
 * What TLS checks of a certificate for its place, checked by the proof too:
 * the proof carries a certificate on its own, so without this a certificate
 * TLS would refuse as a client's (a CA's, keyUsage without digitalSignature,
 * extendedKeyUsage serverAuth only) still proved a client's name (an
 * outside security tester). A node's certificate is used both ways (it
 * dials and listens), so it needs serverAuth and clientAuth, as
 * tools/dev-certs.sh and docs/security.md make it. An extension that is
 * absent restricts nothing (RFC 5280; mbedtls' checks say the same), and
 * anyExtendedKeyUsage counts for every usage. Our own certificate is held
 * to the same rule at load, so a wrong one is refused at the start.
 */
static int check_usage(const mbedtls_x509_crt *crt, enum el_ident_role role, char *err,
		       size_t cap)
{
	char who[EL_IDENT_NAME_MAX + 160];
	const char *what = role == EL_IDENT_NODE ? "node" : "client";
	cert_label(crt, who, sizeof(who));
	if (crt->ca_istrue) {
		say(err, cap, "certificate of %s is a CA's (basicConstraints CA:TRUE), not a %s's",
		    who, what);
		return EL_EPERM;
	}
	if (mbedtls_x509_crt_check_key_usage(crt, MBEDTLS_X509_KU_DIGITAL_SIGNATURE) != 0) {
		say(err, cap, "certificate of %s: its keyUsage lacks digitalSignature (the proof "
		    "is a signature)", who);
		return EL_EPERM;
	}
	const bool client_ok = mbedtls_x509_crt_check_extended_key_usage(
		crt, MBEDTLS_OID_CLIENT_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH)) == 0;
	const bool server_ok = mbedtls_x509_crt_check_extended_key_usage(
		crt, MBEDTLS_OID_SERVER_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)) == 0;
	if (!client_ok || (role == EL_IDENT_NODE && !server_ok)) {
		say(err, cap, "certificate of %s: its extendedKeyUsage lacks %s (a %s certificate "
		    "needs %s)", who, !client_ok ? "clientAuth" : "serverAuth", what,
		    role == EL_IDENT_NODE ? "serverAuth and clientAuth" : "clientAuth");
		return EL_EPERM;
	}
	return 0;
}

static int verify_chain(struct el_ident *id, mbedtls_x509_crt *crt, char *err, size_t cap)
{
	uint32_t flags = 0;
	mbedtls_x509_crl *crl = id->has_crl ? &id->crl : NULL;
	if (mbedtls_x509_crt_verify(crt, &id->ca, crl, NULL, &flags, NULL, NULL) == 0)
		return 0;
	explain(id, crt, flags, err, cap);
	return EL_EPERM;
}

/* Our own certificate: as any other, except that a reload may take it
 * revoked and nothing else wrong (el_ident_reload_crl). A CRL that refuses
 * everything is named as the problem before any revocation it holds: one
 * both expired and revoking ours was told as "revoked", as if applied. */
static int verify_own(struct el_ident *id, const char *ca_file, const char *cert_file,
		      const char *crl_file, char *err, size_t cap)
{
	uint32_t flags = 0;
	mbedtls_x509_crl *crl = id->has_crl ? &id->crl : NULL;
	if (mbedtls_x509_crt_verify(&id->cert, &id->ca, crl, NULL, &flags, NULL, NULL) == 0)
		return 0;
	char why[300];
	if (flags & CRL_FLAGS) {
		char ca[300];
		snprintf(ca, sizeof ca, "ca_file %s", ca_file);
		crl_words(id, flags, ca, why, sizeof why);
		say(err, cap, "crl_file %s: %s; every certificate would be refused", crl_file, why);
		return EL_EPERM;
	}
	if (id->own_revoked_ok && flags == MBEDTLS_X509_BADCERT_REVOKED) {
		id->own_revoked = true;
		return 0;
	}
	explain(id, &id->cert, flags, why, sizeof why);
	say(err, cap, "%s: %s (%s%s%s)", cert_file, why, ca_file, crl_file ? ", " : "",
	    crl_file ? crl_file : "");
	return EL_EPERM;
}

/* Whether one CRL of the file names one certificate of ca_file as its
 * issuer; issuer gets the last name seen. mbedtls skips a CRL of another
 * issuer without a flag, so a crl_file from another CA revoked nothing and
 * nothing said so (revocation failing open). Compared as mbedtls' text
 * form, case aside: mbedtls compares names' strings case-insensitively. */
static bool crl_from_ca(const struct el_ident *id, char *issuer, size_t cap)
{
	char ca[256];
	issuer[0] = '\0';
	for (const mbedtls_x509_crl *c = &id->crl; c != NULL; c = c->next) {
		if (c->version == 0 || mbedtls_x509_dn_gets(issuer, cap, &c->issuer) < 0)
			continue;
		for (const mbedtls_x509_crt *a = &id->ca; a != NULL; a = a->next)
			if (a->version != 0 && mbedtls_x509_dn_gets(ca, sizeof ca, &a->subject) >= 0 &&
			    strcasecmp(ca, issuer) == 0)
				return true;
	}
	return false;
}

/* A directory for a file: mbedtls sizes a file with ftell, which on a
 * directory gives LONG_MAX, and asks calloc for that (a sanitizer aborts). */
static bool is_dir(const char *path, const char *what, char *err, size_t cap)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return false;
	say(err, cap, "%s: a directory, not a %s", path, what);
	return true;
}

/* A file this process cannot open says why (EACCES, ENOENT), not "not a
 * readable PEM": a certificate renewed as root, 0600, read by the service
 * user at SIGHUP is a good PEM (an outside tester). */
static bool unreadable(const char *path, char *err, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (f != NULL) {
		fclose(f);
		return false;
	}
	say(err, cap, "%s: cannot read: %s", path, strerror(errno));
	return true;
}

static int load_parts(struct el_ident *id, const char *ca_file, const char *cert_file,
		      const char *key_file, const char *crl_file, char *err, size_t cap)
{
	const char *kf = key_file != NULL ? key_file : cert_file;
	if (is_dir(ca_file, "CA certificate", err, cap) ||
	    (crl_file != NULL && is_dir(crl_file, "CRL", err, cap)) ||
	    is_dir(cert_file, "certificate", err, cap) || is_dir(kf, "private key", err, cap))
		return EL_EINVAL;
	if (unreadable(ca_file, err, cap) || (crl_file != NULL && unreadable(crl_file, err, cap)) ||
	    unreadable(cert_file, err, cap) || unreadable(kf, err, cap))
		return EL_EINVAL;
	if (mbedtls_x509_crt_parse_file(&id->ca, ca_file) != 0) {
		say(err, cap, "%s: not a readable PEM CA certificate", ca_file);
		return EL_EINVAL;
	}
	if (crl_file != NULL && mbedtls_x509_crl_parse_file(&id->crl, crl_file) != 0) {
		say(err, cap, "%s: not a readable PEM or DER CRL", crl_file);
		return EL_EINVAL;
	}
	id->has_crl = crl_file != NULL;
	char why[260];
	if (id->has_crl && !crl_from_ca(id, why, sizeof why)) {
		say(err, cap, "crl_file %s: issued by \"%s\", not by the CA of ca_file %s: it would "
		    "revoke nothing", crl_file, why, ca_file);
		return EL_EINVAL;
	}
	if (mbedtls_x509_crt_parse_file(&id->cert, cert_file) != 0) {
		say(err, cap, "%s: not a readable PEM certificate", cert_file);
		return EL_EINVAL;
	}
	if (mbedtls_pk_parse_keyfile(&id->key, kf, NULL) != 0) {
		say(err, cap, "%s: not a readable PEM private key", kf);
		return EL_EINVAL;
	}
	if (mbedtls_pk_check_pair(&id->cert.pk, &id->key) != 0) {
		say(err, cap, "%s: the key does not belong to the certificate in %s", kf, cert_file);
		return EL_EINVAL;
	}
	if (!el_ident_cert_identity(&id->cert, id->name, &id->role)) {
		identity_words(&id->cert, why, sizeof why);
		say(err, cap, "%s: %s; the subject needs CN=<name> and OU=node or OU=client",
		    cert_file, why);
		return EL_EINVAL;
	}
	if (check_usage(&id->cert, id->role, why, sizeof(why)) != 0) {
		say(err, cap, "%s: %s", cert_file, why);
		return EL_EINVAL;
	}
	return verify_own(id, ca_file, cert_file, crl_file, err, cap) != 0 ? EL_EINVAL : 0;
}

int el_ident_load(struct el_ident **out, const char *ca_file, const char *cert_file,
		  const char *key_file, char *err, size_t err_cap)
{
	return el_ident_load_crl(out, ca_file, cert_file, key_file, NULL, err, err_cap);
}

static int load(struct el_ident **out, const char *ca_file, const char *cert_file,
		const char *key_file, const char *crl_file, bool own_revoked_ok, char *err,
		size_t err_cap)
{
	*out = NULL;
	struct el_ident *id = calloc(1, sizeof(*id));
	if (id == NULL) {
		say(err, err_cap, "out of memory");
		return EL_EFULL;
	}
	id->own_revoked_ok = own_revoked_ok;
	mbedtls_x509_crt_init(&id->ca);
	mbedtls_x509_crl_init(&id->crl);
	mbedtls_x509_crt_init(&id->cert);
	mbedtls_pk_init(&id->key);
	mbedtls_entropy_init(&id->entropy);
	mbedtls_ctr_drbg_init(&id->drbg);
	int rc = load_parts(id, ca_file, cert_file, key_file, crl_file, err, err_cap);
	if (rc == 0 && mbedtls_ctr_drbg_seed(&id->drbg, mbedtls_entropy_func, &id->entropy,
					     (const unsigned char *)DOMAIN, sizeof(DOMAIN)) != 0) {
		say(err, err_cap, "no entropy for the random generator");
		rc = EL_EIO;
	}
	if (rc != 0) {
		el_ident_free(id);
		return rc;
	}
	*out = id;
	return 0;
}

int el_ident_load_crl(struct el_ident **out, const char *ca_file, const char *cert_file,
		      const char *key_file, const char *crl_file, char *err, size_t err_cap)
{
	return load(out, ca_file, cert_file, key_file, crl_file, false, err, err_cap);
}

int el_ident_reload_crl(struct el_ident **out, const char *ca_file, const char *cert_file,
			const char *key_file, const char *crl_file, char *err, size_t err_cap)
{
	return load(out, ca_file, cert_file, key_file, crl_file, true, err, err_cap);
}

bool el_ident_own_revoked(const struct el_ident *id)
{
	return id->own_revoked;
}

void el_ident_free(struct el_ident *id)
{
	if (id == NULL)
		return;
	mbedtls_x509_crt_free(&id->ca);
	mbedtls_x509_crl_free(&id->crl);
	mbedtls_x509_crt_free(&id->cert);
	mbedtls_pk_free(&id->key);
	mbedtls_ctr_drbg_free(&id->drbg);
	mbedtls_entropy_free(&id->entropy);
	free(id);
}

bool el_ident_crl_next_update(const struct el_ident *id, time_t *when)
{
	bool any = false;
	for (const mbedtls_x509_crl *c = &id->crl; id->has_crl && c != NULL; c = c->next) {
		const mbedtls_x509_time *t = &c->next_update;
		if (c->version == 0 || t->year == 0)
			continue; /* an empty link, or a CRL without nextUpdate */
		struct tm tm = { .tm_year = t->year - 1900, .tm_mon = t->mon - 1,
				 .tm_mday = t->day, .tm_hour = t->hour, .tm_min = t->min,
				 .tm_sec = t->sec };
		const time_t at = timegm(&tm);
		if (!any || at < *when)
			*when = at;
		any = true;
	}
	return any;
}

const char *el_ident_name(const struct el_ident *id)
{
	return id->name;
}

enum el_ident_role el_ident_role_of(const struct el_ident *id)
{
	return id->role;
}

/* SHA-256 of the bytes a dialer signs (see el_ident.h). */
static int signed_digest(const char *dialer, const char *listener,
			 const uint8_t nonce[EL_IDENT_NONCE_LEN], uint8_t digest[32])
{
	uint8_t buf[sizeof(DOMAIN) + 1 + 2 * (1 + EL_IDENT_NAME_MAX) + EL_IDENT_NONCE_LEN];
	const size_t dl = strlen(dialer), ll = strlen(listener);
	if (dl > EL_IDENT_NAME_MAX || ll > EL_IDENT_NAME_MAX)
		return EL_EINVAL;
	size_t n = 0;
	memcpy(buf, DOMAIN, sizeof(DOMAIN)); /* with its NUL: the separator */
	n += sizeof(DOMAIN);
	buf[n++] = DIRECTION_DIALER_TO_LISTENER;
	buf[n++] = (uint8_t)dl;
	memcpy(buf + n, dialer, dl);
	n += dl;
	buf[n++] = (uint8_t)ll;
	memcpy(buf + n, listener, ll);
	n += ll;
	memcpy(buf + n, nonce, EL_IDENT_NONCE_LEN);
	n += EL_IDENT_NONCE_LEN;
	return mbedtls_sha256_ret(buf, n, digest, 0) == 0 ? 0 : EL_EIO;
}

/* ---- the two messages: CBOR maps {0: version, 1: type, 2: a, 3: b} ---- */

static int encode_msg(uint8_t type, const uint8_t *a, uint32_t a_len, const uint8_t *b,
		      uint32_t b_len, bool b_is_text, uint8_t *buf, size_t cap)
{
	struct el_cbor_enc e;
	el_cbor_enc_init(&e, buf, cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap);
	el_cbor_put_map(&e, 4);
	el_cbor_put_uint(&e, KEY_VERSION);
	el_cbor_put_uint(&e, EL_IDENT_VERSION);
	el_cbor_put_uint(&e, KEY_TYPE);
	el_cbor_put_uint(&e, type);
	el_cbor_put_uint(&e, KEY_A);
	el_cbor_put_bytes(&e, a, a_len);
	el_cbor_put_uint(&e, KEY_B);
	if (b_is_text)
		el_cbor_put_text(&e, (const char *)b, b_len);
	else
		el_cbor_put_bytes(&e, b, b_len);
	return el_cbor_enc_finish(&e);
}

struct msg {
	const uint8_t *a;
	uint32_t a_len;
	const uint8_t *b;
	uint32_t b_len;
};

/* Strict: exactly the four keys in order, the version, the type, both
 * fields within their bounds, nothing after the map. */
static int decode_msg(const uint8_t *buf, size_t len, uint8_t type, uint32_t a_max,
		      uint32_t b_max, bool b_is_text, struct msg *m)
{
	if (len > EL_IDENT_PROOF_MAX)
		return EL_EDECODE;
	struct el_cbor_dec d;
	el_cbor_dec_init(&d, buf, (uint32_t)len);
	uint32_t n = 0;
	uint64_t key[4] = {0}, version = 0, got_type = 0;
	el_cbor_get_map(&d, &n, 4);
	el_cbor_get_uint(&d, &key[0]);
	el_cbor_get_uint(&d, &version);
	el_cbor_get_uint(&d, &key[1]);
	el_cbor_get_uint(&d, &got_type);
	el_cbor_get_uint(&d, &key[2]);
	el_cbor_get_bytes(&d, &m->a, &m->a_len, a_max);
	el_cbor_get_uint(&d, &key[3]);
	if (b_is_text)
		el_cbor_get_text(&d, (const char **)&m->b, &m->b_len, b_max);
	else
		el_cbor_get_bytes(&d, &m->b, &m->b_len, b_max);
	if (el_cbor_dec_finish(&d) != 0 || n != 4)
		return EL_EDECODE;
	if (key[0] != KEY_VERSION || key[1] != KEY_TYPE || key[2] != KEY_A || key[3] != KEY_B)
		return EL_EDECODE;
	if (version != EL_IDENT_VERSION)
		return EL_EVERSION;
	if (got_type != type || m->a_len == 0 || m->b_len == 0)
		return EL_EDECODE;
	return 0;
}

int el_ident_challenge(struct el_ident *id, uint8_t nonce[EL_IDENT_NONCE_LEN], uint8_t *buf,
		       size_t cap)
{
	if (mbedtls_ctr_drbg_random(&id->drbg, nonce, EL_IDENT_NONCE_LEN) != 0)
		return EL_EIO;
	return encode_msg(MSG_CHALLENGE, nonce, EL_IDENT_NONCE_LEN, (const uint8_t *)id->name,
			  (uint32_t)strlen(id->name), true, buf, cap);
}

int el_ident_prove(struct el_ident *id, const uint8_t *challenge, size_t len,
		   const char *expected_name, uint8_t *buf, size_t cap)
{
	struct msg m;
	int rc = decode_msg(challenge, len, MSG_CHALLENGE, EL_IDENT_NONCE_LEN, EL_IDENT_NAME_MAX,
			    true, &m);
	if (rc != 0)
		return rc;
	if (m.a_len != EL_IDENT_NONCE_LEN)
		return EL_EDECODE;
	/* Sign only for the listener we meant to reach (and TLS verified): a
	 * relayed challenge names someone else. */
	if (strlen(expected_name) != m.b_len || memcmp(expected_name, m.b, m.b_len) != 0)
		return EL_EPERM;
	uint8_t digest[32];
	rc = signed_digest(id->name, expected_name, m.a, digest);
	if (rc != 0)
		return rc;
	uint8_t sig[MBEDTLS_PK_SIGNATURE_MAX_SIZE];
	size_t sig_len = 0;
	if (mbedtls_pk_sign(&id->key, MBEDTLS_MD_SHA256, digest, sizeof(digest), sig, &sig_len,
			    mbedtls_ctr_drbg_random, &id->drbg) != 0 || sig_len > EL_IDENT_SIG_MAX)
		return EL_EIO;
	return encode_msg(MSG_PROOF, id->cert.raw.p, (uint32_t)id->cert.raw.len, sig,
			  (uint32_t)sig_len, false, buf, cap);
}

int el_ident_challenge_name(const uint8_t *challenge, size_t len,
			    char name[EL_IDENT_NAME_MAX + 1])
{
	struct msg m;
	name[0] = '\0';
	int rc = decode_msg(challenge, len, MSG_CHALLENGE, EL_IDENT_NONCE_LEN, EL_IDENT_NAME_MAX,
			    true, &m);
	if (rc != 0)
		return rc;
	memcpy(name, m.b, m.b_len);
	name[m.b_len] = '\0';
	return 0;
}

static int check_proof(struct el_ident *id, mbedtls_x509_crt *crt,
		       const uint8_t nonce[EL_IDENT_NONCE_LEN], enum el_ident_role want,
		       const struct msg *m, char name[EL_IDENT_NAME_MAX + 1], char *err, size_t cap)
{
	if (mbedtls_x509_crt_parse_der(crt, m->a, m->a_len) != 0) {
		say(err, cap, "the proof's certificate is not DER X.509");
		return EL_EPERM;
	}
	int rc = verify_chain(id, crt, err, cap);
	if (rc != 0)
		return rc;
	enum el_ident_role role;
	if (!el_ident_cert_identity(crt, name, &role)) {
		identity_words(crt, err, cap);
		return EL_EPERM;
	}
	if (role != want) {
		say(err, cap, "a %s certificate (%s) on the %s port", role == EL_IDENT_NODE ? "node" : "client",
		    name, want == EL_IDENT_NODE ? "peer" : "client");
		return EL_EPERM;
	}
	rc = check_usage(crt, role, err, cap);
	if (rc != 0)
		return rc;
	uint8_t digest[32];
	if (signed_digest(name, id->name, nonce, digest) != 0)
		return EL_EPERM;
	if (mbedtls_pk_verify(&crt->pk, MBEDTLS_MD_SHA256, digest, sizeof(digest), m->b, m->b_len) != 0) {
		say(err, cap, "signature of %s does not verify for this connection", name);
		return EL_EPERM;
	}
	return 0;
}

int el_ident_verify(struct el_ident *id, const uint8_t nonce[EL_IDENT_NONCE_LEN],
		    enum el_ident_role want, const uint8_t *proof, size_t len,
		    char name[EL_IDENT_NAME_MAX + 1], char *err, size_t err_cap)
{
	name[0] = '\0';
	struct msg m;
	int rc = decode_msg(proof, len, MSG_PROOF, EL_IDENT_CERT_MAX, EL_IDENT_SIG_MAX, false, &m);
	if (rc != 0) {
		say(err, err_cap, "malformed proof: %s", el_strerror(rc));
		return rc;
	}
	mbedtls_x509_crt crt;
	mbedtls_x509_crt_init(&crt);
	rc = check_proof(id, &crt, nonce, want, &m, name, err, err_cap);
	mbedtls_x509_crt_free(&crt);
	if (rc != 0)
		name[0] = '\0';
	return rc;
}
