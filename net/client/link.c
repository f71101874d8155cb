/*
 * link.c - libedgelock's TLS link (el_link.h): a non-blocking TCP socket
 * with mbedtls on it, and poll() for every wait, bounded by a deadline.
 *
 * Threads: the connection's reader thread reads, a requesting thread writes
 * (client.c orders the writers). mbedtls allows one call at a time on an SSL
 * context, so each call holds l->mu; none of them blocks (the socket is
 * non-blocking), and the waits, in poll(), hold nothing. A write that
 * returns WANT_WRITE is repeated with the same arguments, as mbedtls asks,
 * and the reader's calls in between touch only the input side.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>

#include "el_bio.h"
#include "el_error.h"
#include "el_link.h"
#include "el_resolve.h"
#include "el_url.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for events on fd until deadline_ms: 0 when ready (or when the socket
 * has an error or hung up: the next call says which), EL_ETIMEDOUT, or
 * EL_ECANCELED when kick_fd (if not -1) became readable first. */
static int wait_fd(int fd, short events, uint64_t deadline_ms, int kick_fd)
{
	for (;;) {
		int timeout = -1;
		if (deadline_ms != EL_LINK_FOREVER) {
			const uint64_t now = now_ms();
			if (now >= deadline_ms)
				return EL_ETIMEDOUT;
			const uint64_t left = deadline_ms - now;
			timeout = left > 60000u ? 60000 : (int)left;
		}
		struct pollfd p[2] = { { .fd = fd, .events = events },
				       { .fd = kick_fd, .events = POLLIN } };
		const int n = poll(p, kick_fd >= 0 ? 2 : 1, timeout);
		if (n > 0 && p[0].revents != 0)
			return 0;
		if (n > 0)
			return EL_ECANCELED;
		if (n < 0 && errno != EINTR)
			return EL_EIO;
	}
}

/* ---- Configuration ---------------------------------------------------- */

/* mbedtls reads a directory as an empty file and says "memory allocation
 * failed": name the file that is not one, or cannot be read, first. */
static bool a_file(const char *path, const char *what, char *err, size_t cap)
{
	struct stat st;
	const bool found = stat(path, &st) == 0;
	if (!found)
		snprintf(err, cap, "%s: cannot read the %s: %s", path, what, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		snprintf(err, cap, "%s: the %s is not a file", path, what);
	return found && S_ISREG(st.st_mode);
}

static int load_files(struct el_link_config *cfg, const char *ca_file,
		      const char *cert_key_file, char *err, size_t cap)
{
	char why[160];
	if (!a_file(ca_file, "cluster CA", err, cap) ||
	    (cert_key_file != NULL && !a_file(cert_key_file, "client certificate", err, cap)))
		return EL_EINVAL;
	int rc = mbedtls_x509_crt_parse_file(&cfg->ca, ca_file);
	if (rc != 0) {
		mbedtls_strerror(rc, why, sizeof why);
		snprintf(err, cap, "%s: cannot load the cluster CA (%s)", ca_file, why);
		return EL_EINVAL;
	}
	if (cert_key_file == NULL)
		return 0;
	rc = mbedtls_x509_crt_parse_file(&cfg->own, cert_key_file);
	if (rc == 0)
		rc = mbedtls_pk_parse_keyfile(&cfg->key, cert_key_file, NULL);
	if (rc == 0)
		rc = mbedtls_ssl_conf_own_cert(&cfg->conf, &cfg->own, &cfg->key);
	if (rc != 0) {
		mbedtls_strerror(rc, why, sizeof why);
		snprintf(err, cap, "%s: cannot load the client certificate and key (%s)",
			 cert_key_file, why);
		return EL_EINVAL;
	}
	return 0;
}

int el_link_config_init(struct el_link_config *cfg, const char *ca_file,
			const char *cert_key_file, char *err, size_t cap)
{
	mbedtls_ssl_config_init(&cfg->conf);
	mbedtls_x509_crt_init(&cfg->ca);
	mbedtls_x509_crt_init(&cfg->own);
	mbedtls_pk_init(&cfg->key);
	mbedtls_entropy_init(&cfg->entropy);
	mbedtls_ctr_drbg_init(&cfg->drbg);
	static const unsigned char who[] = "libedgelock";
	int rc = mbedtls_ctr_drbg_seed(&cfg->drbg, mbedtls_entropy_func, &cfg->entropy, who,
				       sizeof who - 1);
	if (rc == 0)
		rc = mbedtls_ssl_config_defaults(&cfg->conf, MBEDTLS_SSL_IS_CLIENT,
						 MBEDTLS_SSL_TRANSPORT_STREAM,
						 MBEDTLS_SSL_PRESET_DEFAULT);
	if (rc != 0) {
		char why[160];
		mbedtls_strerror(rc, why, sizeof why);
		snprintf(err, cap, "TLS setup: %s", why);
		return EL_EINVAL;
	}
	mbedtls_ssl_conf_rng(&cfg->conf, mbedtls_ctr_drbg_random, &cfg->drbg);
	mbedtls_ssl_conf_authmode(&cfg->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_min_version(&cfg->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
				     MBEDTLS_SSL_MINOR_VERSION_3); /* TLS 1.2 */
	rc = load_files(cfg, ca_file, cert_key_file, err, cap);
	if (rc == 0)
		mbedtls_ssl_conf_ca_chain(&cfg->conf, &cfg->ca, NULL);
	return rc;
}

void el_link_config_free(struct el_link_config *cfg)
{
	mbedtls_ssl_config_free(&cfg->conf);
	mbedtls_x509_crt_free(&cfg->ca);
	mbedtls_x509_crt_free(&cfg->own);
	mbedtls_pk_free(&cfg->key);
	mbedtls_ctr_drbg_free(&cfg->drbg);
	mbedtls_entropy_free(&cfg->entropy);
}

/* ---- Connecting ------------------------------------------------------- */

/* Connect a non-blocking socket to one address by deadline_ms: the socket,
 * or -1 with errno (ETIMEDOUT when the deadline passed). */
static int connect_one(const struct addrinfo *ai, uint64_t deadline_ms)
{
	const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			      ai->ai_protocol);
	if (fd < 0)
		return -1;
	int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
	if (rc != 0 && errno == EINPROGRESS) {
		if (wait_fd(fd, POLLOUT, deadline_ms, -1) != 0) {
			close(fd);
			errno = ETIMEDOUT;
			return -1;
		}
		int soerr = 0;
		socklen_t n = sizeof soerr;
		rc = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &n) != 0 ? -1 : soerr;
		if (rc != 0)
			errno = rc > 0 ? rc : errno;
	}
	if (rc != 0) {
		const int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	const int one = 1; /* a frame is one request: send it now */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static int connect_url(const char *url, uint64_t deadline_ms, char *err, size_t cap)
{
	char host[256], port[16];
	if (el_url_parse(url, host, sizeof host, port, sizeof port) != 0) {
		snprintf(err, cap, "not tls+tcp://HOST:PORT%s", el_url_hint(url));
		return EL_EINVAL;
	}
	struct addrinfo *list = NULL;
	const int rc = el_resolve(host, port, deadline_ms, &list, err, cap);
	if (rc != 0)
		return rc;
	int fd = -1;
	int e = ECONNREFUSED;
	for (const struct addrinfo *ai = list; ai != NULL && fd < 0; ai = ai->ai_next) {
		fd = connect_one(ai, deadline_ms);
		e = fd < 0 ? errno : 0;
	}
	freeaddrinfo(list);
	if (fd < 0) {
		snprintf(err, cap, "%s", strerror(e));
		return e == ETIMEDOUT ? EL_ETIMEDOUT : EL_EIO;
	}
	return fd;
}

/* Why a handshake failed, in words: the certificate check's findings when
 * it was the check. A server certificate our CA did not sign says
 * EL_LINK_UNTRUSTED first (el_link.h): a wrong ca_file on our side, most
 * often, which the CLI tells apart from a node that is down. */
static void handshake_error(struct el_link *l, int rc, char *err, size_t cap)
{
	char why[160];
	mbedtls_strerror(rc, why, sizeof why);
	const uint32_t flags = mbedtls_ssl_get_verify_result(&l->ssl);
	if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0 && flags != (uint32_t)-1) {
		char info[256];
		mbedtls_x509_crt_verify_info(info, sizeof info, "", flags);
		info[strcspn(info, "\n")] = '\0';
		snprintf(err, cap, "TLS handshake: %s: %s",
			 (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) != 0
				 ? EL_LINK_UNTRUSTED
				 : "the server's certificate failed verification", info);
	} else {
		snprintf(err, cap, "TLS handshake: %s", why);
	}
}

/* A fatal alert by which the server says it refuses our certificate (or
 * its absence): the verdict of the other side, which no retry changes. */
static bool refusal_alert(unsigned char alert)
{
	switch (alert) {
	case MBEDTLS_SSL_ALERT_MSG_NO_CERT:
	case MBEDTLS_SSL_ALERT_MSG_BAD_CERT:
	case MBEDTLS_SSL_ALERT_MSG_UNSUPPORTED_CERT:
	case MBEDTLS_SSL_ALERT_MSG_CERT_REVOKED:
	case MBEDTLS_SSL_ALERT_MSG_CERT_EXPIRED:
	case MBEDTLS_SSL_ALERT_MSG_CERT_UNKNOWN:
	case MBEDTLS_SSL_ALERT_MSG_UNKNOWN_CA:
	case MBEDTLS_SSL_ALERT_MSG_ACCESS_DENIED:
	case 116: /* certificate_required (TLS 1.3) */
		return true;
	default:
		return false;
	}
}

/* The fatal alert the server left unread on the socket, or -1. A server
 * that refuses our certificate sends its alert and closes while we still
 * write our last flight: the write fails (EPIPE) before mbedtls reads the
 * alert. Before the server's ChangeCipherSpec an alert is plaintext: a
 * record header (type 21, version, length 2), then level and description. */
static int unread_alert(const struct el_link *l)
{
	unsigned char rec[7];
	const ssize_t n = recv(l->fd, rec, sizeof rec, MSG_PEEK | MSG_DONTWAIT);
	if (n != (ssize_t)sizeof rec || rec[0] != MBEDTLS_SSL_MSG_ALERT || rec[3] != 0 ||
	    rec[4] != 2 || rec[5] != MBEDTLS_SSL_ALERT_LEVEL_FATAL)
		return -1;
	return rec[6];
}

/* Did the server refuse our certificate? EL_EPERM with a message when it
 * said so in an alert, or when it asked for a certificate, we had none to
 * give, and it then cut the connection: mbedtls 2.28 as a server (the
 * daemon) closes without an alert when a required certificate is missing. */
static int refused(struct el_link *l, int rc, bool have_cert, char *err, size_t cap)
{
	const bool cut = rc == MBEDTLS_ERR_NET_SEND_FAILED || rc == MBEDTLS_ERR_NET_RECV_FAILED ||
			 rc == MBEDTLS_ERR_NET_CONN_RESET || rc == MBEDTLS_ERR_SSL_CONN_EOF ||
			 rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY;
	int alert = cut ? unread_alert(l) : -1;
	if (rc == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE && l->ssl.in_msg != NULL)
		alert = l->ssl.in_msg[1];
	if (alert >= 0 && refusal_alert((unsigned char)alert)) {
		snprintf(err, cap, "TLS handshake: the server refused our certificate (alert %d)",
			 alert);
		return EL_EPERM;
	}
	if (!have_cert && l->ssl.client_auth && cut) {
		snprintf(err, cap, "TLS handshake: the server requires a client certificate and "
			 "none was given (cert_key_file)");
		return EL_EPERM;
	}
	return 0;
}

static int handshake(struct el_link *l, bool have_cert, uint64_t deadline_ms, char *err,
		     size_t cap)
{
	for (;;) {
		const int rc = mbedtls_ssl_handshake(&l->ssl);
		if (rc == 0)
			return 0;
		short ev = 0;
		if (rc == MBEDTLS_ERR_SSL_WANT_READ)
			ev = POLLIN;
		else if (rc == MBEDTLS_ERR_SSL_WANT_WRITE)
			ev = POLLOUT;
		if (ev == 0) {
			const int why = refused(l, rc, have_cert, err, cap);
			if (why != 0)
				return why;
			handshake_error(l, rc, err, cap);
			return EL_EIO;
		}
		if (wait_fd(l->fd, ev, deadline_ms, -1) != 0) {
			snprintf(err, cap, "TLS handshake: no answer in time");
			return EL_ETIMEDOUT;
		}
	}
}

int el_link_dial(struct el_link *l, const struct el_link_config *cfg, const char *url,
		 const char *server_name, uint64_t deadline_ms, char *err, size_t cap)
{
	const int fd = connect_url(url, deadline_ms, err, cap);
	l->fd = fd < 0 ? -1 : fd;
	if (fd < 0)
		return fd;
	pthread_mutex_init(&l->mu, NULL);
	mbedtls_ssl_init(&l->ssl);
	int rc = mbedtls_ssl_setup(&l->ssl, &cfg->conf);
	if (rc == 0 && server_name != NULL)
		rc = mbedtls_ssl_set_hostname(&l->ssl, server_name);
	if (rc != 0) {
		handshake_error(l, rc, err, cap);
		el_link_close(l);
		return EL_EIO;
	}
	mbedtls_ssl_set_bio(&l->ssl, &l->fd, el_bio_send, el_bio_recv, NULL);
	/* before any other thread knows l */
	rc = handshake(l, cfg->own.version != 0, deadline_ms, err, cap);
	if (rc != 0)
		el_link_close(l);
	return rc;
}

const mbedtls_x509_crt *el_link_peer_cert(const struct el_link *l)
{
	return mbedtls_ssl_get_peer_cert(&l->ssl);
}

/* ---- Reading and writing ---------------------------------------------- */

/* A write gave up at its deadline with done bytes of its frame taken. If
 * any were, or mbedtls still holds part of a record (out_left), the stream
 * cannot go on: mbedtls wants the same buffer again after WANT_WRITE, and
 * the next writer's mbedtls_ssl_write would flush the old record and count
 * its own frame as written while never encrypting it (a frame silently not
 * sent); half a frame on the stream breaks its framing too. End the link:
 * its connection is dropped and the request retried on another. */
static void write_abandoned(struct el_link *l, size_t done)
{
	pthread_mutex_lock(&l->mu);
	const bool pending = l->ssl.out_left > 0;
	pthread_mutex_unlock(&l->mu);
	if (done > 0 || pending)
		el_link_shutdown(l);
}

int el_link_write(struct el_link *l, const void *buf, size_t len, uint64_t deadline_ms)
{
	size_t done = 0;
	while (done < len) {
		pthread_mutex_lock(&l->mu);
		const int n = mbedtls_ssl_write(&l->ssl, (const unsigned char *)buf + done,
						len - done);
		pthread_mutex_unlock(&l->mu);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n != MBEDTLS_ERR_SSL_WANT_WRITE && n != MBEDTLS_ERR_SSL_WANT_READ)
			return EL_EIO;
		const int rc = wait_fd(l->fd, n == MBEDTLS_ERR_SSL_WANT_WRITE ? POLLOUT : POLLIN,
				       deadline_ms, -1);
		if (rc != 0) {
			write_abandoned(l, done);
			return rc;
		}
	}
	return 0;
}

int el_link_read(struct el_link *l, void *buf, size_t cap, uint64_t deadline_ms)
{
	return el_link_read_or_kick(l, buf, cap, deadline_ms, -1);
}

int el_link_read_or_kick(struct el_link *l, void *buf, size_t cap, uint64_t deadline_ms,
			 int kick_fd)
{
	for (;;) {
		pthread_mutex_lock(&l->mu);
		const int n = mbedtls_ssl_read(&l->ssl, buf, cap);
		pthread_mutex_unlock(&l->mu);
		if (n > 0)
			return n;
		if (n != MBEDTLS_ERR_SSL_WANT_READ && n != MBEDTLS_ERR_SSL_WANT_WRITE)
			return EL_EIO; /* 0: the end; else an error */
		const int rc = wait_fd(l->fd, n == MBEDTLS_ERR_SSL_WANT_READ ? POLLIN : POLLOUT,
				       deadline_ms, kick_fd);
		if (rc != 0)
			return rc;
	}
}

int el_link_read_exact(struct el_link *l, void *buf, size_t len, uint64_t deadline_ms)
{
	size_t done = 0;
	while (done < len) {
		const int n = el_link_read(l, (unsigned char *)buf + done, len - done, deadline_ms);
		if (n < 0)
			return n;
		done += (size_t)n;
	}
	return 0;
}

void el_link_shutdown(struct el_link *l)
{
	/* Wakes a poll() in any thread, now or later: the socket stays ended. */
	(void)shutdown(l->fd, SHUT_RDWR);
}

void el_link_close(struct el_link *l)
{
	if (l->fd < 0)
		return;
	mbedtls_ssl_free(&l->ssl);
	pthread_mutex_destroy(&l->mu);
	close(l->fd);
	l->fd = -1;
}
