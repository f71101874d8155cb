/*
 * el_url.h - the endpoint form "tls+tcp://HOST:PORT" (url.c), and a socket
 * address written as its HOST:PORT for log lines.
 */
#ifndef EL_URL_H
#define EL_URL_H

#include <stddef.h>

/* Split url into host (a name, an IPv4 address, or an IPv6 address written
 * in brackets) and a decimal port 1..65535; 0, or EL_EINVAL (with
 * el_error.h's value) when url is not of that form or a part does not fit. */
int el_url_parse(const char *url, char *host, size_t host_cap, char *port, size_t port_cap);

/* Room for el_addr_name's text: an IPv6 address in brackets and a port. */
#define EL_ADDR_NAME_MAX 64

/* Write the socket address sa (len bytes, as accept or getpeername gave
 * it) as "192.0.2.7:51234" or "[2001:db8::7]:51234", numeric (no lookup:
 * a log line must not wait on DNS); "?" when it is of no such family. */
void el_addr_name(const void *sa, unsigned len, char *out, size_t cap);

#endif
