/*
 * test_link.c - libedgelock's TLS link (net/client/link.c) against a real
 * mbedtls server on loopback, with the identity tests' certificates
 * (tests/net/make-test-certs.sh): the server's name is checked, every wait
 * ends at its deadline, a shutdown wakes a blocked reader, one thread can
 * read while another writes, endpoint URLs are parsed strictly, and a name
 * that the resolver sits on costs a dial its deadline and no more
 * (stalled_dns.c).
 *
 *   test_link CERT_DIR
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "el_error.h"
#include "el_link.h"
#include "el_resolve.h"
#include "el_url.h"
#include "el_test.h"
#include "stalled_dns.h"

EL_TEST_MAIN_DEFINITIONS

static const char *cert_dir;
static char client_pem[512]; /* client1's certificate and key in one file */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void path(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", cert_dir, name);
}

/* ---- A one-connection mbedtls server (node1's certificate) -------------- */

/* SERVE_STALL: after the handshake it reads nothing until released, so the
 * client's writes fill the socket buffers and wait. */
enum serve_mode { SERVE_ECHO, SERVE_SILENT, SERVE_CLOSE, SERVE_STALL };

struct server {
	enum serve_mode mode;
	mbedtls_net_context listen;
	int port;
	pthread_t thread;
	bool handshake_ok;  /* the client presented a certificate of the CA */
	atomic_bool released; /* SERVE_STALL: go on (and end) */
};

static int bind_any_port(mbedtls_net_context *l)
{
	for (int port = 24000 + (int)(getpid() % 4000); port < 32000; port += 7) {
		char p[16];
		snprintf(p, sizeof p, "%d", port);
		if (mbedtls_net_bind(l, "127.0.0.1", p, MBEDTLS_NET_PROTO_TCP) == 0)
			return port;
	}
	return -1;
}

static void serve_conn(struct server *s, mbedtls_ssl_context *ssl)
{
	int rc;
	while ((rc = mbedtls_ssl_handshake(ssl)) == MBEDTLS_ERR_SSL_WANT_READ ||
	       rc == MBEDTLS_ERR_SSL_WANT_WRITE)
		;
	s->handshake_ok = rc == 0;
	if (rc != 0 || s->mode == SERVE_CLOSE)
		return;
	while (s->mode == SERVE_STALL && !atomic_load(&s->released))
		usleep(10 * 1000);
	if (s->mode == SERVE_STALL)
		return;
	unsigned char buf[4096];
	for (;;) {
		const int n = mbedtls_ssl_read(ssl, buf, sizeof buf);
		if (n <= 0)
			return; /* the client closed (SILENT waits for this) */
		for (int done = 0; s->mode == SERVE_ECHO && done < n;) {
			const int w = mbedtls_ssl_write(ssl, buf + done, (size_t)(n - done));
			if (w <= 0)
				return;
			done += w;
		}
	}
}

static void *server_main(void *arg)
{
	struct server *s = arg;
	char ca[512], crt[512], key[512];
	path(ca, sizeof ca, "ca.crt");
	path(crt, sizeof crt, "node1.crt");
	path(key, sizeof key, "node1.key");
	mbedtls_x509_crt cacert, own;
	mbedtls_pk_context pk;
	mbedtls_ssl_config conf;
	mbedtls_ssl_context ssl;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_net_context conn;
	mbedtls_x509_crt_init(&cacert);
	mbedtls_x509_crt_init(&own);
	mbedtls_pk_init(&pk);
	mbedtls_ssl_config_init(&conf);
	mbedtls_ssl_init(&ssl);
	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_net_init(&conn);
	if (mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, NULL, 0) == 0 &&
	    mbedtls_x509_crt_parse_file(&cacert, ca) == 0 &&
	    mbedtls_x509_crt_parse_file(&own, crt) == 0 &&
	    mbedtls_pk_parse_keyfile(&pk, key, NULL) == 0 &&
	    mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
					MBEDTLS_SSL_PRESET_DEFAULT) == 0) {
		mbedtls_ssl_conf_rng(&conf, mbedtls_ctr_drbg_random, &drbg);
		mbedtls_ssl_conf_ca_chain(&conf, &cacert, NULL);
		mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		if (mbedtls_ssl_conf_own_cert(&conf, &own, &pk) == 0 &&
		    mbedtls_ssl_setup(&ssl, &conf) == 0 &&
		    mbedtls_net_accept(&s->listen, &conn, NULL, 0, NULL) == 0) {
			mbedtls_ssl_set_bio(&ssl, &conn, mbedtls_net_send, mbedtls_net_recv, NULL);
			serve_conn(s, &ssl);
		}
	}
	mbedtls_net_free(&conn);
	mbedtls_ssl_free(&ssl);
	mbedtls_ssl_config_free(&conf);
	mbedtls_pk_free(&pk);
	mbedtls_x509_crt_free(&own);
	mbedtls_x509_crt_free(&cacert);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&entropy);
	return NULL;
}

static int server_start(struct server *s, enum serve_mode mode)
{
	memset(s, 0, sizeof(*s));
	s->mode = mode;
	mbedtls_net_init(&s->listen);
	s->port = bind_any_port(&s->listen);
	if (s->port < 0)
		return -1;
	return pthread_create(&s->thread, NULL, server_main, s);
}

/* Close the listener (an accept still waiting ends) and join. */
static void server_stop(struct server *s)
{
	shutdown(s->listen.fd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	mbedtls_net_free(&s->listen);
}

static void url_of(char *out, size_t cap, int port)
{
	snprintf(out, cap, "tls+tcp://127.0.0.1:%d", port);
}

static struct el_link_config cfg;
static char err[300];

/* Start a server in mode and dial it as node1: 0, or -1 (and the reason). */
static int open_link(struct server *s, enum serve_mode mode, struct el_link *l)
{
	if (server_start(s, mode) != 0)
		return -1;
	char url[64];
	url_of(url, sizeof url, s->port);
	if (el_link_dial(l, &cfg, url, "node1", now_ms() + 5000, err, sizeof err) == 0)
		return 0;
	printf("  dial: %s\n", err);
	server_stop(s);
	return -1;
}

/* ---- Tests ------------------------------------------------------------ */

static void test_named_server_echoes(void)
{
	struct server s;
	struct el_link l;
	EL_CHECK(open_link(&s, SERVE_ECHO, &l) == 0);
	EL_CHECK(el_link_write(&l, "frame one", 9, now_ms() + 2000) == 0);
	char got[9];
	EL_CHECK_EQ(el_link_read_exact(&l, got, sizeof got, now_ms() + 2000), 0);
	EL_CHECK(memcmp(got, "frame one", 9) == 0);
	el_link_close(&l);
	server_stop(&s);
	EL_CHECK(s.handshake_ok); /* and so the client's certificate was accepted */
}

static void test_wrong_name_refused(void)
{
	struct server s;
	EL_CHECK(server_start(&s, SERVE_ECHO) == 0);
	char url[64];
	url_of(url, sizeof url, s.port);
	struct el_link l;
	const int rc = el_link_dial(&l, &cfg, url, "node2", now_ms() + 5000, err, sizeof err);
	if (rc == 0)
		el_link_close(&l); /* a failed test must end, not wait for the server */
	server_stop(&s);
	EL_CHECK_EQ(rc, EL_EIO);
	EL_CHECK(strstr(err, "TLS handshake") != NULL);
	EL_CHECK(strstr(err, "CN") != NULL || strstr(err, "name") != NULL);
	EL_CHECK(!s.handshake_ok);
}

static void test_read_ends_at_its_deadline(void)
{
	struct server s;
	struct el_link l;
	EL_CHECK(open_link(&s, SERVE_SILENT, &l) == 0);
	const uint64_t t0 = now_ms();
	char b;
	const int rc = el_link_read(&l, &b, 1, t0 + 100);
	const uint64_t took = now_ms() - t0;
	el_link_close(&l); /* the server sees the end and returns */
	server_stop(&s);
	EL_CHECK_EQ(rc, EL_ETIMEDOUT);
	EL_CHECK(took >= 100);
}

/* A link and what a call on it, in another thread, returned. */
struct link_call {
	struct el_link *l;
	int rc;
};

static void *read_forever(void *arg)
{
	struct link_call *r = arg;
	char b;
	r->rc = el_link_read(r->l, &b, 1, EL_LINK_FOREVER);
	return NULL;
}

static void test_shutdown_wakes_a_blocked_reader(void)
{
	struct server s;
	struct el_link l;
	EL_CHECK(open_link(&s, SERVE_SILENT, &l) == 0);
	struct link_call r = { .l = &l, .rc = 1 };
	pthread_t t;
	EL_CHECK(pthread_create(&t, NULL, read_forever, &r) == 0);
	usleep(50 * 1000); /* let it block in poll(); a later start sees the shutdown too */
	el_link_shutdown(&l);
	pthread_join(t, NULL);
	EL_CHECK_EQ(el_link_write(&l, "x", 1, now_ms() + 1000), EL_EIO);
	el_link_close(&l);
	server_stop(&s);
	EL_CHECK_EQ(r.rc, EL_EIO);
}

static void test_server_close_is_the_end(void)
{
	struct server s;
	struct el_link l;
	EL_CHECK(open_link(&s, SERVE_CLOSE, &l) == 0);
	char b;
	const int rc = el_link_read(&l, &b, 1, now_ms() + 5000);
	el_link_close(&l);
	server_stop(&s);
	EL_CHECK_EQ(rc, EL_EIO);
}

static void test_refused_and_silent_ports(void)
{
	/* a port nobody listens on: refused at once */
	struct server s;
	EL_CHECK(server_start(&s, SERVE_ECHO) == 0);
	const int port = s.port;
	server_stop(&s); /* listener closed, port free */
	char url[64];
	url_of(url, sizeof url, port);
	struct el_link l;
	EL_CHECK_EQ(el_link_dial(&l, &cfg, url, NULL, now_ms() + 2000, err, sizeof err), EL_EIO);
	EL_CHECK(strstr(err, "refused") != NULL);
	/* a listener that never accepts nor answers: the handshake times out */
	mbedtls_net_context quiet;
	mbedtls_net_init(&quiet);
	const int qport = bind_any_port(&quiet);
	EL_CHECK(qport > 0);
	url_of(url, sizeof url, qport);
	const uint64_t t0 = now_ms();
	const int rc = el_link_dial(&l, &cfg, url, NULL, t0 + 200, err, sizeof err);
	const uint64_t took = now_ms() - t0;
	mbedtls_net_free(&quiet);
	EL_CHECK_EQ(rc, EL_ETIMEDOUT);
	EL_CHECK(took >= 200 && took < 5000);
	EL_CHECK_EQ(el_link_dial(&l, &cfg, "tcp://127.0.0.1:1", NULL, now_ms() + 100, err,
				 sizeof err), EL_EINVAL);
}

/* One thread writes 2 MiB while another reads the echo: more than the
 * sockets buffer, so the writer waits for POLLOUT while the reader runs. */
#define BULK (2u << 20)

static void *write_bulk(void *arg)
{
	struct link_call *w = arg;
	static unsigned char out[BULK];
	for (unsigned i = 0; i < BULK; i++)
		out[i] = (unsigned char)(i * 7u + (i >> 12));
	w->rc = el_link_write(w->l, out, BULK, now_ms() + 20000);
	return NULL;
}

/* A dial of a name whose resolver never answers in time ends at its
 * deadline, not at the resolver's; the abandoned lookup finishes on its own
 * and frees what it holds (ASan's leak check runs at exit). A name that
 * resolves (localhost) still reaches the server. */
static void test_name_lookup_bounded_by_deadline(void)
{
	struct el_link l;
	const uint64_t t0 = now_ms();
	const int rc = el_link_dial(&l, &cfg, "tls+tcp://" STALLED_DNS_NAME ":4433", NULL, t0 + 200,
				    err, sizeof err);
	const uint64_t took = now_ms() - t0;
	EL_CHECK_EQ(rc, EL_ETIMEDOUT);
	EL_CHECK(took >= 200 && took < STALLED_DNS_MS - 300);
	EL_CHECK(strstr(err, STALLED_DNS_NAME) != NULL);
	/* no deadline at all: the lookup's own answer, however long it takes */
	EL_CHECK_EQ(el_link_dial(&l, &cfg, "tls+tcp://" STALLED_DNS_NAME ":4433", NULL,
				 EL_LINK_FOREVER, err, sizeof err), EL_EIO);
	EL_CHECK(strstr(err, "cannot resolve " STALLED_DNS_NAME) != NULL);

	struct server s;
	EL_CHECK(server_start(&s, SERVE_ECHO) == 0);
	char url[64];
	snprintf(url, sizeof url, "tls+tcp://localhost:%d", s.port);
	EL_CHECK_EQ(el_link_dial(&l, &cfg, url, "node1", now_ms() + 5000, err, sizeof err), 0);
	EL_CHECK(el_link_write(&l, "named", 5, now_ms() + 2000) == 0);
	char got[5];
	EL_CHECK_EQ(el_link_read_exact(&l, got, sizeof got, now_ms() + 2000), 0);
	EL_CHECK(memcmp(got, "named", 5) == 0);
	el_link_close(&l);
	server_stop(&s);

	/* the first, abandoned lookup ends by itself */
	EL_CHECK(stalled_dns_wait_idle());
}

/* Lookups left running after their deadline are capped: with
 * EL_RESOLVE_STUCK_MAX of them waiting on a dead DNS, the next name fails
 * at once instead of starting yet another thread; once they end, names are
 * looked up again. */
static void test_stuck_lookups_capped(void)
{
	struct el_link l;
	const char *url = "tls+tcp://" STALLED_DNS_NAME ":4433";
	EL_CHECK(stalled_dns_wait_idle()); /* none left from an earlier test */
	for (int i = 0; i < EL_RESOLVE_STUCK_MAX; i++)
		EL_CHECK_EQ(el_link_dial(&l, &cfg, url, NULL, now_ms() + 20, err, sizeof err),
			    EL_ETIMEDOUT);
	const uint64_t t0 = now_ms();
	EL_CHECK_EQ(el_link_dial(&l, &cfg, url, NULL, t0 + 3000, err, sizeof err), EL_EIO);
	EL_CHECK(now_ms() - t0 < 1500);
	EL_CHECK(strstr(err, "still wait for DNS") != NULL);
	EL_CHECK_EQ(el_resolve_stuck(), EL_RESOLVE_STUCK_MAX);
	EL_CHECK(stalled_dns_wait_idle()); /* also: none counted as stuck */
	EL_CHECK_EQ(el_link_dial(&l, &cfg, url, NULL, now_ms() + 20, err, sizeof err),
		    EL_ETIMEDOUT);
	EL_CHECK(stalled_dns_wait_idle());
}

/* A write that reaches its deadline with part of a record still held by
 * mbedtls (the server reads nothing; the socket is full) ends the link:
 * mbedtls wants that record written again with the same buffer, and the
 * next writer's mbedtls_ssl_write flushed it and counted its own frame as
 * written though it was never encrypted or sent. The link stayed open and
 * the next write timed out again (or "succeeded" once the server read). */
static void test_write_cut_at_deadline_ends_link(void)
{
	struct server s;
	struct el_link l;
	EL_CHECK(open_link(&s, SERVE_STALL, &l) == 0);
	static unsigned char chunk[16384];
	int rc = 0;
	for (unsigned i = 0; i < 4000 && rc == 0; i++) /* up to 64 MiB: the buffers fill */
		rc = el_link_write(&l, chunk, sizeof chunk, now_ms() + 200);
	EL_CHECK_EQ(rc, EL_ETIMEDOUT);
	const int next = el_link_write(&l, "frame", 5, now_ms() + 200);
	char b;
	const int read_rc = el_link_read(&l, &b, 1, now_ms() + 200);
	atomic_store(&s.released, true);
	el_link_close(&l);
	server_stop(&s);
	EL_CHECK_EQ(next, EL_EIO);
	EL_CHECK_EQ(read_rc, EL_EIO); /* the connection's reader sees the end */
}

static void test_read_while_another_thread_writes(void)
{
	struct server s;
	struct el_link l;
	EL_CHECK(open_link(&s, SERVE_ECHO, &l) == 0);
	struct link_call w = { .l = &l, .rc = 1 };
	pthread_t t;
	EL_CHECK(pthread_create(&t, NULL, write_bulk, &w) == 0);
	static unsigned char in[BULK];
	const int rc = el_link_read_exact(&l, in, BULK, now_ms() + 20000);
	pthread_join(t, NULL);
	el_link_close(&l);
	server_stop(&s);
	EL_CHECK_EQ(w.rc, 0);
	EL_CHECK_EQ(rc, 0);
	unsigned bad = 0;
	for (unsigned i = 0; i < BULK; i++)
		bad += in[i] != (unsigned char)(i * 7u + (i >> 12));
	EL_CHECK_EQ(bad, 0);
}

static void test_url_parsing(void)
{
	char h[64], p[8];
	EL_CHECK_EQ(el_url_parse("tls+tcp://gw-1.lan:7401", h, sizeof h, p, sizeof p), 0);
	EL_CHECK(strcmp(h, "gw-1.lan") == 0 && strcmp(p, "7401") == 0);
	EL_CHECK_EQ(el_url_parse("tls+tcp://10.0.0.2:1", h, sizeof h, p, sizeof p), 0);
	EL_CHECK(strcmp(h, "10.0.0.2") == 0 && strcmp(p, "1") == 0);
	EL_CHECK_EQ(el_url_parse("tls+tcp://[fe80::1]:7401", h, sizeof h, p, sizeof p), 0);
	EL_CHECK(strcmp(h, "fe80::1") == 0 && strcmp(p, "7401") == 0);
	static const char *bad[] = {
		"tcp://10.0.0.2:7401", "tls+tcp://10.0.0.2", "tls+tcp://:7401",
		"tls+tcp://10.0.0.2:", "tls+tcp://10.0.0.2:74x1", "tls+tcp://fe80::1:7401",
		"tls+tcp://[fe80::1]7401", "tls+tcp://[fe80::1", "tls+tcp://[]:1",
		"tls+tcp://[10.0.0.2]:1",
		"tls+tcp://a]b:1", "tls+tcp://host:123456789", "tls+tcp://host:0",
		"tls+tcp://host:65536",
		"tls+tcp://a-host-name-longer-than-the-sixty-four-bytes-the-caller-has-room-for:1",
	};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const int rc = el_url_parse(bad[i], h, sizeof h, p, sizeof p);
		if (rc != EL_EINVAL)
			printf("  accepted: %s\n", bad[i]);
		EL_CHECK_EQ(rc, EL_EINVAL);
	}
}

/* [node] metrics' form takes the same hosts: an IPv6 one in brackets was
 * refused there ("must be http://HOST:PORT/PATH") while peer_addr took it. */
static void test_http_url_parsing(void)
{
	char h[64], p[8];
	const char *path = NULL;
	EL_CHECK_EQ(el_url_http_parse("http://[::1]:9119/metrics", h, sizeof h, p, sizeof p, &path),
		    0);
	EL_CHECK(strcmp(h, "::1") == 0 && strcmp(p, "9119") == 0 && path != NULL &&
		 strcmp(path, "/metrics") == 0);
	EL_CHECK_EQ(el_url_http_parse("http://[::]:9119/m", h, sizeof h, p, sizeof p, NULL), 0);
	EL_CHECK(strcmp(h, "::") == 0);
	EL_CHECK_EQ(el_url_http_parse("http://*:80/", h, sizeof h, p, sizeof p, &path), 0);
	EL_CHECK(strcmp(h, "*") == 0 && strcmp(p, "80") == 0 && strcmp(path, "/") == 0);
	EL_CHECK_EQ(el_url_http_parse("http://gw:1/a/b", h, sizeof h, p, sizeof p, &path), 0);
	EL_CHECK(strcmp(h, "gw") == 0 && strcmp(path, "/a/b") == 0);
	static const char *bad[] = {
		"http://::1:9119/metrics", "http://[::1]9119/m", "http://[::1]:/m",
		"http://[10.0.0.2]:1/m", "http://h:0/m", "http://h:65536/m", "http://h:+5/m",
		"http://h:5", "http://:5/m", "http://h:5/a b", "http://h:5/m?x", "http://h:5/m#x",
		"tls+tcp://h:5/m", "http://h/m", "http://[::1:5/m",
	};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const int rc = el_url_http_parse(bad[i], h, sizeof h, p, sizeof p, NULL);
		if (rc != EL_EINVAL)
			printf("  accepted: %s\n", bad[i]);
		EL_CHECK_EQ(rc, EL_EINVAL);
	}
}

/* "tls+tcp://::1:9111" said only "not tls+tcp://HOST:PORT": a host with a
 * colon gets the hint that brackets are missing, other mistakes none. */
static void test_url_hint(void)
{
	EL_CHECK(strcmp(el_url_hint("tls+tcp://::1:9111"),
			"; an IPv6 address goes in brackets: tls+tcp://[::1]:9111") == 0);
	EL_CHECK(strstr(el_url_hint("tls+tcp://fe80::1"), "tls+tcp://[::1]:9111") != NULL);
	EL_CHECK(strcmp(el_url_hint("http://::1:9119/metrics"),
			"; an IPv6 address goes in brackets: http://[::1]:9119/metrics") == 0);
	static const char *none[] = {
		"tls+tcp://[::1]:9111", "tls+tcp://h:0", "tls+tcp://h", "tls+tcp://", "h:1:2",
		"http://h:5/a:b:c", "http://[::1]:x/m", "",
	};
	for (unsigned i = 0; i < sizeof none / sizeof none[0]; i++) {
		if (el_url_hint(none[i])[0] != '\0')
			printf("  hinted: %s\n", none[i]);
		EL_CHECK(el_url_hint(none[i])[0] == '\0');
	}
}

static void test_bad_files_say_which(void)
{
	struct el_link_config c;
	int rc = el_link_config_init(&c, "/nonexistent/ca.pem", NULL, err, sizeof err);
	el_link_config_free(&c);
	EL_CHECK_EQ(rc, EL_EINVAL);
	EL_CHECK(strstr(err, "/nonexistent/ca.pem: cannot read the cluster CA: No such file") !=
		 NULL);
	/* mbedtls would read a directory as an empty file ("memory allocation
	 * failed"): it is named for what it is */
	rc = el_link_config_init(&c, "/tmp", NULL, err, sizeof err);
	el_link_config_free(&c);
	EL_CHECK_EQ(rc, EL_EINVAL);
	EL_CHECK(strstr(err, "/tmp: the cluster CA is not a file") != NULL);
	char ca[512], crt_only[512];
	path(ca, sizeof ca, "ca.crt");
	path(crt_only, sizeof crt_only, "client1.crt"); /* a certificate without its key */
	rc = el_link_config_init(&c, ca, crt_only, err, sizeof err);
	el_link_config_free(&c);
	EL_CHECK_EQ(rc, EL_EINVAL);
	EL_CHECK(strstr(err, "cannot load the client certificate and key") != NULL);
}

/* NAME's certificate and key in one PEM file (into pem), as the CLI's
 * --cert takes. */
static int write_pem(const char *name, char *pem, size_t cap)
{
	snprintf(pem, cap, "%s/%s-combined.pem", cert_dir, name);
	FILE *out = fopen(pem, "w");
	if (out == NULL)
		return -1;
	static const char *ext[] = { "crt", "key" };
	for (unsigned i = 0; i < 2; i++) {
		char p[512], part[128], buf[4096];
		snprintf(part, sizeof part, "%s.%s", name, ext[i]);
		path(p, sizeof p, part);
		FILE *in = fopen(p, "r");
		if (in == NULL) {
			fclose(out);
			return -1;
		}
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, in)) > 0)
			fwrite(buf, 1, n, out);
		fclose(in);
	}
	return fclose(out);
}

/* The server refuses our certificate: EL_EPERM, said so, whether it cuts
 * the handshake without an alert (none given where one is required: what
 * mbedtls 2.28 does as a server) or sends an alert (an expired one). */
static void test_refused_certificate_is_eperm(void)
{
	char ca[512], expired[512];
	path(ca, sizeof ca, "ca.crt");
	static const char *want[] = { "requires a client certificate", "refused our certificate" };
	for (unsigned i = 0; i < 2; i++) {
		struct el_link_config c;
		EL_CHECK(i == 0 || write_pem("expired", expired, sizeof expired) == 0);
		EL_CHECK_EQ(el_link_config_init(&c, ca, i == 0 ? NULL : expired, err, sizeof err), 0);
		struct server s;
		EL_CHECK(server_start(&s, SERVE_ECHO) == 0);
		char url[64];
		url_of(url, sizeof url, s.port);
		struct el_link l;
		const int rc = el_link_dial(&l, &c, url, NULL, now_ms() + 5000, err, sizeof err);
		if (rc == 0)
			el_link_close(&l);
		server_stop(&s);
		el_link_config_free(&c);
		if (rc != EL_EPERM)
			printf("  %s: %d %s\n", i == 0 ? "no certificate" : "expired", rc, err);
		EL_CHECK_EQ(rc, EL_EPERM);
		EL_CHECK(strstr(err, want[i]) != NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_link CERT_DIR\n");
		return 2;
	}
	cert_dir = argv[1];
	char ca[512];
	path(ca, sizeof ca, "ca.crt");
	if (write_pem("client1", client_pem, sizeof client_pem) != 0 || el_link_config_init(&cfg, ca, client_pem, err, sizeof err) != 0) {
		fprintf(stderr, "test_link: setup: %s\n", err);
		return 2;
	}
	EL_RUN(test_url_parsing);
	EL_RUN(test_http_url_parsing);
	EL_RUN(test_url_hint);
	EL_RUN(test_bad_files_say_which);
	EL_RUN(test_named_server_echoes);
	EL_RUN(test_wrong_name_refused);
	EL_RUN(test_read_ends_at_its_deadline);
	EL_RUN(test_shutdown_wakes_a_blocked_reader);
	EL_RUN(test_server_close_is_the_end);
	EL_RUN(test_refused_and_silent_ports);
	EL_RUN(test_name_lookup_bounded_by_deadline);
	EL_RUN(test_stuck_lookups_capped);
	EL_RUN(test_read_while_another_thread_writes);
	EL_RUN(test_write_cut_at_deadline_ends_link);
	EL_RUN(test_refused_certificate_is_eperm);
	el_link_config_free(&cfg);
	return el_test_end();
}
