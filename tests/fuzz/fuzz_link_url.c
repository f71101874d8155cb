/*
 * fuzz_link_url.c - libFuzzer target for libedgelock's endpoint parser
 * (el_url_parse, net/client/link.c): any input is split or refused,
 * never overruns, and what it accepts writes back to the same text, so no
 * byte of an endpoint is dropped or invented on the way to getaddrinfo.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_link.h"
#include "el_url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char url[300];
	if (size >= sizeof url)
		return 0;
	memcpy(url, data, size);
	url[size] = '\0';
	char host[64], port[8];
	if (el_url_parse(url, host, sizeof host, port, sizeof port) != 0)
		return 0;
	const int port_n = atoi(port);
	if (host[0] == '\0' || port_n < 1 || port_n > 65535)
		abort();
	char again[300];
	const bool v6 = strchr(host, ':') != NULL;
	snprintf(again, sizeof again, v6 ? "tls+tcp://[%s]:%s" : "tls+tcp://%s:%s", host, port);
	if (strcmp(again, url) != 0)
		abort();
	return 0;
}
