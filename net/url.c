/*
 * url.c - the one endpoint form edgelock takes, "tls+tcp://HOST:PORT"
 * (el_url.h): libedgelock dials it, edgelockd listens on and dials it; and
 * a peer's socket address in the same HOST:PORT form, for log lines.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "el_error.h"
#include "el_url.h"

#define URL_SCHEME "tls+tcp://"

int el_url_parse(const char *url, char *host, size_t host_cap, char *port,
		      size_t port_cap)
{
	const size_t scheme = sizeof URL_SCHEME - 1;
	if (strncmp(url, URL_SCHEME, scheme) != 0)
		return EL_EINVAL;
	const char *h = url + scheme;
	const char *colon = NULL;
	size_t h_len = 0;
	if (*h == '[') { /* [v6]:port */
		const char *close = strchr(h, ']');
		if (close == NULL || close[1] != ':')
			return EL_EINVAL;
		h++;
		h_len = (size_t)(close - h);
		colon = close + 1;
		if (memchr(h, ':', h_len) == NULL) /* brackets are for IPv6 only */
			return EL_EINVAL;
	} else {
		colon = strchr(h, ':'); /* a bare IPv6 address has more: refused */
		if (colon == NULL || strchr(colon + 1, ':') != NULL ||
		    memchr(h, ']', (size_t)(colon - h)) != NULL)
			return EL_EINVAL;
		h_len = (size_t)(colon - h);
	}
	const char *p = colon + 1;
	const size_t p_len = strlen(p);
	if (h_len == 0 || h_len >= host_cap || p_len == 0 || p_len >= port_cap ||
	    strspn(p, "0123456789") != p_len || atol(p) < 1 || atol(p) > 65535)
		return EL_EINVAL;
	memcpy(host, h, h_len);
	host[h_len] = '\0';
	memcpy(port, p, p_len + 1);
	return 0;
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
