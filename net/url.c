/*
 * url.c - the one endpoint form edgelock takes, "tls+tcp://HOST:PORT"
 * (el_url.h): libedgelock dials it, edgelockd listens on and dials it; the
 * daemon's metrics address "http://HOST:PORT/PATH", split by the same
 * rules (an IPv6 host in brackets); and a peer's socket address in the
 * same HOST:PORT form, for log lines.
 */
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "el_error.h"
#include "el_url.h"

#define URL_SCHEME "tls+tcp://"
#define HTTP_SCHEME "http://"

/* hp[0..len) as HOST:PORT, HOST a name, an IPv4 address or an IPv6 one in
 * brackets, PORT decimal 1..65535: split into host and port, or EL_EINVAL. */
static int host_port(const char *hp, size_t len, char *host, size_t host_cap, char *port,
		     size_t port_cap)
{
	const char *colon = NULL, *end = hp + len;
	size_t h_len = 0;
	if (len > 0 && *hp == '[') { /* [v6]:port */
		const char *close = memchr(hp, ']', len);
		if (close == NULL || close + 1 == end || close[1] != ':')
			return EL_EINVAL;
		hp++;
		h_len = (size_t)(close - hp);
		colon = close + 1;
		if (memchr(hp, ':', h_len) == NULL) /* brackets are for IPv6 only */
			return EL_EINVAL;
	} else {
		colon = memchr(hp, ':', len); /* a bare IPv6 address has more: refused */
		if (colon == NULL || memchr(colon + 1, ':', (size_t)(end - colon - 1)) != NULL ||
		    memchr(hp, ']', (size_t)(colon - hp)) != NULL)
			return EL_EINVAL;
		h_len = (size_t)(colon - hp);
	}
	const char *p = colon + 1;
	const size_t p_len = (size_t)(end - p);
	if (h_len == 0 || h_len >= host_cap || p_len == 0 || p_len >= port_cap ||
	    strspn(p, "0123456789") < p_len ||
	    atol(p) < 1 || atol(p) > 65535)
		return EL_EINVAL;
	memcpy(host, hp, h_len);
	host[h_len] = '\0';
	memcpy(port, p, p_len);
	port[p_len] = '\0';
	return 0;
}

int el_url_parse(const char *url, char *host, size_t host_cap, char *port,
		      size_t port_cap)
{
	const size_t scheme = sizeof URL_SCHEME - 1;
	if (strncmp(url, URL_SCHEME, scheme) != 0)
		return EL_EINVAL;
	const char *hp = url + scheme;
	return host_port(hp, strlen(hp), host, host_cap, port, port_cap);
}

int el_url_http_parse(const char *url, char *host, size_t host_cap, char *port,
		      size_t port_cap, const char **path)
{
	const size_t scheme = sizeof HTTP_SCHEME - 1;
	const char *hp = url + scheme, *slash = NULL;
	if (strncmp(url, HTTP_SCHEME, scheme) != 0 || (slash = strchr(hp, '/')) == NULL ||
	    strpbrk(slash, " \t?#") != NULL) /* a scrape asks for PATH as written */
		return EL_EINVAL;
	const int rc = host_port(hp, (size_t)(slash - hp), host, host_cap, port, port_cap);
	if (rc == 0 && path != NULL)
		*path = slash;
	return rc;
}

const char *el_url_hint(const char *url)
{
	const bool http = strncmp(url, HTTP_SCHEME, sizeof HTTP_SCHEME - 1) == 0;
	const char *hp = strstr(url, "://");
	if (hp == NULL || hp[3] == '[')
		return "";
	hp += 3;
	const size_t len = http ? strcspn(hp, "/") : strlen(hp);
	const char *colon = memchr(hp, ':', len);
	if (colon == NULL || memchr(colon + 1, ':', len - (size_t)(colon - hp) - 1) == NULL)
		return ""; /* one colon at most: the host has none */
	return http ? "; an IPv6 address goes in brackets: http://[::1]:9119/metrics"
		    : "; an IPv6 address goes in brackets: tls+tcp://[::1]:9111";
}

void el_addr_name(const void *sa, unsigned len, char *out, size_t cap)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];
	const struct sockaddr *a = sa;
	if ((a->sa_family != AF_INET && a->sa_family != AF_INET6) ||
	    getnameinfo(a, (socklen_t)len, host, sizeof host, port, sizeof port,
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, cap, "?");
		return;
	}
	snprintf(out, cap, a->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}
