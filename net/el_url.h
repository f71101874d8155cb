/*
 * el_url.h - the endpoint form "tls+tcp://HOST:PORT" (url.c).
 */
#ifndef EL_URL_H
#define EL_URL_H

#include <stddef.h>

/* Split url into host (a name, an IPv4 address, or an IPv6 address written
 * in brackets) and a decimal port 1..65535; 0, or EL_EINVAL (with
 * el_error.h's value) when url is not of that form or a part does not fit. */
int el_url_parse(const char *url, char *host, size_t host_cap, char *port, size_t port_cap);

#endif
