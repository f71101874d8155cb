/*
 * el_link.h - libedgelock's TLS link: one TCP connection to a daemon's client
 * port with mbedtls on it, read by one thread and written by another, every
 * wait bounded by a deadline. Not installed.
 *
 * Why not nng (which the daemon used at first, net/README.md): a reply read
 * through nng passed three threads before the caller saw it (nng's poller,
 * a task thread for the TCP read, another for the TLS record), and the
 * client process spent about a third of the cluster's CPU per lock cycle
 * waking them (issue 14, tests/bench/load/README.md). Here the thread that
 * waits for bytes reads them itself: the kernel wakes it, and it decrypts
 * in place.
 */
#ifndef EL_LINK_H
#define EL_LINK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

/* What every link of a client shares: the cluster CA, our certificate and
 * key (if any), the random generator (thread-safe: mbedtls is built with
 * MBEDTLS_THREADING_PTHREAD) and the TLS settings. Read-only once set up. */
struct el_link_config {
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca;
	mbedtls_x509_crt own;
	mbedtls_pk_context key;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
};

struct el_link {
	int fd;                 /* a connected TCP socket, non-blocking; -1: none */
	pthread_mutex_t mu;     /* one mbedtls call at a time on ssl */
	mbedtls_ssl_context ssl;
};

/* No deadline: wait until the bytes come or el_link_shutdown(). */
#define EL_LINK_FOREVER UINT64_MAX

/* Load the CA and, when cert_key_file is not NULL, our certificate and key
 * (one PEM file). 0, or EL_EINVAL with a message in err. */
int el_link_config_init(struct el_link_config *cfg, const char *ca_file,
			const char *cert_key_file, char *err, size_t cap);
void el_link_config_free(struct el_link_config *cfg);

/* The words a dial's message begins with (after "TLS handshake: ") when the
 * server's certificate is not signed by our CA file: the client's ca_file is
 * most likely wrong. The CLI looks for them (exit 78 when every endpoint
 * said so, cmd/edgelock/main.c). */
#define EL_LINK_UNTRUSTED "the server's certificate is not signed by our CA file (ca_file)"

/* Connect to url ("tls+tcp://HOST:PORT", HOST a name, an IPv4 address or a
 * bracketed IPv6 one) and finish the TLS handshake by deadline_ms
 * (CLOCK_BOOTTIME ms). With server_name, the daemon's certificate must bear
 * that name; without, any certificate of the cluster CA will do. 0, or
 * EL_ETIMEDOUT / EL_EIO / EL_EINVAL with a message in err, or EL_EPERM when
 * the server refused our certificate (a fatal alert about it) or cut the
 * handshake after asking for one we did not have. A HOST name is
 * resolved within the same deadline (el_resolve.h), so a DNS outage costs a
 * reconnect its deadline, never more. */
int el_link_dial(struct el_link *l, const struct el_link_config *cfg, const char *url,
		 const char *server_name, uint64_t deadline_ms, char *err, size_t cap);

/* The certificate the daemon presented, verified against the cluster CA. */
const mbedtls_x509_crt *el_link_peer_cert(const struct el_link *l);

/* Write all len bytes by deadline_ms: 0, EL_ETIMEDOUT or EL_EIO. One writer
 * at a time (the caller orders them); a reader may run meanwhile. An
 * EL_ETIMEDOUT with part of the frame taken (sent, or held by mbedtls)
 * shuts the link down: no later write could go through whole. */
int el_link_write(struct el_link *l, const void *buf, size_t len, uint64_t deadline_ms);

/* Read between 1 and cap bytes: the count, or EL_ETIMEDOUT, or EL_EIO when
 * the connection ended (the daemon closed it, an error, el_link_shutdown). */
int el_link_read(struct el_link *l, void *buf, size_t cap, uint64_t deadline_ms);

/* The same, or EL_ECANCELED as soon as kick_fd (an eventfd, say) is
 * readable while nothing has come: the reader is asked to step aside. */
int el_link_read_or_kick(struct el_link *l, void *buf, size_t cap, uint64_t deadline_ms,
			 int kick_fd);

/* Read exactly len bytes: 0, EL_ETIMEDOUT or EL_EIO. */
int el_link_read_exact(struct el_link *l, void *buf, size_t len, uint64_t deadline_ms);

/* End the connection for both directions: a read or write waiting on it, in
 * any thread, returns EL_EIO. The link stays valid until el_link_close(). */
void el_link_shutdown(struct el_link *l);

/* Free a link el_link_dial() set up (no thread may be using it). */
void el_link_close(struct el_link *l);


#endif /* EL_LINK_H */
