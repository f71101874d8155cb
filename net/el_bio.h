/*
 * el_bio.h - mbedtls' I/O callbacks over a non-blocking socket (bio.c),
 * for the daemon's connections and libedgelock's link alike. The context
 * is a pointer to the socket's descriptor (an int).
 */
#ifndef EL_BIO_H
#define EL_BIO_H

#include <stddef.h>

/* Bytes sent, MBEDTLS_ERR_SSL_WANT_WRITE when the socket is full, or
 * MBEDTLS_ERR_NET_SEND_FAILED. Never raises SIGPIPE. */
int el_bio_send(void *fd, const unsigned char *buf, size_t len);
/* Bytes read (0: the other side closed), MBEDTLS_ERR_SSL_WANT_READ when
 * nothing waits, or MBEDTLS_ERR_NET_RECV_FAILED. */
int el_bio_recv(void *fd, unsigned char *buf, size_t len);

#endif
