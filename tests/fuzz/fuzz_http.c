/*
 * fuzz_http.c - libFuzzer target for the metrics server's request parser
 * (cmd/edgelockd/http_request.c): any bytes as a request head. The answer
 * is one of the four codes; a 200 only for a first line (after empty ones)
 * that begins GET or HEAD and names the path, its next byte a space, a tab
 * or a query's '?'; a body left out only for HEAD.
 */
#include <stdlib.h>
#include <string.h>

#include "el_d_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char PATH[] = "/metrics";

/* Whether the first request line asks for PATH by `method`. */
static bool asks(const char *line, size_t n, const char *method)
{
	const size_t m = strlen(method), p = sizeof PATH - 1;
	if (n < m + 1 + p + 1 || memcmp(line, method, m) != 0 ||
	    (line[m] != ' ' && line[m] != '\t'))
		return false;
	const char *at = memmem(line + m, n - m, PATH, p);
	if (at == NULL)
		return false;
	const char next = at + p < line + n ? at[p] : '\0';
	return next == ' ' || next == '\t' || next == '?';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool head_only = false;
	const char *in = (const char *)data;
	const int code = el_d_http_route(in, (uint32_t)(size < UINT32_MAX ? size : UINT32_MAX),
					 PATH, &head_only);
	if (code != 200 && code != 400 && code != 404 && code != 405)
		abort();
	size_t skip = 0, n = size < EL_D_HTTP_HEAD_MAX ? size : EL_D_HTTP_HEAD_MAX;
	while (skip < n && (in[skip] == '\r' || in[skip] == '\n'))
		skip++;
	const bool is_head = n - skip >= 5 && memcmp(in + skip, "HEAD", 4) == 0;
	if (head_only && (!is_head || (code != 200 && code != 404)))
		abort();
	if (code == 200 && !asks(in + skip, n - skip, head_only ? "HEAD" : "GET"))
		abort();
	return 0;
}
