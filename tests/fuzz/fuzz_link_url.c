/*
 * fuzz_link_url.c - libFuzzer target for the endpoint parsers (el_url.h):
 * el_url_parse ("tls+tcp://HOST:PORT", libedgelock's link and the daemon)
 * and el_url_http_parse ([node] metrics' "http://HOST:PORT/PATH"). Any
 * input is split or refused, never overruns, and what either accepts
 * writes back to the same text, so no byte of an endpoint is dropped or
 * invented on the way to getaddrinfo; el_url_hint reads any of it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_link.h"
#include "el_url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a parser accepted, written back: scheme, host (in brackets when it
 * holds a colon), port and path must give url again. */
static void same_again(const char *url, const char *scheme, const char *host,
		       const char *port, const char *path)
{
	const int port_n = atoi(port);
	if (host[0] == '\0' || port_n < 1 || port_n > 65535)
		abort();
	char again[300];
	const bool v6 = strchr(host, ':') != NULL;
	snprintf(again, sizeof again, v6 ? "%s[%s]:%s%s" : "%s%s:%s%s", scheme, host, port, path);
	if (strcmp(again, url) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char url[300];
	if (size >= sizeof url)
		return 0;
	memcpy(url, data, size);
	url[size] = '\0';
	(void)el_url_hint(url);
	char host[64], port[8];
	const char *path = NULL;
	if (el_url_parse(url, host, sizeof host, port, sizeof port) == 0)
		same_again(url, "tls+tcp://", host, port, "");
	if (el_url_http_parse(url, host, sizeof host, port, sizeof port, &path) == 0) {
		if (path < url || path >= url + size || *path != '/' ||
		    strpbrk(path, " \t?#") != NULL)
			abort();
		same_again(url, "http://", host, port, path);
	}
	return 0;
}
