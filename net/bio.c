/*
 * bio.c - mbedtls' I/O callbacks over a non-blocking socket (el_bio.h).
 */
#include <errno.h>
#include <sys/socket.h>

#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "el_bio.h"

int el_bio_send(void *fd, const unsigned char *buf, size_t len)
{
	const ssize_t n = send(*(const int *)fd, buf, len, MSG_NOSIGNAL);
	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	return MBEDTLS_ERR_NET_SEND_FAILED;
}

int el_bio_recv(void *fd, unsigned char *buf, size_t len)
{
	const ssize_t n = recv(*(const int *)fd, buf, len, 0);
	if (n >= 0)
		return (int)n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_READ;
	return MBEDTLS_ERR_NET_RECV_FAILED;
}
