/*
 * el_url.h - the endpoint form "tls+tcp://HOST:PORT" (url.c), the metrics
 * address "http://HOST:PORT/PATH", and a socket address written as its
 * HOST:PORT for log lines. In all of them an IPv6 HOST is written in
 * brackets ("tls+tcp://[::1]:9111"), as in URLs (RFC 3986): its colons
 * would otherwise run into the port's.
 */
#ifndef EL_URL_H
#define EL_URL_H

#include <stddef.h>

/* Split url into host (a name, an IPv4 address, or an IPv6 address written
 * in brackets) and a decimal port 1..65535; 0, or EL_EINVAL (with
 * el_error.h's value) when url is not of that form or a part does not fit. */
int el_url_parse(const char *url, char *host, size_t host_cap, char *port, size_t port_cap);

/* The same for "http://HOST:PORT/PATH" ([node] metrics), HOST as above or
 * "*" (every address); *path (when path is not NULL) points at PATH's
 * leading '/' in url. EL_EINVAL also for a PATH with a space, tab, '?' or
 * '#' (a scrape asks for it as written). */
int el_url_http_parse(const char *url, char *host, size_t host_cap, char *port,
		      size_t port_cap, const char **path);

/* What to add to "URL is not tls+tcp://HOST:PORT" when url's host holds a
 * colon (an IPv6 address without its brackets): "; an IPv6 address goes
 * in brackets: tls+tcp://[::1]:9111" (the http:// form for an http:// url),
 * else "". */
const char *el_url_hint(const char *url);

/* Room for el_addr_name's text: an IPv6 address in brackets and a port. */
#define EL_ADDR_NAME_MAX 64

/* Write the socket address sa (len bytes, as accept or getpeername gave
 * it) as "192.0.2.7:51234" or "[2001:db8::7]:51234", numeric (no lookup:
 * a log line must not wait on DNS); "?" when it is of no such family. */
void el_addr_name(const void *sa, unsigned len, char *out, size_t cap);

#endif
