/*
 * net_tls.c - the daemon's TLS configurations, over mbedtls (net_impl.h).
 *
 * The CA and the node's certificate and key, parsed once, under three
 * configurations: the peer port's server side (a certificate from the
 * cluster CA is required), the client port's (required or optional, as
 * configured), and the dialer's to peers (the peer's certificate must bear
 * "node<N>", set per connection). The set is reference-counted: a reload
 * (SIGHUP) makes a new one, and a connection keeps the one it was made with
 * until it ends.
 *
 * The random generator is shared by both of net's threads; mbedtls is built
 * with MBEDTLS_THREADING_C (Debian), so ctr_drbg locks itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/error.h>

#include "el_bio.h"
#include "el_error.h"
#include "el_platform.h"
#include "net_impl.h"

int net_tls_init(struct el_net *net)
{
	mbedtls_entropy_init(&net->entropy);
	mbedtls_ctr_drbg_init(&net->drbg);
	static const unsigned char who[] = "edgelockd net";
	if (mbedtls_ctr_drbg_seed(&net->drbg, mbedtls_entropy_func, &net->entropy, who,
				  sizeof who - 1) != 0) {
		el_log(EL_LOG_ERROR, "net: no entropy for TLS");
		return EL_EIO;
	}
	return EL_OK;
}

void net_tls_fini(struct el_net *net)
{
	mbedtls_ctr_drbg_free(&net->drbg);
	mbedtls_entropy_free(&net->entropy);
}

static void tls_free(struct net_tls *t)
{
	mbedtls_ssl_config_free(&t->peer);
	mbedtls_ssl_config_free(&t->client);
	mbedtls_ssl_config_free(&t->dial);
	mbedtls_x509_crt_free(&t->ca);
	mbedtls_x509_crt_free(&t->own);
	mbedtls_pk_free(&t->key);
	free(t);
}

/* One of t's three configurations, on its files and the shared generator. */
static int conf_setup(struct el_net *net, struct net_tls *t, mbedtls_ssl_config *conf,
		      int endpoint, int authmode)
{
	int rc = mbedtls_ssl_config_defaults(conf, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM,
					     MBEDTLS_SSL_PRESET_DEFAULT);
	if (rc == 0)
		rc = mbedtls_ssl_conf_own_cert(conf, &t->own, &t->key);
	if (rc != 0)
		return rc;
	mbedtls_ssl_conf_rng(conf, mbedtls_ctr_drbg_random, &net->drbg);
	mbedtls_ssl_conf_authmode(conf, authmode);
	mbedtls_ssl_conf_ca_chain(conf, &t->ca, NULL);
	mbedtls_ssl_conf_min_version(conf, MBEDTLS_SSL_MAJOR_VERSION_3,
				     MBEDTLS_SSL_MINOR_VERSION_3); /* TLS 1.2 */
	return 0;
}

/* Parse the files once; the three configurations point into them. */
static int tls_setup(struct el_net *net, struct net_tls *t, const char **what)
{
	const struct el_net_config *cfg = &net->cfg;
	*what = "ca_file";
	int rc = mbedtls_x509_crt_parse_file(&t->ca, cfg->ca_file);
	if (rc == 0) {
		*what = "cert_key_file";
		rc = mbedtls_x509_crt_parse_file(&t->own, cfg->cert_key_file);
	}
	if (rc == 0)
		rc = mbedtls_pk_parse_keyfile(&t->key, cfg->cert_key_file, NULL);
	if (rc == 0) {
		*what = "setup";
		rc = conf_setup(net, t, &t->peer, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_VERIFY_REQUIRED);
	}
	if (rc == 0)
		rc = conf_setup(net, t, &t->client, MBEDTLS_SSL_IS_SERVER,
				cfg->client_cert_required ? MBEDTLS_SSL_VERIFY_REQUIRED
							  : MBEDTLS_SSL_VERIFY_OPTIONAL);
	if (rc == 0)
		rc = conf_setup(net, t, &t->dial, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_VERIFY_REQUIRED);
	return rc;
}

struct net_tls *net_tls_load(struct el_net *net)
{
	const struct el_net_config *cfg = &net->cfg;
	struct net_tls *t = calloc(1, sizeof *t);
	if (t == NULL)
		return NULL;
	t->refs = 1;
	mbedtls_ssl_config_init(&t->peer);
	mbedtls_ssl_config_init(&t->client);
	mbedtls_ssl_config_init(&t->dial);
	mbedtls_x509_crt_init(&t->ca);
	mbedtls_x509_crt_init(&t->own);
	mbedtls_pk_init(&t->key);
	const char *what = "setup";
	const int rc = tls_setup(net, t, &what);
	if (rc != 0) {
		char why[160];
		mbedtls_strerror(rc, why, sizeof why);
		el_log(EL_LOG_ERROR, "net: TLS setup (ca_file %s, cert_key_file %s): %s: %s",
		       cfg->ca_file, cfg->cert_key_file, what, why);
		tls_free(t);
		return NULL;
	}
	return t;
}

void net_tls_unref(struct net_tls *t)
{
	if (t != NULL && --t->refs == 0)
		tls_free(t);
}

static int conn_send_cb(void *ctx, const unsigned char *buf, size_t len)
{
	struct conn *c = ctx;
	return el_bio_send(&c->fd, buf, len);
}

/* mbedtls reads a record's 5-byte header, then its body: served from one
 * recv() of what has arrived. After a short recv() the socket is empty, so
 * the next call says WANT_READ without asking it (a conn_read or hs_step
 * clears tin_dry first: epoll reported input, level-triggered). */
static int conn_recv_cb(void *ctx, unsigned char *buf, size_t len)
{
	struct conn *c = ctx;
	if (c->tin_off == c->tin_len) {
		if (c->tin_dry)
			return MBEDTLS_ERR_SSL_WANT_READ;
		const int n = el_bio_recv(&c->fd, c->tin, c->tin_cap);
		if (n <= 0) {
			c->tin_dry = n == MBEDTLS_ERR_SSL_WANT_READ;
			return n;
		}
		c->tin_len = (uint32_t)n;
		c->tin_off = 0;
		c->tin_dry = (uint32_t)n < c->tin_cap;
	}
	const uint32_t k = c->tin_len - c->tin_off < len ? c->tin_len - c->tin_off : (uint32_t)len;
	memcpy(buf, c->tin + c->tin_off, k);
	c->tin_off += k;
	return (int)k;
}

int net_tls_attach(struct conn *c, struct net_tls *t, const char *server_name)
{
	const mbedtls_ssl_config *conf = c->kind == C_CLIENT ? &t->client
					 : c->kind == C_PEER_IN ? &t->peer : &t->dial;
	mbedtls_ssl_init(&c->ssl);
	if (mbedtls_ssl_setup(&c->ssl, conf) != 0 ||
	    (server_name != NULL && mbedtls_ssl_set_hostname(&c->ssl, server_name) != 0)) {
		mbedtls_ssl_free(&c->ssl);
		return EL_EFULL;
	}
	mbedtls_ssl_set_bio(&c->ssl, c, conn_send_cb, conn_recv_cb, NULL);
	t->refs++;
	c->tls = t;
	return EL_OK;
}

void net_tls_detach(struct conn *c)
{
	if (c->tls == NULL)
		return;
	mbedtls_ssl_free(&c->ssl);
	net_tls_unref(c->tls);
	c->tls = NULL;
}
